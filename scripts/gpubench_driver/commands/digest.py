"""Run digests: what the noise model and the expected ranges read of a run (its identity, headline figures and
every entry's and trial's median), in a few kilobytes instead of a results.json's megabytes. `runs_in` reads a
digest or a results file alike. Schema: docs/results-schema.md, "Run digests"."""
import gzip
import json
import math
import os

from gpubench_driver.lib import environment, measurements, outputs, results
from gpubench_driver.lib.figures import first_gpu
from gpubench_driver.stages import analyse, journal

SCHEMA = "gpubench-run-digest"
SCHEMA_VERSION = 2  # 2: each entry's memory mode (`mode`)
READABLE_VERSIONS = (1, 2)  # a digest of version 1 has no `mode`: its entries read as of no mode
# The run options that decide what a run measured and how often (run.options; absent ones are null).
OPTIONS = {"quick": bool, "full": bool, "trials": int, "refine_rounds": int, "reference": bool, "telemetry": bool,
           "cpu_only": bool, "repeatability": bool, "studies": list, "sizes": list, "batches": list, "impls": list,
           "modes": list, "trial_policy": str, "against": str, "budget_s": (int, float)}
# The fields of a headline figure kept (headline.figure): what expected and rank read of one.
FIGURE_TEXT = ("key", "label", "unit", "better", "where", "device")
FIGURE_NUMBERS = ("value", "low", "high")


class DigestError(Exception):
    """A digest that cannot be read or written: the message says which file and why."""


def _trial_medians(entry):
    """[{trial, status, median_s}] of an entry measured in trials; [] for one measured once."""
    return [{"trial": record["trial"], "status": record["status"],
             "median_s": (record.get("time_s") or {}).get("median") if record["status"] == "ok" else None}
            for record in entry.get("trials") or []]


def _entry(study, entry):
    return {"study": study, "name": entry["name"], "gpu": entry.get("gpu"), "device": entry.get("device"),
            "mode": entry.get("mode"), "protocol": entry.get("protocol"), "status": entry["status"],
            "median_s": (entry.get("time_s") or {}).get("median") if entry["status"] == "ok" else None,
            "trials": _trial_medians(entry)}


def _figure(row):
    between = row.get("between_runs") or {}  # the figure at each trial, and the protocol that timed it
    return {**{key: row.get(key) for key in FIGURE_TEXT}, "protocol": between.get("protocol"),
            **{key: row.get(key) for key in FIGURE_NUMBERS}, "trial_values": list(between.get("trial_values") or [])}


def _machine(document):
    machine = document["machine"]
    cpu = machine.get("cpu") or {}
    gpus = [gpu for gpu in machine.get("gpus") or [] if isinstance(gpu, dict)]
    first = first_gpu(document)
    return {"gpu": first.get("name"), "gpu_count": len(gpus), "gpus": [gpu.get("name") for gpu in gpus],
            "driver_version": first.get("driver_version"),
            "host": machine.get("hostname") if isinstance(machine.get("hostname"), str) else None,
            "cpu": cpu.get("model"), "cpu_sockets": cpu.get("sockets"), "cpu_cores": cpu.get("cores"),
            "cpu_threads": cpu.get("threads"), "memory_total_bytes": machine.get("memory_total_bytes"),
            "os": machine.get("os"), "kernel": machine.get("kernel")}


def of_document(document):
    """The digest of one run (a validated results document), its findings derived again."""
    analyse.derive_findings(document, 0)
    run, git = document["run"], document["run"].get("git") or {}
    options = run["options"]
    return {"id": run["id"], "status": run["status"], "started": run["started"], "finished": run.get("finished"),
            "revision": git.get("revision"), "dirty": git.get("dirty"),
            "command_line": [str(arg) for arg in run["command_line"]],
            "options": {key: options.get(key) for key in OPTIONS},
            "machine": _machine(document), "gpu_available": document["gpu"]["available"],
            "figures": [_figure(row) for row in document["findings"]["headline"]["figures"]],
            "entries": [_entry(name, entry) for name, study in document["studies"].items()
                        for entry in study["entries"]]}


def make(paths):
    """The digest document of the runs (results.json or .json.gz files, or folders holding one)."""
    runs = {}
    for path in paths:
        run = of_document(journal.load(path))
        try:  # results.load checked the file; what it leaves open (the options' types) is checked here
            _validate_run(run, "the run")
        except DigestError as error:
            raise DigestError(f"{path} cannot be digested: {error}") from None
        if run["id"] in runs:
            raise DigestError(f"{path}: run {run['id']!r} is given twice (a digest holds a run once)")
        runs[run["id"]] = run
    # The figures are the derivations of this checkout, which may postdate the runs.
    git = environment.capture_git(outputs.SOURCE_DIR)
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "figures_derived_by": {"revision": git["revision"], "dirty": git["dirty"]}, "runs": list(runs.values())}


