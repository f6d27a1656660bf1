"""The 'check' command: is each GPU of this machine (and the links between them) healthy? Each headline figure
measured at its plateau (stages/check_measure), judged (stages/check_verdicts), written (stages/check_render).
Several GPUs: a sub-check per GPU at once, then the figures between them in <out>/node/."""
import os
import sys
import time

from gpubench_driver.lib import check_results, environment, expected, noise_model, outputs, results
from gpubench_driver.lib.figures import DatasheetError, datasheet_of, first_gpu, load_datasheets
from gpubench_driver.stages import (build, check_measure, check_render, check_verdicts, gpus, options as opts,
                                    runner, session)

NODE_DIR = "node"
TOGETHER_VARIABLE = "GPUBENCH_CHECK_TOGETHER"  # a sub-check's: how many GPUs are checked at once
DESCRIPTION = ("Check this machine's GPUs: every headline figure measured at a point where it has reached its "
               "plateau (dense GEMM in every format the GPU runs at n = 8192, the CUDA cores' FMA peak, device "
               "memory bandwidth with 1 GiB arrays, pinned copies of 256 MiB each way, kernel launch latency; "
               "with several GPUs each GPU's, every ordered pair's peer copies and NCCL's all-reduce), judged "
               "against the GPU model's expected range at the same point, else the datasheet fraction healthy "
               "GPUs reached there, with the clock, power-limit, PCIe-link, ECC and other-process checks. Writes "
               "check.json (docs/results-schema.md); exit status 0 healthy, 1 a figure or check below, 2 could "
               "not judge (no GPU, a failed build, a binary's error, a figure without any basis).")

# The check reports its own failures (exit 2, could not judge): none reaches cli as exit 1.
ERRORS = ()


def register(subparsers):
    parser = subparsers.add_parser("check", help="health check of this machine's GPUs: each headline figure at its "
                                                 "plateau, judged; exit status 0 healthy, 1 below, 2 not judged",
                                   description=DESCRIPTION)
    parser.add_argument("--gpus", help="the GPUs to check: all (default) or nvidia-smi indices such as 0,1,3")
    parser.add_argument("--out", help="output directory (default: results/runs/check-<UTC time>)")
    parser.add_argument("--build-dir", help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries already built")
    parser.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                        help="an option for CMake's configure (repeatable)")
    parser.add_argument("--ranges", default=expected.EXPECTED, metavar="FILE",
                        help="the expected ranges (default: %(default)s, written by gpubench expected)")
    parser.add_argument("--no-setup", action="store_true", help="do not check or install prerequisites")
    return parser


def options_of(args):
    """The RunOptions the check's stages take (each study's check point replaces sizes, impls and modes)."""
    run_id = "check-" + session.default_run_id()
    return opts.RunOptions(studies=None, sizes=None, batches=None, impls=None, modes=None, caps={}, cpu_only=False,
                           out=args.out or session.default_out_dir(run_id), run_id=run_id, refine_rounds=0,
                           build_dir=os.path.abspath(args.build_dir or session.default_build_dir()),
                           build=not args.no_build and not os.environ.get(gpus.SUB_RUN_VARIABLE), reference=False,
                           quick=False, trials=1, cmake_args=list(args.cmake_arg))


def selected_gpus(selection):
    """A sub-check's own GPU, else the selection of those nvidia-smi lists ([] where it lists none)."""
    listed = gpus.node_gpus()
    own = os.environ.get(gpus.SUB_RUN_VARIABLE)
    if own is not None:
        return [gpu for gpu in listed if str(gpu.index) == own]
    return gpus.select(listed, selection) if listed else []


# What stops a check before its verdict: it cannot judge (exit status 2, not the other commands' 1).
CANNOT_JUDGE = (expected.ExpectedError, DatasheetError, runner.RunnerError, results.ResultsError,
                noise_model.NoiseModelError)


def execute(args, argv):
    selection = gpus.parse_selection(args.gpus) if args.gpus is not None else gpus.ALL
    options = options_of(args)
    folder = session.prepare_out_dir(options)
    try:
        return _check_in(folder.path, options, selection, argv, args.ranges)
    except CANNOT_JUDGE as error:
        print(f"gpubench check: could not judge: {error}", file=sys.stderr)
        return check_verdicts.EXIT_STATUS[check_verdicts.NOT_JUDGED]
    finally:
        folder.release()


