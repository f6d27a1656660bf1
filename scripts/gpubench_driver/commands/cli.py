"""Command line of the driver: run, report, compare, rank, expected, digest, noise-floor, noise-model, build."""
import argparse
import os
import signal
import sys
from dataclasses import replace

from gpubench_driver import studies
from gpubench_driver.lib import aa_noise_floor, figures, outputs, results, stopping, verdicts
from gpubench_driver.stages import build, gpus, like, options as opts, prices, runner, session
from gpubench_driver.commands import compare, digest, expected, noise_model, rank, repeatability, report

DESCRIPTION = "gpubench: build, run and report the CPU-vs-GPU benchmark studies."


def _run_parser(subparsers):
    parser = subparsers.add_parser("run", help="build, run the studies, write results.json, plots, summary.md",
                                   description="Build the study binaries, run them and write "
                                               "results/runs/<run-id>/{results.json,summary.md,summary.html,plots/}.")
    parser.add_argument("--quick", action="store_true",
                        help="a short run, the two-minute health check of a new machine (its headline figures set "
                             "against committed runs of the same GPU model): each study's quick points (its "
                             "binary's --describe); no refinement; no references (explicit flags still win: "
                             "--reference adds them)")
    parser.add_argument("--full", action="store_true",
                        help="each study's full sweep (its own default sizes and batches, "
                             f"{opts.DEFAULT_REFINE_ROUNDS} refinement rounds) instead of the default suite's points; "
                             "all the studies then took over 25 minutes on an H100")
    parser.add_argument("--trials", help=f"measure each entry in this many independent trials (separate processes, "
                                         f"sizes in a new order each trial; 1 to {opts.MAX_TRIALS}, default "
                                         f"{opts.DEFAULT_TRIALS}, {opts.QUICK_TRIALS} with --quick): the spread between trials is what another run "
                                         f"would see, and what compare reads")
    parser.add_argument("--gpus", help="run the studies on every GPU given (all, or nvidia-smi indices such as 0,1,3) "
                                       "at once, one sub-run per GPU in <out>/gpu<index>/ with CUDA_VISIBLE_DEVICES "
                                       "set to it; results.json gathers them (each entry tagged with its GPU, the "
                                       "findings on the node's median) and gpus.md flags the GPUs slower than the "
                                       "node's median beyond the measured noise (docs/multi-gpu.md)")
    parser.add_argument("--launcher", help="start each study run by several ranks, one per GPU (collectives), under "
                                           "this command, e.g. 'mpirun -np 16 --hostfile hosts' or 'srun --mpi=pmix': "
                                           "rank 0, on this node, measures and writes; results.json records every "
                                           "rank's node and GPU (docs/multi-gpu.md)")
    parser.add_argument("--repeatability", action="store_true",
                        help="the run twice, back to back, and how far this machine varies from itself per kind of "
                             "entry (results/runs/repeatability-<run-id>/: both runs, their comparison, "
                             "repeatability.md): the noise below which a difference between machines is none")
    parser.add_argument("--no-telemetry", action="store_true",
                        help="sample no NVML telemetry (clocks, power, energy per operation, utilization), e.g. to "
                             "measure what sampling costs")
    parser.add_argument("--studies", help=f"studies to run: {','.join(studies.NAMES)} "
                                          f"(default: every study whose binary was built)")
    parser.add_argument("--sizes", help="sizes n for every study, e.g. 64,200,1024: matrix sizes, the MLP's hidden "
                                        "width; conv2d keeps those that name one of its layers (7, 14, 28, 56) "
                                        "(default: each study's list)")
    parser.add_argument("--batches", help=f"batch sizes for the studies with a batch axis "
                                          f"({','.join(studies.BATCH_NAMES)}), e.g. 1,8,64 (default: the study's list)")
    parser.add_argument("--impls", help="implementation ids (see gpubench_<study> --describe); "
                                        "each study runs those it has")
    parser.add_argument("--modes", help=f"modes: {','.join(opts.MODES)}")
    parser.add_argument("--caps", help="size caps, e.g. naive_loop=1024 (0 removes a cap)")
    parser.add_argument("--cpu-only", action="store_true", help="run no GPU entries (and no references)")
    parser.add_argument("--out", help="output directory (default: results/runs/<run-id>, which git ignores)")
    parser.add_argument("--run-id", help="run identifier (default: the UTC start time)")
    parser.add_argument("--build-dir", help="CMake build directory (default: <repo>/build)")
    parser.add_argument("--no-build", action="store_true", help="use the binaries already built")
    _cmake_arg(parser)
    parser.add_argument("--no-setup", action="store_true", help="do not check or install prerequisites")
    parser.add_argument("--no-refine", action="store_true", help="do not add sizes around the matmul crossovers")
    parser.add_argument("--no-reference", action="store_true", help="skip the numpy/PyTorch reference timings")
    parser.add_argument("--reference", action="store_true",
                        help="time the numpy/PyTorch references (the default, except with --quick)")
    parser.add_argument("--like", metavar="RESULTS", help="repeat the configuration a results.json recorded (studies, "
                                                         "the sizes and batches each swept, options; "
                                                         "flags given here still win) and report where this "
                                                         "machine's environment differs from the one it recorded")


