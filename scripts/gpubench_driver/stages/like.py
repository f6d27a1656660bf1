"""run --like RESULTS: the configuration an earlier run recorded (its studies, the sizes and batches each
swept and options), and where this machine's environment differs from the one it recorded."""
from gpubench_driver import studies
from gpubench_driver.lib import results
from gpubench_driver.stages import journal, options as opts

# Options taken from the recorded run unless given on the command line; sizes and batches come
# per study from what each study swept (its defaults may have changed since).
RECORDED_OPTIONS = ("studies", "impls", "modes", "caps", "cpu_only", "refine_rounds", "reference", "quick", "full",
                    "telemetry", "trials")
BOOLEAN_OPTIONS = ("cpu_only", "reference", "quick", "full", "telemetry")
# What the report compares: (what it is, path into results.json).
ENVIRONMENT = (
    ("CPU", ("machine", "cpu", "model")), ("CPU cores", ("machine", "cpu", "cores")),
    ("host memory (bytes)", ("machine", "memory_total_bytes")), ("operating system", ("machine", "os")),
    ("kernel", ("machine", "kernel")), ("transparent huge pages", ("machine", "transparent_hugepages")),
    ("GPU", ("machine", "gpus", 0, "name")), ("GPU memory (MiB)", ("machine", "gpus", 0, "memory.total")),
    ("GPU power limit (W)", ("machine", "gpus", 0, "power.limit")),
    ("PCIe generation", ("machine", "gpus", 0, "pcie.link.gen.max")),
    ("PCIe width", ("machine", "gpus", 0, "pcie.link.width.max")),
    ("GPU driver", ("machine", "gpus", 0, "driver_version")),
    ("CUDA runtime", ("software", "gpubench_env", "cuda", "runtime_version")),
    ("cuBLAS", ("software", "gpubench_env", "cuda", "cublas_version")),
    ("OpenBLAS", ("software", "openblas", "version")), ("OpenBLAS kernel", ("software", "openblas", "core")),
    ("OpenBLAS threads", ("software", "openblas", "threads")),
    ("C++ compiler", ("software", "gpubench_env", "compilers", "cxx")),
    ("Google Benchmark", ("software", "gpubench_env", "google_benchmark_version")))


def _positive_ints(values, what):
    if values is None:
        return None
    if not isinstance(values, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                               for v in values):
        raise results.ResultsError(f"{what}: expected a list of positive integers, got {values!r}")
    return values


def _checked(name, value):
    """A recorded option, validated as the command line's would be (the file may be hostile)."""
    if value is None or name in BOOLEAN_OPTIONS and isinstance(value, bool):
        return value
    try:
        if name in ("studies", "impls", "modes"):
            allowed = {"studies": studies.NAMES, "modes": opts.MODES}.get(name)
            return opts.parse_names(",".join(map(str, value)), f"--{name}", allowed=allowed)
        if name in ("sizes", "batches"):
            return _positive_ints(value, f"run.options.{name}")
        if name == "caps":
            return opts.parse_caps(",".join(f"{k}={v}" for k, v in value.items())) if value else {}
        if name == "refine_rounds" and isinstance(value, int) and value >= 0:
            return value
        if name == "trials" and isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= opts.MAX_TRIALS:
            return value
    except (opts.UsageError, AttributeError, TypeError) as error:
        raise results.ResultsError(f"run.options.{name}: {error}") from None
    raise results.ResultsError(f"run.options.{name}: unexpected value {value!r}")


def recorded_configuration(path):
    """(run id, {option: value} for RECORDED_OPTIONS, {study: {"sizes", "batches"}}) of a results file."""
    document = journal.load(path)
    chosen, swept = configuration(document)
    return document["run"].get("id"), chosen, swept, document


def configuration(document, names=RECORDED_OPTIONS):
    """({option: value} of the named options the run recorded, each checked as the command line's would be,
    {study: {"sizes", "batches"}} as each swept them) of a results document."""
    recorded = document["run"].get("options") or {}
    chosen = {name: _checked(name, recorded.get(name)) for name in names if name in recorded}
    swept = {name: {"sizes": _positive_ints(study.get("sizes"), f"studies.{name}.sizes"),
                    "batches": _positive_ints(study.get("batches"), f"studies.{name}.batches")}
             for name, study in document["studies"].items() if name in studies.NAMES}
    return chosen, swept


def _value(document, path):
    for key in path:
        if isinstance(document, list) and isinstance(key, int) and key < len(document):
            document = document[key]
        elif isinstance(document, dict) and key in document:
            document = document[key]
        else:
            return None
    return document


def differences(recorded, document):
    """Where this run's environment differs from the recorded one: [{what, recorded, here}]."""
    found = [(what, _value(recorded, path), _value(document, path)) for what, path in ENVIRONMENT]
    return [{"what": what, "recorded": then, "here": now} for what, then, now in found if then != now]
