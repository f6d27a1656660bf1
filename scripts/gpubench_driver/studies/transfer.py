"""Findings of the transfer study: bandwidth against size for every engine, host memory kind and
direction; the latency of the smallest copy; the size at which each curve reaches 90% of its
plateau; pinned over pageable; the never-written (zero page) pitfall and what a fresh allocation
costs; the link's theoretical rate beside what was achieved; host memory bandwidth; the one-time
cost of registering memory.

Entry axes in this study: impl = engine, mode = host memory kind, precision = direction,
n = bytes per copy. Bandwidth is bytes_transferred / median time, in bytes per second; the
report prints it in GiB/s (2^30 bytes per second) and says so."""
import math

from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.stats import beyond_spread, median_interval, time_per_item

PLATEAU_FRACTION = 0.9
GIB = float(1 << 30)
# PCIe generation -> (transfer rate per lane in GT/s, line-code efficiency): 8b/10b up to
# Gen 2, 128b/130b from Gen 3; Gen 6 (PAM4, FLIT mode) is counted at its raw rate.
PCIE_GENERATIONS = {1: (2.5, 0.8), 2: (5.0, 0.8), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130),
                    5: (32.0, 128 / 130), 6: (64.0, 1.0)}
LINK_DIRECTIONS = ("h2d", "d2h")


def bandwidth(entry):
    moved = entry.get("bytes_transferred")
    return moved / entry["time_s"]["median"] if moved else None


def _curves(entries):
    """{(engine, memory, direction, device): [points in size order]} of the ok entries that move bytes."""
    curves = {}
    for entry in ok_entries(entries):
        rate = bandwidth(entry)
        if rate is None:
            continue
        key = (entry["impl"], entry["mode"], entry["precision"], entry["device"])
        curves.setdefault(key, []).append({"n": entry["n"], "median_s": entry["time_s"]["median"],
                                           "bytes_per_s": rate,
                                           "interval_s": median_interval(entry["time_s"]).record()})
    for points in curves.values():
        points.sort(key=lambda point: point["n"])
    return curves


def plateau_size(points, fraction=PLATEAU_FRACTION):
    """(plateau bytes/s, size reaching `fraction` of it): the plateau is the rate of the largest
    copy measured (what large copies sustain; a small host copy that fits in a cache can be faster
    and is no plateau); the size is the first from which every larger measured size stays at or
    above the threshold, interpolated on log2(size) from the size before it (the smallest size
    when even that one is there)."""
    plateau = points[-1]["bytes_per_s"]
    threshold = fraction * plateau
    first = len(points) - 1
    while first > 0 and points[first - 1]["bytes_per_s"] >= threshold:
        first -= 1
    if first == 0:
        return plateau, points[0]["n"]
    below, above = points[first - 1], points[first]
    share = (threshold - below["bytes_per_s"]) / (above["bytes_per_s"] - below["bytes_per_s"])
    low, high = math.log2(below["n"]), math.log2(above["n"])
    return plateau, 2 ** (low + share * (high - low))


def curve_rows(entries):
    """One row per (engine, memory, direction): its points, the latency of its smallest copy,
    its plateau and the size at which it reaches PLATEAU_FRACTION of it."""
    rows = []
    for (engine, memory, direction, device), points in sorted(_curves(entries).items()):
        plateau, size = plateau_size(points)
        rows.append({"impl": engine, "mode": memory, "direction": direction, "device": device, "points": points,
                     "smallest_n": points[0]["n"], "smallest_latency_s": points[0]["median_s"],
                     "plateau_bytes_per_s": plateau, "size_at_90_percent": size})
    return rows


def _at(rows, engine, memory, direction):
    return next((row for row in rows if (row["impl"], row["mode"], row["direction"]) == (engine, memory, direction)),
                None)


def _ratio_rows(rows, numerator, denominator, engine="copy_engine", directions=LINK_DIRECTIONS):
    """Per direction: numerator memory's bandwidth over denominator memory's at every size both
    measured, whether they differ beyond noise (a ratio that does not is no finding of a faster
    memory), and at the largest such size."""
    found = []
    for direction in directions:
        top, bottom = _at(rows, engine, numerator, direction), _at(rows, engine, denominator, direction)
        if not top or not bottom:
            continue
        below = {point["n"]: point for point in bottom["points"]}
        ratios = [{"n": point["n"], "ratio": point["bytes_per_s"] / below[point["n"]]["bytes_per_s"],
                   "beyond_noise": beyond_spread(time_per_item(point, "bytes_per_s"),
                                                 time_per_item(below[point["n"]], "bytes_per_s"))}
                  for point in top["points"] if point["n"] in below]
        if ratios:
            found.append({"direction": direction, "numerator": numerator, "denominator": denominator,
                          "ratios": ratios, "at_largest": ratios[-1]})
    return found


def link_rate(gpu):
    """Theoretical bytes/s per direction of the GPU's PCIe link from nvidia-smi's generation and
    width (the maximum the GPU and system allow: the current ones drop while the link idles)."""
    generation, width = (gpu or {}).get("pcie.link.gen.max"), (gpu or {}).get("pcie.link.width.max")
    if generation not in PCIE_GENERATIONS or not isinstance(width, int) or width <= 0:
        return None
    transfers, efficiency = PCIE_GENERATIONS[generation]
    return {"generation": generation, "width": width, "bytes_per_s": transfers * 1e9 * efficiency * width / 8,
            "rule": f"{transfers:g} GT/s x {width} lanes x {efficiency:.4g} line-code efficiency / 8 bits"}


def link_use(rows, link):
    """Each copy-engine and zero-copy curve across the link: its plateau over the link's rate."""
    if not link:
        return []
    return [{"impl": row["impl"], "mode": row["mode"], "direction": row["direction"],
             "plateau_bytes_per_s": row["plateau_bytes_per_s"],
             "fraction_of_link": row["plateau_bytes_per_s"] / link["bytes_per_s"]}
            for row in rows if row["direction"] in LINK_DIRECTIONS]


def registration(entries):
    """The one-time cost of cudaHostRegister at each size, and per GiB."""
    return [{"n": e["n"], "median_s": e["time_s"]["median"], "seconds_per_gib": e["time_s"]["median"] * GIB / e["n"]}
            for e in sorted(ok_entries(entries), key=lambda e: e["n"]) if e.get("impl") == "host_register"]


def progress_rates(counters, median_s):
    """The bandwidth of one entry for the progress line: the bytes_transferred counter its console
    line reports (bidirectional copies count both directions; registering moves nothing)."""
    moved = counters.get("bytes_transferred")
    return [f"{moved / median_s / GIB:.2f} GiB/s"] if moved and moved > 0 else []


def derive(entries, gpu=None):
    rows = curve_rows(entries)
    link = link_rate(gpu)
    return {
        "curves": rows,
        "pinned_over_pageable": _ratio_rows(rows, "pinned", "pageable"),
        "zero_page_over_written": _ratio_rows(rows, "pageable_zero_page", "pageable", directions=("h2d",)),
        "first_touch_over_written": _ratio_rows(rows, "pageable_first_touch", "pageable"),
        "link": link,
        "link_use": link_use(rows, link),
        "registration": registration(entries),
        "plateau_fraction": PLATEAU_FRACTION,
        "failures": grouped_failures(entries),
    }
