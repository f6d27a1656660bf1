"""Findings computed from the measured entries: crossovers, speedups, best rates, failures, bandwidth levels."""
import math
import statistics
from dataclasses import dataclass

from gpubench_driver.lib import trials
from gpubench_driver.lib.gbench import SKIP_PREFIX, TRAFFIC_COUNTERS
from gpubench_driver.lib.stats import finite, median_interval, medians_differ

HEADLINE_SIZES = (200, 1024, 4096, 8192)  # the summary's speedup table: these sizes, where measured
REFINEMENT_RULE = ("the midpoint of each crossover's bracket is measured with the implementations fastest at "
                   "its ends; refinement stops when the bracket is narrower than max(8, 10% of its lower end)")


def positive(value):
    """A finite number above 0, else None."""
    value = finite(value)
    return value if value is not None and value > 0 else None


def memory_traffic(entry):
    """Bytes of memory one call reads and writes, as the binary counted them; None without them or if none."""
    read, written = (finite(entry.get(counter)) for counter in TRAFFIC_COUNTERS[:2])
    return None if read is None or written is None else positive(read + written)


def ok_entries(entries):
    """The ok entries with every axis and a median time."""
    return [e for e in entries if e.get("status") == "ok" and e.get("n") and (e.get("time_s") or {}).get("median")
            and all(e.get(axis) for axis in ("impl", "device", "mode", "precision"))]


# What a time compares: each entry's headline time, or for the resident GPU entries one call as a CPU program
# waiting on it sees it (launch and synchronisation included; a CPU entry's time already is that).
MEASURES = ("time", "latency")


def _times(entry, measure="time"):
    """The entry's time summary for the measure (stats.summarize), or None."""
    if measure == "latency" and entry.get("device") == "gpu":
        return entry.get("latency_s")
    return entry["time_s"]


def median_s(entry):
    """The entry's median time (s)."""
    return entry["time_s"]["median"]


def median_record(entry):
    """An entry as one side of a comparison: its implementation, median time and that median's interval."""
    return {"impl": entry["impl"], "median_s": median_s(entry), "interval_s": interval_record(entry)}


def _median(entry, measure="time"):
    return (_times(entry, measure) or {}).get("median")


def measure_label(entries, measure):
    """What the GPU side of a comparison timed, in words."""
    if measure == "latency":
        return "host-observed latency of one call"
    protocols = {entry.get("protocol") for entry in entries}
    if protocols == {"throughput"}:
        return "device time, launch latency excluded"
    if protocols == {"latency"}:
        return "host-observed time of one call"
    return "each entry's headline time"


def best_per(items, key, better):
    """{key(item): the item better(item, other) prefers to every other of its key, the first of a tie}."""
    best = {}
    for item in items:
        if key(item) not in best or better(item, best[key(item)]):
            best[key(item)] = item
    return best


def best_by_size(entries, axis="n", measure="time"):
    """{value of the axis (n, or batch): fastest entry at that value} over the entries that have the measure."""
    return best_per([entry for entry in entries if _median(entry, measure) is not None], lambda entry: entry[axis],
                    lambda entry, other: _median(entry, measure) < _median(other, measure))


def group_by(items, key, value=lambda item: item):
    """{key(item): [value(item), ...]}, the keys and each group's members in the items' order."""
    groups = {}
    for item in items:
        groups.setdefault(key(item), []).append(value(item))
    return groups


def cpu_entries(entries):
    return [e for e in ok_entries(entries) if e.get("device") == "cpu"]


def gpu_entries(entries, mode=None):
    return [e for e in ok_entries(entries) if e.get("device") == "gpu" and mode in (None, e.get("mode"))]


def gpu_modes(entries):
    return sorted({e["mode"] for e in gpu_entries(entries) if e.get("mode")})


# --- crossover ------------------------------------------------------------------------
@dataclass(frozen=True)
class Axis:
    """What a crossover is sought along: the entry field, and how the findings name it."""
    name: str    # entry field, and in 'estimate_<name>'
    noun: str
    plural: str  # in '<plural>_compared'


SIZE = Axis("n", "size", "sizes")  # matmul: the matrix size
BATCH = Axis("batch", "batch", "batches")  # batched GEMM: the products per call, at one matrix size


