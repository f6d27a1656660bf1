"""run --resume DIR: finish a stopped run from its folder (results.json's options and finished units,
lib/resumable.py): a flag that contradicts the recorded options is refused (the build's are free), the units
left run in the run's order, an unfinished unit whole again, and run.resumed records the resume."""
import os
import types
from dataclasses import replace

from gpubench_driver.lib import environment, outputs, results, resumable, schema, trial_rule, trials
from gpubench_driver.stages import against, journal, like, options as opts, runner, session

UNORDERED = ("studies", "impls", "modes")  # their order on the command line changes nothing measured
# Flags that start another kind of run: never with --resume; a run recorded with one of ANOTHER_KIND is
# not one run in one folder (a run --like is: it only took its options from another).
OTHER_RUNS = {"like": "--like", "gpus": "--gpus", "repeatability": "--repeatability"}
ANOTHER_KIND = ("gpus", "repeatability")
RECORDED = (*like.RECORDED_OPTIONS, "sizes", "batches")
# Where this machine may not differ from the run's (like.ENVIRONMENT's names): another processor than the kept units'.
SAME_MACHINE = ("CPU", "GPU")


def _optional(valid):
    return lambda value: value is None or valid(value)


_AGAINST = "against and budget_s: expected a path and seconds"
# The run.options a resume takes besides RECORDED: {name: (whether a value is valid, the message if not)}.
RECORDED_CHECKS = {
    "launcher": (_optional(lambda words: isinstance(words, list) and bool(words)
                           and all(isinstance(word, str) for word in words)), "launcher: expected a list of words"),
    "trial_policy": (lambda policy: policy in (trial_rule.ADAPTIVE, trial_rule.FIXED),
                     f"trial_policy: expected {trial_rule.ADAPTIVE} or {trial_rule.FIXED}"),
    "noise_model": (_optional(lambda path: isinstance(path, str)), "noise_model: expected a path"),
    "against": (_optional(lambda path: isinstance(path, str)), _AGAINST),
    "budget_s": (_optional(lambda seconds: schema.has_type(seconds, (int, float)) and seconds >= 0), _AGAINST),
}


def run(args, given, argv):
    """Resume the run in args.resume; given: the command line's RunOptions (commands/run.resolve_run_options),
    for the flags that may change (the build) and those that must not."""
    out_dir = os.path.abspath(args.resume)
    _refuse_what_is_no_run(out_dir)
    if outputs.run_in_progress(out_dir):  # said here in resume's words; the lock below still decides
        raise opts.UsageError(f"--resume: {out_dir} is in use by a gpubench run that is still going (its driver "
                              f"holds the folder's lock): wait for it to end, or stop it, then resume")
    folder = outputs.lock_run_folder(*outputs.check_out_dir(out_dir, "--resume"), what="--resume")
    try:
        return _resume_in(folder.path, args, given, argv)
    finally:
        folder.release()


def extend(folder, earlier, budget_s, build_dir, build, argv):
    """run --resume FOLDER --against EARLIER: this machine's run in FOLDER (complete or not; its folder, or the
    results.json in it) given extra trials against EARLIER until decided (compare --decide); its exit status."""
    if os.path.isfile(folder) and os.path.basename(folder) == results.FILE:
        folder = os.path.dirname(os.path.abspath(folder))
    args = types.SimpleNamespace(resume=folder, trials=None, launcher=None, out=None, budget=budget_s)
    given = opts.RunOptions(run_id=session.default_run_id(), build_dir=build_dir, build=build,
                            against=os.path.abspath(earlier),
                            budget_s=against.DEFAULT_BUDGET_S if budget_s is None else budget_s)
    return run(args, given, argv)


def _refuse_what_is_no_run(out_dir):
    if not os.path.isdir(out_dir):
        raise opts.UsageError(f"--resume: {out_dir} is not a folder: give the folder of the run to resume")
    held = results.file_in(out_dir)
    if held is None:
        raise opts.UsageError(f"--resume: {out_dir} holds no {results.FILE}: it is not the folder of a gpubench run")
    if held.endswith(".gz"):
        raise opts.UsageError(f"--resume: {out_dir} holds {results.COMPRESSED} only: a compressed results file is "
                              f"a kept copy of a run, not a run to resume")


