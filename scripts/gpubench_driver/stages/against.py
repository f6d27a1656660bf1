"""run --against FILE: after the run's own trials, passes of extra trials over only the units (a study at one size,
in its sweep or a refinement round) that hold an entry whose comparison with FILE (an earlier run, another
machine's or this one's) the sequential rule (lib/sequential.py) has not decided yet, until none has or the
budget is spent. Each extra trial is a unit of the run like any other (a resume keeps it); each pass's decision,
with why, is recorded in run.against.passes and replayed by a resume, as `third_trial` is.
docs/methodology.md, "Trials until decided: run --against"."""
import math
import time

from gpubench_driver.lib import noise_verdicts, resumable, schema, sequential, trial_rule, trials
from gpubench_driver.lib.formatting import md
from gpubench_driver.stages import journal, options as opts, runner

# The default budget of the extra passes, in seconds of measuring: the default suite's own time on an H100 (about
# ten minutes from the command to the report, docs/methodology.md, "The default suite and how long it takes"), so
# that a run --against takes at most about as long again as the run it extends.
DEFAULT_BUDGET_S = 600.0
DECIDED = (noise_verdicts.SAME, noise_verdicts.FASTER, noise_verdicts.SLOWER)
STATES = (*DECIDED, sequential.UNDECIDED, sequential.HOPELESS)
BUDGET_SPENT, ALL_DECIDED, NO_MODEL = "the budget was spent", "no entry left that more trials may decide", "no model"


def load_earlier(path, flag="--against"):
    """The earlier run's document (a results.json or .json.gz, or a folder holding one); a UsageError (exit 2)
    saying why where it is no readable run."""
    try:
        return journal.load(path)
    except schema.ResultsError as error:
        raise opts.UsageError(f"{flag}: {error}") from None


def parse_budget(text):
    """--budget: seconds of extra passes, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise opts.UsageError(f"--budget: '{text}' is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise opts.UsageError(f"--budget: expected 0 or more seconds, got {text}")
    return value


def new_record(options, earlier):
    return {"path": options.against, "run_id": earlier["run"].get("id"), "budget_s": options.budget_s,
            "spent_s": 0.0, "passes": [], "stopped": None}


# --- the passes -----------------------------------------------------------------------------------
def _units(study):
    """{(phase, round, n): [entry names]} of a study's finished sweep and refinement units."""
    rounds = {(found["phase"], found.get("n")): found.get("round") for found in study.record["units"]
              if found.get("phase") in (resumable.SWEEP, resumable.REFINEMENT)}
    units = {}
    for entry in study.record["entries"]:
        phase, n = entry.get("phase"), entry.get("n")
        if (phase, n) in rounds and entry["name"] in study.planned:
            units.setdefault((phase, rounds[(phase, n)], n), []).append(entry["name"])
    return units


def _unit_seconds(study, names):
    """What the unit's last trial took (its entries' wall time): the cost of one more."""
    return sum(((entry.get("trials") or [entry])[-1].get("wall_s") or 0.0)
               for entry in study.record["entries"] if entry["name"] in names)