def crossover(best_cpu, best_gpu, mode, axis=SIZE, measure="time"):
    """Where the best GPU of one mode starts to beat the best CPU for good along the axis ({value: entry})."""
    values = sorted(set(best_cpu) & set(best_gpu))
    estimate = f"estimate_{axis.name}"
    result = {"mode": mode, "measure": measure, "timed_as": measure_label(best_gpu.values(), measure), "lower": None,
              "upper": None, estimate: None, "gpu_impl": None, "method": None, "note": None,
              f"{axis.plural}_compared": values}
    if not values:
        result["method"] = f"no {axis.noun} was measured on both the CPU and the GPU in this mode"
        return result
    gpu_wins = [_gpu_wins(best_cpu[value], best_gpu[value], measure) for value in values]
    if not gpu_wins[-1]:
        result["method"] = (f"no crossover: the CPU is at least as fast at the largest measured {axis.noun} "
                            f"({axis.name}={values[-1]})")
        return result
    final_wins = next((index for index, won in enumerate(reversed(gpu_wins)) if not won), len(gpu_wins))
    first = len(gpu_wins) - final_wins
    result["upper"] = values[first]
    result["gpu_impl"] = best_gpu[values[first]]["impl"]
    if first == 0:
        result["method"] = (f"the GPU is faster at every measured {axis.noun}; the crossover is at or below "
                            f"{axis.name}={values[0]}")
        return result
    lower = values[first - 1]
    result["lower"] = lower
    result[estimate] = _interpolate(lower, values[first], _speedup(best_cpu, best_gpu, lower, measure),
                                    _speedup(best_cpu, best_gpu, values[first], measure))
    result["method"] = f"bracket of measured {axis.plural}; estimate by log-log interpolation of the speedup to 1"
    earlier = [value for value, won in zip(values[:first], gpu_wins[:first]) if won]
    if earlier:
        result["note"] = (f"the GPU was also faster at {axis.name}={', '.join(map(str, earlier))} below the "
                          f"bracket (noisy or non-monotone)")
    return _note_noise(result, best_cpu, best_gpu, values, axis, measure)


def _gpu_wins(cpu, gpu, measure):
    """The GPU entry is faster beyond noise; without an interval its median alone decides (_note_noise says so)."""
    faster = _median(gpu, measure) < _median(cpu)
    return faster and _beyond_noise(cpu, gpu, measure) is not False


def _beyond_noise(cpu, gpu, measure):
    return medians_differ(_times(gpu, measure), _times(cpu))


def _note_noise(result, best_cpu, best_gpu, values, axis, measure):
    """The result's note, adding where the GPU's lower median was within noise and where no interval decided."""
    verdicts = {value: _beyond_noise(best_cpu[value], best_gpu[value], measure) for value in values
                if _median(best_gpu[value], measure) < _median(best_cpu[value])}
    notes = [result["note"]] if result["note"] else []
    within = [str(value) for value, verdict in verdicts.items() if verdict is False]
    if within:
        notes.append(f"at {axis.name}={', '.join(within)} the GPU's lower median was within noise (no win)")
    if None in verdicts.values():
        notes.append("where an entry had one sample (no interval) its median alone decided")
    result["note"] = "; ".join(notes) or None
    return result


def _speedup(best_cpu, best_gpu, value, measure="time"):
    return _median(best_cpu[value]) / _median(best_gpu[value], measure)


def _interpolate(lower, upper, speedup_lower, speedup_upper):
    """Value (size or batch) at which log(speedup) crosses 0, linear in its log between the bracket ends."""
    low, high = math.log(speedup_lower), math.log(speedup_upper)
    if high <= low:
        return None
    fraction = -low / (high - low)
    return round(math.exp(math.log(lower) + fraction * (math.log(upper) - math.log(lower))))


def crossovers(entries, axis=SIZE, with_latency=True):
    """One crossover per GPU mode and measure along the axis, each also over the trials (over_trials)."""
    found = _crossovers(entries, axis, with_latency)
    # The trials every measured entry has: a third trial that ran at some sizes only (the default run's
    # adaptive policy) would cross on a coarser bracket than the others.
    count = min((trials.count(entry) for entry in entries if entry["status"] == "ok"), default=1)
    if count > 1:
        per_trial = [{(c["mode"], c["measure"]): c for c in _crossovers(trials.view(entries, trial), axis, with_latency)}
                     for trial in range(1, count + 1)]
        estimate = f"estimate_{axis.name}"
        for result in found:
            key = (result["mode"], result["measure"])
            over_trials(result, axis, [(run.get(key) or {}).get(estimate) for run in per_trial])
    return found


def over_trials(result, axis, listed):
    """Where 2+ trials cross (listed: each trial's estimate or None): their median and its interval."""
    estimate = f"estimate_{axis.name}"
    crossing = sorted(value for value in listed if value is not None)
    result[f"{estimate}_trials"] = listed
    result[f"{estimate}_interval"] = None
    if result[estimate] is None or len(crossing) < 2:
        return
    interval = median_interval({"samples": crossing})
    result[estimate] = round(statistics.median(crossing))
    result[f"{estimate}_interval"] = interval.record()
    result["method"] = (f"bracket of measured {axis.plural}; estimate: the median over the trials of each trial's "
                        f"log-log interpolation of the speedup to 1")
    if not result["lower"] <= result[estimate] <= result["upper"]:
        result["note"] = "; ".join(filter(None, [result["note"], "the trials cross in different brackets: their "
                                                                 "median lies outside the median curve's"]))


