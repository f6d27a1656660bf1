"""results.json: the schema, its validation, atomic writing and safe loading."""
import json
import os

from gpubench_driver.lib import gbench, measurements, outputs, resumable, telemetry
from gpubench_driver.lib.schema import (ResultsError, expect as _expect, expect_fields as _expect_fields,
                                        expect_type as _expect_type, has_type as _has_type, shown as _shown,
                                        without_non_finite)

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


def _expect_items(values, types, path):  # of a list, or of null
    for index, value in enumerate(values or []):
        _expect_type(value, types, f"{path}[{index}]")


def _expect_each(records, fields, path):  # of a list, or of null: objects or null
    for index, record in enumerate(records or []):
        _expect_fields(record, fields, f"{path}[{index}]")


def _expect_object(record, fields, path):  # not null
    _expect_fields(record, fields, path)
    _expect(record is not None, path, "expected an object, got null")


def _expect_one_of(value, allowed, path, absent_allowed=False):
    _expect(value in allowed or absent_allowed and value is None, path,
            f"expected one of {', '.join(allowed)}, got {value!r}")


def _optional(*keys, types=_OPTIONAL_NUMBER):
    return {key: types for key in keys}


def validate(document):
    """Raise ResultsError naming the first field that breaks the schema."""
    _expect(isinstance(document, dict), "results", "expected a JSON object")
    _expect(document.get("schema") == SCHEMA, "schema",
            f"expected '{SCHEMA}', got {document.get('schema')!r} (not a gpubench results file)")
    _expect(document.get("schema_version") == SCHEMA_VERSION, "schema_version",
            f"expected {SCHEMA_VERSION}, got {document.get('schema_version')!r}")
    for key, types in (("run", dict), ("machine", dict), ("software", dict), ("gpu", dict),
                       ("warnings", list), ("studies", dict), ("references", _OPTIONAL_DICT)):
        _expect(key in document, key, "missing")
        _expect_type(document[key], types, key)
    _validate_run(document["run"])
    _validate_machine(document["machine"])
    _validate_software(document["software"])
    _expect_type(document["gpu"].get("available"), bool, "gpu.available")
    for name, run in (document["references"] or {}).items():
        _validate_reference_run(run, f"references.{name}")
    _expect_items(document["warnings"], str, "warnings")
    for name, study in document["studies"].items():
        _validate_study(study, f"studies.{name}")
    _validate_findings(document.get("findings"))


def _validate_run(run):
    _expect_fields(run, {"id": str, "started": str, "finished": _OPTIONAL_STR}, "run")
    _expect_one_of(run.get("status"), RUN_STATUSES, "run.status")
    _expect_fields(run, {"command_line": list, "options": dict}, "run")
    _expect_fields(run.get("git"), {"revision": _OPTIONAL_STR, "dirty": _OPTIONAL_BOOL}, "run.git")
    _expect_fields(run.get("like"), {"path": _OPTIONAL_STR, "run_id": _OPTIONAL_STR,
                                     "differences": _OPTIONAL_LIST}, "run.like")
    resumable.validate(run.get("resumed"))  # run --resume's records
    resumable.validate_against(run.get("against"))  # run --against's passes


# The fields of the machine, the software and the references that the report reads: typed here,
# so a hostile or damaged file is refused with the field's name, never half-rendered.
_MACHINE = {"cpu": _OPTIONAL_DICT, "gpus": _OPTIONAL_LIST, "memory_total_bytes": _OPTIONAL_NUMBER,
            **_optional("os", "kernel", "transparent_hugepages", types=_OPTIONAL_STR), "gpu_processes": _OPTIONAL_LIST}
_CPU = {"model": _OPTIONAL_STR, **_optional("sockets", "cores", "threads")}
_GPU_TEXT = ("name", "uuid", "pci.bus_id", "driver_version", "ecc.mode.current")
_GPU_NUMBERS = ("memory.total", "clocks.max.sm", "clocks.max.memory", "clocks.sm", "power.limit",
                "pcie.link.gen.max", "pcie.link.gen.current", "pcie.link.width.max", "pcie.link.width.current",
                "temperature.gpu", "numa_node", "ecc.errors.uncorrected.volatile.total")
