"""The noise model (noise_model.py) and its verdicts (noise_verdicts.py) on synthetic data with known
answers: variance components recovered from runs simulated with known sigma_w and sigma_b (fixed
seeds), verdicts of constructed cases with their advice, the minimum detectable effect against the
trials and against simulation, the model file written, read back and refused when damaged, and the
command that fits it."""
import argparse
import io
import json
import math
import os
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy

import support  # noqa: F401  (the import path of the driver)

from gpubench_driver.commands import digest, noise_model as noise_model_command
from gpubench_driver.lib import noise_model, noise_verdicts
from gpubench_driver.lib.noise_model import KindModel, Model
from gpubench_driver.lib.noise_verdicts import Side

KIND = "throughput-long"


def simulated_runs(seed, entries=300, runs=4, trials=3, prior_sd=0.004, prior_df=8.0, floor_sd=0.004, ratio=0.5,
                   sigma_w=None):
    """Run digests of one machine, one revision: `runs` runs of `entries` device-timed entries of about
    1 ms, each entry's sigma_w^2 drawn from the scaled inverse chi-square prior (or sigma_w for all) and
    sigma_b^2 = floor_sd^2 + ratio * sigma_w^2. The default prior is of steady entries: few spread 1%
    (noise_model.NOISY_WITHIN_SD) or more, a kind of their own."""
    rng = numpy.random.default_rng(seed)
    within = (numpy.full(entries, sigma_w ** 2) if sigma_w is not None
              else prior_df * prior_sd ** 2 / rng.chisquare(prior_df, entries))
    between = floor_sd ** 2 + ratio * within
    centre = math.log(1e-3) + rng.normal(0, 0.5, entries)
    documents = []
    for run in range(runs):
        shift = rng.normal(0, numpy.sqrt(between))
        rows = []
        for index in range(entries):
            medians = numpy.exp(centre[index] + shift[index] + rng.normal(0, math.sqrt(within[index]), trials))
            rows.append({"study": "matmul", "name": f"matmul/cublas/gpu/resident/fp32/n:{index}", "gpu": None,
                         "device": "gpu", "protocol": "throughput", "status": "ok",
                         "median_s": float(numpy.median(medians)),
                         "trials": [{"trial": number, "status": "ok", "median_s": float(value)}
                                    for number, value in enumerate(medians, start=1)] if trials > 1 else []})
        documents.append({"id": f"run{run}", "status": "complete", "started": f"2026-01-01T00:0{run}:00+00:00",
                          "finished": None, "revision": "abc", "dirty": False, "command_line": ["gpubench", "run"],
                          "options": {key: None for key in digest.OPTIONS} | {"quick": False, "trials": trials},
                          "machine": {"gpu": "GPU", "gpu_count": 1, "gpus": ["GPU"]}, "gpu_available": True,
                          "figures": [], "entries": rows})
    return documents


def steady(count, sd, centre=1e-3):
    """`count` trial medians around centre whose logs have exactly standard deviation sd."""
    if count == 1:
        return (centre,)
    values = numpy.arange(count) - (count - 1) / 2
    values = values / values.std(ddof=1) * sd
    return tuple(float(centre * math.exp(value)) for value in values)


def model_of(kind_model, histories=None):
    return Model({KIND: kind_model}, histories or {}, {})


class VarianceComponentsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.document = noise_model.fit(simulated_runs(seed=3))
        cls.fitted = cls.document["kinds"][KIND]

    def test_the_within_run_prior_is_recovered(self):
        self.assertAlmostEqual(self.fitted["within"]["prior_sd"], 0.004, delta=0.0004)
        self.assertLess(abs(math.log(self.fitted["within"]["prior_df"] / 8.0)), math.log(2))

    def test_the_between_run_variance_of_a_typical_entry_is_recovered(self):
        # floor 0.4% and ratio 0.5 at sigma_w 0.4%: sigma_b = sqrt(0.004^2 + 0.5 * 0.004^2) = 0.49%
        self.assertAlmostEqual(self.fitted["typical"]["sigma_b"], math.sqrt(0.004 ** 2 + 0.5 * 0.004 ** 2),
                               delta=0.0008)

    def test_the_pooled_anova_recovers_one_variance_per_kind(self):
        found = noise_model.fit(simulated_runs(seed=5, sigma_w=0.004, floor_sd=0.02, ratio=0.0))
        anova = found["kinds"][KIND]["pooled_anova"]
        self.assertAlmostEqual(anova["sigma_w"], 0.004, delta=0.0002)
        self.assertAlmostEqual(anova["sigma_b"], 0.02, delta=0.002)
        self.assertEqual((anova["df_within"], anova["df_between"]), (300 * 4 * 2, 300 * 3))

    def test_a_prior_of_known_parameters_is_recovered(self):
        rng = numpy.random.default_rng(11)
        truth = 4.0 * 0.02 ** 2 / rng.chisquare(4.0, 20000)
        samples = [(float(value * rng.chisquare(2) / 2), 2) for value in truth]
        prior_sd, prior_df = noise_model.fit_prior(samples)
        self.assertAlmostEqual(prior_sd, 0.02, delta=0.001)
        self.assertAlmostEqual(prior_df, 4.0, delta=0.6)

    def test_variances_that_differ_by_sampling_alone_have_an_infinite_prior_df(self):
        rng = numpy.random.default_rng(12)
        samples = [(float(0.01 ** 2 * rng.chisquare(2) / 2), 2) for _ in range(20000)]
        prior_sd, prior_df = noise_model.fit_prior(samples)
        self.assertAlmostEqual(prior_sd, 0.01, delta=0.0005)
        self.assertGreater(prior_df, 100)

    def test_the_variance_of_a_median_matches_simulation(self):
        rng = numpy.random.default_rng(13)
        for count in range(1, 7):
            simulated = numpy.median(rng.standard_normal((100000, count)), axis=1).var()
            self.assertAlmostEqual(noise_model.median_variance(count), simulated, delta=0.01 * simulated + 0.002)

    def test_runs_of_another_revision_are_no_replicates(self):
        runs = simulated_runs(seed=4, entries=10)
        runs[1]["revision"] = "other"
        self.assertEqual([[run["id"] for run in members] for members in noise_model.replicate_sets(runs)],
                         [["run0", "run2", "run3"], ["run1"]])

    def test_runs_of_another_trial_policy_or_with_extra_trials_are_no_replicates(self):
        runs = simulated_runs(seed=4, entries=10)
        runs[1]["options"]["trial_policy"] = "adaptive"
        runs[2]["options"]["against"] = "/earlier/results.json"
        self.assertEqual([[run["id"] for run in members] for members in noise_model.replicate_sets(runs)],
                         [["run0", "run3"], ["run1"], ["run2"]])

    def test_too_few_runs_are_refused_with_what_is_needed(self):
        with self.assertRaisesRegex(noise_model.NoiseModelError, "A/A pair"):
            noise_model.fit(simulated_runs(seed=4, entries=10, runs=1))