def _crossovers(entries, axis, with_latency):
    best_cpu = best_by_size(cpu_entries(entries), axis.name)
    found = []
    for mode in gpu_modes(entries):
        measured = gpu_entries(entries, mode)
        with_latency_here = with_latency and any(entry.get("latency_s") for entry in measured)
        for measure in MEASURES if with_latency_here else MEASURES[:1]:
            found.append(crossover(best_cpu, best_by_size(measured, axis.name, measure), mode, axis, measure))
    return found


def refinement_size(found):
    """Midpoint to measure next for one crossover, or None when its bracket is narrow enough."""
    lower, upper = found.get("lower"), found.get("upper")
    if lower is None or upper is None or upper - lower < max(8, 0.1 * lower):
        return None
    middle = (lower + upper) // 2
    return middle if lower < middle < upper else None


def refinement_plan(entries):
    """{n: (impls, modes)}: each unresolved crossover's midpoint, with the fastest at its ends."""
    best_cpu = best_by_size(cpu_entries(entries))
    measured = {e["n"] for e in entries if e.get("n")}
    plan = {}
    for found in crossovers(entries):
        n = refinement_size(found)
        if n is None or n in measured:
            continue
        best_gpu = best_by_size(gpu_entries(entries, found["mode"]))
        impls, modes = plan.setdefault(n, (set(), set()))
        for end in (found["lower"], found["upper"]):
            impls.update((best_cpu[end]["impl"], best_gpu[end]["impl"]))
            modes.update((best_cpu[end]["mode"], found["mode"]))
    return {n: (sorted(impls), sorted(modes)) for n, (impls, modes) in sorted(plan.items())}


# --- speedups and rates ---------------------------------------------------------------
def speedups(entries):
    """Best-CPU time / GPU time for every GPU entry at a size the CPU side also measured."""
    best_cpu = best_by_size(cpu_entries(entries))
    rows = []
    for entry in sorted(gpu_entries(entries), key=lambda e: (e["n"], e["impl"], e["mode"])):
        cpu = best_cpu.get(entry["n"])
        if cpu:
            rows.append({"n": entry["n"], "impl": entry["impl"], "mode": entry["mode"],
                         "speedup": _median(cpu) / _median(entry), "best_cpu_impl": cpu["impl"]})
    return rows


def best_rates(entries, axes=("impl", "mode")):
    """Highest FLOP/s of each combination of the axes and the size where it was reached."""
    best = best_per([entry for entry in ok_entries(entries) if entry.get("flop_per_s") is not None],
                    lambda entry: tuple(entry[axis] for axis in axes),
                    lambda entry, other: entry["flop_per_s"] > other["flop_per_s"])
    rows = [{**{axis: entry[axis] for axis in axes}, "device": entry["device"], "flop_per_s": entry["flop_per_s"],
             "n": entry["n"]} for entry in best.values()]
    return sorted(rows, key=lambda row: (row["device"] or "", -row["flop_per_s"]))


def set_fraction_of_best_rate(entries):
    """Each entry's FLOP/s over the best FLOP/s measured on its device (cpu or gpu) in this run."""
    device_best = {row["device"]: row["flop_per_s"] for row in reversed(best_rates(entries))}  # fastest first
    for entry in entries:
        best = device_best.get(entry.get("device"))
        rate = entry.get("flop_per_s")
        entry["fraction_of_best_rate"] = rate / best if entry.get("status") == "ok" and rate and best else None


def headline_speedups(entries, sizes=HEADLINE_SIZES):
    """At each of the sizes and for each GPU mode: the best CPU and the best GPU entry and the speedup."""
    best_cpu = best_by_size(cpu_entries(entries))
    rows = []
    for n in sizes:
        for mode in gpu_modes(entries):
            gpu, cpu = best_by_size(gpu_entries(entries, mode)).get(n), best_cpu.get(n)
            if gpu and cpu:
                rows.append({"n": n, "mode": mode, "cpu_impl": cpu["impl"], "cpu_median_s": _median(cpu),
                             "gpu_impl": gpu["impl"], "gpu_median_s": _median(gpu),
                             "speedup": _median(cpu) / _median(gpu)})
    return {"sizes": list(sizes), "rows": rows}


# --- skipped and failed entries --------------------------------------------------------
def failed_entries(entries):
    """Every entry that is not ok: its name, status and message."""
    return [{"name": entry["name"], "status": entry["status"], "message": entry.get("message")}
            for entry in entries if entry["status"] != "ok"]


