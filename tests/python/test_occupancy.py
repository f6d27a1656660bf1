"""The occupancy study's findings on synthetic entries: each launch configuration's rate as a share of
the kernel's best, where the grid lands, each block size's theoretical occupancy and its limits, the
walk-through's launch against the claimed tenth and its claim, the summary's sections, the plots and
the progress line; and, on a GPU, the binary end to end."""
import copy
import json
import os
import subprocess
import tempfile
import unittest

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, gbench, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import occupancy
from gpubench_driver.stages import claims

MULTIPROCESSORS = 132
BLOCKS_PER_MULTIPROCESSOR = {128: 16, 256: 8}
# Device time (s) per (threads per block, blocks); 256 x 4224 is the best, 16 x 128 a fortieth of it.
TIMES = {(128, 16): 40e-3, (128, 132): 6e-3, (128, 4224): 1.2e-3,
         (256, 16): 25e-3, (256, 132): 4e-3, (256, 4224): 1.0e-3}


def spread_samples(seconds, spread):
    return [seconds] if spread is None else [seconds * (1 + spread * k / 10) for k in range(-10, 11)]


def entry(threads, blocks, seconds, impl="naive_sgemm", spread=0.01):
    found = support.blank_entry(f"occupancy/{impl}/gpu/resident/fp32/n:{threads}/batch:{blocks}")
    per_multiprocessor = BLOCKS_PER_MULTIPROCESSOR[threads]
    found.update(status="ok", repetitions=1, iterations=1, time_s=stats.summarize(spread_samples(seconds, spread)),
                 flop=2.0 * 1024 ** 3, memory_read_bytes=8.0 * 1024 ** 2, memory_written_bytes=4.0 * 1024 ** 2,
                 multiprocessors=MULTIPROCESSORS, busy_multiprocessors=min(blocks, MULTIPROCESSORS),
                 resident_warps=min(blocks, MULTIPROCESSORS * per_multiprocessor) * threads / 32,
                 max_resident_warps=MULTIPROCESSORS * 64, blocks_per_multiprocessor=per_multiprocessor,
                 theoretical_occupancy=per_multiprocessor * threads / 32 / 64, registers_per_thread=32,
                 shared_bytes_per_block=0)
    return found


def entries(times=TIMES, spread=0.01):
    return [entry(threads, blocks, seconds, spread=spread) for (threads, blocks), seconds in times.items()]


IMPLEMENTATIONS = [{"id": "naive_sgemm", "occupancy": [
    {"threads_per_block": 128, "blocks_per_multiprocessor": 16, "occupancy": 1.0, "limited_by": ["threads", "registers"],
     "registers_per_thread": 32, "shared_bytes_per_block": 0},
    {"threads_per_block": 256, "blocks_per_multiprocessor": 8, "occupancy": 1.0, "limited_by": ["threads", "bogus"]}]},
    {"id": "triad", "occupancy": "not a list"}, "not an object"]


def study_of(found, implementations=IMPLEMENTATIONS):
    study = {"entries": found, "invocations": [], "implementations": implementations}
    study["derived"] = occupancy.derive(study)
    return study


