"""run --against (stages/against.py) and its sequential rule (lib/sequential.py).

The rule on simulated sequences with known answers (seeded): its confidence sequence misses the true ratio at
some pass in at most its nominal share of A/A sequences of the model's CPU variances (where compare's fixed
interval, read at every pass, misses more often), its verdicts at the band's edge are wrong at most that often,
it flags a 10% change where trials can resolve it, and it stops adding trials where they cannot.
The run on stand-in study binaries (test_run_studies.FakeMachine: the same times in every trial) against a
copy of an earlier run with known ratios: extra passes go only to the unit still undecided, stop when it is
decided or the budget is spent, resume after a kill to the same passes; a bad file is refused with exit 2."""
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import numpy

import test_resume
from support import ENTRY
from test_run_studies import FakeMachine

from gpubench_driver.lib import noise_model, noise_verdicts, results, sequential, trials

SEQUENCES = 2000
CPU = noise_model.load().kinds["cpu-long"]  # the committed model's CPU entries of 100 us or more
BAND = noise_verdicts.DEFAULT_BAND


def simulate(kind_model, delta, a_trials, seed, start=2):
    """SEQUENCES sequences of an entry of this KindModel (its sigma_w known) whose true log ratio is delta: A's
    trials' logs (one run) and this run's MOST_TRIALS, each with its run's between-run part."""
    rng = numpy.random.default_rng(seed)
    between = math.sqrt(kind_model.floor_sd ** 2 + kind_model.ratio * kind_model.prior_sd ** 2)
    for _ in range(SEQUENCES):
        a = rng.normal(0, between) + rng.normal(0, kind_model.prior_sd, a_trials)
        b = delta + rng.normal(0, between) + rng.normal(0, kind_model.prior_sd, sequential.MOST_TRIALS)
        spread = sequential.variances(kind_model, None, list(a), list(b[:start]))
        yield spread, list(a), list(b)


def looks(spread, a, b, start=2):
    return [sequential.look(spread, sequential.estimate(a, b[:k]), k, BAND)
            for k in range(start, sequential.MOST_TRIALS + 1)]


def first_decided(found):
    """The Look the run stops at: the first not unclear (the last where none is)."""
    return next((look for look in found if look.state != sequential.UNDECIDED), found[-1])


def known(sd, ratio=0.0):
    return noise_model.KindModel(sd, math.inf, 0.0, ratio)


