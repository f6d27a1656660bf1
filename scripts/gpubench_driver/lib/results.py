"""results.json: the schema, its validation, atomic writing and safe loading."""
import gzip
import json
import os
import zlib

from gpubench_driver.lib import gbench, measurements, outputs, resumable, telemetry
# The schema's checks, under the names this module's validation has always called them by.
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
# A study's fields from its --describe beyond the implementations, and their types (or null).
DESCRIBED = {"layers": list, "cudnn": dict, "algorithms": dict, "engine_notes": str, "utilization": dict,
             "epoch_samples": int, "memory_kinds": list, "transparent_hugepage": str, "timed_region": str,
             "workloads": list, "ideal": str, "axis_names": dict, "memory_traffic_note": str, "measurement": dict,
             "operations": list, "kernels": list, "bytes_rule": str, "memory_hierarchy": dict, "chain": str,
             "intensity_rule": str, "primitives": list, "libraries": list, "walkthrough": dict, "blocks_rule": str,
             "placement_rule": str, "launches": list, "elements": int, "busy_rule": str,
             "topology": dict, "axes": list, "points": dict, "rules": dict}
# Per-entry NVML telemetry of the GPU entries (absent in older files, null when not measured): numbers, and
# clock_limited, a boolean.
ENTRY_TELEMETRY = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "energy_j_per_op", "temperature_c_max",
                   "power_limited_fraction", "thermal_limited_fraction", "telemetry_samples")
CLOCK_LIMITED = "clock_limited"
# An entry's fields typed one by one; any other is a number or null (a counter of any name, or a driver's figure).
ENTRY_OTHER_FIELDS = frozenset(("name", "impl", "device", "mode", "precision", "message", "label", "axes", "status",
                                "phase", "time_s", "latency_s", "cold_l2_s", "protocol", "converged", CLOCK_LIMITED,
                                "measurement", "trials", "choices_varied"))
# Extra keys of a study telemetry record's samples (NVML): numbers or null.
SAMPLE_EXTRAS = ("energy_j", "gpu_util", "mem_util", "memory_used_mib")
# Bounds no run comes near, so that a hostile or damaged value is refused at load instead of overflowing
# in the report (a ratio of 1e308 is inf): times of one call from a picosecond to a day; any number up to
# 1e30 in size (an exascale machine does 1e18 FLOP/s); text up to LONGEST_TEXT characters, longer text
# is cut when loaded (the longest a run writes, a claim's answer, is about a thousand).
SHORTEST_TIME_S = 1e-12
LONGEST_TIME_S = 86400.0
LARGEST_NUMBER = 1e30
LONGEST_TEXT = 4000


def new_document(run):
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run": run,
        "machine": {},
        "software": {},
        "gpu": {"available": False, "reason": "not determined yet"},
        "warnings": [],
        "studies": {},
        "references": None,
        "findings": None,  # across the studies, derived by analyse.derive_findings (across.py)
    }


def new_study(description, sizes, batches=None):
    return {
        "precision": description.get("precision"),
        "precisions": description.get("precisions"),  # the precision study's: formats and tolerance rules
        "default_sizes": description.get("default_sizes"),
        "sizes": sizes,
        "default_batches": description.get("default_batches"),  # studies with a batch axis; else None
        "batches": batches,
        "implementations": description.get("implementations", []),
        # What a study's --describe adds (None where it does not): docs/results-schema.md.
        **{key: _described(description, key) for key in DESCRIBED},
        "entries": [],
        "invocations": [],
        "derived": {},
    }


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


def validate(document):
    """Raise ResultsError naming the first field that breaks the schema."""
    _expect(isinstance(document, dict), "results", "expected a JSON object")
    _expect(document.get("schema") == SCHEMA, "schema",
            f"expected '{SCHEMA}', got {document.get('schema')!r} (not a gpubench results file)")
    _expect(document.get("schema_version") == SCHEMA_VERSION, "schema_version",
            f"expected {SCHEMA_VERSION}, got {document.get('schema_version')!r}")
    for key, types in (("run", dict), ("machine", dict), ("software", dict), ("gpu", dict),
                       ("warnings", list), ("studies", dict), ("references", (dict, type(None)))):
        _expect(key in document, key, "missing")
        _expect_type(document[key], types, key)
    _validate_run(document["run"])
    _validate_machine(document["machine"])
    _validate_software(document["software"])
    _expect_type(document["gpu"].get("available"), bool, "gpu.available")
    for name, run in (document["references"] or {}).items():
        _validate_reference_run(run, f"references.{name}")
    for index, warning in enumerate(document["warnings"]):
        _expect_type(warning, str, f"warnings[{index}]")
    for name, study in document["studies"].items():
        _validate_study(study, f"studies.{name}")
    _validate_findings(document.get("findings"))


