"""The occupancy study's plug-in: each kernel's rate against its launch configuration (threads per block x
blocks) as a fraction of its best, where the grid lands, each block size's theoretical occupancy, and the
walk-through's 16 x 128 launch on that curve (docs/studies.md, occupancy)."""
import math

from gpubench_driver.lib import charts
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import folded_long_tables, paragraph, section, table
from gpubench_driver.lib.findings import group_by, grouped_failures, interval_record, ok_entries, picked
from gpubench_driver.lib.formatting import byte_size, gb_per_s, md, percent, percent_interval, rate, whole
from gpubench_driver.lib.registry import Study, flop_rates
from gpubench_driver.lib.sections import failures_section, table_section
from gpubench_driver.lib.stats import finite, interval_side, time_ratio_interval

# The walk-through's launch and its claim (the binary's --describe "walkthrough" says the same).
WALKTHROUGH = {"kernel": "naive_sgemm", "blocks": 16, "threads_per_block": 128, "claimed_fraction": 0.1}
PLATEAU_FRACTION = 0.9  # a block size's plateau: the fewest blocks from which its rate stays this close to its best
LIMITS = ("threads", "blocks", "registers", "shared_memory", "barriers")
OCCUPANCY_COUNTERS = ("multiprocessors", "busy_multiprocessors", "resident_warps", "max_resident_warps",
                      "blocks_per_multiprocessor", "theoretical_occupancy", "registers_per_thread",
                      "shared_bytes_per_block")


def _share(part, whole):
    return part / whole if part is not None and whole else None


def _point(entry, best):
    """An entry as a point of its kernel's curves: rates, fraction of the kernel's best, where the grid lands."""
    median, flop = entry["time_s"]["median"], finite(entry.get("flop"))
    traffic = (finite(entry.get("memory_read_bytes")) or 0) + (finite(entry.get("memory_written_bytes")) or 0)
    counters = {name: finite(entry.get(name)) for name in OCCUPANCY_COUNTERS}
    return {"threads_per_block": entry["n"], "blocks": entry["batch"], "median_s": median,
            "interval_s": interval_record(entry), "flop_per_s": flop / median if flop else None,
            "memory_bytes_per_s": traffic / median if traffic else None,
            "fraction_of_best": best["time_s"]["median"] / median,
            "fraction_interval": time_ratio_interval(best["time_s"], entry["time_s"]), **counters,
            "busy_fraction": _share(counters["busy_multiprocessors"], counters["multiprocessors"]),
            "warp_fraction": _share(counters["resident_warps"], counters["max_resident_warps"])}


def _described_occupancy(implementations):
    """{kernel: {threads per block: occupancy row}} of --describe, well-typed fields only."""
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
            table[int(threads)] = {**{name: finite(row.get(name)) for name in (
                "blocks_per_multiprocessor", "occupancy", "registers_per_thread", "shared_bytes_per_block")},
                "limited_by": [name for name in limited if name in LIMITS] if isinstance(limited, list) else []}
        if table:
            found[impl["id"]] = table
    return found


def plateau_blocks(points, fraction=PLATEAU_FRACTION):
    """The fewest blocks from which every larger grid stays at `fraction` of the curve's best; None."""
    if not points:
        return None
    best = max(point["fraction_of_best"] for point in points)
    first = len(points)
    while first > 0 and points[first - 1]["fraction_of_best"] >= fraction * best:
        first -= 1
    return points[first]["blocks"] if first < len(points) else None


def block_sizes(points, described):
    """Per threads per block: its best rate, where it reached it, its plateau, its occupancy and what limits it."""
    rows = []
    for threads in sorted({point["threads_per_block"] for point in points}):
        curve = sorted((point for point in points if point["threads_per_block"] == threads),
                       key=lambda point: point["blocks"])
        top = max(curve, key=lambda point: point["fraction_of_best"])
        rows.append({"threads_per_block": threads, "best_fraction": top["fraction_of_best"],
                     "best_blocks": top["blocks"], "plateau_blocks": plateau_blocks(curve),
                     **picked(top, "theoretical_occupancy", "blocks_per_multiprocessor", "registers_per_thread",
                              "shared_bytes_per_block"),
                     "limited_by": described.get(threads, {}).get("limited_by") or []})
    return rows


