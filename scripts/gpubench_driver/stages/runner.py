"""Runs a study binary once per size, streaming progress and saving after each."""
import concurrent.futures
import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

from gpubench_driver import studies
from gpubench_driver.lib import (findings, formatting, gbench, measurements, resumable, stopping, telemetry,
                                 trial_rule, trials)
from gpubench_driver.stages import journal

STDERR_TAIL_CHARS = 4000
STOP_GRACE_S = 10
# The library choices (cuDNN's engines) the first trial made, taken by the later ones (bench/harness/held_choices.hpp).
HELD_CHOICES_FILE = "held_choices.tsv"
HELD_CHOICES_FLAG = "--held-choices="
# Where a study binary writes files of its own (the mandelbrot study's count image): the run's folder.
ARTIFACTS_FLAG = "--artifacts-dir="
# A launcher's variables that make a process take itself for one of several ranks (core/launched_rank.hpp): a
# binary the driver starts itself is one process, even inside an allocation (an sbatch script sees SLURM_PROCID).
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK")
DESCRIBE_WORKERS = 8  # binaries described at once: each start initialises CUDA, a second or so each


def ranks_file(artifacts_dir, name):
    """Where rank 0 of a study run by several ranks writes who took part (bench/harness/ranks.hpp)."""
    return os.path.join(artifacts_dir, f"{name}_ranks.json")


class RunnerError(Exception):
    """The study binary cannot be used (does not start, prints no description)."""


class Interrupted(Exception):
    """Ctrl-C during a run; the entries finished so far are kept."""


def binary_environment(launched=False):
    """The study defaults (STUDY_ENVIRONMENT_DEFAULTS) and, unless a launcher starts it, no rank variables."""
    environment = {**os.environ, **study_environment()}
    return environment if launched else {name: value for name, value in environment.items()
                                         if name not in RANK_VARIABLES}


def describe_all(requests, errors_as_text=False):
    """describe() of each (binary, flags) at once, in order (errors_as_text: a failed one's message instead)."""
    def one(request):
        try:
            return describe(*request)
        except RunnerError as error:
            if errors_as_text:
                return str(error)
            raise
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(DESCRIBE_WORKERS, len(requests)))) as pool:
        return list(pool.map(one, requests))


def describe(binary, flags=()):
    """The binary's --describe under these flags (which select its `entries`)."""
    try:
        result = stopping.run([binary, "--describe", *flags], capture_output=True, text=True, timeout=120,
                              env=binary_environment())
    except OSError as error:
        raise RunnerError(f"cannot run {binary}: {error}") from None
    except subprocess.TimeoutExpired:
        raise RunnerError(f"{binary} --describe did not finish in 120 s") from None
    if result.returncode != 0:
        raise RunnerError(f"{binary} --describe failed ({result.returncode}): {result.stderr.strip()[-500:]}")
    try:
        description = json.loads(result.stdout)
    except ValueError:
        raise RunnerError(f"{binary} --describe did not print JSON") from None
    for key in ("implementations", "entries"):  # an older binary lists no entries: build it again
        if not isinstance(description, dict) or not isinstance(description.get(key), list):
            raise RunnerError(f"{binary} --describe printed no '{key}' list")
    return description


def study_flags(options, sizes, impls=None, modes=None):
    """The study's own flags; impls/modes narrow the user's choice for one invocation."""
    flags = ["--sizes=" + ",".join(map(str, sizes))]
    # batches: set only for a study with a batch axis (options.for_study)
    for flag, values in (("--batches=", options.batches), ("--impls=", impls or options.impls),
                         ("--modes=", modes or options.modes)):
        if values:
            flags.append(flag + ",".join(map(str, values)))
    if options.caps:
        flags.append("--caps=" + ",".join(f"{name}={cap}" for name, cap in sorted(options.caps.items())))
    if options.cpu_only:
        flags.append("--cpu-only")
    return flags


class Progress:
    def __init__(self, total):
        self.total = total
        self.done = set()
        self.trial = 1  # of the invocation running now
        self.trials = 1  # the most (a number, or the adaptive policy's "2-3")
        # For run --resume's record: the first unit run, and the entries of unfinished units measured again.
        self.first_unit = None
        self.measured_again = 0
        self.planned = {}  # {entry name: (its study's record, its axis fields)} of every study's plan

    def report(self, result):
        if (self.trial, result.name) in self.done:
            return  # Google Benchmark prints a failure once per repetition
        self.done.add((self.trial, result.name))
        which = f"  (trial {self.trial} of {self.trials})" if self.trials != 1 else ""
        outcome = progress_outcome(result, *self.planned.get(result.name, (None, None)))
        print(f"[{len(self.done)}/{self.total}] {result.name}  {outcome}{which}", flush=True)


