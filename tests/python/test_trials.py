"""Independent trials: an entry measured in several processes becomes the summary of their medians,
with every trial's samples kept; a failed trial makes the entry an error; the sizes change order
between trials; `run --trials` runs each size once per trial and records it."""
import json
import math
import os
import random
import unittest

import support
from support import make_entry
from test_run_studies import FakeMachine

from gpubench_driver.lib import findings, results, sections, stats, trials
from gpubench_driver.commands import cli, run as run_command


def measured(median_s, samples=(0.99, 1.0, 1.01), status="ok"):
    entry = make_entry("cublas", "gpu", "resident", 1024, median_s, status=status)
    if status == "ok":
        entry["time_s"] = stats.summarize([median_s * factor for factor in samples])
        entry["latency_s"] = stats.summarize([2 * median_s])
        entry["energy_j_per_op"] = median_s * 100
        entry["converged"] = True
        entry["flop"] = 2.0 * 1024 ** 3
    entry["wall_s"] = 1.5
    return entry


class CombineTest(unittest.TestCase):
    def combined(self, *entries):
        entry = None
        for trial, new in enumerate(entries, start=1):
            entry = trials.combine(entry, new, trial)
        return entry

    def test_one_trial_leaves_the_entry_as_measured(self):
        entry = measured(1e-3)
        self.assertIs(trials.combine(None, entry, 1), entry)
        self.assertEqual(trials.count(entry), 1)

    def test_the_estimate_is_the_median_of_the_trials_medians(self):
        entry = self.combined(measured(1.00e-3), measured(1.10e-3), measured(1.02e-3))
        self.assertEqual(trials.count(entry), 3)
        self.assertEqual(entry["time_s"]["over"], "trials")
        self.assertAlmostEqual(entry["time_s"]["median"], 1.02e-3)
        self.assertEqual(sorted(entry["time_s"]["samples"]), sorted([1.00e-3, 1.10e-3, 1.02e-3]))
        self.assertAlmostEqual(entry["flop_per_s"], 2.0 * 1024 ** 3 / 1.02e-3)
        self.assertAlmostEqual(entry["latency_s"]["median"], 2.04e-3)
        self.assertAlmostEqual(entry["energy_j_per_op"], 0.102)
        self.assertAlmostEqual(entry["wall_s"], 4.5)
        # Every trial keeps its own samples.
        self.assertEqual([len(record["time_s"]["samples"]) for record in entry["trials"]], [3, 3, 3])
        self.assertEqual([record["trial"] for record in entry["trials"]], [1, 2, 3])

    def test_the_interval_is_between_trials(self):
        entry = self.combined(measured(1.00e-3), measured(1.10e-3), measured(1.02e-3))
        interval = stats.median_interval(entry["time_s"])
        self.assertEqual((interval.low, interval.high), (1.00e-3, 1.10e-3))
        self.assertIn("3 trials' medians", interval.basis)

    def test_a_library_choice_that_differs_between_trials_is_named(self):
        first, second = measured(1e-3), measured(1.2e-3)
        first["algorithm"], second["algorithm"] = 1.0, 6.0
        entry = self.combined(first, second)
        self.assertEqual(entry["choices_varied"], {"algorithm": [1.0, 6.0]})
        self.assertIsNone(self.combined(measured(1e-3), measured(1e-3))["choices_varied"])

    def test_a_failed_trial_makes_the_entry_an_error(self):
        failed = measured(1e-3, status="error")
        failed["message"] = "wrong answer: max rel error 0.5"
        entry = self.combined(measured(1e-3), failed, measured(1e-3))
        self.assertEqual(entry["status"], "error")
        self.assertIsNone(entry["time_s"])
        self.assertEqual(entry["message"], "trial 2 of 3: wrong answer: max rel error 0.5")
        entry = self.combined(failed, measured(1e-3))
        self.assertEqual(entry["status"], "error")
        self.assertTrue(entry["message"].startswith("trial 1 of 2"))

    def test_a_skipped_entry_stays_skipped(self):
        skipped = measured(1e-3, status="skipped")
        skipped["message"] = "skipped: above the size cap"
        self.assertIs(self.combined(skipped, dict(skipped)), skipped)

    def test_a_combined_entry_passes_validation(self):
        document = support.precision_document()
        document["studies"]["precision"]["entries"] = [
            self.combined(measured(1.00e-3), measured(1.10e-3), measured(1.02e-3))]
        results.validate(document)
        document["studies"]["precision"]["entries"][0]["trials"][1]["time_s"]["samples"] = [-1.0]
        with self.assertRaises(results.ResultsError):
            results.validate(document)


def timed(impl, device, mode, n, medians):
    """An entry measured in one trial per median."""
    combined = None
    for trial, median in enumerate(medians, start=1):
        entry = make_entry(impl, device, mode, n, median)
        entry["time_s"] = stats.summarize([median])
        entry["wall_s"] = 1.0
        combined = trials.combine(combined, entry, trial)
    return combined


