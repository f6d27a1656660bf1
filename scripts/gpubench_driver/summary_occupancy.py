"""summary.md: the occupancy study's sections, from its `derived` (derive_occupancy.py)."""
from gpubench_driver.lib.sections import grouped_failures
from gpubench_driver.lib.document import folded_long_tables, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, percent, rate

AGAINST = {"below": "below a tenth beyond the interval", "above": "above a tenth beyond the interval",
           "within noise": "within the interval of a tenth"}


def _fraction(value, interval):
    return percent(value) + (f" ({percent(interval[0])}–{percent(interval[1])})" if interval else "")


def _launch(point):
    return f"{point['blocks']} x {point['threads_per_block']}"


def _rate(point):
    """The kernel's rate at a point: FLOP/s, and the device memory bytes per second where counted."""
    shown = rate(point["flop_per_s"])
    if point.get("memory_bytes_per_s"):
        shown += f", {point['memory_bytes_per_s'] / 1e9:.1f} GB/s"
    return shown


def _share(part, whole, what):
    return "n/a" if part is None or not whole else f"{part:.0f} of {whole:.0f} {what} ({percent(part / whole)})"


def _walkthrough(derived):
    rows = derived.get("walkthrough") or []
    launch = derived["walkthrough_launch"]
    title = "Occupancy: the walk-through's launch of 16 blocks of 128 threads"
    if not rows:
        return section(title, [paragraph(f"Not measured: no kernel ran at {launch['blocks']} blocks of "
                                         f"{launch['threads_per_block']} threads.")])
    body = [[md(row["impl"]), _fraction(row["fraction_of_best"], row["fraction_interval"]),
             f"{_launch(row['best'])} ({_rate(row['best'])})",
             _share(row["busy_multiprocessors"], row["multiprocessors"], "multiprocessors"),
             _share(row["resident_warps"], row["max_resident_warps"], "warps"),
             AGAINST[row["against_claim"]]] for row in rows]
    return section(title, [table(["kernel", "rate at 16 x 128, of the best measured (interval)",
                                  "best launch measured: blocks x threads (rate)", "busy multiprocessors",
                                  "resident warps", "against the claimed tenth"], body), paragraph(
        f"The claim: such a launch of the naive SGEMM uses less than a tenth of a big GPU. Its measured fraction: the "
        f"kernel's device time at the best launch configuration this run measured over its time at "
        f"{launch['blocks']} x {launch['threads_per_block']} (both the same grid-stride work, so the inverse ratio "
        "of their rates); the interval from both times' intervals. A run that measured few configurations may miss "
        "the best, which makes the fraction an upper bound. Busy multiprocessors: min(blocks, multiprocessors); "
        "resident warps: the grid's first wave, against every multiprocessor's maximum.")])


def _grid(kernel):
    """Rows threads per block, columns blocks: each configuration's rate as a share of the kernel's best."""
    blocks = sorted({point["blocks"] for point in kernel["points"]})
    by_launch = {(point["threads_per_block"], point["blocks"]): point for point in kernel["points"]}
    body = [[str(threads)] + [percent(by_launch[(threads, b)]["fraction_of_best"], 0) if (threads, b) in by_launch
                              else "" for b in blocks]
            for threads in sorted({point["threads_per_block"] for point in kernel["points"]})]
    return table(["threads \\ blocks"] + [str(b) for b in blocks], body)


def _count(value):
    return "n/a" if value is None else f"{value:.0f}"


def _limits(row):
    return ", ".join(md(name.replace("_", " ")) for name in row["limited_by"]) or "n/a"


def _block_sizes(kernel):
    body = [[str(row["threads_per_block"]), _count(row["registers_per_thread"]),
             byte_size(row["shared_bytes_per_block"]), _count(row["blocks_per_multiprocessor"]),
             percent(row["theoretical_occupancy"], 0), _limits(row), percent(row["best_fraction"], 0),
             str(row["best_blocks"]), str(row["plateau_blocks"] or "none")] for row in kernel["block_sizes"]]
    return table(["threads per block", "registers per thread", "shared memory per block",
                  "blocks per multiprocessor", "theoretical occupancy", "limited by", "best rate (of the kernel's)",
                  "at blocks", "plateau from blocks"], body)


def _kernels(derived):
    blocks = []
    for kernel in derived.get("kernels") or []:
        best = kernel["best"]
        blocks += section(f"Occupancy: {md(kernel['impl'])}", [
            paragraph(f"Best launch measured: {_launch(best)} (blocks x threads per block), {_rate(best)}. Each "
                      "launch configuration's rate as a share of it:"),
            *folded_long_tables([_grid(kernel)]),
            paragraph("Per block size: the kernel's resources and theoretical occupancy (the occupancy API: resident "
                      "warps over the multiprocessor's maximum, and the resources that stop it there), beside the best "
                      f"rate it reached and the fewest blocks from which it stays at {derived['plateau_fraction']:.0%} "
                      "of that rate (none: it falls again at the largest grids):"),
            _block_sizes(kernel)])
    return blocks


def sections(study, document):
    derived = study["derived"]
    return (_walkthrough(derived) + _kernels(derived)
            + grouped_failures(study, "Occupancy: skipped and failed entries"))
