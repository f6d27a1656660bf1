"""Findings of the primitives study: for each primitive, elements per second and effective bandwidth
against the size for every library and mode; from which size the GPU (its fastest library in a mode)
beats the best CPU; what Thrust's temporary storage and its synchronisation cost (thrust against
thrust_cached against cub at each size); reduce's bandwidth against the device's memory bandwidth;
the sort of 2^28 32-bit keys, GPU against the parallel std::sort, with and without copies.

Entry axes in this study: impl = primitive, mode, precision = library (thrust, thrust_cached, cub,
std_seq, std_par, gnu_parallel), n = elements. Rates: n / median time (elements per second). Effective bandwidth:
the bytes the binary counts as compulsory for one call (memory_read_bytes + memory_written_bytes: each
array read or written once) over the median time."""
from gpubench_driver.lib.findings import best_by_size, grouped_failures, memory_traffic, ok_entries, positive
from gpubench_driver.lib.findings import crossovers as crossovers_along_n
from gpubench_driver.lib.stats import finite, median_interval, medians_differ
from gpubench_driver.studies import stream as stream_study

PRIMITIVES = ("reduce", "inclusive_scan", "sort_u32", "sort_pairs", "sort_u64", "transform")
GPU_LIBRARIES = ("thrust", "thrust_cached", "cub")
CPU_LIBRARIES = ("std_seq", "std_par", "gnu_parallel")
RESIDENT, PINNED, HOST = "resident", "transfer_pinned", "host"
# The reduce target: at 256 MiB and above (2^26 uint32 values), once temporary storage is handled.
REDUCE_FROM_BYTES = 1 << 28
REDUCE_TARGET = 0.85
REDUCE_TARGET_TEXT = ("Thrust's reduce at 85% of the device's copy bandwidth or more, from 256 MiB, once its temporary "
                      "storage is handled")
# The sort: 2^28 32-bit keys on the GPU against the CPU's parallel std::sort: std::execution::par
# where the build has TBB, libstdc++'s parallel mode (the same sort on OpenMP) in every build; the faster.
SORT_TARGET_N = 1 << 28
SORT_TARGET_PRIMITIVE = "sort_u32"
SORT_TARGET_CPU = ("std_par", "gnu_parallel")


def _primitive_entries(entries, primitive):
    return [entry for entry in ok_entries(entries) if entry["impl"] == primitive]


def _by_library(entries):
    """The entries with the library in the implementation's place: derive's crossovers and best-of
    functions then name the library where they name an implementation."""
    return [{**entry, "impl": entry["precision"]} for entry in entries]


# --- curves ------------------------------------------------------------------------------------
def _point(entry):
    median = entry["time_s"]["median"]
    moved = memory_traffic(entry)
    latency = positive((entry.get("latency_s") or {}).get("median"))
    return {"n": entry["n"], "median_s": median, "elements_per_s": entry["n"] / median,
            "bytes_per_s": moved / median if moved else None, "interval_s": median_interval(entry["time_s"]).record(),
            "protocol": entry.get("protocol"), "latency_s": latency}


def curves(entries):
    """One row per (primitive, library, device, mode): its points in size order."""
    found = {}
    for entry in ok_entries(entries):
        key = (entry["impl"], entry["precision"], entry["device"], entry["mode"])
        found.setdefault(key, []).append(_point(entry))
    order = {name: index for index, name in enumerate(PRIMITIVES + GPU_LIBRARIES + CPU_LIBRARIES)}
    rows = [{"primitive": primitive, "library": library, "device": device, "mode": mode,
             "points": sorted(points, key=lambda point: point["n"])}
            for (primitive, library, device, mode), points in found.items()]
    return sorted(rows, key=lambda row: (order.get(row["primitive"], len(order)), row["device"] != "gpu",
                                         order.get(row["library"], len(order)), row["mode"]))


# --- crossovers --------------------------------------------------------------------------------
def crossovers(entries):
    """Per primitive and GPU mode: from which n the fastest GPU library beats the fastest CPU one
    (derive.crossovers on the entries of that primitive, the library in the implementation's place),
    on the headline and, where resident entries have it, on one call's host-observed latency."""
    found = []
    for primitive in dict.fromkeys(entry["impl"] for entry in ok_entries(entries)):
        mine = _by_library(_primitive_entries(entries, primitive))
        for row in crossovers_along_n(mine):
            row["primitive"] = primitive
            row["gpu_library"] = row.pop("gpu_impl")
            found.append(row)
    return found


