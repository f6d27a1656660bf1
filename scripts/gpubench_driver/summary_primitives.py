"""summary.md: the primitives study's sections, from its `derived` (derive_primitives.py)."""
from gpubench_driver.lib.sections import crossover_cells, crossover_header, grouped_failures, noise_note
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, percent, rate, ratio, seconds
from gpubench_driver.studies.primitives import RESIDENT

MODE_NAMES = {"resident": "resident", "transfer_pinned": "pinned copies", "host": "CPU"}


def _gb_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / 1e9:.1f} GB/s"


def _libraries(study):
    items = [f"{md(library.get('id'))} ({md(library.get('device'))}): {md(library.get('description'))}"
             + ("" if library.get("available") else f" **Not run here: {md(library.get('reason'))}**")
             for library in study.get("libraries") or [] if isinstance(library, dict)]
    caps = {}
    for impl in study.get("implementations") or []:
        if isinstance(impl, dict) and impl.get("max_size"):
            key = (str(impl.get("library")), str(impl.get("max_size")), str(impl.get("cap_reason")))
            caps.setdefault(key, []).append(str(impl.get("primitive")))
    items += [f"cap: {md(library)} runs {md(', '.join(primitives))} up to n = {md(size)} ({md(reason)})"
              for (library, size, reason), primitives in caps.items()]
    return items


def _rate_row(row):
    point = row["points"][-1]  # the largest size of the series
    latency = f"{seconds(point['latency_s'])}" if point.get("latency_s") else ""
    return [md(row["primitive"]), md(row["library"]), md(MODE_NAMES.get(row["mode"], row["mode"])), str(point["n"]),
            seconds(point["median_s"]), rate(point["elements_per_s"], "elements/s", " "),
            _gb_per_s(point["bytes_per_s"]), latency]


def _rates(study):
    derived = study["derived"]
    title = "Primitives: elements per second"
    rows = derived.get("curves") or []
    if not rows:
        return section(title, [bullets(_libraries(study)), paragraph("No primitive was measured.")])
    return section(title, [bullets(_libraries(study)), table(
        ["primitive", "library", "mode", "largest n", "median time", "rate", "effective bandwidth",
         "one call, host-observed"], [_rate_row(row) for row in rows]), paragraph(
        "Each series at the largest size it ran (the plots have every size). Rate: elements per call over the median "
        "time. Effective bandwidth: the bytes a call must read and write (each array once; a radix sort's passes "
        "move several times that) over the median time, 10^9 bytes per second. Resident GPU entries other than sorts "
        "are timed on the device (back-to-back calls, launch latency held out), with one call as the host sees it "
        "beside them; sorts, which work in place, and every entry with copies are timed one call at a time on the "
        "host clock until its work is done, a sort's keys restored from an unsorted copy before each call, "
        "untimed. Thrust's calls wait for the device before they return, so its back-to-back device time holds "
        "the gaps in which the GPU waits for the host.")])


def _crossovers(derived):
    title = "Primitives: where the GPU beats the CPU"
    rows = [[md(found["primitive"]), md(MODE_NAMES.get(found["mode"], found["mode"])),
             *crossover_cells({**found, "gpu_impl": found.get("gpu_library")})]
            for found in derived.get("crossovers") or []]
    if not rows:
        return section(title, [paragraph("No primitive was measured on both the CPU and the GPU.")])
    header = ["primitive", "GPU mode", *crossover_header()]
    header[header.index("GPU impl")] = "GPU library"
    return section(title, [table(header, rows), paragraph(
        "Per primitive and GPU mode, the fastest GPU library against the fastest CPU one at each size both measured; "
        "the GPU wins at a size only beyond the noise. Resident entries are compared twice: on their headline "
        "time and on one call as a CPU program that waits for it sees it.")])


def _request_cell(row):
    if row["temporary_bytes"] is None:
        return "n/a"
    requests = row["temporary_requests"]
    count = "" if requests is None else f" in {requests:.0f} request{'s' if requests != 1 else ''}"
    return f"{byte_size(row['temporary_bytes'])}{count}"


def _difference_cell(seconds_value, beyond_noise):
    return "n/a" if seconds_value is None else f"{seconds(seconds_value)}{noise_note(beyond_noise)}"


