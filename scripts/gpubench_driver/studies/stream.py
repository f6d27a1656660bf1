"""The stream study's plug-in: bandwidth of each operation, kernel, mode and precision against its working
set; HBM against the theoretical peak, the L2 plateau, host DRAM, cache edges, Thrust against ours, the copies
and the run's memory roof (docs/studies.md). impl = <operation>_<kernel> per --describe; n = elements."""
import math

from gpubench_driver.lib import charts, check_figures
from gpubench_driver.lib.document import bullets, paragraph, section
from gpubench_driver.lib.figures import LATENCY, PRECISION_NAMES, THROUGHPUT, between_runs, figure
from gpubench_driver.lib.findings import (LEVEL_DROP, curve_rows, envelope, group_by, grouped_failures, interval_record,
                                          levels, memory_traffic, ok_entries, picked, positive)
from gpubench_driver.lib.formatting import byte_size, gb_per_s, md, percent, ratio, seconds
from gpubench_driver.lib.registry import CheckPoint, MemoryRoof, Study, traffic_rates
from gpubench_driver.lib.sections import failures_section, noise_note, table_blocks, table_section
from gpubench_driver.lib.stats import beyond_spread, time_per_item

RESIDENT, TRANSFER, HOST = "resident", "transfer_pinned", "host"
OWN_KERNELS = ("grid_stride", "one_per_thread")  # ours, against Thrust
THRUST = "thrust"
# A working set is past a cache when it is this many times its capacity: a streaming kernel then
# finds almost none of its arrays there from the call before.
BEYOND_CACHE = 4


def implementations(study):
    """{impl id: (operation, kernel)} from the binary's --describe."""
    return {impl.get("id"): (impl["operation"], impl["kernel"]) for impl in study.get("implementations") or []
            if isinstance(impl, dict) and all(isinstance(impl.get(key), str) for key in ("operation", "kernel"))}


def hierarchy(study):
    """(GPU facts, host facts) of --describe's memory_hierarchy, {} where absent."""
    found = study.get("memory_hierarchy") if isinstance(study.get("memory_hierarchy"), dict) else {}
    return tuple(part if isinstance(part := found.get(key), dict) else {} for key in ("gpu", "host"))


def theoretical_peak(gpu, rules):
    """The GPU's theoretical memory bandwidth from NVML's figures (its rule the binary's), or None."""
    rate = positive(gpu.get("peak_bytes_per_s"))
    return None if rate is None else {
        "bytes_per_s": rate, **{key: positive(gpu.get(key)) for key in ("max_memory_clock_mhz", "bus_width_bits",
                                                                        "transfers_per_clock")},
        "rule": rules.get("peak_rule")}


def _point(entry):
    moved, median = memory_traffic(entry), entry["time_s"]["median"]
    cold = positive((entry.get("cold_l2_s") or {}).get("median"))
    return {"n": entry["n"], "array_bytes": positive(entry.get("array_bytes")), "working_set_bytes": moved,
            "median_s": median, "bytes_per_s": moved / median, "interval_s": interval_record(entry),
            "cold_l2_bytes_per_s": moved / cold if cold else None, "protocol": entry.get("protocol")}


CURVE_FIELDS = ("impl", "operation", "kernel", "device", "mode", "precision")  # of a curve, and of its best points


def curves(study):
    """One row per (operation, kernel, device, mode, precision): its points in size order."""
    names = implementations(study)
    measured = [{**entry, **dict(zip(("operation", "kernel"), names[entry["impl"]]))} for entry in
                ok_entries(study["entries"]) if entry["impl"] in names and memory_traffic(entry) is not None]
    return sorted(curve_rows(measured, CURVE_FIELDS, _point),
                  key=lambda row: tuple(row[field] for field in ("operation", "device", "kernel", "mode", "precision")))


def _fastest(points):
    return max(points, key=lambda point: point["bytes_per_s"], default=None)


