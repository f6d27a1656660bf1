"""The gemm_ladder study's findings on synthetic entries: each rung's rate against cuBLAS's at the same
size and ladder (with its interval), the issue's targets judged against that interval, the launch each
rung reports, the summary's sections and the plots; and, on a GPU, the binary end to end."""
import json
import os
import subprocess
import tempfile
import unittest

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import gemm_ladder

RUNGS = {"fp32": ("cublas", "sgemm_04_shared_tiles", "sgemm_10_autotuned"),
         "fp16": ("cublas", "hgemm_01_wmma", "hgemm_03_wgmma")}
# Device time (s) at 4096 per (ladder, rung): the autotuned rung at 0.95 of cuBLAS, wgmma at 0.60.
TIMES = {("fp32", "cublas"): 2.7e-3, ("fp32", "sgemm_04_shared_tiles"): 27e-3,
         ("fp32", "sgemm_10_autotuned"): 2.7e-3 / 0.95,
         ("fp16", "cublas"): 0.21e-3, ("fp16", "hgemm_01_wmma"): 0.6e-3, ("fp16", "hgemm_03_wgmma"): 0.35e-3}


def entry(ladder, rung, n, seconds, spread=0.005, **counters):
    found = support.blank_entry(f"gemm_ladder/{rung}/gpu/resident/{ladder}/n:{n}")
    samples = [seconds * (1 + spread * k / 2) for k in range(-2, 3)]
    found.update(status="ok", repetitions=1, iterations=1, time_s={**stats.summarize(samples), "over": "trials"},
                 flop=2.0 * n ** 3, flop_per_s=2.0 * n ** 3 / seconds, **counters)
    if rung != "cublas":
        found.update(threads_per_block=256, grid_blocks=(n // 128) ** 2, registers_per_thread=128,
                     shared_bytes_per_block=32768, blocks_per_multiprocessor=2, theoretical_occupancy=0.25,
                     label="block 128x128x16, thread 8x8")
    return found


def entries(n=4096, times=TIMES, spread=0.005):
    return [entry(ladder, rung, n, seconds, spread) for (ladder, rung), seconds in times.items()]


IMPLEMENTATIONS = [{"id": rung} for ladder in RUNGS.values() for rung in ladder if rung != "cublas"]
IMPLEMENTATIONS.insert(0, {"id": "cublas"})


def study_of(found):
    study = {"entries": found, "invocations": [], "implementations": IMPLEMENTATIONS}
    study["derived"] = gemm_ladder.derive(study)
    return study


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.derived = study_of(entries())["derived"]
        self.ladders = {ladder["precision"]: ladder for ladder in self.derived["ladders"]}

    def point(self, ladder, rung, n=4096):
        return next(p for p in self.ladders[ladder]["points"] if p["rung"] == rung and p["n"] == n)

    def test_each_rung_against_cublas_of_its_own_ladder(self):
        self.assertEqual(list(self.ladders), ["fp32", "fp16"])
        self.assertEqual(self.ladders["fp32"]["rungs"], ["sgemm_04_shared_tiles", "sgemm_10_autotuned", "cublas"])
        self.assertAlmostEqual(self.point("fp32", "sgemm_04_shared_tiles")["fraction_of_cublas"], 0.1)
        self.assertAlmostEqual(self.point("fp16", "hgemm_01_wmma")["fraction_of_cublas"], 0.21 / 0.6)
        self.assertAlmostEqual(self.point("fp32", "cublas")["fraction_of_cublas"], 1.0)
        low, high = self.point("fp32", "sgemm_10_autotuned")["fraction_interval"]
        self.assertLess(low, 0.95)
        self.assertGreater(high, 0.95)

    def test_launch_and_tiling_reported(self):
        point = self.point("fp32", "sgemm_04_shared_tiles")
        self.assertEqual(point["registers_per_thread"], 128)
        self.assertEqual(point["grid_blocks"], 1024)
        self.assertEqual(point["tiling"], "block 128x128x16, thread 8x8")

    def test_targets_judged_on_the_interval(self):
        targets = {ladder: ladder_record["targets"] for ladder, ladder_record in self.ladders.items()}
        self.assertEqual(targets["fp32"][0]["best"]["rung"], "sgemm_10_autotuned")
        self.assertEqual(targets["fp32"][0]["verdict"], "met")
        self.assertEqual(targets["fp16"][0]["best"]["rung"], "hgemm_03_wgmma")
        self.assertEqual(targets["fp16"][0]["verdict"], "short")  # 0.60 against 0.70

    def test_a_fraction_whose_interval_holds_the_target_is_not_decided(self):
        times = {**TIMES, ("fp32", "sgemm_10_autotuned"): 2.7e-3 / 0.9}
        ladder = study_of(entries(times=times, spread=0.05))["derived"]["ladders"][0]
        self.assertEqual(ladder["targets"][0]["verdict"], "within noise")

    def test_without_cublas_no_fraction(self):
        found = [e for e in entries() if e["impl"] != "cublas"]
        ladder = study_of(found)["derived"]["ladders"][0]
        self.assertIsNone(ladder["points"][0]["fraction_of_cublas"])
        self.assertEqual(ladder["targets"], [])

    def test_failures_are_kept_apart(self):
        failed = entry("fp32", "sgemm_07_vectorized", 1000, 1.0)
        failed.update(status="skipped", message="skipped: n must be a multiple of 4", time_s=None)
        derived = study_of(entries() + [failed])["derived"]
        self.assertTrue(derived["failures"])
        self.assertNotIn("sgemm_07_vectorized", derived["ladders"][0]["rungs"])


class SummaryTest(unittest.TestCase):
    def test_sections(self):
        study = study_of(entries() + entries(n=8192))
        text = to_markdown(studies.BY_NAME["gemm_ladder"].summary(study, {}))
        self.assertIn("GEMM ladder: the best own kernel against cuBLAS", text)
        self.assertIn("sgemm\\_10\\_autotuned", text)
        self.assertIn("n = 8192", text)
        self.assertIn("block 128x128x16, thread 8x8", text)
        self.assertIn("short (the interval is below it)", text)


class PlotsTest(unittest.TestCase):
    def test_a_chart_per_ladder(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        with tempfile.TemporaryDirectory() as tmp:
            paths = gemm_ladder.plots(pyplot, study_of(entries()), tmp)
            self.assertEqual([os.path.basename(p) for p in paths], ["gemm_ladder_fp32.png", "gemm_ladder_fp16.png"])
            self.assertTrue(all(os.path.getsize(p) > 0 for p in paths))


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_gemm_ladder")


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class GpuEndToEndTest(unittest.TestCase):
    """The binary on a GPU at a size no tile divides: every rung either verifies and reports its launch or is
    skipped with a reason. Skipped without a usable GPU."""

    def setUp(self):
        described = json.loads(subprocess.run([STUDY, "--describe"], check=True, capture_output=True,
                                              text=True).stdout)
        if not described["gpu"]["available"]:
            self.skipTest("no GPU: " + described["gpu"]["reason"])
        self.described = described

    def test_every_rung_verifies_or_says_why_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=200", "--no-telemetry", "--benchmark_out_format=json",
                            "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out, encoding="utf-8") as stream:
                runs = json.load(stream)["benchmarks"]
        rungs = {(impl["id"], precision) for impl in self.described["implementations"]
                 for precision in impl["precisions"]}
        self.assertEqual(len(runs), len(rungs))
        for run in runs:
            if run.get("error_occurred"):
                self.assertTrue(run["error_message"].startswith("skipped: "), run)
                continue
            self.assertLessEqual(run["rel_fro_error"], run["tolerance"], run["name"])
            if "/cublas/" not in run["name"]:
                self.assertGreater(run["registers_per_thread"], 0, run["name"])
                self.assertTrue(run.get("label"), run["name"])