class VerdictTest(unittest.TestCase):
    def decide(self, model, first, second, key=("matmul", "x")):
        comparison = noise_verdicts.compare(model, key, KIND, Side(first), Side(second))
        return noise_verdicts.decide([comparison], ["matmul"])[0]

    def test_the_ratio_is_that_of_the_medians_shown(self):
        model = model_of(KindModel(0.005, 4.0, 0.001, 0.0))
        verdict = self.decide(model, (1.0e-3, 1.2e-3, 1.01e-3), (1.05e-3, 1.0e-3, 1.02e-3))
        self.assertAlmostEqual(verdict.comparison.ratio, 1.02e-3 / 1.01e-3)
        self.assertLess(verdict.comparison.low, verdict.comparison.ratio)
        self.assertGreater(verdict.comparison.high, verdict.comparison.ratio)

    def test_steady_and_equal_is_same(self):
        model = model_of(KindModel(0.002, 8.0, 0.0005, 0.0))
        verdict = self.decide(model, steady(3, 0.002), steady(3, 0.002, 1.002e-3))
        self.assertEqual(verdict.verdict, noise_verdicts.SAME)
        self.assertIsNone(verdict.advice)
        self.assertLess(verdict.comparison.mde, 0.04)

    def test_steady_and_ten_percent_slower_is_slower(self):
        model = model_of(KindModel(0.002, 8.0, 0.0005, 0.0))
        verdict = self.decide(model, steady(3, 0.002), steady(3, 0.002, 1.1e-3))
        self.assertEqual(verdict.verdict, noise_verdicts.SLOWER)
        self.assertGreater(verdict.comparison.low, 1.02)
        self.assertEqual(self.decide(model, steady(3, 0.002, 1.1e-3), steady(3, 0.002)).verdict,
                         noise_verdicts.FASTER)

    def test_trial_noise_asks_for_more_trials(self):
        model = model_of(KindModel(0.02, 20.0, 0.0001, 0.0))
        verdict = self.decide(model, steady(3, 0.02), steady(3, 0.02))
        self.assertEqual(verdict.verdict, noise_verdicts.UNCLEAR)
        self.assertLess(verdict.comparison.between_share, 0.5)
        self.assertEqual(verdict.record()["dominant"], "between trials")
        self.assertRegex(verdict.advice, r"^\d+ more trials of each side$")

    def test_run_noise_asks_for_another_run_not_trials(self):
        model = model_of(KindModel(0.001, 50.0, 0.025, 0.0))
        comparison = noise_verdicts.compare(model, ("s", "x"), KIND, Side(steady(3, 0.001)), Side(steady(3, 0.001)),
                                            band=0.05)
        verdict = noise_verdicts.decide([comparison], ["s"])[0]
        self.assertEqual(verdict.verdict, noise_verdicts.UNCLEAR)
        self.assertGreater(comparison.between_share, 0.9)
        self.assertEqual(verdict.record()["dominant"], "between runs")
        self.assertEqual(verdict.advice, "another run of each side")

    def test_a_ratio_on_the_band_edge_is_said_to_be_undecidable(self):
        model = model_of(KindModel(0.001, 50.0, 0.01, 0.0))
        verdict = self.decide(model, steady(3, 0.001), steady(3, 0.001, 1.02e-3))
        self.assertEqual(verdict.verdict, noise_verdicts.UNCLEAR)
        self.assertEqual("not within 20 trials or 5 runs of each side", verdict.advice)

    def test_one_trial_has_the_width_of_the_entry_history(self):
        kind_model = KindModel(0.01, 2.0, 0.0005, 0.0)
        known = model_of(kind_model, {("matmul", "x"): (0.002, 20)})
        unknown = model_of(kind_model)
        first, second = steady(1, 0.0), steady(1, 0.0, 1.001e-3)
        self.assertEqual(self.decide(known, first, second).verdict, noise_verdicts.SAME)
        self.assertEqual(self.decide(unknown, first, second).verdict, noise_verdicts.UNCLEAR)
        self.assertLess(self.decide(known, first, second).comparison.mde,
                        self.decide(unknown, first, second).comparison.mde)

    def test_the_minimum_detectable_effect_falls_with_trials(self):
        model = model_of(KindModel(0.01, 4.0, 0.001, 0.2))
        effects = [noise_verdicts.compare(model, ("s", "x"), KIND, Side(steady(count, 0.01)),
                                          Side(steady(count, 0.01))).mde for count in range(1, 11)]
        self.assertEqual(effects, sorted(effects, reverse=True))
        self.assertEqual(len(set(effects)), len(effects))
        # The between-run part does not shrink with trials: the effect stays above band + its own width.
        between = math.sqrt(2 * (0.001 ** 2 + 0.2 * 0.01 ** 2))
        self.assertGreater(effects[-1], math.expm1(math.log1p(0.02) + 2.4 * between))

    def test_the_minimum_detectable_effect_is_detected_with_its_power(self):
        # sigma_w known (a history of 10^6 df): the injected effect's detection rate is POWER
        kind_model = KindModel(0.004, 10.0, 0.002, 0.0)
        model = model_of(kind_model, {("s", "x"): (0.004, 1e6)})
        effect = noise_verdicts.compare(model, ("s", "x"), KIND, Side(steady(3, 0.004)), Side(steady(3, 0.004))).mde
        rng = numpy.random.default_rng(21)
        detected = []
        for _ in range(3000):
            shifts = rng.normal(0, 0.002, 2) + [0, math.log1p(effect)]
            sides = [Side(tuple(1e-3 * numpy.exp(shift + rng.normal(0, 0.004, 3)))) for shift in shifts]
            comparison = noise_verdicts.compare(model, ("s", "x"), KIND, *sides)
            detected.append(noise_verdicts.decide([comparison], ["s"])[0].verdict == noise_verdicts.SLOWER)
        self.assertAlmostEqual(numpy.mean(detected), noise_verdicts.POWER, delta=0.03)

    def test_the_interval_covers_with_its_confidence(self):
        kind_model = KindModel(0.01, 6.0, 0.003, 0.3)
        model = model_of(kind_model)
        rng = numpy.random.default_rng(22)
        covered = []
        for _ in range(3000):
            sigma_w = math.sqrt(6.0 * 0.01 ** 2 / rng.chisquare(6.0))
            sigma_b = math.sqrt(0.003 ** 2 + 0.3 * sigma_w ** 2)
            sides = [Side(tuple(1e-3 * numpy.exp(rng.normal(0, sigma_b) + rng.normal(0, sigma_w, 3))))
                     for _ in range(2)]
            comparison = noise_verdicts.compare(model, ("s", "x"), KIND, *sides)
            covered.append(comparison.low <= 1.0 <= comparison.high)
        self.assertAlmostEqual(numpy.mean(covered), noise_verdicts.CONFIDENCE, delta=0.025)

    def test_a_family_is_not_changed_by_another(self):
        model = model_of(KindModel(0.004, 10.0, 0.001, 0.0))

        def compared(ratio):
            return noise_verdicts.compare(model, ("s", "x"), KIND, Side(steady(3, 0.004)),
                                          Side(steady(3, 0.004, 1e-3 * ratio)))
        slower = compared(1.032)
        self.assertTrue(0.05 / 201 < slower.p_beyond < 0.05)  # a discovery alone, not in a pool of 201
        alone = noise_verdicts.decide([slower], ["matmul"])
        crowded = noise_verdicts.decide([slower] + [compared(1.0)] * 200, ["matmul"] + ["conv2d"] * 200)
        pooled = noise_verdicts.decide([slower] + [compared(1.0)] * 200, ["matmul"] * 201)
        self.assertEqual(alone[0].verdict, noise_verdicts.SLOWER)
        self.assertEqual(crowded[0].verdict, noise_verdicts.SLOWER)
        self.assertEqual(pooled[0].verdict, noise_verdicts.UNCLEAR)  # one pool of 201 would have lost it

    def test_benjamini_hochberg(self):
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.01, 0.02, 0.03, 0.5]), {0, 1, 2})
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.01, 0.04, 0.03, 0.5]), {0})
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.02, 0.5]), {0})
        self.assertEqual(noise_verdicts.benjamini_hochberg([0.2, 0.5]), set())

    def test_a_kind_the_model_lacks_is_said(self):
        with self.assertRaisesRegex(noise_model.NoiseModelError, "no cpu-short entries"):
            noise_verdicts.compare(model_of(KindModel(0.01, 4.0, 0.0, 0.0)), ("s", "x"), "cpu-short",
                                   Side((1.0,)), Side((1.0,)))


    def test_an_entry_of_a_kind_the_model_lacks_is_held_to_its_widest(self):
        model = Model({KIND: KindModel(0.01, math.inf, 0.0, 0.0), "cpu-long": KindModel(0.05, math.inf, 0.0, 0.0)},
                      {}, {})
        self.assertEqual(noise_verdicts.kind_in(model, {"protocol": "throughput"}, 1e-3), (KIND, True))
        self.assertEqual(noise_verdicts.kind_in(model, None, 1e-3), ("cpu-long", False))
        self.assertEqual(noise_verdicts.kind_in(model, {"protocol": "latency"}, 1e-3), ("cpu-long", False))

    def test_a_range_margin_is_the_band_and_two_runs_difference(self):
        model = Model({KIND: KindModel(0.01, math.inf, 0.005, 1.0), "throughput-short": KindModel(0.02, 4.0, 0.0, 0.0)},
                      {}, {})
        # One trial each run: 0.01^2 * (1 + 1) + 0.005^2 per run, two runs, one-sided 95%.
        kind, margin = noise_verdicts.range_margin(model, "throughput", 1e-3)
        self.assertEqual(kind, KIND)
        self.assertAlmostEqual(margin, math.expm1(math.log(1.02) + 1.644854 * math.sqrt(2 * (2e-4 + 2.5e-5))))
        # The entry's time unknown: the wider of the protocol's two kinds.
        self.assertEqual(noise_verdicts.range_margin(model, "throughput")[0], "throughput-short")

    def test_a_gpu_against_its_nodes_median_has_the_variance_of_both(self):
        model = model_of(KindModel(0.01, math.inf, 0.0, 0.0))
        comparison = noise_verdicts.against_reference(model, ("s", "x"), KIND, Side((1.08e-3,)), 1e-3, 5, 1)
        self.assertAlmostEqual(comparison.ratio, 1.08)
        self.assertAlmostEqual(comparison.sd, 0.01 * math.sqrt(1 + noise_model.median_variance(5)))
        self.assertGreater(noise_verdicts.beyond_noise(comparison), 0.02)


