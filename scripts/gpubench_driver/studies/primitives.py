"""The primitives study's plug-in: elements per second and effective bandwidth of each primitive, library and
mode; where the GPU beats the CPU; Thrust's temporary storage and synchronisation; reduce against memory
bandwidth; sorting 2^28 keys (docs/studies.md). Axes: impl = primitive, precision = library, n = elements."""
import textwrap

from gpubench_driver.lib import charts
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.findings import (best_by_size, crossovers as crossovers_along_n, curve_rows, group_by,
                                          grouped_failures, interval_record, memory_traffic, ok_entries, order_of,
                                          positive)
from gpubench_driver.lib.formatting import byte_size, gb_per_s, md, percent, rate, ratio, seconds, whole
from gpubench_driver.lib.registry import Study, size_rates
from gpubench_driver.lib.sections import (crossover_cells, crossover_header, failures_section, noise_note, table_blocks,
                                          table_section)
from gpubench_driver.lib.stats import finite, medians_differ

PRIMITIVES = ("reduce", "inclusive_scan", "sort_u32", "sort_pairs", "sort_u64", "transform")
GPU_LIBRARIES = ("thrust", "thrust_cached", "cub")
CPU_LIBRARIES = ("std_seq", "std_par", "gnu_parallel")
RESIDENT, PINNED = "resident", "transfer_pinned"
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
    """The entries with the library in the implementation's place, for the generic crossovers."""
    return [{**entry, "impl": entry["precision"]} for entry in entries]


def _point(entry):
    median = entry["time_s"]["median"]
    moved = memory_traffic(entry)
    latency = positive((entry.get("latency_s") or {}).get("median"))
    return {"n": entry["n"], "median_s": median, "elements_per_s": entry["n"] / median,
            "bytes_per_s": moved / median if moved else None, "interval_s": interval_record(entry),
            "protocol": entry.get("protocol"), "latency_s": latency}


def curves(entries):
    """One row per (primitive, library, device, mode): its points in size order."""
    rows = curve_rows(ok_entries(entries), ("impl", "precision", "device", "mode"), _point,
                      names=("primitive", "library", "device", "mode"))
    order = order_of(PRIMITIVES + GPU_LIBRARIES + CPU_LIBRARIES)
    return sorted(rows, key=lambda row: (order(row["primitive"]), row["device"] != "gpu", order(row["library"]),
                                         row["mode"]))


def crossovers(entries):
    """Per primitive and GPU mode: from which n the fastest GPU library beats the fastest CPU one."""
    found = []
    for primitive in dict.fromkeys(entry["impl"] for entry in ok_entries(entries)):
        mine = _by_library(_primitive_entries(entries, primitive))
        for row in crossovers_along_n(mine):
            row["primitive"] = primitive
            row["gpu_library"] = row.pop("gpu_impl")
            found.append(row)
    return found


def _counter(entry, name):
    return finite((entry or {}).get(name))


def _difference(slower, faster):
    """(seconds slower takes more than faster, whether they differ beyond noise); Nones where either is missing."""
    if slower is None or faster is None:
        return None, None
    return (slower["time_s"]["median"] - faster["time_s"]["median"],
            medians_differ(slower["time_s"], faster["time_s"]))


def storage_costs(entries):
    """Per primitive, GPU mode and n: allocation (thrust - thrust_cached) and synchronisation costs."""
    found = {}
    for entry in ok_entries(entries):
        if entry["device"] == "gpu" and entry["precision"] in GPU_LIBRARIES:
            found.setdefault((entry["impl"], entry["mode"], entry["n"]), {})[entry["precision"]] = entry
    rows = []
    for (primitive, mode, n), libraries in sorted(found.items(),
                                                  key=lambda item: (order_of(PRIMITIVES)(item[0][0]), item[0][1:])):
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