def progress_outcome(result, record=None, fields=None):
    """A progress line's outcome: the failure, or the median and the rates its study's record gives."""
    if result.failure is not None:
        return result.failure if result.failure.startswith(gbench.SKIP_PREFIX) else f"ERROR: {result.failure}"
    text = f"median {formatting.seconds(result.median_s)}"
    if record and fields and result.median_s > 0:
        text += "".join(f"  {rate}" for rate in record.rates(fields, result.counters, result.median_s))
    return text


@dataclass
class Invocation:
    entries: list
    returncode: int
    stderr_tail: str
    notes: list
    interrupted: bool = False
    telemetry_samples: list = field(default_factory=list)
    telemetry_note: str = None
    raw: gbench.GbenchOutput = None  # Google Benchmark's own output, as the binary wrote it


# Idle OpenMP threads sleep instead of spinning, which took cores from OpenBLAS's own threads
# (docs/methodology.md); a value the user set wins.
STUDY_ENVIRONMENT_DEFAULTS = {"OMP_WAIT_POLICY": "passive"}


def study_environment():
    return {name: os.environ.get(name, value) for name, value in STUDY_ENVIRONMENT_DEFAULTS.items()}


def invoke(binary, flags, options, progress, plan, counters, on_finished=None, launcher=(), scratch_dir=None):
    """One run of the binary (under `launcher`: rank 0 writes the files) in a scratch folder: its entries and
    telemetry, even when it crashed or was interrupted; `on_finished(result, measurement, wall_s)` gets each
    entry as its console line arrives, before its progress line."""
    with tempfile.TemporaryDirectory(prefix="gpubench.", dir=scratch_dir) as scratch:
        json_path = os.path.join(scratch, "out.json")
        series_path = os.path.join(scratch, "telemetry.json")
        measurements_path = os.path.join(scratch, "measurements.jsonl")
        stderr_path = os.path.join(scratch, "stderr.txt")
        command = [*launcher, binary, *flags,
                   telemetry.OUT_FLAG + series_path if options.telemetry else telemetry.OFF_FLAG,
                   f"--benchmark_out={json_path}", "--benchmark_out_format=json", "--benchmark_color=false",
                   measurements.FLAG + measurements_path]  # the samples the binary's own loop takes
        with open(stderr_path, "w+", encoding="utf-8", errors="replace") as stderr:
            # killed outright, the driver takes the process (or its launcher) with it
            child = stopping.popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True, errors="replace",
                                   env=binary_environment(bool(launcher)))
            tail = measurements.Tail(measurements_path)
            finished = (lambda result, wall: on_finished(result, tail.get(result.name), wall)) if on_finished else None
            interrupted, wall_s = _stream(child, progress, finished)
            stderr.seek(0)
            stderr_tail = stderr.read()[-STDERR_TAIL_CHARS:]
        output = gbench.load_file(json_path)
        samples, note = telemetry.read_series(series_path) if options.telemetry else ([], None)
        measured = measurements.read_file(measurements_path)
    entries = gbench.entries_from_output(output, plan, counters)
    measurements.join(entries, measured)
    for entry in entries:
        entry["wall_s"] = wall_s.get(entry["name"])
    return Invocation(entries, child.returncode, stderr_tail, output.notes, interrupted, samples, note, output)


def _stream(child, progress, on_finished=None):
    """Progress from the console lines; (interrupted, {entry: seconds from the last entry's end to its own})."""
    wall_s = {}
    last = time.monotonic()
    try:
        for line in child.stdout:
            result = gbench.parse_console_line(line)
            if result:
                if result.name not in wall_s:
                    now = time.monotonic()
                    wall_s[result.name] = round(now - last, 3)
                    last = now
                    if on_finished:
                        on_finished(result, wall_s[result.name])
                progress.report(result)
        child.wait()
        return False, wall_s
    except KeyboardInterrupt:
        _stop(child)
        return True, wall_s
    except BaseException:
        _stop(child)  # the journal could not be written (a full disk): no benchmark process left running alone
        raise


