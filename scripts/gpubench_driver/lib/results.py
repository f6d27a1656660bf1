"""results.json: the schema, its validation, atomic writing and safe loading."""
import json
import os

from gpubench_driver.lib import gbench, measurements, outputs, resumable, telemetry
from gpubench_driver.lib.schema import (All, Items, Optional, Record, ResultsError, check, child,
                                        expect as _expect, expect_type as _expect_type, has_type as _has_type,
                                        shown as _shown, without_non_finite)

SCHEMA = "gpubench-results"
SCHEMA_VERSION = 1
# "killed": never written by a run; what a reader shows of a "running" run whose driver is gone (journal.load).
RUN_STATUSES = ("running", "complete", "interrupted", "partial", "empty", "killed")
ENTRY_STATUSES = ("ok", "error", "skipped")
TIME_FIELDS = ("median", "min", "max", "q1", "q3", "mean", "stddev", "cv")
_NUMBER = (int, float)
_OPTIONAL_NUMBER = (int, float, type(None))
_OPTIONAL_STR = (str, type(None))
_OPTIONAL_DICT, _OPTIONAL_LIST, _OPTIONAL_BOOL = (dict, type(None)), (list, type(None)), (bool, type(None))
# A study's fields from its --describe beyond the implementations, and their types (or null).
DESCRIBED = {"layers": list, "cudnn": dict, "algorithms": dict, "engine_notes": str, "utilization": dict,
             "epoch_samples": int, "memory_kinds": list, "transparent_hugepage": str, "timed_region": str,
             "workloads": list, "ideal": str, "axis_names": dict, "memory_traffic_note": str, "measurement": dict,
             "operations": list, "kernels": list, "bytes_rule": str, "memory_hierarchy": dict, "chain": str,
             "intensity_rule": str, "primitives": list, "libraries": list, "walkthrough": dict, "blocks_rule": str,
             "placement_rule": str, "launches": list, "elements": int, "busy_rule": str,
             "topology": dict, "axes": list, "points": dict, "rules": dict}
# Per-entry NVML telemetry of the GPU entries (absent in older files, null when not measured): numbers, and
# CLOCK_LIMITED, a boolean.
CLOCK_LIMITED = "clock_limited"
ENTRY_TELEMETRY = tuple(key for key in telemetry.ENTRY_FIELDS if key != CLOCK_LIMITED)
# An entry's fields typed one by one; any other is a number or null (a counter of any name, or a driver's figure).
ENTRY_OTHER_FIELDS = frozenset(("name", "impl", "device", "mode", "precision", "message", "label", "axes", "status",
                                "phase", "time_s", "latency_s", "cold_l2_s", "protocol", "converged", CLOCK_LIMITED,
                                "measurement", "trials", "choices_varied"))
# Bounds no run comes near, so that a hostile value is refused at load, not overflowing in the report: one
# call's time from a picosecond to a day, numbers up to 1e30, text up to LONGEST_TEXT (longer is cut at load).
SHORTEST_TIME_S = 1e-12
LONGEST_TIME_S = 86400.0
LARGEST_NUMBER = 1e30
LONGEST_TEXT = 4000


def new_document(run):
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "run": run, "machine": {}, "software": {},
            "gpu": {"available": False, "reason": "not determined yet"}, "warnings": [], "studies": {},
            "references": None, "findings": None}  # findings: across the studies (stages/across.py)


def new_study(description, sizes, batches=None):
    return {**{key: description.get(key) for key in ("precision", "precisions", "default_sizes")}, "sizes": sizes,
            "default_batches": description.get("default_batches"), "batches": batches,
            "implementations": description.get("implementations", []),
            **{key: _described(description, key) for key in DESCRIBED},  # None where --describe lacks it
            "entries": [], "invocations": [], "derived": {}}


def _described(description, key):
    """A --describe field of the type DESCRIBED gives it, else None (an older binary's other shape of it)."""
    value = description.get(key)
    return value if _has_type(value, DESCRIBED[key]) else None


def _expect_size(value, path):
    """An n or a batch: a positive integer a study binary takes (or null)."""
    _expect(value is None or _has_type(value, int) and 1 <= value <= gbench.LARGEST_SIZE, path,
            f"{_shown(value)} is out of range: expected a positive integer of at most {gbench.LARGEST_SIZE}")


