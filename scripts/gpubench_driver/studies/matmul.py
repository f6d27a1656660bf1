"""summary.md: the matmul study's sections, from its `derived` (derive.py)."""
from gpubench_driver.lib.sections import (STEADY_STATE, best_rates, caps, crossover_cells,
                                            crossover_header, failed_entries, references_not_run, run_notes,
                                            unsettled_mark)
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import md, rate, ratio, seconds
from gpubench_driver.stages import reference

CROSSOVER_TITLE = "Crossover (GPU faster than the best CPU)"


def _crossovers(derived):
    rows = [[md(found["mode"]), *crossover_cells(found)] for found in derived.get("crossovers", [])]
    if not rows:
        return section(CROSSOVER_TITLE, [paragraph("No GPU entries were measured.")])
    return section(CROSSOVER_TITLE, [
        paragraph("Resident GPU entries are compared twice: on their device time (the GEMM as a step inside a "
                  "longer GPU pipeline, launch latency hidden) and on the host-observed latency of one call (a CPU "
                  "program that calls one GEMM and waits for it). The modes with copies are timed as the host sees "
                  "one call, copies included."),
        table(["GPU mode", *crossover_header()], rows)])


def _headline_speedups(derived):
    found = derived.get("headline_speedups") or {}
    rows = [[str(row["n"]), f"{md(row['cpu_impl'])} {seconds(row['cpu_median_s'])}", md(row["mode"]),
             f"{md(row['gpu_impl'])} {seconds(row['gpu_median_s'])}", ratio(row["speedup"])]
            for row in found.get("rows", [])]
    if not rows:
        return []
    measured = sorted({row["n"] for row in found["rows"]})  # the headline sizes this run has rows for
    return section(f"Speedups at n = {', '.join(map(str, measured))}",
                   [table(["n", "best CPU", "GPU mode", "best GPU", "speedup"], rows)])


def _reference_item(result):
    time_s = result.get("time_s") or {}
    blas = result.get("blas") if isinstance(result.get("blas"), dict) else {}
    library = f"{md(result.get('library'))} {md(result.get('version'))}"
    if blas.get("name"):
        library += f" (BLAS {md(blas.get('name'))} {md(blas.get('version'))})"
    return (f"{library} at n={result.get('n')}: median {seconds(time_s.get('median'))} "
            f"(min {seconds(time_s.get('min'))}, max {seconds(time_s.get('max'))}), {rate(result.get('flop_per_s'))}")


def _comparison_item(row):
    where = f"{md(row['study'])} vs {md(row['reference'])} at n={row['n']}: "
    if row["time_ratio"] is None:
        return where + md(row["note"])
    return (where + f"{seconds(row['study_median_s'])} vs {seconds(row['reference_median_s'])} "
            f"(time ratio {row['time_ratio']:.3f}{unsettled_mark(row)}; below 1: the study is faster)")


def _references(derived, document):
    references = document.get("references")
    if references is None:
        return section("Reference libraries", [paragraph(references_not_run(document))])
    items = []
    for name, run in references.items():
        if name in reference.RUNS["matmul"]:
            items += run_notes(name, run) + [_reference_item(result) for result in run.get("results") or []]
    rows = derived.get("reference_comparison", [])
    items += [_comparison_item(row) for row in rows]
    if not items:
        return []
    return section("Reference libraries", [bullets(items)] + ([paragraph(
        "Time ratios: the GPU pairs' sustained device time per call, the CPU pair's host time per call. "
        + STEADY_STATE)] if rows else []))


def sections(study, document):
    derived = study["derived"]
    return (_crossovers(derived) + _headline_speedups(derived) + best_rates(derived) + caps(study)
            + failed_entries(study) + _references(derived, document))
