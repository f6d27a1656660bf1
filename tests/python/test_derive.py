"""Crossover, speedup and best-rate derivation, on hand-made entries and on a fixture run."""
import unittest

import support  # noqa: F401  (import path)
from support import fixture, make_entry

from gpubench_driver.lib import findings, results, stats


def study(cpu_times, gpu_times, mode="resident"):
    """Entries with one CPU and one GPU implementation: {n: median seconds} each."""
    entries = [make_entry("openblas", "cpu", "host", n, t) for n, t in cpu_times.items()]
    entries += [make_entry("cublas", "gpu", mode, n, t) for n, t in gpu_times.items()]
    return entries


class CrossoverTest(unittest.TestCase):
    def test_bracket_and_interpolated_estimate(self):
        entries = study({64: 1.0, 128: 2.0, 256: 4.0}, {64: 2.0, 128: 1.0, 256: 0.5})
        [found] = findings.crossovers(entries)
        self.assertEqual((found["lower"], found["upper"], found["gpu_impl"]), (64, 128, "cublas"))
        # speedup 0.5 at 64 and 2 at 128: log-log interpolation puts 1.0 half-way, at sqrt(64*128).
        self.assertEqual(found["estimate_n"], 91)

    def test_gpu_faster_everywhere(self):
        [found] = findings.crossovers(study({64: 2.0, 128: 4.0}, {64: 1.0, 128: 1.0}))
        self.assertIsNone(found["lower"])
        self.assertEqual(found["upper"], 64)
        self.assertIn("every measured size", found["method"])

    def test_cpu_faster_at_the_largest_size_means_no_crossover(self):
        [found] = findings.crossovers(study({64: 1.0, 128: 1.0}, {64: 2.0, 128: 2.0}))
        self.assertIsNone(found["upper"])
        self.assertIn("no crossover", found["method"])

    def test_non_monotone_win_below_the_bracket_is_noted(self):
        entries = study({64: 1.0, 128: 1.0, 256: 1.0, 512: 1.0}, {64: 0.9, 128: 1.1, 256: 0.5, 512: 0.2})
        [found] = findings.crossovers(entries)
        self.assertEqual((found["lower"], found["upper"]), (128, 256))
        self.assertIn("n=64", found["note"])

    def test_a_gpu_win_within_noise_is_no_win(self):
        def spread(entries, by):  # 21 samples evenly within +-by of each median
            for entry in entries:
                median = entry["time_s"]["median"]
                entry["time_s"] = stats.summarize([median * (1 + by * k / 10) for k in range(-10, 11)])
            return entries
        times = ({64: 1.0, 128: 1.0, 256: 1.0}, {64: 2.0, 128: 0.95, 256: 0.5})  # the GPU 5% faster at 128
        [noisy] = findings.crossovers(spread(study(*times), 0.1))
        self.assertEqual((noisy["lower"], noisy["upper"]), (128, 256))
        self.assertEqual(noisy["note"], "at n=128 the GPU's lower median was within noise (no win)")
        [clear] = findings.crossovers(spread(study(*times), 0.01))
        self.assertEqual((clear["lower"], clear["upper"], clear["note"]), (64, 128, None))

    def test_best_cpu_is_the_fastest_cpu_implementation(self):
        entries = study({64: 1.0, 128: 3.0}, {64: 2.0, 128: 2.5})
        entries.append(make_entry("blocked_loop", "cpu", "host", 128, 2.0))
        [found] = findings.crossovers(entries)
        self.assertIsNone(found["upper"])  # 2.5 s on the GPU loses to the blocked loop's 2.0 s

    def test_failed_entries_are_ignored(self):
        entries = study({64: 1.0, 128: 1.0}, {64: 0.5})
        entries.append(make_entry("cublas", "gpu", "resident", 128, None, status="error"))
        [found] = findings.crossovers(entries)
        self.assertEqual(found["sizes_compared"], [64])

    def test_one_crossover_per_gpu_mode(self):
        entries = study({64: 1.0}, {64: 0.5}) + study({}, {64: 2.0}, mode="transfer_pinned")
        self.assertEqual([c["mode"] for c in findings.crossovers(entries)], ["resident", "transfer_pinned"])

    def test_no_gpu_entries_no_crossovers(self):
        self.assertEqual(findings.crossovers(study({64: 1.0}, {})), [])