def _validate_run(run):
    for key in ("id", "started"):
        _expect_type(run.get(key), str, f"run.{key}")
    _expect_type(run.get("finished"), _OPTIONAL_STR, "run.finished")
    _expect(run.get("status") in RUN_STATUSES, "run.status",
            f"expected one of {', '.join(RUN_STATUSES)}, got {run.get('status')!r}")
    _expect_type(run.get("command_line"), list, "run.command_line")
    _expect_type(run.get("options"), dict, "run.options")
    _expect_fields(run.get("git"), {"revision": _OPTIONAL_STR, "dirty": (bool, type(None))}, "run.git")
    _expect_fields(run.get("like"), {"path": _OPTIONAL_STR, "run_id": _OPTIONAL_STR,
                                     "differences": (list, type(None))}, "run.like")
    resumable.validate(run.get("resumed"))  # run --resume's records


# The fields of the machine, the software and the references that the report reads: typed here,
# so a hostile or damaged file is refused with the field's name, never half-rendered.
_MACHINE = {"cpu": (dict, type(None)), "gpus": (list, type(None)), "memory_total_bytes": _OPTIONAL_NUMBER,
            "os": _OPTIONAL_STR, "kernel": _OPTIONAL_STR, "transparent_hugepages": _OPTIONAL_STR,
            "gpu_processes": (list, type(None))}
_CPU = {"model": _OPTIONAL_STR, "sockets": _OPTIONAL_NUMBER, "cores": _OPTIONAL_NUMBER, "threads": _OPTIONAL_NUMBER}
_GPU_TEXT = ("name", "uuid", "pci.bus_id", "driver_version", "ecc.mode.current")
_GPU_NUMBERS = ("memory.total", "clocks.max.sm", "clocks.max.memory", "clocks.sm", "power.limit",
                "pcie.link.gen.max", "pcie.link.gen.current", "pcie.link.width.max", "pcie.link.width.current",
                "temperature.gpu", "numa_node", "ecc.errors.uncorrected.volatile.total")
_REFERENCE_RESULT = {"library": _OPTIONAL_STR, "version": _OPTIONAL_STR, "device": _OPTIONAL_STR,
                     "dtype": _OPTIONAL_STR, "layout": _OPTIONAL_STR, "memory": _OPTIONAL_STR,
                     "direction": _OPTIONAL_STR, "n": _OPTIONAL_NUMBER, "batch": _OPTIONAL_NUMBER,
                     "time_s": (dict, type(None)), "flop_per_s": _OPTIONAL_NUMBER, "blas": (dict, str, type(None)),
                     "measurement": (dict, type(None))}
# How a reference result was measured (scripts/reference_timing.record; absent in files written before it).
_REFERENCE_MEASUREMENT = {"protocol": _OPTIONAL_STR, "burst_s": _OPTIONAL_NUMBER, "settled": (bool, type(None)),
                          "warmup_s": _OPTIONAL_NUMBER, "warmup_window_per_call_s": (list, type(None)),
                          "calls_per_batch": _OPTIONAL_NUMBER, "calls_per_sample": _OPTIONAL_NUMBER,
                          "stop_reason": _OPTIONAL_STR, "converged": (bool, type(None)), "noise": _OPTIONAL_NUMBER,
                          "measured_s": _OPTIONAL_NUMBER}


def _validate_machine(machine):
    _expect_fields(machine, _MACHINE, "machine")
    _expect_fields(machine.get("cpu"), _CPU, "machine.cpu")
    for index, gpu in enumerate(machine.get("gpus") or []):
        path = f"machine.gpus[{index}]"
        _expect_fields(gpu, {**{key: _OPTIONAL_STR for key in _GPU_TEXT},
                             **{key: _OPTIONAL_NUMBER for key in _GPU_NUMBERS}}, path)
        _expect(gpu is not None, path, "expected an object, got null")