def memory_bandwidth(document):
    """(what reduce is held against, None), or (None, why not): stream's copy, else the memory roof."""
    stream = ((document["studies"].get("stream") or {}).get("derived") or {}).get("device_memory") or []
    copy = next((row["hbm"] for row in stream if row.get("operation") == "copy" and row.get("hbm")), None)
    if copy:
        return {"study": "stream", "source": "the stream study's copy", "what": f"stream copy, {copy['kernel']} "
                f"kernel, {copy['precision']}, n = {copy['n']}", "bytes_per_s": copy["bytes_per_s"]}, None
    roofline = (document.get("findings") or {}).get("roofline") or {}
    roof = roofline.get("bandwidth")
    if roof is None:
        return None, roofline.get("memory_roof_note")
    if roof["study"] == "stream":
        what = f"stream {roof.get('operation')}, {roof.get('kernel')} kernel, {roof['precision']}, n = {roof['n']}"
        source = "the run's memory roof: the stream study's fastest kernel past the L2 (it measured no copy there)"
    else:
        what = f"transfer {roof['impl']} {roof['precision']}, {roof['n']} bytes (2 x the bytes copied per second)"
        source = "the run's memory roof: the transfer study's device-to-device copy (no stream study in the run)"
    return {"study": roof["study"], "source": source, "what": what, "bytes_per_s": roof["bytes_per_s"]}, None


def reduce_bandwidth(entries, document):
    """Each GPU library's resident reduce from REDUCE_FROM_BYTES against the memory bandwidth."""
    reference, note = memory_bandwidth(document)
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
    rows.sort(key=lambda row: (row["n"], order_of(GPU_LIBRARIES)(row["library"])))
    return {"reference": reference, "note": note, "rows": rows, "from_bytes": REDUCE_FROM_BYTES,
            "target": REDUCE_TARGET, "target_text": REDUCE_TARGET_TEXT}


def sort_target(entries):
    """The sort of SORT_TARGET_N keys: the fastest GPU library per mode against the parallel CPU sort."""
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


def derive(study):
    entries = study["entries"]
    return {"curves": curves(entries), "crossovers": crossovers(entries), "storage_costs": storage_costs(entries),
            "sort_target": sort_target(entries), "failures": grouped_failures(entries)}


def derive_across(study, document):
    """reduce against the memory bandwidth, derived after the run's memory roof and stream's findings."""
    return {"reduce_bandwidth": reduce_bandwidth(study["entries"], document)}


MODE_NAMES = {"resident": "resident", "transfer_pinned": "pinned copies", "host": "CPU"}


def _mode(mode):
    return md(MODE_NAMES.get(mode, mode))


def _libraries(study):
    items = [f"{md(library.get('id'))} ({md(library.get('device'))}): {md(library.get('description'))}"
             + ("" if library.get("available") else f" **Not run here: {md(library.get('reason'))}**")
             for library in study.get("libraries") or [] if isinstance(library, dict)]
    caps = group_by((impl for impl in study.get("implementations") or [] if isinstance(impl, dict)
                     and impl.get("max_size")), lambda impl: (str(impl.get("library")), str(impl.get("max_size")),
                                                              str(impl.get("cap_reason"))),
                    lambda impl: str(impl.get("primitive")))
    items += [f"cap: {md(library)} runs {md(', '.join(primitives))} up to n = {md(size)} ({md(reason)})"
              for (library, size, reason), primitives in caps.items()]
    return items


def _rate_row(row):
    point = row["points"][-1]  # the largest size of the series
    latency = f"{seconds(point['latency_s'])}" if point.get("latency_s") else ""
    return [md(row["primitive"]), md(row["library"]), _mode(row["mode"]), str(point["n"]),
            seconds(point["median_s"]), rate(point["elements_per_s"], "elements/s", " "),
            gb_per_s(point["bytes_per_s"]), latency]


def _rates(study):
    rows = study["derived"].get("curves") or []
    return section("Primitives: elements per second", [bullets(_libraries(study)), *([table(
        ["primitive", "library", "mode", "largest n", "median time", "rate", "effective bandwidth",
         "one call, host-observed"], [_rate_row(row) for row in rows]), paragraph(
        "Each series at the largest size it ran (the plots have every size). Rate: elements per call over the median "
        "time. Effective bandwidth: the bytes a call must read and write (each array once; a radix sort's passes "
        "move several times that) over the median time, 10^9 bytes per second. Resident GPU entries other than sorts "
        "are timed on the device (back-to-back calls, launch latency held out), with one call as the host sees it "
        "beside them; sorts, which work in place, and every entry with copies are timed one call at a time on the "
        "host clock until its work is done, a sort's keys restored from an unsorted copy before each call, "
        "untimed. Thrust's calls wait for the device before they return, so its back-to-back device time holds "
        "the gaps in which the GPU waits for the host.")] if rows else [paragraph("No primitive was measured.")])])