def _stop(child):
    if child.poll() is None:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def describe_exit(returncode):
    if returncode < 0:
        try:
            return f"was killed by signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


@dataclass(eq=False)
class Study:
    """Sweeps the sizes, then refines the crossovers, saving after each size; under the adaptive trial
    policy a unit's trials past trial_rule.EVERY_UNIT run where trial_rule.judge (by the noise model) asks."""
    name: str
    binary: str
    options: object  # this study's (options.for_study)
    record: dict  # its part of results.json
    save: object
    progress: Progress
    raw_path: str = None  # where Google Benchmark's own JSON of every invocation is kept
    held_path: str = None  # where the library choices held across the run's processes are
    journal_path: str = None  # where each finished entry goes before its progress line
    artifacts_dir: str = None  # where the binary writes files of its own (the run's folder)
    launcher: tuple = ()  # the command its binary runs under: a study of several ranks under run --launcher
    scratch_dir: str = None  # where each invocation's scratch folder goes
    noise: object = None

    def __post_init__(self):
        self.planned = {}  # {entry name: its axis fields}, as its binary's --describe lists them
        adaptive = self.options.trial_policy == trial_rule.ADAPTIVE
        self.every_unit = trial_rule.EVERY_UNIT if adaptive else self.options.trials  # each unit's trials
        self.trials_said = f"{self.every_unit}-{self.options.trials}" if adaptive else self.options.trials
        # What a resume keeps (lib/resumable.py): the units finished, each refinement round's plan, and
        # Google Benchmark's output and the telemetry series so far.
        self.record.setdefault("units", [])
        self.record.setdefault("refinement_plans", [])
        self.finished = resumable.finished(self.record)
        resumed = bool(self.record["units"])
        self.raw = gbench.GbenchOutput({}, [])
        if resumed and self.raw_path and os.path.exists(self.raw_path):  # the finished units' benchmarks only
            kept = gbench.load_file(self.raw_path)
            self.raw = gbench.GbenchOutput(kept.context, kept.benchmarks[:self.record.get("raw_benchmarks")])
        self._sweep_third = None  # the sweep's sizes that get a third trial, once decided
        self.series = (telemetry.StudySeries.resumed(self.record.get("telemetry")) if resumed
                       else telemetry.StudySeries(time.time()))

    def sweep_request(self):
        """(binary, flags) of the --describe that lists the sweep's entries."""
        return self.binary, study_flags(self.options, self.options.sizes)

    def plan(self, description=None):
        """The sweep's entries (of its --describe: `description`, or run now) into the progress total."""
        self._add_to_plan(gbench.planned_entries(description or describe(*self.sweep_request())))
        self.progress.total += len(self.planned) * self.every_unit
        self.progress.trials = self.trials_said

    def sweep(self, trial):
        """One trial of the sweep: every size once, in this trial's order."""
        sizes = self.options.sizes
        batches = f" and {len(self.options.batches)} batches" if self.options.batches else ""
        which = f", trial {trial} of {self.trials_said}" if self.options.trials > 1 else ""
        order = trials.size_order(sizes, trial, self.options.run_id)
        orders = self.record.setdefault("trial_size_orders", [])
        if len(orders) < trial:  # a resumed run has those of the trials it began
            orders.append(order)
        if trial > self.every_unit:
            chosen = self.third_trial_sizes()
            order = [n for n in order if n in chosen]
            which += f" at {len(order)} of its sizes" if order else ""
        kept = sum(resumable.key(resumable.unit(resumable.SWEEP, trial, n)) in self.finished for n in order)
        if kept < len(order):
            which += f" ({kept} of its sizes kept)" if kept else ""
            print(f"{self.name}: {len(self.planned)} entries at {len(sizes)} sizes{batches}{which}", flush=True)
        for n in order:
            self.measure_unit(n, [name for name, fields in self.planned.items() if fields["n"] == n], "sweep",
                              study_flags(self.options, [n]), trial)

    def third_trial_sizes(self):
        """The sweep's sizes that get trials past those every unit gets (decided once, before that pass)."""
        units = {}
        for name, fields in self.planned.items():
            units.setdefault(fields["n"], []).append(name)
        if self._sweep_third is None:
            self._sweep_third = self._third_trial(resumable.SWEEP, units, save=False)  # the session saves them all
        return self._sweep_third

    def _third_trial(self, phase, units, round_number=None, save=True):
        """The sizes of `units` ({n: entry names}) that get a third trial: as recorded (a resumed run), else
        as trial_rule.judge finds them, recorded in `third_trial`; their entries go into the progress total."""
        decisions = self.record.setdefault("third_trial", [])
        found = resumable.unit(phase, round_number=round_number)
        decision = next((d for d in decisions if resumable.key(d) == resumable.key(found)), None)
        if decision is None:
            by_name = {entry["name"]: entry for entry in self.record["entries"]}
            third = []
            for n, names in sorted(units.items()):
                why = trial_rule.judge(self.name, [by_name[name] for name in names if name in by_name], self.noise)
                if why:
                    third.append({"n": n, **why})
            decision = {**found, "units": len(units), "third": third}
            decisions.append(decision)
            if save:
                self.save()
        sizes = {item["n"] for item in decision["third"]}
        where = f" (refinement round {round_number})" if round_number else ""
        print(f"{self.name}{where}: a third trial at {len(sizes)} of {len(units)} sizes"
              + (f": n = {', '.join(map(str, sorted(sizes)))}" if sizes else " (their two trials agree)"), flush=True)
        self.progress.total += sum(len(units.get(n, ())) for n in sizes)
        return sizes

    def refine(self):
        """Refinement rounds around the crossovers the sweep found (every trial of each round)."""
        for round_number in range(1, self.options.refine_rounds + 1):
            if not self._refine(round_number):
                break

    def _refine(self, round_number):
        plans = self.record["refinement_plans"]
        if len(plans) >= round_number:  # planned before a resume: the entries now hold the round's sizes
            plan = resumable.plan_of(plans[round_number - 1])
        else:
            plan = findings.refinement_plan(self.record["entries"])
            if plan:
                plans.append(resumable.plan_record(plan))
        if not plan:
            return False
        # The caps stay: they keep slow implementations away from sizes where one call takes many seconds.
        print(f"refining crossovers (round {round_number}): n = {', '.join(map(str, plan))}", flush=True)
        runs = []
        for n, (impls, modes) in plan.items():
            flags = study_flags(self.options, [n], impls, modes)
            planned = gbench.planned_entries(describe(self.binary, flags))  # what it would run with these flags
            self._add_to_plan(planned)
            self.progress.total += len(planned) * self.every_unit
            runs.append((n, list(planned), flags))
        for trial in range(1, self.options.trials + 1):
            if trial == self.every_unit + 1:
                chosen = self._third_trial(resumable.REFINEMENT, {n: planned for n, planned, _ in runs}, round_number)
                runs = [run for run in runs if run[0] in chosen]
            for n, planned, flags in runs:
                self.measure_unit(n, planned, "refinement", flags, trial, round_number)
        return True

    def _add_to_plan(self, planned):
        self.planned.update(planned)
        record = studies.BY_NAME.get(self.name)
        self.progress.planned.update({name: (record, fields) for name, fields in planned.items()})

    def measure_unit(self, n, planned, phase, flags, trial, round_number=None):
        """The unit (the entries `planned` of size n, this trial) measured and saved, unless a resume kept it."""
        if not planned:
            return
        unit = resumable.unit(phase, trial, n, round_number)
        if resumable.key(unit) in self.finished:  # kept by a resume
            self.progress.done.update((trial, name) for name in planned)
            return
        self.starts(unit)
        self._forget_unfinished(planned, trial)
        self.progress.trial = trial
        run_files = [HELD_CHOICES_FLAG + self.held_path] if self.held_path else []  # shared by the run's processes
        run_files += [ARTIFACTS_FLAG + self.artifacts_dir] if self.artifacts_dir else []
        on_finished = None
        if self.journal_path:
            on_finished = lambda result, measurement, wall: journal.append(  # noqa: E731
                self.journal_path, journal.record(self.name, trial, phase, result, measurement, wall,
                                                  self.planned.get(result.name)))
        if self.launcher and os.path.exists(ranks_file(self.artifacts_dir, self.name)):
            os.remove(ranks_file(self.artifacts_dir, self.name))  # the last invocation's: this one's ranks write their own
        invocation = invoke(self.binary, flags + run_files, self.options, self.progress, self.planned,
                            gbench.declared_counters(self.record), on_finished, self.launcher, self.scratch_dir)
        if self.launcher:
            self.record["ranks"] = read_ranks(self.artifacts_dir, self.name, self.launcher)
        for entry in invocation.entries:
            entry["phase"] = phase
        self._merge(invocation.entries, trial)
        recovered = self._fold_journal()
        self._keep_raw(invocation.raw)
        if self.options.telemetry:
            self.series.add(invocation.telemetry_samples, invocation.telemetry_note)
            self.record["telemetry"] = self.series.record()
        else:
            self.record["telemetry"] = {"note": "turned off (run --no-telemetry)"}
        failed = invocation.returncode != 0 and not invocation.interrupted
        if failed:
            self._record_failure(n, invocation, planned, phase, trial, recovered)
        if not invocation.interrupted:  # a failed process's unit is finished too: its failure is recorded
            self.record["units"].append(unit)
            self.record["raw_benchmarks"] = len(self.raw.benchmarks)
        self.save()
        if self.journal_path:
            journal.remove(self.journal_path)  # its entries are in results.json now
        if invocation.interrupted:
            raise Interrupted()

    def starts(self, unit):
        """Notes the first unit a run (or a resume) measures, for the resume's record."""
        if self.progress.first_unit is None:
            self.progress.first_unit = {"study": self.name, **unit}

    def _forget_unfinished(self, planned, trial):
        """Takes back what an interrupted attempt at the unit saved, so that its trial counts once."""
        by_name = {entry["name"]: entry for entry in self.record["entries"]}
        for name in planned:
            if name in by_name and trials.count(by_name[name]) >= trial:
                self.progress.measured_again += 1
                by_name[name] = trials.before(by_name[name], trial)
        self.record["entries"] = sorted((entry for entry in by_name.values() if entry is not None),
                                        key=gbench.entry_order)

    def _fold_journal(self):
        """The names of the journal's entries, folded in where the process's output lacks them (a crash)."""
        if not self.journal_path:
            return set()
        lines = [line for line in journal.read(self.journal_path) if line["study"] == self.name]
        journal.fold({"studies": {self.name: self.record}}, lines)
        return {line["name"] for line in lines}

    def _keep_raw(self, output):
        """Google Benchmark's JSON of the study so far, in its own format (for its tools/compare.py)."""
        if self.raw_path is None or output is None:
            return
        self.raw = gbench.GbenchOutput(self.raw.context or output.context, self.raw.benchmarks + output.benchmarks)
        gbench.write_file({"context": self.raw.context, "benchmarks": self.raw.benchmarks}, self.raw_path)

    def _merge(self, new_entries, trial=1):
        by_name = {entry["name"]: entry for entry in self.record["entries"]}
        for entry in new_entries:
            by_name[entry["name"]] = trials.combine(by_name.get(entry["name"]) if trial > 1 else None, entry, trial)
        self.record["entries"] = sorted(by_name.values(), key=gbench.entry_order)

    def _record_failure(self, n, invocation, planned, phase, trial, recovered):
        finished = {entry["name"] for entry in invocation.entries} | recovered
        missing = [name for name in planned if name not in finished]
        process, how = "the benchmark process", describe_exit(invocation.returncode)
        # Rank 0 writes the ranks' record before any entry: without it and without an entry, the status
        # is the launcher's own (a bad command, no allocation), not a study binary's.
        if self.launcher and not finished and self.record.get("ranks") is None:
            process, how = f"the launcher ({shlex.join(self.launcher)})", f"{how} before any rank reported"
        print(f"{self.name} n={n}: {process} {how}; {len(missing)} entries not finished", flush=True)
        self.record["invocations"].append({
            "sizes": [n], "phase": phase, "returncode": invocation.returncode, "exit": how, "process": process,
            "stderr_tail": invocation.stderr_tail, "notes": invocation.notes, "unfinished": missing, "trial": trial})
        unfinished = [gbench.blank_entry(name, self.planned.get(name), gbench.declared_counters(self.record))
                      for name in missing]
        for entry in unfinished:
            entry.update(status="error", phase=phase, message=f"not finished: {process} {how}")
        self._merge(unfinished, trial)


def read_ranks(artifacts_dir, name, launcher):
    """The ranks' record rank 0 wrote (each rank's host, CPU and GPU) with the launcher's command, or None."""
    try:
        with open(ranks_file(artifacts_dir, name), encoding="utf-8") as stream:
            found = json.load(stream)
    except (OSError, ValueError):
        return None
    return {**found, "command": list(launcher)} if isinstance(found, dict) else None

