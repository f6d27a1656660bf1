"""The matmul study's plug-in: FP32 GEMM by every CPU and GPU implementation at every size. Its findings are
lib/findings.derive's (crossovers refined by extra sizes, speedups, best rates); its sections, plots, claim and
headline figures (the crossovers, the energy of one GEMM) are here."""
import math

from gpubench_driver.lib import charts, findings
from gpubench_driver.lib.claims import CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.figures import LATENCY, THROUGHPUT, energy_figure, figure
from gpubench_driver.lib.formatting import md, rate, ratio, seconds
from gpubench_driver.lib.registry import Comparison, GEMM_TARGET, Run, Study, TORCH_SIZES, csv, flop_rates
from gpubench_driver.lib.sections import (STEADY_STATE, best_rates_section, caps, crossover_cells, crossover_header,
                                          failed_entries_section, reference_section, unsettled_mark)

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


def _reference_item(name, result):
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
    rows = derived.get("reference_comparison", [])
    steady = [paragraph("Time ratios: the GPU pairs' sustained device time per call, the CPU pair's host time per "
                        "call. " + STEADY_STATE)] if rows else []
    return reference_section("Reference libraries", document, REFERENCES, lambda items: (
        [bullets(items + [_comparison_item(row) for row in rows])] + steady if items or rows else []),
        _reference_item, only_timed=True)


def sections(study, document):
    derived = study["derived"]
    return (_crossovers(derived) + _headline_speedups(derived) + best_rates_section(derived) + caps(study)
            + failed_entries_section(study) + _references(derived, document))


def _speedup_series(entries):
    """{("best GPU", mode): [(n, best CPU time / best GPU time of that mode)]} at the sizes both measured."""
    best_cpu = findings.best_by_size(findings.cpu_entries(entries))
    series = {}
    for mode in findings.gpu_modes(entries):
        best_gpu = findings.best_by_size(findings.gpu_entries(entries, mode))
        series[("best GPU", mode)] = [(n, best_cpu[n]["time_s"]["median"] / best_gpu[n]["time_s"]["median"])
                                      for n in sorted(set(best_cpu) & set(best_gpu))]
    return series


def plots(pyplot, study, plot_dir):
    """Time and rate of every implementation and mode; the best GPU's speedup over the best CPU per mode."""
    entries = study["entries"]
    series = charts.series(entries, lambda entry: (entry["impl"], entry["mode"]))
    by_mode = (lambda key: key[1],)
    cpu = charts.cpu_keys(series)
    study_charts = (
        charts.line_charts(plot_dir, ("matmul_time",), "matmul FP32: median time", series, by_mode, cpu,
                           ylabel="median time (s)", value=lambda entry: entry["time_s"]["median"])
        + charts.line_charts(plot_dir, ("matmul_rate",), "matmul FP32: FLOP/s", series, by_mode, cpu,
                             ylabel="FLOP/s", value=lambda entry: entry.get("flop_per_s")))
    if findings.gpu_modes(entries):
        crossovers = charts.timed(study["derived"].get("crossovers", []))
        study_charts += charts.line_charts(plot_dir, ("matmul_speedup",),
                                           "matmul FP32: GPU speedup over the best CPU", _speedup_series(entries),
                                           ylabel="speedup: best CPU time / best GPU time (x)",
                                           mark=charts.parity_and_crossovers(crossovers))
    return charts.draw(pyplot, study_charts)


SMALL_MATRIX = 200