def _best(rows, keep):
    """The fastest point among the rows' points that keep(point) accepts, with its curve's fields; None."""
    return _fastest({**picked(row, *CURVE_FIELDS), **picked(point, "n", "working_set_bytes", "median_s",
                                                            "bytes_per_s", "interval_s")}
                    for row in rows for point in row["points"] if keep(point))


def _beyond(capacity, rows):
    """keep(point): the working set is past BEYOND_CACHE x capacity; without one, the rows' largest size."""
    if capacity:
        return lambda point: point["working_set_bytes"] >= BEYOND_CACHE * capacity
    largest = max((point["n"] for row in rows for point in row["points"]), default=None)
    return lambda point: point["n"] == largest


def device_memory(rows, l2_bytes, peak):
    """Per operation and kernel, the fastest resident GPU point past the L2 (HBM) and in it; the best HBM."""
    resident = [row for row in rows if row["device"] == "gpu" and row["mode"] == RESIDENT]
    per_kernel = []
    for (operation, kernel), mine in group_by(resident, lambda row: (row["operation"], row["kernel"])).items():
        hbm = _best(mine, _beyond(l2_bytes, mine)) if l2_bytes else None
        l2 = _best(mine, lambda point: point["working_set_bytes"] <= l2_bytes) if l2_bytes else None
        share = hbm["bytes_per_s"] / peak["bytes_per_s"] if hbm and peak else None
        per_kernel.append({"operation": operation, "kernel": kernel, "hbm": hbm, "l2": l2,
                           "hbm_fraction_of_peak": share,
                           "l2_over_hbm": l2["bytes_per_s"] / hbm["bytes_per_s"] if hbm and l2 else None})
    best = _fastest(row["hbm"] for row in per_kernel if row["hbm"])
    if best and peak:
        best = {**best, "fraction_of_peak": best["bytes_per_s"] / peak["bytes_per_s"]}
    note = None
    if not l2_bytes:
        note = "the L2 size is unknown (no GPU in --describe): no point is known to lie past it"
    elif resident and best is None:
        note = (f"no resident GPU working set reached {BEYOND_CACHE} x the L2 cache "
                f"({BEYOND_CACHE * l2_bytes / 2 ** 20:.0f} MiB): the sizes measured are the caches' ")
    return per_kernel, best, note


def host_memory(rows, host):
    """Per operation, the fastest CPU point past the last cache (else at the largest size); the best of them."""
    cpu = [row for row in rows if row["device"] == "cpu"]
    capacity = positive(host.get("l3_bytes")) or positive(host.get("l2_bytes"))
    per_operation = []
    for operation, mine in group_by(cpu, lambda row: row["operation"]).items():
        past = _best(mine, _beyond(capacity, mine)) if capacity else None
        dram = past or _best(mine, _beyond(None, mine))
        per_operation.append({"operation": operation, "dram": dram and {**dram, "past_caches": past is not None}})
    return per_operation, _fastest(row["dram"] for row in per_operation if row["dram"])


def _capacity_name(bytes_, capacities):
    """The cache whose capacity lies within a factor of 2 of an edge, or None."""
    near = [(abs(math.log2(bytes_ / size)), name) for name, size in capacities.items() if size]
    near = [item for item in near if item[0] <= 1]
    return min(near)[1] if near else None


def cache_edges(rows, l2_bytes, host):
    """Per device, operation and precision: the fastest kernels' levels and edges, each named by its cache."""
    threads = positive(host.get("threads")) or 1
    capacities = {"gpu": {"L2": l2_bytes},
                  "cpu": {"L1d (all threads)": (positive(host.get("l1d_bytes")) or 0) * threads,
                          "L2 (all threads)": (positive(host.get("l2_bytes")) or 0) * threads,
                          "L3": positive(host.get("l3_bytes"))}}
    groups = group_by((row for row in rows if row["mode"] in (RESIDENT, HOST)),
                      lambda row: (row["device"], row["operation"], row["precision"]))
    found = []
    for (device, operation, precision), mine in sorted(groups.items()):
        curve_levels, edges = levels(envelope(mine))
        for edge in edges:
            edge["cache"] = _capacity_name(edge["near_bytes"], capacities[device])
        found.append({"device": device, "operation": operation, "precision": precision, "levels": curve_levels,
                      "edges": edges})
    return found


