"""The vector_add study's findings on synthetic entries: the best CPU against each GPU mode, the copies'
cost against the CPU's whole computation, the expected finding and its claim, the summary's sections
and the plots."""
import copy
import tempfile
import unittest

import support

from gpubench_driver import studies
from gpubench_driver.lib import charts, gbench, stats
from gpubench_driver.lib.document import to_markdown
from gpubench_driver.studies import vector_add
from gpubench_driver.stages import claims


def spread_samples(seconds, spread):
    """One sample of `seconds`, or with `spread` 21 samples evenly within +-spread of it."""
    return [seconds] if spread is None else [seconds * (1 + spread * k / 10) for k in range(-10, 11)]


def entry(impl, mode, n, seconds, spread=0.01, threads=None):
    device = "cpu" if mode == "host" else "gpu"
    found = support.blank_entry(f"vector_add/{impl}/{device}/{mode}/fp32/n:{n}")
    samples = spread_samples(seconds, spread)
    found.update(status="ok", repetitions=1, iterations=len(samples), time_s=stats.summarize(samples), flop=n,
                 memory_read_bytes=8 * n, memory_written_bytes=4 * n, threads=threads,
                 bytes_transferred=12 * n if mode.startswith("transfer") else 0)
    return found


# Times per size: (CPU one thread, CPU all threads, GPU resident, pinned, pageable). The copies cost more
# than the CPU everywhere; the resident GPU wins from 1 Mi elements on.
TIMES = {1024: (1e-6, 5e-6, 3e-6, 40e-6, 60e-6), 1 << 20: (400e-6, 100e-6, 10e-6, 1.2e-3, 2.5e-3),
         64 << 20: (60e-3, 15e-3, 0.3e-3, 30e-3, 60e-3)}


def entries(times=TIMES):
    found = []
    for n, (one, every, resident, pinned, pageable) in times.items():
        found += [entry("loop_1thread", "host", n, one, threads=1),
                  entry("loop_all_threads", "host", n, every, threads=2), entry("kernel", "resident", n, resident),
                  entry("kernel", "transfer_pinned", n, pinned), entry("kernel", "transfer_pageable", n, pageable),
                  entry("one_block_kernel", "resident", n, 10 * resident)]
    return found


def document_of(found):
    study = {"entries": found, "invocations": [], "implementations": []}
    study["derived"] = vector_add.derive(found)
    return {"studies": {"vector_add": study}, "machine": {"gpus": []}}


class DeriveTest(unittest.TestCase):
    def setUp(self):
        self.derived = vector_add.derive(entries())

    def row(self, n):
        return next(row for row in self.derived["comparison"] if row["n"] == n)

    def test_the_best_cpu_and_every_gpu_mode_per_size(self):
        row = self.row(1 << 20)
        self.assertEqual(row["cpu"]["impl"], "loop_all_threads")
        self.assertEqual(self.row(1024)["cpu"]["impl"], "loop_1thread")  # one thread wins where threads cost more
        self.assertAlmostEqual(row["gpu"]["resident"]["speedup"], 100e-6 / 10e-6)
        self.assertEqual(row["gpu"]["resident"]["impl"], "kernel")  # not the one-block kernel
        self.assertTrue(row["gpu"]["resident"]["beyond_noise"])
        self.assertAlmostEqual(row["gpu"]["transfer_pinned"]["speedup"], 100e-6 / 1.2e-3)

    def test_the_copies_cost_is_the_transfer_time_less_the_resident_time(self):
        copies = self.row(64 << 20)["copies"]
        self.assertAlmostEqual(copies["transfer_pinned"]["copy_s"], 30e-3 - 0.3e-3)
        self.assertAlmostEqual(copies["transfer_pageable"]["over_cpu"], (60e-3 - 0.3e-3) / 15e-3)

    def test_the_expected_finding_holds(self):
        found = self.derived["expected_finding"]
        self.assertTrue(found["holds"])
        self.assertTrue(found["copies"]["transfer_pinned"]["more_than_cpu_everywhere"])
        self.assertEqual(found["gpu_wins"]["resident"], [1 << 20, 64 << 20])
        self.assertEqual(found["gpu_wins"]["transfer_pinned"], [])
        self.assertAlmostEqual(found["copies"]["transfer_pinned"]["least_over_cpu"], (30e-3 - 0.3e-3) / 15e-3)

    def test_cheap_copies_break_it(self):
        times = dict(TIMES)
        times[64 << 20] = (600e-3, 150e-3, 0.3e-3, 30e-3, 60e-3)  # a slow CPU: the copies cost less
        found = vector_add.derive(entries(times))["expected_finding"]
        self.assertFalse(found["holds"])
        self.assertEqual(found["copies"]["transfer_pinned"]["sizes_cheaper_than_cpu"], [64 << 20])
        self.assertEqual(found["gpu_wins"]["transfer_pinned"], [64 << 20])

    def test_a_lower_median_within_noise_is_no_win(self):
        times = {1 << 20: (400e-6, 100e-6, 99.95e-6, 1.2e-3, 2.5e-3)}
        found = vector_add.derive(entries(times))
        self.assertFalse(found["comparison"][0]["gpu"]["resident"]["beyond_noise"])
        self.assertEqual(found["expected_finding"]["gpu_wins"]["resident"], [])

    def test_nothing_compared_is_no_finding(self):
        cpu_only = [e for e in entries() if e["device"] == "cpu"]
        self.assertIsNone(vector_add.derive(cpu_only)["expected_finding"])

    def test_series_rates(self):
        series = {(row["impl"], row["mode"]): row for row in self.derived["series"]}
        point = series[("kernel", "resident")]["points"][-1]
        self.assertAlmostEqual(point["memory_bytes_per_s"], 12 * (64 << 20) / 0.3e-3)
        self.assertEqual(series[("loop_1thread", "host")]["device"], "cpu")