class RefinementTest(unittest.TestCase):
    def test_midpoint_of_a_wide_bracket(self):
        self.assertEqual(findings.refinement_size({"lower": 200, "upper": 256}), 228)

    def test_narrow_bracket_stops(self):
        self.assertIsNone(findings.refinement_size({"lower": 200, "upper": 214}))  # < 10% of 200
        self.assertIsNone(findings.refinement_size({"lower": 64, "upper": 71}))    # < 8

    def test_open_bracket_is_not_refined(self):
        self.assertIsNone(findings.refinement_size({"lower": None, "upper": 64}))

    def test_plan_measures_only_the_candidates_at_the_midpoint(self):
        entries = study({64: 1.0, 128: 2.0}, {64: 2.0, 128: 1.0})
        entries += [make_entry("naive_loop", "cpu", "host", n, 9.0) for n in (64, 128)]
        entries += [make_entry("naive_kernel", "gpu", "resident", 64, 1.5),
                    make_entry("naive_kernel", "gpu", "transfer_pinned", 128, 0.1)]
        self.assertEqual(findings.refinement_plan(entries),
                         {96: (["cublas", "naive_kernel", "openblas"], ["host", "resident"])})

    def test_plan_is_empty_once_brackets_are_narrow(self):
        self.assertEqual(findings.refinement_plan(study({64: 1.0, 70: 2.0}, {64: 2.0, 70: 1.0})), {})


class RatesTest(unittest.TestCase):
    def test_fraction_of_best_rate_per_device(self):
        entries = study({64: 1.0, 128: 4.0}, {64: 0.5, 128: 0.1})
        findings.set_fraction_of_best_rate(entries)
        fractions = {(e["device"], e["n"]): e["fraction_of_best_rate"] for e in entries}
        self.assertAlmostEqual(fractions[("cpu", 128)], 1.0)
        self.assertAlmostEqual(fractions[("cpu", 64)], (2 * 64 ** 3 / 1.0) / (2 * 128 ** 3 / 4.0))
        self.assertAlmostEqual(fractions[("gpu", 128)], 1.0)

    def test_speedups_against_the_best_cpu(self):
        rows = findings.speedups(study({64: 1.0}, {64: 0.25}))
        self.assertEqual(rows, [{"n": 64, "impl": "cublas", "mode": "resident", "speedup": 4.0,
                                 "best_cpu_impl": "openblas"}])


class FixtureRunTest(unittest.TestCase):
    """A results.json written by the driver: deriving again gives what it stored, but for what the
    noise changed since."""

    def test_rederived_findings_match_the_stored_ones(self):
        document = results.load(fixture("results_v1.json"))
        matmul = document["studies"]["matmul"]
        rederived = findings.derive(matmul["entries"], matmul["derived"]["refinement"]["rounds"])
        # The fixture predates the crossovers' measure (headline or host-observed latency) and its
        # words; its entries, measured before the steady-state loop, have no latency, so only the
        # headline's crossovers come back.
        self.assertEqual({found["measure"] for found in rederived["crossovers"]}, {"time"})
        resident, pinned = [{key: value for key, value in found.items() if key not in ("measure", "timed_as")}
                            for found in rederived["crossovers"]]
        self.assertEqual(resident, matmul["derived"]["crossovers"][0])
        # Stored before crossovers read noise: at n=128 the GPU's 25.3 us (3 samples, 25.0..27.3) against the CPU's
        # 27.9 us (26.2..30.5) was a win; it is within noise now, so the bracket moves up to 128 .. 200.
        self.assertEqual((pinned["lower"], pinned["upper"]), (128, 200))
        self.assertEqual(pinned["note"], "at n=128 the GPU's lower median was within noise (no win)")
        self.assertEqual(rederived["best_rates"], matmul["derived"]["best_rates"])
        for found in rederived["crossovers"]:
            self.assertLess(found["lower"], found["upper"])


if __name__ == "__main__":
    unittest.main()