def _at_largest(row, other):
    """(point of row, point of other) at the largest n both measured, or None."""
    theirs = {point["n"]: point for point in other["points"]}
    shared = [point for point in row["points"] if point["n"] in theirs]
    return (shared[-1], theirs[shared[-1]["n"]]) if shared else None


def thrust_over_own(rows):
    """Per operation and precision, resident: Thrust's bandwidth over our fastest kernel's at the largest n."""
    resident = {(row["operation"], row["kernel"], row["precision"]): row for row in rows
                if row["device"] == "gpu" and row["mode"] == RESIDENT}
    found = []
    for (operation, kernel, precision), thrust in sorted(resident.items()):
        pairs = [(own, pair) for own in OWN_KERNELS if kernel == THRUST and (operation, own, precision) in resident
                 and (pair := _at_largest(thrust, resident[(operation, own, precision)]))]
        if not pairs:
            continue
        own_kernel, (mine, own) = max(pairs, key=lambda item: (item[1][1]["n"], item[1][1]["bytes_per_s"]))
        found.append({"operation": operation, "precision": precision, "n": mine["n"], "own_kernel": own_kernel,
                      "thrust_bytes_per_s": mine["bytes_per_s"], "own_bytes_per_s": own["bytes_per_s"],
                      "ratio": mine["bytes_per_s"] / own["bytes_per_s"], "thrust_protocol": mine["protocol"],
                      "beyond_noise": beyond_spread(time_per_item(mine, "bytes_per_s"),
                                                    time_per_item(own, "bytes_per_s"))})
    return found


def transfer_cost(rows):
    """Per operation, kernel and precision: the pinned call's time over the resident one's at the largest n."""
    by_key = {(row["operation"], row["kernel"], row["precision"], row["mode"]): row for row in rows
              if row["device"] == "gpu"}
    found = []
    for (operation, kernel, precision, mode), row in sorted(by_key.items()):
        resident = by_key.get((operation, kernel, precision, RESIDENT))
        pair = _at_largest(row, resident) if mode == TRANSFER and resident else None
        if pair:
            moved, kept = pair
            found.append({"operation": operation, "kernel": kernel, "precision": precision, "n": moved["n"],
                          "transfer_s": moved["median_s"], "resident_s": kept["median_s"],
                          "time_ratio": moved["median_s"] / kept["median_s"]})
    return found


def derive(study):
    rows = curves(study)
    gpu, host = hierarchy(study)
    l2_bytes = positive(gpu.get("l2_bytes"))
    peak = theoretical_peak(gpu, study.get("rules") or {})
    per_operation, hbm, hbm_note = device_memory(rows, l2_bytes, peak)
    host_rows, dram = host_memory(rows, host)
    return {"curves": rows, "l2_bytes": l2_bytes, "theoretical": peak,
            "theoretical_note": None if peak else (gpu.get("peak_note") or gpu.get("reason")
                                                   or "the binary's --describe gave no theoretical bandwidth"),
            "device_memory": per_operation, "hbm": hbm, "hbm_note": hbm_note, "host_memory": host_rows,
            "host_dram": dram, "host_caches": {key: host.get(key) for key in ("l1d_bytes", "l2_bytes", "l3_bytes",
                                                                              "threads")},
            "cache_edges": cache_edges(rows, l2_bytes, host), "thrust_over_own": thrust_over_own(rows),
            "transfer_cost": transfer_cost(rows), "beyond_cache": BEYOND_CACHE, "level_drop": LEVEL_DROP,
            "failures": grouped_failures(study["entries"])}


