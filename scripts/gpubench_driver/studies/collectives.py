"""The collectives study's plug-in: per collective and placement, algorithm and bus bandwidth (nccl-tests'
factors) against message size, the smallest message's latency, the largest all-reduce; with one rank the bus
bandwidth is None (nothing crosses a link; docs/studies.md). n is log2 of the message bytes."""
from gpubench_driver.lib import charts
from gpubench_driver.lib.check_figures import bandwidth_figure, entries_at
from gpubench_driver.lib.document import paragraph, section, table
from gpubench_driver.lib.findings import group_by, grouped_failures, interval_record, ok_entries, picked
from gpubench_driver.lib.formatting import byte_size, gb_per_s, md, seconds
from gpubench_driver.lib.registry import CheckPoint, Comparison, Run, Study, csv
from gpubench_driver.lib.sections import compared, failures_section, reference_section, table_section, time_ratio_cell

ONE_RANK = ("one rank: nothing crosses a link and nccl-tests' bus factor is 0 (n - 1 = 0) for every "
            "collective but broadcast, so only the algorithm bandwidth is reported")


def _point(entry):
    median = entry["time_s"]["median"]
    algorithm = entry["message_bytes"] / median
    ranks = int(entry["ranks"])
    return {"n": entry["n"], "message_bytes": entry["message_bytes"], "median_s": median,
            "interval_s": interval_record(entry), "ranks": ranks,
            "algorithm_bytes_per_s": algorithm,
            "bus_bytes_per_s": algorithm * entry["bus_factor"] if ranks > 1 else None}


def curves(entries):
    """One row per (collective, placement): its points, smallest message's latency, largest's bandwidths."""
    found = group_by((entry for entry in ok_entries(entries) if entry.get("message_bytes") and entry.get("ranks")
                      and entry.get("bus_factor") is not None), lambda entry: (entry["impl"], entry["mode"]), _point)
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
    return picked(row["points"][-1], "message_bytes", "n", "ranks", "algorithm_bytes_per_s",
                  "bus_bytes_per_s") if row else None


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


FORMULAS = ("Algorithm bandwidth: message bytes / median time (nccl-tests' size: the larger of a rank's two "
            "buffers). Bus bandwidth: algorithm bandwidth x nccl-tests' factor (doc/PERFORMANCE.md): all-reduce "
            "2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, broadcast 1, n the ranks; comparable "
            "with the links' rate whatever n is. GB/s = 10^9 bytes per second, as nccl-tests prints.")


def _curves(derived):
    largest, note = derived.get("largest_all_reduce"), derived.get("one_rank_note")
    return table_section("Collectives: bandwidth of each collective (NCCL)", [
        "collective", "placement", "ranks", "latency (smallest message)", "largest message", "algorithm bandwidth",
        "bus bandwidth"], derived.get("curves") or [], lambda row: [
            md(row["impl"]), md(row["mode"]), str(row["ranks"]), f"{seconds(row['smallest_latency_s'])} "
            f"({byte_size(row['smallest_bytes'])})", byte_size(row["largest_bytes"]),
            gb_per_s(row["largest_algorithm_bytes_per_s"], 2), gb_per_s(row["largest_bus_bytes_per_s"], 2)],
        paragraph(FORMULAS), *([paragraph(f"Bus bandwidth n/a: {md(note)}.")] if note else []), *([paragraph(
            f"All-reduce (out of place) at its largest message, {byte_size(largest['message_bytes'])} on "
            f"{largest['ranks']} ranks: bus bandwidth {gb_per_s(largest['bus_bytes_per_s'], 2)}, algorithm bandwidth "
            f"{gb_per_s(largest['algorithm_bytes_per_s'], 2)}.")] if largest else []),
        empty="No collective was measured.")


def _references(study, document):
    def shown(rows):
        body = [[byte_size(1 << row["n"]), seconds(row["study_median_s"]), seconds(row["reference_median_s"]),
                 time_ratio_cell(row), md(row["target"] or "")] for row in rows]
        return [table(["message", "study", "torch", "time ratio", "target"], body), paragraph(
            "Time ratio: study median / torch median, both on the device (CUDA events) over the same GPUs; the bus "
            "bandwidths stand in the inverse ratio. Targets are stated, not checked.")]
    rows = study["derived"].get("reference_comparison") or []
    return reference_section("Collectives: torch.distributed all-reduce reference", document, REFERENCES,
                             lambda items: compared(items, rows, "No all-reduce size was measured by both the study "
                                                    "and the reference (the default suite runs neither 1 GiB nor "
                                                    "8 GiB: run --sizes 30,33 --impls all_reduce).", shown))


