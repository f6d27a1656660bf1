"""Reading Google Benchmark's JSON output (1.7 and 1.8 styles) and console lines."""
import json
import os
import re
from dataclasses import dataclass, field

from gpubench_driver.lib import outputs, stats, telemetry

SECONDS_PER_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
# The largest n or batch a study binary takes (kLargestSize in bench/harness/study_options.hpp), where its
# --describe states no size_range or batch_range, and of a results file's entries.
LARGEST_SIZE = 2 ** 31 - 1
# Google Benchmark appends these to a name depending on the timing mode.
TIME_SUFFIXES = ("/manual_time", "/real_time", "/process_time")
# Google Benchmark's own keys of a run object (1.7 and 1.8, json_reporter.cc's PrintRunData); every other key
# is a counter the binary set, which an entry carries whatever its name. 'threads' is both: a CPU entry's
# counter replaces Google Benchmark's own (the later key wins); _entry reads it for CPU entries only.
GBENCH_RUN_FIELDS = frozenset((
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "aggregate_name", "aggregate_unit", "error_occurred", "error_message",
    "skipped", "skip_message", "iterations", "real_time", "cpu_time", "time_unit",
    "cpu_coefficient", "real_coefficient", "big_o", "rms",  # complexity aggregates (BigO, RMS)
    "allocs_per_iter", "max_bytes_used", "total_allocated_bytes", "net_heap_growth",  # a MemoryManager's
    "label"))
# Traffic of one call (docs/results-schema.md): in the memory the implementation computes in, and across the link.
TRAFFIC_COUNTERS = ("memory_read_bytes", "memory_written_bytes", "h2d_bytes", "d2h_bytes")
# NVML utilization of the batch studies' GPU entries, reported per repetition (a window of readings, often
# empty): combined over the repetitions (combine_utilization), not taken from the median aggregate.
UTILIZATION_SAMPLES = "gpu_util_samples"
UTILIZATION_MEANS = ("gpu_util_mean", "mem_util_mean")  # weighted by each repetition's readings
UTILIZATION_MAXIMA = ("gpu_util_max",)
UTILIZATION_COUNTERS = (UTILIZATION_SAMPLES, *UTILIZATION_MEANS, *UTILIZATION_MAXIMA)
SKIP_PREFIX = "skipped: "
# The slots of an entry name, <study>/<impl>/<device>/<mode>/<precision>/n:<n>[/batch:<b>], as fields of an
# entry ('batch' is None for a study without that axis): its axes by slot, which --describe's axes name.
AXES = ("impl", "device", "mode", "precision", "n", "batch")
# The slots a study names in --describe's axis_names (the device slot is always the device).
NAMED_SLOTS = ("impl", "mode", "precision", "n", "batch")


class GbenchError(Exception):
    """A Google Benchmark output that cannot be used at all."""


@dataclass
class GbenchOutput:
    context: dict
    benchmarks: list
    truncated: bool = False
    notes: list = field(default_factory=list)


# Google Benchmark appends these where the iterations and repetitions are set per benchmark (one
# iteration, one repetition: the binary's own loop samples).
RUN_SETTINGS = re.compile(r"(?:/iterations:[0-9]+)?(?:/repeats:[0-9]+)?$")


def entry_key(run_name):
    """'matmul/x/gpu/resident/fp32/n:64/iterations:1/repeats:1/manual_time' -> 'matmul/x/gpu/resident/fp32/n:64'."""
    for suffix in TIME_SUFFIXES:
        if run_name.endswith(suffix):
            run_name = run_name[: -len(suffix)]
            break
    return RUN_SETTINGS.sub("", run_name)


def axis_fields(axes, slots):
    """An entry's axis fields: its axes by name (an entry of --describe's entries) and each by its slot
    (AXES: None where the study has no such axis); slots: {axis name: slot}, from --describe's axes."""
    by_slot = {slots.get(name): value for name, value in axes.items()}
    return {**{slot: by_slot.get(slot) for slot in AXES}, "axes": dict(axes)}


def planned_entries(description):
    """{entry name: its axis fields} of the entries a --describe lists (those its flags select)."""
    slots = {axis.get("name"): axis.get("slot") for axis in description.get("axes") or [] if isinstance(axis, dict)}
    return {entry["name"]: axis_fields(entry.get("axes") or {}, slots) for entry in description.get("entries") or []
            if isinstance(entry, dict) and isinstance(entry.get("name"), str)}


def load_text(text):
    """Google Benchmark JSON; every complete benchmark object of a file a crash cut short."""
    try:
        document = json.loads(text)
    except ValueError:
        return _recover_truncated(text)
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        raise GbenchError("not Google Benchmark JSON output (no 'benchmarks' list)")
    context = document.get("context") if isinstance(document.get("context"), dict) else {}
    return GbenchOutput(context, [b for b in document["benchmarks"] if isinstance(b, dict)])


