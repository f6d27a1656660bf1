"""Findings of the launch_overhead study: what one launch costs (an empty kernel launched and waited
for), the time per kernel of back-to-back launches and of a CUDA graph's replay, and for a chain of
small kernels doing real work, launched with a host synchronisation between each, back to back from a
stream, as a graph and fused into one kernel: its time per kernel, the share of its wall time the GPU
spent running the kernels (their spans on the GPU's global timer) and the share that was gaps, and what
the graph buys over the stream. Each figure with its interval (the entry's median interval: between its
trials, or within its one process).

Entry axes: impl (empty_kernel, add_kernel), mode (sync_each, stream, graph, fused), precision (none,
fp32), n = kernels in the chain. Every entry is timed on the host clock from the first launch to the
stream's synchronisation. Counters: kernels (run per call: n, or 1 fused), host_launches,
host_synchronizations; add_kernel's kernel_busy_s (the kernels' own device time per call, the sum of
their spans) and chain_span_s (first kernel's start to last kernel's end), timer_step_s (the global
timer's resolution), and NVML's gpu_util_mean where the harness's telemetry read it."""
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.formatting import seconds
from gpubench_driver.lib.stats import finite, median_interval, medians_differ

EMPTY, ADDS = "empty_kernel", "add_kernel"
SYNC_EACH, STREAM, GRAPH, FUSED = "sync_each", "stream", "graph", "fused"
MODES = (SYNC_EACH, STREAM, GRAPH, FUSED)


def _scaled(interval, factor):
    """[low, high] of an interval record times a positive factor; None where it has none."""
    return None if interval["low"] is None else [interval["low"] * factor, interval["high"] * factor]


def _fraction(part_s, interval):
    """part_s over a time and its interval ([low, high] of the share: the time's high end gives the low share)."""
    return None if interval["low"] is None else [part_s / interval["high"], part_s / interval["low"]]


def row(entry):
    """One entry's figures: its time and per-kernel time with intervals; for a chain that stamps its
    kernels, the busy and idle shares of the wall time, the gaps between kernels and the time outside
    the chain's span (the first launch's latency and the synchronisation's return)."""
    median = entry["time_s"]["median"]
    interval = median_interval(entry["time_s"]).record()
    kernels = finite(entry.get("kernels")) or entry["n"]
    found = {"impl": entry["impl"], "mode": entry["mode"], "n": entry["n"], "median_s": median,
             "interval_s": interval, "kernels": kernels, "per_kernel_s": median / entry["n"],
             "per_kernel_interval_s": _scaled(interval, 1 / entry["n"]),
             "host_launches": finite(entry.get("host_launches")),
             "host_synchronizations": finite(entry.get("host_synchronizations")),
             "gpu_util_mean": finite(entry.get("gpu_util_mean")), "timer_step_s": finite(entry.get("timer_step_s")),
             "busy_s": None, "busy_fraction": None, "busy_fraction_interval": None, "idle_fraction": None,
             "idle_fraction_interval": None, "chain_span_s": None, "gaps_s": None, "gap_per_kernel_s": None,
             "outside_s": None}
    busy, span = finite(entry.get("kernel_busy_s")), finite(entry.get("chain_span_s"))
    if busy is not None and busy > 0:
        shares = _fraction(busy, interval)
        found.update(busy_s=busy, busy_fraction=busy / median, busy_fraction_interval=shares,
                     idle_fraction=1 - busy / median,
                     idle_fraction_interval=None if shares is None else [1 - shares[1], 1 - shares[0]])
    if busy is not None and span is not None:
        # The span is the median of one trial's calls, the time the median over trials: where the span
        # is the longer (a chain synchronised after each kernel spans nearly all of its call), the two
        # come from different calls and their difference says nothing: left out, not shown negative.
        found.update(chain_span_s=span, gaps_s=span - busy, outside_s=median - span if span <= median else None,
                     gap_per_kernel_s=(span - busy) / (kernels - 1) if kernels > 1 else None)
    return found


def rows(entries):
    return [row(entry) for entry in sorted(ok_entries(entries), key=lambda entry: (
        entry["impl"] != EMPTY, entry["n"], MODES.index(entry["mode"]) if entry["mode"] in MODES else len(MODES)))]


def _at(found, impl, mode, n):
    return next((item for item in found if (item["impl"], item["mode"], item["n"]) == (impl, mode, n)), None)


