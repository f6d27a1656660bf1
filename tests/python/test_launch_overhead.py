"""The launch_overhead study's findings on synthetic entries: an empty launch's latency, the time per
kernel and the marginal cost of one more kernel each way of launching, a small-kernel chain's busy and
idle shares and gaps with their intervals, what a graph buys, the idle finding and its claim, the
summary's sections, the plots and the progress line; and, on a GPU, the binary end to end."""
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
from gpubench_driver.studies import launch_overhead
from gpubench_driver.stages import claims

US = 1e-6
# (impl, mode, n) -> (call time, kernels' own time, chain span), seconds.
TIMES = {("empty_kernel", "sync_each", 1): (8 * US, None, None), ("empty_kernel", "sync_each", 100): (800 * US, None, None),
         ("empty_kernel", "stream", 1): (7 * US, None, None), ("empty_kernel", "stream", 100): (250 * US, None, None),
         ("empty_kernel", "graph", 1): (9 * US, None, None), ("empty_kernel", "graph", 100): (120 * US, None, None),
         ("add_kernel", "sync_each", 100): (1000 * US, 200 * US, 990 * US),
         ("add_kernel", "stream", 100): (350 * US, 200 * US, 330 * US),
         ("add_kernel", "graph", 100): (260 * US, 200 * US, 250 * US),
         ("add_kernel", "fused", 100): (15 * US, 10 * US, 10 * US)}


def spread_samples(seconds, spread):
    return [seconds * (1 + spread * k / 10) for k in range(-10, 11)]


def entry(impl, mode, n, seconds, busy, span, spread=0.01):
    precision = "fp32" if impl == "add_kernel" else "none"
    found = support.blank_entry(f"launch_overhead/{impl}/gpu/{mode}/{precision}/n:{n}")
    found.update(status="ok", repetitions=1, iterations=1, time_s=stats.summarize(spread_samples(seconds, spread)),
                 kernels=1 if mode == "fused" else n, host_launches=n if mode in ("sync_each", "stream") else 1,
                 host_synchronizations=n if mode == "sync_each" else 1, kernel_busy_s=busy, chain_span_s=span,
                 timer_step_s=1e-6 if busy else None, gpu_util_mean=40.0 if mode == "graph" and busy else None)
    return found


def entries(times=TIMES, spread=0.01):
    return [entry(*key, *values, spread=spread) for key, values in times.items()]


def document_of(found):
    study = {"entries": found, "invocations": [], "implementations": []}
    study["derived"] = launch_overhead.derive(found)
    return {"studies": {"launch_overhead": study}, "machine": {"gpus": []}}


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.derived = launch_overhead.derive(entries())
        self.rows = {(row["impl"], row["mode"], row["n"]): row for row in self.derived["rows"]}

    def test_time_per_kernel_with_its_interval(self):
        row = self.rows[("empty_kernel", "stream", 100)]
        self.assertAlmostEqual(row["per_kernel_s"], 2.5 * US)
        low, high = row["per_kernel_interval_s"]
        self.assertLess(low, 2.5 * US)
        self.assertGreater(high, 2.5 * US)

    def test_busy_and_idle_shares_gaps_and_what_lies_outside_the_chain(self):
        row = self.rows[("add_kernel", "stream", 100)]
        self.assertAlmostEqual(row["busy_fraction"], 200 / 350)
        self.assertAlmostEqual(row["idle_fraction"], 150 / 350)
        low, high = row["idle_fraction_interval"]
        self.assertLess(low, 150 / 350)
        self.assertGreater(high, 150 / 350)
        self.assertAlmostEqual(row["gap_per_kernel_s"], 130 * US / 99)
        self.assertAlmostEqual(row["outside_s"], 20 * US)
        self.assertIsNone(self.rows[("add_kernel", "fused", 100)]["gap_per_kernel_s"])  # one kernel: no gap
        self.assertIsNone(self.rows[("empty_kernel", "graph", 100)]["busy_fraction"])  # nothing stamped
        self.assertEqual(self.rows[("add_kernel", "graph", 100)]["gpu_util_mean"], 40.0)

    def test_a_span_longer_than_the_call_leaves_nothing_outside_it(self):
        # the span from one trial's calls, the time from the trials' median: their difference is no figure
        found = launch_overhead.row(entry("add_kernel", "sync_each", 100, 900 * US, 80 * US, 950 * US))
        self.assertIsNone(found["outside_s"])
        self.assertAlmostEqual(found["gaps_s"], 870 * US)

    def test_what_a_launch_costs(self):
        launch = self.derived["launch"]
        self.assertEqual(launch["latency"]["n"], 1)
        self.assertAlmostEqual(launch["latency"]["per_kernel_s"], 8 * US)
        slopes = {slope["mode"]: slope for slope in launch["marginal"]}
        self.assertAlmostEqual(slopes["stream"]["per_kernel_s"], (250 - 7) * US / 99)
        low, high = slopes["graph"]["interval_s"]
        self.assertLess(low, (120 - 9) * US / 99)
        self.assertGreater(high, (120 - 9) * US / 99)
        self.assertEqual([(row["mode"], row["n"]) for row in launch["per_kernel"]],
                         [("stream", 1), ("graph", 1), ("stream", 100), ("graph", 100)])

    def test_what_a_graph_buys(self):
        chain = self.derived["chains"][0]
        self.assertEqual(chain["n"], 100)
        self.assertAlmostEqual(chain["graph_over_stream"]["ratio"], 350 / 260)
        self.assertTrue(chain["graph_over_stream"]["beyond_noise"])
        self.assertAlmostEqual(chain["graph_over_stream"]["saved_per_kernel_s"], 90 * US / 100)
        self.assertAlmostEqual(chain["fused_over_graph"]["ratio"], 260 / 15)
        self.assertEqual(list(chain["modes"]), ["sync_each", "stream", "graph", "fused"])

    def test_the_idle_finding(self):
        found = self.derived["idle_finding"]
        self.assertEqual(found["n"], 100)
        self.assertAlmostEqual(found["idle"]["sync_each"]["fraction"], 0.8)
        self.assertAlmostEqual(found["idle"]["graph"]["fraction"], 60 / 260)

    def test_no_stamped_chain_is_no_finding(self):
        empty_only = [e for e in entries() if e["impl"] == "empty_kernel"]
        derived = launch_overhead.derive(empty_only)
        self.assertIsNone(derived["idle_finding"])
        self.assertEqual(derived["chains"], [])