_REFERENCE_RESULT = {**_optional("library", "version", "device", "dtype", "layout", "memory", "direction",
                                   types=_OPTIONAL_STR), **_optional("n", "batch"), "time_s": _OPTIONAL_DICT,
                     "flop_per_s": _OPTIONAL_NUMBER, "blas": (dict, str, type(None)), "measurement": _OPTIONAL_DICT}
# How a reference result was measured (scripts/reference_timing.record; absent in files written before it).
_REFERENCE_MEASUREMENT = {"protocol": _OPTIONAL_STR, "burst_s": _OPTIONAL_NUMBER, "settled": _OPTIONAL_BOOL,
                          "warmup_s": _OPTIONAL_NUMBER, "warmup_window_per_call_s": _OPTIONAL_LIST,
                          **_optional("calls_per_batch", "calls_per_sample"), "stop_reason": _OPTIONAL_STR,
                          "converged": _OPTIONAL_BOOL, **_optional("noise", "measured_s")}


def _validate_machine(machine):
    _expect_fields(machine, _MACHINE, "machine")
    _expect_fields(machine.get("cpu"), _CPU, "machine.cpu")
    for index, gpu in enumerate(machine.get("gpus") or []):
        _expect_object(gpu, {**_optional(*_GPU_TEXT, types=_OPTIONAL_STR), **_optional(*_GPU_NUMBERS)},
                       f"machine.gpus[{index}]")


def _validate_software(software):
    _expect_fields(software, {"openblas": _OPTIONAL_DICT, "gpubench_env": _OPTIONAL_DICT}, "software")
    _expect_fields(software.get("openblas"), {**_optional("version", "core", types=_OPTIONAL_STR),
                                              "threads": _OPTIONAL_NUMBER}, "software.openblas")
    env = software.get("gpubench_env") or {}
    _expect_fields(env.get("cuda"), {"devices": _OPTIONAL_LIST}, "software.gpubench_env.cuda")
    # Absent in runs from before the binaries recorded their affinity.
    _expect_fields(env, {"affinity": _OPTIONAL_DICT}, "software.gpubench_env")
    _expect_fields(env.get("affinity"), {
        **_optional("process_cpus", "initial_thread_cpus"),
        **_optional("omp_proc_bind", "omp_places", "openmp_proc_bind", types=_OPTIONAL_STR),
        "openmp_places": _OPTIONAL_NUMBER, "openmp_thread_cpus": _OPTIONAL_LIST}, "software.gpubench_env.affinity")
    _expect_items((env.get("cuda") or {}).get("devices"), dict, "software.gpubench_env.cuda.devices")


def _validate_reference_run(run, path):
    _expect_object(run, {**_optional("note", "python", types=_OPTIONAL_STR),
                         **_optional("results", "notes", types=_OPTIONAL_LIST)}, path)
    _expect_items(run.get("notes"), str, f"{path}.notes")
    for index, result in enumerate(run.get("results") or []):
        where = f"{path}.results[{index}]"
        _expect_object(result, _REFERENCE_RESULT, where)
        _expect_fields(result.get("time_s"), _optional(*TIME_FIELDS), f"{where}.time_s")
        for key in ("n", "batch"):
            _expect_size(result.get(key), f"{where}.{key}")
        _expect_times_in_range(result.get("time_s"), f"{where}.time_s")
        _expect_fields(result.get("measurement"), _REFERENCE_MEASUREMENT, f"{where}.measurement")


