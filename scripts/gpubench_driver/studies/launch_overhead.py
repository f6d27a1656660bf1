"""The launch_overhead study's plug-in (its findings, sections, plots and claim): what one launch costs, and
for a chain of small kernels launched each way (synchronised, from a stream, as a graph, fused) its time per
kernel and the share of its wall time the GPU ran them (docs/studies.md, launch_overhead)."""
from gpubench_driver.lib import charts
from gpubench_driver.lib.check_figures import entries_at, time_figure
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import bullets, paragraph, section
from gpubench_driver.lib.findings import group_by, grouped_failures, interval_record, ok_entries
from gpubench_driver.lib.formatting import md, percent_interval, ratio, seconds
from gpubench_driver.lib.registry import CheckPoint, Study
from gpubench_driver.lib.sections import failures_section, noise_note, table_blocks, table_section
from gpubench_driver.lib.stats import finite, median_interval, medians_differ

EMPTY, ADDS = "empty_kernel", "add_kernel"
SYNC_EACH, STREAM, GRAPH, FUSED = "sync_each", "stream", "graph", "fused"
MODES = (SYNC_EACH, STREAM, GRAPH, FUSED)
LAUNCHES = (SYNC_EACH, STREAM, GRAPH)  # the ways of launching a chain kernel by kernel


def row(entry):
    """One entry's times per call and per kernel; for a stamped chain its busy and idle shares and gaps."""
    median = entry["time_s"]["median"]
    interval = interval_record(entry)
    kernels, per = finite(entry.get("kernels")) or entry["n"], 1 / entry["n"]
    found = {"impl": entry["impl"], "mode": entry["mode"], "n": entry["n"], "median_s": median,
             "interval_s": interval, "kernels": kernels, "per_kernel_s": median / entry["n"],
             "per_kernel_interval_s": None if interval["low"] is None else [interval["low"] * per,
                                                                            interval["high"] * per],
             **{name: finite(entry.get(name))
                for name in ("host_launches", "host_synchronizations", "gpu_util_mean", "timer_step_s")},
             **dict.fromkeys(("busy_s", "busy_fraction", "busy_fraction_interval", "idle_fraction",
                              "idle_fraction_interval", "chain_span_s", "gaps_s", "gap_per_kernel_s", "outside_s"))}
    busy, span = finite(entry.get("kernel_busy_s")), finite(entry.get("chain_span_s"))
    if busy is not None and busy > 0:
        # The share's low end comes from the time's high end.
        shares = None if interval["low"] is None else [busy / interval["high"], busy / interval["low"]]
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


def _at(items, impl, mode, n):
    """The first of the items (entries or rows) of that kernel, mode and chain length, or None."""
    return next((item for item in items if (item["impl"], item["mode"], item["n"]) == (impl, mode, n)), None)


def marginal(entries, impl, mode):
    """One more kernel's cost: the slope between the two longest chains, with its interval; None below two."""
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
    """The empty kernel: launch and wait, per kernel from a stream and a graph, one more kernel each way."""
    empty = [item for item in found if item["impl"] == EMPTY]
    synced = sorted((item for item in empty if item["mode"] == SYNC_EACH), key=lambda item: item["n"])
    return {"latency": synced[0] if synced else None,
            "per_kernel": [item for item in empty if item["mode"] in (STREAM, GRAPH)],
            "marginal": [slope for slope in (marginal(entries, EMPTY, mode) for mode in LAUNCHES) if slope]}


def _speedup(entries, faster, slower, n):
    """The add_kernel chain's time `slower` over `faster` at n, and whether they differ beyond noise."""
    fast, slow = _at(ok_entries(entries), ADDS, faster, n), _at(ok_entries(entries), ADDS, slower, n)
    if not fast or not slow:
        return None
    return {"n": n, "ratio": slow["time_s"]["median"] / fast["time_s"]["median"],
            "beyond_noise": medians_differ(fast["time_s"], slow["time_s"]),
            "saved_per_kernel_s": (slow["time_s"]["median"] - fast["time_s"]["median"]) / n}


