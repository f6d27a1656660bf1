"""The default trial policy (lib/trial_rule.py): two trials for every unit, a third where the two disagree
beyond the noise model's width between the trials of one run, an entry has no width in the model, or it
failed in one trial; every unit gets the third when the model cannot be read. The rule alone on made-up
trial medians; the run on stand-in study binaries (test_run_studies.FakeMachine: the same times in every
trial) and on the built matmul study's CPU entries; a run killed before or during its third pass resumes
to the same third pass."""
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from scipy import stats as distributions

import test_like
import test_resume
import test_run_studies
from support import ENTRY
from test_run_studies import FakeMachine

from gpubench_driver.commands import cli, run as run_command
from gpubench_driver.lib import noise_model, results, resumable, schema, trial_rule, trials

SD = 0.01  # the made-up model's sigma_w: one trial's log median
STUDY = "matmul"


def model(kinds=("cpu-long",), sd=SD, entries=None):
    """A noise model whose kinds' within-run sd is `sd` for every entry (an infinite prior df)."""
    return noise_model.Model({kind: noise_model.KindModel(sd, math.inf, 0.0, 0.0) for kind in kinds},
                             entries or {}, {})


def entry(name, *medians, statuses=None, protocol="cpu"):
    """An entry of results.json as trials.combine leaves it after its trials of these medians."""
    statuses = statuses or ["ok"] * len(medians)
    combined = None
    for trial, (median, status) in enumerate(zip(medians, statuses), start=1):
        measured = {"name": name, "status": status, "protocol": protocol, "flop": None,
                    "time_s": {"median": median} if status == "ok" else None, "message": None}
        combined = trials.combine(combined, measured, trial)
    return combined


def bound(count):
    """The largest |log ratio| of two trials the rule allows each of `count` entries of a unit."""
    return distributions.norm.isf(trial_rule.FAMILY_LEVEL / 2 / count) * math.sqrt(2) * SD


class JudgeTest(unittest.TestCase):
    def test_trials_that_agree_need_no_third(self):
        unit = [entry(f"e{index}", 1e-3, 1e-3 * (1 + 0.5 * SD)) for index in range(5)]
        self.assertIsNone(trial_rule.judge(STUDY, unit, model()))

    def test_an_entry_ten_sd_apart_needs_a_third(self):
        apart = math.exp(10 * math.sqrt(2) * SD)
        unit = [entry("steady", 1e-3, 1e-3), entry("apart", 1e-3, 1e-3 * apart)]
        why = trial_rule.judge(STUDY, unit, model())
        self.assertEqual(why["entry"], "apart")
        self.assertAlmostEqual(why["ratio"], apart)
        self.assertAlmostEqual(math.log(why["allowed"]), bound(2))

    def test_the_level_is_the_units_not_each_entrys(self):
        # Each of 50 entries just under the unit's bound: no third trial, though one alone that far apart would get one.
        near = math.exp(0.95 * bound(50))
        unit = [entry(f"e{index}", 1e-3, 1e-3 * near) for index in range(50)]
        self.assertIsNone(trial_rule.judge(STUDY, unit, model()))
        self.assertIsNotNone(trial_rule.judge(STUDY, unit[:1], model()))

    def test_the_entrys_own_a_a_history_sets_its_width(self):
        # A prior of df 1, three times wider than the entry's A/A history of df 9: the entry's width is near its own.
        narrow = noise_model.Model({"cpu-long": noise_model.KindModel(3 * SD, 1.0, 0.0, 0.0)},
                                   {(STUDY, "known"): (SD, 9.0)}, {})
        ratio = math.exp(5 * math.sqrt(2) * SD)
        self.assertIsNotNone(trial_rule.judge(STUDY, [entry("known", 1e-3, 1e-3 * ratio)], narrow))
        self.assertIsNone(trial_rule.judge(STUDY, [entry("unknown", 1e-3, 1e-3 * ratio)], narrow))

    def test_an_entry_without_a_width_needs_a_third(self):
        unit = [entry("steady", 1e-3, 1e-3), entry("short", 1e-6, 1e-6)]  # cpu-short: not in the model
        self.assertEqual(trial_rule.judge(STUDY, unit, model())["entry"], "short")
        self.assertEqual(trial_rule.judge(STUDY, [entry("old", 1e-3, 1e-3, protocol=None)], model())["entry"], "old")

    def test_no_model_gives_every_unit_a_third(self):
        self.assertEqual(trial_rule.judge(STUDY, [entry("steady", 1e-3, 1e-3)], None)["reason"], trial_rule.NO_MODEL)

    def test_a_failure_in_one_trial_needs_a_third_and_in_both_none(self):
        flaky = entry("flaky", 1e-3, 1e-3, statuses=["ok", "error"])
        self.assertEqual(trial_rule.judge(STUDY, [entry("steady", 1e-3, 1e-3), flaky], model())["entry"], "flaky")
        broken = entry("broken", 1e-3, 1e-3, statuses=["error", "error"])
        skipped = {**entry("capped", 1e-3), "status": "skipped", "time_s": None}
        self.assertIsNone(trial_rule.judge(STUDY, [entry("steady", 1e-3, 1e-3), broken, skipped], model()))

    def test_an_unreadable_model_is_said(self):
        with tempfile.TemporaryDirectory() as root:
            found, problem = trial_rule.load(os.path.join(root, "missing.json"))
        self.assertIsNone(found)
        self.assertIn("cannot read the noise model", problem)
        self.assertIsNotNone(trial_rule.load()[0])  # the committed model


