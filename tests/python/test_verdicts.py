"""compare's verdicts on synthetic trials: a real shift is found, an A/A family is not flagged more
than the calibration allows, drift and heavy tails end unclear rather than flagged, a change below
the minimum effect is no difference; one-trial entries are held to the noise floor, whose figures
are those of the committed A/A pair. The real runs are fixtures trimmed from committed ones
(fixtures/runs/README.md)."""
import math
import os
import random
import unittest

import support

from gpubench_driver.lib import stats, verdicts
from gpubench_driver.commands import compare


def entry(medians, protocol="throughput"):
    """An ok entry measured in len(medians) trials (one: a plain entry of one process)."""
    time_s = stats.summarize(list(medians))
    if len(medians) > 1:
        time_s["over"] = "trials"
    return {"status": "ok", "protocol": protocol, "time_s": time_s}


def noisy(median, spread, count, rng):
    return [median * math.exp(rng.gauss(0, spread)) for _ in range(count)]


class TrialVerdictTest(unittest.TestCase):
    def test_a_clear_shift_is_found_in_its_direction(self):
        rng = random.Random(1)
        faster, slower = verdicts.compare_entries([
            (entry(noisy(1e-3, 0.005, 3, rng)), entry(noisy(0.9e-3, 0.005, 3, rng))),
            (entry(noisy(1e-3, 0.005, 3, rng)), entry(noisy(1.1e-3, 0.005, 3, rng)))])
        self.assertEqual((faster.verdict, slower.verdict), (verdicts.FASTER, verdicts.SLOWER))
        self.assertEqual(faster.basis, "trials")
        self.assertTrue(faster.low < faster.ratio < faster.high < 1)

    def test_an_aa_family_is_rarely_flagged(self):
        # 400 entries, both files from one distribution of trial medians (1% between trials).
        rng = random.Random(2)
        pairs = [(entry(noisy(1e-3, 0.01, 3, rng)), entry(noisy(1e-3, 0.01, 3, rng))) for _ in range(400)]
        counts = verdicts.counts(verdicts.compare_entries(pairs))
        self.assertLessEqual(counts[verdicts.FASTER] + counts[verdicts.SLOWER], 0.05 * 400)
        self.assertGreater(counts[verdicts.SAME], 0)

    def test_a_change_below_the_minimum_effect_is_no_difference(self):
        # 1% faster, measured very precisely: real, but under the 2% worth a verdict.
        rng = random.Random(3)
        (verdict,) = verdicts.compare_entries([(entry(noisy(1e-3, 0.0005, 5, rng)),
                                                entry(noisy(0.99e-3, 0.0005, 5, rng)))])
        self.assertEqual(verdict.verdict, verdicts.SAME)

    def test_drift_and_heavy_tails_are_unclear_rather_than_flagged(self):
        drifting = entry([1.00e-3, 1.06e-3, 1.12e-3])  # the trials drift: the spread is wide
        heavy = entry([1.0e-3, 1.0e-3, 1.6e-3])  # one trial far out
        steady = entry([1.04e-3, 1.05e-3, 1.06e-3])
        for other in (drifting, heavy):
            (verdict,) = verdicts.compare_entries([(steady, other)])
            self.assertEqual(verdict.verdict, verdicts.UNCLEAR, other["time_s"]["samples"])

    def test_the_family_is_held_to_the_false_discovery_rate(self):
        # Thresholds for 4 tests at 5%: 0.0125, 0.025, 0.0375, 0.05 (step-up: the largest rank under its own).
        self.assertEqual(verdicts.benjamini_hochberg([0.001, 0.02, 0.04, 0.3]), {0, 1})
        self.assertEqual(verdicts.benjamini_hochberg([0.001, 0.03, 0.04, 0.3]), {0})
        self.assertEqual(verdicts.benjamini_hochberg([0.3, 0.001, 0.04, 0.049]), {1})  # indices in the given order
        self.assertEqual(verdicts.benjamini_hochberg([0.001, 0.01, 0.012, 0.3]), {0, 1, 2})
        self.assertEqual(verdicts.benjamini_hochberg([0.2, 0.5]), set())


