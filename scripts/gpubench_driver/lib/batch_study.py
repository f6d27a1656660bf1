"""Findings of the studies with a batch axis (batched GEMM, MLP training step, convolution) at each size n, and
what only some have (BatchStudy): a batched call against a loop of calls, the time per epoch, the chosen algorithm."""
import math
from operator import itemgetter
from dataclasses import dataclass
from typing import Callable, Optional

from gpubench_driver.lib.findings import (BATCH, best_per, crossovers as crossovers_along, curve_rows, group_by,
                                          grouped_failures, interval_record, median_s, ok_entries,
                                          set_fraction_of_best_rate)
from gpubench_driver.lib.gbench import UTILIZATION_COUNTERS, UTILIZATION_SAMPLES
from gpubench_driver.lib.stats import beyond_spread, time_per_item

# A doubling of the batch that gains less than this in items/s (beyond noise): throughput has saturated.
SATURATION_GAIN = 0.05


@dataclass(frozen=True)
class BatchStudy:
    """What sets one batch study apart; every finding and section is derived from this."""
    title: str                  # in section and chart titles
    unit: str                   # what the batch counts (plural): the counter holding it per call, '<unit>_per_s'
    item: str                   # one of them: 'bytes_per_<item>'
    size_name: str              # what n is, in titles
    batch_meaning: str          # what a batch of b is, in the summary
    operands: Optional[str] = None  # what one item's operands are, where the study knows their size
    operand_bytes: Optional[Callable[[int], int]] = None  # the bytes they take at n
    loop_baseline: Optional[str] = None  # the implementation the batched calls are compared with
    against_loop: tuple = ()
    epoch_samples: Optional[int] = None  # the training set whose epoch time is derived (--describe may say)
    chooses_algorithm: bool = False      # entries report the library's chosen algorithm and its workspace


def rate_key(study):
    """'products_per_s': the field holding items per second."""
    return f"{study.unit}_per_s"


def items_per_s(entry, study):
    # The counter is the batch; a binary that did not report it ran the name's batch.
    items = entry[study.unit] if entry.get(study.unit) is not None else entry["batch"]
    return items / median_s(entry)


def _measured(entries, device=None):
    """The ok entries that have a batch (on one device, or both)."""
    return [e for e in ok_entries(entries) if e.get("batch") and device in (None, e.get("device"))]


def _in_batch_order(entries):
    """The GPU entries with a batch, by series and then batch."""
    return sorted(_measured(entries, "gpu"), key=itemgetter("n", "impl", "mode", "precision", "batch"))


def _point(entry):
    return {"n": entry["n"], "batch": entry["batch"], "impl": entry["impl"], "mode": entry["mode"],
            "precision": entry["precision"]}


def size_text(study, layers, n):
    """'n = 64', or with the study's layers 'layer n = 56 (ResNet-50 conv2_x 3x3: 64 -> 64 channels, ...)'."""
    layer = next((layer for layer in layers or [] if isinstance(layer, dict) and layer.get("n") == n), None)
    text = f"{study.size_name} = {n}"
    if layer is None:
        return text
    kernel = layer.get("kernel")
    return (f"{text} ({layer.get('role')}: {layer.get('in_channels')} -> {layer.get('out_channels')} channels, "
            f"{kernel}x{kernel} kernel, {layer.get('height')}x{layer.get('width')})")


# --- crossover over the batch ---------------------------------------------------------
def crossovers(entries):
    """Per size, GPU precision and GPU mode: the crossover along the batch (findings.crossovers)."""
    measured = _measured(entries)
    rows = []
    for n in sorted({e["n"] for e in measured}):
        cpu = [e for e in measured if e["n"] == n and e["device"] == "cpu"]
        gpu = [e for e in measured if e["n"] == n and e["device"] == "gpu"]
        for precision in sorted({e["precision"] for e in gpu}):
            rows += [{"n": n, "precision": precision, **found}
                     for found in crossovers_along(cpu + [e for e in gpu if e["precision"] == precision], BATCH)]
    return rows