def _load(out_dir):
    """The run's document and its recorded configuration; a file that is no run to resume is a usage error."""
    path = os.path.join(out_dir, results.FILE)
    try:
        document = resumable.checked_run(results.load(path), path)
        chosen, swept = like.configuration(document, RECORDED)
    except schema.ResultsError as error:
        raise opts.UsageError(f"--resume: {error}") from None
    missing = [name for name in like.RECORDED_OPTIONS if name not in chosen]
    if missing:
        raise opts.UsageError(f"--resume: {path} records no {', '.join(missing)} in run.options: not a run "
                              f"this driver can resume")
    return document, chosen, swept


def _recorded(document, path):
    """RECORDED_CHECKS' options as the run recorded them (a file without a trial policy ran its trials fixed)."""
    recorded = {"trial_policy": trial_rule.FIXED, **document["run"]["options"]}
    for name, (valid, message) in RECORDED_CHECKS.items():
        if not valid(recorded.get(name)):
            raise opts.UsageError(f"--resume: {path}: run.options.{message}")
    return {name: recorded.get(name) for name in RECORDED_CHECKS}


def _against(kept, given, budget_given):
    """{against, budget_s}: the run's recorded run --against, else the command line's (--resume DIR --against
    FILE extends the run so); a UsageError where the two contradict."""
    then, budget = kept["against"], kept["budget_s"]
    if then is None:
        return {"against": given.against, "budget_s": given.budget_s}
    if given.against is not None and given.against != then:
        raise opts.UsageError(f"--resume: --against {given.against} contradicts the run, which added trials against "
                              f"{then}: a run is extended against one earlier run (leave --against out, or start a "
                              f"new run)")
    if budget_given and given.budget_s != budget:
        raise opts.UsageError(f"--resume: --budget {given.budget_s:g} contradicts the run's {budget:g} s "
                              f"(leave --budget out)")
    return {"against": then, "budget_s": budget}


def resumed_options(document, chosen, swept, args, given, out_dir):
    """The run's recorded options, with the build's from the command line; a UsageError names a flag that
    contradicts them or that starts another kind of run."""
    recorded = document["run"]["options"]
    for dest, flag in OTHER_RUNS.items():
        if getattr(args, dest, None):
            raise opts.UsageError(f"--resume: not with {flag}: a resumed run goes on as it was started")
        if dest in ANOTHER_KIND and recorded.get(dest):
            raise opts.UsageError(f"--resume: {out_dir} holds a run made by run {flag}: resume takes the folder "
                                  f"of one run")
    try:
        run_id = opts.parse_run_id(str(document["run"]["id"]))
    except opts.UsageError as error:
        raise opts.UsageError(f"--resume: the recorded run id: {error}") from None
    kept = {**chosen, "run_id": run_id, **_recorded(document, out_dir)}
    for dest, name in opts.MEASURED.items():
        if getattr(args, dest, None) in (None, False):
            continue
        wanted, then = getattr(given, name), kept.get(name)
        if name in UNORDERED and wanted is not None and then is not None:
            wanted, then = sorted(wanted), sorted(then)
        if wanted != then:
            raise opts.UsageError(f"--resume: {flag_of(dest)} contradicts the run, which recorded {name} = "
                                  f"{schema.shown(then)}: a resumed run keeps the options it was started with "
                                  f"(leave {flag_of(dest)} out)")
    if args.trials is not None and kept["trial_policy"] == trial_rule.ADAPTIVE:
        raise opts.UsageError("--resume: --trials contradicts the run, which gave each unit a third trial where the "
                              "noise model asked for one: a resumed run keeps the options it was started with "
                              "(leave --trials out)")
    if kept["launcher"] and not args.launcher:
        raise opts.UsageError(f"--resume: the run was started with --launcher {' '.join(kept['launcher'])!r}: give "
                              f"it again (the driver runs no command it reads from a results file)")
    if args.out is not None and os.path.abspath(args.out) != out_dir:
        raise opts.UsageError(f"--resume: --out {args.out} is not the run's folder {out_dir} (leave --out out)")
    kept.update(caps=chosen["caps"] or {}, sizes=chosen.get("sizes"), batches=chosen.get("batches"), out=out_dir,
                study_sizes=swept, **_against(kept, given, args.budget is not None))
    return replace(given, **kept)


def flag_of(dest):
    return "--" + dest.replace("_", "-")


