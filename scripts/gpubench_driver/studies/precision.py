"""The precision study's plug-in: GEMM in every number format (FP64 to INT8, cuBLAS, our kernels and the
CPU's), how much faster than FP32 each format is, next to the accuracy it costs; its sections, plots
(speed against accuracy), claim (tensor cores) and headline figure (the energy of one BF16 GEMM)."""
import re

from gpubench_driver.lib import charts
from gpubench_driver.lib.check_figures import entries_at, rate_figure
from gpubench_driver.lib.claims import CLOSE_TO, CONFIRMED, Claim, REFUTED, derived_of
from gpubench_driver.lib.document import bullets, paragraph, section, table
from gpubench_driver.lib.figures import PRECISION_NAMES, PRECISIONS, energy_figure
from gpubench_driver.lib.findings import (best_rates, failure_text, group_by, grouped_failures, median_s, ok_entries,
                                          order_of, set_fraction_of_best_rate)
from gpubench_driver.lib.formatting import md, rate, ratio, scientific, seconds
from gpubench_driver.lib.registry import CheckPoint, Comparison, GEMM_TARGET, Run, Study, TORCH_SIZES, csv, flop_rates
from gpubench_driver.lib.sections import (STEADY_STATE, best_rates_section, failures_section, reference_section,
                                          target_lines, unsettled_mark)

FP32 = "fp32"
# The library of each device. Every entry is compared with its FP32 at the same mode and size
# (our WMMA kernel with cuBLAS FP32 too: that is what it would replace); our GPU kernels also
# with cuBLAS at their own precision.
LIBRARY = {"cpu": "openblas", "gpu": "cublas"}
CLAIM = "16-bit tensor-core math is up to 8x faster than FP32"
CLAIM_PRECISIONS = ("fp16", "bf16")
CLAIM_IMPL, CLAIM_MODE = "cublas", "resident"
TABLE_SIZE = 4096  # the summary's tables: this size and the largest measured


def speedups_over_fp32(entries):
    """One row per ok entry: time, rate, speedup over its device library's FP32, errors and tolerance."""
    index = {(e["impl"], e["mode"], e["precision"], e["n"]): e for e in ok_entries(entries)}
    rows = []
    for (impl, mode, precision, n), entry in sorted(index.items(), key=lambda item: (item[0][3], *item[0][:3])):
        library_impl = LIBRARY.get(entry["device"])
        fp32 = index.get((library_impl, mode, FP32, n))
        cublas = (index.get((library_impl, mode, precision, n))
                  if entry["device"] == "gpu" and impl != library_impl else None)
        rows.append({"n": n, "impl": impl, "device": entry["device"], "mode": mode, "precision": precision,
                     "median_s": median_s(entry), "flop_per_s": entry.get("flop_per_s"),
                     "fp32_impl": library_impl if fp32 else None,
                     "speedup_over_fp32": median_s(fp32) / median_s(entry) if fp32 else None,
                     # e.g. the WMMA kernel's rate over cuBLAS FP16's (both do 2n^3 per call: a time ratio).
                     "fraction_of_cublas_rate": median_s(cublas) / median_s(entry) if cublas else None,
                     **{key: entry.get(key) for key in ("rel_fro_error", "rel_fro_error_normal", "tolerance")}})
    return rows


def tensor_core_claim(rows):
    """The largest measured speedup of each 16-bit precision over FP32 (cuBLAS, resident) and where."""
    results = []
    for precision in CLAIM_PRECISIONS:
        measured = [row for row in rows if (row["impl"], row["mode"], row["precision"]) == (
            CLAIM_IMPL, CLAIM_MODE, precision) and row["speedup_over_fp32"] is not None]
        best = max(measured, key=lambda row: row["speedup_over_fp32"], default=None)
        results.append({"precision": precision, "max_speedup": best["speedup_over_fp32"] if best else None,
                        "n": best["n"] if best else None, "sizes_compared": sorted(row["n"] for row in measured)})
    return {"claim": CLAIM, "impl": CLAIM_IMPL, "mode": CLAIM_MODE, "fp32": f"{CLAIM_IMPL} {FP32}",
            "results": results}


def tables(rows, precisions):
    """The speed and accuracy tables: at TABLE_SIZE and at the largest size, each with its rows in order."""
    measured = {row["n"] for row in rows}
    if not measured:
        return []
    sizes = {n: False for n in (TABLE_SIZE,) if n in measured}
    sizes[max(measured)] = True
    order = order_of(p.get("id") for p in precisions or [] if isinstance(p, dict))  # the study's precisions
    return [{"n": n, "largest_measured": largest, "rows": sorted(
        (row for row in rows if row["n"] == n),
        key=lambda row: (row["device"] != "gpu", row["impl"], row["mode"], order(row["precision"]), row["precision"]))}
        for n, largest in sorted(sizes.items())]


