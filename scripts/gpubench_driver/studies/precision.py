"""Findings of the precision study: how much faster than FP32 each precision is, next to the
accuracy it costs."""
from gpubench_driver.lib.findings import best_rates, failure_text, grouped_failures, ok_entries, set_fraction_of_best_rate

FP32 = "fp32"
# The library of each device. Every entry is compared with its FP32 at the same mode and size
# (our WMMA kernel with cuBLAS FP32 too: that is what it would replace); our GPU kernels also
# with cuBLAS at their own precision.
LIBRARY = {"cpu": "openblas", "gpu": "cublas"}
CLAIM = "16-bit tensor-core math is up to 8x faster than FP32"
CLAIM_PRECISIONS = ("fp16", "bf16")
CLAIM_IMPL, CLAIM_MODE = "cublas", "resident"
TABLE_SIZE = 4096  # the summary's tables: this size and the largest measured


def _median(entry):
    return entry["time_s"]["median"]


def _index(entries):
    """{(impl, mode, precision, n): entry} of the ok entries."""
    return {(e["impl"], e["mode"], e["precision"], e["n"]): e for e in ok_entries(entries)}


def speedups_over_fp32(entries):
    """One row per ok entry: its time and rate, its speedup over the FP32 baseline (same device
    library, mode and size), its errors on both input distributions and its tolerance."""
    index = _index(entries)
    rows = []
    for (impl, mode, precision, n), entry in sorted(index.items(), key=lambda item: (item[0][3], *item[0][:3])):
        library_impl = LIBRARY.get(entry["device"])
        fp32 = index.get((library_impl, mode, FP32, n))
        cublas = (index.get((library_impl, mode, precision, n))
                  if entry["device"] == "gpu" and impl != library_impl else None)
        rows.append({
            "n": n, "impl": impl, "device": entry["device"], "mode": mode, "precision": precision,
            "median_s": _median(entry), "flop_per_s": entry.get("flop_per_s"),
            "fp32_impl": library_impl if fp32 else None,
            "speedup_over_fp32": _median(fp32) / _median(entry) if fp32 else None,
            # e.g. the WMMA kernel's rate over cuBLAS FP16's (both do 2n^3 per call: a time ratio).
            "fraction_of_cublas_rate": _median(cublas) / _median(entry) if cublas else None,
            "rel_fro_error": entry.get("rel_fro_error"),
            "rel_fro_error_normal": entry.get("rel_fro_error_normal"),
            "tolerance": entry.get("tolerance"),
        })
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


def _table_order(precisions):
    """Sort key of a row: GPU first, then implementation, mode, and the study's order of precisions."""
    order = [p.get("id") for p in precisions or [] if isinstance(p, dict)]
    return lambda row: (row["device"] != "gpu", row["impl"], row["mode"],
                        order.index(row["precision"]) if row["precision"] in order else len(order), row["precision"])


def tables(rows, precisions):
    """The summary's speed and accuracy tables: at TABLE_SIZE and at the largest size measured, each
    with its rows (of speedups_over_fp32) in the table's order."""
    measured = {row["n"] for row in rows}
    if not measured:
        return []
    sizes = {n: False for n in (TABLE_SIZE,) if n in measured}
    sizes[max(measured)] = True
    key = _table_order(precisions)
    return [{"n": n, "largest_measured": largest, "rows": sorted((row for row in rows if row["n"] == n), key=key)}
            for n, largest in sorted(sizes.items())]


def cpu_notes(entries, precisions):
    """Per precision the CPU ran or skipped: why it was not measured, or the binary's caveat about it
    on this CPU (e.g. BF16 without BF16 instructions)."""
    notes = {p.get("id"): p.get("cpu_note") for p in precisions or [] if isinstance(p, dict)}
    cpu = [entry for entry in entries if entry.get("device") == "cpu"]
    found = []
    for precision in dict.fromkeys(entry["precision"] for entry in cpu):
        measured = [entry for entry in cpu if entry["precision"] == precision]
        if not any(entry["status"] == "ok" for entry in measured):
            found.append({"precision": precision, "note": failure_text(measured[0])})
        elif notes.get(precision):
            found.append({"precision": precision, "note": notes[precision]})
    return found


def derive(entries, precisions=None):
    """The findings; precisions: the study's description of its precisions (their order, CPU notes)."""
    set_fraction_of_best_rate(entries)
    rows = speedups_over_fp32(entries)
    return {
        "speedups_over_fp32": rows,
        "tensor_core_claim": tensor_core_claim(rows),
        "best_rates": best_rates(entries, axes=("precision", "impl", "mode")),
        "tables": tables(rows, precisions),
        "cpu_notes": cpu_notes(entries, precisions),
        "failures": grouped_failures(entries),
    }
