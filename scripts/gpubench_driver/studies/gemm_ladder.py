"""The gemm_ladder study's plug-in: each rung's rate at each size as a fraction of cuBLAS's (the inverse ratio
of their device times, with its interval), beside what its launch takes, and the issue's targets for each
ladder's best own rung (docs/studies.md, gemm_ladder; docs/gemm-ladder.md)."""
from gpubench_driver.lib import charts
from gpubench_driver.lib.document import folded_long_tables, paragraph, section, table
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.formatting import byte_size, md, percent, percent_interval, rate, whole
from gpubench_driver.lib.registry import Study, flop_rates
from gpubench_driver.lib.sections import failures_section, table_section
from gpubench_driver.lib.stats import finite, interval_side, time_ratio_interval

YARDSTICK = "cublas"
LADDERS = {"fp32": "SGEMM (FP32 on the CUDA cores)", "fp16": "tensor cores (FP16 in, FP32 accumulate, FP16 out)"}
# The issue's targets: the best own rung of a ladder against cuBLAS at these sizes (fp16's stretch: 0.90).
TARGETS = {"fp32": 0.90, "fp16": 0.70}
TARGET_SIZES = (4096, 8192)
LAUNCH_COUNTERS = ("threads_per_block", "grid_blocks", "registers_per_thread", "shared_bytes_per_block",
                   "blocks_per_multiprocessor", "theoretical_occupancy")


def _point(entry, yardstick):
    return {"rung": entry["impl"], "n": entry["n"], "median_s": entry["time_s"]["median"],
            "flop_per_s": entry.get("flop_per_s"), "tiling": entry.get("label"),
            **{name: finite(entry.get(name)) for name in LAUNCH_COUNTERS},
            "fraction_of_cublas": yardstick["time_s"]["median"] / entry["time_s"]["median"] if yardstick else None,
            "fraction_interval": time_ratio_interval(yardstick["time_s"], entry["time_s"]) if yardstick else None}


# A target is met or missed only where the fraction's whole interval lies on one side of it.
VERDICTS = {"above": "met", "below": "short", "within noise": "within noise"}


def _targets(ladder, points):
    rows = []
    target = TARGETS[ladder]
    for n in TARGET_SIZES:
        own = [p for p in points if p["n"] == n and p["rung"] != YARDSTICK and p["fraction_of_cublas"] is not None]
        if not own:
            continue
        best = max(own, key=lambda p: p["fraction_of_cublas"])
        rows.append({"n": n, "target": target, "best": best,
                     "verdict": VERDICTS[interval_side(best["fraction_of_cublas"], best["fraction_interval"],
                                                       target)]})
    return rows


def _ladder(ladder, entries):
    mine = [e for e in entries if e["precision"] == ladder and e.get("time_s")]
    yardsticks = {e["n"]: e for e in mine if e["impl"] == YARDSTICK}
    # The own rungs in the binary's order (the ladder's), then the yardstick they climb to.
    rungs = [rung for rung in dict.fromkeys(e["impl"] for e in mine) if rung != YARDSTICK]
    rungs += [YARDSTICK] if yardsticks else []
    points = [_point(e, yardsticks.get(e["n"])) for e in mine]
    return {"precision": ladder, "title": LADDERS[ladder], "sizes": sorted({p["n"] for p in points}),
            "rungs": rungs, "points": points, "targets": _targets(ladder, points)}


def derive(study):
    entries = ok_entries(study["entries"])
    order = {impl.get("id"): index for index, impl in enumerate(study.get("implementations") or [])
             if isinstance(impl, dict)}
    entries = sorted(entries, key=lambda e: (order.get(e["impl"], len(order)), e["n"]))
    ladders = [_ladder(ladder, entries) for ladder in LADDERS if any(e["precision"] == ladder for e in entries)]
    return {"ladders": ladders, "failures": grouped_failures(study["entries"])}


VERDICT_TEXTS = {"met": "met (the interval is above it)", "short": "short (the interval is below it)",
                 "within noise": "not decided: the interval holds it"}


def _cell(point):
    if point is None:
        return ""
    shown = rate(point["flop_per_s"]) if point["flop_per_s"] else "n/a"
    if point["rung"] != YARDSTICK and point["fraction_of_cublas"] is not None:
        shown += f", {percent(point['fraction_of_cublas'], 0)}"
    return shown