def write(document, path):
    """gzip level 9 without a timestamp (the same bytes each time) when the name ends in .gz, else plain JSON."""
    data = (json.dumps(results.without_non_finite(document), separators=(",", ":"), allow_nan=False) + "\n").encode()
    if path.endswith(".gz"):
        data = gzip.compress(data, 9, mtime=0)
    with outputs.replacing(path, binary=True) as stream:
        stream.write(data)
    return path


def _expect(condition, where, message):
    if not condition:
        raise DigestError(f"{where}: {message}")


def _typed(value, types, where, optional=True):
    """value is of `types` (a bool is no number), or null where optional."""
    if value is None:
        _expect(optional, where, "missing")
        return
    types = types if isinstance(types, tuple) else (types,)
    fits = (bool in types) if isinstance(value, bool) else isinstance(value, types)
    _expect(fits, where, f"expected {' or '.join(t.__name__ for t in types)}, got {type(value).__name__}")
    if isinstance(value, str):
        _expect(len(value) <= results.LONGEST_TEXT, where, f"a text of {len(value)} characters")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        _expect(math.isfinite(value) and abs(value) <= results.LARGEST_NUMBER, where,
                f"{value!r:.40} is out of range: no run records a number beyond {results.LARGEST_NUMBER:g}")


def _time(value, where):
    _typed(value, (int, float), where)
    _expect(value is None or results.SHORTEST_TIME_S <= value <= results.LONGEST_TIME_S, where,
            f"{value!r:.40} is out of range: expected seconds from {results.SHORTEST_TIME_S:g} "
            f"to {results.LONGEST_TIME_S:g}")


def _status(value, allowed, where):
    _expect(value in allowed, where, f"expected one of {', '.join(allowed)}, got {value!r:.40}")


def _list(value, where, optional=False):
    _typed(value, list, where, optional)
    return value or []


def _fields(record, where, types, keys, optional=True):
    for key in keys:
        _typed(record.get(key), types, f"{where}.{key}", optional)


def _items(values, where, types, optional=True, list_optional=False):
    for index, item in enumerate(_list(values, where, list_optional)):
        _typed(item, types, f"{where}[{index}]", optional)


def _validate_run(run, where):
    _typed(run, dict, where, optional=False)
    _fields(run, where, str, ("id", "started"), optional=False)
    _fields(run, where, str, ("finished", "revision"))
    _fields(run, where, bool, ("dirty",))
    _fields(run, where, bool, ("gpu_available",), optional=False)
    _status(run.get("status"), results.RUN_STATUSES, f"{where}.status")
    _items(run.get("command_line"), f"{where}.command_line", str, optional=False)
    options = run.get("options")
    _typed(options, dict, f"{where}.options", optional=False)
    for key, types in OPTIONS.items():
        _typed(options.get(key), types, f"{where}.options.{key}")
        if types is list:
            _items(options.get(key), f"{where}.options.{key}", (str, int), optional=False, list_optional=True)
    machine = run.get("machine")
    _typed(machine, dict, f"{where}.machine", optional=False)
    _fields(machine, f"{where}.machine", str, ("gpu", "driver_version", "host", "cpu", "os", "kernel"))
    _fields(machine, f"{where}.machine", (int, float),
            ("gpu_count", "cpu_sockets", "cpu_cores", "cpu_threads", "memory_total_bytes"))
    _items(machine.get("gpus"), f"{where}.machine.gpus", str)
    for index, row in enumerate(_list(run.get("figures"), f"{where}.figures")):
        at = f"{where}.figures[{index}]"
        _typed(row, dict, at, optional=False)
        _fields(row, at, str, ("key",), optional=False)
        _fields(row, at, str, (*FIGURE_TEXT[1:], "protocol"))
        _fields(row, at, (int, float), FIGURE_NUMBERS)
        _items(row.get("trial_values"), f"{at}.trial_values", (int, float))
    seen = set()
    for index, entry in enumerate(_list(run.get("entries"), f"{where}.entries")):
        at = f"{where}.entries[{index}]"
        _validate_entry(entry, at)
        key = (entry["study"], entry.get("gpu"), entry["name"])
        _expect(key not in seen, f"{at}.name", f"{entry['name']!r:.80} of {entry['study']!r:.40} is there twice")
        seen.add(key)