# What one way of launching a chain buys over another: (key, faster, slower, the summary's words).
GAINS = (("graph_over_stream", GRAPH, STREAM, "a graph over the stream"),
         ("graph_over_sync_each", GRAPH, SYNC_EACH, "a graph over synchronising each"),
         ("fused_over_graph", FUSED, GRAPH, "one fused kernel over the graph"))


def chains(entries, found):
    """Per length of the add_kernel chain: each way of launching it and what each buys over another."""
    lengths = sorted({item["n"] for item in found if item["impl"] == ADDS})
    return [{"n": n, "modes": {mode: item for mode in MODES if (item := _at(found, ADDS, mode, n))},
             **{key: _speedup(entries, faster, slower, n) for key, faster, slower, _ in GAINS}} for n in lengths]


def idle_finding(chain_rows):
    """Each launching's idle share and the graph's gain at the longest chain measured all three ways; None."""
    full = [item for item in chain_rows if all(mode in item["modes"] and item["modes"][mode]["idle_fraction"]
                                                 is not None for mode in LAUNCHES)]
    if not full:
        return None
    chain = full[-1]
    idle = {mode: {"fraction": chain["modes"][mode]["idle_fraction"],
                   "interval": chain["modes"][mode]["idle_fraction_interval"],
                   "gap_per_kernel_s": chain["modes"][mode]["gap_per_kernel_s"]} for mode in LAUNCHES}
    return {"n": chain["n"], "idle": idle, "graph_over_stream": chain["graph_over_stream"]}


def progress_rates(axes, counters, median_s):
    """The time per kernel of the chain of one entry (its n), for the progress line."""
    return [f"{seconds(median_s / axes['n'])} per kernel"] if axes.get("n") else []


def derive(entries):
    found = rows(entries)
    chain_rows = chains(entries, found)
    return {"rows": found, "launch": launch_costs(entries, found), "chains": chain_rows,
            "idle_finding": idle_finding(chain_rows), "failures": grouped_failures(entries)}


MODE_NAMES = {SYNC_EACH: "synchronised after each", STREAM: "back to back on a stream", GRAPH: "one CUDA graph",
              FUSED: "fused into one kernel"}
LAUNCHED = {SYNC_EACH: "with a synchronisation after each kernel", STREAM: "launched back to back from a stream",
            GRAPH: "as one CUDA graph"}


def _seconds_interval(value, interval):
    return seconds(value) + (f" ({seconds(interval[0])}–{seconds(interval[1])})" if interval else "")


def _per_kernel(item):
    return _seconds_interval(item["per_kernel_s"], item["per_kernel_interval_s"])


def _launch(derived):
    launch = derived.get("launch") or {}
    title = "Launch overhead: what a launch costs"
    latency = launch.get("latency")
    items = [f"An empty kernel launched and waited for (cudaStreamSynchronize), per kernel over a chain of "
             f"{latency['n']}: **{_per_kernel(latency)}**."] if latency else []
    rows = [[md(MODE_NAMES.get(item["mode"], item["mode"])), str(item["n"]), seconds(item["median_s"]),
             _per_kernel(item)] for item in launch.get("per_kernel") or []]
    rows += [[f"{md(MODE_NAMES.get(slope['mode'], slope['mode']))}: one more kernel",
              f"{slope['from_n']} to {slope['to_n']}", "",
              _seconds_interval(slope["per_kernel_s"], slope["interval_s"])]
             for slope in launch.get("marginal") or []]
    if not items and not rows:
        return section(title, [paragraph("No empty-kernel entry was measured.")])
    return section(title, ([bullets(items)] if items else []) + table_blocks(
        ["empty kernels", "kernels n", "call", "per kernel (interval)"], rows, list) + [paragraph(
        "An empty kernel (one thread, no work), host clock from the first launch to the stream's synchronisation. "
        "Per kernel: the call's median over n. One more kernel: the slope between the two longest chains measured, "
        "which leaves out the synchronisation's fixed cost. Intervals: the medians' (between trials, or within one "
        "process where the run had one trial).")])


