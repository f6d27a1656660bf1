"""The 'run' command: its options, checked and resolved into stages/options.RunOptions (with --like, the
recorded run's wherever the command line gives none), then one run, a repeatability pair or a run per GPU."""
import os
from dataclasses import replace

from gpubench_driver import studies
from gpubench_driver.commands import repeatability
from gpubench_driver.commands.build import add_cmake_arg
from gpubench_driver.lib import figures, noise_model, outputs, results, trial_rule
from gpubench_driver.stages import against, build, gpus, like, options as opts, prices, resume, runner, session

# How a run fails besides its options (exit 1): the build, a study binary, a results file it reads
# (--like) or writes, the datasheet peaks, the repeatability pair's comparison.
ERRORS = (build.BuildError, runner.RunnerError, results.ResultsError, figures.DatasheetError, outputs.WriteError,
          noise_model.NoiseModelError, prices.PriceTableError)


def register(subparsers):
    parser = subparsers.add_parser("run", help="build, run the studies, write results.json, plots, summary.md",
                                   description="Build the study binaries, run them and write "
                                               "results/runs/<run-id>/{results.json,summary.md,summary.html,plots/}.")
    parser.add_argument("--quick", action="store_true",
                        help="a short run of every study, that each runs and verifies on a new machine (its points "
                             "are short of the peaks: gpubench check is the health check): each study's quick points "
                             "(its binary's --describe); no refinement; no references (explicit flags still win: "
                             "--reference adds them)")
    parser.add_argument("--full", action="store_true",
                        help="each study's full sweep (its own default sizes and batches, "
                             f"{opts.DEFAULT_REFINE_ROUNDS} refinement rounds) instead of the default suite's points; "
                             "all the studies then took over 25 minutes on an H100")
    parser.add_argument("--trials", help=f"measure each entry in exactly this many independent trials (separate "
                                         f"processes, sizes in a new order each trial; 1 to {opts.MAX_TRIALS}; "
                                         f"{opts.QUICK_TRIALS} with --quick): the spread between trials is what another "
                                         f"run would see, and what compare reads. Without it, each study at each size "
                                         f"runs {trial_rule.EVERY_UNIT} trials and a third where they disagree beyond "
                                         f"the noise model's width")
    parser.add_argument("--noise-model", metavar="FILE", help="the noise model that decides which units get a third "
                                                              "trial (default: scripts/noise_model.json)")
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
    add_cmake_arg(parser)
    parser.add_argument("--no-setup", action="store_true", help="do not check or install prerequisites")
    parser.add_argument("--no-refine", action="store_true", help="do not add sizes around the matmul crossovers")
    parser.add_argument("--no-reference", action="store_true", help="skip the numpy/PyTorch reference timings")
    parser.add_argument("--reference", action="store_true",
                        help="time the numpy/PyTorch references (the default, except with --quick)")
    parser.add_argument("--resume", metavar="DIR",
                        help="finish the run in DIR that was stopped (killed, interrupted, its machine preempted): "
                             "its finished units (each study's trial at one size, refinement round, references) "
                             "and the library choices held across its trials are kept, only what is missing is "
                             "run, then results.json and the summary are written as for a whole run, which records "
                             "the resume. It takes the run's recorded options: a flag that contradicts them is "
                             "refused; --build-dir, --no-build and --cmake-arg are free. A complete run is left as "
                             "it is")
    parser.add_argument("--like", metavar="RESULTS", help="repeat the configuration a results.json recorded (studies, "
                                                         "the sizes and batches each swept, options; "
                                                         "flags given here still win) and report where this "
                                                         "machine's environment differs from the one it recorded")
    parser.add_argument("--against", metavar="RESULTS",
                        help="after this run's own trials, add trials only to the units (a study at one size) holding "
                             "an entry whose comparison with RESULTS (an earlier run's results.json or .json.gz, or "
                             "its folder: another machine's or this one's) is not decided yet, one pass at a time, "
                             "until each is decided (same, faster or slower at the equivalence band of compare) or "
                             "more trials of this run cannot decide it, or the budget is spent. A sequential rule "
                             "(a confidence sequence, docs/methodology.md) keeps the chance of a wrong verdict at "
                             "any pass within compare's 10%%. Without other flags, the run takes RESULTS' studies, "
                             "sizes and options, as --like does. With --resume DIR: the run in DIR (complete or not) "
                             "is extended so (compare --decide does this)")
    parser.add_argument("--budget", metavar="SECONDS",
                        help=f"with --against: the seconds of measuring the extra trials may take at most "
                             f"(default {against.DEFAULT_BUDGET_S:.0f}: the default suite's own time on an H100)")
    parser.set_defaults(execute=execute)
    return parser