def small_matrix(document):
    entries = (document["studies"].get("matmul") or {}).get("entries") or []
    best_cpu = findings.best_by_size(findings.cpu_entries(entries))
    best_gpu = {mode: best for mode in ("resident", "transfer_pinned", "transfer_pageable")
                if (best := findings.best_by_size(findings.gpu_entries(entries, mode)))}
    modes = list(best_gpu)
    if "resident" not in modes or not best_cpu:
        return None
    sizes = [n for n in best_cpu if all(n in best_gpu[mode] for mode in modes)]
    if not sizes:
        return None
    n = min(sizes, key=lambda size: abs(math.log(size / SMALL_MATRIX)))
    cpu_s = best_cpu[n]["time_s"]["median"]
    speedups = {mode: cpu_s / best_gpu[mode][n]["time_s"]["median"] for mode in modes}
    eaten = [speedups[mode] <= 1 for mode in modes if mode != "resident"]  # the copies eat the gain
    gains = speedups["resident"] > 1
    verdict = (CONFIRMED if gains and eaten and all(eaten) else
               "depends on the host memory: pinned copies keep a gain, pageable ones eat it" if gains and any(eaten)
               else REFUTED)
    parts = ", ".join(f"{ratio(speedups[mode])} {mode.replace('transfer_', 'with ')} copies"
                      for mode in modes if mode != "resident")
    return {"verdict": verdict, "numbers": {"n": n, "speedups": speedups},
            "answer": f"At n = {n} (the measured size nearest {SMALL_MATRIX}), FP32 GEMM on the GPU against the best "
                      f"CPU: {ratio(speedups['resident'])} with the data resident" + (f"; {parts}" if parts else "")
                      + "."}


MODE_NAMES = {"resident": "data resident", "transfer_pinned": "with pinned copies",
              "transfer_pageable": "with pageable copies"}


def crossover_figures(document):
    """From which matrix size the best GPU path beats the best CPU one, per GPU mode (matmul, FP32)."""
    found = []
    for row in derived_of(document, "matmul").get("crossovers") or []:
        if row.get("measure", "time") != "time" or row.get("upper") is None:
            continue
        over_trials = row.get("estimate_n_interval")
        value = row.get("estimate_n") or row["upper"]
        # Over the trials where they cross; else the bracket of measured sizes, stretched to an extrapolated estimate.
        interval = ((over_trials["low"], over_trials["high"]) if over_trials else
                    (min(row["lower"], value), max(row["upper"], value)) if row.get("lower") else (None, None))
        found.append(figure(f"crossover/matmul/{row['mode']}",
                            f"GPU beats CPU from n (FP32 GEMM, {MODE_NAMES.get(row['mode'], row['mode'])})",
                            value, interval, "n", None, THROUGHPUT if row["mode"] == "resident" else LATENCY,
                            f"matmul: {row['gpu_impl']} against the best CPU; {row['method']}", device="both"))
    return found


NUMPY_SIZES = (4096,)
REFERENCES = {"numpy": Run("numpy", "reference_matmul.py", ("numpy", csv(NUMPY_SIZES)), gpu=False, sizes_at=1),
              "torch": Run("torch", "reference_matmul.py", ("torch", csv(TORCH_SIZES), "float32"), gpu=True,
                           sizes_at=1)}
COMPARISONS = (Comparison("matmul", "cublas", "resident", "fp32", "torch", "torch", {"dtype": "float32"},
                          tuple((n, None) for n in TORCH_SIZES), GEMM_TARGET),
               Comparison("matmul", "openblas", "host", "fp32", "numpy", "numpy", {"dtype": "float32"},
                          tuple((n, None) for n in NUMPY_SIZES)))
CLAIMS = (
    Claim("small_matrix", "At 200x200 the GPU is about 6x faster, but copying the data each call eats the gain",
          "a blog benchmark of a K80 against a 4-core laptop", small_matrix, studies=("matmul",), position=1),
)

# Only matmul compares the GPU with the CPU at every size: the precision study has no crossover
# to refine, and the batch studies' lie along the batch, which their batches sweep in doublings.
STUDY = Study(name="matmul", refined=True,
              derive=lambda study, document, rounds: findings.derive(study["entries"], rounds),
              summary=sections, plots=plots, roofline_marker="o", rates=flop_rates, one_gemm_per_call=True,
              references=REFERENCES, comparisons=COMPARISONS, claims=CLAIMS,
              headline=(("crossover", crossover_figures),
                        ("energy", lambda document: energy_figure(document, "matmul", "cublas", "fp32"))), position=10)