def _ranks(launch):
    """Who took part in a launch of one process per GPU (run --launcher): each rank's node and GPU."""
    if not launch:
        return []
    ranks = launch.get("ranks") or []
    hosts = dict.fromkeys(rank.get("host") for rank in ranks)
    command = " ".join(launch.get("command") or []).replace("`", "")
    body = [[str(rank.get("rank")), md(rank.get("host") or "?"), str(rank.get("local_rank")),
             md(rank.get("cpu") or "?"), md(gpu.get("name") or f"none: {rank.get('gpu_reason')}"),
             md(gpu.get("pci_bus_id") or ""), md(gpu.get("uuid") or "")]
            for rank in ranks for gpu in [rank.get("gpu") or {}]]
    return section("Collectives: the ranks, one process per GPU", [paragraph(
        f"{launch.get('size')} ranks on {len(hosts)} node(s), started by `{command}` "
        f"({md(launch.get('launcher') or '?')}'s variables; the ranks met over {md(launch.get('transport') or '?')}). "
        f"Rank 0 measured; every rank checked its own output."),
        table(["rank", "host", "local rank", "CPU", "GPU", "PCI bus id", "UUID"], body)])


def sections(study, document):
    return (_curves(study["derived"]) + _ranks(study.get("ranks")) + _references(study, document)
            + failures_section(study, "Collectives: skipped and failed entries"))


def plots(pyplot, study, plot_dir):
    """Bus bandwidth over the message size; with one rank (bus factor 0), the algorithm bandwidth."""
    derived = study["derived"]
    series = charts.row_series(derived.get("curves") or [], ("impl", "mode"), "message_bytes")
    if not series:
        return []
    if derived.get("one_rank_note"):
        stem, what, key = "collectives_algorithm_bandwidth", "algorithm bandwidth (one rank: no bus)", "algorithm"
    else:
        stem, what, key = "collectives_bus_bandwidth", "bus bandwidth (nccl-tests' formulas)", "bus"
    return charts.draw(pyplot, charts.line_charts(
        plot_dir, (stem,), f"collectives: {what} against the message size", series, (lambda series_key: series_key[1],),
        ylabel="GB/s (10^9 bytes per second)", xlabel="message size (bytes, nccl-tests' size)",
        value=lambda point: None if (rate := point[f"{key}_bytes_per_s"]) is None else rate / 1e9))


ALLREDUCE_SIZES = (30, 33)  # log2 bytes: the 1 GiB and 8 GiB all-reduces the multi-GPU targets name
# Against the study's out-of-place entry, the one the suite's placement and --impls all_reduce run (the driver's
# --modes names no placement); torch's call is in place, which moves the same bytes.
ALLREDUCE_TARGET = ("bus bandwidth within 2% of torch.distributed's all-reduce over the same GPUs and NCCL: a time "
                    "ratio within 0.98-1.02")
# In a process of its own: it spawns one process per GPU with torch.multiprocessing.
REFERENCES = {"torch_allreduce": Run("torch", "reference_allreduce.py", ("torch", csv(ALLREDUCE_SIZES)), gpu=True,
                                     sizes_at=1, own_process=True)}
COMPARISONS = (Comparison("collectives", "all_reduce", "out_of_place", "fp32", "torch_allreduce",
                          "torch.distributed all_reduce", {"workload": "all_reduce"},
                          tuple((n, None) for n in ALLREDUCE_SIZES), ALLREDUCE_TARGET),)

# gpubench check: NCCL's all-reduce across every GPU at 256 MiB (n is log2 of the bytes).
CHECK_LOG2_BYTES = 28


def check_figures(study, document, sheet):
    """The out-of-place all-reduce's bus bandwidth (nccl-tests' measure) across the node's GPUs."""
    return [bandwidth_figure("collectives", entry, "allreduce/bus",
                             f"NCCL all-reduce bus bandwidth, {int(entry['ranks'])} GPUs",
                             entry["message_bytes"] * entry["bus_factor"], None)
            for entry in entries_at(study, impl="all_reduce", mode="out_of_place", n=CHECK_LOG2_BYTES)
            if entry.get("message_bytes") and entry.get("bus_factor") and (entry.get("ranks") or 0) > 1]


# Only where NCCL was found at build time. One process per GPU across nodes: run --launcher (the ranks' record
# is the study's `ranks`).
STUDY = Study(name="collectives", derive=lambda study, document, rounds: derive(study), summary=sections,
              plots=plots, rates=progress_rates, axes={"impl": "collective", "mode": "placement", "n": "log2_bytes"},
              references=REFERENCES, comparisons=COMPARISONS, gpus_together=True,
              check=CheckPoint(
                  sizes=(CHECK_LOG2_BYTES,), impls=("all_reduce",), modes=("out_of_place",), figures=check_figures,
                  gpus=2,
                  plateau="256 MiB a rank: the suite's largest message, where NCCL's ring is past its start-up "
                          "and the bus bandwidth has levelled off",
                  budget="one entry, one trial, the latency protocol's stopping rule"), position=170)