class CrossoverOverTrialsTest(unittest.TestCase):
    def test_each_trial_gives_its_own_estimate(self):
        # The CPU is steady; the GPU at n = 128 wins in trial 1 only: the crossover moves between the trials.
        entries = [timed("openblas", "cpu", "host", n, [t] * 2) for n, t in ((64, 1e-5), (128, 8e-5), (256, 6e-4))]
        entries += [timed("cublas", "gpu", "resident", 64, [2e-5, 2e-5]),
                    timed("cublas", "gpu", "resident", 128, [4e-5, 1.6e-4]),
                    timed("cublas", "gpu", "resident", 256, [5e-5, 5e-5])]
        (found,) = findings.crossovers(entries, with_latency=False)
        first, second = found["estimate_n_trials"]
        self.assertTrue(64 <= first <= 128 < second <= 256, found["estimate_n_trials"])
        self.assertEqual(len(trials.view(entries, 2)), 6)
        cells = sections.crossover_cells(found)
        self.assertIn("over 2 trials)", cells[1])
        interval = found["estimate_n_interval"]
        self.assertEqual((interval["low"], interval["high"]), (first, second))  # min..max of two
        self.assertTrue(first <= found["estimate_n"] <= second)
        # The median curve crosses in 128 .. 256 (the GPU's median at 128 loses), the median of 91 and 149
        # below it: said, not hidden.
        self.assertEqual((found["lower"], found["upper"], found["estimate_n"]), (128, 256, 120))
        self.assertIn("the trials cross in different brackets", found["note"])

    def test_a_trial_some_sizes_lack_gives_no_estimate(self):
        # Two trials everywhere and a third at n = 128 only (the default run's adaptive policy): the third
        # brackets nothing the others do, so the estimates are the two trials'.
        entries = [timed("openblas", "cpu", "host", n, [t] * 2) for n, t in ((64, 1e-5), (128, 8e-5), (256, 6e-4))]
        entries += [timed("cublas", "gpu", "resident", 64, [2e-5, 2e-5]),
                    timed("cublas", "gpu", "resident", 128, [4e-5, 1.6e-4, 4e-5]),
                    timed("cublas", "gpu", "resident", 256, [5e-5, 5e-5])]
        (found,) = findings.crossovers(entries, with_latency=False)
        self.assertEqual(len(found["estimate_n_trials"]), 2)

    def test_one_trial_crossing_gives_no_interval(self):
        # The GPU wins at n = 128 in trial 1 only and never in trial 2 (the CPU as fast at 256): trial 2
        # brackets none, so the estimate is the median curve's and the cell names no range of one trial.
        entries = [timed("openblas", "cpu", "host", n, [t] * 2) for n, t in ((64, 1e-5), (128, 8e-5), (256, 6e-4))]
        entries += [timed("cublas", "gpu", "resident", 64, [2e-5, 2e-5]),
                    timed("cublas", "gpu", "resident", 128, [4e-5, 1.6e-4]),
                    timed("cublas", "gpu", "resident", 256, [5e-5, 7e-4])]
        (found,) = findings.crossovers(entries, with_latency=False)
        self.assertEqual([value is None for value in found["estimate_n_trials"]], [False, True])
        self.assertIsNone(found["estimate_n_interval"])
        self.assertNotIn("trials", sections.crossover_cells(found)[1])


def power_law_run(crossover, trial_count, spread, rng, sizes=(32, 64, 128, 256, 512)):
    """A run of `trial_count` trials whose GPU beats the CPU from `crossover` on: at every size the
    CPU's time n^3 and the GPU's n^2 x crossover (their speedup n / crossover is a line in log-log, so
    the interpolation is exact), each entry's median in each trial times exp(N(0, spread))."""
    def noisy(time):
        return [time * math.exp(rng.gauss(0, spread)) for _ in range(trial_count)]
    return ([timed("openblas", "cpu", "host", n, noisy(1e-9 * n ** 3)) for n in sizes]
            + [timed("cublas", "gpu", "resident", n, noisy(1e-9 * n ** 2 * crossover)) for n in sizes])


class CrossoverIntervalTest(unittest.TestCase):
    """The crossover over trials on synthetic runs with a known crossover: the estimate lies inside its
    interval, and the interval covers the true crossover about as often as its coverage says (the
    order-statistic interval of a median: min..max of three trials 75%, of five 93.75%)."""
    CROSSOVER = 90

    def estimates(self, trial_count, spread, runs, seed):
        rng = random.Random(seed)
        found = [findings.crossovers(power_law_run(self.CROSSOVER, trial_count, spread, rng), with_latency=False)[0]
                 for _ in range(runs)]
        return [(row["estimate_n"], row["estimate_n_interval"]) for row in found]

    def test_without_noise_the_estimate_is_the_crossover(self):
        ((estimate, interval),) = self.estimates(3, 0.0, 1, seed=1)
        self.assertEqual(estimate, self.CROSSOVER)
        self.assertEqual((interval["low"], interval["high"]), (self.CROSSOVER, self.CROSSOVER))

    def test_the_estimate_lies_inside_its_interval_and_the_interval_covers_as_stated(self):
        for trial_count, coverage in ((3, 0.75), (5, 0.9375)):
            with self.subTest(trials=trial_count):
                found = self.estimates(trial_count, 0.1, 400, seed=trial_count)
                self.assertTrue(all(interval["low"] <= estimate <= interval["high"] for estimate, interval in found))
                self.assertTrue(all(f"{coverage:.1%} order-statistic" in interval["basis"] for _, interval in found))
                covered = sum(interval["low"] <= self.CROSSOVER <= interval["high"] for _, interval in found)
                # 400 runs: a binomial share's standard error at 75% is 2.2 points; the rounding of each
                # trial's estimate to a whole size widens the interval a little.
                self.assertGreater(covered / len(found), coverage - 0.08, covered)
                self.assertLess(covered / len(found), min(coverage + 0.08, 1.0), covered)


