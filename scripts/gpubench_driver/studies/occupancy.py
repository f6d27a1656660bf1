"""Findings of the occupancy study: each kernel's rate against its launch configuration (threads per
block x blocks), as a fraction of its best configuration measured, beside the multiprocessors the grid
keeps busy and the warps it keeps resident; each block size's theoretical occupancy (the occupancy API)
and what limits it, beside the rate it reached; and the walk-through's launch (16 blocks of 128 threads
of the naive SGEMM, said to use less than a tenth of a big GPU) placed on the curve.

Entry axes: impl = kernel, mode resident, precision fp32, n = threads per block, batch = blocks. Every
entry of a kernel does the same work (a grid-stride loop over the whole problem), so its rate against
another configuration's is the inverse ratio of their device times. The counters say where the grid
lands (busy_multiprocessors, resident_warps, max_resident_warps, multiprocessors) and the kernel's
occupancy at its block size (blocks_per_multiprocessor, theoretical_occupancy, registers_per_thread,
shared_bytes_per_block); --describe's implementations list each kernel's occupancy at every block size
with the resources that limit it."""
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.formatting import percent, rate
from gpubench_driver.lib.stats import finite, interval_side, median_interval, time_ratio_interval

# The walk-through's launch and its claim (the binary's --describe "walkthrough" says the same).
WALKTHROUGH = {"kernel": "naive_sgemm", "blocks": 16, "threads_per_block": 128, "claimed_fraction": 0.1}
PLATEAU_FRACTION = 0.9  # a block size's plateau: the fewest blocks from which its rate stays this close to its best
LIMITS = ("threads", "blocks", "registers", "shared_memory", "barriers")
OCCUPANCY_COUNTERS = ("multiprocessors", "busy_multiprocessors", "resident_warps", "max_resident_warps",
                      "blocks_per_multiprocessor", "theoretical_occupancy", "registers_per_thread",
                      "shared_bytes_per_block")


def _rate(entry, counter):
    amount = finite(entry.get(counter))
    return amount / entry["time_s"]["median"] if amount else None


def _share(part, whole):
    return part / whole if part is not None and whole else None


def _point(entry, best):
    """An entry as a point of its kernel's curves: rates, the fraction of the kernel's best rate (and its
    interval, from both times' intervals), where the grid lands."""
    traffic = (finite(entry.get("memory_read_bytes")) or 0) + (finite(entry.get("memory_written_bytes")) or 0)
    counters = {name: finite(entry.get(name)) for name in OCCUPANCY_COUNTERS}
    return {"threads_per_block": entry["n"], "blocks": entry["batch"], "median_s": entry["time_s"]["median"],
            "interval_s": median_interval(entry["time_s"]).record(), "flop_per_s": _rate(entry, "flop"),
            "memory_bytes_per_s": traffic / entry["time_s"]["median"] if traffic else None,
            "fraction_of_best": best["time_s"]["median"] / entry["time_s"]["median"],
            "fraction_interval": time_ratio_interval(best["time_s"], entry["time_s"]), **counters,
            "busy_fraction": _share(counters["busy_multiprocessors"], counters["multiprocessors"]),
            "warp_fraction": _share(counters["resident_warps"], counters["max_resident_warps"])}


def _by_kernel(entries):
    found = {}
    for entry in ok_entries(entries):
        if entry.get("batch"):
            found.setdefault(entry["impl"], []).append(entry)
    return found


def _described_occupancy(implementations):
    """{kernel: {threads per block: {blocks_per_multiprocessor, occupancy, limited_by, registers_per_thread,
    shared_bytes_per_block}}} from --describe, keeping only well-typed fields (the file may come from anyone)."""
    found = {}
    for impl in implementations or []:
        if not isinstance(impl, dict) or not isinstance(impl.get("id"), str):
            continue
        table = {}
        for row in impl.get("occupancy") or []:
            threads = finite(row.get("threads_per_block")) if isinstance(row, dict) else None
            if threads is None:
                continue
            limited = row.get("limited_by")
            table[int(threads)] = {
                "blocks_per_multiprocessor": finite(row.get("blocks_per_multiprocessor")),
                "occupancy": finite(row.get("occupancy")),
                "registers_per_thread": finite(row.get("registers_per_thread")),
                "shared_bytes_per_block": finite(row.get("shared_bytes_per_block")),
                "limited_by": [name for name in limited if name in LIMITS] if isinstance(limited, list) else []}
        if table:
            found[impl["id"]] = table
    return found


