"""The 'run' command from start to end: build, describe, measure, reference, outputs."""
import datetime
import os
import sys

from gpubench_driver import build, environment, options as options_module, reference, report, results, runner

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def default_run_id():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")


def default_build_dir():
    return os.path.join(SOURCE_DIR, "build")


def prepare_out_dir(options):
    out_dir = os.path.abspath(options.out or os.path.join(SOURCE_DIR, "results", options.run_id))
    if os.path.exists(os.path.join(out_dir, "results.json")):
        raise options_module.UsageError(f"--out: {out_dir} already holds a results.json "
                                        f"(choose another --out or --run-id)")
    os.makedirs(out_dir, exist_ok=True)
    return out_dir


def capture_environment(document, options, description):
    machine = environment.capture_machine()
    env_json, env_problem = environment.capture_gpubench_env(build.binary_path(options.build_dir, "gpubench_env"))
    blas = environment.openblas_info(env_json)
    document["machine"] = machine
    document["software"] = {"python": sys.version.split()[0], "gpubench_env": env_json, "openblas": blas,
                            "nvidia_driver": next((g.get("driver_version") for g in machine["gpus"]), None)}
    if env_problem:
        document["warnings"].append(f"environment capture: {env_problem}")
    blas_warning = environment.openblas_core_warning(blas["core"], machine["cpu"]["flags"])
    if blas_warning:
        document["warnings"].append(blas_warning)
    if options.cpu_only:
        document["gpu"] = {"available": False, "reason": "--cpu-only was given"}
    else:
        gpu = description.get("gpu") or {}
        document["gpu"] = {"available": bool(gpu.get("available")), "reason": gpu.get("reason")}


def new_run_document(options, argv):
    run = {"id": options.run_id, "started": utc_now(), "finished": None, "status": "running",
           "command_line": [os.environ.get("GPUBENCH_ENTRY", "python3 -m gpubench_driver"), *argv],
           "options": options.as_dict(), "git": environment.capture_git(SOURCE_DIR)}
    return results.new_document(run)


def describe_study(options):
    if options.build:
        build.configure_and_build(SOURCE_DIR, options.build_dir)
    binary = build.binary_path(options.build_dir, "gpubench_matmul")
    if not os.access(binary, os.X_OK):
        raise runner.RunnerError(f"{binary} does not exist: build it first (run without --no-build)")
    description = runner.describe(binary)
    options_module.check_implementations(options, [impl.get("id") for impl in description["implementations"]])
    return binary, description


def measure(binary, options, document, sizes, save):
    """Run the study and the references; returns the final run status."""
    study = document["studies"]["matmul"]
    try:
        runner.MatmulStudy(binary, options, study, save).run(sizes)
        if options.reference:
            document["references"] = reference.run_references(with_gpu=document["gpu"]["available"])
    except (runner.Interrupted, KeyboardInterrupt):
        print("interrupted: writing what finished", flush=True)
        return "interrupted"
    except runner.RunnerError as error:
        # Keep what finished: the entries are saved; the reason goes into the results.
        print(f"gpubench: error: {error}; writing what finished", flush=True)
        document["warnings"].append(f"the run stopped early: {error}")
        return "partial"
    return "partial" if study["invocations"] else "complete"


def run(options, argv):
    binary, description = describe_study(options)
    out_dir = prepare_out_dir(options)
    results_path = os.path.join(out_dir, "results.json")
    document = new_run_document(options, argv)
    capture_environment(document, options, description)
    for warning in document["warnings"]:
        print(f"WARNING: {warning}", flush=True)
    if not document["gpu"]["available"]:
        print(f"GPU part skipped: {document['gpu']['reason']}", flush=True)
    document["studies"]["matmul"] = results.new_study(description)
    save = lambda: results.write(document, results_path)  # noqa: E731 (called after every size)
    save()
    status = measure(binary, options, document, options.sizes or description.get("default_sizes") or [], save)
    document["run"].update(status=status, finished=utc_now())
    report.derive_findings(document, options.refine_rounds)
    save()
    summary_path = report.write_outputs(document, out_dir)
    print(f"results: {results_path}\nsummary: {summary_path}", flush=True)
    return {"complete": 0, "partial": 1, "interrupted": 130}[status]