def _validate_study(study, path):
    _expect_type(study, dict, path)
    _expect_fields(study, {"implementations": list, "entries": list, "invocations": list, "derived": dict}, path)
    # absent in files written before the batch studies
    _expect_fields(study, {key: (types, type(None)) for key, types in DESCRIBED.items()}, path)
    _expect_fields(study.get("axis_names"), _optional(*gbench.NAMED_SLOTS, types=_OPTIONAL_STR), f"{path}.axis_names")
    _expect_each(study.get("axes"), {"name": str, "slot": str, "unit": _OPTIONAL_STR, "values": _OPTIONAL_LIST},
                 f"{path}.axes")  # --describe's axes (absent in older files)
    _expect_fields(study.get("rules"), {"counters": _OPTIONAL_DICT}, f"{path}.rules")
    for index, impl in enumerate(study["implementations"]):
        where = f"{path}.implementations[{index}]"
        _expect_fields(impl, _IMPLEMENTATION, where)
        for key in ("modes", "precisions"):
            _expect_items(impl.get(key), str, f"{where}.{key}")
    _expect_type(study.get("precisions"), _OPTIONAL_LIST, f"{path}.precisions")
    _expect_each(study.get("precisions"), _PRECISION, f"{path}.precisions")
    # the roofline reads the layers' shapes
    _expect_each(study.get("layers"), {"role": _OPTIONAL_STR, **_optional(*_LAYER_NUMBERS)}, f"{path}.layers")
    for key in ("sizes", "batches"):
        _expect_type(study.get(key), _OPTIONAL_LIST, f"{path}.{key}")
        for index, value in enumerate(study.get(key) or []):
            _expect_type(value, (int, float), f"{path}.{key}[{index}]")
            _expect_size(value, f"{path}.{key}[{index}]")
    # An entry is measured once per run (its trials inside it), or in a gathered run of every GPU of a
    # node once per GPU: a second copy would be read by one command and its twin by another.
    first_index = {}
    for index, entry in enumerate(study["entries"]):
        _validate_entry(entry, f"{path}.entries[{index}]")
        key = (entry.get("gpu"), entry["name"])
        _expect(key not in first_index, f"{path}.entries[{index}].name",
                f"{_shown(entry['name'])} is also entries[{first_index.get(key)}]"
                f"{'' if entry.get('gpu') is None else ' of the same GPU'}: an entry is in a study once")
        first_index[key] = index
    if study.get("telemetry") is not None:
        _validate_telemetry(study["telemetry"], f"{path}.telemetry")


_IMPLEMENTATION = {"id": str, "device": _OPTIONAL_STR, **_optional("modes", "precisions", types=_OPTIONAL_LIST),
                   "max_size": _OPTIONAL_NUMBER, "cap_reason": _OPTIONAL_STR}
_PRECISION = {"id": str, **_optional("inputs", "accumulate", "output", types=_OPTIONAL_STR),
              **_optional("input_bytes", "output_bytes")}
# axes: absent in older files; gpu: in a gathered run of every GPU of a node (run --gpus), the nvidia-smi index
# of the entry's GPU, absent otherwise.
_ENTRY = {"name": str, **_optional("impl", "device", "mode", "precision", "message", "label", "phase",
                                   types=_OPTIONAL_STR),
          **_optional("axes", "measurement", "choices_varied", types=_OPTIONAL_DICT), "gpu": (int, type(None))}
_LAYER_NUMBERS = ("n", "in_channels", "out_channels", "kernel", "stride", "padding", "height", "width", "out_height",
                  "out_width", "flop_per_sample")
_SPREAD = _optional("min", "median", "max")  # NaN is written null
_TELEMETRY_SUMMARY = {**_optional("samples", "max_power_w", "max_temperature_c", "throttled_fraction"),
                      "throttle_reasons": _OPTIONAL_LIST}
_SPREADS = ("sm_clock_mhz", "busy_sm_clock_mhz", "mem_clock_mhz")
_SAMPLE = {**_optional("t_s", *telemetry.SAMPLE_KEYS), "throttle_reasons": _OPTIONAL_LIST}


def _validate_telemetry(record, path):
    _expect_type(record, dict, path)
    _expect_fields(record, {"interval_s": _OPTIONAL_NUMBER, "note": _OPTIONAL_STR, "summary": _OPTIONAL_DICT,
                            "source": _OPTIONAL_STR}, path)
    summary = record.get("summary")
    _expect_fields(summary, {**_TELEMETRY_SUMMARY, **{key: _OPTIONAL_DICT for key in _SPREADS}},
                   f"{path}.summary")
    for key in _SPREADS:
        _expect_fields((summary or {}).get(key), _SPREAD, f"{path}.summary.{key}")
    _expect_items((summary or {}).get("throttle_reasons"), str, f"{path}.summary.throttle_reasons")
    _expect_type(record.get("samples", []), list, f"{path}.samples")
    for index, sample in enumerate(record.get("samples", [])):
        _expect_type(sample, dict, f"{path}.samples[{index}]")
        _expect_fields(sample, _SAMPLE, f"{path}.samples[{index}]")


def _validate_measured(record, path):
    """What an entry and each of its trials share: a status, and for an ok one a median time; the
    time summaries (headline, latency, cold L2) well formed."""
    _expect_type(record, dict, path)
    _expect_one_of(record.get("status"), ENTRY_STATUSES, f"{path}.status")
    if record["status"] == "ok":
        _expect_type(record.get("time_s"), dict, f"{path}.time_s")
        _expect_type(record["time_s"].get("median"), _NUMBER, f"{path}.time_s.median")
    for key in ("time_s", "latency_s", "cold_l2_s"):
        _validate_times(record.get(key), f"{path}.{key}")


