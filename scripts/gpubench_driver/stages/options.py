"""Validation of the run options; every bad value becomes a UsageError (exit status 2)."""
import re
import shlex
from dataclasses import dataclass, field, replace

from gpubench_driver import studies
from gpubench_driver.lib import gbench

MODES = ("host", "resident", "transfer_pinned", "transfer_pageable")
SUITE_REFINE_ROUNDS = 1
QUICK_REFINE_ROUNDS = 0
DEFAULT_REFINE_ROUNDS = 3
# Independent trials per entry (separate processes): by default two for every unit and a third where they disagree
# (lib/trial_rule.py), so at most three; one in --quick (docs/methodology.md, "The default suite").
DEFAULT_TRIALS = 3
QUICK_TRIALS = 1
MAX_TRIALS = 20
_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class UsageError(Exception):
    """A bad command-line value."""


class NothingToRun(Exception):
    """The user's choice leaves a study nothing to run; the message says why."""


@dataclass
class RunOptions:
    """The options of one run; commands/run.resolve_run_options sets every field from the command line."""
    studies: list = None     # None: every study whose binary was built
    sizes: list = None       # None: the study's quick or default sizes
    batches: list = None     # None: the study's quick or default batches (studies with a batch axis)
    impls: list = None       # None: all
    modes: list = None       # None: all
    caps: dict = field(default_factory=dict)
    cpu_only: bool = False
    out: str = None          # None: <repo>/results/runs/<run_id>
    run_id: str = None
    refine_rounds: int = 0   # 0: no refinement
    build_dir: str = None
    build: bool = True
    reference: bool = False
    quick: bool = False
    full: bool = False       # each study's own default sweep instead of the suite's points
    telemetry: bool = True   # False: the binaries sample no NVML telemetry (run --no-telemetry)
    trials: int = 1          # independent processes per entry (trials.py; the command line defaults to DEFAULT_TRIALS)
    trial_policy: str = "fixed"  # "adaptive": `trials` is the most, a unit's last trial only where trial_rule says
    noise_model: str = None  # the noise model file the adaptive policy reads (None: scripts/noise_model.json)
    repeatability: bool = False  # run twice and report how far this machine varies from itself
    like: str = None         # run --like: the results file whose configuration this run repeats
    study_sizes: dict = None  # run --like: {study: {"sizes", "batches"}} as that run swept them
    gpus: object = None      # run --gpus: "all" or a list of nvidia-smi indices; None: one run on the GPU CUDA gives
    launcher: list = None    # run --launcher: the command that starts a study of several ranks (mpirun -np 16 ...)
    cmake_args: list = field(default_factory=list)  # run --cmake-arg: options for CMake's configure
    against: str = None      # run --against: the earlier run's results file whose comparison extra trials decide
    budget_s: float = None   # run --budget: the seconds of those extra trials at most (with against)


# The flags that shape what a run measures (argparse dest: the RunOptions field it sets): --like fills in those
# not given from the recorded run, --resume refuses those that contradict it.
MEASURED = {"studies": "studies", "sizes": "sizes", "batches": "batches", "impls": "impls", "modes": "modes",
            "caps": "caps", "cpu_only": "cpu_only", "quick": "quick", "full": "full", "trials": "trials",
            "no_refine": "refine_rounds", "reference": "reference", "no_reference": "reference",
            "no_telemetry": "telemetry", "run_id": "run_id", "launcher": "launcher", "noise_model": "noise_model"}


def given_flags(args, option):
    """The argparse dests setting `option` that the command line gave."""
    return [dest for dest, name in MEASURED.items()
            if name == option and getattr(args, dest, None) not in (None, False)]


# Binary multiples, as the study binaries read them: a transfer size is written 4KiB, 256MiB, 1GiB.
SIZE_SUFFIXES = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZED = re.compile(r"^([0-9]+)(KiB|MiB|GiB|K|M|G)?$")


def parse_positive_int(text, flag):
    """A positive integer; --sizes also takes a binary suffix (4KiB = 4096)."""
    match = _SIZED.match(text.strip()) if flag == "--sizes" else None
    try:
        value = int(match.group(1)) * SIZE_SUFFIXES.get(match.group(2), 1) if match else int(text.strip())
    except ValueError:
        raise UsageError(f"{flag}: '{text}' is not an integer") from None
    if value <= 0:
        raise UsageError(f"{flag}: must be a positive integer, got {text}")
    return value


def parse_positive_list(text, flag):
    """'64,200,1024' -> [64, 200, 1024] (sorted, without duplicates): --sizes and --batches."""
    items = text.split(",")
    if not text.strip() or any(not item.strip() for item in items):
        raise UsageError(f"{flag}: expected a comma-separated list of positive integers, got '{text}'")
    return sorted({parse_positive_int(item, flag) for item in items})


def parse_names(text, flag, allowed=None):
    names = [item.strip() for item in text.split(",")]
    if not text.strip() or any(not name for name in names):
        raise UsageError(f"{flag}: expected a comma-separated list of names, got '{text}'")
    for name in names:
        if not _NAME.match(name):
            raise UsageError(f"{flag}: '{name}' is not a valid name")
        if allowed is not None and name not in allowed:
            raise UsageError(f"{flag}: unknown value '{name}' (choose from {', '.join(allowed)})")
    return list(dict.fromkeys(names))