def document_of(found):
    return {"studies": {"occupancy": study_of(found)}, "machine": {"gpus": []}}


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.derived = study_of(entries())["derived"]
        self.kernel = self.derived["kernels"][0]

    def point(self, threads, blocks):
        return next(point for point in self.kernel["points"]
                    if (point["threads_per_block"], point["blocks"]) == (threads, blocks))

    def test_every_configuration_against_the_kernels_best(self):
        self.assertEqual((self.kernel["best"]["threads_per_block"], self.kernel["best"]["blocks"]), (256, 4224))
        self.assertAlmostEqual(self.point(128, 132)["fraction_of_best"], 1.0e-3 / 6e-3)
        self.assertAlmostEqual(self.point(256, 4224)["flop_per_s"], 2.0 * 1024 ** 3 / 1e-3)
        low, high = self.point(128, 132)["fraction_interval"]
        self.assertLess(low, 1.0e-3 / 6e-3)
        self.assertGreater(high, 1.0e-3 / 6e-3)

    def test_where_the_grid_lands(self):
        point = self.point(128, 16)
        self.assertAlmostEqual(point["busy_fraction"], 16 / 132)
        self.assertAlmostEqual(point["warp_fraction"], 16 * 4 / (132 * 64))
        self.assertEqual(self.point(128, 4224)["busy_multiprocessors"], 132)
        self.assertAlmostEqual(self.point(128, 4224)["warp_fraction"], 1.0)  # 16 blocks of 4 warps on each

    def test_block_sizes_with_their_occupancy_and_limits(self):
        rows = {row["threads_per_block"]: row for row in self.kernel["block_sizes"]}
        self.assertEqual(rows[128]["limited_by"], ["threads", "registers"])
        self.assertEqual(rows[256]["limited_by"], ["threads"])  # a name outside the calculator's is dropped
        self.assertAlmostEqual(rows[128]["best_fraction"], 1.0 / 1.2)
        self.assertEqual(rows[128]["best_blocks"], 4224)
        self.assertEqual(rows[256]["plateau_blocks"], 4224)
        self.assertEqual(rows[128]["theoretical_occupancy"], 1.0)
        self.assertEqual([row["threads_per_block"] for row in self.kernel["theoretical"]], [128, 256])

    def test_a_description_from_anyone_is_read_safely(self):
        hostile = [{"id": "naive_sgemm", "occupancy": [{"threads_per_block": "x"}, 7, {"threads_per_block": 128,
                                                                                       "limited_by": "registers"}]}]
        kernel = study_of(entries(), hostile)["derived"]["kernels"][0]
        self.assertEqual(kernel["block_sizes"][0]["limited_by"], [])

    def test_the_plateau_is_where_the_curve_stays_near_its_best(self):
        curve = [{"blocks": b, "fraction_of_best": f} for b, f in ((1, 0.1), (4, 0.95), (16, 0.5), (64, 0.92),
                                                                    (256, 1.0))]
        self.assertEqual(occupancy.plateau_blocks(curve), 64)
        curve[-1]["fraction_of_best"] = 0.5  # falls again at the largest grid: no plateau
        curve[-2]["fraction_of_best"] = 1.0
        self.assertIsNone(occupancy.plateau_blocks(curve))
        self.assertIsNone(occupancy.plateau_blocks([]))

    def test_the_walkthrough_against_the_claimed_tenth(self):
        found = self.derived["walkthrough"][0]
        self.assertEqual(found["impl"], "naive_sgemm")
        self.assertAlmostEqual(found["fraction_of_best"], 1.0e-3 / 40e-3)
        self.assertEqual(found["against_claim"], "below")
        times = {**TIMES, (128, 16): 5e-3}  # a fifth of the best
        self.assertEqual(study_of(entries(times))["derived"]["walkthrough"][0]["against_claim"], "above")
        times = {**TIMES, (128, 16): 10e-3}  # a tenth, measured with a 30% spread
        found = study_of(entries(times, spread=0.3))["derived"]["walkthrough"][0]
        self.assertEqual(found["against_claim"], "within noise")

    def test_no_walkthrough_launch_is_none(self):
        times = {key: value for key, value in TIMES.items() if key != (128, 16)}
        self.assertEqual(study_of(entries(times))["derived"]["walkthrough"], [])


class ClaimTest(unittest.TestCase):
    def test_the_claim_reads_the_walkthrough(self):
        found = occupancy.walkthrough_launch(document_of(entries()))
        self.assertEqual(found["verdict"], claims.CONFIRMED)
        self.assertIn("16 blocks of 128 threads ran at 2.5%", found["answer"])
        self.assertIn("16 of 132 multiprocessors", found["answer"])
        self.assertEqual(found["numbers"]["best_launch"], [4224, 256])
        times = {**TIMES, (128, 16): 5e-3}
        self.assertTrue(occupancy.walkthrough_launch(document_of(entries(times)))["verdict"].startswith(claims.REFUTED))

    def test_a_run_without_the_study_leaves_it_unanswered(self):
        self.assertIsNone(occupancy.walkthrough_launch({"studies": {}}))
        claim = next(claim for claim in claims.CLAIMS if claim.key == "walkthrough_launch")
        self.assertEqual(claim.studies, ("occupancy",))


