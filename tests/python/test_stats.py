import statistics
import unittest

import support  # noqa: F401  (import path)

from gpubench_driver import stats


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


if __name__ == "__main__":
    unittest.main()