def _expect_time(value, path, shortest=SHORTEST_TIME_S):
    """Seconds of one call (or null)."""
    _expect(value is None or shortest <= value <= LONGEST_TIME_S, path,
            f"{_shown(value)} is out of range: expected seconds from {shortest:g} to {LONGEST_TIME_S:g} (a day)")


def _one_of(allowed, absent_allowed=False):
    def expect_one(value, path):
        _expect(value in allowed or absent_allowed and value is None, path,
                f"expected one of {', '.join(allowed)}, got {value!r}")
    return expect_one


def _optional(*keys, types=_OPTIONAL_NUMBER):
    return {key: types for key in keys}


def _rows(fields):
    return Items(Record(fields, null_refused=True), types=list)


def _expect_times_in_range(times, path):
    """The figures of a typed time summary (or null): times of one call, spreads of zero or more."""
    times = times or {}
    for key in ("median", "min", "max", "q1", "q3", "mean"):
        _expect_time(times.get(key), f"{path}.{key}")
    _expect_time(times.get("stddev"), f"{path}.stddev", shortest=0.0)
    _expect(times.get("cv") is None or times["cv"] >= 0, f"{path}.cv",
            f"expected a spread of zero or more, got {_shown(times.get('cv'))}")


def _expect_over(value, path):
    _expect(value in (None, "trials"), path, f"expected 'trials' or nothing, got {value!r}")


def _expect_status(record, path):
    """An entry's or a trial's status, and for an ok one a median time."""
    _one_of(ENTRY_STATUSES)(record.get("status"), f"{path}.status")
    if record["status"] == "ok":
        _expect_type(record.get("time_s"), dict, f"{path}.time_s")
        _expect_type(record["time_s"].get("median"), _NUMBER, f"{path}.time_s.median")


def _expect_entry_numbers(entry, path):
    """Fields not typed by name: numbers or null (counters, driver figures); rates and counts not negative."""
    for key, value in entry.items():
        if key not in ENTRY_OTHER_FIELDS:
            _expect_type(value, _OPTIONAL_NUMBER, f"{path}.{key}")
    for key in ("flop_per_s", "flop", "bytes_transferred"):
        _expect(entry.get(key) is None or entry[key] >= 0, f"{path}.{key}",
                f"expected zero or more, got {entry.get(key)}")


def _expect_once(entries, path):
    """An entry once per study (per GPU in a gathered run): a twin would be read by one command, it by
    another."""
    first_index = {}
    for index, entry in enumerate(entries):
        key = (entry.get("gpu"), entry["name"])
        _expect(key not in first_index, f"{path}[{index}].name",
                f"{_shown(entry['name'])} is also entries[{first_index.get(key)}]"
                f"{'' if entry.get('gpu') is None else ' of the same GPU'}: an entry is in a study once")
        first_index[key] = index


def _expect_samples(record, path):
    check(record.get("samples", []), Items(Record(_SAMPLE, types=dict), types=list), f"{path}.samples")


def _whole(validate_record):
    return lambda value, path: validate_record(value)


# --- the schema ------------------------------------------------------------------------------
_SIZE = All(_OPTIONAL_NUMBER, _expect_size)
_TIME_SAMPLES = Items(All(_NUMBER, _expect_time), types=list)
_TIMES = Optional(All(Record({**_optional(*TIME_FIELDS), "over": _expect_over, "samples": _TIME_SAMPLES}),
                      _expect_times_in_range))
_MEASURED = All(dict, _expect_status, Record({key: _TIMES for key in ("time_s", "latency_s", "cold_l2_s")}))
# axes: absent in older files; gpu: in a gathered run of every GPU of a node (run --gpus), the nvidia-smi
# index of the entry's GPU, absent otherwise; protocol and converged: the steady-state loop's (absent before).
_ENTRY = All(_MEASURED, _expect_entry_numbers, Record({
    "name": str,
    **_optional("impl", "device", "mode", "precision", "message", "label", "phase", types=_OPTIONAL_STR),
    "axes": Items((str, int, float, type(None)), types=_OPTIONAL_DICT),
    **_optional("measurement", "choices_varied", types=_OPTIONAL_DICT), "gpu": (int, type(None)),
    CLOCK_LIMITED: _OPTIONAL_BOOL, "n": _SIZE, "batch": _SIZE,  # on log axes and into logarithms
    "protocol": _one_of(measurements.PROTOCOLS, absent_allowed=True), "converged": _OPTIONAL_BOOL,
    "trials": Items(All(_MEASURED, Record({"trial": _NUMBER})))}))  # each trial's own figures (trials.py)
