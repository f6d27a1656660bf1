"""run --repeatability: two runs back to back, their comparison, and the noise per kind of entry."""
import json
import os
import unittest
from unittest import mock

import support
from test_run_studies import FakeMachine

from gpubench_driver.lib import stats, stopping
from gpubench_driver.stages import session
from gpubench_driver.commands import repeatability


def doc(entries):
    return {"studies": {"matmul": {"entries": entries}}}


def entry(name, protocol, median):
    return {"name": name, "status": "ok", "protocol": protocol, "time_s": stats.summarize([median])}


class NoiseByKindTest(unittest.TestCase):
    def test_offsets_per_kind(self):
        first = doc([entry("a", "throughput", 1e-3), entry("b", "throughput", 1e-5), entry("c", "cpu", 1.0),
                     entry("d", "latency", 2e-4), entry("e", "cpu", 1.0)])
        second = doc([entry("a", "throughput", 1.01e-3), entry("b", "throughput", 1.1e-5), entry("c", "cpu", 1.5),
                      entry("d", "latency", 2e-4)])  # e is missing from the second run
        rows = {row["kind"]: row for row in repeatability.noise_by_kind(first, second)}
        long_device = rows["GPU, device time, 100 us or more"]
        self.assertEqual(long_device["entries"], 1)
        self.assertAlmostEqual(long_device["median_offset"], 0.01)
        self.assertEqual(long_device["within"]["0.02"], 1.0)
        self.assertAlmostEqual(rows["GPU, device time, under 100 us"]["p95_offset"], 0.1)
        self.assertEqual(rows["CPU"]["entries"], 1)
        self.assertEqual(rows["CPU"]["within"]["0.05"], 0.0)
        self.assertEqual(rows["GPU, host-observed (copies in the call)"]["median_offset"], 0.0)


class RepeatabilityRunTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))
        self.addCleanup(self.machine.close)

    def test_two_runs_a_comparison_and_the_floors(self):
        process, out = self.machine.run("--sizes", "64,128", "--no-refine", "--repeatability")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        for name in ("a/results.json", "b/results.json", "compare.md", "compare.json", "repeatability.md"):
            self.assertTrue(os.path.exists(os.path.join(out, name)), name)
        with open(os.path.join(out, "repeatability.json"), encoding="utf-8") as stream:
            found = json.load(stream)
        self.assertEqual(found["schema"], "gpubench-repeatability")
        self.assertEqual(sum(found["verdicts"].values()), 4)
        self.assertIn("repeatability: run B of 2", process.stdout)
        with open(os.path.join(out, "repeatability.md"), encoding="utf-8") as stream:
            self.assertIn("| kind of entry | entries |", stream.read())

    def test_a_stop_during_a_runs_final_write_stops_before_the_next(self):
        stopped = stopping.StoppedAfterFinalWrite("SIGINT", 0)  # run A complete and whole, then the stop
        with mock.patch.object(session, "run", side_effect=stopped) as run:
            status = repeatability.run(support.run_options(out=os.path.join(self.machine.directory.name, "r")), [])
        self.assertEqual(status, 130)  # no run B, no comparison: the command was interrupted
        self.assertEqual(run.call_count, 1)


if __name__ == "__main__":
    unittest.main()