def _judge(studies, options, record, earlier, model):
    """The decision of the next pass: which units get one more trial, and the states of every entry compared."""
    states = dict.fromkeys(STATES, 0)
    more, judged, verdicts = [], 0, []
    left = max(record["budget_s"] - record["spent_s"], 0.0)
    for study in studies:
        theirs = {entry["name"]: entry for entry in (earlier["studies"].get(study.name) or {}).get("entries", [])}
        ours = {entry["name"]: entry for entry in study.record["entries"]}
        for (phase, round_number, n), names in sorted(_units(study).items(), key=lambda item: str(item[0])):
            count = max(trials.count(ours[name]) for name in names)
            seconds = _unit_seconds(study, names)
            reachable = count + (int(left // seconds) if seconds > 0 else sequential.MOST_TRIALS)
            looks = []
            for name in names:
                if name in theirs:
                    known = sum(1 for item in ours[name].get("trials") or [ours[name]]
                                if (item.get("trial") or 1) <= options.trials)
                    found = sequential.judge(model, (study.name, name), theirs[name], ours[name], known, reachable)
                    if found is not None:
                        looks.append((name, found))
                        states[found.state] += 1
                        verdicts.append({"study": study.name, "name": name, **found.record()})
            if not looks:
                continue
            judged += 1
            undecided = [(name, found) for name, found in looks if found.state == sequential.UNDECIDED]
            if undecided:
                name, found = undecided[0]
                more.append({**resumable.unit(phase, count + 1, n, round_number), "study": study.name, "entry": name,
                             "ratio": found.ratio, "interval": [found.low, found.high]})
    record["verdicts"] = verdicts  # each entry's look at the last pass judged
    return {"pass": len(record["passes"]) + 1, "units": judged, "more": more, "states": states}


def _flags(study, phase, round_number, n):
    if phase == resumable.REFINEMENT:
        impls, modes = resumable.plan_of(study.record["refinement_plans"][round_number - 1])[n]
        return runner.study_flags(study.options, [n], impls, modes)
    return runner.study_flags(study.options, [n])


def extra_passes(studies, options, document, save, earlier=None):
    """The passes of extra trials (runner.Study objects whose own trials are done); run.against records them.
    Raises what a unit raises (runner.Interrupted, runner.RunnerError): what finished is saved."""
    earlier = earlier or load_earlier(options.against)
    record = document["run"].setdefault("against", new_record(options, earlier))
    model, problem = trial_rule.load(options.noise_model)
    if model is None:
        warning = f"run --against: no extra trials: {problem}"
        if warning not in document["warnings"]:
            print(f"WARNING: {warning}", flush=True)
            document["warnings"].append(warning)
        record["stopped"] = NO_MODEL
        return
    by_name = {study.name: study for study in studies}
    for study in studies[:1]:  # the studies share one Progress: its lines' "(trial k of ...)"
        study.progress.trials = f"up to {sequential.MOST_TRIALS}"
    number = 0
    while True:
        number += 1
        if number <= len(record["passes"]):  # decided before a resume: replayed
            decision = record["passes"][number - 1]
        elif record["spent_s"] >= record["budget_s"]:
            record["stopped"] = BUDGET_SPENT
            break
        else:
            decision = _judge(studies, options, record, earlier, model)
            record["passes"].append(decision)
            save()
            _say(decision)
        if not decision["more"]:
            record["stopped"] = ALL_DECIDED
            break
        for unit in decision["more"]:
            study = by_name.get(unit["study"])
            key = resumable.key(resumable.unit(unit["phase"], unit["trial"], unit["n"], unit.get("round")))
            if study is None or key in study.finished:
                continue
            if record["spent_s"] >= record["budget_s"]:
                record["stopped"] = BUDGET_SPENT
                save()
                return
            names = _units(study).get((unit["phase"], unit.get("round"), unit["n"]), [])
            study.progress.total += len(names)
            started = time.monotonic()
            flags = _flags(study, unit["phase"], unit.get("round"), unit["n"])
            study.measure_unit(unit["n"], names, unit["phase"], flags, unit["trial"], unit.get("round"))
            record["spent_s"] += time.monotonic() - started
            save()
    save()


def _say(decision):
    states = ", ".join(f"{count} {state}" for state, count in decision["states"].items() if count)
    print(f"run --against, pass {decision['pass']}: one more trial of {len(decision['more'])} of {decision['units']} "
          f"units compared (entries: {states or 'none shared'})", flush=True)


def summary_lines(run):
    """The summary's line on a run --against's extra passes."""
    record = run.get("against")
    if not isinstance(record, dict):
        return []
    last = (record.get("passes") or [{}])[-1].get("states") or {}
    states = ", ".join(f"{count} {state}" for state, count in last.items() if count)
    return [f"Trials until decided against run {md(record.get('run_id'))} ({md(record.get('path'))}): "
            f"{len(record.get('passes') or [])} passes judged, {record.get('spent_s', 0):.0f} s of a "
            f"{record.get('budget_s', 0):.0f} s budget; {md(record.get('stopped') or 'not finished')}"
            + (f"; at the last pass, entries {states}" if states else "")]
