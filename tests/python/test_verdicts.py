"""compare's verdicts (the noise model's, noise_verdicts.py) on real A/A pairs, fixtures trimmed from
committed runs (fixtures/runs/README.md); the false discovery control of a family; and what verdicts.py
says of an entry (its kind for the A/A targets, the smallest change worth a verdict)."""
import os
import unittest

import support

from gpubench_driver.lib import noise_verdicts, stats, verdicts
from gpubench_driver.commands import compare


def entry(median, protocol="throughput", device="gpu"):
    return {"status": "ok", "protocol": protocol, "device": device, "time_s": stats.summarize([median])}


def counts(found):
    return {name: sum(verdict.verdict == name for verdict in found) for name in noise_verdicts.VERDICTS}


class EntryTest(unittest.TestCase):
    def test_the_smallest_change_worth_a_verdict_is_the_band_of_the_entrys_kind(self):
        self.assertEqual(verdicts.min_effect(entry(1e-3)), 0.02)  # device-timed, 100 us or more
        self.assertEqual(verdicts.min_effect(entry(1e-5)), 0.05)
        self.assertEqual(verdicts.min_effect(entry(1e-3, "latency")), 0.05)
        self.assertEqual(verdicts.min_effect(entry(1e-3, None)), 0.05)  # a file from before the protocols

    def test_a_long_gpu_entry_is_a_gpu_entry_of_100_us_or_more(self):
        self.assertTrue(verdicts.long_gpu_entry(entry(1e-4, "latency")))
        self.assertFalse(verdicts.long_gpu_entry(entry(0.99e-4)))
        self.assertFalse(verdicts.long_gpu_entry(entry(1e-3, "cpu", "cpu")))


class FalseDiscoveryTest(unittest.TestCase):
    def test_the_family_is_held_to_the_false_discovery_rate(self):
        # Thresholds for 4 tests at 5%: 0.0125, 0.025, 0.0375, 0.05 (step-up: the largest rank under its own).
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.001, 0.02, 0.04, 0.3]), {0, 1})
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.001, 0.03, 0.04, 0.3]), {0})
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.3, 0.001, 0.04, 0.049]), {1})  # indices as given
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.001, 0.01, 0.012, 0.3]), {0, 1, 2})
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.2, 0.5]), set())


class RealPairTest(unittest.TestCase):
    """compare on real A/A pairs with trials, as the H100 wrote them: the default suite in three trials twice
    (run h100-aa-b1-20261124 and h100-aa-b2-20261124, the code of the default today) and the first quick
    pair, as fixtures trimmed from them (fixtures/runs/README.md; the runs' digests are in results/aa/).
    The noise model was fitted on these runs among others: in sample, so a bound, not the model's error rate
    (scripts/evaluate_compare.py measures that, leaving each pair out)."""

    def assert_calibrated(self, paths, at_least_on_trials):
        decided = list(compare.all_verdicts(compare.load_sources(paths, []))[2].values())
        found = counts(judged.verdict for judged in decided)
        self.assertGreater(sum(min(judged.trials) >= 2 for judged in decided), at_least_on_trials)
        self.assertLessEqual(found[noise_verdicts.FASTER] + found[noise_verdicts.SLOWER], 0.01 * len(decided), found)
        self.assertGreater(found[noise_verdicts.SAME], 0.15 * len(decided), found)

    def test_compare_flags_at_most_one_percent_of_the_default_suite_pair(self):
        folder = support.fixture("runs/aa-trials3-20261124")
        self.assert_calibrated([os.path.join(folder, f"h100-aa-b{run}-20261124") for run in (1, 2)], 250)

    def test_compare_flags_at_most_one_percent_of_the_quick_pair(self):
        folder = support.fixture("runs/aa-quick-trials3-20261124")
        self.assert_calibrated([os.path.join(folder, f"aa{run}-quick-trials3-20261124-005923") for run in (1, 2)], 100)


if __name__ == "__main__":
    unittest.main()