def _check_in(out_dir, options, selection, argv, ranges):
    record = {"id": options.run_id, "started": session.utc_now(), "command_line": session.command_line(argv),
              "git": environment.capture_git(session.SOURCE_DIR), "build_dir": options.build_dir}
    models = expected.load(ranges)  # a ranges file that cannot be read stops the check before it measures
    check_verdicts.noise()  # and so does a noise model that cannot be read
    chosen = selected_gpus(selection)
    errors = []
    if not chosen:
        errors.append("no GPU: nvidia-smi lists none on this machine (is the NVIDIA driver installed and a GPU "
                      "attached?), so there is nothing to check")
    elif options.build:
        try:
            build.configure_and_build(session.SOURCE_DIR, options.build_dir, extra_args=options.cmake_args)
        except build.BuildError as error:
            errors.append(f"the build failed: {error}")
    parts, node, measure_s = [], None, None
    if not errors:
        began = time.monotonic()
        parts = (check_gpus(chosen, options, out_dir, ranges) if len(chosen) > 1
                 else [check_one(chosen[0], options, argv, out_dir, models)])
        if len(chosen) > 1:
            check_verdicts.judge_across_gpus(parts)
            node = check_node(chosen, options, argv, os.path.join(out_dir, NODE_DIR), models)
        measure_s = time.monotonic() - began
    found = check_render.document({**record, "finished": session.utc_now(), "measure_s": measure_s}, parts, node,
                                  errors)
    path = os.path.join(out_dir, check_results.FILE)
    check_render.write(found, path)
    print(check_render.console(found, path, measure_s), flush=True)
    return found["exit_status"]


def measure_part(options, argv, out_dir, gpus_seen, model, models):
    """(judged figures of one GPU's check points (gpus_seen 1) or the GPUs together, their document or
    None)."""
    plans, missing = check_measure.plan(options, gpus_seen)
    if not plans:
        return missing, None
    document = check_measure.new_document(options, argv, plans)
    failed = check_measure.measure(plans, document, out_dir)
    collected = check_measure.collect(document)
    figures = collected["figures"]
    for row in figures:
        row.update(check_verdicts.judge_figure(row, model, models))
    for study in {row["study"] for row in figures}:
        if check_measure.is_peers(study):
            check_verdicts.judge_peers([row for row in figures if row["study"] == study])
    return figures + missing + failed + collected["missing"], document


def check_one(gpu, options, argv, out_dir, models):
    """One GPU's part of check.json, measured with that GPU alone visible."""
    os.environ["CUDA_VISIBLE_DEVICES"] = gpu.uuid  # the binaries and nvidia-smi's records: this GPU's
    together = int(os.environ.get(TOGETHER_VARIABLE, "1"))
    model = check_verdicts.model_key(gpu.name, together)
    figures, document = measure_part(options, argv, out_dir, 1, model, models)
    checks = []
    if document is not None:
        record = first_gpu(document)
        entries = [entry for study in document["studies"].values() for entry in study["entries"]]
        # Another process on the GPU when the check started or when it ended.
        seen = (document["machine"].get("gpu_processes") or []) + environment.capture_gpu_processes()
        checks = check_verdicts.gpu_checks(record, datasheet_of(document, load_datasheets()), entries,
                                           list({process["pid"]: process for process in seen}.values()))
    return {"index": gpu.index, "name": gpu.name, "model": model, "uuid": gpu.uuid, "pci_bus_id": gpu.pci_bus_id,
            "results": "results.json" if document is not None else None, "figures": figures, "checks": checks}


def check_gpus(chosen, options, out_dir, ranges):
    """Each GPU's part from its sub-check, all running at once (gpus.sub_run_environment: that GPU alone)."""
    running = []
    for gpu in chosen:
        folder, log = os.path.join(out_dir, f"gpu{gpu.index}"), os.path.join(out_dir, f"gpu{gpu.index}.log")
        print(f"GPU {gpu.index} ({gpu.name}, {gpu.pci_bus_id}): checking, log {log}", flush=True)
        arguments = ["check", "--no-build", "--build-dir", options.build_dir, "--out", folder, "--ranges", ranges]
        environment_of = {**gpus.sub_run_environment(gpu), TOGETHER_VARIABLE: str(len(chosen))}
        running.append((gpu, folder, gpus.start_driver(arguments, log, environment_of)))
    return [sub_check_part(gpu, folder, process.wait()) for gpu, folder, process in running]


def sub_check_part(gpu, folder, returncode):
    """A GPU's part as its sub-check wrote it, else one whose figures say it was not measured."""
    try:
        part = check_results.load(os.path.join(folder, check_results.FILE))["gpus"][0]
    except (check_results.CheckFileError, IndexError) as error:
        why = f"its sub-check exited with status {returncode} and wrote no usable check.json ({error})"
        return {"index": gpu.index, "name": gpu.name, "model": None, "uuid": gpu.uuid, "pci_bus_id": gpu.pci_bus_id,
                "results": None, "figures": [check_measure.not_measured(f"gpu{gpu.index}", why)], "checks": []}
    return {**part, "results": os.path.join(os.path.basename(folder), part["results"]) if part.get("results") else None}


def check_node(chosen, options, argv, out_dir, models):
    """The figures between the GPUs, every chosen GPU visible; their model: "<GPU model> x<GPUs>"."""
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(gpu.uuid for gpu in chosen)
    name = node_model(chosen)
    folder = outputs.subfolder(os.path.dirname(out_dir), os.path.basename(out_dir))
    figures, document = measure_part(options, argv, folder, len(chosen), name, models)
    return {"gpus": [gpu.index for gpu in chosen], "name": name, "model": name,
            "results": os.path.join(NODE_DIR, "results.json") if document is not None else None,
            "figures": figures, "checks": []}


def node_model(chosen):
    names = sorted({gpu.name for gpu in chosen})
    return f"{' + '.join(names)} x{len(chosen)}"