class ProgressTest(unittest.TestCase):
    def test_elements_per_second(self):
        line = gbench.ConsoleResult("vector_add/kernel/gpu/resident/fp32/n:1048576", median_s=1e-3, counters={})
        self.assertEqual(support.outcome(line), "median 1.00 ms  1.05 G elements/s")


class ClaimTest(unittest.TestCase):
    def test_the_claim_reads_the_expected_finding(self):
        document = document_of(entries())
        found = vector_add.vector_add_copies(document)
        self.assertEqual(found["verdict"], claims.CONFIRMED)
        self.assertIn("n = 1048576, 67108864", found["answer"])
        times = dict(TIMES)
        times[64 << 20] = (600e-3, 150e-3, 0.3e-3, 30e-3, 60e-3)
        self.assertTrue(vector_add.vector_add_copies(document_of(entries(times)))["verdict"].startswith(claims.REFUTED))
        no_win = {n: (one, every, 1.5 * every, 10 * pinned, 10 * pageable)
                  for n, (one, every, _, pinned, pageable) in TIMES.items()}
        self.assertTrue(vector_add.vector_add_copies(document_of(entries(no_win)))["verdict"].startswith("depends"))

    def test_a_run_without_the_study_leaves_it_unanswered(self):
        self.assertIsNone(vector_add.vector_add_copies({"studies": {}}))
        claim = next(claim for claim in claims.CLAIMS if claim.key == "vector_add_copies")
        self.assertEqual(claim.studies, ("vector_add",))


class SummaryTest(unittest.TestCase):
    def test_sections(self):
        document = document_of(entries())
        text = to_markdown(vector_add.sections(document["studies"]["vector_add"], document))
        self.assertIn("## Vector add: CPU against GPU", text)
        self.assertIn("10.00 us (10.00x)", text)  # 1 Mi: resident against the all-threads CPU
        self.assertIn("## Vector add: the expected finding", text)
        self.assertIn(": holds:", text)
        self.assertIn("## Vector add: crossovers", text)

    def test_failures_are_listed(self):
        found = entries()
        failed = support.blank_entry("vector_add/kernel/gpu/resident/fp32/n:1073741824")
        failed.update(status="skipped", message="skipped: does not fit: needs about 12.5 GiB")
        document = document_of(found + [failed])
        text = to_markdown(vector_add.sections(document["studies"]["vector_add"], document))
        self.assertIn("skipped: does not fit", text)


class PlotsTest(unittest.TestCase):
    def test_the_charts_of_the_study(self):
        pyplot = charts.load_pyplot()
        if pyplot is None:
            self.skipTest("no matplotlib")
        study = document_of(entries())["studies"]["vector_add"]
        with tempfile.TemporaryDirectory() as plot_dir:
            paths = studies.BY_NAME["vector_add"].plots(pyplot, copy.deepcopy(study), plot_dir)
        names = [path.rsplit("/", 1)[-1] for path in paths]
        self.assertEqual(names, ["vector_add_time.png", "vector_add_speedup.png", "vector_add_copies.png"])


if __name__ == "__main__":
    unittest.main()
