"""run --resume DIR: a run killed outright (SIGKILL to its process group) or interrupted after some units
finished is resumed: the result holds every entry once with all its trials, every unit once, the kept
units' entries unchanged and not measured again, the held library choices kept, and the resume's record
in results.json and the summary; a complete run is left alone; a folder that is no run, a flag that
contradicts the run's options and a run still going are refused with a message and exit status 2.

On stand-in study binaries (test_run_studies.FakeMachine: each invocation logged), and on the built
matmul study's CPU entries where GPUBENCH_BUILD_DIR holds it (real measurements: a re-measured entry
would not keep its values)."""
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import test_run_studies
import test_trials
from support import ENTRY
from test_run_studies import FakeMachine

from gpubench_driver.lib import measurements, outputs, results, trials
from gpubench_driver.stages import like, options as opts, resume
from gpubench_driver.commands import cli, run as run_command

BUILD_DIR = os.environ.get("GPUBENCH_BUILD_DIR", "")
MATMUL = os.path.join(BUILD_DIR, "bench", "gpubench_matmul")
SIZES = (64, 128, 200, 256, 512)


def gpubench(*args, env):
    return subprocess.run(["bash", ENTRY, *args], capture_output=True, text=True, timeout=300,
                          env=dict(env, GPUBENCH_PYTHON=sys.executable))


def units_of(document):
    return [(name, unit.get("phase"), unit.get("trial"), unit.get("n"))
            for name, study in document["studies"].items() for unit in study.get("units") or []]


def read_document(out):
    with open(os.path.join(out, "results.json"), encoding="utf-8") as stream:
        return json.load(stream)


def trial_records(document):
    """{(entry name, trial): what that trial measured} over the run's entries."""
    found = {}
    for study in document["studies"].values():
        for entry in study["entries"]:
            for record in entry.get("trials") or [trials.trial_record(entry, 1)]:
                found[(entry["name"], record["trial"])] = record
    return found


def stop_after_units(command, env, out, units, signum, group, delay=0.0):
    """Start the run, and `delay` seconds after results.json holds `units` finished units, send signum (to
    the process group with group); returns its output."""
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            try:
                if len(units_of(read_document(out))) >= units:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        time.sleep(delay)
        if group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
    finally:
        output, _ = process.communicate(timeout=120)
    return output


class FakeRun:
    """A stand-in matmul run of five sizes in two trials (or of the flags given), each entry 50 ms, its
    invocations logged."""

    def __init__(self, *flags):
        self.machine = FakeMachine(studies=("matmul",))
        root = self.machine.directory.name
        self.out = os.path.join(root, "run")
        self.log = os.path.join(root, "invocations.jsonl")
        self.env = dict(self.machine.env, GPUBENCH_FAKE_PACE="0.05", GPUBENCH_FAKE_LOG=self.log, TMPDIR=root,
                        GPUBENCH_PYTHON=sys.executable)
        self.command = ["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", self.machine.build_dir,
                        "--no-reference", "--trials", "2", "--out", self.out,
                        *(flags or ("--no-refine", "--sizes", ",".join(map(str, SIZES))))]

    def resume(self, *args):
        return gpubench("run", "--no-setup", "--no-build", "--build-dir", self.machine.build_dir, "--resume",
                        self.out, *args, env=self.env)

    def measured(self):
        """[(trial's sizes)] of each benchmark process, in order (the --sizes each got), from the log."""
        with open(self.log, encoding="utf-8") as stream:
            invocations = [json.loads(line) for line in stream]
        return [next(arg for arg in args if arg.startswith("--sizes=")) for args in invocations
                if any(arg.startswith("--benchmark_out=") for arg in args)]

    def forget_log(self):
        os.remove(self.log)