def kernels(entries, implementations=None):
    """Per kernel: every configuration as a point, its best, and its block sizes' rows."""
    described = _described_occupancy(implementations)
    rows = []
    for kernel, members in group_by((entry for entry in ok_entries(entries) if entry.get("batch")),
                                    lambda entry: entry["impl"]).items():
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
    """The walk-through's launch on each kernel measured at it, against the claimed tenth; its kernel first."""
    found = []
    for row in sorted(rows, key=lambda row: row["impl"] != WALKTHROUGH["kernel"]):
        point = next((point for point in row["points"] if point["blocks"] == WALKTHROUGH["blocks"]
                      and point["threads_per_block"] == WALKTHROUGH["threads_per_block"]), None)
        if point is None:
            continue
        claimed = WALKTHROUGH["claimed_fraction"]
        found.append({"impl": row["impl"], **picked(point, "fraction_of_best", "fraction_interval"),
                      "best": row["best"],
                      **picked(point, "busy_fraction", "warp_fraction", "busy_multiprocessors", "multiprocessors",
                               "resident_warps", "max_resident_warps"), "claimed_fraction": claimed,
                      "against_claim": interval_side(point["fraction_of_best"], point["fraction_interval"], claimed)})
    return found


def progress_rates(axes, counters, median_s):
    """FLOP/s of one entry for the progress line, and its share of the GPU's warps."""
    warps, most = counters.get("resident_warps"), counters.get("max_resident_warps")
    return flop_rates(axes, counters, median_s) + ([f"{percent(warps / most)} of the warps"] if warps and most else [])


def derive(study):
    rows = kernels(study["entries"], study.get("implementations"))
    return {"kernels": rows, "walkthrough": walkthrough(rows), "walkthrough_launch": dict(WALKTHROUGH),
            "plateau_fraction": PLATEAU_FRACTION, "failures": grouped_failures(study["entries"])}


AGAINST = {"below": "below a tenth beyond the interval", "above": "above a tenth beyond the interval",
           "within noise": "within the interval of a tenth"}


def _launch(point):
    return f"{point['blocks']} x {point['threads_per_block']}"


def _rate_text(point):
    """The kernel's rate at a point: FLOP/s, and the device memory bytes per second where counted."""
    memory = point.get("memory_bytes_per_s")
    return rate(point["flop_per_s"]) + (f", {gb_per_s(memory)}" if memory else "")


def _share_text(part, whole, what):
    return "n/a" if part is None or not whole else f"{part:.0f} of {whole:.0f} {what} ({percent(part / whole)})"


def _walkthrough(derived):
    launch = derived["walkthrough_launch"]
    return table_section("Occupancy: the walk-through's launch of 16 blocks of 128 threads", [
        "kernel", "rate at 16 x 128, of the best measured (interval)",
        "best launch measured: blocks x threads (rate)", "busy multiprocessors", "resident warps",
        "against the claimed tenth"], derived.get("walkthrough") or [],
        lambda row: [md(row["impl"]), percent_interval(row["fraction_of_best"], row["fraction_interval"]),
                     f"{_launch(row['best'])} ({_rate_text(row['best'])})",
                     _share_text(row["busy_multiprocessors"], row["multiprocessors"], "multiprocessors"),
                     _share_text(row["resident_warps"], row["max_resident_warps"], "warps"),
                     AGAINST[row["against_claim"]]], paragraph(
        f"The claim: such a launch of the naive SGEMM uses less than a tenth of a big GPU. Its measured fraction: the "
        f"kernel's device time at the best launch configuration this run measured over its time at "
        f"{launch['blocks']} x {launch['threads_per_block']} (both the same grid-stride work, so the inverse ratio "
        "of their rates); the interval from both times' intervals. A run that measured few configurations may miss "
        "the best, which makes the fraction an upper bound. Busy multiprocessors: min(blocks, multiprocessors); "
        "resident warps: the grid's first wave, against every multiprocessor's maximum."),
        empty=f"Not measured: no kernel ran at {launch['blocks']} blocks of "
              f"{launch['threads_per_block']} threads.")


