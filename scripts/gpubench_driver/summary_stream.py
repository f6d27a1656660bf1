"""summary.md: the stream study's sections, from its `derived` (derive_stream.py)."""
from gpubench_driver.lib.sections import grouped_failures, noise_note
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, percent, ratio, seconds


def gb_per_s(value):
    return "n/a" if value is None else f"{value / 1e9:.1f} GB/s"


def _point(point):
    """'triad by grid_stride, fp32, 768.0 MiB'."""
    return (f"{md(point['operation'])} by {md(point['kernel'])}, {md(point['precision'])}, "
            f"{byte_size(point['working_set_bytes'])}")


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
        items.append(f"Measured device memory bandwidth: **{gb_per_s(hbm['bytes_per_s'])}** ({_point(hbm)})"
                     + (f", {percent(share)} of the theoretical peak" if share is not None else "")
                     + ": the roofline's memory roof and the headline's figure.")
    elif derived.get("hbm_note"):
        items.append(f"No device memory bandwidth: {md(derived['hbm_note'])}; the roofline keeps the transfer "
                     "study's device-to-device copy as its memory roof.")
    return items


def _device_memory(derived):
    rows = [row for row in derived.get("device_memory") or [] if row["hbm"] or row["l2"]]
    title = "Stream: device memory (HBM) and the L2 plateau"
    if not any(row["device"] == "gpu" for row in derived.get("curves") or []):
        return section(title, [paragraph("No GPU entry was measured" + (
            f": {md(derived['theoretical_note'])}." if derived.get("theoretical_note") else "."))])
    blocks = [bullets(_peak_items(derived))]
    if rows:
        body = [[md(row["operation"]), md(row["kernel"]),
                 f"{gb_per_s(row['hbm']['bytes_per_s'])} ({md(row['hbm']['precision'])})" if row["hbm"] else "n/a",
                 percent(row["hbm_fraction_of_peak"]),
                 f"{gb_per_s(row['l2']['bytes_per_s'])} ({md(row['l2']['precision'])}, "
                 f"{byte_size(row['l2']['working_set_bytes'])})" if row["l2"] else "n/a",
                 ratio(row["l2_over_hbm"])] for row in rows]
        blocks += [table(["operation", "kernel", "HBM: fastest (precision)", "of the theoretical peak",
                          "L2 plateau: fastest (precision, working set)", "L2 / HBM"], body),
                   paragraph("Resident GPU entries, device time of back-to-back calls. Bandwidth: STREAM's bytes (each "
                             "array the operation reads or writes, once per call: copy and scale 2 arrays, add and "
                             "triad 3, dot 2) over the median time; GB = 10^9 bytes. The L2 plateau: the fastest "
                             "warm call whose working set fits in the L2 cache, which keeps the arrays between "
                             "calls; each such entry's cold-L2 time (one call after the L2 is flushed) is in "
                             "results.json.")]
    return section(title, blocks)


def _host_memory(derived):
    rows = [row for row in derived.get("host_memory") or [] if row["dram"]]
    if not rows:
        return []
    caches = derived.get("host_caches") or {}
    body = [[md(row["operation"]), gb_per_s(row["dram"]["bytes_per_s"]), md(row["dram"]["precision"]),
             byte_size(row["dram"]["working_set_bytes"])
             + ("" if row["dram"]["past_caches"] else " (not past the caches)")]
            for row in rows]
    return section("Stream: host memory", [
        table(["operation", "fastest", "precision", "working set"], body),
        paragraph(f"OpenMP loops on {md(caches.get('threads'))} threads, each on the pages it first wrote, past "
                  f"{derived['beyond_cache']} x the largest cache glibc reports (L1d "
                  f"{byte_size(caches.get('l1d_bytes'))}, L2 {byte_size(caches.get('l2_bytes'))} per core, L3 "
                  f"{byte_size(caches.get('l3_bytes'))}): the "
                  "host's DRAM bandwidth. Where no size measured lies that far past them (or their size is "
                  "unknown), the largest size measured, marked: part of its arrays may still come from a cache.")])


def _levels_text(levels):
    return "; ".join(f"{gb_per_s(level['bytes_per_s'])} from {byte_size(level['from_bytes'])} to "
                     f"{byte_size(level['to_bytes'])}" for level in levels)


def _edges_text(edges):
    if not edges:
        return "none within the sizes measured"
    return "; ".join(f"between {byte_size(edge['last_bytes'])} and {byte_size(edge['next_bytes'])}"
                     + (f" ({md(edge['cache'])})" if edge.get("cache") else "") for edge in edges)


def _cache_edges(derived):
    rows = derived.get("cache_edges") or []
    if not rows:
        return []
    body = [[md(row["device"]), md(row["operation"]), md(row["precision"]), _levels_text(row["levels"]),
             _edges_text(row["edges"])] for row in rows]
    return section("Stream: where each cache level ends", [
        table(["device", "operation", "precision", "levels (fastest rate, working sets)", "a level ends"], body),
        paragraph(f"The fastest kernel at each working set (GPU: resident; CPU: OpenMP), from the first point within "
                  f"{percent(derived['level_drop'], 0)} of its fastest on (smaller working sets are bound by "
                  f"launching the kernel or waking the threads, not by memory): a level ends where the rate falls "
                  f"below {percent(derived['level_drop'], 0)} of the level's fastest, between the two sizes measured "
                  "either side. An edge within a factor of 2 of a cache's capacity is named after it (the CPU's L1d "
                  "and L2 times its threads).")])


def _kernels_and_copies(derived):
    thrust = derived.get("thrust_over_own") or []
    copies = derived.get("transfer_cost") or []
    blocks = []
    if thrust:
        blocks += [table(["operation", "precision", "working set of n", "Thrust", "our fastest", "Thrust / ours"],
                         [[md(row["operation"]), md(row["precision"]), md(row["n"]),
                           gb_per_s(row["thrust_bytes_per_s"]) + (" (host clock)" if row["thrust_protocol"] == "latency"
                                                                  else ""),
                           f"{gb_per_s(row['own_bytes_per_s'])} ({md(row['own_kernel'])})",
                           ratio(row["ratio"]) + noise_note(row["beyond_noise"])] for row in thrust]),
                   paragraph("Resident, at the largest size both measured. Thrust's dot (thrust::inner_product) "
                             "returns its sum to the host, waiting for the device and allocating its temporary storage in "
                             "every call: it is timed on the host clock from the call to its return.")]
    if copies:
        blocks += [table(["operation", "kernel", "precision", "n", "with copies (pinned)", "resident", "ratio"],
                         [[md(row["operation"]), md(row["kernel"]), md(row["precision"]), md(row["n"]),
                           seconds(row["transfer_s"]), seconds(row["resident_s"]), ratio(row["time_ratio"])]
                          for row in copies]),
                   paragraph("transfer_pinned: each call copies the arrays the operation reads in from pinned host "
                             "memory and its output (dot: the sum) back, host clock to completion; resident: the "
                             "kernel alone, device time.")]
    return section("Stream: Thrust against our kernels; the copies", blocks) if blocks else []


def sections(study, document):
    derived = study["derived"]
    return (_device_memory(derived) + _host_memory(derived) + _cache_edges(derived) + _kernels_and_copies(derived)
            + grouped_failures(study, "Stream: skipped and failed entries"))