def _chains(derived):
    chains = derived.get("chains") or []
    steps = next((item["timer_step_s"] for chain in chains for item in chain["modes"].values() if item["timer_step_s"]),
                 None)
    return table_section("Launch overhead: a chain of small kernels", [
        "kernels n", "launched", "call", "per kernel (interval)", "GPU busy: kernels' own time / call (interval)",
        "gap between kernels", "before the first and after the last", "NVML utilisation"],
        [item for chain in chains for mode in MODES if (item := chain["modes"].get(mode))], lambda item: [
            str(item["n"]), md(MODE_NAMES[item["mode"]]), seconds(item["median_s"]), _per_kernel(item),
            percent_interval(item["busy_fraction"], item["busy_fraction_interval"]), seconds(item["gap_per_kernel_s"]),
            seconds(item["outside_s"]), "n/a" if item["gpu_util_mean"] is None else f"{item['gpu_util_mean']:.0f}%"],
        paragraph(
        "Each kernel adds a random value to 2^16 floats (256 KiB, in the L2 cache); the result is checked bit for "
        "bit against the host's additions. GPU busy: the sum of the kernels' spans (each kernel's first block's "
        "start to its last block's end on the GPU's global timer, median over the entry's calls) over the call's "
        "median time; the rest of the call the GPU ran none of the chain's kernels. Gap between kernels: the "
        "chain's span (first kernel's start to last kernel's end) less the kernels' own time, per gap. Before the "
        "first and after the last: the call's time less the chain's span (the first launch's latency and the "
        "synchronisation's return). "
        + (f"The global timer's smallest step here: {seconds(steps)}. " if steps else "")
        + "NVML utilisation: the share of its sample periods in which a kernel ran, where the telemetry read any "
          "over the entry's samples (n/a: none fell inside)."), empty="No add_kernel entry was measured.")


def _graphs(derived):
    items = [f"n = {found['n']}: {what} {ratio(found['ratio'])}{noise_note(found['beyond_noise'])}, "
             f"{seconds(found['saved_per_kernel_s'])} saved per kernel"
             for chain in derived.get("chains") or [] for key, _, _, what in GAINS if (found := chain[key])]
    finding = derived.get("idle_finding")
    blocks = [bullets(items)] if items else []
    if finding:
        idle = finding["idle"]
        blocks.append(paragraph(
            f"\"A GPU must never idle between kernels\": in a chain of {finding['n']} small kernels the GPU was idle "
            + "; ".join(f"{percent_interval(idle[mode]['fraction'], idle[mode]['interval'])} of the time "
                        f"{LAUNCHED[mode]}" for mode in LAUNCHES) + "."))
    return section("Launch overhead: what a graph buys", blocks) if blocks else []


def sections(study, document):
    derived = study["derived"]
    return (_launch(derived) + _chains(derived) + _graphs(derived)
            + failures_section(study, "Launch overhead: skipped and failed entries"))


CHAIN_KERNELS = "kernels in the chain (n)"


def plots(pyplot, study, plot_dir):
    """The time per kernel and the GPU's busy share against the chain's length."""
    rows = study["derived"].get("rows") or []
    per_kernel = group_by(rows, lambda row: (row["impl"], row["mode"]), lambda row: (row["n"], row))
    busy = group_by((row for row in rows if row["busy_fraction"] is not None), lambda row: (row["mode"],),
                    lambda row: (row["n"], row))
    study_charts = charts.line_charts(plot_dir, ("launch_overhead_per_kernel",),
                                      "launch_overhead: time per kernel (host clock, launch to synchronisation)",
                                      per_kernel, ylabel="call time / n (s)", value=lambda row: row["per_kernel_s"],
                                      xlabel=CHAIN_KERNELS)
    if busy:
        study_charts += charts.line_charts(plot_dir, ("launch_overhead_busy",),
                                           "launch_overhead: GPU busy share of a chain of small kernels\n"
                                           "(the kernels' own spans over the call's time)", busy,
                                           ylabel="kernels' time / call time", value=lambda row: row["busy_fraction"],
                                           xlabel=CHAIN_KERNELS)
    return charts.draw(pyplot, study_charts)


