"""Findings of the p2p study: for every route (an ordered GPU pair, the host to a GPU, a GPU to the
host), engine (copy engines, SM kernel) and direction (one way, both ways at once), its latency (the
median time of its smallest copy, host clock to completion), its bandwidth (bytes moved per second by
its largest copy; both ways counts both directions) and that bandwidth as a fraction of the link's
theoretical rate (the link_peak_bytes_per_s counter the binary takes from NVML: NVLink links x the
per-link rate, or PCIe generation x width; times two both ways); and the matrices of both over the
ends (the host and every GPU), source down, destination across, that the heat maps draw.

Entry axes in this study: impl = engine, mode = direction, precision = route
(<source>-<destination>, each "host" or "gpu<index>"), n = bytes per copy."""
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.stats import median_interval

HOST = "host"
DIRECTIONS = ("one_way", "both_ways")


def ends_of(route):
    """(source, destination) of a route name such as 'gpu0-gpu1' or 'host-gpu3'."""
    source, _, destination = route.partition("-")
    return source, destination


def end_order(end):
    """The host first, then the GPUs by index."""
    return (-1, "") if end == HOST else (int(end[3:]) if end[3:].isdigit() else 1 << 30, end)


def _curves(entries):
    """{(engine, direction, route): (points in size order, the largest entry)} of the ok entries."""
    curves = {}
    for entry in sorted(ok_entries(entries), key=lambda e: e["n"]):
        moved, median = entry.get("bytes_transferred"), entry["time_s"]["median"]
        if not moved or not median:
            continue
        points, _ = curves.get((entry["impl"], entry["mode"], entry["precision"]), ([], None))
        points.append({"n": entry["n"], "median_s": median, "bytes_per_s": moved / median,
                       "interval_s": median_interval(entry["time_s"]).record()})
        curves[(entry["impl"], entry["mode"], entry["precision"])] = (points, entry)
    return curves


def _row_order(key):
    """Engine, one way before both ways, then the source and destination ends in end_order."""
    engine, direction, route = key
    source, destination = ends_of(route)
    return engine, DIRECTIONS.index(direction) if direction in DIRECTIONS else len(DIRECTIONS), direction, \
        end_order(source), end_order(destination)


def route_rows(entries):
    """One row per (engine, direction, route): its points, latency, bandwidth and fraction of the link."""
    rows = []
    curves = _curves(entries)
    for (engine, direction, route) in sorted(curves, key=_row_order):
        points, largest = curves[(engine, direction, route)]
        source, destination = ends_of(route)
        peak = largest.get("link_peak_bytes_per_s")
        bandwidth = points[-1]["bytes_per_s"]
        rows.append({"impl": engine, "direction": direction, "route": route, "source": source,
                     "destination": destination, "between_gpus": HOST not in (source, destination),
                     "points": points, "latency_n": points[0]["n"], "latency_s": points[0]["median_s"],
                     "bandwidth_n": points[-1]["n"], "bandwidth_bytes_per_s": bandwidth,
                     "link_peak_bytes_per_s": peak, "fraction_of_link": bandwidth / peak if peak else None,
                     "peer_access": largest.get("peer_access")})
    return rows


def matrices(rows):
    """Per (engine, direction): the ends in order and the bandwidth and latency grids, source down and
    destination across (None where no route was measured)."""
    found = []
    for engine, direction in dict.fromkeys((row["impl"], row["direction"]) for row in rows):
        mine = [row for row in rows if (row["impl"], row["direction"]) == (engine, direction)]
        ends = sorted({end for row in mine for end in (row["source"], row["destination"])}, key=end_order)
        grid = {key: [[None] * len(ends) for _ in ends] for key in ("bandwidth_bytes_per_s", "latency_s")}
        for row in mine:
            for key, values in grid.items():
                values[ends.index(row["source"])][ends.index(row["destination"])] = row[key]
        found.append({"impl": engine, "direction": direction, "ends": ends, **grid})
    return found


def derive(study):
    rows = route_rows(study["entries"])
    return {"routes": rows, "matrices": matrices(rows), "topology": study.get("topology"),
            "failures": grouped_failures(study["entries"])}