class TrialsBeforeTest(unittest.TestCase):
    """trials.before takes back what an unfinished attempt at a trial added to an entry."""

    def combined(self, *entries):
        entry = None
        for trial, new in enumerate(entries, start=1):
            entry = trials.combine(entry, new, trial)
        return entry

    @staticmethod
    def measured(median_s, status="ok"):
        """An entry with every field a measured one has (the measurement's, null where not measured)."""
        return {**dict.fromkeys((*measurements.FIELDS, "measurement")), **test_trials.measured(median_s, status=status)}

    def test_the_entry_as_its_earlier_trials_left_it(self):
        first, second, third = (self.measured(median_s) for median_s in (1e-3, 1.2e-3, 0.9e-3))
        entry = self.combined(first, second, third)
        self.assertEqual(trials.before(entry, 3), self.combined(first, second))
        self.assertEqual(trials.before(entry, 2), self.combined(first))
        self.assertIsNone(trials.before(entry, 1))
        self.assertEqual(trials.before(self.combined(first, second), 3), self.combined(first, second))

    def test_a_failed_later_trial_is_taken_back_whole(self):
        first, failed = self.measured(1e-3), self.measured(1e-3, status="error")
        entry = self.combined(first, failed)
        self.assertEqual(entry["status"], "error")
        self.assertEqual(trials.before(entry, 2), first)