def _entry_at(entries, impl, mode, n):
    return next((entry for entry in ok_entries(entries)
                 if (entry["impl"], entry["mode"], entry["n"]) == (impl, mode, n)), None)


def marginal(entries, impl, mode):
    """The cost of one more kernel: the slope of the time between the two longest chains measured
    ((t2 - t1) / (n2 - n1)), with the interval its ends' intervals give; None below two lengths."""
    members = sorted((entry for entry in ok_entries(entries) if (entry["impl"], entry["mode"]) == (impl, mode)),
                     key=lambda entry: entry["n"])
    if len(members) < 2:
        return None
    short, long = members[-2], members[-1]
    span = long["n"] - short["n"]
    low_interval, high_interval = median_interval(short["time_s"]), median_interval(long["time_s"])
    slope = (long["time_s"]["median"] - short["time_s"]["median"]) / span
    interval = ([(high_interval.low - low_interval.high) / span, (high_interval.high - low_interval.low) / span]
                if low_interval.known and high_interval.known else None)
    return {"impl": impl, "mode": mode, "from_n": short["n"], "to_n": long["n"], "per_kernel_s": slope,
            "interval_s": interval}


def launch_costs(entries, found):
    """The empty kernel's figures: launch + synchronisation (sync_each, per kernel, at the shortest
    chain measured), back-to-back launches (stream) and graph replay per kernel at each length, and the
    marginal cost of one more kernel each way."""
    empty = [item for item in found if item["impl"] == EMPTY]
    synced = sorted((item for item in empty if item["mode"] == SYNC_EACH), key=lambda item: item["n"])
    return {"latency": synced[0] if synced else None,
            "per_kernel": [item for item in empty if item["mode"] in (STREAM, GRAPH)],
            "marginal": [slope for slope in (marginal(entries, EMPTY, mode) for mode in (SYNC_EACH, STREAM, GRAPH))
                         if slope]}


def _speedup(entries, impl, faster, slower, n):
    """slower's time over faster's at n, and whether they differ beyond noise; None without both."""
    fast, slow = _entry_at(entries, impl, faster, n), _entry_at(entries, impl, slower, n)
    if not fast or not slow:
        return None
    return {"n": n, "ratio": slow["time_s"]["median"] / fast["time_s"]["median"],
            "beyond_noise": medians_differ(fast["time_s"], slow["time_s"]),
            "saved_per_kernel_s": (slow["time_s"]["median"] - fast["time_s"]["median"]) / n}


def chains(entries, found):
    """Per length of the add_kernel chain: each way of launching it, and what the graph buys over the
    stream and over synchronising each kernel, and what fusing buys over the graph."""
    lengths = sorted({item["n"] for item in found if item["impl"] == ADDS})
    return [{"n": n, "modes": {mode: item for mode in MODES if (item := _at(found, ADDS, mode, n))},
             "graph_over_stream": _speedup(entries, ADDS, GRAPH, STREAM, n),
             "graph_over_sync_each": _speedup(entries, ADDS, GRAPH, SYNC_EACH, n),
             "fused_over_graph": _speedup(entries, ADDS, FUSED, GRAPH, n)} for n in lengths]


def idle_finding(chain_rows):
    """At the longest chain with a host-synchronised, a stream and a graph entry: the idle share of each
    (and its interval), and the graph's gain over the stream. None without such a chain."""
    full = [item for item in chain_rows if all(mode in item["modes"] and item["modes"][mode]["idle_fraction"]
                                                 is not None for mode in (SYNC_EACH, STREAM, GRAPH))]
    if not full:
        return None
    chain = full[-1]
    idle = {mode: {"fraction": chain["modes"][mode]["idle_fraction"],
                   "interval": chain["modes"][mode]["idle_fraction_interval"],
                   "gap_per_kernel_s": chain["modes"][mode]["gap_per_kernel_s"]} for mode in (SYNC_EACH, STREAM, GRAPH)}
    return {"n": chain["n"], "idle": idle, "graph_over_stream": chain["graph_over_stream"]}


def progress_rates(axes, counters, median_s):
    """The time per kernel of the chain of one entry (its n), for the progress line."""
    return [f"{seconds(median_s / axes['n'])} per kernel"] if axes.get("n") else []


def derive(entries):
    found = rows(entries)
    chain_rows = chains(entries, found)
    return {"rows": found, "launch": launch_costs(entries, found), "chains": chain_rows,
            "idle_finding": idle_finding(chain_rows), "failures": grouped_failures(entries)}