def _validate_software(software):
    _expect_fields(software, {"openblas": (dict, type(None)), "gpubench_env": (dict, type(None))}, "software")
    _expect_fields(software.get("openblas"), {"version": _OPTIONAL_STR, "core": _OPTIONAL_STR,
                                              "threads": _OPTIONAL_NUMBER}, "software.openblas")
    env = software.get("gpubench_env") or {}
    _expect_fields(env.get("cuda"), {"devices": (list, type(None))}, "software.gpubench_env.cuda")
    # Absent in runs from before the binaries recorded their affinity.
    _expect_fields(env, {"affinity": (dict, type(None))}, "software.gpubench_env")
    _expect_fields(env.get("affinity"), {"process_cpus": _OPTIONAL_NUMBER, "initial_thread_cpus": _OPTIONAL_NUMBER,
                                         "omp_proc_bind": _OPTIONAL_STR, "omp_places": _OPTIONAL_STR,
                                         "openmp_proc_bind": _OPTIONAL_STR, "openmp_places": _OPTIONAL_NUMBER,
                                         "openmp_thread_cpus": (list, type(None))}, "software.gpubench_env.affinity")
    for index, device in enumerate((env.get("cuda") or {}).get("devices") or []):
        _expect_type(device, dict, f"software.gpubench_env.cuda.devices[{index}]")


def _validate_reference_run(run, path):
    _expect_fields(run, {"note": _OPTIONAL_STR, "python": _OPTIONAL_STR, "results": (list, type(None)),
                         "notes": (list, type(None))}, path)
    _expect(run is not None, path, "expected an object, got null")
    for index, note in enumerate(run.get("notes") or []):
        _expect_type(note, str, f"{path}.notes[{index}]")
    for index, result in enumerate(run.get("results") or []):
        where = f"{path}.results[{index}]"
        _expect_fields(result, _REFERENCE_RESULT, where)
        _expect(result is not None, where, "expected an object, got null")
        _expect_fields(result.get("time_s"), {key: _OPTIONAL_NUMBER for key in TIME_FIELDS}, f"{where}.time_s")
        for key in ("n", "batch"):
            _expect_size(result.get(key), f"{where}.{key}")
        _expect_times_in_range(result.get("time_s"), f"{where}.time_s")
        _expect_fields(result.get("measurement"), _REFERENCE_MEASUREMENT, f"{where}.measurement")


def _validate_study(study, path):
    _expect_type(study, dict, path)
    for key, types in (("implementations", list), ("entries", list), ("invocations", list), ("derived", dict)):
        _expect_type(study.get(key), types, f"{path}.{key}")
    for key, types in DESCRIBED.items():  # absent in files written before the batch studies
        _expect_type(study.get(key), (types, type(None)), f"{path}.{key}")
    _expect_fields(study.get("axis_names"), {slot: _OPTIONAL_STR for slot in gbench.NAMED_SLOTS},
                   f"{path}.axis_names")
    for index, axis in enumerate(study.get("axes") or []):  # --describe's axes (absent in older files)
        _expect_fields(axis, {"name": str, "slot": str, "unit": _OPTIONAL_STR, "values": (list, type(None))},
                       f"{path}.axes[{index}]")
    _expect_fields(study.get("rules"), {"counters": (dict, type(None))}, f"{path}.rules")
    for index, impl in enumerate(study["implementations"]):
        where = f"{path}.implementations[{index}]"
        _expect_fields(impl, {"id": str, "device": _OPTIONAL_STR, "modes": (list, type(None)),
                              "precisions": (list, type(None)), "max_size": _OPTIONAL_NUMBER,
                              "cap_reason": _OPTIONAL_STR}, where)
        for key in ("modes", "precisions"):
            for item, value in enumerate(impl.get(key) or []):
                _expect_type(value, str, f"{where}.{key}[{item}]")
    _expect_type(study.get("precisions"), (list, type(None)), f"{path}.precisions")
    for index, precision in enumerate(study.get("precisions") or []):
        _expect_fields(precision, {"id": str, "inputs": _OPTIONAL_STR, "accumulate": _OPTIONAL_STR,
                                   "output": _OPTIONAL_STR, "input_bytes": _OPTIONAL_NUMBER,
                                   "output_bytes": _OPTIONAL_NUMBER}, f"{path}.precisions[{index}]")
    for index, layer in enumerate(study.get("layers") or []):  # the roofline reads their shapes
        _expect_fields(layer, {"role": _OPTIONAL_STR, **{key: _OPTIONAL_NUMBER for key in _LAYER_NUMBERS}},
                       f"{path}.layers[{index}]")
    for key in ("sizes", "batches"):
        _expect_type(study.get(key), (list, type(None)), f"{path}.{key}")
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


