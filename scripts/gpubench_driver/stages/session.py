"""The 'run' command from start to end: build, describe, measure, reference, outputs."""
import datetime
import os
import sys
from dataclasses import asdict, dataclass, replace

from gpubench_driver import studies
from gpubench_driver.lib import environment, outputs, results, resumable, stopping, trial_rule
from gpubench_driver.stages import (against, analyse, build, health, journal, like, options as options_module,
                                    reference, render, runner)

SOURCE_DIR = outputs.SOURCE_DIR
STOPPED_EARLY = "the run stopped early: "  # the warning of a run a RunnerError ended (a resume that finishes drops it)
EXIT_STATUS = {"complete": 0, "partial": 1, "empty": 1, "interrupted": 130}
CPU_ONLY = {"available": False, "reason": "--cpu-only was given"}  # the run's GPU under --cpu-only


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def default_run_id():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")


def default_out_dir(name):
    """Where a command writes without --out: results/runs/, which git ignores."""
    return os.path.join(SOURCE_DIR, "results", "runs", name)


def default_build_dir():
    return os.path.join(SOURCE_DIR, "build")


def prepare_out_dir(options):
    """The output folder's outputs.RunFolder, made and locked before the build (a bad --out or a folder in use
    is said at once) and held to the run's end; it must hold no results file yet."""
    out_dir = os.path.abspath(options.out or default_out_dir(options.run_id))
    if not outputs.run_in_progress(out_dir):  # a run in progress is refused as such when locking
        _refuse_an_ended_run(out_dir)
    folder = outputs.lock_run_folder(*outputs.check_out_dir(out_dir))
    try:
        _refuse_an_ended_run(out_dir)  # a run that ended there as this one started
    except options_module.UsageError:
        folder.release()
        raise
    return folder


def _refuse_an_ended_run(out_dir):
    held = results.file_in(out_dir) if os.path.isdir(out_dir) else None
    if held:
        raise options_module.UsageError(f"--out: {out_dir} already holds a {os.path.basename(held)} "
                                        f"(choose another --out or --run-id)")


def capture_environment(document, options, descriptions):
    machine = environment.capture_machine()
    env_json, env_problem = environment.capture_gpubench_env(build.binary_path(options.build_dir, "gpubench_env"),
                                                             runner.study_environment())
    blas = environment.openblas_info(env_json)
    document["machine"] = machine
    document["software"] = {"python": sys.version.split()[0], "gpubench_env": env_json, "openblas": blas,
                            "nvidia_driver": next((g.get("driver_version") for g in machine["gpus"]), None),
                            "study_environment": runner.study_environment()}
    warnings = [env_problem and f"environment capture: {env_problem}",
                environment.openblas_core_warning(blas["core"], machine["cpu"]["flags"]),
                environment.affinity_warning(env_json)]
    if options.cpu_only:
        document["gpu"] = dict(CPU_ONLY)
    else:
        machine["gpu_processes"] = environment.capture_gpu_processes()
        warnings.append(environment.gpu_processes_warning(machine["gpu_processes"], "when the run started"))
        # Every study binary probes the GPU the same way; the first that found one speaks for the run.
        gpus = [description.get("gpu") or {} for description in descriptions]
        gpu = next((g for g in gpus if g.get("available")), gpus[0])
        document["gpu"] = {"available": bool(gpu.get("available")), "reason": gpu.get("reason")}
    document["warnings"] += [warning for warning in warnings if warning]


def command_line(argv):
    return [os.environ.get("GPUBENCH_ENTRY", "python3 -m gpubench_driver"), *argv]


def new_run_document(options, argv):
    run = {"id": options.run_id, "started": utc_now(), "finished": None, "status": "running",
           "command_line": command_line(argv),
           "options": asdict(options), "git": environment.capture_git(SOURCE_DIR)}
    return results.new_document(run)


@dataclass
class StudyPlan:
    name: str
    binary: str
    description: dict
    options: options_module.RunOptions  # this study's (options_module.for_study)