class NoiseFloorVerdictTest(unittest.TestCase):
    def test_one_trial_is_held_to_its_protocols_floor(self):
        floor = verdicts.NOISE_FLOOR["throughput"]
        within, beyond = verdicts.compare_entries([
            (entry([1e-3]), entry([1e-3 * math.exp(floor / 2)])),
            (entry([1e-3]), entry([1e-3 * math.exp(-2 * floor)]))])
        self.assertEqual((within.verdict, beyond.verdict), (verdicts.UNCLEAR, verdicts.FASTER))
        self.assertEqual(within.basis, "noise floor")
        self.assertIsNone(within.p_value)
        self.assertAlmostEqual(math.log(beyond.high / beyond.ratio), floor)

    def test_one_side_in_trials_is_not_enough_for_a_test(self):
        (verdict,) = verdicts.compare_entries([(entry([1e-3, 1.01e-3, 0.99e-3]), entry([1.5e-3]))])
        self.assertEqual(verdict.basis, "noise floor")

    def test_floors_are_the_committed_aa_pairs(self):
        """The 95th percentile of |log(B/A)| per protocol over the entries ok in both runs of the pair
        (each entry's name, protocol, status and median, kept in fixtures/runs/noise_floor_pair.json)."""
        pair = support.load_fixture("runs/noise_floor_pair.json")

        def entry(row):  # the fixture's columns
            name, protocol, status, median_s = row
            return {"name": name, "protocol": protocol, "status": status, "time_s": {"median": median_s}}

        def load(run_id):
            return {"studies": {name: {"entries": [entry(row) for row in rows]}
                                for name, rows in pair["runs"][run_id].items()}}
        first, second = map(load, verdicts.NOISE_FLOOR_PAIR)
        offsets = {}
        for name, study in first["studies"].items():
            other = {e["name"]: e for e in second["studies"][name]["entries"] if e["status"] == "ok"}
            for e in study["entries"]:
                if e["status"] == "ok" and e["name"] in other:
                    offsets.setdefault(e["protocol"], []).append(
                        abs(math.log(other[e["name"]]["time_s"]["median"] / e["time_s"]["median"])))
        for protocol, values in offsets.items():
            self.assertAlmostEqual(verdicts.NOISE_FLOOR[protocol], stats.nearest_rank_percentile(values, 0.95),
                                   places=4, msg=protocol)


class RealPairTest(unittest.TestCase):
    """Real A/A pairs with trials, as the H100 wrote them: the default suite in three trials twice
    (results/aa-trials3-20261124, the code of the default today) and the first quick pair, as
    fixtures trimmed from them (fixtures/runs/README.md)."""

    def assert_calibrated(self, paths, at_least_on_trials):
        decided = list(compare.all_verdicts(compare.load_sources(paths, []))[2].values())
        counts = verdicts.counts(decided)
        self.assertGreater(sum(verdict.basis == "trials" for verdict in decided), at_least_on_trials)
        self.assertLessEqual(counts[verdicts.FASTER] + counts[verdicts.SLOWER], 0.05 * len(decided), counts)

    def test_compare_flags_at_most_five_percent_of_the_default_suite_pair(self):
        folder = support.fixture("runs/aa-trials3-20261124")
        self.assert_calibrated([os.path.join(folder, f"h100-aa-b{run}-20261124") for run in (1, 2)], 250)

    def test_compare_flags_at_most_five_percent_of_the_quick_pair(self):
        folder = support.fixture("runs/aa-quick-trials3-20261124")
        self.assert_calibrated([os.path.join(folder, f"aa{run}-quick-trials3-20261124-005923") for run in (1, 2)], 100)


if __name__ == "__main__":
    unittest.main()
