"""summary.md: the gemm_ladder study's sections, from its `derived` (derive_gemm_ladder.py)."""
from gpubench_driver.lib.sections import grouped_failures
from gpubench_driver.lib.document import folded_long_tables, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, percent, rate
from gpubench_driver.studies.gemm_ladder import YARDSTICK

VERDICTS = {"met": "met (the interval is above it)", "short": "short (the interval is below it)",
            "within noise": "not decided: the interval holds it"}


def _fraction(point):
    interval = point["fraction_interval"]
    return percent(point["fraction_of_cublas"]) + (
        f" ({percent(interval[0])}–{percent(interval[1])})" if interval else "")


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


def _count(value):
    return "n/a" if value is None else f"{value:.0f}"


def _launches(ladder):
    """What each rung's launch takes at the largest size it ran (cuBLAS's kernels are its own)."""
    largest = {}
    for point in ladder["points"]:
        if point["rung"] != YARDSTICK and point["n"] >= largest.get(point["rung"], {"n": 0})["n"]:
            largest[point["rung"]] = point
    body = [[md(rung), str(point["n"]), _count(point["threads_per_block"]), _count(point["grid_blocks"]),
             _count(point["registers_per_thread"]),
             byte_size(point["shared_bytes_per_block"]) if point["shared_bytes_per_block"] is not None else "n/a",
             percent(point["theoretical_occupancy"], 0) if point["theoretical_occupancy"] is not None else "n/a",
             md(point["tiling"] or "")] for rung, point in largest.items()]
    return table(["rung", "at n", "threads per block", "blocks", "registers per thread", "shared memory per block",
                  "theoretical occupancy", "tiling (and what limits occupancy)"], body)


def _targets(derived):
    rows = [[md(ladder["title"]), str(row["n"]), md(row["best"]["rung"]), _fraction(row["best"]),
             percent(row["target"], 0), VERDICTS[row["verdict"]]]
            for ladder in derived["ladders"] for row in ladder["targets"]]
    if not rows:
        return []
    return section("GEMM ladder: the best own kernel against cuBLAS", [
        table(["ladder", "n", "best own rung", "of cuBLAS's rate (interval)", "target", "verdict"], rows),
        paragraph("A rung's rate over cuBLAS's at the same size and precision, in the same run (device time, operands "
                  "resident): cuBLAS's median time over the rung's; the interval from both medians' intervals.")])


def sections(study, document):
    derived = study["derived"]
    blocks = _targets(derived)
    for ladder in derived["ladders"]:
        blocks += section(f"GEMM ladder: {md(ladder['title'])}", [
            paragraph("Each rung's rate (FLOP/s of 2 n^3 per call) and its fraction of cuBLAS's at that size, in "
                      "the ladder's order (docs/gemm-ladder.md says what each rung changes):"),
            *folded_long_tables([_rates(ladder)]),
            paragraph("What each rung's main kernel takes (the CUDA occupancy API), at the largest size it ran:"),
            _launches(ladder)])
    return blocks + grouped_failures(study, "GEMM ladder: skipped and failed entries")