class KindTest(unittest.TestCase):
    """The kinds of entries: by protocol and median time, device-timed entries the host paces (by their memory
    mode) and those their own A/A trials call noisy apart from the steady ones; fitted each on its own."""

    def test_the_kind_of_synthetic_entries(self):
        gpu = {"device": "gpu", "protocol": "throughput", "mode": "resident"}
        cases = [((gpu, 1e-3, False), "throughput-long"), ((gpu, 1e-5, False), "throughput-short"),
                 ((gpu, 1e-3, True), "throughput-noisy-long"), ((gpu, 1e-5, True), "throughput-noisy-short"),
                 (({**gpu, "mode": "pageable"}, 1e-3, False), "host-paced-long"),
                 (({**gpu, "mode": "transfer_pageable"}, 1e-5, True), "host-paced-short"),
                 (({**gpu, "mode": "pinned"}, 1e-3, False), "throughput-long"),
                 (({**gpu, "mode": None}, 1e-3, False), "throughput-long"),  # a digest of version 1: no mode
                 (({**gpu, "protocol": "latency", "mode": "pageable"}, 1e-3, True), "latency-long"),
                 (({"device": "cpu", "protocol": "cpu"}, 1e-5, True), "cpu-short"),
                 (({"device": "gpu", "protocol": None}, 1e-3, False), None), ((None, 1e-3, False), None)]
        for (entry, median_s, noisy), kind in cases:
            with self.subTest(entry=entry, median_s=median_s, noisy=noisy):
                self.assertEqual(noise_model.kind_of(entry, median_s, noisy), kind)
                if kind is not None:
                    self.assertIn(kind, noise_model.KINDS)
        self.assertTrue(noise_model.host_paced({**gpu, "mode": "pageable_thp"}))
        self.assertFalse(noise_model.host_paced(gpu))

    def test_a_history_of_trials_spread_one_percent_or_more_is_noisy(self):
        threshold = noise_model.NOISY_WITHIN_SD
        self.assertFalse(noise_model.shown_noisy((threshold * 0.99, 4.0)))
        self.assertTrue(noise_model.shown_noisy((threshold, 4.0)))
        self.assertFalse(noise_model.shown_noisy(None))  # unseen: as the steady ones, on their prior

    def test_a_comparison_reads_the_kind_of_the_entry_history(self):
        model = Model({KIND: KindModel(0.003, math.inf, 0.0, 0.0),
                       "throughput-noisy-long": KindModel(0.03, math.inf, 0.0, 0.0)},
                      {("s", "noisy"): (0.02, 8.0), ("s", "steady"): (0.002, 8.0)}, {})
        entry = {"device": "gpu", "protocol": "throughput"}
        self.assertEqual(noise_verdicts.kind_in(model, entry, 1e-3, ("s", "noisy")), ("throughput-noisy-long", True))
        self.assertEqual(noise_verdicts.kind_in(model, entry, 1e-3, ("s", "steady")), (KIND, True))
        self.assertEqual(noise_verdicts.kind_in(model, entry, 1e-3, ("s", "new")), (KIND, True))
        self.assertEqual(noise_verdicts.kind_in(model, entry, 1e-3), (KIND, True))  # a figure: no entry history
        # The model measured no host-paced entries: such an entry is held to its widest kind.
        self.assertEqual(noise_verdicts.kind_in(model, {**entry, "mode": "pageable"}, 1e-3), ("throughput-noisy-long", False))

    def test_each_kind_is_fitted_on_its_own_entries(self):
        """Steady entries (sigma_w 0.3%), noisy ones (3%) and pageable ones (3%) of one run set: each kind's
        prior is its own entries' width, the steady one not widened by the others."""
        runs = simulated_runs(seed=5, entries=120, sigma_w=0.003, floor_sd=0.001, ratio=0.1)
        noisy = simulated_runs(seed=6, entries=60, sigma_w=0.03, floor_sd=0.001, ratio=0.1)
        paced = simulated_runs(seed=7, entries=60, sigma_w=0.03, floor_sd=0.001, ratio=0.1)
        for run, noisy_run, paced_run in zip(runs, noisy, paced):
            for row in noisy_run["entries"]:
                run["entries"].append({**row, "name": row["name"].replace("cublas", "noisy")})
            for row in paced_run["entries"]:
                run["entries"].append({**row, "name": row["name"].replace("resident", "pageable"), "mode": "pageable"})
        kinds = noise_model.fit(runs)["kinds"]
        self.assertEqual(set(kinds), {KIND, "throughput-noisy-long", "host-paced-long"})
        self.assertAlmostEqual(kinds[KIND]["within"]["prior_sd"], 0.003, delta=0.0006)
        self.assertAlmostEqual(kinds["host-paced-long"]["within"]["prior_sd"], 0.03, delta=0.006)
        self.assertGreater(kinds["throughput-noisy-long"]["within"]["prior_sd"], 0.02)
        self.assertEqual(kinds["host-paced-long"]["measured_on"]["entries"], 60)