def resolve_run_options(args):
    """argparse namespace -> RunOptions, every value validated (UsageError otherwise)."""
    if args.quick and args.full:
        raise opts.UsageError("--quick and --full: choose one")
    if args.reference and (args.no_reference or args.cpu_only):
        raise opts.UsageError(f"--reference and {'--no-reference' if args.no_reference else '--cpu-only'}: "
                              f"choose one")
    rounds = (opts.QUICK_REFINE_ROUNDS if args.quick
              else opts.DEFAULT_REFINE_ROUNDS if args.full else opts.SUITE_REFINE_ROUNDS)

    def given(text, parse, *parse_args, absent=None):
        return parse(text, *parse_args) if text is not None else absent

    # The sizes and batches of each are per study (opts.for_study).
    return opts.RunOptions(
        studies=given(args.studies, opts.parse_names, "--studies", studies.NAMES),
        sizes=given(args.sizes, opts.parse_positive_list, "--sizes"),
        batches=given(args.batches, opts.parse_positive_list, "--batches"),
        impls=given(args.impls, opts.parse_names, "--impls"),
        modes=given(args.modes, opts.parse_names, "--modes", opts.MODES),
        caps=given(args.caps, opts.parse_caps, absent={}), cpu_only=args.cpu_only, out=args.out,
        run_id=given(args.run_id, opts.parse_run_id) or session.default_run_id(),
        refine_rounds=0 if args.no_refine else rounds,
        build_dir=os.path.abspath(args.build_dir or session.default_build_dir()), build=not args.no_build,
        # References take a third of a quick run's time (a torch start and a second per point).
        reference=args.reference or not (args.no_reference or args.cpu_only or args.quick),
        quick=args.quick, full=args.full, telemetry=not args.no_telemetry, trials=_trials(args.trials, args.quick),
        trial_policy=trial_rule.FIXED if args.trials is not None or args.quick else trial_rule.ADAPTIVE,
        noise_model=given(args.noise_model, os.path.abspath),
        repeatability=args.repeatability, gpus=given(args.gpus, gpus.parse_selection),
        launcher=given(args.launcher, opts.parse_launcher), cmake_args=list(args.cmake_arg),
        against=given(args.against, os.path.abspath),
        budget_s=_budget(args))


def _budget(args):
    """--budget's seconds (with --against: the default where not given); None without --against."""
    if args.budget is not None and args.against is None:
        raise opts.UsageError("--budget: only with --against (the time of the extra trials it adds)")
    if args.against is None:
        return None
    return against.parse_budget(args.budget) if args.budget is not None else against.DEFAULT_BUDGET_S


def _trials(text, quick):
    if text is None:
        return opts.QUICK_TRIALS if quick else opts.DEFAULT_TRIALS
    value = opts.parse_positive_int(text, "--trials")
    if value > opts.MAX_TRIALS:
        raise opts.UsageError(f"--trials: at most {opts.MAX_TRIALS}, got {value}")
    return value


def resolve_like(args, options, path=None):
    """The run's options with the recorded run's (of --like, else of `path`: --against's) wherever the command
    line gave none."""
    path = path or args.like
    try:
        run_id, recorded, swept, document = like.recorded_configuration(path)
    except results.ResultsError as error:
        if args.like:
            raise
        raise opts.UsageError(f"--against: {error}") from None
    # Without --trials, the trials as the recorded run chose them (a file without a policy ran them fixed).
    policy = (document["run"].get("options") or {}).get("trial_policy")
    taken = {} if args.trials is not None else {"trial_policy": trial_rule.ADAPTIVE if policy == trial_rule.ADAPTIVE
                                                 else trial_rule.FIXED}
    taken.update({name: value for name, value in recorded.items() if not opts.given_flags(args, name)})
    print(f"run {'--like' if args.like else '--against'} {path}: repeating run {run_id}", flush=True)
    return replace(options, **taken, like=os.path.abspath(args.like) if args.like else None,
                   study_sizes=None if args.sizes is not None or args.batches is not None else swept)


def execute(args, argv):
    options = resolve_run_options(args)
    if args.resume:
        return resume.run(args, options, argv)
    if args.like or args.against:
        options = resolve_like(args, options, None if args.like else args.against)
    if options.against:
        against.load_earlier(options.against)  # a file that is no run refused before anything is built
    if options.gpus is not None:
        if options.repeatability or options.cpu_only or options.launcher or options.against:
            raise opts.UsageError("--gpus: not with --repeatability, --cpu-only, --launcher or --against")
        return gpus.run(options, argv)
    if options.repeatability and options.against:
        raise opts.UsageError("--repeatability and --against: choose one")
    return repeatability.run(options, argv) if options.repeatability else session.run(options, argv)
