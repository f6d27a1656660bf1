"""The vector_add study's plug-in: C = A + B in FP32, the best CPU against the GPU with the data resident and
with copies each call, the copies' cost (transfer time less resident time) against the CPU's whole
computation, and the study's expected finding (docs/studies.md, vector_add)."""
import functools

from gpubench_driver.lib import charts
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import bullets, paragraph, section
from gpubench_driver.lib.findings import (best_by_size, cpu_entries, crossovers, curve_rows, gpu_entries, gpu_modes,
                                          grouped_failures, interval_record, median_record, median_s, ok_entries)
from gpubench_driver.lib.formatting import byte_size, md, ratio, seconds
from gpubench_driver.lib.registry import Study, size_rates
from gpubench_driver.lib.sections import crossover_cells, crossover_header, failures_section, noise_note, table_section
from gpubench_driver.lib.stats import medians_differ

RESIDENT = "resident"
TRANSFER_MODES = ("transfer_pinned", "transfer_pageable")


def _point(entry):
    """Time, its interval, elements and device (or host) memory bytes per second."""
    median = median_s(entry)
    traffic = (entry.get("memory_read_bytes") or 0) + (entry.get("memory_written_bytes") or 0)
    return {"n": entry["n"], "median_s": median, "interval_s": interval_record(entry),
            "elements_per_s": entry["n"] / median, "memory_bytes_per_s": traffic / median if traffic else None,
            "link_bytes_per_s": entry["bytes_transferred"] / median if entry.get("bytes_transferred") else None}


def series(entries):
    """Per implementation and mode, its points in size order."""
    return sorted(curve_rows(ok_entries(entries), ("impl", "device", "mode"), _point),
                  key=lambda row: (row["device"], row["impl"], row["mode"]))


def comparison(entries):
    """Per size: the best CPU entry, each GPU mode's best against it, and each transfer mode's copies."""
    best_cpu = best_by_size(cpu_entries(entries))
    best_gpu = {mode: best_by_size(gpu_entries(entries, mode)) for mode in gpu_modes(entries)}
    resident = {(entry["impl"], entry["n"]): entry for entry in gpu_entries(entries, RESIDENT)}
    rows = []
    for n, cpu in sorted(best_cpu.items()):
        gpu = {mode: {**median_record(found[n]), "speedup": median_s(cpu) / median_s(found[n]),
                      "beyond_noise": medians_differ(found[n]["time_s"], cpu["time_s"])}
               for mode, found in best_gpu.items() if n in found}
        copies = {}
        for mode in TRANSFER_MODES:
            transfer = best_gpu.get(mode, {}).get(n)
            if transfer and (transfer["impl"], n) in resident:
                copy_s = median_s(transfer) - median_s(resident[(transfer["impl"], n)])
                copies[mode] = {"impl": transfer["impl"], "copy_s": copy_s, "over_cpu": copy_s / median_s(cpu),
                                "link_bytes": transfer.get("bytes_transferred")}
        rows.append({"n": n, "cpu": median_record(cpu), "gpu": gpu, "copies": copies})
    return rows


def expected_finding(rows):
    """The expected finding, part by part; None when no size has both sides."""
    compared = [row for row in rows if row["gpu"]]
    if not compared:
        return None
    copies = {}
    for mode in TRANSFER_MODES:
        shares = {row["n"]: row["copies"][mode]["over_cpu"] for row in compared if mode in row["copies"]}
        if shares:
            cheaper = [n for n, share in shares.items() if share <= 1]
            copies[mode] = {"sizes_compared": list(shares), "more_than_cpu_everywhere": not cheaper,
                            "sizes_cheaper_than_cpu": cheaper, "least_over_cpu": min(shares.values()),
                            "most_over_cpu": max(shares.values())}
    wins = {mode: [row["n"] for row in compared if mode in row["gpu"] and row["gpu"][mode]["speedup"] > 1
                   and row["gpu"][mode]["beyond_noise"] is not False]
            for mode in dict.fromkeys(mode for row in compared for mode in row["gpu"])}
    transfer_wins = [n for mode in TRANSFER_MODES for n in wins.get(mode, [])]
    holds = (bool(copies) and all(found["more_than_cpu_everywhere"] for found in copies.values())
             and not transfer_wins and bool(wins.get(RESIDENT)))
    return {"copies": copies, "gpu_wins": wins, "holds": holds}


def derive(entries):
    rows = comparison(entries)
    return {"series": series(entries), "comparison": rows, "crossovers": crossovers(entries),
            "expected_finding": expected_finding(rows), "failures": grouped_failures(entries)}


MODES = (RESIDENT, *TRANSFER_MODES)
MODE_NAMES = {RESIDENT: "data resident", "transfer_pinned": "pinned copies", "transfer_pageable": "pageable copies"}


def _gpu_cell(found):
    return (f"{seconds(found['median_s'])} ({ratio(found['speedup'])}{noise_note(found['beyond_noise'])})"
            if found else "n/a")


def _copies_cell(found):
    return f"{seconds(found['copy_s'])} ({ratio(found['over_cpu'])} the CPU's)" if found else "n/a"


