"""Findings of the precision study: how much faster than FP32 each precision is, next to the
accuracy it costs."""
from gpubench_driver.derive import best_rates, ok_entries, set_fraction_of_best_rate

FP32 = "fp32"
# The library of each device. Every entry is compared with its FP32 at the same mode and size
# (our WMMA kernel with cuBLAS FP32 too: that is what it would replace); our GPU kernels also
# with cuBLAS at their own precision.
LIBRARY = {"cpu": "openblas", "gpu": "cublas"}
CLAIM = "16-bit tensor-core math is up to 8x faster than FP32"
CLAIM_PRECISIONS = ("fp16", "bf16")
CLAIM_IMPL, CLAIM_MODE = "cublas", "resident"


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


def derive(entries):
    set_fraction_of_best_rate(entries)
    rows = speedups_over_fp32(entries)
    return {
        "speedups_over_fp32": rows,
        "tensor_core_claim": tensor_core_claim(rows),
        "best_rates": best_rates(entries, axes=("precision", "impl", "mode")),
    }