class RecordTest(unittest.TestCase):
    def test_the_summary_counts_the_units_given_a_third(self):
        document = {"run": {"options": {"trial_policy": "adaptive"}}, "studies": {
            "a": {"third_trial": [{"phase": "sweep", "units": 4, "third": [{"n": 64}]},
                                  {"phase": "refinement", "round": 1, "units": 2, "third": []}]},
            "b": {"third_trial": [{"phase": "sweep", "units": 3, "third": [{"n": 1}, {"n": 2}]}]}}}
        self.assertIn("a third for 3 of 9 units", trial_rule.summary_lines(document)[0])
        document["run"]["options"]["trial_policy"] = "fixed"
        self.assertEqual(trial_rule.summary_lines(document), [])

    def test_a_damaged_decision_is_refused_on_resume(self):
        for damaged in ([{"phase": "end", "units": 1, "third": []}], [{"phase": "sweep", "third": []}],
                        [{"phase": "sweep", "units": 1, "third": [{"n": 0}]}], {"phase": "sweep"}):
            with self.assertRaises(schema.ResultsError, msg=damaged):
                resumable.check_study({"units": [], "third_trial": damaged}, "studies.matmul")


class PolicyTest(unittest.TestCase):
    """The trial policy the command line chooses, and run --like's from the recorded run."""

    @staticmethod
    def options(*flags):
        args = cli.build_parser().parse_args(["run", *flags])
        options = run_command.resolve_run_options(args)
        return run_command.resolve_like(args, options) if args.like else options

    def test_the_command_lines_policy(self):
        chosen = {flags: (self.options(*flags).trials, self.options(*flags).trial_policy)
                  for flags in ((), ("--trials", "3"), ("--trials", "2"), ("--quick",))}
        self.assertEqual(chosen, {(): (3, "adaptive"), ("--trials", "3"): (3, "fixed"), ("--trials", "2"): (2, "fixed"),
                                  ("--quick",): (1, "fixed")})

    def test_like_repeats_the_recorded_policy(self):
        document = test_like.recorded_document()
        base = {name: value for name, value in document["run"]["options"].items() if name != "trial_policy"}
        with tempfile.TemporaryDirectory() as root:
            path = os.path.join(root, "recorded.json")
            for recorded, flags, expected in (({"trials": 3, "trial_policy": "adaptive"}, (), (3, "adaptive")),
                                              ({"trials": 3}, (), (3, "fixed")),  # a file from before the policy
                                              ({"trials": 3, "trial_policy": "adaptive"}, ("--trials", "3"),
                                               (3, "fixed"))):
                document["run"]["options"] = {**base, **recorded}
                with open(path, "w", encoding="utf-8") as stream:
                    json.dump(document, stream)
                options = self.options("--like", path, *flags)
                self.assertEqual((options.trials, options.trial_policy), expected, (recorded, flags))