class ResumeAfterKillTest(unittest.TestCase):
    def test_a_killed_run_resumes_to_every_unit_once(self):
        run = FakeRun()
        self.addCleanup(run.machine.close)
        stop_after_units(run.command, run.env, run.out, 3, signal.SIGKILL, group=True)
        before = read_document(run.out)
        kept = units_of(before)
        self.assertEqual(before["run"]["status"], "running")
        self.assertTrue(3 <= len(kept) < 10, kept)
        with open(os.path.join(run.out, "held_choices.tsv"), "w", encoding="utf-8") as stream:
            stream.write("conv/key\tengine 7\n")  # as the first trial's cuDNN choices would be held
        # A kill between a unit's two writes leaves its benchmarks in gbench/ and not in results.json.
        raw_path = os.path.join(run.out, "gbench", "matmul.json")
        with open(raw_path, encoding="utf-8") as stream:
            raw = json.load(stream)
        with open(raw_path, "w", encoding="utf-8") as stream:
            json.dump({**raw, "benchmarks": raw["benchmarks"] + raw["benchmarks"][-1:]}, stream)
        run.forget_log()

        process = run.resume("--trials", "2", "--no-refine")  # flags that say what the run recorded are taken
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertNotIn("Traceback", process.stdout + process.stderr)
        self.assertIn(f"{len(kept)} finished units kept", process.stdout)
        after = results.load(run.out)
        self.assertEqual(after["run"]["status"], "complete")
        # Every unit once: five sizes in each of two trials, then the study's end.
        self.assertEqual(sorted(units_of(after), key=str), sorted(
            [("matmul", "sweep", trial, n) for trial in (1, 2) for n in SIZES] + [("matmul", "end", None, None)],
            key=str))
        entries = after["studies"]["matmul"]["entries"]
        self.assertEqual(len(entries), 2 * len(SIZES))  # an entry is in a study once (validation refuses twins)
        self.assertEqual({trials.count(entry) for entry in entries}, {2})
        # Only the units left ran again; those kept were measured once, and keep their values.
        left = [f"--sizes={n}" for _, _, trial, n in units_of(after)[len(kept):] if n is not None]
        self.assertEqual(run.measured(), left)
        records = trial_records(after)
        for (name, trial), record in trial_records(before).items():
            self.assertEqual(records[(name, trial)], record, name)
        self.assertEqual(len(after["studies"]["matmul"]["trial_size_orders"]), 2)
        # Google Benchmark's own output holds each entry's two trials, as a run never stopped writes it.
        with open(raw_path, encoding="utf-8") as stream:
            raw = json.load(stream)["benchmarks"]
        self.assertEqual(collections.Counter(benchmark["run_name"] for benchmark in raw),
                         {benchmark["run_name"]: 2 for benchmark in raw})
        self.assertEqual(len(raw), 2 * len(entries))
        # The held choices stay, and the resumed processes read them.
        with open(os.path.join(run.out, "held_choices.tsv"), encoding="utf-8") as stream:
            self.assertEqual(stream.read(), "conv/key\tengine 7\n")
        with open(run.log, encoding="utf-8") as stream:
            self.assertTrue(all(f"--held-choices={run.out}/held_choices.tsv" in json.loads(line)
                                for line in stream if "--benchmark_out=" in line))
        # The resume's record, in results.json and the summary's first lines.
        resumed = after["run"]["resumed"]
        self.assertEqual(len(resumed), 1)
        first = units_of(after)[len(kept)]
        self.assertEqual(resumed[0]["from"], {"study": "matmul", "phase": "sweep", "trial": first[2], "n": first[3]})
        self.assertEqual(resumed[0]["units_kept"], len(kept))
        self.assertEqual(after["run"]["id"], before["run"]["id"])
        self.assertEqual(after["run"]["started"], before["run"]["started"])
        self.assertIn("--resume", resumed[0]["command_line"])
        self.assertFalse(os.path.exists(os.path.join(run.out, "journal.jsonl")))
        with open(os.path.join(run.out, "summary.md"), encoding="utf-8") as stream:
            head = stream.read().splitlines()[:5]
        self.assertTrue(any(line.startswith(f"- Resumed {resumed[0]['at']} from matmul sweep, trial {first[2]}, "
                                            f"n = {first[3]}: {len(kept)} finished units kept") for line in head), head)

        # Resumed again, the complete run is left as it is.
        written = os.stat(os.path.join(run.out, "results.json")).st_mtime_ns
        run.forget_log()
        again = run.resume()
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertIn("is complete: nothing to resume", again.stdout)
        self.assertEqual(os.stat(os.path.join(run.out, "results.json")).st_mtime_ns, written)
        self.assertFalse(os.path.exists(run.log), "a complete run was measured again")

    def test_an_interrupted_unit_runs_again_and_counts_once(self):
        run = FakeRun()
        self.addCleanup(run.machine.close)
        # Entries of 0.5 s, the signal 0.3 s into the next unit: its first entry printed, its second running.
        run.env["GPUBENCH_FAKE_PACE"] = "0.5"
        output = stop_after_units(run.command, run.env, run.out, 6, signal.SIGINT, group=False, delay=0.3)
        self.assertIn("interrupted: writing what finished", output)
        before = read_document(run.out)
        self.assertEqual(before["run"]["status"], "interrupted")
        first = subprocess.Popen(["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir",
                                  run.machine.build_dir, "--resume", run.out], env=run.env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 60
        while not outputs.run_in_progress(run.out) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        # A second resume of the same folder meanwhile meets the first one's lock.
        second = run.resume()
        self.assertEqual(second.returncode, 2, second.stdout + second.stderr)
        self.assertIn("is in use by a gpubench run that is still going", second.stderr)
        output, _ = first.communicate(timeout=120)
        self.assertEqual(first.returncode, 0, output)
        after = results.load(run.out)
        self.assertEqual(after["run"]["status"], "complete")
        self.assertEqual(len(units_of(after)), len(set(units_of(after))))
        self.assertEqual(len(units_of(after)), 2 * len(SIZES) + 1)
        self.assertEqual({trials.count(entry) for entry in after["studies"]["matmul"]["entries"]}, {2})
        self.assertEqual(after["run"]["resumed"][0]["units_kept"], len(units_of(before)))
        # The interrupted unit's first entry, saved by the interrupted run, was taken back and measured again.
        self.assertGreaterEqual(after["run"]["resumed"][0]["measured_again"], 1)

    def test_refinement_rounds_resume_as_planned(self):
        # Stand-in entries at every size from 64 to 512, so that each round's midpoint has entries: the
        # crossover (n = 172) is refined at 192, then 160, then 176.
        with mock.patch.object(test_run_studies, "MATMUL_SIZES", range(64, 513)):
            run = FakeRun("--full", "--sizes", "128,256")
        self.addCleanup(run.machine.close)
        run.env["GPUBENCH_FAKE_PACE"] = "0.2"  # entries of 0.2 s: the kill lands before round 2's second trial ends
        stop_after_units(run.command, run.env, run.out, 7, signal.SIGKILL, group=True)
        before = read_document(run.out)
        plans = before["studies"]["matmul"]["refinement_plans"]
        self.assertEqual([[size["n"] for size in plan] for plan in plans], [[192], [160]])
        run.forget_log()
        process = run.resume()
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        after = results.load(run.out)
        study = after["studies"]["matmul"]
        self.assertEqual(study["refinement_plans"][:2], plans)
        self.assertEqual([[size["n"] for size in plan] for plan in study["refinement_plans"]], [[192], [160], [176]])
        units = [unit for unit in study["units"] if unit["phase"] == "refinement"]
        self.assertEqual(sorted((unit["round"], unit["trial"], unit["n"]) for unit in units),
                         [(round_number, trial, n) for round_number, n in ((1, 192), (2, 160), (3, 176))
                          for trial in (1, 2)])
        self.assertEqual(len(study["units"]), 4 + 6 + 1)
        self.assertEqual(run.measured(), [f"--sizes={unit['n']}" for unit in study["units"][len(before["studies"]
                                          ["matmul"]["units"]):] if "n" in unit])
        self.assertEqual({trials.count(entry) for entry in study["entries"]}, {2})

    def test_a_run_killed_during_its_final_write_is_finished_without_measuring(self):
        run = FakeRun()
        self.addCleanup(run.machine.close)
        self.assertEqual(subprocess.run(run.command, env=run.env, capture_output=True, timeout=120).returncode, 0)
        document = read_document(run.out)
        document["run"].update(status="running", finished=None)
        with open(os.path.join(run.out, "results.json"), "w", encoding="utf-8") as stream:
            json.dump(document, stream)
        os.remove(os.path.join(run.out, "summary.md"))
        run.forget_log()
        process = run.resume()
        self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
        self.assertIn("every unit had finished", process.stdout)
        self.assertEqual(run.measured(), [])
        self.assertTrue(os.path.exists(os.path.join(run.out, "summary.md")))
        after = results.load(run.out)
        self.assertEqual((after["run"]["status"], after["run"]["resumed"][0]["from"]), ("complete", None))


@unittest.skipUnless(os.access(MATMUL, os.X_OK), "GPUBENCH_BUILD_DIR unset or gpubench_matmul not built")
class ResumeBuiltStudyTest(unittest.TestCase):
    """The built matmul study's CPU entries, killed after two of six units: the kept entries keep the values
    they were measured with (a second measurement differs in its samples)."""

    def test_kill_and_resume(self):
        with tempfile.TemporaryDirectory() as root:
            out = os.path.join(root, "run")
            env = dict(os.environ, TMPDIR=root, GPUBENCH_PYTHON=sys.executable)
            command = ["bash", ENTRY, "run", "--no-setup", "--no-build", "--build-dir", BUILD_DIR, "--studies",
                       "matmul", "--cpu-only", "--sizes", "64,128,200", "--trials", "2", "--no-refine", "--out", out]
            stop_after_units(command, env, out, 2, signal.SIGKILL, group=True)
            before = read_document(out)
            self.assertLess(len(units_of(before)), 7)
            process = gpubench("run", "--no-setup", "--no-build", "--build-dir", BUILD_DIR, "--resume", out, env=env)
            self.assertEqual(process.returncode, 0, process.stdout + process.stderr)
            after = results.load(out)
        self.assertEqual(after["run"]["status"], "complete")
        self.assertEqual(len(units_of(after)), 7)
        self.assertEqual(len(units_of(after)), len(set(units_of(after))))
        entries = after["studies"]["matmul"]["entries"]
        self.assertEqual({trials.count(entry) for entry in entries}, {2})
        self.assertEqual(len(entries), len({entry["name"] for entry in entries}))
        records = trial_records(after)
        kept = trial_records(before)
        self.assertTrue(kept)
        for key, record in kept.items():
            self.assertEqual(records[key]["time_s"], record["time_s"], key)
            self.assertEqual(records[key]["measurement"], record["measurement"], key)


class RefusedTest(unittest.TestCase):
    """What --resume refuses, with exit status 2 and nothing written."""

    @classmethod
    def setUpClass(cls):
        cls.fake = FakeRun()
        stop_after_units(cls.fake.command, cls.fake.env, cls.fake.out, 2, signal.SIGKILL, group=True)

    @classmethod
    def tearDownClass(cls):
        cls.fake.machine.close()

    def refused(self, *args, out=None, says):
        before = read_document(self.fake.out)
        listed = set(os.listdir(self.fake.out)) - {outputs.RUN_LOCK}  # the killed run's lock file may go
        process = gpubench("run", "--no-setup", "--no-build", "--build-dir", self.fake.machine.build_dir, "--resume",
                           out or self.fake.out, *args, env=self.fake.env)
        self.assertEqual(process.returncode, 2, process.stdout + process.stderr)
        self.assertIn(says, process.stderr)
        self.assertNotIn("Traceback", process.stderr)
        self.assertEqual(read_document(self.fake.out), before, "a refused resume changed the run")
        self.assertEqual(set(os.listdir(self.fake.out)) - {outputs.RUN_LOCK}, listed)
        return process

    def test_a_folder_that_is_no_run(self):
        with tempfile.TemporaryDirectory() as empty:
            self.refused(out=empty, says="holds no results.json: it is not the folder of a gpubench run")
            self.assertEqual(os.listdir(empty), [])
            missing = os.path.join(empty, "none")
            self.refused(out=missing, says=f"--resume: {missing} is not a folder")
            self.assertFalse(os.path.exists(missing))
            with open(os.path.join(empty, "results.json"), "w", encoding="utf-8") as stream:
                json.dump({"schema": "another-tool"}, stream)
            self.refused(out=empty, says="not a gpubench results file")

    def test_flags_that_contradict_the_run(self):
        for args, flag in ((("--trials", "3"), "--trials"), (("--sizes", "64"), "--sizes"), (("--quick",), "--quick"),
                           (("--no-telemetry",), "--no-telemetry"), (("--run-id", "other"), "--run-id"),
                           (("--studies", "precision"), "--studies")):
            with self.subTest(flag=flag):
                self.refused(*args, says=f"--resume: {flag} contradicts the run, which recorded")
        self.refused("--like", self.fake.out, says="--resume: not with --like")
        self.refused("--out", "/tmp/elsewhere", says="is not the run's folder")

    def test_a_run_still_going_keeps_its_folder(self):
        held = outputs.lock_run_folder(self.fake.out, False)
        try:
            self.refused(says="is in use by a gpubench run that is still going")
        finally:
            os.close(held.handle)  # its lock file is left, as a driver killed outright leaves it

    def options_of(self, document, *flags):
        args = cli.parse(["run", "--resume", self.fake.out, *flags])
        chosen, swept = like.configuration(document, resume.RECORDED)
        return resume.resumed_options(document, chosen, swept, args, run_command.resolve_run_options(args), self.fake.out)

    def test_the_recorded_options_are_taken_and_the_builds_given(self):
        document = read_document(self.fake.out)
        document["run"]["options"]["like"] = "/elsewhere/results.json"  # a run --like is one run: it resumes
        options = self.options_of(document, "--build-dir", "/other/build", "--cmake-arg", "-DX=1")
        recorded = document["run"]["options"]
        self.assertEqual((options.trials, options.sizes, options.refine_rounds, options.run_id),
                         (recorded["trials"], recorded["sizes"], recorded["refine_rounds"], document["run"]["id"]))
        self.assertEqual((options.build_dir, options.cmake_args, options.out), ("/other/build", ["-DX=1"],
                                                                                 self.fake.out))
        self.assertEqual(options.study_sizes, {"matmul": {"sizes": list(SIZES), "batches": None}})
        for kind, value in (("gpus", "all"), ("repeatability", True)):
            with self.subTest(kind=kind), self.assertRaisesRegex(opts.UsageError, f"made by run --{kind}"):
                self.options_of({**document, "run": {**document["run"], "options": {**recorded, kind: value}}})

    def test_another_processor_is_refused_before_measuring(self):
        with tempfile.TemporaryDirectory() as folder:
            document = read_document(self.fake.out)
            document["machine"]["cpu"]["model"] = "another CPU"
            with open(os.path.join(folder, "results.json"), "w", encoding="utf-8") as stream:
                json.dump(document, stream)
            process = gpubench("run", "--no-setup", "--no-build", "--build-dir", self.fake.machine.build_dir,
                               "--resume", folder, env=self.fake.env)
            self.assertEqual(process.returncode, 1, process.stdout + process.stderr)
            self.assertIn("cannot resume here: the run measured CPU another CPU, this machine has", process.stderr)
            self.assertEqual(read_document(folder), document)

    def test_a_run_from_before_runs_recorded_their_units(self):
        with tempfile.TemporaryDirectory() as folder:
            document = read_document(self.fake.out)
            for study in document["studies"].values():
                del study["units"]
            with open(os.path.join(folder, "results.json"), "w", encoding="utf-8") as stream:
                json.dump(document, stream)
            self.refused(out=folder, says="the run was written before runs recorded their finished units")


if __name__ == "__main__":
    unittest.main()