def _crossovers(derived):
    header = ["primitive", "GPU mode", *crossover_header()]
    header[header.index("GPU impl")] = "GPU library"
    return table_section("Primitives: where the GPU beats the CPU", header, derived.get("crossovers") or [],
                         lambda found: [md(found["primitive"]), _mode(found["mode"]),
                                        *crossover_cells({**found, "gpu_impl": found.get("gpu_library")})], paragraph(
        "Per primitive and GPU mode, the fastest GPU library against the fastest CPU one at each size both measured; "
        "the GPU wins at a size only beyond the noise. Resident entries are compared twice: on their headline "
        "time and on one call as a CPU program that waits for it sees it."),
                         empty="No primitive was measured on both the CPU and the GPU.")


def _request_cell(row):
    if row["temporary_bytes"] is None:
        return "n/a"
    requests = row["temporary_requests"]
    count = "" if requests is None else f" in {requests:.0f} request{'s' if requests != 1 else ''}"
    return f"{byte_size(row['temporary_bytes'])}{count}"


def _difference_cell(row, cost):
    """A cost of storage_costs (allocation, synchronisation) and whether it is beyond noise."""
    value = row[f"{cost}_s"]
    return "n/a" if value is None else f"{seconds(value)}{noise_note(row[f'{cost}_beyond_noise'])}"


def _storage(derived):
    return table_section("Primitives: what Thrust's temporary storage and synchronisation cost", [
        "primitive", "n", "thrust", md("thrust_cached"), "cub", "allocation", "synchronisation", "thrust / cub",
        "temporary storage a call asks for", "cudaMalloc a call, cached"],
        [row for row in derived.get("storage_costs") or [] if row["mode"] == RESIDENT], lambda row: [
            md(row["primitive"]), str(row["n"]), *(seconds(row["median_s"].get(name))
                                                   for name in ("thrust", "thrust_cached", "cub")),
            _difference_cell(row, "allocation"), _difference_cell(row, "synchronisation")
            + (" (with allocation)" if row["synchronisation_includes_allocation"] else ""),
            ratio(row["thrust_over_cub"]), _request_cell(row), whole(row["cached_device_allocations"])], paragraph(
        "Resident, median times. thrust: thrust::device, whose calls take their temporary storage from cudaMalloc "
        "and give it back with cudaFree, which waits for the whole device; thrust_cached: the same calls through a "
        "caching allocator; cub: CUB's device API, its storage allocated once, nothing waited for. Allocation: "
        "thrust less thrust_cached. Synchronisation: thrust_cached less cub (every Thrust call waits for the device "
        "before it returns, reduce copies its sum back first, and Thrust dispatches on the host); where Thrust has "
        "no cached entry (transform, which takes no temporary storage) thrust less cub. \"within noise\": the two "
        "times' intervals overlap. The storage a call asks for is what the cache was asked in one call; thrust asks "
        "the same of cudaMalloc every time, and the cache gets it from cudaMalloc only in the first call (its count "
        "in a later call is the last column)."))


def _reduce_cost_item(row, costs):
    cost = next((found for found in costs if (found["primitive"], found["mode"], found["n"])
                 == ("reduce", RESIDENT, row["n"])), None)
    if row["library"] != "thrust" or not cost:
        return None
    return (f"n = {row['n']}: of thrust's {seconds(row['median_s'])}, {_difference_cell(cost, 'allocation')} went "
            f"to allocating ({_request_cell(cost)} from cudaMalloc and back through cudaFree, which waits for the "
            f"device) and {_difference_cell(cost, 'synchronisation')} to waiting for the device and copying the sum "
            f"back (thrust_cached against cub)")