def _launch_grid(kernel):
    """(threads per block, blocks, {(threads, blocks): point}) of a kernel's launch configurations."""
    points = kernel["points"]
    return (sorted({point["threads_per_block"] for point in points}), sorted({point["blocks"] for point in points}),
            {(point["threads_per_block"], point["blocks"]): point for point in points})


def _grid(kernel):
    """Rows threads per block, columns blocks: each configuration's rate as a share of the kernel's best."""
    threads, blocks, by_launch = _launch_grid(kernel)
    body = [[str(t)] + [percent(by_launch[(t, b)]["fraction_of_best"], 0) if (t, b) in by_launch else ""
                        for b in blocks] for t in threads]
    return table(["threads \\ blocks"] + [str(b) for b in blocks], body)


def _block_sizes(kernel):
    body = [[str(row["threads_per_block"]), whole(row["registers_per_thread"]),
             byte_size(row["shared_bytes_per_block"]), whole(row["blocks_per_multiprocessor"]),
             percent(row["theoretical_occupancy"], 0),
             ", ".join(md(name.replace("_", " ")) for name in row["limited_by"]) or "n/a",
             percent(row["best_fraction"], 0), str(row["best_blocks"]), str(row["plateau_blocks"] or "none")]
            for row in kernel["block_sizes"]]
    return table(["threads per block", "registers per thread", "shared memory per block",
                  "blocks per multiprocessor", "theoretical occupancy", "limited by", "best rate (of the kernel's)",
                  "at blocks", "plateau from blocks"], body)


def _kernels(derived):
    return [block for kernel in derived.get("kernels") or [] for block in section(
        f"Occupancy: {md(kernel['impl'])}", [
            paragraph(f"Best launch measured: {_launch(kernel['best'])} (blocks x threads per block), "
                      f"{_rate_text(kernel['best'])}. Each launch configuration's rate as a share of it:"),
            *folded_long_tables([_grid(kernel)]),
            paragraph("Per block size: the kernel's resources and theoretical occupancy (the occupancy API: "
                      "resident warps over the multiprocessor's maximum, and the resources that stop it there), "
                      "beside the best rate it reached and the fewest blocks from which it stays at "
                      f"{derived['plateau_fraction']:.0%} of that rate (none: it falls again at the largest grids):"),
            _block_sizes(kernel)])]


def sections(study, document):
    derived = study["derived"]
    return (_walkthrough(derived) + _kernels(derived)
            + failures_section(study, "Occupancy: skipped and failed entries"))


RESIDENT_WARPS = "warps resident at once (the grid's first wave, all multiprocessors)"