def parse_caps(text):
    """'naive=1024,tiled=0' -> {'naive': 1024, 'tiled': 0}; 0 removes a cap."""
    caps = {}
    for item in text.split(","):
        name, separator, value = item.partition("=")
        name = name.strip()
        if not separator or not name or not _NAME.match(name):
            raise UsageError(f"--caps: expected id=N, got '{item}'")
        try:
            cap = int(value.strip())
        except ValueError:
            raise UsageError(f"--caps: '{value}' in '{item}' is not an integer") from None
        if cap < 0:
            raise UsageError(f"--caps: a cap cannot be negative, got '{item}'")
        caps[name] = cap
    return caps


def parse_launcher(text):
    """--launcher: a command line (shell quoting) put before the binary of each study run by several ranks."""
    try:
        words = shlex.split(text)
    except ValueError as error:
        raise UsageError(f"--launcher: {error}") from None
    if not words:
        raise UsageError("--launcher: expected a command such as 'mpirun -np 16 --hostfile hosts'")
    return words


def parse_run_id(text):
    # The run id names a folder under results/: '.' and '..' would name results/ itself or its parent.
    if not _NAME.match(text) or set(text) == {"."}:
        raise UsageError(f"--run-id: '{text}' may only contain letters, digits, '.', '_' and '-', "
                         f"and not only dots")
    return text


def check_implementations(options, described_ids):
    """--impls and --caps name implementations that only the built binaries know (any of the studies run)."""
    for flag, names in (("--impls", options.impls or []), ("--caps", list(options.caps))):
        unknown = [name for name in names if name not in described_ids]
        if unknown:
            raise UsageError(f"{flag}: no implementation {', '.join(unknown)} in this build "
                             f"(available: {', '.join(dict.fromkeys(described_ids))})")


def run_points(options, name, description):
    """The points of the binary's --describe a run takes: --full's, --quick's, else the suite's."""
    kind = "full" if options.full else "quick" if options.quick else "suite"
    point = (description.get("points") or {}).get(kind)
    if not isinstance(point, dict) or not isinstance(point.get("sizes"), list):
        raise UsageError(f"study {name}: its binary's --describe gives no {kind} points (built from older sources: "
                         f"build it again)")
    return point


def _swept(options, name, key, description):
    """--sizes or --batches, else as the --like run swept them, else the run's points."""
    given = getattr(options, key)
    recorded = (options.study_sizes or {}).get(name, {}).get(key)
    return given if given is not None else recorded or run_points(options, name, description).get(key)


def study_sizes(options, name, description):
    """The sizes a study sweeps (in a study whose sizes name layers, only --sizes' that are its layers)."""
    layers = [layer.get("n") for layer in description.get("layers") or [] if isinstance(layer, dict)]
    if options.sizes is None or not layers:
        return _swept(options, name, "sizes", description)
    sizes = [n for n in options.sizes if n in layers]
    if not sizes:
        raise NothingToRun(f"none of --sizes is one of its layers (n = {', '.join(map(str, layers))})")
    return sizes


def described_range(description, key):
    """(least, largest) of its --describe's size_range or batch_range, else of any positive int."""
    stated = description.get(key)
    bounds = tuple((stated or {}).get(bound) if isinstance(stated, dict) else None for bound in ("min", "max"))
    if all(isinstance(value, int) and not isinstance(value, bool) for value in bounds) and 1 <= bounds[0] <= bounds[1]:
        return bounds
    return 1, gbench.LARGEST_SIZE


def check_range(values, flag, name, description, key):
    """Each size or batch within the study's range: a usage error now rather than a failed invocation later."""
    least, largest = described_range(description, key)
    for value in values or []:
        if not least <= value <= largest:
            raise UsageError(f"{flag}: {value} is out of range for study {name} (it takes {least} to {largest})")


def _chosen(given, suite, known, runnable):
    """The user's ids the binary knows, else the suite's that can run here, else None: all of them."""
    if given is not None:
        return [value for value in given if value in known]
    return [value for value in suite or () if value in runnable] or None


def for_study(options, name, description):
    """The options one study's binary gets (its sizes, batches, and the implementations, modes and caps it
    knows); NothingToRun when the user's choice leaves it nothing to run."""
    implementations = description["implementations"]
    ids = [impl.get("id") for impl in implementations]
    modes = [mode for impl in implementations for mode in impl.get("modes") or []]
    points = run_points(options, name, description)
    gpu = (description.get("gpu") or {}).get("available") and not options.cpu_only
    runnable = [impl.get("id") for impl in implementations if gpu or impl.get("device") == "cpu"]
    impls = _chosen(options.impls, points.get("impls"), ids, runnable)
    chosen_modes = _chosen(options.modes, points.get("modes"), modes, modes)
    if impls == [] or chosen_modes == []:
        raise NothingToRun("it has none of the implementations or modes selected")
    sizes = study_sizes(options, name, description)
    batches = _swept(options, name, "batches", description) if studies.BY_NAME[name].batch_axis else None
    check_range(sizes, "--sizes", name, description, "size_range")
    check_range(batches, "--batches", name, description, "batch_range")
    return replace(options, sizes=sizes, batches=batches, impls=impls,
                   modes=chosen_modes, caps={i: cap for i, cap in options.caps.items() if i in ids},
                   refine_rounds=options.refine_rounds if studies.BY_NAME[name].refined else 0)