def _peak_items(derived):
    peak = derived.get("theoretical")
    if peak:
        items = [f"Theoretical peak: {gb_per_s(peak['bytes_per_s'])}, NVML's maximum memory clock "
                 f"{peak['max_memory_clock_mhz']:.0f} MHz x a {peak['bus_width_bits']:.0f}-bit bus x "
                 f"{peak['transfers_per_clock']:.0f} transfers per clock / 8 bits per byte."]
    else:
        items = [f"No theoretical peak: {md(derived.get('theoretical_note'))}."]
    l2_bytes = derived.get("l2_bytes")
    items.append(f"L2 cache: {byte_size(l2_bytes)} (cudaDevAttrL2CacheSize); HBM points are those whose working set "
                 f"is at least {derived['beyond_cache']} x it." if l2_bytes else "L2 cache size unknown.")
    hbm = derived.get("hbm")
    if hbm:
        share = hbm.get("fraction_of_peak")
        items.append(f"Measured device memory bandwidth: **{gb_per_s(hbm['bytes_per_s'])}** ({md(hbm['operation'])} "
                     f"by {md(hbm['kernel'])}, {md(hbm['precision'])}, {byte_size(hbm['working_set_bytes'])})"
                     + (f", {percent(share)} of the theoretical peak" if share is not None else "")
                     + ": the roofline's memory roof and the headline's figure.")
    elif derived.get("hbm_note"):
        items.append(f"No device memory bandwidth: {md(derived['hbm_note'])}; the roofline keeps the transfer "
                     "study's device-to-device copy as its memory roof.")
    return items


def _kernel_row(row):
    hbm, l2 = row["hbm"], row["l2"]
    return [md(row["operation"]), md(row["kernel"]), f"{gb_per_s(hbm['bytes_per_s'])} ({md(hbm['precision'])})"
            if hbm else "n/a", percent(row["hbm_fraction_of_peak"]),
            f"{gb_per_s(l2['bytes_per_s'])} ({md(l2['precision'])}, {byte_size(l2['working_set_bytes'])})"
            if l2 else "n/a", ratio(row["l2_over_hbm"])]


def _device_memory(derived):
    rows = [row for row in derived.get("device_memory") or [] if row["hbm"] or row["l2"]]
    title = "Stream: device memory (HBM) and the L2 plateau"
    if not any(row["device"] == "gpu" for row in derived.get("curves") or []):
        return section(title, [paragraph("No GPU entry was measured" + (
            f": {md(derived['theoretical_note'])}." if derived.get("theoretical_note") else "."))])
    return section(title, [bullets(_peak_items(derived)), *table_blocks(
        ["operation", "kernel", "HBM: fastest (precision)", "of the theoretical peak",
         "L2 plateau: fastest (precision, working set)", "L2 / HBM"], rows, _kernel_row,
        paragraph("Resident GPU entries, device time of back-to-back calls. Bandwidth: STREAM's bytes (each array the "
                  "operation reads or writes, once per call: copy and scale 2 arrays, add and triad 3, dot 2) over the "
                  "median time; GB = 10^9 bytes. The L2 plateau: the fastest warm call whose working set fits in the "
                  "L2 cache, which keeps the arrays between calls; each such entry's cold-L2 time (one call after the "
                  "L2 is flushed) is in results.json."))])


def _host_memory(derived):
    rows = [row["dram"] for row in derived.get("host_memory") or [] if row["dram"]]  # each names its operation
    caches, header = derived.get("host_caches") or {}, ["operation", "fastest", "precision", "working set"]
    return table_section("Stream: host memory", header, rows, lambda row: [
        md(row["operation"]), gb_per_s(row["bytes_per_s"]), md(row["precision"]),
        byte_size(row["working_set_bytes"]) + ("" if row["past_caches"] else " (not past the caches)")],
        paragraph(f"OpenMP loops on {md(caches.get('threads'))} threads, each on the pages it first wrote, past "
                  f"{derived.get('beyond_cache')} x the largest cache glibc reports (L1d "
                  f"{byte_size(caches.get('l1d_bytes'))}, L2 {byte_size(caches.get('l2_bytes'))} per core, L3 "
                  f"{byte_size(caches.get('l3_bytes'))}): the "
                  "host's DRAM bandwidth. Where no size measured lies that far past them (or their size is "
                  "unknown), the largest size measured, marked: part of its arrays may still come from a cache."))