def _validate_entry(entry, path):
    _validate_measured(entry, path)
    _expect_fields(entry, _ENTRY, path)
    for name, value in (entry.get("axes") or {}).items():
        _expect_type(value, (str, int, float, type(None)), f"{path}.axes.{name}")
    for key, value in entry.items():
        if key not in ENTRY_OTHER_FIELDS:
            _expect_type(value, _OPTIONAL_NUMBER, f"{path}.{key}")
    for key in ("flop_per_s", "flop", "bytes_transferred"):  # rates and counts: a negative one is damage
        _expect(entry.get(key) is None or entry[key] >= 0, f"{path}.{key}",
                f"expected zero or more, got {entry.get(key)}")
    _expect_type(entry.get(CLOCK_LIMITED), _OPTIONAL_BOOL, f"{path}.{CLOCK_LIMITED}")
    for key in ("n", "batch"):  # sizes and batches go on log axes and into logarithms
        _expect_size(entry.get(key), f"{path}.{key}")
    # The steady-state loop's fields (absent in files written before it).
    _expect_one_of(entry.get("protocol"), measurements.PROTOCOLS, f"{path}.protocol", absent_allowed=True)
    _expect_type(entry.get("converged"), _OPTIONAL_BOOL, f"{path}.converged")
    _validate_trials(entry.get("trials"), f"{path}.trials")


def _validate_trials(records, path):
    """Each trial's own figures (trials.py), absent for an entry measured once."""
    _expect_type(records, _OPTIONAL_LIST, path)
    for index, record in enumerate(records or []):
        _validate_measured(record, f"{path}[{index}]")
        _expect_type(record.get("trial"), _NUMBER, f"{path}[{index}].trial")


def _validate_times(times, path):
    """A summary of positive seconds (stats.summarize), or None."""
    _expect_type(times, _OPTIONAL_DICT, path)
    if not isinstance(times, dict):
        return
    _expect_fields(times, _optional(*TIME_FIELDS), path)
    _expect(times.get("over") in (None, "trials"), f"{path}.over",
            f"expected 'trials' or nothing, got {times.get('over')!r}")
    _expect_type(times.get("samples"), list, f"{path}.samples")
    for index, sample in enumerate(times["samples"]):
        _expect_type(sample, _NUMBER, f"{path}.samples[{index}]")
        _expect_time(sample, f"{path}.samples[{index}]")
    _expect_times_in_range(times, path)


def _expect_times_in_range(times, path):
    """The figures of a typed time summary (or null): times of one call, spreads of zero or more."""
    times = times or {}
    for key in ("median", "min", "max", "q1", "q3", "mean"):
        _expect_time(times.get(key), f"{path}.{key}")
    _expect_time(times.get("stddev"), f"{path}.stddev", shortest=0.0)
    _expect(times.get("cv") is None or times["cv"] >= 0, f"{path}.cv",
            f"expected a spread of zero or more, got {_shown(times.get('cv'))}")


# The findings across the studies (stages/across.py), rewritten by every report: typed here for the tools
# that read them from a file (compare).
_WHERE = {"study": str, "impl": str, "mode": str, "precision": str, "n": _NUMBER, "batch": _OPTIONAL_NUMBER}
_FINDING_ROWS = {
    "roofline.peaks": {**_WHERE, "flop_per_s": _NUMBER},
    "roofline.points": {**_WHERE, "flop_per_s": _NUMBER, "flop": _NUMBER, "bytes": _NUMBER, "intensity": _NUMBER},
    "roofline.not_placed": {"study": str, "impl": str, "mode": str, "precision": str, "entries": _NUMBER,
                            "reason": str},
    "fraction_of_peak": {**_WHERE, "flop_per_s": _NUMBER, "peak_flop_per_s": _NUMBER, "fraction_of_peak": _NUMBER},
    "energy": {**_WHERE, "energy_j_per_op": _NUMBER, "flop": _OPTIONAL_NUMBER, "flop_per_joule": _OPTIONAL_NUMBER,
               "items": _OPTIONAL_NUMBER, "call_power_w": _OPTIONAL_NUMBER, "power_w": _OPTIONAL_NUMBER,
               "sm_clock_mhz": _OPTIONAL_NUMBER},
    "clock_limited": {**_WHERE, "name": str, "power_limited_fraction": _OPTIONAL_NUMBER,
                      "thermal_limited_fraction": _OPTIONAL_NUMBER, "sm_clock_mhz": _OPTIONAL_NUMBER,
                      "telemetry_samples": _OPTIONAL_NUMBER},
    "telemetry.notes": {"study": str, "note": str},
}
# The memory roof: the stream study's best HBM rate, or (without it) twice a device-to-device copy's.
_BANDWIDTH = {"study": str, "impl": str, "mode": str, "precision": str, "n": _NUMBER, "median_s": _NUMBER,
              "copy_bytes_per_s": _OPTIONAL_NUMBER, "bytes_per_s": _NUMBER, "bytes_per_call": _OPTIONAL_NUMBER,
              "rule": str, "fraction_of_theoretical": _OPTIONAL_NUMBER}