# --- throughput and saturation ---------------------------------------------------------
def _step(low, high, key):
    """(no gain, note) of a step of the batch: its gain per doubling within noise or below SATURATION_GAIN."""
    doublings = math.log2(high["batch"] / low["batch"])

    def per_doubling(ratio):
        return ratio ** (1 / doublings) - 1
    gain = per_doubling(high[key] / low[key])
    note = (f"from batch {low['batch']} to {high['batch']} ({high['batch'] / low['batch']:.3g}x, "
            f"{doublings:.3g} doubling{'' if doublings == 1 else 's'}): {gain:+.1%} per doubling")
    before, after = time_per_item(low, key), time_per_item(high, key)
    if not (before.known and after.known):
        basis = (before if not before.known else after).basis
        return gain < SATURATION_GAIN, f"{note} ({basis}: the medians alone)"
    if not beyond_spread(before, after):
        return True, f"{note}, within noise"
    most = per_doubling(before.high / after.low)  # the fastest the larger batch can be over the slowest the smaller
    if most < SATURATION_GAIN:
        return True, f"{note}, below {SATURATION_GAIN:.0%} beyond noise (at most {most:+.1%})"
    return False, note


def saturation(points, study):
    """(batch, note): the smallest batch whose next step gains nothing (_step); (None, why) else."""
    key = rate_key(study)
    steps = [(low, high) for low, high in zip(points, points[1:]) if high["batch"] > low["batch"] and low[key]]
    if not steps:
        return None, "fewer than two batches were measured"
    for low, high in steps:
        saturated, note = _step(low, high, key)
        if saturated:
            return low["batch"], note
    return None, f"every measured step gained beyond noise (last step: {note})"


def _series_rows(entries, point):
    """One row per series of the entries, its points (point(entry)) by batch: by size, CPU first, by axes."""
    ordered = sorted(entries, key=itemgetter("n", "device", "impl", "mode", "precision", "batch"))
    return curve_rows(ordered, ("n", "impl", "device", "mode", "precision"), point, x="batch")


def throughput(entries, study):
    """Per series: items/s and FLOP/s at each measured batch, the best of them, and the saturation batch."""
    key = rate_key(study)
    rows = _series_rows(_measured(entries), lambda entry: {
        "batch": entry["batch"], "median_s": median_s(entry), key: items_per_s(entry, study),
        "flop_per_s": entry.get("flop_per_s"), "interval_s": interval_record(entry)})
    for row in rows:
        batch, note = saturation(row["points"], study)
        best = max(row["points"], key=lambda point: point[key])
        row.update({"saturation_batch": batch, "saturation_note": note, f"best_{key}": best[key],
                    "best_flop_per_s": best["flop_per_s"], "best_batch": best["batch"]})
    return rows


def epoch_times(rows, study, samples):
    """Seconds per epoch of `samples` at each batch of each throughput row (a partial batch at the same rate)."""
    key = rate_key(study)
    return {"samples": samples,
            "rows": [{**{axis: row[axis] for axis in ("n", "impl", "device", "mode", "precision")},
                      "points": [{"batch": point["batch"], "epoch_s": samples / point[key]}
                                 for point in row["points"]]} for row in rows]}


# --- device memory --------------------------------------------------------------------
def device_memory(entries, study):
    """Per GPU entry: the device memory it took per item of its batch, and the operands' size where known."""
    rows = [{**_point(e), "device_bytes": e["device_bytes"], f"bytes_per_{study.item}": e["device_bytes"] / e["batch"]}
            for e in _in_batch_order(entries) if e.get("device_bytes") is not None]
    for row in rows if study.operand_bytes else ():
        row[f"operand_bytes_per_{study.item}"] = study.operand_bytes(row["n"])
    return rows


# --- GPU utilization --------------------------------------------------------------------
def utilization(entries, described):
    """NVML utilization: whether the binary could sample it (why not) and each GPU series' counters."""
    described = described if isinstance(described, dict) else {
        "available": None, "reason": "the study binary does not say whether it samples GPU utilization"}
    sampled = [e for e in _measured(entries, "gpu") if e.get(UTILIZATION_SAMPLES) is not None]
    rows = _series_rows(sampled, lambda entry: {
        "batch": entry["batch"], **{name: entry[name] for name in UTILIZATION_COUNTERS}})
    return {"available": described.get("available"), "reason": described.get("reason"), "rows": rows}