def write_model(path, kinds):
    """A noise model file of these kinds {kind: within-run sd}."""
    document = {"schema": noise_model.SCHEMA, "schema_version": noise_model.SCHEMA_VERSION, "runs": [{"id": "made-up"}],
                "entries": [], "kinds": {kind: {"within": {"prior_sd": sd, "prior_df": None},
                                                "between": {"floor_sd": 0.0, "ratio": 0.0}} for kind, sd in kinds.items()}}
    with open(path, "w", encoding="utf-8") as stream:
        json.dump(document, stream)
    return path


def trial_counts(document):
    return {(entry["name"], trials.count(entry)) for entry in document["studies"]["matmul"]["entries"]}


class FakeRunTest(unittest.TestCase):
    """Default runs of the stand-in matmul at two sizes (its entries measure the same in every trial)."""

    def setUp(self):
        self.machine = FakeMachine(studies=("matmul",))
        self.addCleanup(self.machine.close)
        self.root = self.machine.directory.name
        self.env = dict(self.machine.env, TMPDIR=self.root, GPUBENCH_PYTHON=sys.executable)

    def run_it(self, name, *flags):
        out = os.path.join(self.root, name)
        process = subprocess.run(["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", self.machine.build_dir,
                                  "--no-reference", "--no-refine", "--sizes", "64,256", "--out", out, *flags],
                                 capture_output=True, text=True, timeout=300, env=self.env)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        return process.stdout, results.load(out)

    def test_units_whose_trials_agree_get_two(self):
        output, document = self.run_it("agree")
        self.assertEqual({count for _, count in trial_counts(document)}, {2})
        self.assertEqual(document["studies"]["matmul"]["third_trial"], [{"phase": "sweep", "units": 2, "third": []}])
        self.assertEqual((document["run"]["options"]["trials"], document["run"]["options"]["trial_policy"]),
                         (3, "adaptive"))
        self.assertIn("[8/8] matmul/", output)
        self.assertIn("(trial 2 of 2-3)", output)
        self.assertIn("matmul: a third trial at 0 of 2 sizes", output)

    def test_units_the_model_cannot_judge_get_a_third(self):
        model_path = write_model(os.path.join(self.root, "gpu_only.json"), {"throughput-long": SD})
        output, document = self.run_it("no_width", "--noise-model", model_path)
        self.assertEqual({count for _, count in trial_counts(document)}, {3})
        decision = document["studies"]["matmul"]["third_trial"]
        self.assertEqual([(item["n"], item["reason"]) for item in decision[0]["third"]],
                         [(64, "the noise model has no width for its kind"),
                          (256, "the noise model has no width for its kind")])
        self.assertIn("[12/12] matmul/", output)
        self.assertEqual(document["run"]["options"]["noise_model"], model_path)

    def test_an_unreadable_model_gives_every_unit_a_third_and_says_so_once(self):
        output, document = self.run_it("unreadable", "--noise-model", os.path.join(self.root, "missing.json"))
        self.assertEqual({count for _, count in trial_counts(document)}, {3})
        said = [warning for warning in document["warnings"] if warning.startswith("every unit gets a third trial")]
        self.assertEqual(len(said), 1, document["warnings"])
        self.assertEqual(output.count("WARNING: every unit gets a third trial"), 1)

    def test_trials_given_are_run_for_every_unit(self):
        _, document = self.run_it("fixed", "--trials", "3")
        self.assertEqual({count for _, count in trial_counts(document)}, {3})
        self.assertNotIn("third_trial", document["studies"]["matmul"])
        self.assertEqual(document["run"]["options"]["trial_policy"], "fixed")