def _cmake_arg(parser):
    parser.add_argument("--cmake-arg", action="append", default=[], metavar="ARG",
                        help="an option for CMake's configure, e.g. -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON (repeatable; "
                             f"after those in ${build.CMAKE_ARGS_VARIABLE}, split as a shell would)")


def _compare_parser(subparsers):
    parser = subparsers.add_parser("compare", help="side-by-side report of results files, with verdicts and cost",
                                   description="Compare the entries two or more results files share: medians, ratios "
                                               "to the first file with their intervals, a verdict per entry (same, "
                                               "faster, slower, unclear) from the files' independent trials or the "
                                               "between-run noise floor, and, with a price per file, cost per 1000 "
                                               "GEMMs, TFLOP/s per USD-hour and USD per MLP epoch. Writes "
                                               "compare.md, compare.html and compare.json.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one; "
                                                   "the first is the baseline")
    parser.add_argument("--label", action="append", help="a name per file, in order (default: run id and GPU name)")
    parser.add_argument("--price", action="append", default=[], metavar="FILE=PRICE",
                        help="FILE's price: an instance type of the price table, or USD per hour (repeatable)")
    parser.add_argument("--prices", default=prices.DEFAULT_PRICES,
                        help="price table (default: scripts/prices.json, dated examples: check current prices)")
    parser.add_argument("--out", help="output directory (default: results/runs/compare-<UTC time>)")


def _rank_parser(subparsers):
    parser = subparsers.add_parser("rank", help="machines side by side on their headline figures, absolute and "
                                                "per dollar",
                                   description="Rank one or more runs on their headline figures (derived again from "
                                               "each file): one row per run, one column per figure any run has, the "
                                               "best run in bold and each run's rank where a direction is better, "
                                               "runs within noise of each other (as compare judges) sharing a rank; "
                                               "with a price per file, rates per USD-hour and USD per MLP epoch. "
                                               "Writes rank.md, rank.html and rank.json.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one; one "
                                                   "per row")
    parser.add_argument("--label", action="append", help="a name per file, in order (default: run id (GPU name))")
    parser.add_argument("--price", action="append", default=[], metavar="FILE=PRICE",
                        help="FILE's price: an instance type of the price table (priced at one GPU's share), or USD "
                             "per hour (repeatable)")
    parser.add_argument("--prices", default=prices.DEFAULT_PRICES, metavar="TABLE",
                        help="price table (default: scripts/prices.json, dated examples: check current prices)")
    parser.add_argument("--out", help="output directory (default: results/runs/rank-<UTC time>)")


def _digest_parsers(subparsers):
    parser = subparsers.add_parser(
        "digest", help="a run's compact data: identity, headline figures, every entry's and trial's median",
        description="Write a run digest of the given runs into one file: per run its id, status, revision, "
                    "machine, the options that shape what it measured, its headline figures (derived again, as "
                    "expected reads them) and per entry its study, name, device, protocol, status, median and each "
                    "trial's median (docs/results-schema.md, \"Run digests\"). A few kilobytes where the run's "
                    "results.json has megabytes; expected and noise-floor read it as they read the run.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the digest to write (gzip-compressed where the name ends in .gz, e.g. "
                             "results/aa/<pair>.json.gz)")
    parser = subparsers.add_parser(
        "noise-floor", help="measure compare's one-trial noise floor on an A/A pair of runs",
        description="Measure the between-run noise floor of one-trial entries per protocol (the 95th percentile "
                    "of |log(B/A)| over the entries ok in both runs) on an A/A pair, the same suite run twice on "
                    "one machine, and write it with the runs it was measured on. compare holds an entry measured "
                    "in fewer than two trials to it.")
    parser.add_argument("results", nargs="+", help="the two runs: results.json (or .json.gz) files, directories "
                                                    "holding one, or run digests holding two runs between them")
    parser.add_argument("--file", default=aa_noise_floor.FILE, help="the noise floor file (default: %(default)s)")