def _validate_findings(findings):
    _expect_type(findings, _OPTIONAL_DICT, "findings")
    if findings is None:
        return
    _expect_fields(findings, {"roofline": dict, "fraction_of_peak": list, "energy": list, "clock_limited": list,
                              "telemetry": dict}, "findings")
    roofline, telemetry_found = findings["roofline"], findings["telemetry"]
    _expect_fields(roofline, {"bandwidth": _OPTIONAL_DICT, "memory_roof_note": _OPTIONAL_STR,
                              "traffic_models": dict, "peaks": list, "points": list, "not_placed": list},
                   "findings.roofline")
    if roofline["bandwidth"] is not None:
        _expect_fields(roofline["bandwidth"], _BANDWIDTH, "findings.roofline.bandwidth")
    for name, text in roofline["traffic_models"].items():
        _expect_type(text, str, f"findings.roofline.traffic_models.{name}")
    _expect_fields(telemetry_found, {"entries": _NUMBER, "notes": list}, "findings.telemetry")
    for where, fields in _FINDING_ROWS.items():
        parent, _, key = where.rpartition(".")
        rows = (findings[parent] if parent else findings)[key]
        for index, row in enumerate(rows):
            _expect_object(row, fields, f"findings.{where}[{index}]")


# --- writing and reading --------------------------------------------------------
def write(document, path, checked=True):
    """Validate (`checked`: the run's saves after every size skip it, 0.4 s of a 14 MB file), then replace the file
    atomically so a crash never leaves half a file."""
    clean = without_non_finite(document)
    if checked:
        validate(clean)
    with outputs.replacing(path) as stream:
        # One string, compact: json.dump streams through the pure-Python encoder, twice the time of dumps
        stream.write(json.dumps(clean, separators=(",", ":"), allow_nan=False) + "\n")
    return clean


def _child_path(path, key):
    return f"{path}[{key}]" if not isinstance(key, str) else f"{path}.{key}" if path else key


def _tidy(document):
    """Cuts text longer than LONGEST_TEXT (a 200 MB warning would be a 200 MB summary) and finds a
    number beyond LARGEST_NUMBER (or infinite: JSON's 1e400 is read as inf): (its path, its value),
    or None. Iterative: a file may nest as deep as the JSON reader allows."""
    found = None
    pending = [(document, "")]
    while pending:
        node, path = pending.pop()
        for key, value in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(key, str) and len(key) > LONGEST_TEXT:
                raise ResultsError(f"{path or 'results'}: a key of {len(key)} characters")
            if isinstance(value, (dict, list)):
                pending.append((value, _child_path(path, key)))
            elif isinstance(value, str) and len(value) > LONGEST_TEXT:
                node[key] = f"{value[:LONGEST_TEXT]} [cut from {len(value)} characters]"
            elif (found is None and isinstance(value, (int, float)) and not isinstance(value, bool)
                  and not -LARGEST_NUMBER <= value <= LARGEST_NUMBER):  # NaN fails both comparisons too
                found = (_child_path(path, key), value)
    return found


def checked(document, source):
    """The document, its long text cut, once it passes validation and every number is within
    LARGEST_NUMBER; else ResultsError naming `source` and the field."""
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
    """The validated document of results.json or results.json.gz, or of a folder holding one (results.json first)."""
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