def describe_studies(options):
    """Build, then describe each study to run (without --studies, one not built or left nothing to run is
    left out with a warning)."""
    if options.build:
        build.configure_and_build(SOURCE_DIR, options.build_dir, extra_args=options.cmake_args)
    built, warnings = [], []
    for name in options.studies or studies.NAMES:
        binary = build.binary_path(options.build_dir, f"gpubench_{name}")
        if os.access(binary, os.X_OK):
            built.append((name, binary))
        elif options.studies:
            raise runner.RunnerError(f"{binary} does not exist: build it first (run without --no-build)")
        else:
            warnings.append(f"study {name} not run: {binary} was not built")
    described = [(name, binary, description) for (name, binary), description
                 in zip(built, runner.describe_all([(binary, ()) for _, binary in built]))]
    if not described:
        names = ", ".join(f"gpubench_{name}" for name in studies.NAMES)
        raise runner.RunnerError(f"no study binary ({names}) was built in {options.build_dir}: "
                                 f"build first (run without --no-build)")
    options_module.check_implementations(
        options, [impl.get("id") for _, _, description in described for impl in description["implementations"]])
    plans = []
    for name, binary, description in described:
        try:
            plans.append(StudyPlan(name, binary, description, options_module.for_study(options, name, description)))
        except options_module.NothingToRun as reason:
            warnings.append(f"study {name} not run: {reason}")
    if not plans:
        raise options_module.UsageError("--impls/--modes/--sizes: no study has anything to run "
                                        f"({'; '.join(warnings)})")
    if options.batches and not any(plan.options.batches for plan in plans):
        warnings.append(f"--batches ignored: no study run has a batch axis "
                        f"({', '.join(studies.BATCH_NAMES)})")
    return plans, warnings


def finish_study(study, document, options):
    """A study's refinement, then (unless a resume kept it) its end unit: other GPU processes, its references."""
    study.refine()
    end = resumable.unit(resumable.END)
    if resumable.key(end) in resumable.finished(study.record):
        return
    study.starts(end)
    if not options.cpu_only:
        others = [process for process in environment.capture_gpu_processes()
                  if process["pid"] not in reference.worker_pids()]
        warning = environment.gpu_processes_warning(others, f"after study {study.name}")
        if warning:
            print(f"WARNING: {warning}", flush=True)
            document["warnings"].append(warning)
    if options.reference and studies.BY_NAME[study.name].references:  # batched_gemm has no reference to run
        document["references"] = {**(document["references"] or {}),
                                  **reference.run_references(study.name, with_gpu=document["gpu"]["available"],
                                                             protocol=study.record.get("measurement"),
                                                             sizes=study.options.sizes,
                                                             batches=study.options.batches)}
    study.record.setdefault("units", []).append(end)
    study.save()


def measure(plans, options, document, save, out_dir, progress=None, resumed=False):
    """Run the studies and their references (a resumed run: the units it has not finished); the run status."""
    progress = progress or runner.Progress(0)
    held_path = os.path.join(out_dir, runner.HELD_CHOICES_FILE)
    if os.path.exists(held_path) and not resumed:
        os.remove(held_path)  # an earlier attempt's choices: this run's first trial autotunes afresh
    scratch_dir = outputs.subfolder(out_dir, outputs.SCRATCH)  # inside: a run killed outright leaves none elsewhere
    noise = adaptive_noise_model(options, document)
    studies = [runner.Study(plan.name, plan.binary, plan.options, document["studies"][plan.name], save, progress,
                            raw_path=os.path.join(out_dir, "gbench", f"{plan.name}.json"), held_path=held_path,
                            journal_path=os.path.join(out_dir, journal.FILE), artifacts_dir=out_dir,
                            launcher=(options.launcher or ()) if plan.description.get("ranks_together") else (),
                            scratch_dir=scratch_dir, noise=noise)
               for plan in plans]
    try:
        for study, description in zip(studies, runner.describe_all([study.sweep_request() for study in studies])):
            study.plan(description)
        # Trials outermost: an entry's trials lie a whole pass over the studies apart, so the GPU's
        # heat and the host's state differ between them as between two runs.
        for trial in range(1, options.trials + 1):
            if trial == trial_rule.EVERY_UNIT + 1 and options.trial_policy == trial_rule.ADAPTIVE:
                for study in studies:  # every study's third-trial units in the progress total before the pass
                    study.third_trial_sizes()
                save()  # the decisions, once (a resume makes the same): a save writes the whole results.json
            for study in studies:
                study.sweep(trial)
                if trial == options.trials:
                    finish_study(study, document, options)
        if options.against:  # after every study's own trials: passes over the units still undecided
            against.extra_passes(studies, options, document, save)
    except (runner.Interrupted, KeyboardInterrupt):
        print("interrupted: writing what finished", flush=True)
        return "interrupted"
    except runner.RunnerError as error:
        # Keep what finished: the entries are saved; the reason goes into the results.
        print(f"gpubench: error: {error}; writing what finished", flush=True)
        document["warnings"].append(f"{STOPPED_EARLY}{error}")
        return "partial"
    finally:
        reference.close_workers()
    if not any(entry["status"] == "ok" for study in studies for entry in study.record["entries"]):
        reason = nothing_measured(studies, plans, options)
        print(f"gpubench: {reason}", flush=True)
        document["warnings"].append(reason)
        return "empty"
    return "partial" if any(study.record["invocations"] for study in studies) else "complete"


