"""Findings of the gemm_ladder study: each rung's rate at each size as a fraction of cuBLAS's at the same
size and precision (its interval from both times' intervals), beside what its launch takes (registers,
shared memory, theoretical occupancy, its tiling in words: the entry's label), and the issue's targets:
the best own kernel of each ladder against cuBLAS at 4096 and 8192.

Entry axes: impl = rung ("cublas" is each ladder's yardstick), mode resident, precision names the ladder
(fp32: SGEMM on the CUDA cores; fp16: FP16 in, FP32 accumulate on the tensor cores), n = the square size.
Every entry of one size and ladder does the same work, so a rung's fraction of cuBLAS is the inverse ratio
of their device times."""
from gpubench_driver.lib.findings import grouped_failures, ok_entries
from gpubench_driver.lib.stats import finite, interval_side, time_ratio_interval

YARDSTICK = "cublas"
LADDERS = {"fp32": "SGEMM (FP32 on the CUDA cores)", "fp16": "tensor cores (FP16 in, FP32 accumulate, FP16 out)"}
# The issue's targets: the best own rung of a ladder against cuBLAS at these sizes (fp16's stretch: 0.90).
TARGETS = {"fp32": 0.90, "fp16": 0.70}
TARGET_SIZES = (4096, 8192)
LAUNCH_COUNTERS = ("threads_per_block", "grid_blocks", "registers_per_thread", "shared_bytes_per_block",
                   "blocks_per_multiprocessor", "theoretical_occupancy")


def _point(entry, yardstick):
    point = {"rung": entry["impl"], "n": entry["n"], "median_s": entry["time_s"]["median"],
             "flop_per_s": entry.get("flop_per_s"), "tiling": entry.get("label"),
             **{name: finite(entry.get(name)) for name in LAUNCH_COUNTERS},
             "fraction_of_cublas": None, "fraction_interval": None}
    if yardstick:
        point["fraction_of_cublas"] = yardstick["time_s"]["median"] / entry["time_s"]["median"]
        point["fraction_interval"] = time_ratio_interval(yardstick["time_s"], entry["time_s"])
    return point


# A target is met or missed only where the fraction's whole interval lies on one side of it.
VERDICTS = {"above": "met", "below": "short", "within noise": "within noise"}


def _targets(ladder, points):
    rows = []
    target = TARGETS[ladder]
    for n in TARGET_SIZES:
        own = [p for p in points if p["n"] == n and p["rung"] != YARDSTICK and p["fraction_of_cublas"] is not None]
        if not own:
            continue
        best = max(own, key=lambda p: p["fraction_of_cublas"])
        rows.append({"n": n, "target": target, "best": best,
                     "verdict": VERDICTS[interval_side(best["fraction_of_cublas"], best["fraction_interval"],
                                                       target)]})
    return rows


def _ladder(ladder, entries):
    mine = [e for e in entries if e["precision"] == ladder and e.get("time_s")]
    yardsticks = {e["n"]: e for e in mine if e["impl"] == YARDSTICK}
    # The own rungs in the binary's order (the ladder's), then the yardstick they climb to.
    rungs = [rung for rung in dict.fromkeys(e["impl"] for e in mine) if rung != YARDSTICK]
    rungs += [YARDSTICK] if yardsticks else []
    points = [_point(e, yardsticks.get(e["n"])) for e in mine]
    return {"precision": ladder, "title": LADDERS[ladder], "sizes": sorted({p["n"] for p in points}),
            "rungs": rungs, "points": points, "targets": _targets(ladder, points)}


def derive(study):
    entries = ok_entries(study["entries"])
    order = {impl.get("id"): index for index, impl in enumerate(study.get("implementations") or [])
             if isinstance(impl, dict)}
    entries = sorted(entries, key=lambda e: (order.get(e["impl"], len(order)), e["n"]))
    ladders = [_ladder(ladder, entries) for ladder in LADDERS if any(e["precision"] == ladder for e in entries)]
    return {"ladders": ladders, "failures": grouped_failures(study["entries"])}