def _validate_entry(entry, at):
    _typed(entry, dict, at, optional=False)
    _fields(entry, at, str, ("study", "name"), optional=False)
    _fields(entry, at, str, ("device", "mode"))
    _fields(entry, at, int, ("gpu",))
    _expect(entry.get("protocol") in (None, *measurements.PROTOCOLS), f"{at}.protocol",
            f"expected one of {', '.join(measurements.PROTOCOLS)} or null, got {entry.get('protocol')!r:.40}")
    for record, where in [(entry, at)] + [(trial, f"{at}.trials[{index}]")
                                           for index, trial in enumerate(_list(entry.get("trials"), f"{at}.trials"))]:
        _typed(record, dict, where, optional=False)
        _status(record.get("status"), results.ENTRY_STATUSES, f"{where}.status")
        _time(record.get("median_s"), f"{where}.median_s")
        _expect((record["median_s"] is not None) == (record["status"] == "ok"), f"{where}.median_s",
                "an ok measurement has a median, any other none")
        if record is not entry:
            _typed(record.get("trial"), int, f"{where}.trial", optional=False)
            _expect(record["trial"] >= 1, f"{where}.trial", f"expected 1 or more, got {record['trial']}")


def validate(document):
    """DigestError naming the first field that breaks the schema."""
    _typed(document, dict, "digest", optional=False)
    _expect(document.get("schema") == SCHEMA, "schema",
            f"expected '{SCHEMA}', got {document.get('schema')!r:.60} (not a gpubench run digest)")
    _expect(document.get("schema_version") in READABLE_VERSIONS, "schema_version",
            f"expected one of {', '.join(map(str, READABLE_VERSIONS))}, got {document.get('schema_version')!r:.40}")
    derived_by = document.get("figures_derived_by")
    _typed(derived_by, dict, "figures_derived_by", optional=False)
    _fields(derived_by, "figures_derived_by", str, ("revision",))
    _fields(derived_by, "figures_derived_by", bool, ("dirty",))
    ids = set()
    for index, run in enumerate(_list(document.get("runs"), "runs")):
        _validate_run(run, f"runs[{index}]")
        _expect(run["id"] not in ids, f"runs[{index}].id", f"run {run['id']!r:.80} is in the digest twice")
        ids.add(run["id"])
    _expect(ids, "runs", "no run")


def _reject_constant(name):
    raise ValueError(f"{name} is not allowed in a digest")


def _parsed(path):
    """The JSON value of a file (gunzipped where its name ends in .gz)."""
    try:
        with outputs.open_text(path) as stream:
            text = stream.read()
    except outputs.READ_ERRORS as error:
        raise DigestError(f"cannot read {path}: {error or type(error).__name__}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise DigestError(f"{path} is not valid JSON (damaged or truncated?): {error}") from None
    except RecursionError:
        raise DigestError(f"{path} nests its JSON too deeply to be a gpubench run digest") from None


def _checked(document, path):
    try:
        validate(document)
    except DigestError as error:
        raise DigestError(f"{path} is not a valid gpubench run digest: {error}") from None
    return document


def load(path):
    """The validated digest document of a file."""
    return _checked(_parsed(path), path)


def runs_in(path):
    """The run digests a path holds: a digest file's runs, or the digest of a results file (or a folder holding
    one), made here. ResultsError or DigestError when neither."""
    if os.path.isdir(path) or os.path.basename(path) in (results.FILE, results.COMPRESSED):
        return [of_document(journal.load(path))]
    document = _parsed(path)
    schema = document.get("schema") if isinstance(document, dict) else None
    if schema == results.SCHEMA:
        return [of_document(journal.load(path))]
    if schema != SCHEMA:
        raise DigestError(f"{path}: schema {schema!r:.60}: neither a gpubench results file ('{results.SCHEMA}') "
                          f"nor a run digest ('{SCHEMA}')")
    return _checked(document, path)["runs"]


ERRORS = (DigestError, results.ResultsError, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser(
        "digest", help="a run's compact data: identity, headline figures, every entry's and trial's median",
        description="Write a run digest of the given runs into one file: per run its id, status, revision, "
                    "machine, the options that shape what it measured, its headline figures (derived again, as "
                    "expected reads them) and per entry its study, name, device, memory mode, protocol, status, median "
                    "and each trial's median (docs/results-schema.md, \"Run digests\"). A few kilobytes where the run's "
                    "results.json has megabytes; expected and noise-model read it as they read the run.")
    parser.add_argument("results", nargs="+", help="results.json (or .json.gz) files, or directories holding one")
    parser.add_argument("--out", required=True, metavar="FILE",
                        help="the digest to write (gzip-compressed where the name ends in .gz, e.g. "
                             "results/aa/<pair>.json.gz)")
    return parser


def execute(args, argv):
    written = write(make(args.results), args.out)
    print(f"digest: {written} ({len(args.results)} run(s))")
    return 0
