"""summary.md: the vector_add study's sections, from its `derived` (derive_vector_add.py)."""
from gpubench_driver.lib.sections import crossover_cells, crossover_header, grouped_failures, noise_note
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, ratio, seconds
from gpubench_driver.studies.vector_add import RESIDENT, TRANSFER_MODES

MODES = (RESIDENT, *TRANSFER_MODES)
MODE_NAMES = {RESIDENT: "data resident", "transfer_pinned": "pinned copies", "transfer_pageable": "pageable copies"}


def _gpu_cell(found):
    if not found:
        return "n/a"
    return f"{seconds(found['median_s'])} ({ratio(found['speedup'])}{noise_note(found['beyond_noise'])})"


def _copies_cell(found):
    return "n/a" if not found else f"{seconds(found['copy_s'])} ({ratio(found['over_cpu'])} the CPU's)"


def _comparison(derived):
    rows = derived.get("comparison") or []
    title = "Vector add: CPU against GPU"
    if not rows:
        return section(title, [paragraph("No size was measured on the CPU.")])
    modes = [mode for mode in MODES if any(mode in row["gpu"] for row in rows)]
    copied = [mode for mode in TRANSFER_MODES if any(mode in row["copies"] for row in rows)]
    header = (["n (elements)", "bytes a call", "best CPU"] + [f"GPU, {MODE_NAMES[mode]}" for mode in modes]
              + [f"copies, {MODE_NAMES[mode]}" for mode in copied])
    body = [[str(row["n"]), byte_size(12 * row["n"]), f"{seconds(row['cpu']['median_s'])} ({md(row['cpu']['impl'])})"]
            + [_gpu_cell(row["gpu"].get(mode)) for mode in modes] + [_copies_cell(row["copies"].get(mode))
                                                                     for mode in copied] for row in rows]
    return section(title, [table(header, body), paragraph(
        "Median times; beside each GPU time its speedup over the best CPU (CPU time / GPU time; \"within noise\": "
        "the two intervals overlap). Data resident: the kernel's device time (CUDA events, launch latency held "
        "out). Pinned and pageable copies: one call on the host clock until its work is done, A and B copied in "
        "and C out. The copies' time: that call less the kernel's resident time at the same size (the copies "
        "with their latency and the synchronisation), beside it that time over the best CPU's whole call. Bytes a "
        "call: A and B read, C written.")])


def _sizes(values):
    return ", ".join(map(str, values))


def _finding(derived):
    found = derived.get("expected_finding")
    if not found:
        return []
    items = []
    for mode, copies in found["copies"].items():
        span = (f"the copies took {ratio(copies['least_over_cpu'])} to {ratio(copies['most_over_cpu'])} the best "
                f"CPU's whole time")
        where = ("at every size compared" if copies["more_than_cpu_everywhere"] else
                 f"except at n = {_sizes(copies['sizes_cheaper_than_cpu'])}")
        items.append(f"{MODE_NAMES[mode]}: {span}; more than the CPU's computation {where} "
                     f"(n = {_sizes(copies['sizes_compared'])})")
    items += [f"the GPU ({MODE_NAMES.get(mode, md(mode))}) beats the best CPU "
              + (f"at n = {_sizes(sizes)}" if sizes else "at no size") for mode, sizes in found["gpu_wins"].items()]
    verdict = ("holds: the copies cost more than the CPU's whole computation at every size, and the GPU pays off "
               "only with the data resident" if found["holds"] else
               "does not hold as stated: see which part differs above")
    return section("Vector add: the expected finding", [bullets(items), paragraph(
        f"\"For one memory-bound operation the copies cost more than the CPU's whole computation at every size, and "
        f"the GPU pays off only when the data stays resident\": {verdict}. A GPU time beats the CPU's where it is "
        f"lower beyond noise (or, without an interval, by its median).")])


def _crossovers(derived):
    rows = derived.get("crossovers") or []
    if not rows:
        return []
    body = [[md(row["mode"])] + crossover_cells(row) for row in rows]
    return section("Vector add: crossovers", [table(["GPU mode"] + crossover_header(), body)])


def sections(study, document):
    derived = study["derived"]
    return (_comparison(derived) + _finding(derived) + _crossovers(derived)
            + grouped_failures(study, "Vector add: skipped and failed entries"))