class ClaimTest(unittest.TestCase):
    def verdict(self, times):
        return launch_overhead.idle_gaps(document_of(entries(times)))["verdict"]

    def test_the_verdict_follows_the_gaps_and_the_graphs_gain(self):
        found = launch_overhead.idle_gaps(document_of(entries()))
        self.assertEqual(found["verdict"], claims.CONFIRMED)
        self.assertIn("80.0%", found["answer"])
        self.assertIn("1.35x as fast as the stream", found["answer"])
        no_gain = {**TIMES, ("add_kernel", "graph", 100): (350 * US, 200 * US, 330 * US)}
        self.assertTrue(self.verdict(no_gain).startswith("depends on the launching"))
        busy = {**no_gain, ("add_kernel", "sync_each", 100): (300 * US, 200 * US, 290 * US)}
        self.assertEqual(self.verdict(busy), claims.REFUTED)

    def test_a_run_without_the_study_leaves_it_unanswered(self):
        self.assertIsNone(launch_overhead.idle_gaps({"studies": {}}))
        claim = next(claim for claim in claims.CLAIMS if claim.key == "idle_gaps")
        self.assertEqual(claim.studies, ("launch_overhead",))


class ProgressTest(unittest.TestCase):
    def test_time_per_kernel(self):
        line = gbench.ConsoleResult("launch_overhead/empty_kernel/gpu/stream/none/n:100", median_s=250e-6, counters={})
        self.assertEqual(support.outcome(line), "median 250.00 us  2.50 us per kernel")


class SummaryTest(unittest.TestCase):
    def text(self, found):
        document = document_of(found)
        return to_markdown(launch_overhead.sections(document["studies"]["launch_overhead"], document))

    def test_sections(self):
        text = self.text(entries())
        self.assertIn("## Launch overhead: what a launch costs", text)
        self.assertIn("per kernel over a chain of 1: **8.00 us (", text)
        self.assertIn("| back to back on a stream: one more kernel | 1 to 100 |  | 2.45 us (", text)
        self.assertIn("## Launch overhead: a chain of small kernels", text)
        self.assertIn("| 100 | one CUDA graph | 260.00 us | 2.60 us (", text)
        self.assertIn("The global timer's smallest step here: 1.00 us.", text)
        self.assertIn("## Launch overhead: what a graph buys", text)
        self.assertIn("n = 100: a graph over the stream 1.35x, 900.00 ns saved per kernel", text)
        self.assertIn("the GPU was idle 80.0% (", text)

    def test_nothing_measured(self):
        text = self.text([])
        self.assertIn("No empty-kernel entry was measured.", text)
        self.assertIn("No add_kernel entry was measured.", text)
        self.assertNotIn("what a graph buys", text)


class PlotsTest(unittest.TestCase):
    def test_the_charts_of_the_study(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = document_of(entries())["studies"]["launch_overhead"]
        with tempfile.TemporaryDirectory() as plot_dir:
            paths = studies.BY_NAME["launch_overhead"].plots(pyplot, copy.deepcopy(study), plot_dir)
        self.assertEqual([path.rsplit("/", 1)[-1] for path in paths],
                         ["launch_overhead_per_kernel.png", "launch_overhead_busy.png"])


BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
STUDY = os.path.join(BUILD_DIR, "bench", "gpubench_launch_overhead")


@unittest.skipUnless(os.access(STUDY, os.X_OK), "GPUBENCH_BUILD_DIR unset or study binary not built")
class GpuEndToEndTest(unittest.TestCase):
    """The binary on a GPU: every kernel and launch mode verifies at short chains, and the chains of real
    work report their kernels' own time within the call. Skipped without a usable GPU."""

    def setUp(self):
        described = json.loads(subprocess.run([STUDY, "--describe"], check=True, capture_output=True,
                                              text=True).stdout)
        if not described["gpu"]["available"]:
            self.skipTest("no GPU: " + described["gpu"]["reason"])

    def test_every_entry_verifies_and_reports_its_chain(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.json")
            subprocess.run([STUDY, "--sizes=1,7", "--no-telemetry", "--benchmark_out_format=json",
                            "--benchmark_out=" + out], check=True, capture_output=True)
            with open(out, encoding="utf-8") as stream:
                runs = json.load(stream)["benchmarks"]
        self.assertEqual(len(runs), 2 * (3 + 4))
        for run in runs:
            self.assertFalse(run.get("error_occurred"), run["name"] + ": " + run.get("error_message", ""))
            if "/add_kernel/" not in run["name"]:
                continue
            self.assertEqual(run["max_rel_error"], 0, run["name"])
            seconds = run["real_time"] * 1e-6  # microseconds: the study's unit
            self.assertGreater(run["kernel_busy_s"], 0, run["name"])
            self.assertLessEqual(run["kernel_busy_s"], run["chain_span_s"] + run["timer_step_s"], run["name"])
            self.assertLess(run["chain_span_s"], 2 * seconds, run["name"])


if __name__ == "__main__":
    unittest.main()