# --- temporary storage and synchronisation ---------------------------------------------------------
def _counter(entry, name):
    return finite((entry or {}).get(name))


def _difference(slower, faster):
    """(seconds slower takes more than faster, whether the two differ beyond their noise); Nones
    where either is missing."""
    if slower is None or faster is None:
        return None, None
    return (slower["time_s"]["median"] - faster["time_s"]["median"],
            medians_differ(slower["time_s"], faster["time_s"]))


def storage_costs(entries):
    """Per primitive, GPU mode and n: the three GPU libraries' times and what tells them apart.
    allocation_s = thrust - thrust_cached (the same calls; only where temporary storage comes from:
    cudaMalloc and cudaFree in every call, or a cache); synchronisation_s = thrust_cached - cub (no
    allocation in either; thrust_cached still waits for the device at the end of every call and, for
    reduce, copies its sum back synchronously, and runs Thrust's dispatch; where there is no
    thrust_cached, thrust - cub, both costs together). What one call asks for (temporary_bytes,
    temporary_requests: the cached entry's counters, which Thrust asks for whatever its allocator)
    says how much thrust allocates each time."""
    found = {}
    for entry in ok_entries(entries):
        if entry["device"] == "gpu" and entry["precision"] in GPU_LIBRARIES:
            found.setdefault((entry["impl"], entry["mode"], entry["n"]), {})[entry["precision"]] = entry
    order = {name: index for index, name in enumerate(PRIMITIVES)}
    rows = []
    for (primitive, mode, n), libraries in sorted(found.items(),
                                                  key=lambda item: (order.get(item[0][0], len(order)), item[0][1:])):
        thrust, cached, cub = (libraries.get(name) for name in GPU_LIBRARIES)
        if thrust is None or cub is None:
            continue
        allocation_s, allocation_noise = _difference(thrust, cached)
        sync_s, sync_noise = _difference(cached, cub) if cached else _difference(thrust, cub)
        times = {name: entry["time_s"]["median"] for name, entry in libraries.items()}
        rows.append({"primitive": primitive, "mode": mode, "n": n, "median_s": times,
                     "allocation_s": allocation_s, "allocation_beyond_noise": allocation_noise,
                     "synchronisation_s": sync_s, "synchronisation_beyond_noise": sync_noise,
                     "synchronisation_includes_allocation": cached is None,
                     "thrust_over_cub": times["thrust"] / times["cub"],
                     "temporary_bytes": _counter(cached, "temporary_bytes"),
                     "temporary_requests": _counter(cached, "temporary_requests"),
                     "cached_device_allocations": _counter(cached, "temporary_device_allocations"),
                     "cub_temporary_bytes": _counter(cub, "temporary_bytes"),
                     "cub_device_allocations": _counter(cub, "temporary_device_allocations")})
    return rows


# --- reduce against the memory bandwidth ----------------------------------------------------------
def _stream_view(studies):
    """The studies with the stream study's findings derived (the run's roof reads them), whatever
    order the studies were derived in; the same studies where there is no stream study."""
    stream = studies.get("stream")
    if not stream or stream.get("derived"):
        return studies
    return {**studies, "stream": {**stream, "derived": stream_study.derive(stream)}}


def memory_bandwidth(studies):
    """(what reduce is held against, None) or (None, why nothing): the stream study's copy past the
    L2 cache where it measured one (the issue's target names copy), else the run's memory roof, the
    bandwidth findings.roofline.bandwidth holds (derive_run.device_bandwidth: the stream study's
    fastest kernel past the L2, or twice the transfer study's fastest device-to-device copy); both
    count a call's traffic, the bytes read plus the bytes written."""
    from gpubench_driver.stages import derive_run  # it imports the registry, which imports this module
    studies = _stream_view(studies)
    copy = next((row["hbm"] for row in ((studies.get("stream") or {}).get("derived") or {}).get("device_memory") or []
                 if row.get("operation") == "copy" and row.get("hbm")), None)
    if copy:
        return {"study": "stream", "source": "the stream study's copy", "what": f"stream copy, {copy['kernel']} "
                f"kernel, {copy['precision']}, n = {copy['n']}", "bytes_per_s": copy["bytes_per_s"]}, None
    roof, note = derive_run.device_bandwidth(studies)
    if roof is None:
        return None, note
    if roof["study"] == "stream":
        what = f"stream {roof.get('operation')}, {roof.get('kernel')} kernel, {roof['precision']}, n = {roof['n']}"
        source = "the run's memory roof: the stream study's fastest kernel past the L2 (it measured no copy there)"
    else:
        what = f"transfer {roof['impl']} {roof['precision']}, {roof['n']} bytes (2 x the bytes copied per second)"
        source = "the run's memory roof: the transfer study's device-to-device copy (no stream study in the run)"
    return {"study": roof["study"], "source": source, "what": what, "bytes_per_s": roof["bytes_per_s"]}, None