def cpu_notes(entries, precisions):
    """Per precision on the CPU: why it was not measured, or the binary's caveat about it."""
    notes = {p.get("id"): p.get("cpu_note") for p in precisions or [] if isinstance(p, dict)}
    found = []
    for precision, measured in group_by((entry for entry in entries if entry.get("device") == "cpu"),
                                        lambda entry: entry["precision"]).items():
        if not any(entry["status"] == "ok" for entry in measured):
            found.append({"precision": precision, "note": failure_text(measured[0])})
        elif notes.get(precision):
            found.append({"precision": precision, "note": notes[precision]})
    return found


def derive(entries, precisions=None):
    """The findings; precisions: the study's description of its precisions (their order, CPU notes)."""
    set_fraction_of_best_rate(entries)
    rows = speedups_over_fp32(entries)
    return {"speedups_over_fp32": rows, "tensor_core_claim": tensor_core_claim(rows),
            "best_rates": best_rates(entries, axes=("precision", "impl", "mode")), "tables": tables(rows, precisions),
            "cpu_notes": cpu_notes(entries, precisions), "failures": grouped_failures(entries)}


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


def _result_item(name, result):
    return (f"{md(name)}: {md(result.get('library'))} {md(result.get('version'))} on {md(result.get('device'))}, "
            f"{md(result.get('dtype'))} through {md(result.get('op'))}"
            + (f" ({md(result['blas_library'])})" if result.get("blas_library") else "")
            + (f" (output {md(result['out_dtype'])}, scales {md(result.get('scaling'))})"
               if result.get("out_dtype") else ""))


def _sizes_not_compared(rows):
    """The comparison's sizes this run has no row at, and how to compare at every one."""
    missing = [n for n in TORCH_SIZES if n not in {row["n"] for row in rows}]
    if not rows or not missing:
        return []
    return [paragraph(f"Not compared at n = {', '.join(map(str, missing))}: this run measured no format there "
                      f"(`gpubench run --studies precision --sizes {csv(TORCH_SIZES)}` compares every format at "
                      f"each, in one run).")]


def _references(derived, document):
    rows = derived.get("reference_comparison", [])
    shown = [table(["precision", "n", "study", "reference", "time ratio"], map(_comparison_row, rows)), paragraph(
        "Time ratio: study median / reference median at the same n and precision, both the sustained device time "
        "per call (CUDA events around calls queued behind a hold, so launch latency is out); below 1 the study is "
        "faster. " + STEADY_STATE, *target_lines(rows)), *_sizes_not_compared(rows)] if rows else []
    return reference_section("Precision: reference libraries", document, REFERENCES,
                             lambda items: ([bullets(items)] if items else []) + shown, _result_item, only_timed=True)


def sections(study, document):
    derived = study["derived"]
    return (_claim(derived) + _tables(derived)
            + best_rates_section(derived, ("precision", "impl", "mode"), "Precision: best rates")
            + failures_section(study, "Precision: skipped and failed entries") + _cpu_notes(derived)
            + _references(derived, document))


def pareto_points(rows):
    """Per GPU implementation and precision, resident: the largest size with speedup and error."""
    groups = group_by((row for row in rows if row["mode"] == "resident" and charts.placeable(row["speedup_over_fp32"])
                       and charts.placeable(row["rel_fro_error"])), lambda row: (row["impl"], row["precision"]))
    return [max(groups[key], key=lambda row: row["n"]) for key in sorted(groups)]


def _pareto_plot(pyplot, path, points):
    figure, axes = pyplot.subplots(figsize=(9, 6))
    axes.scatter([p["rel_fro_error"] for p in points], [p["speedup_over_fp32"] for p in points],
                 color="tab:blue", zorder=3, label="error on uniform [-1, 1) inputs")
    normal = [p for p in points if charts.placeable(p["rel_fro_error_normal"])]
    if normal:
        axes.scatter([p["rel_fro_error_normal"] for p in normal], [p["speedup_over_fp32"] for p in normal],
                     facecolors="none", edgecolors="tab:orange", zorder=3, label="error on standard-normal inputs")
    # Labels alternate above and below in the order of speedup: neighbours in speed rarely collide.
    for index, point in enumerate(sorted(points, key=lambda p: p["speedup_over_fp32"])):
        impl = "" if point["impl"] == "cublas" else f" {point['impl']}"
        axes.annotate(charts.plain(f"{point['precision']}{impl} (n={point['n']})"),
                      (point["rel_fro_error"], point["speedup_over_fp32"]), textcoords="offset points",
                      xytext=(6, 5 if index % 2 else -12), fontsize="small")
    charts.parity(axes)
    axes.set(xscale="log", yscale="log", xlabel="relative Frobenius error against FP64 (no unit)",
             ylabel="speedup over cuBLAS FP32, same size (x)",
             title="precision: speed against accuracy (GPU resident, largest size of each precision)")
    charts.finish(pyplot, figure, axes, path)