def _edge_row(row):
    edges = "; ".join(f"between {byte_size(edge['last_bytes'])} and {byte_size(edge['next_bytes'])}"
                      + (f" ({md(edge['cache'])})" if edge.get("cache") else "") for edge in row["edges"])
    return [md(row["device"]), md(row["operation"]), md(row["precision"]),
            "; ".join(f"{gb_per_s(level['bytes_per_s'])} from {byte_size(level['from_bytes'])} to "
                      f"{byte_size(level['to_bytes'])}" for level in row["levels"]),
            edges or "none within the sizes measured"]


def _cache_edges(derived):
    drop = percent(derived.get("level_drop"), 0)
    return table_section("Stream: where each cache level ends", [
        "device", "operation", "precision", "levels (fastest rate, working sets)", "a level ends"],
        derived.get("cache_edges") or [], _edge_row,
        paragraph(f"The fastest kernel at each working set (GPU: resident; CPU: OpenMP), from the first point within "
                  f"{drop} of its fastest on (smaller working sets are bound by "
                  f"launching the kernel or waking the threads, not by memory): a level ends where the rate falls "
                  f"below {drop} of the level's fastest, between the two sizes measured "
                  "either side. An edge within a factor of 2 of a cache's capacity is named after it (the CPU's L1d "
                  "and L2 times its threads)."))


def _kernels_and_copies(derived):
    blocks = table_blocks(
        ["operation", "precision", "working set of n", "Thrust", "our fastest", "Thrust / ours"],
        derived.get("thrust_over_own") or [], lambda row: [
            md(row["operation"]), md(row["precision"]), md(row["n"]),
            gb_per_s(row["thrust_bytes_per_s"]) + (" (host clock)" if row["thrust_protocol"] == "latency" else ""),
            f"{gb_per_s(row['own_bytes_per_s'])} ({md(row['own_kernel'])})",
            ratio(row["ratio"]) + noise_note(row["beyond_noise"])],
        paragraph("Resident, at the largest size both measured. Thrust's dot (thrust::inner_product) returns its sum "
                  "to the host, waiting for the device and allocating its temporary storage in every call: it is "
                  "timed on the host clock from the call to its return.")) + table_blocks(
        ["operation", "kernel", "precision", "n", "with copies (pinned)", "resident", "ratio"],
        derived.get("transfer_cost") or [], lambda row: [
            md(row["operation"]), md(row["kernel"]), md(row["precision"]), md(row["n"]), seconds(row["transfer_s"]),
            seconds(row["resident_s"]), ratio(row["time_ratio"])],
        paragraph("transfer_pinned: each call copies the arrays the operation reads in from pinned host memory and "
                  "its output (dot: the sum) back, host clock to completion; resident: the kernel alone, device time."))
    return section("Stream: Thrust against our kernels; the copies", blocks) if blocks else []


def sections(study, document):
    derived = study["derived"]
    return (_device_memory(derived) + _host_memory(derived) + _cache_edges(derived) + _kernels_and_copies(derived)
            + failures_section(study, "Stream: skipped and failed entries"))


WORKING_SET = "working set (bytes one call reads and writes, STREAM's count)"


def plots(pyplot, study, plot_dir):
    """One chart per operation: GB/s over the working set, with the theoretical peak and the L2 size."""
    derived = study["derived"]
    rows = derived.get("curves") or []
    peak, l2_bytes = derived.get("theoretical"), derived.get("l2_bytes")
    # The theoretical peak and the GPU's L2 size, on a chart with a GPU line.
    marks = charts.lines_mark(*([charts.across(peak["bytes_per_s"] / 1e9, f"theoretical peak "
                                               f"{peak['bytes_per_s'] / 1e9:.0f} GB/s (NVML)")] if peak else []),
                              *([charts.across(l2_bytes, f"GPU L2 cache, {l2_bytes / 2 ** 20:.0f} MiB", ":", True)]
                                if l2_bytes else []), when=lambda keys: any(key[1] != charts.HOST_MODE for key in keys))
    study_charts = []
    for operation, mine in group_by(rows, lambda row: row["operation"]).items():
        series = charts.row_series(mine, ("kernel", "mode", "precision"), "working_set_bytes")
        study_charts += charts.line_charts(
            plot_dir, ("stream", operation), f"stream {operation}: bandwidth against the working set",
            series, (lambda key: key[2], lambda key: key[1]), charts.cpu_keys(series),
            ylabel="GB/s (STREAM's bytes, 10^9 per second)", value=lambda point: point["bytes_per_s"] / 1e9,
            xlabel=WORKING_SET, mark=marks)
    return charts.draw(pyplot, study_charts)