_LAYER_NUMBERS = ("n", "in_channels", "out_channels", "kernel", "stride", "padding", "height", "width",
                  "out_height", "out_width", "flop_per_sample")
_SPREAD = _optional("min", "median", "max")  # NaN is written null
_SAMPLE = {**_optional("t_s", *telemetry.SAMPLE_KEYS), "throttle_reasons": _OPTIONAL_LIST}
_TELEMETRY = All(Record({"interval_s": _OPTIONAL_NUMBER, "note": _OPTIONAL_STR, "summary": Record({
    **_optional("samples", "max_power_w", "max_temperature_c", "throttled_fraction"),
    "throttle_reasons": Items(str),
    **{key: Record(_SPREAD) for key in ("sm_clock_mhz", "busy_sm_clock_mhz", "mem_clock_mhz")}}),
    "source": _OPTIONAL_STR}, types=dict), _expect_samples)
_STUDY = Record({
    "implementations": Items(Record({"id": str, "device": _OPTIONAL_STR, "modes": Items(str),
                                     "precisions": Items(str), "max_size": _OPTIONAL_NUMBER,
                                     "cap_reason": _OPTIONAL_STR}), types=list),
    "entries": All(Items(_ENTRY, types=list), _expect_once), "invocations": list, "derived": dict,
    # absent in files written before the batch studies
    **{key: (types, type(None)) for key, types in DESCRIBED.items()},
    "axis_names": Record(_optional(*gbench.NAMED_SLOTS, types=_OPTIONAL_STR)),
    "axes": Items(Record({"name": str, "slot": str, "unit": _OPTIONAL_STR, "values": _OPTIONAL_LIST})),
    "rules": Record({"counters": _OPTIONAL_DICT}),
    "precisions": Items(Record({"id": str, **_optional("inputs", "accumulate", "output", types=_OPTIONAL_STR),
                                **_optional("input_bytes", "output_bytes")})),
    "layers": Items(Record({"role": _OPTIONAL_STR, **_optional(*_LAYER_NUMBERS)})),  # the roofline reads them
    **{key: Items(All((int, float), _expect_size)) for key in ("sizes", "batches")},
    "telemetry": Optional(_TELEMETRY)}, types=dict)

# The fields of the machine, the software and the references that the report reads: typed here,
# so a hostile or damaged file is refused with the field's name, never half-rendered.
_GPU_TEXT = ("name", "uuid", "pci.bus_id", "driver_version", "ecc.mode.current")
_GPU_NUMBERS = ("memory.total", "clocks.max.sm", "clocks.max.memory", "clocks.sm", "power.limit",
                "pcie.link.gen.max", "pcie.link.gen.current", "pcie.link.width.max", "pcie.link.width.current",
                "temperature.gpu", "numa_node", "ecc.errors.uncorrected.volatile.total")
_MACHINE = Record({"cpu": Record({"model": _OPTIONAL_STR, **_optional("sockets", "cores", "threads")}),
                   "gpus": Items(Record({**_optional(*_GPU_TEXT, types=_OPTIONAL_STR),
                                         **_optional(*_GPU_NUMBERS)}, null_refused=True)),
                   "memory_total_bytes": _OPTIONAL_NUMBER,
                   **_optional("os", "kernel", "transparent_hugepages", types=_OPTIONAL_STR),
                   "gpu_processes": _OPTIONAL_LIST}, types=dict)
_SOFTWARE = Record({
    "openblas": Record({**_optional("version", "core", types=_OPTIONAL_STR), "threads": _OPTIONAL_NUMBER}),
    # affinity: absent in runs from before the binaries recorded their affinity
    "gpubench_env": Record({"cuda": Record({"devices": Items(dict)}), "affinity": Record({
        **_optional("process_cpus", "initial_thread_cpus"),
        **_optional("omp_proc_bind", "omp_places", "openmp_proc_bind", types=_OPTIONAL_STR),
        "openmp_places": _OPTIONAL_NUMBER, "openmp_thread_cpus": _OPTIONAL_LIST})})}, types=dict)
