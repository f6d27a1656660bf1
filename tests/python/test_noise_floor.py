"""The machine's own variation read from one run's trials (noise_floor.py) and the report's section
on it: the share of trial pairs within each target's band, the floor, and what the report says when
the host falls short."""
import unittest

from support import make_entry

from gpubench_driver.lib import document as page, noise_floor, trials
from gpubench_driver.stages import render_across


def with_trials(impl, device, mode, n, medians):
    """An entry measured in one trial per median (trials.combine, as a run does)."""
    entry = None
    for number, median_s in enumerate(medians, start=1):
        entry = trials.combine(entry, make_entry(impl, device, mode, n, median_s), number)
    return entry


def studies(*entries):
    return {"matmul": {"entries": list(entries)}}


class NoiseFloorTest(unittest.TestCase):
    def test_steady_gpu_and_a_noisy_host(self):
        found = noise_floor.derive(studies(
            with_trials("cublas", "gpu", "resident", 4096, [1.000e-3, 1.010e-3, 1.005e-3]),
            with_trials("cublas", "gpu", "resident", 64, [5.00e-6, 5.10e-6, 5.05e-6]),
            with_trials("openblas", "cpu", "host", 1024, [1.0e-2, 1.2e-2, 1.02e-2]),
            with_trials("openblas", "cpu", "host", 64, [1.0e-5, 1.01e-5, 1.3e-5])))
        rows = {row["kind"]: row for row in found["rows"]}
        self.assertEqual(found["trials"], 3)
        long_gpu = rows["GPU entries of 100 us or more"]
        self.assertEqual((long_gpu["entries"], long_gpu["pairs"]), (1, 3))
        self.assertEqual(long_gpu["within_band"], 1.0)
        self.assertAlmostEqual(long_gpu["floor"], 0.01)  # 95% of three pairs: the largest, 1.010/1.000 - 1
        self.assertTrue(long_gpu["met"])
        self.assertEqual(rows["every GPU entry"]["entries"], 2)
        self.assertTrue(rows["every GPU entry"]["met"])
        cpu = rows["CPU entries"]
        self.assertEqual(cpu["pairs"], 6)
        # Pairs within 5%: 1.02/1.0 and 1.01/1.0 only.
        self.assertAlmostEqual(cpu["within_band"], 2 / 6)
        self.assertAlmostEqual(cpu["floor"], 0.3)  # 90% of six pairs: the largest, 1.3/1.0 - 1
        self.assertFalse(cpu["met"])

    def test_entries_measured_once_give_no_rows(self):
        found = noise_floor.derive(studies(make_entry("cublas", "gpu", "resident", 4096, 1e-3)))
        self.assertEqual(found, {"rows": [], "trials": 0})

    def test_a_failed_trial_is_left_out(self):
        entry = with_trials("openblas", "cpu", "host", 64, [1.0e-5, 1.0e-5])
        entry["trials"].append({**entry["trials"][0], "trial": 3, "status": "error", "time_s": None})
        self.assertEqual(noise_floor.trial_medians(entry), [1.0e-5, 1.0e-5])


class NoiseFloorSectionTest(unittest.TestCase):
    def text(self, found):
        return page.to_markdown(render_across.noise_floor({"findings": {"noise_floor": found}}))

    def test_names_the_floor_where_the_host_falls_short(self):
        text = self.text(noise_floor.derive(studies(
            with_trials("cublas", "gpu", "resident", 4096, [1.000e-3, 1.010e-3, 1.005e-3]),
            with_trials("openblas", "cpu", "host", 1024, [1.0e-2, 1.2e-2, 1.02e-2]))))
        self.assertIn("| CPU entries | 1 | 3 | 33% | 90% within 5% | 20.0% | no |", text)
        self.assertIn("This host cannot hold CPU entries within 5% from one process to the next: 33% of trial "
                      "pairs agree that closely (the target is 90%), and 90% of them lie within 20.0%.", text)
        self.assertNotIn("cannot hold GPU", text)

    def test_one_trial_says_it_cannot_tell(self):
        self.assertIn("this run cannot say how far the machine varies", self.text({"rows": [], "trials": 0}))

    def test_older_files_have_no_section(self):
        self.assertEqual(render_across.noise_floor({"findings": {}}), [])


if __name__ == "__main__":
    unittest.main()