def _occupancy_heat_map(pyplot, path, kernel, launch):
    """Each launch configuration's share of the kernel's best rate; the walk-through's launch outlined."""
    threads, blocks, by_launch = _launch_grid(kernel)
    grid = [[by_launch[(t, b)]["fraction_of_best"] if (t, b) in by_launch else float("nan") for b in blocks]
            for t in threads]
    figure, axes = pyplot.subplots(figsize=(max(6.0, 0.6 * len(blocks) + 2), max(3.0, 0.5 * len(threads) + 1.5)))
    image = axes.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto", origin="lower")
    for row, values in enumerate(grid):
        for column, value in enumerate(values):
            if not math.isnan(value):  # a configuration measured
                axes.text(column, row, f"{value:.0%}" if value >= 0.1 else f"{value:.1%}", ha="center", va="center",
                          fontsize="x-small", color="white" if value < 0.6 else "black")
    if launch["threads_per_block"] in threads and launch["blocks"] in blocks:
        corner = (blocks.index(launch["blocks"]) - 0.5, threads.index(launch["threads_per_block"]) - 0.5)
        axes.add_patch(pyplot.Rectangle(corner, 1, 1, fill=False, edgecolor="red", linewidth=2))
    axes.set_xticks(range(len(blocks)), [str(value) for value in blocks], rotation=45)
    axes.set_yticks(range(len(threads)), [str(value) for value in threads])
    figure.colorbar(image, ax=axes, label="rate / the best launch measured")
    axes.set(xlabel="blocks", ylabel="threads per block",
             title=charts.plain(f"occupancy {kernel['impl']}: rate by launch configuration\n(red: the walk-through's "
                                f"{launch['blocks']} x {launch['threads_per_block']})"))
    charts.save(pyplot, figure, path)


def plots(pyplot, study, plot_dir):
    """Per kernel: its rate by launch configuration (a heat map) and over the resident warps."""
    derived = study["derived"]
    paths, study_charts = [], []
    for kernel in derived.get("kernels") or []:
        path = charts.plot_path(plot_dir, "occupancy", kernel["impl"])
        _occupancy_heat_map(pyplot, path, kernel, derived["walkthrough_launch"])
        paths.append(path)
        series = group_by((point for point in kernel["points"] if point.get("resident_warps")),
                          lambda point: (f"{point['threads_per_block']} threads",),
                          lambda point: (point["resident_warps"], point))
        study_charts += charts.line_charts(
            plot_dir, ("occupancy", kernel["impl"], "warps"),
            f"occupancy {kernel['impl']}: rate against the resident warps", {
                key: sorted(points, key=lambda item: item[0]) for key, points in series.items()},
            ylabel="rate / the best launch measured", value=lambda point: point["fraction_of_best"],
            xlabel=RESIDENT_WARPS)
    return paths + charts.draw(pyplot, study_charts)


def walkthrough_launch(document):
    launch = WALKTHROUGH
    row = next((row for row in derived_of(document, "occupancy").get("walkthrough") or []
                if row["impl"] == launch["kernel"]), None)
    if row is None:
        return None
    verdict = {"below": CONFIRMED, "above": f"{REFUTED}: it uses more",
               "within noise": "depends on the noise: the measured fraction's interval spans a tenth"}[
        row["against_claim"]]
    best = row["best"]
    busy = (f", keeping {row['busy_multiprocessors']:.0f} of {row['multiprocessors']:.0f} multiprocessors and "
            f"{percent(row['warp_fraction'])} of the GPU's warp slots busy"
            if row["busy_multiprocessors"] is not None and row["multiprocessors"] else "")
    return {"verdict": verdict, "numbers": {**picked(row, "fraction_of_best", "fraction_interval"),
                                            "best_launch": [best["blocks"], best["threads_per_block"]],
                                            **picked(row, "busy_fraction", "warp_fraction")},
            "answer": f"The naive SGEMM (n = 1024) launched as {launch['blocks']} blocks of "
                      f"{launch['threads_per_block']} threads ran at "
                      f"{percent_interval(row['fraction_of_best'], row['fraction_interval'])} of the rate of the "
                      f"best launch measured ({best['blocks']} blocks of {best['threads_per_block']} threads){busy}."}


CLAIMS = (
    Claim("walkthrough_launch", "An SGEMM launched as 16 blocks of 128 threads uses less than a tenth of a big GPU",
          "a well-known profiling walk-through of a naive SGEMM kernel", walkthrough_launch, studies=("occupancy",),
          position=9),
)

STUDY = Study(name="occupancy", batch_axis=True, derive=lambda study, document, rounds: derive(study),
              summary=sections, plots=plots, rates=progress_rates, axes={"n": "threads_per_block", "batch": "blocks"},
              claims=CLAIMS, experiment=True, position=130)