MOSTLY_IDLE = 0.5  # the host-synchronised chain's idle share from which gaps are "much of its time"


def idle_gaps(document):
    found = derived_of(document, "launch_overhead").get("idle_finding")
    if not found:
        return None
    idle, gain = found["idle"], found["graph_over_stream"]
    gaps_matter = idle["sync_each"]["fraction"] >= MOSTLY_IDLE
    graph_gains = bool(gain) and gain["ratio"] > 1 and gain["beyond_noise"] is not False
    verdict = (CONFIRMED if gaps_matter and graph_gains else REFUTED if not gaps_matter and not graph_gains else
               "depends on the launching: synchronising after each kernel leaves the GPU idle most of the time, but "
               "a graph buys nothing over launching back to back" if gaps_matter else
               "depends: the gaps are a small share, yet a graph still shortens the chain")
    shares = "; ".join(f"{percent_interval(idle[mode]['fraction'], idle[mode]['interval'])} {what}"
                       for mode, what in (("sync_each", "with a synchronisation after each kernel"),
                                          ("stream", "launched back to back from a stream"),
                                          ("graph", "as a CUDA graph")))
    graph = (f"; the graph ran the chain {ratio(gain['ratio'])} as fast as the stream"
             + ("" if gain["beyond_noise"] is not False else " (within the noise)")
             + f", {seconds(gain['saved_per_kernel_s'])} saved per kernel" if gain else "")
    return {"verdict": verdict, "numbers": {"n": found["n"], "idle": {mode: idle[mode]["fraction"] for mode in idle},
                                            "graph_over_stream": gain["ratio"] if gain else None},
            "answer": f"A chain of {found['n']} small kernels (each adding to 2^16 floats), the share of its time the "
                      f"GPU ran none of them: {shares}{graph}."}


CLAIMS = (
    Claim("idle_gaps", "A GPU must never idle between kernels: a chain of small kernels spends much of its time in "
          "launch gaps, which CUDA graphs remove",
          "the same profiling walk-through; CUDA graphs are NVIDIA's remedy for launch overhead", idle_gaps,
          studies=("launch_overhead",), position=10),
)

# gpubench check: what one launch of an empty kernel costs, per kernel of a chain long enough that the call's own
# start and end are a hundredth of it.
CHECK_KERNELS = 100
CHECK_LABELS = {SYNC_EACH: "Kernel launch latency (launch and wait, per kernel)",
                STREAM: "Kernel launch, back to back (per kernel)"}


def check_figures(study, document, sheet):
    """The empty kernel's time per kernel, launched and waited for (sync_each) and back to back (stream)."""
    return [time_figure("launch_overhead", entry, f"launch/{entry['mode']}", CHECK_LABELS[entry["mode"]],
                        per=entry.get("kernels") or entry["n"])
            for entry in entries_at(study, impl=EMPTY, n=CHECK_KERNELS) if entry["mode"] in CHECK_LABELS]


CHECK = CheckPoint(
    sizes=(CHECK_KERNELS,), impls=(EMPTY,), modes=(SYNC_EACH, STREAM), figures=check_figures,
    plateau="a chain of 100 empty kernels: the time per kernel no longer falls with a longer chain once the "
            "call's own start and end are spread over it (a latency: it has a floor, not a peak)",
    budget="two entries (launched and waited for, back to back), one trial, the latency protocol's stopping rule")


STUDY = Study(name="launch_overhead", derive=lambda study, document, rounds: derive(study["entries"]),
              summary=sections, plots=plots, rates=progress_rates, axes={"n": "kernels"}, claims=CLAIMS,
              experiment=True, check=CHECK, position=140)