def build_parser():
    parser = argparse.ArgumentParser(prog="gpubench", description=DESCRIPTION)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _run_parser(subparsers)
    report_parser = subparsers.add_parser("report", help="regenerate summary.md and plots from a results.json")
    report_parser.add_argument("results", help="a results.json (or .json.gz) or the directory holding it")
    report_parser.add_argument("--out", help="where to write (default: beside results.json)")
    _compare_parser(subparsers)
    _rank_parser(subparsers)
    expected_parser = subparsers.add_parser(
        "expected", help="set the health check's expected ranges from committed runs",
        description="Record every headline figure of the given runs as the expected range of their GPU model in "
                    "scripts/expected_ranges.json (the runs' model records are replaced, others kept). Use runs of "
                    "the default suite on healthy machines, committed under results/.")
    expected_parser.add_argument("results", nargs="+",
                                 help="results.json (or .json.gz) files, directories holding one, or run digests "
                                      "(gpubench digest)")
    expected_parser.add_argument("--file", default=expected.EXPECTED, help="the ranges file (default: %(default)s)")
    _digest_parsers(subparsers)
    noise_model.register(subparsers)
    build_parser_ = subparsers.add_parser("build", help="configure and build only")
    build_parser_.add_argument("--build-dir", help="CMake build directory (default: <repo>/build)")
    build_parser_.add_argument("--no-setup", action="store_true", help=argparse.SUPPRESS)
    _cmake_arg(build_parser_)
    for command in subparsers.choices.values():
        command.set_defaults(command_parser=command)
    return parser


def parse(argv):
    """The arguments; an unknown flag is its command's error, with that command's usage (argparse
    leaves unknown flags to the top-level parser, which would print the list of commands)."""
    args, unknown = build_parser().parse_known_args(_joined_cmake_args(argv))
    if unknown:
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _joined_cmake_args(argv):
    """'--cmake-arg -DX=1' as '--cmake-arg=-DX=1': argparse takes a value that starts with '-' for a flag."""
    joined, rest = [], list(argv)
    while rest:
        arg = rest.pop(0)
        joined.append(f"{arg}={rest.pop(0)}" if arg == "--cmake-arg" and rest else arg)
    return joined


def resolve_run_options(args):
    """argparse namespace -> RunOptions, every value validated (UsageError otherwise)."""
    if args.quick and args.full:
        raise opts.UsageError("--quick and --full: choose one")
    if args.reference and (args.no_reference or args.cpu_only):
        raise opts.UsageError(f"--reference and {'--no-reference' if args.no_reference else '--cpu-only'}: "
                              f"choose one")
    # The sizes and batches of each are per study (opts.for_study).
    if args.quick:
        rounds = opts.QUICK_REFINE_ROUNDS
    else:
        rounds = opts.DEFAULT_REFINE_ROUNDS if args.full else opts.SUITE_REFINE_ROUNDS
    return opts.RunOptions(
        studies=(opts.parse_names(args.studies, "--studies", allowed=studies.NAMES) if args.studies is not None
                 else None),
        sizes=opts.parse_positive_list(args.sizes, "--sizes") if args.sizes is not None else None,
        batches=opts.parse_positive_list(args.batches, "--batches") if args.batches is not None else None,
        impls=opts.parse_names(args.impls, "--impls") if args.impls is not None else None,
        modes=opts.parse_names(args.modes, "--modes", allowed=opts.MODES) if args.modes is not None else None,
        caps=opts.parse_caps(args.caps) if args.caps is not None else {},
        cpu_only=args.cpu_only,
        out=args.out,
        run_id=opts.parse_run_id(args.run_id) if args.run_id is not None else session.default_run_id(),
        refine_rounds=0 if args.no_refine else rounds,
        build_dir=os.path.abspath(args.build_dir or session.default_build_dir()),
        build=not args.no_build,
        # References take a third of a quick run's time (a torch start and a second per point).
        reference=args.reference or not (args.no_reference or args.cpu_only or args.quick),
        quick=args.quick,
        full=args.full,
        telemetry=not args.no_telemetry,
        trials=_trials(args.trials, args.quick),
        repeatability=args.repeatability,
        gpus=gpus.parse_selection(args.gpus) if args.gpus is not None else None,
        launcher=opts.parse_launcher(args.launcher) if args.launcher is not None else None,
        cmake_args=list(args.cmake_arg),
    )