def load_file(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except FileNotFoundError:
        return GbenchOutput({}, [], truncated=True, notes=["no output file was written"])
    except OSError as error:
        raise GbenchError(f"cannot read {path}: {error}") from error
    if not text.strip():
        return GbenchOutput({}, [], truncated=True, notes=["the output file is empty"])
    return load_text(text)


_SEPARATORS = re.compile(r"[ \t\r\n,]*")


def _recover_truncated(text):
    decoder = json.JSONDecoder()
    found = re.search(r'"context"\s*:\s*', text)
    try:
        context = decoder.raw_decode(text, found.end())[0] if found else {}
    except ValueError:
        context = {}
    context = context if isinstance(context, dict) else {}
    start = re.search(r'"benchmarks"\s*:\s*\[', text)
    if start is None:
        if text.lstrip().startswith("{"):
            return GbenchOutput(context, [], truncated=True, notes=["the output file ends before any benchmark"])
        raise GbenchError("not Google Benchmark JSON output")
    benchmarks = []
    position = start.end()
    while True:
        position = _SEPARATORS.match(text, position).end()
        if position >= len(text) or text[position] == "]":
            break
        try:
            item, position = decoder.raw_decode(text, position)
        except ValueError:
            break  # the incomplete last object
        if isinstance(item, dict):
            benchmarks.append(item)
    return GbenchOutput(context, benchmarks, truncated=True,
                        notes=[f"truncated output: recovered {len(benchmarks)} complete benchmark objects"])


def _failure(run):
    """(status, message) of a failed run object, None when it ran."""
    if run.get("error_occurred"):
        message = str(run.get("error_message", ""))
        return ("skipped" if message.startswith(SKIP_PREFIX) else "error"), message
    if run.get("skipped"):  # 1.8's SkipWithMessage
        return "skipped", str(run.get("skip_message", ""))
    return None


def _seconds(run):
    value = stats.finite(run.get("real_time"))
    unit = SECONDS_PER_UNIT.get(run.get("time_unit", "ns"))
    return None if value is None or unit is None else value * unit


def group_runs(benchmarks):
    """{run_name: {"iterations": [...], "aggregates": {name: obj}}} in first-seen order."""
    groups = {}
    for run in benchmarks:
        run_name = run.get("run_name") or run.get("name")
        if not isinstance(run_name, str):
            continue
        group = groups.setdefault(run_name, {"iterations": [], "aggregates": {}})
        if run.get("run_type") == "aggregate":
            group["aggregates"][str(run.get("aggregate_name"))] = run
        else:
            group["iterations"].append(run)
    return groups


def entries_from_output(output, plan, counters=()):
    """One entry dict per benchmark (run_name) in the output, its axes those of its name in `plan` ({entry
    name: axis fields}, planned_entries), each of `counters` (blank_entry) present."""
    return [_entry(run_name, group, plan, counters) for run_name, group in group_runs(output.benchmarks).items()]


def entry_order(entry):
    """How a study's entries are sorted in results.json: by n, batch, device, implementation, mode, precision."""
    return (entry.get("n") or 0, entry.get("batch") or 0,
            *(entry.get(axis) or "" for axis in ("device", "impl", "mode", "precision")))


def declared_counters(study):
    """The counters a study's binary declares (its --describe's rules.counters, kept in its results record)."""
    counters = ((study or {}).get("rules") or {}).get("counters")
    return tuple(counters) if isinstance(counters, dict) else ()


def blank_entry(key, fields=None, counters=()):
    """An entry with every field present: its axes from `fields` (axis_fields), each of `counters` None."""
    fields = fields if isinstance(fields, dict) else {}
    entry = {"name": key, **{slot: fields.get(slot) for slot in AXES}, "axes": fields.get("axes"),
             "status": "ok", "message": None, "repetitions": None, "iterations": None, "time_s": None,
             "flop_per_s": None, "fraction_of_best_rate": None, "wall_s": None, "label": None}
    entry.update({name: None for name in counters if name not in OWN_FIELDS})
    entry.update({name: None for name in (*UTILIZATION_COUNTERS, *telemetry.ENTRY_FIELDS)})
    return entry


def user_counters(run):
    """{name: value} of a run object's keys outside Google Benchmark's own (GBENCH_RUN_FIELDS)."""
    return {name: value for name, value in run.items() if isinstance(name, str) and name not in GBENCH_RUN_FIELDS}


# Entry fields a counter of the same name does not replace (it is dropped): blank_entry's own, some combined over
# the repetitions. Fields the driver adds later are written over a counter of the same name.
OWN_FIELDS = frozenset(blank_entry(None))


def pass_counters(entry, counters):
    """The counters ({name: value}) into the entry, each through stats.finite, except those under OWN_FIELDS."""
    entry.update({name: stats.finite(value) for name, value in counters.items() if name not in OWN_FIELDS})


def _entry(run_name, group, plan, counters=()):
    key = entry_key(run_name)
    entry = blank_entry(key, plan.get(key), counters)
    runs = group["iterations"] + list(group["aggregates"].values())
    failure = next((f for f in map(_failure, runs) if f), None)
    entry["repetitions"] = stats.finite(runs[0].get("repetitions")) if runs else None
    if failure:
        entry.update(status=failure[0], message=failure[1])
        return entry
    samples = [s for s in map(_seconds, group["iterations"]) if s is not None]
    counter_source = group["aggregates"].get("median") or (group["iterations"] or [{}])[0]
    entry["iterations"] = stats.finite((group["iterations"] or [{}])[0].get("iterations"))
    entry["time_s"] = stats.summarize(samples) if samples else _time_from_aggregates(group["aggregates"])
    pass_counters(entry, user_counters(counter_source))
    label = ((group["iterations"] or [counter_source])[0]).get("label")
    entry["label"] = label if isinstance(label, str) and label else None
    entry.update(combine_utilization(group["iterations"]))
    entry.update(telemetry.combine(group["iterations"]))  # clocks, power, energy per op over the timed loops
    # Google Benchmark's own "threads" (GBENCH_RUN_FIELDS) is no CPU thread count.
    entry["threads"] = stats.finite(counter_source.get("threads")) if entry["device"] == "cpu" else None
    median = (entry["time_s"] or {}).get("median")
    if entry.get("flop") is not None and median:
        entry["flop_per_s"] = entry["flop"] / median
    if entry["time_s"] is None:
        entry.update(status="error", message="no timing in the benchmark output")
    return entry


def combine_utilization(runs):
    """The utilization counters over every repetition (stats.combine_repetitions)."""
    return stats.combine_repetitions(runs, UTILIZATION_SAMPLES, weighted=UTILIZATION_MEANS,
                                     maxima=UTILIZATION_MAXIMA)


def _time_from_aggregates(aggregates):
    """Used only when the per-repetition runs are absent (e.g. --benchmark_report_aggregates_only)."""
    values = {name: _seconds(run) for name, run in aggregates.items() if name in ("mean", "median", "stddev")}
    if values.get("median") is None:
        return None
    return stats.from_aggregates(values)


# --- console lines -------------------------------------------------------------
_CONSOLE_TIME = re.compile(r"^(?P<name>\S+)\s+(?P<time>[0-9.]+(?:e[-+]?[0-9]+)?)\s*(?P<unit>ns|us|ms|s)\b")
_CONSOLE_FAILURE = re.compile(r"^(?P<name>\S+)\s+(?P<kind>ERROR OCCURRED|SKIPPED): '(?P<message>.*)'")


# A counter on a console line: name=value, the value as Google Benchmark's HumanReadableNumber writes
# it (a decimal prefix, or a binary one for counters of kIs1024), '/s' after a rate.
_CONSOLE_COUNTER = re.compile(r"(?:^|\s)(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>-?[0-9.]+(?:e[-+]?[0-9]+)?)"
                              r"(?P<prefix>[KMGTPE]i|[kMGTPE]|[munpfa])?(?:/s|%)?(?=\s|$)")
_PREFIXES = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "m": 1e-3, "u": 1e-6, "n": 1e-9,
             "p": 1e-12, "f": 1e-15, "a": 1e-18, **{f"{p}i": 1024.0 ** (i + 1) for i, p in enumerate("KMGTPE")}}