class SequentialRuleTest(unittest.TestCase):
    def test_the_sequence_covers_the_ratio_at_every_pass_where_a_fixed_interval_does_not(self):
        """A/A sequences of a CPU entry with its own sigma_w at 1% (decided within the trials) and at the kind's
        prior: the confidence sequence misses the true ratio at some pass of 2 to 20 trials in at most LEVEL of
        them; compare's fixed 90% interval, read at every pass, misses more often than its 10%."""
        for sd in (0.01, CPU.prior_sd):
            kind_model = noise_model.KindModel(sd, math.inf, CPU.floor_sd, CPU.ratio)
            missed = fixed_missed = 0
            for spread, a, b in simulate(kind_model, 0.0, 3, seed=2026):
                found = looks(spread, a, b)
                missed += any(look.low > 1 or look.high < 1 for look in found)
                z = noise_model.distributions.norm.isf((1 - noise_verdicts.CONFIDENCE) / 2)
                fixed_missed += any(abs(sequential.estimate(a, b[:k])) > z * math.sqrt(
                    spread.fixed + spread.per_trial / k) for k in range(2, sequential.MOST_TRIALS + 1))
            self.assertLessEqual(missed / SEQUENCES, sequential.LEVEL, sd)
            self.assertGreater(fixed_missed / SEQUENCES, 1 - noise_verdicts.CONFIDENCE, sd)

    def test_verdicts_at_the_bands_edge_are_wrong_at_most_the_level(self):
        """A true ratio on the band's edge is neither same nor beyond it: whatever the run stops at says so in
        at most LEVEL of the sequences, each verdict read where the run would stop."""
        edge = math.log1p(BAND)
        stops = [first_decided(looks(*found)) for found in simulate(known(0.01, CPU.ratio), edge, 3, seed=7)]
        wrong = sum(look.state in (noise_verdicts.SAME, noise_verdicts.SLOWER) for look in stops)
        self.assertLessEqual(wrong / SEQUENCES, sequential.LEVEL)
        self.assertGreater(sum(look.state == sequential.HOPELESS for look in stops) / SEQUENCES, 0.5)

    def test_a_ten_percent_change_is_flagged_where_trials_can_resolve_it(self):
        """A 10% slowdown of a CPU entry whose trials move by 2% (the kind's between-run ratio) against an
        earlier run of 20 trials: flagged slower in at least 80% of the sequences, never faster."""
        stops = [first_decided(looks(*found)) for found in simulate(known(0.02, CPU.ratio), math.log(1.1), 20, seed=11)]
        self.assertGreaterEqual(sum(look.state == noise_verdicts.SLOWER for look in stops) / SEQUENCES, 0.8)
        self.assertEqual(sum(look.state == noise_verdicts.FASTER for look in stops), 0)

    def test_trials_that_cannot_decide_are_not_added(self):
        """With the kind's own sigma_w (7%) and an earlier run of three trials, A's median and the runs' parts
        leave a 10% change undecidable at the 5% band: the run stops adding trials at the first pass in most
        sequences (three quarters or more) rather than spend the budget; at the most trials an undecided entry is
        hopeless."""
        stops = [first_decided(looks(*found)) for found in simulate(known(CPU.prior_sd, CPU.ratio), math.log(1.1), 3,
                                                                   seed=13)]
        self.assertGreater(sum(look.state == sequential.HOPELESS and look.trials == 2 for look in stops) / SEQUENCES,
                           0.75)
        spread = sequential.variances(known(0.05), None, [0.0] * 3, [0.0] * 2)
        self.assertEqual(sequential.look(spread, math.log1p(BAND), sequential.MOST_TRIALS, BAND).state,
                         sequential.HOPELESS)

    def test_what_no_trial_of_this_run_shrinks_is_As_median_and_the_runs_parts(self):
        """Trials are processes: the model's sigma_w is the process-to-process noise, and more trials of this run
        average it. What they cannot average is A's median (sigma_w^2 v(n_A)) and both runs' between-run parts
        (ratio sigma_w^2 each). With sigma_w 4% and no between-run part, a 10% change cannot be called slower at the
        5% band by the most trials of this run against A of three trials (A's median alone: sd 2.7%), and is
        against A of 20."""
        sd = 0.12
        for ratio in (0.0, 0.05):
            spread = sequential.variances(known(sd, ratio), None, [0.0] * 3, [0.0] * 2)
            self.assertAlmostEqual(spread.fixed, sd ** 2 * (noise_model.median_variance(3) + 2 * ratio))
            self.assertAlmostEqual(spread.per_trial, sd ** 2)
        change = math.log(1.1)
        against_three = sequential.variances(known(0.04), None, [0.0] * 3, [0.0] * 2)
        self.assertAlmostEqual(math.sqrt(against_three.fixed), 0.0268, places=3)
        self.assertNotEqual(sequential.look(against_three, change, sequential.MOST_TRIALS, BAND).state,
                            noise_verdicts.SLOWER)
        against_twenty = sequential.variances(known(0.04), None, [0.0] * 20, [0.0] * 2)
        self.assertEqual(sequential.look(against_twenty, change, sequential.MOST_TRIALS, BAND).state,
                         noise_verdicts.SLOWER)

    def test_the_budget_limits_what_may_be_decided(self):
        """An entry that 4 trials decide is unclear while the budget allows them, hopeless where it allows none."""
        spread = sequential.variances(known(0.02), (0.02, 1000), [0.0] * 3, [0.0] * 2)
        self.assertEqual(sequential.look(spread, math.log(1.1), 2, BAND).state, sequential.UNDECIDED)
        self.assertEqual(sequential.look(spread, math.log(1.1), 2, BAND, reachable=2).state, sequential.HOPELESS)
        self.assertEqual(sequential.look(spread, math.log(1.1), 4, BAND).state, noise_verdicts.SLOWER)


# --- the run ------------------------------------------------------------------------------------------
NAME = "matmul/openblas/cpu/host/fp32/n:{}"
SIZES = (64, 128, 256)
# B over A per size: 64 the same (decided at once), 128 on the band's edge (hopeless at once), 256 10% slower
# (its entry's sigma_w 2%: decided after a few more trials, lib/sequential.py).
RATIOS = {64: 1.0, 128: 1.0 + BAND, 256: 1.1}
WIDTHS = {64: 0.005, 128: 0.005, 256: 0.02}


def write_model(path):
    """A noise model whose CPU entries' sigma_w are WIDTHS (their A/A history; the kind's prior carries no weight)."""
    kind = {"within": {"prior_sd": 0.01, "prior_df": 1e-6}, "between": {"floor_sd": 0.0, "ratio": 0.0}}
    document = {"schema": noise_model.SCHEMA, "schema_version": noise_model.SCHEMA_VERSION, "runs": [{"id": "made-up"}],
                "kinds": {"cpu-short": kind, "cpu-long": kind},
                "entries": [{"study": "matmul", "name": NAME.format(n), "within_sd": sd, "within_df": 1000}
                            for n, sd in WIDTHS.items()]}
    with open(path, "w", encoding="utf-8") as stream:
        json.dump(document, stream)
    return path