def reduce_bandwidth(entries, studies):
    """Each GPU library's resident reduce from REDUCE_FROM_BYTES of input: its effective bandwidth and
    that over the device's memory bandwidth (memory_bandwidth), beside the target."""
    reference, note = memory_bandwidth(studies)
    rows = []
    for entry in _primitive_entries(entries, "reduce"):
        moved = memory_traffic(entry)
        if entry["device"] != "gpu" or entry["mode"] != RESIDENT or not moved or moved < REDUCE_FROM_BYTES:
            continue
        rate = moved / entry["time_s"]["median"]
        rows.append({"library": entry["precision"], "n": entry["n"], "bytes": moved,
                     "median_s": entry["time_s"]["median"], "bytes_per_s": rate,
                     "latency_s": positive((entry.get("latency_s") or {}).get("median")),
                     "fraction": rate / reference["bytes_per_s"] if reference else None})
    order = {library: index for index, library in enumerate(GPU_LIBRARIES)}
    rows.sort(key=lambda row: (row["n"], order.get(row["library"], len(order))))
    return {"reference": reference, "note": note, "rows": rows, "from_bytes": REDUCE_FROM_BYTES,
            "target": REDUCE_TARGET, "target_text": REDUCE_TARGET_TEXT}


# --- the sort of 2^28 keys ----------------------------------------------------------------------------
def sort_target(entries):
    """The sort of SORT_TARGET_N 32-bit keys: the fastest GPU library per mode against the fastest
    parallel CPU sort (SORT_TARGET_CPU), the speedup (the CPU's time over the GPU's) with the keys
    resident and with their copies; a note where the run measured either side not at all."""
    mine = [entry for entry in _primitive_entries(entries, SORT_TARGET_PRIMITIVE) if entry["n"] == SORT_TARGET_N]
    parallel = [entry for entry in mine if entry["device"] == "cpu" and entry["precision"] in SORT_TARGET_CPU]
    cpu = min(parallel, key=lambda entry: entry["time_s"]["median"], default=None)
    found = {"n": SORT_TARGET_N, "primitive": SORT_TARGET_PRIMITIVE,
             "cpu_library": cpu["precision"] if cpu else " or ".join(SORT_TARGET_CPU),
             "cpu_median_s": cpu["time_s"]["median"] if cpu else None, "rows": [], "note": None}
    for mode in (RESIDENT, PINNED):
        gpu = best_by_size(_by_library([e for e in mine if e["device"] == "gpu" and e["mode"] == mode]))
        best = gpu.get(SORT_TARGET_N)
        if best:
            found["rows"].append({"mode": mode, "gpu_library": best["impl"], "gpu_median_s": best["time_s"]["median"],
                                  "speedup": cpu["time_s"]["median"] / best["time_s"]["median"] if cpu else None,
                                  "beyond_noise": medians_differ(cpu["time_s"], best["time_s"]) if cpu else None})
    if not mine:
        found["note"] = (f"not measured in this run: {SORT_TARGET_PRIMITIVE} at n = {SORT_TARGET_N} is in the full "
                         f"sweep (run --full, or --studies primitives --impls {SORT_TARGET_PRIMITIVE} "
                         f"--sizes {SORT_TARGET_N})")
    elif cpu is None:
        found["note"] = (f"no parallel CPU sort ({', '.join(SORT_TARGET_CPU)}) ran at this size (skipped or failed: "
                         "see the failures)")
    elif not found["rows"]:
        found["note"] = "no GPU sort ran at this size (skipped or failed: see the failures)"
    return found


def derive(study, document):
    entries = study["entries"]
    return {
        "curves": curves(entries),
        "crossovers": crossovers(entries),
        "storage_costs": storage_costs(entries),
        "reduce_bandwidth": reduce_bandwidth(entries, document["studies"]),
        "sort_target": sort_target(entries),
        "failures": grouped_failures(entries),
    }