def _trials(text, quick):
    if text is None:
        return opts.QUICK_TRIALS if quick else opts.DEFAULT_TRIALS
    value = opts.parse_positive_int(text, "--trials")
    if value > opts.MAX_TRIALS:
        raise opts.UsageError(f"--trials: at most {opts.MAX_TRIALS}, got {value}")
    return value


# Command-line values that mean "not given" (argparse's defaults), so --like fills them in.
_NOT_GIVEN = {"studies": None, "impls": None, "modes": None, "caps": None, "cpu_only": False,
              "refine_rounds": None, "reference": None, "quick": False,
              "full": False, "telemetry": None, "trials": None}
_ARGUMENT_OF = {"refine_rounds": "no_refine", "reference": "no_reference", "telemetry": "no_telemetry"}


def resolve_like(args, options):
    """The run's options with the recorded run's wherever the command line gave none."""
    run_id, recorded, swept, _ = like.recorded_configuration(args.like)
    taken = {}
    for name, value in recorded.items():
        argument = _ARGUMENT_OF.get(name, name)
        if getattr(args, argument) in (_NOT_GIVEN.get(name), False) and not (name == "reference" and args.reference):
            taken[name] = value
    print(f"run --like {args.like}: repeating run {run_id}", flush=True)
    return replace(options, **taken, like=os.path.abspath(args.like),
                   study_sizes=None if args.sizes is not None or args.batches is not None else swept)


def _command(args, argv):
    if args.command == "run":
        options = resolve_run_options(args)
        options = resolve_like(args, options) if args.like else options
        if options.gpus is not None:
            if options.repeatability or options.cpu_only or options.launcher:
                raise opts.UsageError("--gpus: not with --repeatability, --cpu-only or --launcher")
            return gpus.run(options, argv)
        return repeatability.run(options, argv) if options.repeatability else session.run(options, argv)
    if args.command == "compare":
        print(f"comparison: {compare.run(args.results, args.label, args.price, args.prices, args.out)}")
        return 0
    if args.command == "rank":
        print(f"rank: {rank.run(args.results, args.label, args.price, args.prices, args.out)}")
        return 0
    if args.command == "expected":
        for model, runs in expected.update(args.results, args.file).items():
            print(f"expected ranges: {model} from {runs} run(s) in {args.file}")
        return 0
    if args.command == "digest":
        written = digest.write(digest.make(args.results), args.out)
        print(f"digest: {written} ({len(args.results)} run(s))")
        return 0
    if args.command == "noise-floor":
        found = aa_noise_floor.record([run for path in args.results for run in digest.runs_in(path)])
        aa_noise_floor.write(found, args.file)
        print(f"noise floor: {', '.join(f'{protocol} {floor:.4f}' for protocol, floor in found['floors'].items())} "
              f"from runs {' and '.join(run['id'] for run in found['runs'])} in {args.file}")
        return 0
    if args.command == "noise-model":
        return noise_model.run(args)
    if args.command == "report":
        print(f"summary: {report.regenerate(args.results, args.out)}")
        return 0
    build.configure_and_build(session.SOURCE_DIR, os.path.abspath(args.build_dir or session.default_build_dir()),
                              extra_args=args.cmake_arg)
    return 0


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv):
    args = parse(argv)  # exits 2 on its own errors
    # kill (SIGTERM) and a closed terminal (SIGHUP) stop a run as Ctrl-C does: the benchmark process
    # is stopped, what finished is written and the summary drawn.
    for name in ("SIGTERM", "SIGHUP"):
        signal.signal(getattr(signal, name), _interrupt)
    try:
        return _command(args, argv)
    except (opts.UsageError, outputs.OutputFolderError) as error:
        print(f"gpubench: error: {error}", file=sys.stderr)
        return 2
    except (build.BuildError, runner.RunnerError, results.ResultsError, prices.PriceTableError,
            verdicts.MissingScipy, expected.ExpectedError, figures.DatasheetError, outputs.WriteError,
            digest.DigestError, aa_noise_floor.NoiseFloorError, *noise_model.ERRORS) as error:
        print(f"gpubench: error: {error}", file=sys.stderr)
        return 1
    except stopping.StoppedAfterFinalWrite as stop:
        return stop.exit_status  # the run's outputs were written whole: its status says how it ended
    except KeyboardInterrupt:
        print("gpubench: interrupted", file=sys.stderr)
        return 130