def trials_needed():
    """The trials after which the rule decides the 256 entry (its B logs all the same, A's three the same)."""
    spread = sequential.variances(noise_model.load(MODEL).kinds["cpu-short"], (WIDTHS[256], 1000), [0.0] * 3, [0.0] * 3)
    return next(k for k in range(3, sequential.MOST_TRIALS + 1)
                if sequential.look(spread, math.log(RATIOS[256]), k, BAND).state != sequential.UNDECIDED)


MODEL = None  # set by setUpModule: the made-up model's path


class AgainstRunTest(unittest.TestCase):
    """An earlier run (A: the stand-in matmul's CPU entries at three sizes, three trials, its times divided by
    RATIOS), and runs --against it."""

    @classmethod
    def setUpClass(cls):
        global MODEL
        cls.machine = FakeMachine(studies=("matmul",))
        cls.root = cls.machine.directory.name
        MODEL = write_model(os.path.join(cls.root, "model.json"))
        cls.env = dict(cls.machine.env, TMPDIR=cls.root, GPUBENCH_PYTHON=sys.executable, GPUBENCH_FAKE_PACE="0.02")
        cls.earlier = os.path.join(cls.root, "a")
        process = cls.gpubench("run", "--cpu-only", "--no-refine", "--trials", "3", "--sizes",
                               ",".join(map(str, SIZES)), "--noise-model", MODEL, "--out", cls.earlier)
        assert process.returncode == 0, process.stdout + process.stderr
        document = results.load(cls.earlier)
        for entry in document["studies"]["matmul"]["entries"]:
            scale = 1 / RATIOS[entry["n"]]
            for record in entry["trials"]:
                record["time_s"]["median"] *= scale
            entry["time_s"].update(median=entry["time_s"]["median"] * scale,
                                   samples=[value * scale for value in entry["time_s"]["samples"]])
        with open(os.path.join(cls.earlier, "results.json"), "w", encoding="utf-8") as stream:
            json.dump(document, stream)

    @classmethod
    def tearDownClass(cls):
        cls.machine.close()

    @classmethod
    def gpubench(cls, *args, env=None):
        return subprocess.run(["bash", ENTRY, args[0], "--no-setup", "--no-build", "--build-dir", cls.machine.build_dir,
                               "--no-reference", *args[1:]], capture_output=True, text=True, timeout=300,
                              env=env or cls.env)

    def against(self, name, *flags, env=None):
        out = os.path.join(self.root, name)
        return self.gpubench("run", "--against", self.earlier, "--noise-model", MODEL, "--out", out, *flags,
                             env=env), out

    def counts(self, out):
        return {entry["n"]: trials.count(entry) for entry in results.load(out)["studies"]["matmul"]["entries"]}

    def test_extra_trials_go_only_to_the_undecided_unit(self):
        process, out = self.against("decided")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        document = results.load(out)
        record = document["run"]["against"]
        needed = trials_needed()
        self.assertEqual(self.counts(out), {64: 3, 128: 3, 256: needed})
        self.assertEqual([[(unit["n"], unit["trial"]) for unit in found["more"]] for found in record["passes"]],
                         [[(256, trial)] for trial in range(4, needed + 1)] + [[]])
        self.assertEqual(record["passes"][0]["states"], {"same": 1, "faster": 0, "slower": 0, "unclear": 1,
                                                         "hopeless": 1})
        self.assertEqual(record["passes"][-1]["states"]["slower"], 1)
        self.assertEqual({row["name"]: row["state"] for row in record["verdicts"]},
                         {NAME.format(64): "same", NAME.format(128): "hopeless", NAME.format(256): "slower"})
        self.assertEqual(record["stopped"], "no entry left that more trials may decide")
        self.assertEqual(document["run"]["options"]["studies"], ["matmul"])  # A's options, as --like takes them
        self.assertIn("run --against, pass 1: one more trial of 1 of 3 units", process.stdout)
        with open(os.path.join(out, "summary.md"), encoding="utf-8") as stream:
            self.assertIn("Trials until decided against run", stream.read())

    def test_the_budget_stops_the_passes(self):
        process, out = self.against("budget", "--budget", "0")
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        record = results.load(out)["run"]["against"]
        self.assertEqual((record["passes"], record["stopped"], record["spent_s"]), ([], "the budget was spent", 0))
        self.assertEqual(set(self.counts(out).values()), {3})
        # Each unit takes the stand-in over a second here: a budget of one second allows the 256 entry none of the
        # trials that would decide it, so it is hopeless at once and no extra trial is spent on it.
        process, out = self.against("short", "--budget", "1", env=dict(self.env, GPUBENCH_FAKE_SLEEP="1"))
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        record = results.load(out)["run"]["against"]
        self.assertEqual([found["states"]["hopeless"] for found in record["passes"]], [2])
        self.assertEqual((record["spent_s"], self.counts(out)[256]), (0, 3))

    def test_a_kill_during_the_passes_resumes_to_the_same_passes(self):
        out = os.path.join(self.root, "killed")
        command = ["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", self.machine.build_dir,
                   "--no-reference", "--against", self.earlier, "--noise-model", MODEL, "--out", out]
        own_units = 3 * len(SIZES) + 1  # three trials of each size, the end
        test_resume.stop_after_units(command, self.env, out, own_units + 1, signal.SIGKILL, group=True)
        before = test_resume.read_document(out)
        self.assertGreaterEqual(len(before["run"]["against"]["passes"]), 1)
        process = self.gpubench("run", "--resume", out)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        after = results.load(out)
        self.assertEqual(after["run"]["status"], "complete")
        self.assertEqual(after["run"]["against"]["passes"][:len(before["run"]["against"]["passes"])],
                         before["run"]["against"]["passes"])
        self.assertEqual(self.counts(out), {64: 3, 128: 3, 256: trials_needed()})
        units = test_resume.units_of(after)
        self.assertEqual(len(units), len(set(units)))

    def test_compare_decide_extends_this_machines_run(self):
        out = os.path.join(self.root, "plain")
        process = self.gpubench("run", "--cpu-only", "--no-refine", "--trials", "3", "--sizes",
                                ",".join(map(str, SIZES)), "--noise-model", MODEL, "--out", out)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        compared = os.path.join(self.root, "compared")
        process = subprocess.run(["bash", ENTRY, "compare", "--decide", "--no-build", "--build-dir",
                                  self.machine.build_dir, self.earlier, out, "--out", compared],
                                 capture_output=True, text=True, timeout=300, env=self.env)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertEqual(self.counts(out), {64: 3, 128: 3, 256: trials_needed()})
        self.assertTrue(os.path.exists(os.path.join(compared, "compare.md")))

    def test_a_bad_file_is_refused(self):
        damaged = os.path.join(self.root, "damaged.json")
        with open(damaged, "w", encoding="utf-8") as stream:
            stream.write('{"schema": "gpubench-results", "run": ')
        foreign = os.path.join(self.root, "foreign.json")
        with open(foreign, "w", encoding="utf-8") as stream:
            json.dump({"schema": "something else"}, stream)
        for path, said in ((os.path.join(self.root, "missing"), "cannot read"), (damaged, "damaged or truncated"),
                           (foreign, "not a gpubench results file")):
            process = self.gpubench("run", "--against", path, "--out", os.path.join(self.root, "refused"))
            self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
            self.assertIn("--against", process.stderr)
            self.assertIn(said, process.stderr)
            self.assertNotIn("Traceback", process.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "refused")))
        process = self.gpubench("run", "--budget", "5", "--out", os.path.join(self.root, "refused"))
        self.assertEqual(process.returncode, 2)
        self.assertIn("--budget: only with --against", process.stderr)


