"""summary.md: the precision study's sections, from its `derived` (derive_precision.py)."""
from gpubench_driver.lib.sections import (STEADY_STATE, best_rates, grouped_failures, references_not_run,
                                            run_notes, unsettled_mark)
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.formatting import md, rate, ratio, scientific, seconds
from gpubench_driver.stages import reference

TABLE_HEADER = ("precision", "impl", "mode", "median time", "rate", "speedup over FP32", "rel. error (uniform)",
                "rel. error (normal)", "tolerance")


def _claim(derived):
    claim = derived.get("tensor_core_claim")
    if not claim:
        return []
    found = [f"{md(result['precision'])} up to {ratio(result['max_speedup'])} (n={result['n']})"
             if result["max_speedup"] is not None else f"{md(result['precision'])} not measured"
             for result in claim["results"]]
    return section("Precision: is 16-bit tensor-core math up to 8x faster than FP32?", [bullets([
        f"\"{md(claim['claim'])}\": measured with {md(claim['impl'])} ({md(claim['mode'])}) over "
        f"{md(claim['fp32'])} at the same size, the largest speedup: {', '.join(found)}."])])


def _table(found):
    rows = found["rows"]
    body = [[md(row["precision"]), md(row["impl"]), md(row["mode"]), seconds(row["median_s"]), rate(row["flop_per_s"]),
             ratio(row["speedup_over_fp32"]), scientific(row["rel_fro_error"]), scientific(row["rel_fro_error_normal"]),
             scientific(row["tolerance"])] for row in rows]
    ours = [f"{md(row['impl'])} {md(row['precision'])} ({md(row['mode'])}) runs at "
            f"{row['fraction_of_cublas_rate']:.0%} of cublas {md(row['precision'])}'s rate"
            for row in rows if row["fraction_of_cublas_rate"] is not None]
    title = f"Precision: speed and accuracy at n = {found['n']}" + (" (largest measured)" if found["largest_measured"]
                                                                    else "")
    return section(title, [table(TABLE_HEADER, body), bullets(ours), paragraph(
        "Speedup over FP32: the FP32 time of the device's library (openblas on the CPU, cublas on the GPU) "
        "in the same mode and size over this time; errors: relative Frobenius error against FP64.")])


def _tables(derived):
    found = derived.get("tables") or []
    if not found:
        return section("Precision: speed and accuracy", [paragraph("No precision entry was measured.")])
    return [block for one in found for block in _table(one)]


def _cpu_notes(derived):
    items = [f"{md(row['precision'])}: {md(row['note'])}" for row in derived.get("cpu_notes", [])]
    return section("Precision: on the CPU", [bullets(items)]) if items else []


def _comparison_row(row):
    ratio_cell = (f"{row['time_ratio']:.3f}{unsettled_mark(row)}" if row["time_ratio"] is not None
                  else f"n/a: {md(row['note'])}")
    return [md(row["precision"]), str(row["n"]), f"{md(row['study'])} {seconds(row['study_median_s'])}",
            f"{md(row['reference'])} {md(row['reference_dtype'])} {seconds(row['reference_median_s'])}", ratio_cell]


def _references(derived, document):
    title = "Precision: reference libraries"
    references = document.get("references")
    if references is None:
        return section(title, [paragraph(references_not_run(document))])
    items = []
    for name, run in references.items():
        if name in reference.RUNS["precision"]:
            items += run_notes(name, run)
            items += dict.fromkeys(  # one item per dtype, not per size
                f"{md(name)}: {md(result.get('library'))} {md(result.get('version'))} on "
                f"{md(result.get('device'))}, {md(result.get('dtype'))} through {md(result.get('op'))}"
                + (f" (output {md(result['out_dtype'])}, scales {md(result.get('scaling'))})"
                   if result.get("out_dtype") else "")
                for result in run.get("results") or [])
    blocks = [bullets(items)] if items else []
    rows = derived.get("reference_comparison", [])
    if rows:
        blocks += [table(["precision", "n", "study", "reference", "time ratio"], map(_comparison_row, rows)),
                   paragraph("Time ratio: study median / reference median at the same n and precision, both the "
                             "sustained device time per call (CUDA events around calls queued behind a hold, so "
                             "launch latency is out); below 1 the study is faster. " + STEADY_STATE,
                             *(f"Target (stated, not checked): {md(target)}." for target in dict.fromkeys(
                                 row["target"] for row in rows if row["target"])))]
    return section(title, blocks) if blocks else []


def sections(study, document):
    derived = study["derived"]
    return (_claim(derived) + _tables(derived)
            + best_rates(derived, ("precision", "impl", "mode"), "Precision: best rates")
            + grouped_failures(study, "Precision: skipped and failed entries") + _cpu_notes(derived)
            + _references(derived, document))