# --- one batched call against a loop of calls -----------------------------------------
def loop_ratios(entries, study):
    """Throughput of study.against_loop over study.loop_baseline's, with the largest ratios."""
    baseline = study.loop_baseline
    index = {(e["impl"], e["mode"], e["precision"], e["n"], e["batch"]): e for e in _measured(entries, "gpu")}
    rows = [{"n": n, "mode": mode, "batch": batch, "impl": impl,
             "ratio": median_s(index[(baseline, mode, precision, n, batch)]) / median_s(entry)}
            for (impl, mode, precision, n, batch), entry in index.items()
            if impl in study.against_loop and (baseline, mode, precision, n, batch) in index]
    rows.sort(key=lambda row: (row["n"], row["mode"], row["batch"], row["impl"]))
    largest = best_per(rows, lambda row: (row["impl"], row["mode"]), lambda row, other: row["ratio"] > other["ratio"])
    order = sorted(largest, key=lambda key: (study.against_loop.index(key[0]), key[1]))
    impls = [impl for impl in study.against_loop if any(row["impl"] == impl for row in rows)]
    table = []
    for n, mode in dict.fromkeys((row["n"], row["mode"]) for row in rows):
        cells = []
        for impl in impls:
            measured = [row for row in rows if (row["n"], row["mode"], row["impl"]) == (n, mode, impl)]
            cells.append({"impl": impl, "largest": max(measured, key=lambda row: row["ratio"], default=None),
                          "at_largest_batch": max(measured, key=lambda row: row["batch"], default=None)})
        table.append({"n": n, "mode": mode, "cells": cells})
    return {"baseline": baseline, "rows": rows, "largest": [largest[key] for key in order], "impls": impls,
            "table": table}


# --- the algorithm the library chose ------------------------------------------------------
def _algorithm_name(entry, names):
    """The name --describe gives the number, else the engine's number and whether it runs on tensor cores."""
    named = names.get(str(int(entry["algorithm"])))
    if named:
        return named
    cores = {1: " (tensor cores)", 0: " (no tensor cores)"}.get(entry.get("tensor_cores"), "")
    return f"engine {entry['algorithm']:.0f}{cores}"


def chosen_algorithms(entries, names):
    """Per GPU entry that reports one: the algorithm or engine and the workspace it took."""
    names = names if isinstance(names, dict) else {}
    return [{**_point(e), "algorithm": e["algorithm"], "algorithm_name": _algorithm_name(e, names),
             "workspace_bytes": e.get("workspace_bytes")} for e in _in_batch_order(entries)
            if e.get("algorithm") is not None]


# --- what the summary's tables group ---------------------------------------------------------
def series_axes(entries):
    """What tells a series apart in the tables: implementation, mode, and precision where there are several."""
    precisions = {entry["precision"] for entry in entries}
    return ["impl", "mode", "precision"] if len(precisions) > 1 else ["impl", "mode"]


def device_memory_series(rows):
    """Per series of device_memory rows (in their order): its rows at the smallest and largest batch."""
    series = group_by(rows, lambda row: (row["n"], row["impl"], row["mode"], row.get("precision")))  # batch order
    return [{"n": n, "impl": impl, "mode": mode, "precision": precision, "smallest": found[0], "largest": found[-1]}
            for (n, impl, mode, precision), found in series.items()]


def algorithm_cells(rows):
    """chosen_algorithms per size, implementation and precision, then batch: each distinct choice once."""
    cells = {}
    for row in rows:
        name = row["algorithm_name"] or f"algorithm {row['algorithm']:.0f}"
        choices = cells.setdefault((row["n"], row["impl"], row["precision"]), {}).setdefault(row["batch"], [])
        choice = {"algorithm_name": name, "workspace_bytes": row["workspace_bytes"]}
        if choice not in choices:
            choices.append(choice)
    return [{"n": n, "impl": impl, "precision": precision,
             "points": [{"batch": batch, "choices": choices} for batch, choices in at.items()]}
            for (n, impl, precision), at in cells.items()]


def derive(study, record):
    """The findings of one batch study (its BatchStudy) from its record in results.json."""
    entries = record["entries"]
    set_fraction_of_best_rate(entries)
    rows = throughput(entries, study)
    derived = {"crossovers": crossovers(entries), "throughput": rows, "device_memory": device_memory(entries, study),
               "utilization": utilization(entries, record.get("utilization"))}
    derived.update(series_axes=series_axes(entries), device_memory_series=device_memory_series(
        derived["device_memory"]), failures=grouped_failures(entries),
        cpu_precisions=sorted({str(e["precision"]) for e in entries if e.get("device") == "cpu"}))
    if study.loop_baseline:
        derived["loop_ratios"] = loop_ratios(entries, study)
    if study.epoch_samples:
        derived["epoch_times"] = epoch_times(rows, study, record.get("epoch_samples") or study.epoch_samples)
    if study.chooses_algorithm:
        derived["chosen_algorithms"] = chosen_algorithms(entries, record.get("algorithms"))
        derived["algorithm_cells"] = algorithm_cells(derived["chosen_algorithms"])
    return derived