def _storage(derived):
    rows = [row for row in derived.get("storage_costs") or [] if row["mode"] == RESIDENT]
    if not rows:
        return []
    body = [[md(row["primitive"]), str(row["n"]), *(seconds(row["median_s"].get(name))
                                                     for name in ("thrust", "thrust_cached", "cub")),
             _difference_cell(row["allocation_s"], row["allocation_beyond_noise"]),
             _difference_cell(row["synchronisation_s"], row["synchronisation_beyond_noise"])
             + (" (with allocation)" if row["synchronisation_includes_allocation"] else ""),
             ratio(row["thrust_over_cub"]), _request_cell(row),
             "n/a" if row["cached_device_allocations"] is None else f"{row['cached_device_allocations']:.0f}"]
            for row in rows]
    return section("Primitives: what Thrust's temporary storage and synchronisation cost", [table(
        ["primitive", "n", "thrust", md("thrust_cached"), "cub", "allocation", "synchronisation", "thrust / cub",
         "temporary storage a call asks for", "cudaMalloc a call, cached"], body), paragraph(
        "Resident, median times. thrust: thrust::device, whose calls take their temporary storage from cudaMalloc "
        "and give it back with cudaFree, which waits for the whole device; thrust_cached: the same calls through a "
        "caching allocator; cub: CUB's device API, its storage allocated once, nothing waited for. Allocation: "
        "thrust less thrust_cached. Synchronisation: thrust_cached less cub (every Thrust call waits for the device "
        "before it returns, reduce copies its sum back first, and Thrust dispatches on the host); where Thrust has "
        "no cached entry (transform, which takes no temporary storage) thrust less cub. \"within noise\": the two "
        "times' intervals overlap. The storage a call asks for is what the cache was asked in one call; thrust asks "
        "the same of cudaMalloc every time, and the cache gets it from cudaMalloc only in the first call (its count "
        "in a later call is the last column).")])


def _reduce_cost_item(row, costs):
    cost = next((found for found in costs if (found["primitive"], found["mode"], found["n"])
                 == ("reduce", RESIDENT, row["n"])), None)
    if row["library"] != "thrust" or not cost:
        return None
    allocation = _difference_cell(cost["allocation_s"], cost["allocation_beyond_noise"])
    synchronisation = _difference_cell(cost["synchronisation_s"], cost["synchronisation_beyond_noise"])
    return (f"n = {row['n']}: of thrust's {seconds(row['median_s'])}, {allocation} went to allocating "
            f"({_request_cell(cost)} from cudaMalloc and back through cudaFree, which waits for the device) and "
            f"{synchronisation} to waiting for the device and copying the sum back (thrust_cached against cub)")


def _reduce(derived):
    found = derived.get("reduce_bandwidth") or {}
    title = "Primitives: reduce against the memory bandwidth"
    reference = found.get("reference")
    if not found.get("rows"):
        return section(title, [paragraph(f"No resident GPU reduce of {byte_size(found.get('from_bytes'))} or more "
                                         f"was measured.")]) if found else []
    lead = (f"Held against {md(reference['what'])}: {_gb_per_s(reference['bytes_per_s'])} ({md(reference['source'])})."
            if reference else f"No memory bandwidth to hold it against: {md(found.get('note'))}.")
    body = [[md(row["library"]), str(row["n"]), byte_size(row["bytes"]), seconds(row["median_s"]),
             _gb_per_s(row["bytes_per_s"]), percent(row["fraction"]), seconds(row["latency_s"])]
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


def _speedup_cell(row):
    return "n/a" if row["speedup"] is None else ratio(row["speedup"]) + noise_note(row["beyond_noise"])


def _sort(derived):
    found = derived.get("sort_target")
    if not found:
        return []
    title = f"Primitives: sorting 2^28 32-bit keys, GPU against {md(found['cpu_library'])}"
    blocks = [paragraph(md(found["note"]))] if found.get("note") else []
    if found.get("rows"):
        blocks.append(table(["GPU mode", "GPU library", "GPU time", f"{md(found['cpu_library'])} time", "speedup"],
                            [[md(MODE_NAMES.get(row["mode"], row["mode"])), md(row["gpu_library"]),
                              seconds(row["gpu_median_s"]), seconds(found["cpu_median_s"]),
                              _speedup_cell(row)]
                             for row in found["rows"]]))
        blocks.append(paragraph("Speedup: the CPU's time over the GPU's, each one sort of unsorted keys (the keys "
                                "restored before every call, untimed); with pinned copies the keys go in and come back "
                                "inside the GPU's time. Reported, not judged."))
    return section(title, blocks)


def sections(study, document):
    derived = study["derived"]
    return (_rates(study) + _crossovers(derived) + _storage(derived) + _reduce(derived) + _sort(derived)
            + grouped_failures(study, "Primitives: skipped and failed entries"))
