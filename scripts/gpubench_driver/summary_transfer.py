"""summary.md: the transfer study's sections, from its `derived` (transfer.py)."""
from gpubench_driver.lib.sections import (STEADY_STATE, grouped_failures, noise_note, references_not_run,
                                            run_notes, time_ratio_cell)
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import byte_size, md, percent, ratio, seconds
from gpubench_driver.studies import transfer

REFERENCE_RUN = "torch_transfer"


def _gib_per_s(bytes_per_s):
    return "n/a" if bytes_per_s is None else f"{bytes_per_s / transfer.GIB:.2f} GiB/s"


def _link(derived, document):
    gpus = document["machine"].get("gpus") or [{}]
    numa = gpus[0].get("numa_node")
    where = [] if numa is None else [f"The GPU's NUMA node: {md(numa)} (-1: the host reports none)."]
    link = derived.get("link")
    if not link:
        return ["The link's theoretical rate is unknown (no PCIe generation and width from nvidia-smi)."] + where
    return [f"Link: PCIe Gen{link['generation']} x{link['width']}, theoretically {_gib_per_s(link['bytes_per_s'])} "
            f"({link['bytes_per_s'] / 1e9:.1f} GB/s) per direction ({md(link['rule'])})."] + where


def _setting(study):
    setting = study.get("transparent_hugepage")
    return [f"Transparent huge pages on this system: {md(setting)} (pageable\\_thp asks for them with madvise; "
            f"its huge\\_page\\_bytes counter says how much the kernel gave)."] if setting else []


def _curve_row(row, use):
    share = use.get((row["impl"], row["mode"], row["direction"]))
    return [md(row["impl"]), md(row["mode"]), md(row["direction"]),
            f"{seconds(row['smallest_latency_s'])} ({byte_size(row['smallest_n'])})",
            _gib_per_s(row["plateau_bytes_per_s"]), byte_size(row["size_at_90_percent"]),
            percent(share, 0)]


def _curves(study, document):
    derived = study["derived"]
    rows = derived.get("curves") or []
    title = "Transfer: bandwidth and latency"
    if not rows:
        return section(title, [paragraph("No copy was measured.")])
    use = {(u["impl"], u["mode"], u["direction"]): u["fraction_of_link"] for u in derived.get("link_use") or []}
    header = ["engine", "host memory", "direction", "latency of the smallest copy", "plateau", "size at 90% of it",
              "plateau / link"]
    return section(title, [bullets(_link(derived, document) + _setting(study)),
                           table(header, [_curve_row(row, use) for row in rows]), paragraph(
        "Latency: median time of the smallest copy, host clock from the call to its completion. Plateau: the "
        "bandwidth of the largest copy (bytes copied per second, GiB = 2^30 bytes; bidirectional counts both "
        "directions). Size at 90%: from where every larger copy reaches 90% of the plateau, interpolated on "
        "log(size) between measured sizes.")])


def _ratio_at(found):
    """'2.10x at 256 MiB', with ', within noise' where the two bandwidths do not differ beyond it."""
    return f"{ratio(found['ratio'])} at {byte_size(found['n'])}{noise_note(found['beyond_noise'])}"


def _ratio_items(rows, what):
    return [f"{what} {md(row['direction'])}: {_ratio_at(row['at_largest'])} (smallest size: "
            f"{_ratio_at(row['ratios'][0])})" for row in rows]


def _ratios(derived):
    items = (_ratio_items(derived.get("pinned_over_pageable") or [], "pinned over pageable (written),")
             + _ratio_items(derived.get("zero_page_over_written") or [],
                            "never-written (zero page) over written pageable memory,")
             + _ratio_items(derived.get("first_touch_over_written") or [],
                            "a fresh allocation per copy over written pageable memory,"))
    items += [f"registering memory (cudaHostRegister) costs {seconds(row['seconds_per_gib'])} per GiB at "
              f"{byte_size(row['n'])}" for row in (derived.get("registration") or [])[-1:]]  # the largest size
    if not items:
        return []
    return section("Transfer: memory kinds against each other", [bullets(items), paragraph(
        "Ratios of bandwidth (copy engine); a never-written source reads as the kernel's shared zero page, so its "
        "rate says nothing about real data.")])


def _references(study, document):
    title = "Transfer: PyTorch reference"
    references = document.get("references")
    if references is None:
        return section(title, [paragraph(references_not_run(document))])
    notes = bullets(run_notes(REFERENCE_RUN, references.get(REFERENCE_RUN) or {"note": "not run"}))
    rows = study["derived"].get("reference_comparison") or []
    if not any(row["time_ratio"] is not None for row in rows):
        return section(title, [notes, paragraph("No copy was measured by both the study and the reference.")])
    body = [[f"{md(row['study'])} {md(row['precision'])}", byte_size(row["n"]), seconds(row["study_median_s"]),
             seconds(row["reference_median_s"]), time_ratio_cell(row), md(row["target"] or "")] for row in rows]
    return section(title, [notes, table(["host memory / direction", "bytes", "study", "torch", "time ratio", "target"],
                                        body), paragraph(
        "Time ratio: study median / torch median (host clock to completion, both); below 1 the study is faster. "
        "Targets are stated, not checked. " + STEADY_STATE)])


def sections(study, document):
    return (_curves(study, document) + _ratios(study["derived"]) + _references(study, document)
            + grouped_failures(study, "Transfer: skipped and failed entries"))