class ProgressTest(unittest.TestCase):
    def test_rate_and_share_of_the_warps(self):
        line = gbench.ConsoleResult("occupancy/naive_sgemm/gpu/resident/fp32/n:128/batch:16", median_s=1e-3,
                                    counters={"flop": 2e9, "resident_warps": 64.0, "max_resident_warps": 8448.0})
        self.assertEqual(support.outcome(line), "median 1.00 ms  2.00 TFLOP/s  0.8% of the warps")


class SummaryTest(unittest.TestCase):
    def test_sections(self):
        document = document_of(entries())
        text = to_markdown(occupancy.sections(document["studies"]["occupancy"], document))
        self.assertIn("## Occupancy: the walk-through's launch of 16 blocks of 128 threads", text)
        self.assertIn("below a tenth beyond the interval", text)
        self.assertIn("16 of 132 multiprocessors (12.1%)", text)
        self.assertIn("## Occupancy: naive\\_sgemm", text)
        self.assertIn("| threads \\ blocks | 16 | 132 | 4224 |", text)
        self.assertIn("| 128 | 32 | 0 B | 16 | 100% | threads, registers | 83% | 4224 | 4224 |", text)

    def test_nothing_measured_at_the_walkthroughs_launch(self):
        times = {key: value for key, value in TIMES.items() if key != (128, 16)}
        document = document_of(entries(times))
        text = to_markdown(occupancy.sections(document["studies"]["occupancy"], document))
        self.assertIn("Not measured: no kernel ran at 16 blocks of 128 threads.", text)

    def test_failures_are_listed(self):
        failed = support.blank_entry("occupancy/triad/gpu/resident/fp32/n:1024/batch:16")
        failed.update(status="error", message="wrong result: element 7 differs")
        document = document_of(entries() + [failed])
        text = to_markdown(occupancy.sections(document["studies"]["occupancy"], document))
        self.assertIn("wrong result: element 7 differs", text)


class PlotsTest(unittest.TestCase):
    def test_the_charts_of_the_study(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = study_of(entries())
        with tempfile.TemporaryDirectory() as plot_dir:
            paths = studies.BY_NAME["occupancy"].plots(pyplot, copy.deepcopy(study), plot_dir)
            self.assertTrue(all(os.path.getsize(path) > 0 for path in paths))
        self.assertEqual([path.rsplit("/", 1)[-1] for path in paths],
                         ["occupancy_naive_sgemm.png", "occupancy_naive_sgemm_warps.png"])


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_occupancy")


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class GpuEndToEndTest(unittest.TestCase):
    """The binary on a GPU: every kernel at odd launch configurations verifies, and its counters say where
    the grid lands. Skipped without a usable GPU."""

    def setUp(self):
        described = json.loads(subprocess.run([STUDY, "--describe"], check=True, capture_output=True,
                                              text=True).stdout)
        if not described["gpu"]["available"]:
            self.skipTest("no GPU: " + described["gpu"]["reason"])
        self.described = described

    def test_every_kernel_verifies_and_reports_its_launch(self):
        for impl in self.described["implementations"]:
            self.assertEqual(len(impl["occupancy"]), 32)  # every whole number of warps to 1024 threads
            self.assertTrue(all(row["limited_by"] for row in impl["occupancy"]), impl["id"])
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=96,128", "--batches=16,133", "--no-telemetry",
                            "--benchmark_out_format=json", "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out, encoding="utf-8") as stream:
                runs = json.load(stream)["benchmarks"]
        self.assertEqual(len(runs), 2 * 2 * len(self.described["implementations"]))
        for run in runs:
            self.assertFalse(run.get("error_occurred"), run["name"] + ": " + run.get("error_message", ""))
            self.assertEqual(run["busy_multiprocessors"], min(run["batch"], run["multiprocessors"]), run["name"])
            self.assertGreater(run["theoretical_occupancy"], 0, run["name"])
            self.assertGreater(run["registers_per_thread"], 0, run["name"])
            self.assertGreater(run["flop"], 0, run["name"])


if __name__ == "__main__":
    unittest.main()