def _reduce(derived):
    found = derived.get("reduce_bandwidth") or {}
    title = "Primitives: reduce against the memory bandwidth"
    reference = found.get("reference")
    if not found.get("rows"):
        return section(title, [paragraph(f"No resident GPU reduce of {byte_size(found.get('from_bytes'))} or more "
                                         f"was measured.")]) if found else []
    lead = (f"Held against {md(reference['what'])}: {gb_per_s(reference['bytes_per_s'])} ({md(reference['source'])})."
            if reference else f"No memory bandwidth to hold it against: {md(found.get('note'))}.")
    body = [[md(row["library"]), str(row["n"]), byte_size(row["bytes"]), seconds(row["median_s"]),
             gb_per_s(row["bytes_per_s"]), percent(row["fraction"]), seconds(row["latency_s"])]
            for row in found["rows"]]
    costs = [item for item in (_reduce_cost_item(row, derived.get("storage_costs") or []) for row in found["rows"])
             if item]
    return section(title, [paragraph(lead), table(
        ["library", "n", "bytes read", "median time", "effective bandwidth", "of the memory bandwidth",
         "one call, host-observed"], body), paragraph(
        f"Target: {md(found['target_text'])} (stated, not judged). Both figures count a call's traffic: reduce reads "
        f"its input once; a copy reads and writes. The headline time is back-to-back calls on the device clock, so a "
        f"Thrust call's wait for the device and its cudaFree leave the GPU idle inside it.")]
        + ([bullets(costs)] if costs else []))


def _sort(derived):
    found = derived.get("sort_target")
    if not found:
        return []
    cpu = md(found["cpu_library"])
    return section(f"Primitives: sorting 2^28 32-bit keys, GPU against {cpu}", [
        *([paragraph(md(found["note"]))] if found.get("note") else []), *table_blocks(
            ["GPU mode", "GPU library", "GPU time", f"{cpu} time", "speedup"], found.get("rows"), lambda row: [
                _mode(row["mode"]), md(row["gpu_library"]), seconds(row["gpu_median_s"]),
                seconds(found["cpu_median_s"]),
                "n/a" if row["speedup"] is None else ratio(row["speedup"]) + noise_note(row["beyond_noise"])],
            paragraph("Speedup: the CPU's time over the GPU's, each one sort of unsorted keys (the keys restored "
                      "before every call, untimed); with pinned copies the keys go in and come back inside the GPU's "
                      "time. Reported, not judged."))])


def sections(study, document):
    derived = study["derived"]
    return (_rates(study) + _crossovers(derived) + _storage(derived) + _reduce(derived) + _sort(derived)
            + failures_section(study, "Primitives: skipped and failed entries"))


PRIMITIVE_ELEMENTS = "elements per call (n)"


def plots(pyplot, study, plot_dir):
    """Per primitive: elements per second over n, crossovers marked; reduce's bandwidth against memory's."""
    derived = study["derived"]
    rows = derived.get("curves") or []
    study_charts = []
    for primitive, mine in group_by(rows, lambda row: row["primitive"]).items():
        series = charts.row_series(mine, ("library", "mode"))
        crossovers = [found for found in charts.timed(derived.get("crossovers") or [])
                      if found["primitive"] == primitive]
        study_charts += charts.line_charts(
            plot_dir, ("primitives", primitive), f"primitives {primitive}: elements per second",
            series, (lambda key: key[1],), charts.cpu_keys(series), ylabel="elements/s",
            value=lambda point: point["elements_per_s"], xlabel=PRIMITIVE_ELEMENTS,
            mark=charts.crossover_marks(crossovers, with_precision=False, axis="n"))
    found = derived.get("reduce_bandwidth") or {}
    reduce = charts.row_series([row for row in rows if row["primitive"] == "reduce"
                                and row["mode"] != "transfer_pinned"], ("library", "mode"))
    if reduce and found.get("reference"):
        reference, target = found["reference"], found["target"]  # the memory bandwidth reduce is held against
        study_charts += charts.line_charts(
            plot_dir, ("primitives_reduce_bandwidth",), "primitives reduce: effective bandwidth (bytes read per "
            "second)", reduce, ylabel="GB/s (10^9 bytes per second)",
            value=lambda point: point["bytes_per_s"] / 1e9 if point["bytes_per_s"] else None,
            xlabel=PRIMITIVE_ELEMENTS, mark=charts.lines_mark(
                charts.across(reference["bytes_per_s"] / 1e9,
                              charts.plain(textwrap.fill(f"memory bandwidth: {reference['what']}", 60))),
                charts.across(target * reference["bytes_per_s"] / 1e9, f"target: {target:.0%} of it", ":")))
    return charts.draw(pyplot, study_charts)


STUDY = Study(name="primitives", derive=lambda study, document, rounds: derive(study), derive_across=derive_across,
              summary=sections, plots=plots, rates=size_rates("elements"),
              axes={"impl": "primitive", "precision": "library", "n": "elements"}, position=120)
