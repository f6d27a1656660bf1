import random
import statistics
import unittest

import support  # noqa: F401  (import path)

from gpubench_driver.lib import stats


class SummarizeTest(unittest.TestCase):
    def test_five_samples(self):
        summary = stats.summarize([5.0, 1.0, 4.0, 2.0, 3.0])
        self.assertEqual((summary["median"], summary["min"], summary["max"]), (3.0, 1.0, 5.0))
        self.assertEqual((summary["q1"], summary["q3"]), (2.0, 4.0))
        self.assertEqual(summary["mean"], 3.0)
        self.assertAlmostEqual(summary["stddev"], statistics.stdev([1, 2, 3, 4, 5]))
        self.assertAlmostEqual(summary["cv"], summary["stddev"] / 3.0)
        self.assertEqual(summary["samples"], [5.0, 1.0, 4.0, 2.0, 3.0])  # measurement order kept

    def test_even_count_median_is_the_middle_mean(self):
        self.assertEqual(stats.summarize([1.0, 2.0, 3.0, 10.0])["median"], 2.5)

    def test_single_sample(self):
        summary = stats.summarize([2.0])
        self.assertEqual((summary["median"], summary["q1"], summary["q3"], summary["stddev"]), (2.0, 2.0, 2.0, 0.0))

    def test_quartiles_stay_within_range(self):
        summary = stats.summarize([1.0, 100.0])
        self.assertTrue(summary["min"] <= summary["q1"] <= summary["median"] <= summary["q3"] <= summary["max"])

    def test_from_aggregates(self):
        summary = stats.from_aggregates({"median": 2.0, "mean": 2.0, "stddev": 0.2})
        self.assertEqual(summary["median"], 2.0)
        self.assertAlmostEqual(summary["cv"], 0.1)
        self.assertEqual(summary["samples"], [])


def noisy(median, spread, count=41, seed=1):
    """`count` samples spread uniformly within +-spread of median (seeded: the same every run)."""
    generator = random.Random(seed)
    return [median * (1 + generator.uniform(-spread, spread)) for _ in range(count)]


class MedianIntervalTest(unittest.TestCase):
    def test_order_statistics_of_many_samples(self):
        samples = [float(value) for value in range(1, 101)]
        interval = stats.median_interval(stats.summarize(samples))
        # n = 100: x(40)..x(61), the textbook 95% interval of the median (96.5% coverage)
        self.assertEqual((interval.low, interval.high), (40.0, 61.0))
        self.assertIn("96.5% order-statistic interval of the median of 100 samples", interval.basis)

    def test_few_samples_take_min_to_max_and_say_their_coverage(self):
        interval = stats.median_interval(stats.summarize([5.0, 1.0, 4.0, 2.0, 3.0]))
        self.assertEqual((interval.low, interval.high), (1.0, 5.0))
        self.assertIn("93.8%", interval.basis)

    def test_one_sample_has_no_interval(self):
        interval = stats.median_interval(stats.summarize([2.0]))
        self.assertFalse(interval.known)
        self.assertEqual(interval.basis, "one sample: no interval")
        self.assertIsNone(stats.beyond_spread(interval, stats.median_interval(stats.summarize(noisy(9.0, 0.01)))))

    def test_without_samples_quartiles_then_range_then_none(self):
        quartiles = {"median": 2.0, "q1": 1.5, "q3": 2.5, "min": 1.0, "max": 3.0, "samples": []}
        self.assertEqual(stats.median_interval(quartiles), stats.Interval(1.5, 2.5, "q1..q3 (no samples)"))
        self.assertEqual(stats.median_interval({**quartiles, "q1": None}),
                         stats.Interval(1.0, 3.0, "min..max (no samples)"))
        aggregates = stats.from_aggregates({"median": 2.0, "mean": 2.0, "stddev": 0.1})
        self.assertFalse(stats.median_interval(aggregates).known)

    def test_record_round_trip_and_per_item(self):
        interval = stats.median_interval(stats.summarize(noisy(1.0, 0.1)))
        self.assertEqual(stats.Interval.of_record(interval.record()), interval)
        self.assertAlmostEqual(interval.per(4).high, interval.high / 4)


class BeyondSpreadTest(unittest.TestCase):
    def interval(self, samples):
        return stats.median_interval(stats.summarize(samples))

    def test_identical_distributions_do_not_differ(self):
        for seed in range(20):
            first, second = self.interval(noisy(1.0, 0.1, seed=seed)), self.interval(noisy(1.0, 0.1, seed=seed + 100))
            self.assertFalse(stats.beyond_spread(first, second), seed)

    def test_clearly_separated_distributions_differ(self):
        first, second = self.interval(noisy(1.0, 0.05)), self.interval(noisy(1.2, 0.05, seed=2))
        self.assertTrue(stats.beyond_spread(first, second))
        self.assertTrue(stats.beyond_spread(second, first))

    def test_a_median_difference_inside_the_spread_is_not_one(self):
        # medians 3% apart, each time spread by 20%
        self.assertFalse(stats.beyond_spread(self.interval(noisy(1.0, 0.2)), self.interval(noisy(1.03, 0.2, seed=2))))


class ManySamplesTest(unittest.TestCase):
    def test_thousands_of_samples_have_the_textbook_rank(self):
        # comb(n, k) / 2^n overflowed a float past ~1000 samples; the steady-state loop takes more.
        self.assertEqual(stats._order_statistic_rank(100, 0.95)[0], 40)
        rank, coverage = stats._order_statistic_rank(20000, 0.95)
        self.assertGreaterEqual(coverage, 0.95)
        self.assertLess(abs(rank - (10000 - 1.96 * 70.7)), 3)  # the normal approximation n/2 - 1.96 sqrt(n)/2

if __name__ == "__main__":
    unittest.main()
