"""The mandelbrot study's findings on synthetic entries: each configuration's CPU (one core, all cores)
against the GPU (kernel alone, copy back), the rounding rows, the guide's claim and its verdicts, the
summary's sections, the count image the binary writes (PGM) and the plots."""
import os
import tempfile
import unittest

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, gbench, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import mandelbrot
from gpubench_driver.stages import claims

GUIDE_N = 1024  # rows: 1536 x 1024 pixels
IMPLEMENTATIONS = [{"id": "loop_1thread"}, {"id": "kernel", "contracted": False},
                   {"id": "kernel_fma", "contracted": True}]


def entry(impl, mode, precision, n, batch, seconds, threads=None, **counters):
    device = "cpu" if mode == "host" else "gpu"
    found = support.blank_entry(f"mandelbrot/{impl}/{device}/{mode}/{precision}/n:{n}/batch:{batch}")
    samples = [seconds * (1 + 0.01 * k / 10) for k in range(-10, 11)]
    pixels = 3 * n // 2 * n
    found.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples),
                 threads=threads, width=3 * n // 2, height=n, escape_iterations=9.1 * pixels, flop=8 * 9.1 * pixels,
                 **{"differing_pixels": 0, "max_count_difference": 0, "allowed_differing_pixels": 0, **counters})
    return found


def guide_entries(gpu_s=10e-6):
    return [entry("loop_1thread", "host", "fp64", GUIDE_N, 20, 20e-3, threads=1),
            entry("loop_all_threads", "host", "fp64", GUIDE_N, 20, 1e-3, threads=64),
            entry("simd_all_threads", "host", "fp64", GUIDE_N, 20, 0.4e-3, threads=64),
            entry("kernel", "resident", "fp64", GUIDE_N, 20, gpu_s, warp_divergence=1.8),
            entry("kernel", "transfer_pageable", "fp64", GUIDE_N, 20, 300e-6, warp_divergence=1.8),
            entry("kernel_fma", "resident", "fp64", GUIDE_N, 20, 0.8 * gpu_s, warp_divergence=1.8,
                  differing_pixels=12, max_count_difference=7, allowed_differing_pixels=15728)]


def square_entries():
    sides = (("loop_1thread", "host", 6e-3, 1), ("kernel", "resident", 20e-6, None))
    return [entry(impl, mode, "fp32", n, 256, seconds * (n / 256) ** 2, threads=threads)
            for n in (256, 512) for impl, mode, seconds, threads in sides]


def document_of(found):
    study = {"entries": found, "invocations": [], "implementations": IMPLEMENTATIONS}
    study["derived"] = studies.BY_NAME["mandelbrot"].derive(study, None, 0)
    return {"studies": {"mandelbrot": study}, "machine": {"gpus": []}}


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.derived = mandelbrot.derive(guide_entries() + square_entries(), IMPLEMENTATIONS)

    def guide(self):
        return next(row for row in self.derived["configurations"] if mandelbrot.is_guide(row))

    def test_one_row_per_configuration(self):
        rows = self.derived["configurations"]
        self.assertEqual([(row["n"], row["max_iterations"], row["precision"]) for row in rows],
                         [(256, 256, "fp32"), (512, 256, "fp32"), (GUIDE_N, 20, "fp64")])

    def test_one_core_all_cores_and_the_gpu(self):
        row = self.guide()
        self.assertEqual(row["cpu"]["one_core"]["impl"], "loop_1thread")
        self.assertEqual(row["cpu"]["all_cores"]["impl"], "simd_all_threads")
        resident = row["gpu"]["resident"]
        self.assertEqual(resident["impl"], "kernel_fma")  # the fastest GPU entry of the mode
        self.assertAlmostEqual(resident["over_one_core"], 20e-3 / 8e-6)
        self.assertAlmostEqual(row["gpu"]["transfer_pageable"]["over_all_cores"], 0.4e-3 / 300e-6)
        self.assertAlmostEqual(row["iterations_per_pixel"], 9.1)
        self.assertEqual(row["warp_divergence"], 1.8)

    def test_rounding_rows_and_what_contraction_saves(self):
        row = self.guide()
        fma = next(k for k in row["kernels"] if (k["impl"], k["mode"]) == ("kernel_fma", "resident"))
        self.assertAlmostEqual(fma["differing_fraction"], 12 / (1536 * 1024))
        self.assertEqual(fma["allowed_differing_pixels"], 15728)
        [resident] = row["contraction"]  # no contracted entry copies back
        self.assertEqual((resident["mode"], resident["impl"], resident["separate_impl"]),
                         ("resident", "kernel_fma", "kernel"))
        self.assertAlmostEqual(resident["speedup"], 1 / 0.8)

    def test_the_guide_claim(self):
        claim = self.derived["guide_claim"]
        self.assertEqual(claim["guide"]["ratio"], 885)
        self.assertAlmostEqual(claim["interpreter_factor"], 4.07 / 20e-3)
        self.assertAlmostEqual(claim["ratios"]["resident"]["all_cores"], 0.4e-3 / 8e-6)
        self.assertIsNone(mandelbrot.derive(square_entries())["guide_claim"])

    def test_rates(self):
        row = next(r for r in self.derived["rates"] if (r["impl"], r["max_iterations"]) == ("kernel", 256))
        self.assertEqual([p["n"] for p in row["points"]], [256, 512])
        self.assertAlmostEqual(row["points"][0]["pixels_per_s"], 384 * 256 / 20e-6)  # from the counters, not n
        self.assertAlmostEqual(row["points"][0]["iterations_per_s"], 9.1 * 384 * 256 / 20e-6)


