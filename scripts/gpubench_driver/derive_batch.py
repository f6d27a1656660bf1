"""Findings of the batched GEMM study, at each matrix size n: the batch from which the GPU beats
the CPU, how throughput grows with the batch and where it stops growing, the device memory each
product takes, and how far one strided-batched call (or a graph of calls) is ahead of a loop of
cuBLAS calls."""
from gpubench_driver.derive import BATCH, crossovers as crossovers_along, ok_entries, set_fraction_of_best_rate

# A doubling of the batch that gains less than this in products/s: throughput has saturated.
SATURATION_GAIN = 0.05
LOOP_BASELINE = "cublas_loop"
AGAINST_LOOP = ("cublas_strided", "cublas_graph")
OPERAND_BYTES = 3 * 4  # A, B and C of one product: n x n FP32 each


def _median(entry):
    return entry["time_s"]["median"]


def products_per_s(entry):
    # The 'products' counter is the batch; a binary that did not report it ran the name's batch.
    products = entry["products"] if entry.get("products") is not None else entry["batch"]
    return products / _median(entry)


def _measured(entries, device=None):
    """The ok entries that have a batch (on one device, or both)."""
    return [e for e in ok_entries(entries) if e.get("batch") and device in (None, e.get("device"))]


# --- crossover over the batch ---------------------------------------------------------
def crossovers(entries):
    """Per matrix size and GPU mode: the batch from which the best GPU implementation beats the
    best CPU implementation at every larger measured batch (derive.crossover along the batch)."""
    measured = _measured(entries)
    return [{"n": n, **found} for n in sorted({e["n"] for e in measured})
            for found in crossovers_along([e for e in measured if e["n"] == n], BATCH)]


# --- throughput and saturation ---------------------------------------------------------
def saturation(points):
    """(batch, note): the smallest batch b whose doubling (the next measured batch, when it is 2b)
    gains less than SATURATION_GAIN in products/s; (None, why) when there is none."""
    doublings = [(low, high) for low, high in zip(points, points[1:]) if high["batch"] == 2 * low["batch"]]
    for low, high in doublings:
        if high["products_per_s"] < (1 + SATURATION_GAIN) * low["products_per_s"]:
            return low["batch"], None
    if not doublings:
        return None, "no batch was measured together with its double"
    return None, (f"products/s grew by {SATURATION_GAIN:.0%} or more at every measured doubling "
                  f"(up to batch {doublings[-1][1]['batch']})")


def throughput(entries):
    """One row per matrix size, implementation and mode: products/s and FLOP/s at each measured
    batch, the best of them, and the saturation batch."""
    series = {}
    for entry in _measured(entries):
        series.setdefault((entry["n"], entry["device"], entry["impl"], entry["mode"]), []).append({
            "batch": entry["batch"], "median_s": _median(entry), "products_per_s": products_per_s(entry),
            "flop_per_s": entry.get("flop_per_s")})
    rows = []
    for (n, device, impl, mode), points in sorted(series.items()):
        points.sort(key=lambda point: point["batch"])
        batch, note = saturation(points)
        best = max(points, key=lambda point: point["products_per_s"])
        rows.append({"n": n, "impl": impl, "device": device, "mode": mode, "points": points,
                     "saturation_batch": batch, "saturation_note": note,
                     "best_products_per_s": best["products_per_s"], "best_flop_per_s": best["flop_per_s"],
                     "best_batch": best["batch"]})
    return rows


# --- device memory --------------------------------------------------------------------
def device_memory(entries):
    """Per GPU entry: the device memory its operands took (measured by the binary) per product,
    next to the operands' own size."""
    return [{"n": e["n"], "batch": e["batch"], "impl": e["impl"], "mode": e["mode"],
             "device_bytes": e["device_bytes"], "bytes_per_product": e["device_bytes"] / e["batch"],
             "operand_bytes_per_product": OPERAND_BYTES * e["n"] ** 2}
            for e in sorted(_measured(entries, "gpu"), key=lambda e: (e["n"], e["impl"], e["mode"], e["batch"]))
            if e.get("device_bytes") is not None]


# --- one batched call against a loop of calls -----------------------------------------
def loop_ratios(entries):
    """Throughput of each of AGAINST_LOOP over LOOP_BASELINE's (= the loop's time over its time)
    at every size, mode and batch both measured; and the largest ratio of each implementation
    and mode, with where it was reached."""
    index = {(e["impl"], e["mode"], e["n"], e["batch"]): e for e in _measured(entries, "gpu")}
    rows = [{"n": n, "mode": mode, "batch": batch, "impl": impl,
             "ratio": _median(index[(LOOP_BASELINE, mode, n, batch)]) / _median(entry)}
            for (impl, mode, n, batch), entry in index.items()
            if impl in AGAINST_LOOP and (LOOP_BASELINE, mode, n, batch) in index]
    rows.sort(key=lambda row: (row["n"], row["mode"], row["batch"], row["impl"]))
    largest = {}
    for row in rows:
        key = (row["impl"], row["mode"])
        if key not in largest or row["ratio"] > largest[key]["ratio"]:
            largest[key] = row
    order = sorted(largest, key=lambda key: (AGAINST_LOOP.index(key[0]), key[1]))
    return {"baseline": LOOP_BASELINE, "rows": rows, "largest": [largest[key] for key in order]}


def derive(entries):
    set_fraction_of_best_rate(entries)
    return {
        "crossovers": crossovers(entries),
        "throughput": throughput(entries),
        "device_memory": device_memory(entries),
        "loop_ratios": loop_ratios(entries),
    }