@unittest.skipUnless(os.access(test_resume.MATMUL, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_matmul not built")
class BuiltStudyTest(unittest.TestCase):
    """The built matmul study's CPU entries at two sizes, run --against an earlier run of them with a budget of
    five seconds: every extra trial is one a recorded pass asked for, and the passes stop within the budget and
    one unit."""

    def test_extra_trials_are_those_the_passes_asked_for(self):
        with tempfile.TemporaryDirectory() as root:
            env = dict(os.environ, TMPDIR=root)
            flags = ("--no-setup", "--no-build", "--build-dir", test_resume.BUILD_DIR)
            earlier, out = os.path.join(root, "a"), os.path.join(root, "b")
            process = test_resume.gpubench("run", *flags, "--studies", "matmul", "--cpu-only", "--sizes", "64,128",
                                           "--no-refine", "--out", earlier, env=env)
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
            process = test_resume.gpubench("run", *flags, "--against", earlier, "--budget", "5", "--out", out, env=env)
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
            document = results.load(out)
            record = document["run"]["against"]
            asked = {(unit["n"], unit["trial"]) for found in record["passes"] for unit in found["more"]}
            measured = {(unit["n"], unit["trial"]) for unit in document["studies"]["matmul"]["units"]
                        if unit["phase"] == "sweep"}
            own = {(n, trial) for n in (64, 128) for trial in (1, 2)} | {
                (item["n"], 3) for decision in document["studies"]["matmul"].get("third_trial") or []
                for item in decision["third"]}
            self.assertEqual(measured - own, measured & asked)  # every extra trial one a pass asked for
            self.assertTrue(own <= measured)
            self.assertIsNotNone(record["stopped"])
            self.assertEqual(len(record["verdicts"]), len(document["studies"]["matmul"]["entries"]))
            self.assertLess(record["spent_s"], 5 + 30)


if __name__ == "__main__":
    unittest.main()