def adaptive_noise_model(options, document):
    """The adaptive policy's noise model; None under a fixed policy, or where it cannot be read (said once)."""
    if options.trial_policy != trial_rule.ADAPTIVE:
        return None
    model, problem = trial_rule.load(options.noise_model)
    warning = f"every unit gets a third trial: {problem}"
    if problem and warning not in document["warnings"]:  # a resumed run said it already
        print(f"WARNING: {warning}", flush=True)
        document["warnings"].append(warning)
    return model


def no_entries(plan, options):
    """Why a study listed no entry to run: each needs a GPU the run lacks, else the choice leaves it none."""
    chosen = [impl for impl in plan.description["implementations"]
              if plan.options.impls is None or impl.get("id") in plan.options.impls]
    gpu = CPU_ONLY if options.cpu_only else plan.description.get("gpu") or {}
    if chosen and all(impl.get("device") == "gpu" for impl in chosen) and not gpu.get("available"):
        return f"study {plan.name} has no entries on this machine: each needs a GPU ({gpu.get('reason') or 'none found'})"
    return f"study {plan.name} has no entries at the sizes, implementations and modes chosen"


def nothing_measured(studies, plans, options):
    """Why a run that finished has no ok entry."""
    if not any(study.planned for study in studies):
        return "nothing to run: " + "; ".join(no_entries(plan, options) for plan in plans)
    failures = dict.fromkeys(f"{study.name}: {invocation['process']} {invocation['exit']}"
                             for study in studies for invocation in study.record["invocations"])
    if failures:
        return f"the run measured nothing: {'; '.join(failures)} (each entry's reason is in the summary)"
    return "nothing was measured: every entry was skipped or failed (their reasons are in the summary)"


def like_record(path, document):
    """run --like: which run was repeated and where this machine's environment differs from it."""
    recorded = journal.load(path)
    found = like.differences(recorded, document)
    for difference in found:
        print(f"differs from the recorded run: {difference['what']}: {difference['recorded']} there, "
              f"{difference['here']} here", flush=True)
    return {"path": path, "run_id": recorded["run"].get("id"), "differences": found}


def run(options, argv):
    folder = prepare_out_dir(options)
    try:
        try:
            plans, study_warnings = describe_studies(options)
        except BaseException:
            folder.release(remove_if_empty=True)  # nothing measured: leave no empty folder made for it
            raise
        options = replace(options, studies=[plan.name for plan in plans])  # recorded as run
        results_path = os.path.join(folder.path, "results.json")
        document = new_run_document(options, argv)
        document["warnings"] += study_warnings
        capture_environment(document, options, [plan.description for plan in plans])
        if options.like:
            document["run"]["like"] = like_record(options.like, document)
        for warning in document["warnings"]:
            print(f"WARNING: {warning}", flush=True)
        if not document["gpu"]["available"]:
            print(f"GPU part skipped: {document['gpu']['reason']}", flush=True)
        for plan in plans:
            sizes, batches = plan.options.sizes, plan.options.batches
            document["studies"][plan.name] = results.new_study(plan.description, sizes, batches)
        save = lambda: results.write(document, results_path, checked=False)  # noqa: E731 (after every size)
        save()
        status = measure(plans, options, document, save, folder.path)
        return write_outputs(document, status, options, folder.path)
    finally:
        folder.release()


def write_outputs(document, status, options, out_dir):
    """The run's final write, its exit status; a stop signal waits for its end (cut short, it left results.json
    saying complete beside no summary), then stops the driver with the run's own exit status."""
    results_path = os.path.join(out_dir, "results.json")
    with stopping.DeferredStop("results.json, the summary and the plots are") as final_write:
        document["run"].update(status=status, finished=utc_now())
        analyse.derive_findings(document, options.refine_rounds)
        results.write(document, results_path)
        summary_path = render.write_outputs(document, out_dir)
        print(health.verdict_line(document["findings"]["health"]), flush=True)
        print(f"results: {results_path}\nsummary: {summary_path}", flush=True)
    exit_status = EXIT_STATUS[status]
    if final_write.received:
        raise stopping.StoppedAfterFinalWrite(final_write.received, exit_status)
    return exit_status
