"""Findings of the collectives study: for every collective and placement, its algorithm bandwidth
(message bytes over the median time) and bus bandwidth (the algorithm bandwidth times nccl-tests'
factor, the bus_factor counter: all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all
(n-1)/n, broadcast 1; nccl-tests' doc/PERFORMANCE.md) against the message size; the latency of the
smallest message; and the all-reduce's bus bandwidth at the largest message measured (the issue's
8 GiB point where the run reached it).

With one rank nothing crosses a link and every factor but broadcast's is 0: the bus bandwidth is
then None (not 0) and the report gives the algorithm bandwidth alone, saying why.

Entry axes in this study: impl = collective, mode = placement, n = log2 of the message size in bytes
(message_bytes holds the size itself). Rates are bytes per second; the report prints GB/s (10^9 B/s),
as nccl-tests does."""
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.stats import median_interval

ONE_RANK = ("one rank: nothing crosses a link and nccl-tests' bus factor is 0 (n - 1 = 0) for every "
            "collective but broadcast, so only the algorithm bandwidth is reported")


def _point(entry):
    median = entry["time_s"]["median"]
    algorithm = entry["message_bytes"] / median
    ranks = int(entry["ranks"])
    return {"n": entry["n"], "message_bytes": entry["message_bytes"], "median_s": median,
            "interval_s": median_interval(entry["time_s"]).record(), "ranks": ranks,
            "algorithm_bytes_per_s": algorithm,
            "bus_bytes_per_s": algorithm * entry["bus_factor"] if ranks > 1 else None}


def curves(entries):
    """One row per (collective, placement): its points in size order, its smallest message's latency
    and its largest message's bandwidths."""
    found = {}
    for entry in ok_entries(entries):
        if entry.get("message_bytes") and entry.get("ranks") and entry.get("bus_factor") is not None:
            found.setdefault((entry["impl"], entry["mode"]), []).append(_point(entry))
    rows = []
    for (collective, placement), points in sorted(found.items()):
        points.sort(key=lambda point: point["message_bytes"])
        largest = points[-1]
        rows.append({"impl": collective, "mode": placement, "points": points, "ranks": largest["ranks"],
                     "smallest_bytes": points[0]["message_bytes"], "smallest_latency_s": points[0]["median_s"],
                     "largest_bytes": largest["message_bytes"],
                     "largest_algorithm_bytes_per_s": largest["algorithm_bytes_per_s"],
                     "largest_bus_bytes_per_s": largest["bus_bytes_per_s"]})
    return rows


def largest_all_reduce(rows):
    """The out-of-place all-reduce at its largest message (what the issue's target is about), or None."""
    row = next((row for row in rows if (row["impl"], row["mode"]) == ("all_reduce", "out_of_place")), None)
    if row is None:
        return None
    return {"message_bytes": row["largest_bytes"], "n": row["points"][-1]["n"], "ranks": row["ranks"],
            "algorithm_bytes_per_s": row["largest_algorithm_bytes_per_s"],
            "bus_bytes_per_s": row["largest_bus_bytes_per_s"]}


def progress_rates(axes, counters, median_s):
    """The entry's algorithm and bus bandwidth for the progress line, from its console counters."""
    size, factor, ranks = counters.get("message_bytes"), counters.get("bus_factor"), counters.get("ranks")
    if not size:
        return []
    algorithm = size / median_s
    rates = [f"algbw {algorithm / 1e9:.2f} GB/s"]
    if ranks and ranks > 1 and factor is not None:
        rates.append(f"busbw {algorithm * factor / 1e9:.2f} GB/s")
    return rates


def derive(study):
    rows = curves(study["entries"])
    ranks = {row["ranks"] for row in rows}
    return {"curves": rows, "ranks": max(ranks) if ranks else None,
            "one_rank_note": ONE_RANK if ranks == {1} else None,
            "largest_all_reduce": largest_all_reduce(rows), "failures": grouped_failures(study["entries"])}