_REFERENCE_RESULT = Record({
    **_optional("library", "version", "device", "dtype", "layout", "memory", "direction",
                types=_OPTIONAL_STR),
    "n": _SIZE, "batch": _SIZE,
    "time_s": All(Record(_optional(*TIME_FIELDS)), _expect_times_in_range), "flop_per_s": _OPTIONAL_NUMBER,
    "blas": (dict, str, type(None)),
    # How a reference result was measured (scripts/reference_timing.record; absent in files before it).
    "measurement": Record({"protocol": _OPTIONAL_STR, "burst_s": _OPTIONAL_NUMBER, "settled": _OPTIONAL_BOOL,
                           "warmup_s": _OPTIONAL_NUMBER, "warmup_window_per_call_s": _OPTIONAL_LIST,
                           **_optional("calls_per_batch", "calls_per_sample"), "stop_reason": _OPTIONAL_STR,
                           "converged": _OPTIONAL_BOOL, **_optional("noise", "measured_s")})},
                           null_refused=True)
_REFERENCE_RUN = Record({**_optional("note", "python", types=_OPTIONAL_STR),
                         "results": Items(_REFERENCE_RESULT), "notes": Items(str)}, null_refused=True)
_RUN = Record({"id": str, "started": str, "finished": _OPTIONAL_STR, "status": _one_of(RUN_STATUSES),
               "command_line": list, "options": dict,
               "git": Record({"revision": _OPTIONAL_STR, "dirty": _OPTIONAL_BOOL}),
               "like": Record({"path": _OPTIONAL_STR, "run_id": _OPTIONAL_STR,
                               "differences": _OPTIONAL_LIST}),
               "resumed": _whole(resumable.validate), "against": _whole(resumable.validate_against)},
              types=dict)
# The findings across the studies (stages/across.py), rewritten by every report: typed here for the tools
# that read them from a file (compare).
_WHERE = {"study": str, "impl": str, "mode": str, "precision": str, "n": _NUMBER, "batch": _OPTIONAL_NUMBER}
_FINDINGS = Record({
    "roofline": Record({
        # The memory roof: the stream study's best HBM rate, or (without it) twice a device-to-device copy's.
        "bandwidth": Optional(Record({
            "study": str, "impl": str, "mode": str, "precision": str, "n": _NUMBER, "median_s": _NUMBER,
            "copy_bytes_per_s": _OPTIONAL_NUMBER, "bytes_per_s": _NUMBER, "bytes_per_call": _OPTIONAL_NUMBER,
            "rule": str, "fraction_of_theoretical": _OPTIONAL_NUMBER})),
        "memory_roof_note": _OPTIONAL_STR, "traffic_models": Items(str, types=dict),
        "peaks": _rows({**_WHERE, "flop_per_s": _NUMBER}),
        "points": _rows({**_WHERE, "flop_per_s": _NUMBER, "flop": _NUMBER, "bytes": _NUMBER,
                         "intensity": _NUMBER}),
        "not_placed": _rows({"study": str, "impl": str, "mode": str, "precision": str, "entries": _NUMBER,
                             "reason": str})}, types=dict),
    "fraction_of_peak": _rows({**_WHERE, "flop_per_s": _NUMBER, "peak_flop_per_s": _NUMBER,
                               "fraction_of_peak": _NUMBER}),
    "energy": _rows({**_WHERE, "energy_j_per_op": _NUMBER, **_optional(
        "flop", "flop_per_joule", "items", "call_power_w", "power_w", "sm_clock_mhz")}),
    "clock_limited": _rows({**_WHERE, "name": str, "power_limited_fraction": _OPTIONAL_NUMBER,
                            "thermal_limited_fraction": _OPTIONAL_NUMBER, "sm_clock_mhz": _OPTIONAL_NUMBER,
                            "telemetry_samples": _OPTIONAL_NUMBER}),
    "telemetry": Record({"entries": _NUMBER, "notes": _rows({"study": str, "note": str})}, types=dict)})