@dataclass
class ConsoleResult:
    name: str            # entry name (no time suffix)
    median_s: float = None
    failure: str = None
    counters: dict = field(default_factory=dict)  # {name: value} the line shows (rounded as printed)


def console_counters(text):
    """{name: value} of the counters on (the rest of) a console line."""
    found = {}
    for match in _CONSOLE_COUNTER.finditer(text):
        try:
            found[match["name"]] = float(match["value"]) * _PREFIXES.get(match["prefix"], 1.0)
        except ValueError:
            continue
    return found


def parse_console_line(line):
    """A finished entry's time or failure from one console line; None for anything else."""
    line = line.strip()
    failure = _CONSOLE_FAILURE.match(line)
    if failure:
        return ConsoleResult(entry_key(failure["name"]), failure=failure["message"])
    timed = _CONSOLE_TIME.match(line)
    if not timed:
        return None
    name = timed["name"]
    if not name.endswith(TIME_SUFFIXES):
        return None
    return ConsoleResult(entry_key(name), median_s=float(timed["time"]) * SECONDS_PER_UNIT[timed["unit"]],
                         counters=console_counters(line[timed.end():]))


def write_file(document, path):
    """Google Benchmark JSON as it writes it (NaN unquoted), replaced atomically."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as error:
        raise outputs.write_error(error, path) from None
    with outputs.replacing(path) as stream:
        json.dump(document, stream, indent=2)