def _comparison(derived):
    rows = derived.get("comparison") or []
    modes = [mode for mode in MODES if any(mode in row["gpu"] for row in rows)]
    copied = [mode for mode in TRANSFER_MODES if any(mode in row["copies"] for row in rows)]
    header = (["n (elements)", "bytes a call", "best CPU"] + [f"GPU, {MODE_NAMES[mode]}" for mode in modes]
              + [f"copies, {MODE_NAMES[mode]}" for mode in copied])
    return table_section("Vector add: CPU against GPU", header, rows, lambda row: [
        str(row["n"]), byte_size(12 * row["n"]), f"{seconds(row['cpu']['median_s'])} ({md(row['cpu']['impl'])})",
        *(_gpu_cell(row["gpu"].get(mode)) for mode in modes), *(_copies_cell(row["copies"].get(mode))
                                                                for mode in copied)], paragraph(
        "Median times; beside each GPU time its speedup over the best CPU (CPU time / GPU time; \"within noise\": "
        "the two intervals overlap). Data resident: the kernel's device time (CUDA events, launch latency held "
        "out). Pinned and pageable copies: one call on the host clock until its work is done, A and B copied in "
        "and C out. The copies' time: that call less the kernel's resident time at the same size (the copies "
        "with their latency and the synchronisation), beside it that time over the best CPU's whole call. Bytes a "
        "call: A and B read, C written."), empty="No size was measured on the CPU.")


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


def sections(study, document):
    derived = study["derived"]
    return (_comparison(derived) + _finding(derived)
            + table_section("Vector add: crossovers", ["GPU mode"] + crossover_header(),
                            derived.get("crossovers") or [], lambda row: [md(row["mode"])] + crossover_cells(row))
            + failures_section(study, "Vector add: skipped and failed entries"))


ELEMENTS = "elements per vector (n; 12 bytes each across A, B and C)"


def _per_mode(rows, part, field):
    """{mode: [(n, row[part][mode][field]), ...]} of the comparison rows."""
    return {mode: [(row["n"], row[part][mode][field]) for row in rows if mode in row[part]]
            for mode in dict.fromkeys(mode for row in rows for mode in row[part])}


def plots(pyplot, study, plot_dir):
    """Time over n; the best CPU's time over the best GPU's; the copies' time over the best CPU's."""
    derived = study["derived"]
    series = charts.row_series(derived.get("series") or [], ("impl", "mode"))
    rows = derived.get("comparison") or []
    chart = functools.partial(charts.line_charts, plot_dir, xlabel=ELEMENTS)
    return charts.draw(pyplot, chart(
        ("vector_add_time",), "vector_add FP32: median time", series, (lambda key: key[1],), charts.cpu_keys(series),
        ylabel="median time (s)", value=lambda point: point["median_s"]) + chart(
        ("vector_add_speedup",), "vector_add FP32: GPU speedup over the best CPU",
        {("best GPU", mode): points for mode, points in _per_mode(rows, "gpu", "speedup").items()},
        ylabel="best CPU time / best GPU time (x)",
        mark=charts.parity_and_crossovers(charts.timed(derived.get("crossovers") or []))) + chart(
        ("vector_add_copies",), "vector_add: the copies' time over the best CPU's whole time\n"
        "(transfer-inclusive time less the kernel's resident time)",
        {(mode,): points for mode, points in _per_mode(rows, "copies", "over_cpu").items()},
        ylabel="copies / best CPU time (x; above 1: the copies cost more)", mark=charts.parity))


def vector_add_copies(document):
    found = derived_of(document, "vector_add").get("expected_finding")
    if not found or not found["copies"]:
        return None
    cheaper = any(copies["sizes_cheaper_than_cpu"] for copies in found["copies"].values())
    resident = found["gpu_wins"].get(RESIDENT) or []
    verdict = (CONFIRMED if found["holds"] else
               f"{REFUTED}: the copies cost less than the CPU at some sizes" if cheaper else
               "depends: the copies cost more, but the GPU does not beat the CPU even with the data resident"
               if not resident else "depends on the size")
    spans = "; ".join(f"{mode.replace('transfer_', '')} copies {ratio(copies['least_over_cpu'])} to "
                      f"{ratio(copies['most_over_cpu'])} the best CPU's time"
                      for mode, copies in found["copies"].items())
    return {"verdict": verdict, "numbers": {"copies": found["copies"], "gpu_wins": found["gpu_wins"]},
            "answer": f"C = A + B in FP32 at every size measured: {spans}; the GPU with the data resident beats "
                      f"the best CPU at " + (f"n = {_sizes(resident)}" if resident else "no size")
                      + "."}


CLAIMS = (
    Claim("vector_add_copies", "For a memory-bound operation such as vector add, copying the data to the GPU costs "
          "more than the CPU's whole computation: the GPU pays off only when the data stays resident",
          "common GPU-offloading advice, after the first CUDA program", vector_add_copies,
          studies=("vector_add",), position=8),
)

STUDY = Study(name="vector_add", derive=lambda study, document, rounds: derive(study["entries"]), summary=sections,
              plots=plots, rates=size_rates("elements"), axes={"n": "elements"}, claims=CLAIMS, position=80)