def plots(pyplot, study, plot_dir):
    """The speed-accuracy chart, and FLOP/s over n split by input width."""
    paths, points = [], pareto_points(study["derived"].get("speedups_over_fp32", []))
    if points:
        paths.append(charts.plot_path(plot_dir, "precision_pareto"))
        _pareto_plot(pyplot, paths[0], points)
    # Resident GPU and host CPU lines: the transfer modes would double the lines and say the same.
    series = charts.series(study["entries"], lambda entry: (entry["impl"], entry["mode"], entry["precision"])
                           if entry["mode"] in ("resident", charts.HOST_MODE) else None)
    # Split by input width: the first number in a precision's name ('16-bit' for bf16 and fp16_acc16).
    width = (lambda key: f"{bits.group()}-bit" if (bits := re.search(r"\d+", key[2])) else key[2],)
    return paths + charts.draw(pyplot, charts.line_charts(
        plot_dir, ("precision_rate",), "precision: FLOP/s", series, width,
        charts.cpu_keys(series), ylabel="FLOP/s (int8: operations/s)", value=lambda entry: entry.get("flop_per_s")))


TENSOR_FACTOR = 8.0


def tensor_cores(document):
    claim = derived_of(document, "precision").get("tensor_core_claim")
    results = [row for row in (claim or {}).get("results", []) if row.get("max_speedup") is not None]
    if not results:
        return None
    best = max(row["max_speedup"] for row in results)
    verdict = (CONFIRMED if abs(best / TENSOR_FACTOR - 1) <= CLOSE_TO else
               f"{REFUTED}: the gain is larger" if best > TENSOR_FACTOR else f"{REFUTED}: the gain is smaller")
    found = ", ".join(f"{row['precision'].upper()} {ratio(row['max_speedup'])} (n = {row['n']})" for row in results)
    return {"verdict": verdict, "numbers": {"speedups": {row["precision"]: row["max_speedup"] for row in results}},
            "answer": f"cuBLAS GEMM against cuBLAS FP32 at the same size, data resident: {found}."}


# The study's precision -> (the reference, its dtype): every format PyTorch has a GEMM of, FP32 with them so
# that the study's own FP32 entry is checked at its sizes (the matmul suite stops at 4096).
PRECISION_DTYPES = {"fp32": ("torch", "float32"), "tf32": ("torch", "tf32"), "fp16": ("torch", "float16"),
                    "bf16": ("torch", "bfloat16"), "fp8_e4m3": ("torch._scaled_mm", "float8_e4m3fn")}
REFERENCES = {"torch_precision": Run("torch", "reference_matmul.py", (
    "torch", csv(TORCH_SIZES), csv(dtype for _, dtype in PRECISION_DTYPES.values())), gpu=True, sizes_at=1)}
COMPARISONS = tuple(Comparison("precision", "cublas", "resident", precision, "torch_precision", reference,
                               {"dtype": dtype}, tuple((n, None) for n in TORCH_SIZES), GEMM_TARGET)
                    for precision, (reference, dtype) in PRECISION_DTYPES.items())
CLAIMS = (
    Claim("tensor_cores", "16-bit tensor-core math is up to 8x faster than FP32",
          "a common reading of tensor-core marketing", tensor_cores, studies=("precision",), position=4),
)

# gpubench check: cuBLAS's dense GEMM in every format the GPU runs, at the size from which the rate stops growing.
CHECK_SIZE = 8192


def check_figures(study, document, sheet):
    """Each format's cuBLAS GEMM at the check's size against the datasheet's rate (with or without tensor cores)."""
    found = []
    for entry in sorted(entries_at(study, impl="cublas", mode="resident", n=CHECK_SIZE),
                        key=lambda entry: (order_of(PRECISIONS)(entry["precision"]), entry["precision"])):
        if not entry.get("flop_per_s"):
            continue
        plain = entry.get("tensor_cores") == 0
        peak = ((sheet or {}).get("peak_flop_per_s_without_tensor_cores" if plain else "peak_flop_per_s")
                or {}).get(entry["precision"])
        what = "datasheet, without tensor cores" if plain else "datasheet (dense)"
        found.append(rate_figure("precision", entry, f"rate/{entry['precision']}",
                                 f"{PRECISION_NAMES.get(entry['precision'], entry['precision'])} GEMM (cuBLAS)",
                                 {"value": peak, "what": what} if peak else None))
    return found


CHECK = CheckPoint(
    sizes=(CHECK_SIZE,), impls=("cublas",), modes=("resident",), figures=check_figures,
    plateau="n = 8192: the size from which cuBLAS's GEMM rate stops growing on H100-class GPUs; "
            "every format the GPU runs, at that one size",
    budget="one resident cuBLAS entry per format (FP64 to INT8), one trial, the throughput protocol's stopping "
           "rule; the inputs of the 8192 problem and 256 rows of their FP64 product, on the host, are most of "
           "its time")


STUDY = Study(name="precision",
              derive=lambda study, document, rounds: derive(study["entries"], study.get("precisions")),
              summary=sections, plots=plots, roofline_marker="s", rates=flop_rates, one_gemm_per_call=True,
              references=REFERENCES, comparisons=COMPARISONS, claims=CLAIMS,
              headline=(("energy", lambda document: energy_figure(document, "precision", "cublas", "bf16")),),
              check=CHECK, position=20)
