"""Findings of the roofline study: for each device, precision and size, the rate of the FMA chain
against its arithmetic intensity (k FMAs per element read, the batch axis), the bandwidth its
memory-bound points reached, the compute roof its compute-bound points reached, and the measured
ridge point where the two meet: the intensity below which the rate follows the bandwidth and above
which it follows the FMA units.

Intensity is FLOP per byte of memory traffic as the binary counts them (flop over memory_read_bytes +
memory_written_bytes: x read and y written once per call); rates are the entries' FLOP/s and bytes/s
over the median time."""
from gpubench_driver.lib.findings import grouped_failures, memory_traffic, ok_entries
from gpubench_driver.lib.stats import finite, median_interval

# A point follows a roof while it reaches this share of it: memory-bound until the bandwidth it
# achieves falls below it, compute-bound from where its rate reaches it of the compute roof.
FOLLOWS = 0.9


def _point(entry):
    moved, flop, median = memory_traffic(entry), finite(entry.get("flop")), entry["time_s"]["median"]
    return {"fma_per_element": entry["batch"], "intensity": flop / moved, "flop_per_s": flop / median,
            "bytes_per_s": moved / median, "median_s": median, "interval_s": median_interval(entry["time_s"]).record(),
            "element_bytes": (finite(entry.get("array_bytes")) or 0) / entry["n"] or None}


def series(entries):
    """One row per (implementation, device, mode, precision, n): its points in order of k."""
    found = {}
    for entry in ok_entries(entries):
        flop = finite(entry.get("flop"))
        if not entry.get("batch") or memory_traffic(entry) is None or not flop or flop <= 0:
            continue
        key = (entry["impl"], entry["device"], entry["mode"], entry["precision"], entry["n"])
        found.setdefault(key, []).append(_point(entry))
    rows = []
    for (impl, device, mode, precision, n), points in sorted(found.items()):
        points.sort(key=lambda point: point["fma_per_element"])
        rows.append({"impl": impl, "device": device, "mode": mode, "precision": precision, "n": n,
                     "points": points, **roofs(points)})
    return rows


def roofs(points):
    """The bandwidth and compute roof a series reached, their ridge point, and where its points turn:
    the largest k still at FOLLOWS of the bandwidth, the smallest k at FOLLOWS of the compute roof.
    Each point is also marked memory- or compute-bound by the side of the ridge it lies on, with its
    rate over the roof there (min(compute roof, bandwidth x intensity))."""
    bandwidth = max(point["bytes_per_s"] for point in points)
    compute = max(point["flop_per_s"] for point in points)
    ridge = compute / bandwidth
    for point in points:
        point["bound"] = "memory" if point["intensity"] < ridge else "compute"
        point["fraction_of_roof"] = point["flop_per_s"] / min(compute, bandwidth * point["intensity"])
    memory = {p["fma_per_element"] for p in points if p["bytes_per_s"] >= FOLLOWS * bandwidth}
    flops = {p["fma_per_element"] for p in points if p["flop_per_s"] >= FOLLOWS * compute}
    element = points[0]["element_bytes"]
    return {"bandwidth_bytes_per_s": bandwidth, "compute_flop_per_s": compute, "ridge_intensity": ridge,
            "ridge_fma_per_element": ridge * element if element else None,
            "memory_bound_until_fma": max(memory) if memory else None,
            "compute_bound_from_fma": min(flops) if flops else None,
            # Both roofs are measured only where some point follows the bandwidth alone and another the
            # FMA units alone: a sweep on one side of the ridge has its fastest point at both "roofs".
            "spans_ridge": bool(memory - flops and flops - memory)}


def derive(entries):
    return {"series": series(entries), "follows": FOLLOWS, "failures": grouped_failures(entries)}