def failure_text(entry):
    """A skip's or a wrong result's message as it is, any other failure's with its status in front."""
    message = entry.get("message") or ""
    return message if message.startswith((SKIP_PREFIX, "wrong result: ")) else f"{entry['status']}: {message}"


def _sizes_and_batches(points):
    """{(n, batch)} -> [{"n", "batches"}] in size order, batches [] where the entries have no batch."""
    batches = group_by(sorted(points, key=lambda point: (point[0] or 0, point[1] or 0)), lambda point: point[0],
                       lambda point: point[1])
    return [{"n": n, "batches": found if found[0] is not None else []} for n, found in batches.items()]


def grouped_failures(entries):
    """The entries that are not ok, one row per implementation, precision and reason, with its modes and sizes."""
    groups = {}
    for entry in entries:
        if entry["status"] != "ok":
            # a name outside the pattern has no axes: "n/a" keeps them sortable and readable
            key = (entry["impl"] or "n/a", entry["precision"] or "n/a", failure_text(entry))
            modes, points = groups.setdefault(key, (set(), set()))
            modes.add(entry["mode"] or "n/a")
            points.add((entry["n"], entry.get("batch")))
    return [{"impl": impl, "precision": precision, "reason": reason, "modes": sorted(modes),
             "sizes": _sizes_and_batches(points)}
            for (impl, precision, reason), (modes, points) in sorted(groups.items())]


def derive(entries, refinement_rounds):
    set_fraction_of_best_rate(entries)
    return {
        "crossovers": crossovers(entries),
        "refinement": {"rounds": refinement_rounds, "rule": REFINEMENT_RULE},
        "speedups": speedups(entries),
        "headline_speedups": headline_speedups(entries),
        "best_rates": best_rates(entries),
        "best_cpu_by_size": [{"n": n, "impl": entry["impl"], "median_s": _median(entry)}
                             for n, entry in sorted(best_by_size(cpu_entries(entries)).items())],
        "failed_entries": failed_entries(entries),
    }


# --- the levels of a bandwidth curve ------------------------------------------------------------------
# A level (of the memory hierarchy) ends where the rate falls below this share of the level's rate.
LEVEL_DROP = 0.75


def levels(points):
    """(levels, edges) of a bandwidth curve: a level ends where the rate falls below LEVEL_DROP of it."""
    ordered = sorted((point for point in points if point["working_set_bytes"]), key=lambda p: p["working_set_bytes"])
    if not ordered:
        return [], []
    fastest = max(point["bytes_per_s"] for point in ordered)
    start = next(index for index, point in enumerate(ordered) if point["bytes_per_s"] >= LEVEL_DROP * fastest)
    found, edges = [[ordered[start]]], []
    for point in ordered[start + 1:]:
        level = found[-1]
        if point["bytes_per_s"] < LEVEL_DROP * max(p["bytes_per_s"] for p in level):
            last, first = level[-1]["working_set_bytes"], point["working_set_bytes"]
            edges.append({"last_bytes": last, "next_bytes": first, "near_bytes": math.sqrt(last * first)})
            found.append([point])
        else:
            level.append(point)
    return ([{"from_bytes": level[0]["working_set_bytes"], "to_bytes": level[-1]["working_set_bytes"],
              "bytes_per_s": max(p["bytes_per_s"] for p in level), "points": len(level)} for level in found], edges)


def envelope(rows):
    """The fastest point at each n over the rows' points (one device's kernels of one operation and precision)."""
    best = best_per((point for row in rows for point in row["points"]), lambda point: point["n"],
                    lambda point, other: point["bytes_per_s"] > other["bytes_per_s"])
    return [best[n] for n in sorted(best)]


# --- record building (the study plug-ins) ---------------------------------------------------------
def picked(record, *keys):
    """{key: record[key]} of the keys, in their order: the fields a findings row copies from another."""
    return {key: record[key] for key in keys}


def interval_record(entry):
    """The interval of an entry's median time as results.json keeps it (`interval_s`)."""
    return median_interval(entry["time_s"]).record()


def curve_rows(entries, fields, point, x="n", names=None):
    """One row per distinct value of the fields: {name: value, ..., points: [point(entry)] by x}."""
    groups = group_by(entries, lambda entry: tuple(entry[field] for field in fields), point)
    return [{**dict(zip(names or fields, key)), "points": sorted(points, key=lambda found: found[x])}
            for key, points in groups.items()]


def order_of(known):
    """A sort key: a value's place in the sequence `known`, any other value after them all."""
    known = tuple(known)
    return lambda value: known.index(value) if value in known else len(known)