RULE = ("the stream study's fastest resident kernel past the L2 cache (working set at least {beyond} x its "
        "size): STREAM's bytes (each array the operation reads or writes, once) per second")
THEORETICAL_MEMORY = "theoretical (NVML: max memory clock x bus width x 2 / 8)"
CAPTION = "the stream study's fastest kernel past the L2 cache ({operation}, {kernel}, {precision})"


def memory_bandwidth(study):
    """The measured HBM bandwidth as the run's memory roof, or (None, None) without one."""
    derived = study.get("derived") or {}
    best = derived.get("hbm")
    if not best:
        return None, None
    return {"study": "stream", **picked(best, "impl", "mode", "precision", "n", "median_s", "bytes_per_s"),
            "bytes_per_call": best["working_set_bytes"], "operation": best["operation"], "kernel": best["kernel"],
            "fraction_of_theoretical": best.get("fraction_of_peak"),
            "theoretical_bytes_per_s": (derived.get("theoretical") or {}).get("bytes_per_s"),
            "rule": RULE.format(beyond=derived.get("beyond_cache"))}, None


def memory_figure(found, entry, interval, reference):
    """The headline's device memory bandwidth, against NVML's theoretical peak (else the datasheet's)."""
    theoretical = found.get("theoretical_bytes_per_s")
    label = (f"Device memory bandwidth (stream {found.get('operation')}, {found.get('kernel')} kernel, "
             f"{PRECISION_NAMES.get(found['precision'], found['precision'])})")
    where = f"stream: {found['impl']} {found['mode']} {found['precision']} n={found['n']}"
    reference = {"value": theoretical, "what": THEORETICAL_MEMORY} if theoretical else reference
    timed_as = LATENCY if entry.get("protocol") == "latency" else THROUGHPUT  # Thrust's dot waits for its sum
    return figure("memory_bandwidth", label, found["bytes_per_s"], interval, "B/s", "higher", timed_as, where,
                  reference, between_runs=between_runs(entry, found["bytes_per_s"]))


def memory_summary(bandwidth):
    share = bandwidth.get("fraction_of_theoretical")
    return (f"Memory roof: {bandwidth['bytes_per_s'] / 1e9:.0f} GB/s, the stream study's fastest kernel past the "
            f"L2 cache ({md(bandwidth.get('operation'))} by {md(bandwidth.get('kernel'))}, "
            f"{md(bandwidth['precision'])}, {byte_size(bandwidth.get('bytes_per_call'))} moved per call)"
            + (f", {percent(share)} of the theoretical peak" if share is not None else "") + ".")


MEMORY_ROOF = MemoryRoof(
    rank=1, bandwidth=memory_bandwidth, absent="a stream study past the L2 cache", figure=memory_figure,
    caption=lambda bandwidth: charts.plain(CAPTION.format(**bandwidth)), summary=memory_summary)
STUDY = Study(name="stream", derive=lambda study, document, rounds: derive(study),
              summary=sections, plots=plots, roofline_marker="v", rates=traffic_rates, axes={"n": "elements"},
              memory_roof=MEMORY_ROOF, measures_roofs=True, position=100,
              check=CheckPoint(sizes=(1 << 28,), impls=("triad_one_per_thread", "dot_grid_stride"), modes=("resident",),
                               figures=check_figures.roof_figures(MEMORY_ROOF),
                               plateau="arrays of 1 GiB, 20x an H100's L2: bandwidth no longer grows with the arrays",
                               budget="triad and dot in FP32 and FP64, resident: four entries, the throughput rule"))