def plateau_blocks(points, fraction=PLATEAU_FRACTION):
    """The fewest blocks from which every larger grid measured stays at `fraction` of the best rate of
    these points (one block size's curve, in block order); None without points."""
    if not points:
        return None
    best = max(point["fraction_of_best"] for point in points)
    first = len(points)
    while first > 0 and points[first - 1]["fraction_of_best"] >= fraction * best:
        first -= 1
    return points[first]["blocks"] if first < len(points) else None


def block_sizes(points, described):
    """Per threads per block: its best rate (as a fraction of the kernel's best), the blocks it reached
    it at, its plateau, the theoretical occupancy and what limits it (the entries' counters, the
    description's limiting resources)."""
    rows = []
    for threads in sorted({point["threads_per_block"] for point in points}):
        curve = sorted((point for point in points if point["threads_per_block"] == threads),
                       key=lambda point: point["blocks"])
        top = max(curve, key=lambda point: point["fraction_of_best"])
        told = described.get(threads, {})
        rows.append({"threads_per_block": threads, "best_fraction": top["fraction_of_best"],
                     "best_blocks": top["blocks"], "plateau_blocks": plateau_blocks(curve),
                     "theoretical_occupancy": top["theoretical_occupancy"],
                     "blocks_per_multiprocessor": top["blocks_per_multiprocessor"],
                     "registers_per_thread": top["registers_per_thread"],
                     "shared_bytes_per_block": top["shared_bytes_per_block"],
                     "limited_by": told.get("limited_by") or []})
    return rows


def kernels(entries, implementations=None):
    """Per kernel: every configuration as a point, its best, and its block sizes' rows."""
    described = _described_occupancy(implementations)
    rows = []
    for kernel, members in _by_kernel(entries).items():
        best = min(members, key=lambda entry: entry["time_s"]["median"])
        points = sorted((_point(entry, best) for entry in members),
                        key=lambda point: (point["threads_per_block"], point["blocks"]))
        top = next(point for point in points
                   if (point["threads_per_block"], point["blocks"]) == (best["n"], best["batch"]))
        rows.append({"impl": kernel, "points": points, "best": top,
                     "block_sizes": block_sizes(points, described.get(kernel, {})),
                     "theoretical": [{"threads_per_block": threads, **row}
                                     for threads, row in sorted(described.get(kernel, {}).items())]})
    return rows


def walkthrough(rows):
    """The walk-through's launch on each kernel measured at it: its fraction of the kernel's best
    configuration (and that fraction's interval), the share of the multiprocessors and warps it
    occupies, and whether the fraction lies below the claimed tenth beyond the interval ("below",
    "above") or not ("within noise"); the walk-through's own kernel first."""
    found = []
    for row in sorted(rows, key=lambda row: row["impl"] != WALKTHROUGH["kernel"]):
        point = next((point for point in row["points"] if point["blocks"] == WALKTHROUGH["blocks"]
                      and point["threads_per_block"] == WALKTHROUGH["threads_per_block"]), None)
        if point is None:
            continue
        claimed = WALKTHROUGH["claimed_fraction"]
        found.append({"impl": row["impl"], "fraction_of_best": point["fraction_of_best"],
                      "fraction_interval": point["fraction_interval"], "best": row["best"],
                      "busy_fraction": point["busy_fraction"], "warp_fraction": point["warp_fraction"],
                      "busy_multiprocessors": point["busy_multiprocessors"],
                      "multiprocessors": point["multiprocessors"], "resident_warps": point["resident_warps"],
                      "max_resident_warps": point["max_resident_warps"], "claimed_fraction": claimed,
                      "against_claim": interval_side(point["fraction_of_best"], point["fraction_interval"],
                                                     claimed)})
    return found


def progress_rates(axes, counters, median_s):
    """FLOP/s of one entry for the progress line, and its share of the GPU's warps."""
    flop = counters.get("flop")
    shown = [rate(flop / median_s)] if flop else []
    warps, most = counters.get("resident_warps"), counters.get("max_resident_warps")
    return shown + ([f"{percent(warps / most)} of the warps"] if warps and most else [])


def derive(study):
    rows = kernels(study["entries"], study.get("implementations"))
    return {"kernels": rows, "walkthrough": walkthrough(rows), "walkthrough_launch": dict(WALKTHROUGH),
            "plateau_fraction": PLATEAU_FRACTION, "failures": grouped_failures(study["entries"])}