_LAYER_NUMBERS = ("n", "in_channels", "out_channels", "kernel", "stride", "padding", "height", "width", "out_height",
                  "out_width", "flop_per_sample")
_SPREAD = {"min": _OPTIONAL_NUMBER, "median": _OPTIONAL_NUMBER, "max": _OPTIONAL_NUMBER}  # NaN is written null
_TELEMETRY_SUMMARY = {"samples": _OPTIONAL_NUMBER, "max_power_w": _OPTIONAL_NUMBER,
                      "max_temperature_c": _OPTIONAL_NUMBER, "throttled_fraction": _OPTIONAL_NUMBER,
                      "throttle_reasons": (list, type(None))}
_SPREADS = ("sm_clock_mhz", "busy_sm_clock_mhz", "mem_clock_mhz")


def _validate_telemetry(record, path):
    _expect_type(record, dict, path)
    _expect_fields(record, {"interval_s": _OPTIONAL_NUMBER, "note": _OPTIONAL_STR, "summary": (dict, type(None)),
                            "source": _OPTIONAL_STR}, path)
    summary = record.get("summary")
    _expect_fields(summary, {**_TELEMETRY_SUMMARY, **{key: (dict, type(None)) for key in _SPREADS}},
                   f"{path}.summary")
    for key in _SPREADS:
        _expect_fields((summary or {}).get(key), _SPREAD, f"{path}.summary.{key}")
    for index, reason in enumerate((summary or {}).get("throttle_reasons") or []):
        _expect_type(reason, str, f"{path}.summary.throttle_reasons[{index}]")
    _expect_type(record.get("samples", []), list, f"{path}.samples")
    for index, sample in enumerate(record.get("samples", [])):
        _expect_type(sample, dict, f"{path}.samples[{index}]")
        for key in dict.fromkeys(("t_s", *telemetry.FIELDS.values(), *SAMPLE_EXTRAS)):
            _expect_type(sample.get(key), _OPTIONAL_NUMBER, f"{path}.samples[{index}].{key}")
        _expect_type(sample.get("throttle_reasons"), (list, type(None)), f"{path}.samples[{index}].throttle_reasons")


def _validate_measured(record, path):
    """What an entry and each of its trials share: a status, and for an ok one a median time; the
    time summaries (headline, latency, cold L2) well formed."""
    _expect_type(record, dict, path)
    _expect(record.get("status") in ENTRY_STATUSES, f"{path}.status",
            f"expected one of {', '.join(ENTRY_STATUSES)}, got {record.get('status')!r}")
    if record["status"] == "ok":
        _expect_type(record.get("time_s"), dict, f"{path}.time_s")
        _expect_type(record["time_s"].get("median"), _NUMBER, f"{path}.time_s.median")
    for key in ("time_s", "latency_s", "cold_l2_s"):
        _validate_times(record.get(key), f"{path}.{key}")