class ProgressTest(unittest.TestCase):
    def test_pixels_per_second_from_the_image_counters(self):
        line = gbench.ConsoleResult("mandelbrot/kernel/gpu/resident/fp64/n:1024/batch:20", median_s=1e-3,
                                    counters={"width": 1536.0, "height": 1024.0})
        self.assertEqual(support.outcome(line), "median 1.00 ms  1.57 G pixels/s")
        line.counters.clear()
        self.assertEqual(support.outcome(line), "median 1.00 ms")  # nothing rebuilt from the name


class ClaimTest(unittest.TestCase):
    def verdict(self, gpu_s):
        return mandelbrot.mandelbrot_guide(document_of(guide_entries(gpu_s)))["verdict"]

    def test_the_verdict_follows_the_cpu_it_is_held_against(self):
        # 8 us of kernel: 2500x one compiled core, 50x all of them
        self.assertEqual(self.verdict(10e-6),
                         "depends on the CPU: one compiled core loses by that much, all of them do not")
        self.assertEqual(self.verdict(100e-6), f"{claims.REFUTED}: the gain is smaller")  # 250x one core
        self.assertEqual(self.verdict(0.5e-6), claims.CONFIRMED)  # 1000x all cores
        found = mandelbrot.mandelbrot_guide(document_of(guide_entries()))
        self.assertIn("2500.00x one core, 50.00x all cores", found["answer"])
        self.assertIn("203.50x this machine's compiled loop on one core", found["answer"])

    def test_unanswered_without_the_configuration(self):
        self.assertIsNone(mandelbrot.mandelbrot_guide(document_of(square_entries())))
        self.assertIsNone(mandelbrot.mandelbrot_guide({"studies": {}}))


class SummaryTest(unittest.TestCase):
    def test_sections(self):
        document = document_of(guide_entries() + square_entries())
        text = to_markdown(mandelbrot.sections(document["studies"]["mandelbrot"], document))
        for heading in ("## Mandelbrot: the guide's 885x", "## Mandelbrot: CPU against GPU",
                        "## Mandelbrot: rounding and the CPU's counts"):
            self.assertIn(heading, text)
        self.assertIn("compiled C++ on one core: 20.00 ms (loop\\_1thread)", text)
        self.assertIn("| 2500.00x | 50.00x |", text)
        self.assertIn("| 12 | 0.001% | 15728 | 7 |", text)


    def test_a_run_without_the_gpu_part(self):
        cpu_only = [e for e in guide_entries() if e["device"] == "cpu"]
        document = document_of(cpu_only)
        text = to_markdown(mandelbrot.sections(document["studies"]["mandelbrot"], document))
        self.assertIn("compiled C++ on all cores: 400.00 us (simd\\_all\\_threads)", text)
        self.assertIn("No GPU entry was measured at this configuration.", text)
        self.assertIn("| 1536 x 1024, at most 20 iterations, fp64 |", text)
        self.assertNotIn("rounding and the CPU's counts", text)
        self.assertIsNone(mandelbrot.mandelbrot_guide(document))


# The bytes tests/test_mandelbrot_cpu.cpp expects write_count_image to write (16-bit counts, top row first).
WORDS_PGM = b"P5\n# a note\n3 2\n300\n\x01\x00\x01\x2B\x01\x2C\x00\x01\x00\x02\x00\x03"


class CountImageTest(unittest.TestCase):
    def write(self, directory, data):
        path = os.path.join(directory, mandelbrot.COUNT_IMAGE)
        with open(path, "wb") as stream:
            stream.write(data)
        return path

    def test_reads_what_the_binary_writes(self):
        with tempfile.TemporaryDirectory() as directory:
            width, height, maxval, samples, note = mandelbrot.read_pgm(self.write(directory, WORDS_PGM))
            self.assertEqual((width, height, maxval, note), (3, 2, 300, "a note"))
            self.assertEqual(samples, [256, 299, 300, 1, 2, 3])
            self.assertEqual(mandelbrot.read_pgm(self.write(directory, b"P5\n2 2\n20\n\x03\x04\x01\x02"))[3], [3, 4, 1, 2])

    def test_refuses_what_is_not_one(self):
        with tempfile.TemporaryDirectory() as directory:
            for data in (b"P6\n1 1\n255\n\x00\x00\x00", b"P5\n2 2\n20\n\x01", b"P5\n2 x\n20\n\x01\x01", b""):
                self.assertIsNone(mandelbrot.read_pgm(self.write(directory, data)), data)
            self.assertIsNone(mandelbrot.read_pgm(os.path.join(directory, "absent.pgm")))

    def test_the_plots_draw_the_image_the_run_kept(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = document_of(guide_entries() + square_entries())["studies"]["mandelbrot"]
        with tempfile.TemporaryDirectory() as out:
            plot_dir = os.path.join(out, "plots")
            os.makedirs(plot_dir)
            names = [os.path.basename(path) for path in mandelbrot.plots(pyplot, study, plot_dir)]
            self.assertEqual(names, ["mandelbrot_guide.png", "mandelbrot_rate_256.png"])  # no image kept
            self.write(out, WORDS_PGM)
            paths = mandelbrot.plots(pyplot, study, plot_dir)
            self.assertEqual(os.path.basename(paths[0]), "mandelbrot_counts.png")
            self.assertTrue(all(os.path.getsize(path) > 0 for path in paths))


if __name__ == "__main__":
    unittest.main()