class ResumeThirdPassTest(unittest.TestCase):
    """A default run whose every unit gets a third trial (a model without the entries' kind), killed before
    its third pass is decided and during it, resumes to the same third pass, every unit once."""

    def killed_and_resumed(self, units):
        run = test_resume.FakeRun()
        self.addCleanup(run.machine.close)
        model_path = write_model(os.path.join(run.machine.directory.name, "gpu_only.json"), {"throughput-long": SD})
        run.command = [word for word in run.command if word not in ("--trials", "2")] + ["--noise-model", model_path]
        test_resume.stop_after_units(run.command, run.env, run.out, units, signal.SIGKILL, group=True)
        before = test_resume.read_document(run.out)
        self.assertLess(len(test_resume.units_of(before)), 3 * len(test_resume.SIZES) + 1)  # killed before its end
        process = run.resume()
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        after = results.load(run.out)
        self.assertEqual(after["run"]["status"], "complete")
        study = after["studies"]["matmul"]
        self.assertEqual(sorted(test_resume.units_of(after), key=str), sorted(
            [("matmul", "sweep", trial, n) for trial in (1, 2, 3) for n in test_resume.SIZES]
            + [("matmul", "end", None, None)], key=str))
        self.assertEqual(len(study["third_trial"]), 1)
        self.assertEqual([item["n"] for item in study["third_trial"][0]["third"]], sorted(test_resume.SIZES))
        self.assertEqual({trials.count(entry) for entry in study["entries"]}, {3})
        return before, after

    def test_killed_before_the_third_pass(self):
        before, _ = self.killed_and_resumed(3)
        self.assertNotIn("third_trial", before["studies"]["matmul"])

    def test_killed_during_the_third_pass(self):
        before, after = self.killed_and_resumed(2 * len(test_resume.SIZES) + 1)
        self.assertEqual(before["studies"]["matmul"]["third_trial"], after["studies"]["matmul"]["third_trial"])

    def test_refinement_rounds_decide_their_own_third_trial(self):
        with mock.patch.object(test_run_studies, "MATMUL_SIZES", range(64, 513)):
            run = test_resume.FakeRun("--full", "--sizes", "128,256")
        self.addCleanup(run.machine.close)
        model_path = write_model(os.path.join(run.machine.directory.name, "gpu_only.json"), {"throughput-long": SD})
        run.command = [word for word in run.command if word not in ("--trials", "2")] + ["--noise-model", model_path]
        run.env["GPUBENCH_FAKE_PACE"] = "0"
        process = subprocess.run(run.command, env=run.env, capture_output=True, text=True, timeout=300)
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        study = results.load(run.out)["studies"]["matmul"]
        self.assertEqual([(d["phase"], d.get("round"), [item["n"] for item in d["third"]]) for d in study["third_trial"]],
                         [("sweep", None, [128, 256]), ("refinement", 1, [192]), ("refinement", 2, [160]),
                          ("refinement", 3, [176])])
        self.assertEqual(sorted((unit["round"], unit["trial"]) for unit in study["units"] if unit["phase"] == "refinement"),
                         [(round_number, trial) for round_number in (1, 2, 3) for trial in (1, 2, 3)])

    def test_trials_given_on_resume_are_refused(self):
        run = test_resume.FakeRun()
        self.addCleanup(run.machine.close)
        run.command = [word for word in run.command if word not in ("--trials", "2")]
        test_resume.stop_after_units(run.command, run.env, run.out, 1, signal.SIGKILL, group=True)
        process = run.resume("--trials", "3")
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertIn("--trials contradicts the run", process.stderr)


@unittest.skipUnless(os.access(test_resume.MATMUL, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_matmul not built")
class BuiltStudyTest(unittest.TestCase):
    """The built matmul study's CPU entries at one size: a default run under a model wide enough that its
    trials agree runs two; --trials 3 runs three."""

    def run_it(self, *flags):
        with tempfile.TemporaryDirectory() as root:
            out = os.path.join(root, "run")
            wide = write_model(os.path.join(root, "wide.json"), {"cpu-long": 1.0, "cpu-short": 1.0})
            process = test_resume.gpubench(
                "run", "--no-setup", "--no-build", "--build-dir", test_resume.BUILD_DIR, "--studies", "matmul",
                "--cpu-only", "--sizes", "64", "--no-refine", "--noise-model", wide, "--out", out, *flags,
                env=dict(os.environ, TMPDIR=root))
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
            return results.load(out)

    def test_two_trials_where_they_agree_and_three_when_asked(self):
        adaptive = self.run_it()
        self.assertEqual({count for _, count in trial_counts(adaptive)}, {2})
        self.assertEqual(adaptive["studies"]["matmul"]["third_trial"], [{"phase": "sweep", "units": 1, "third": []}])
        self.assertEqual({count for _, count in trial_counts(self.run_it("--trials", "3"))}, {3})


if __name__ == "__main__":
    unittest.main()