def _check_plans(plans, warnings, document):
    """The studies the build and this machine would run are the run's, at its sizes and batches."""
    names = [plan.name for plan in plans]
    if names != list(document["studies"]):
        reasons = f" ({'; '.join(warnings)})" if warnings else ""
        raise runner.RunnerError(f"cannot resume here: the run measured the studies {', '.join(document['studies'])}, "
                                 f"this build and machine would run {', '.join(names)}{reasons}")
    for plan in plans:
        study = document["studies"][plan.name]
        if (plan.options.sizes, plan.options.batches) != (study.get("sizes"), study.get("batches")):
            raise runner.RunnerError(f"cannot resume here: study {plan.name} would sweep other sizes or batches "
                                     f"than the run did")


def _check_machine(document, here, options):
    """Where this machine differs from the run's: refused where the units left would measure another
    processor (SAME_MACHINE, or a GPU this machine lacks); the rest is recorded."""
    found = like.differences(document, here)
    other = [d for d in found if d["what"] in SAME_MACHINE and (d["what"] != "GPU" or not options.cpu_only)]
    if not options.cpu_only and document["gpu"].get("available") and not here["gpu"].get("available"):
        other.append({"what": "GPU available", "recorded": True, "here": here["gpu"].get("reason")})
    if other:
        raise runner.RunnerError("cannot resume here: " + "; ".join(
            f"the run measured {d['what']} {d['recorded']}, this machine has {d['here']}" for d in other))
    for difference in found:
        print(f"differs from the run's machine: {difference['what']}: {difference['recorded']} there, "
              f"{difference['here']} here", flush=True)
    return found


def _journal_entries_left(document, path):
    """How many of the journal's entries results.json lacks (those of the unit the stop cut short)."""
    count = 0
    for line in journal.read(path):
        study = document["studies"].get(line["study"]) or {"entries": []}
        entry = next((entry for entry in study["entries"] if entry["name"] == line["name"]), None)
        count += entry is None or trials.count(entry) < line["trial"]
    return count


def _resume_in(out_dir, args, given, argv):
    document, chosen, swept = _load(out_dir)
    run = document["run"]
    extending = given.against is not None and run["options"].get("against") is None
    if run["status"] == "complete" and not extending:
        # A kill between the final write's results.json and its summary leaves a complete run undrawn.
        undrawn = ("" if os.path.exists(os.path.join(out_dir, "summary.md"))
                   else f" (its summary is missing: scripts/gpubench report {out_dir} draws it)")
        print(f"run {run['id']} in {out_dir} is complete: nothing to resume{undrawn}", flush=True)
        return 0
    options = resumed_options(document, chosen, swept, args, given, out_dir)
    if extending:  # run --resume DIR --against FILE: recorded so that a resume of this extension goes on with it
        run["options"].update(against=options.against, budget_s=options.budget_s)
    if options.against:
        against.load_earlier(options.against)  # refused before anything is measured
    plans, warnings = session.describe_studies(options)
    _check_plans(plans, warnings, document)
    here = results.new_document({})
    session.capture_environment(here, options, [plan.description for plan in plans])
    kept = sum(len(study.get("units") or []) for study in document["studies"].values())
    journal_path = os.path.join(out_dir, journal.FILE)
    progress = runner.Progress(0)
    progress.measured_again = _journal_entries_left(document, journal_path)
    record = {"at": session.utc_now(), "from": None, "units_kept": kept, "measured_again": 0,
              "command_line": session.command_line(argv),
              "git": environment.capture_git(session.SOURCE_DIR),
              "differences": _check_machine(document, here, options)}
    if record["git"].get("revision") != (run.get("git") or {}).get("revision"):
        document["warnings"].append(f"resumed at revision {record['git'].get('revision')}; the run started at "
                                    f"{(run.get('git') or {}).get('revision')}")
    print(f"resuming run {run['id']} ({run['status']}): {kept} finished units kept", flush=True)
    run.setdefault("resumed", []).append(record)
    run.update(status="running", finished=None)
    document["warnings"] = [w for w in document["warnings"] if not w.startswith(session.STOPPED_EARLY)]
    results_path = os.path.join(out_dir, results.FILE)

    def save():
        record.update({"from": progress.first_unit, "measured_again": progress.measured_again})
        results.write(document, results_path, checked=False)

    save()
    journal.remove(journal_path)  # its entries are the unfinished unit's, which runs again
    status = session.measure(plans, options, document, save, out_dir, progress, resumed=True)
    record.update({"from": progress.first_unit, "measured_again": progress.measured_again})
    if record["from"] is None:
        print("every unit had finished: writing the run's outputs", flush=True)
    return session.write_outputs(document, status, options, out_dir)