_DOCUMENT = Record({"run": _RUN, "machine": _MACHINE, "software": _SOFTWARE,
                    "gpu": Record({"available": bool}, types=dict), "warnings": Items(str, types=list),
                    "studies": Items(_STUDY, types=dict),
                    "references": Items(_REFERENCE_RUN, types=_OPTIONAL_DICT),
                    "findings": Optional(_FINDINGS)})


def validate(document):
    """Raise ResultsError naming the first field that breaks the schema."""
    _expect(isinstance(document, dict), "results", "expected a JSON object")
    _expect(document.get("schema") == SCHEMA, "schema",
            f"expected '{SCHEMA}', got {document.get('schema')!r} (not a gpubench results file)")
    _expect(document.get("schema_version") == SCHEMA_VERSION, "schema_version",
            f"expected {SCHEMA_VERSION}, got {document.get('schema_version')!r}")
    for key in ("run", "machine", "software", "gpu", "warnings", "studies", "references"):
        _expect(key in document, key, "missing")
    check(document, _DOCUMENT, "")


# --- writing and reading --------------------------------------------------------
def write(document, path, checked=True):
    """Validate unless not `checked` (the saves after every size), then replace the file atomically."""
    clean = without_non_finite(document)
    if checked:
        validate(clean)
    with outputs.replacing(path) as stream:
        # One string, compact: json.dump streams through the pure-Python encoder, twice the time of dumps
        stream.write(json.dumps(clean, separators=(",", ":"), allow_nan=False) + "\n")
    return clean


def _tidy(document):
    """Cuts text beyond LONGEST_TEXT; (path, value) of the first number beyond LARGEST_NUMBER, or None.
    Iterative: a file may nest as deep as the JSON reader allows."""
    found = None
    pending = [(document, "")]
    while pending:
        node, path = pending.pop()
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(key, str) and len(key) > LONGEST_TEXT:
                raise ResultsError(f"{path or 'results'}: a key of {len(key)} characters")
            if isinstance(value, (dict, list)):
                pending.append((value, child(path, key)))
            elif isinstance(value, str) and len(value) > LONGEST_TEXT:
                node[key] = f"{value[:LONGEST_TEXT]} [cut from {len(value)} characters]"
            elif (found is None and isinstance(value, (int, float)) and not isinstance(value, bool)
                  and not -LARGEST_NUMBER <= value <= LARGEST_NUMBER):  # NaN fails both comparisons too
                found = (child(path, key), value)
    return found


def checked(document, source):
    """The document, long text cut, once valid with every number within LARGEST_NUMBER; else ResultsError."""
    try:
        # Text is cut before validation, whose messages quote values; a number beyond the bounds is
        # refused after it, so that a field with a range of its own is refused with that range.
        out_of_range = _tidy(document) if isinstance(document, (dict, list)) else None
        validate(document)
        if out_of_range:
            where, value = out_of_range
            raise ResultsError(f"{where}: {_shown(value)} is out of range: no run records a number "
                               f"beyond {LARGEST_NUMBER:g}")
    except ResultsError as error:
        raise ResultsError(f"{source} is not a valid gpubench results file: {error}") from None
    return document


def _reject_constant(name):
    raise ValueError(f"{name} is not allowed in a results file")


# A results file as the run writes it, and the same compressed (the curated runs kept in the repository
# and the tests' fixtures: an eighth of the size). Every command reads either, through load.
FILE = "results.json"
COMPRESSED = FILE + ".gz"


def file_in(directory):
    """The results file a folder holds: results.json, else results.json.gz; None when it holds neither."""
    for name in (FILE, COMPRESSED):
        if os.path.isfile(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return None


def load(path):
    """The validated document of results.json or results.json.gz, or of a folder holding one (results.json
    first)."""
    if os.path.isdir(path):
        path = file_in(path) or os.path.join(path, FILE)
    try:
        with outputs.open_text(path) as stream:
            text = stream.read()
    except outputs.READ_ERRORS as error:
        raise ResultsError(f"cannot read {path}: {error or type(error).__name__}") from None
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise ResultsError(f"{path} is not valid JSON (damaged or truncated?): {error}") from None
    except RecursionError:
        raise ResultsError(f"{path} nests its JSON too deeply to be a gpubench results file") from None
    return checked(document, path)