class MissingScipyTest(unittest.TestCase):
    def test_without_scipy_the_message_says_what_to_install(self):
        kept = noise_model.distributions
        noise_model.distributions = None
        try:
            with self.assertRaisesRegex(noise_model.MissingScipy, "install python3-scipy"):
                noise_verdicts.compare(model_of(KindModel(0.01, 4.0, 0.0, 0.0)), ("s", "x"), KIND,
                                       Side((1.0, 1.1)), Side((1.0, 1.1)))
        finally:
            noise_model.distributions = kept


class ModelFileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.document = noise_model.fit(simulated_runs(seed=7, entries=40))

    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, "noise_model.json")

    def tearDown(self):
        self.directory.cleanup()

    def test_written_and_read_back_whole(self):
        noise_model.write(self.document, self.path)
        model = noise_model.load(self.path)
        self.assertEqual(model.document, json.loads(json.dumps(self.document)))
        fitted = self.document["kinds"][KIND]
        prior_df = fitted["within"]["prior_df"]  # null: an infinite df (these entries' variances differ by chance)
        self.assertEqual(model.kinds[KIND], KindModel(fitted["within"]["prior_sd"],
                                                      math.inf if prior_df is None else prior_df,
                                                      fitted["between"]["floor_sd"], fitted["between"]["ratio"]))
        self.assertEqual(len(model.entries), 40)
        self.assertEqual([run["id"] for run in model.document["runs"]], ["run0", "run1", "run2", "run3"])
        self.assertEqual(model.document["replicate_sets"], [["run0", "run1", "run2", "run3"]])

    def refused(self, text, message):
        with open(self.path, "w", encoding="utf-8") as stream:
            stream.write(text)
        with self.assertRaisesRegex(noise_model.NoiseModelError, message) as caught:
            noise_model.load(self.path)
        self.assertIn(self.path, str(caught.exception))

    def damaged(self, change):
        document = json.loads(json.dumps(self.document))
        change(document)
        return json.dumps(document)

    def test_a_damaged_file_is_refused_with_what_is_wrong(self):
        text = json.dumps(self.document)
        self.refused(text[:len(text) // 2], "Expecting|Unterminated")
        self.refused(text.replace('"gpubench-noise-model"', '"gpubench-noise-floor"'), "not a gpubench-noise-model")
        self.refused(self.damaged(lambda d: d["kinds"][KIND]["within"].update(prior_sd=-1)),
                     r"kinds.throughput-long.within.prior_sd: expected a number from 1e-06 to 10, got -1")
        self.refused(self.damaged(lambda d: d["kinds"][KIND]["between"].update(ratio="x")),
                     "kinds.throughput-long.between.ratio")
        self.refused(self.damaged(lambda d: d["kinds"].update(gpu={})), "kinds: expected one or more of")
        self.refused(self.damaged(lambda d: d["entries"][3].pop("within_df")), r"entries\[3\].within_df")
        self.refused(self.damaged(lambda d: d.update(runs=[])), "runs: expected the list of runs")
        self.refused(text.replace('"ratio": ', '"ratio": NaN, "x": ', 1), "NaN is not a number")
        with self.assertRaisesRegex(noise_model.NoiseModelError, "No such file"):
            noise_model.load(os.path.join(self.directory.name, "absent.json"))


class CommandTest(unittest.TestCase):
    def command(self, *args):
        parser = argparse.ArgumentParser(prog="gpubench")
        noise_model_command.register(parser.add_subparsers(dest="command"))
        output = io.StringIO()
        with redirect_stdout(output):
            status = noise_model_command.execute(parser.parse_args(["noise-model", *args]), ["noise-model", *args])
        return status, output.getvalue()

    def test_fits_a_digest_and_writes_the_model(self):
        with tempfile.TemporaryDirectory() as directory:
            runs = digest.write({"schema": digest.SCHEMA, "schema_version": digest.SCHEMA_VERSION,
                                 "figures_derived_by": {"revision": None, "dirty": None},
                                 "runs": simulated_runs(seed=8, entries=30)}, os.path.join(directory, "aa.json.gz"))
            out = os.path.join(directory, "model.json")
            status, printed = self.command(runs, "--out", out)
            self.assertEqual(status, 0)
            self.assertIn(f"noise model: {out} from 4 run(s), 1 replicate set(s), 30 entries", printed)
            self.assertIn("throughput-long: sigma_w", printed)
            self.assertEqual(set(noise_model.load(out).kinds), {KIND})

    def test_a_lone_run_is_refused(self):
        with tempfile.TemporaryDirectory() as directory:
            runs = digest.write({"schema": digest.SCHEMA, "schema_version": digest.SCHEMA_VERSION,
                                 "figures_derived_by": {"revision": None, "dirty": None},
                                 "runs": simulated_runs(seed=8, entries=30, runs=1)}, os.path.join(directory, "a.json"))
            with self.assertRaisesRegex(noise_model_command.ERRORS, "too few measurements"):
                self.command(runs, "--out", os.path.join(directory, "model.json"))
            self.assertFalse(os.path.exists(os.path.join(directory, "model.json")))


class CommittedModelTest(unittest.TestCase):
    def test_the_committed_model_reads_and_names_its_runs(self):
        model = noise_model.load()
        self.assertTrue(set(model.kinds) <= set(noise_model.KINDS))
        self.assertIn("h100-aa-b1-20261124", [run["id"] for run in model.document["runs"]])


if __name__ == "__main__":
    unittest.main()