class DefaultTrialsTest(unittest.TestCase):
    def trials(self, *flags):
        return run_command.resolve_run_options(cli.build_parser().parse_args(["run", *flags])).trials

    def test_the_suite_takes_three_trials_and_quick_one(self):
        self.assertEqual(self.trials(), 3)
        self.assertEqual(self.trials("--quick"), 1)
        self.assertEqual(self.trials("--quick", "--trials", "4"), 4)
        self.assertEqual(self.trials("--trials", "1"), 1)


class SizeOrderTest(unittest.TestCase):
    def test_first_trial_as_given_later_ones_shuffled_reproducibly(self):
        sizes = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
        self.assertEqual(trials.size_order(sizes, 1, "run"), sizes)
        later = [trials.size_order(sizes, trial, "run") for trial in (2, 3)]
        self.assertTrue(all(sorted(order) == sizes for order in later))
        self.assertNotEqual(later[0], sizes)
        self.assertEqual(later, [trials.size_order(sizes, trial, "run") for trial in (2, 3)])


class RunTrialsTest(unittest.TestCase):
    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))
        self.addCleanup(self.machine.close)

    def test_each_size_runs_once_per_trial(self):
        process, out = self.machine.run("--sizes", "64,128", "--trials", "3", "--no-refine")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        study = results.load(out)["studies"]["matmul"]
        self.assertEqual(len(study["trial_size_orders"]), 3)
        self.assertTrue(all(sorted(order) == [64, 128] for order in study["trial_size_orders"]))
        self.assertTrue(study["entries"])
        for entry in study["entries"]:
            self.assertEqual(trials.count(entry), 3, entry["name"])
        self.assertIn(f"[{4 * 3}/{4 * 3}]", process.stdout)
        self.assertIn("(trial 3 of 3)", process.stdout)
        self.assertEqual(results.load(out)["run"]["options"]["trials"], 3)

    def test_google_benchmarks_own_json_is_kept_per_study(self):
        process, out = self.machine.run("--sizes", "64,128", "--trials", "2", "--no-refine")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        with open(os.path.join(out, "gbench", "matmul.json"), encoding="utf-8") as stream:
            raw = json.load(stream)
        self.assertIn("context", raw)
        names = [run["name"] for run in raw["benchmarks"]]
        self.assertEqual(len(names), 2 * 4)  # two trials of two sizes, two implementations each
        self.assertEqual(len(set(names)), 4)

    def test_trials_are_outermost_across_the_studies(self):
        machine = FakeMachine(studies=("matmul", "precision"))
        self.addCleanup(machine.close)
        process, _ = machine.run("--sizes", "4096", "--trials", "2", "--no-refine")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        headings = [line.split(":")[0] + line.split(",")[-1] for line in process.stdout.splitlines()
                    if " entries at " in line]
        self.assertEqual(headings, ["matmul trial 1 of 2", "precision trial 1 of 2", "matmul trial 2 of 2",
                                    "precision trial 2 of 2"])

    def test_every_process_of_the_run_gets_its_held_choices_and_its_folder_and_an_old_file_goes(self):
        log = os.path.join(self.machine.directory.name, "invocations.jsonl")
        self.machine.env["GPUBENCH_FAKE_LOG"] = log
        out = os.path.join(self.machine.directory.name, "run")
        os.makedirs(out)
        held = os.path.join(out, "held_choices.tsv")
        with open(held, "w", encoding="utf-8") as stream:
            stream.write("matmul/stale\t1\n")  # an earlier attempt's, with no results.json beside it
        process, _ = self.machine.run("--sizes", "64,128", "--trials", "2", "--no-refine")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertFalse(os.path.exists(held))  # removed; the stand-in binary records nothing
        with open(log, encoding="utf-8") as stream:
            measuring = [args for args in map(json.loads, stream)
                         if not {"--describe", "--benchmark_list_tests=true"} & set(args)]
        self.assertEqual(len(measuring), 2 * 2)  # two sizes, two trials
        for args in measuring:
            self.assertIn("--held-choices=" + held, args)
            self.assertIn("--artifacts-dir=" + out, args)  # where a study writes files of its own

    def test_bad_trial_counts_are_refused(self):
        for value in ("0", "-1", "x", "21"):
            process, _ = self.machine.run("--trials", value)
            self.assertEqual(process.returncode, 2, value)
            self.assertIn("--trials", process.stderr + process.stdout)


if __name__ == "__main__":
    unittest.main()