def _validate_entry(entry, path):
    _validate_measured(entry, path)
    _expect_type(entry.get("name"), str, f"{path}.name")
    for key in ("impl", "device", "mode", "precision", "message", "label", "phase"):
        _expect_type(entry.get(key), _OPTIONAL_STR, f"{path}.{key}")
    for key in ("axes", "measurement", "choices_varied"):  # axes: absent in older files
        _expect_type(entry.get(key), (dict, type(None)), f"{path}.{key}")
    # A gathered run of every GPU of a node (run --gpus): the nvidia-smi index of the entry's GPU; absent otherwise.
    _expect_type(entry.get("gpu"), (int, type(None)), f"{path}.gpu")
    for name, value in (entry.get("axes") or {}).items():
        _expect_type(value, (str, int, float, type(None)), f"{path}.axes.{name}")
    for key, value in entry.items():
        if key not in ENTRY_OTHER_FIELDS:
            _expect_type(value, _OPTIONAL_NUMBER, f"{path}.{key}")
    for key in ("flop_per_s", "flop", "bytes_transferred"):  # rates and counts: a negative one is damage
        _expect(entry.get(key) is None or entry[key] >= 0, f"{path}.{key}", f"expected zero or more, got {entry.get(key)}")
    _expect_type(entry.get(CLOCK_LIMITED), (bool, type(None)), f"{path}.{CLOCK_LIMITED}")
    for key in ("n", "batch"):  # sizes and batches go on log axes and into logarithms
        _expect_size(entry.get(key), f"{path}.{key}")
    # The steady-state loop's fields (absent in files written before it).
    _expect(entry.get("protocol") in (None, *measurements.PROTOCOLS), f"{path}.protocol",
            f"expected one of {', '.join(measurements.PROTOCOLS)}, got {entry.get('protocol')!r}")
    _expect_type(entry.get("converged"), (bool, type(None)), f"{path}.converged")
    _validate_trials(entry.get("trials"), f"{path}.trials")


def _validate_trials(records, path):
    """Each trial's own figures (trials.py), absent for an entry measured once."""
    _expect_type(records, (list, type(None)), path)
    for index, record in enumerate(records or []):
        _validate_measured(record, f"{path}[{index}]")
        _expect_type(record.get("trial"), _NUMBER, f"{path}[{index}].trial")


def _validate_times(times, path):
    """A summary of positive seconds (stats.summarize), or None."""
    _expect_type(times, (dict, type(None)), path)
    if not isinstance(times, dict):
        return
    for key in TIME_FIELDS:
        _expect_type(times.get(key), _OPTIONAL_NUMBER, f"{path}.{key}")
    _expect(times.get("over") in (None, "trials"), f"{path}.over", f"expected 'trials' or nothing, got {times.get('over')!r}")
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
    _expect_type(findings, (dict, type(None)), "findings")
    if findings is None:
        return
    for key, types in (("roofline", dict), ("fraction_of_peak", list), ("energy", list), ("clock_limited", list),
                       ("telemetry", dict)):
        _expect_type(findings.get(key), types, f"findings.{key}")
    roofline, telemetry_found = findings["roofline"], findings["telemetry"]
    _expect_fields(roofline, {"bandwidth": (dict, type(None)), "memory_roof_note": _OPTIONAL_STR,
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
            _expect_fields(row, fields, f"findings.{where}[{index}]")
            _expect(row is not None, f"findings.{where}[{index}]", "expected an object, got null")


# --- writing and reading --------------------------------------------------------
def write(document, path, checked=True):
    """Validate (`checked`), then replace the file atomically so a crash never leaves half a file. The run's
    saves after every size skip the validation (0.4 s of a 14 MB file, each of dozens of saves); its last
    save and every load validate."""
    clean = without_non_finite(document)
    if checked:
        validate(clean)
    with outputs.replacing(path) as stream:
        json.dump(clean, stream, separators=(",", ":"), allow_nan=False)  # compact: a third of the time
        stream.write("\n")
    return clean


def _child_path(path, key):
    if not isinstance(key, str):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


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


def _read_text(path):
    """The file's text; a name ending in .gz is gunzipped first."""
    if path.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as stream:
            return stream.read()
    with open(path, encoding="utf-8") as stream:
        return stream.read()


def load(path):
    """The validated document of results.json or results.json.gz, or of a folder holding one (results.json first)."""
    if os.path.isdir(path):
        path = file_in(path) or os.path.join(path, FILE)
    try:
        text = _read_text(path)
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as error:  # gzip: damaged (OSError) or cut (EOFError)
        raise ResultsError(f"cannot read {path}: {error or type(error).__name__}") from None
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise ResultsError(f"{path} is not valid JSON (damaged or truncated?): {error}") from None
    except RecursionError:
        raise ResultsError(f"{path} nests its JSON too deeply to be a gpubench results file") from None
    return checked(document, path)
