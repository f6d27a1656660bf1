"""summary.md: the launch_overhead study's sections, from its `derived` (derive_launch_overhead.py)."""
from gpubench_driver.lib.sections import grouped_failures, noise_note
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import md, percent, ratio, seconds
from gpubench_driver.studies.launch_overhead import GRAPH, MODES, STREAM, SYNC_EACH

MODE_NAMES = {SYNC_EACH: "synchronised after each", STREAM: "back to back on a stream", GRAPH: "one CUDA graph",
              "fused": "fused into one kernel"}
LAUNCHED = {SYNC_EACH: "with a synchronisation after each kernel", STREAM: "launched back to back from a stream",
            GRAPH: "as one CUDA graph"}


def _with_interval(value, interval, show=seconds):
    return show(value) + (f" ({show(interval[0])}–{show(interval[1])})" if interval else "")


def _per_kernel(item):
    return _with_interval(item["per_kernel_s"], item["per_kernel_interval_s"])


def _launch(derived):
    launch = derived.get("launch") or {}
    title = "Launch overhead: what a launch costs"
    items = []
    latency = launch.get("latency")
    if latency:
        items.append(f"An empty kernel launched and waited for (cudaStreamSynchronize), per kernel over a chain of "
                     f"{latency['n']}: **{_per_kernel(latency)}**.")
    rows = [[md(MODE_NAMES.get(item["mode"], item["mode"])), str(item["n"]), seconds(item["median_s"]), _per_kernel(item)]
            for item in launch.get("per_kernel") or []]
    rows += [[f"{md(MODE_NAMES.get(slope['mode'], slope['mode']))}: one more kernel", f"{slope['from_n']} to {slope['to_n']}",
              "", _with_interval(slope["per_kernel_s"], slope["interval_s"])] for slope in launch.get("marginal") or []]
    if not items and not rows:
        return section(title, [paragraph("No empty-kernel entry was measured.")])
    blocks = [bullets(items)] if items else []
    if rows:
        blocks += [table(["empty kernels", "kernels n", "call", "per kernel (interval)"], rows)]
    return section(title, blocks + [paragraph(
        "An empty kernel (one thread, no work), host clock from the first launch to the stream's synchronisation. "
        "Per kernel: the call's median over n. One more kernel: the slope between the two longest chains measured, "
        "which leaves out the synchronisation's fixed cost. Intervals: the medians' (between trials, or within one "
        "process where the run had one trial).")])


def _busy(item):
    if item["busy_fraction"] is None:
        return "n/a"
    return _with_interval(item["busy_fraction"], item["busy_fraction_interval"], percent)


def _gaps(item):
    return "n/a" if item["gap_per_kernel_s"] is None else seconds(item["gap_per_kernel_s"])


def _util(item):
    return "n/a" if item["gpu_util_mean"] is None else f"{item['gpu_util_mean']:.0f}%"


def _chains(derived):
    chains = derived.get("chains") or []
    title = "Launch overhead: a chain of small kernels"
    if not chains:
        return section(title, [paragraph("No add_kernel entry was measured.")])
    body = [[str(chain["n"]), md(MODE_NAMES[mode]), seconds(item["median_s"]), _per_kernel(item), _busy(item),
             _gaps(item), seconds(item["outside_s"]), _util(item)]
            for chain in chains for mode in MODES if (item := chain["modes"].get(mode))]
    steps = next((item["timer_step_s"] for chain in chains for item in chain["modes"].values() if item["timer_step_s"]),
                 None)
    return section(title, [table(["kernels n", "launched", "call", "per kernel (interval)",
                                  "GPU busy: kernels' own time / call (interval)", "gap between kernels",
                                  "before the first and after the last", "NVML utilisation"], body), paragraph(
        "Each kernel adds a random value to 2^16 floats (256 KiB, in the L2 cache); the result is checked bit for "
        "bit against the host's additions. GPU busy: the sum of the kernels' spans (each kernel's first block's "
        "start to its last block's end on the GPU's global timer, median over the entry's calls) over the call's "
        "median time; the rest of the call the GPU ran none of the chain's kernels. Gap between kernels: the "
        "chain's span (first kernel's start to last kernel's end) less the kernels' own time, per gap. Before the "
        "first and after the last: the call's time less the chain's span (the first launch's latency and the "
        "synchronisation's return). "
        + (f"The global timer's smallest step here: {seconds(steps)}. " if steps else "")
        + "NVML utilisation: the share of its sample periods in which a kernel ran, where the telemetry read any "
          "over the entry's samples (n/a: none fell inside).")])


def _speedup(found, what):
    if not found:
        return None
    return (f"n = {found['n']}: {what} {ratio(found['ratio'])}{noise_note(found['beyond_noise'])}, "
            f"{seconds(found['saved_per_kernel_s'])} saved per kernel")


def _graphs(derived):
    items = []
    for chain in derived.get("chains") or []:
        items += [text for text in (_speedup(chain["graph_over_stream"], "a graph over the stream"),
                                    _speedup(chain["graph_over_sync_each"], "a graph over synchronising each"),
                                    _speedup(chain["fused_over_graph"], "one fused kernel over the graph"))
                  if text]
    finding = derived.get("idle_finding")
    blocks = [bullets(items)] if items else []
    if finding:
        idle = finding["idle"]
        blocks.append(paragraph(
            f"\"A GPU must never idle between kernels\": in a chain of {finding['n']} small kernels the GPU was idle "
            + "; ".join(f"{_with_interval(idle[mode]['fraction'], idle[mode]['interval'], percent)} of the time "
                        f"{LAUNCHED[mode]}" for mode in (SYNC_EACH, STREAM, GRAPH)) + "."))
    return section("Launch overhead: what a graph buys", blocks) if blocks else []


def sections(study, document):
    derived = study["derived"]
    return (_launch(derived) + _chains(derived) + _graphs(derived)
            + grouped_failures(study, "Launch overhead: skipped and failed entries"))