def _rates(ladder):
    by_point = {(p["rung"], p["n"]): p for p in ladder["points"]}
    body = [[md(rung)] + [_cell(by_point.get((rung, n))) for n in ladder["sizes"]] for rung in ladder["rungs"]]
    return table(["rung"] + [f"n = {n}" for n in ladder["sizes"]], body)


def _launches(ladder):
    """What each rung's launch takes at the largest size it ran (cuBLAS's kernels are its own)."""
    largest = {point["rung"]: point for point in ladder["points"] if point["rung"] != YARDSTICK}  # points in n order
    body = [[md(rung), str(point["n"]), whole(point["threads_per_block"]), whole(point["grid_blocks"]),
             whole(point["registers_per_thread"]), byte_size(point["shared_bytes_per_block"]),
             percent(point["theoretical_occupancy"], 0), md(point["tiling"] or "")] for rung, point in largest.items()]
    return table(["rung", "at n", "threads per block", "blocks", "registers per thread", "shared memory per block",
                  "theoretical occupancy", "tiling (and what limits occupancy)"], body)


def _targets_section(derived):
    return table_section("GEMM ladder: the best own kernel against cuBLAS", [
        "ladder", "n", "best own rung", "of cuBLAS's rate (interval)", "target", "verdict"], [
        [md(ladder["title"]), str(row["n"]), md(row["best"]["rung"]),
         percent_interval(row["best"]["fraction_of_cublas"], row["best"]["fraction_interval"]),
         percent(row["target"], 0), VERDICT_TEXTS[row["verdict"]]]
        for ladder in derived["ladders"] for row in ladder["targets"]], list, paragraph(
        "A rung's rate over cuBLAS's at the same size and precision, in the same run (device time, operands resident): "
        "cuBLAS's median time over the rung's; the interval from both medians' intervals."))


def sections(study, document):
    derived = study["derived"]
    return _targets_section(derived) + [block for ladder in derived["ladders"] for block in section(
        f"GEMM ladder: {md(ladder['title'])}", [
            paragraph("Each rung's rate (FLOP/s of 2 n^3 per call) and its fraction of cuBLAS's at that size, in "
                      "the ladder's order (docs/gemm-ladder.md says what each rung changes):"),
            *folded_long_tables([_rates(ladder)]),
            paragraph("What each rung's main kernel takes (the CUDA occupancy API), at the largest size it ran:"),
            _launches(ladder)])] + failures_section(study, "GEMM ladder: skipped and failed entries")


def plots(pyplot, study, plot_dir):
    """Per ladder, each rung's fraction of cuBLAS's rate: a group of bars per rung, a bar per size."""
    paths = []
    for ladder in study["derived"].get("ladders") or []:
        rungs = [rung for rung in ladder["rungs"] if rung != YARDSTICK]
        by_point = {(p["rung"], p["n"]): p["fraction_of_cublas"] for p in ladder["points"]}
        if not rungs or not any(value for value in by_point.values()):
            continue
        width = 0.8 / max(len(ladder["sizes"]), 1)
        figure, axes = pyplot.subplots(figsize=(10, 5))
        for index, n in enumerate(ladder["sizes"]):
            values = [by_point.get((rung, n)) or 0 for rung in rungs]
            axes.bar([r + index * width for r in range(len(rungs))], values, width, label=f"n = {n}",
                     color=charts.COLOURS[index % len(charts.COLOURS)])
        charts.parity(axes)
        axes.set_xticks([r + 0.4 - width / 2 for r in range(len(rungs))], [charts.plain(rung) for rung in rungs],
                        rotation=30, ha="right", fontsize="small")
        axes.set(ylabel="rate / cuBLAS's rate at the same n", yscale="log",
                 title=charts.plain(f"gemm_ladder: {ladder['title']}, each rung against cuBLAS (1 = cuBLAS)"))
        path = charts.plot_path(plot_dir, "gemm_ladder", ladder["precision"])
        charts.finish(pyplot, figure, axes, path)
        paths.append(path)
    return paths


STUDY = Study(name="gemm_ladder", derive=lambda study, document, rounds: derive(study), summary=sections,
              plots=plots, rates=flop_rates, axes={"impl": "rung"}, experiment=True, position=150)
