"""The headline: the figures a reader of a run would publish, each with its uncertainty, how it was
timed and what it is measured against (the datasheet, the link's theoretical rate).

Every figure is read from the studies' derived findings and the run's findings (derive_run); its
interval is its entry's: the median's interval over the trials (stats.median_interval), carried
through the same arithmetic as the figure. document["findings"]["headline"] holds them; the health
check (health.py), the rank page (rank.py) and the report's first screen read them from there."""
from gpubench_driver.lib import stats
from gpubench_driver.lib.figures import (ENERGY, LATENCY, PRECISION_NAMES, PRECISIONS, THROUGHPUT, between_runs,
                                         datasheet_of, entry_of, figure, inverse, load_datasheets, where_text)

MODE_NAMES = {"resident": "data resident", "transfer_pinned": "with pinned copies",
              "transfer_pageable": "with pageable copies"}
LINK_MODES = (("pinned", "pinned"), ("pageable", "pageable"))  # (transfer mode, its name on the page)
ENERGY_SERIES = (("matmul", "cublas", "fp32"), ("precision", "cublas", "bf16"))


# --- the figures --------------------------------------------------------------------------------
def peak_rates(document, sheet):
    """Per format, the measured peak (the highest sustained rate of any GPU entry) against the datasheet."""
    peaks = {row["precision"]: row for row in document["findings"]["roofline"]["peaks"]}
    found = []
    for precision in PRECISIONS:
        row = peaks.get(precision)
        entry = entry_of(document, row) if row else None
        if entry is None:
            continue
        flop = entry["flop_per_s"] * entry["time_s"]["median"]
        # An entry that says it ran on the CUDA cores alone is held to the datasheet's rate without tensor cores.
        plain = entry.get("tensor_cores") == 0
        rates = (sheet or {}).get("peak_flop_per_s_without_tensor_cores" if plain else "peak_flop_per_s", {})
        peak = rates.get(precision)
        what = "datasheet, without tensor cores" if plain else "datasheet (dense)"
        unit = "OP/s" if precision == "int8" else "FLOP/s"
        found.append(figure(f"rate/{precision}", f"{PRECISION_NAMES[precision]} peak rate", row["flop_per_s"],
                            inverse(flop, stats.median_interval(entry["time_s"])), unit, "higher", THROUGHPUT,
                            where_text(row), {"value": peak, "what": what} if peak else None,
                            between_runs=between_runs(entry, row["flop_per_s"])))
    return found


THEORETICAL_MEMORY = "theoretical (NVML: max memory clock x bus width x 2 / 8)"


def memory_bandwidth(document, sheet):
    """Device memory bandwidth, the roofline's memory roof: the stream study's fastest kernel past the
    L2 cache, against the theoretical peak NVML's figures give (else the datasheet's); without the
    stream study, twice the fastest device-to-device copy at the largest size, against the datasheet."""
    found = document["findings"]["roofline"].get("bandwidth")
    entry = entry_of(document, found) if found else None
    if entry is None:
        return []
    bytes_moved = found.get("bytes_per_call") or 2 * entry["bytes_transferred"]
    interval = inverse(bytes_moved, stats.median_interval(entry["time_s"]))
    sheet_rate = (sheet or {}).get("memory_bytes_per_s")
    reference = {"value": sheet_rate, "what": "datasheet"} if sheet_rate else None
    if found["study"] == "stream":
        theoretical = found.get("theoretical_bytes_per_s")
        label = (f"Device memory bandwidth (stream {found.get('operation')}, {found.get('kernel')} kernel, "
                 f"{PRECISION_NAMES.get(found['precision'], found['precision'])})")
        where = f"stream: {found['impl']} {found['mode']} {found['precision']} n={found['n']}"
        if theoretical:
            reference = {"value": theoretical, "what": THEORETICAL_MEMORY}
        timed_as = LATENCY if entry.get("protocol") == "latency" else THROUGHPUT  # Thrust's dot waits for its sum
        return [figure("memory_bandwidth", label, found["bytes_per_s"], interval, "B/s", "higher", timed_as, where,
                       reference, between_runs=between_runs(entry, found["bytes_per_s"]))]
    return [figure("memory_bandwidth", "Device memory bandwidth (2 x a device-to-device copy)", found["bytes_per_s"],
                   interval, "B/s", "higher", THROUGHPUT, where_text(found), reference,
                   between_runs=between_runs(entry, found["bytes_per_s"]))]


def link_bandwidths(document):
    """Host-device copies by the copy engines at the largest size, pinned and pageable, per direction."""
    derived = (document["studies"].get("transfer") or {}).get("derived") or {}
    link = derived.get("link")
    found = []
    for direction, name in (("h2d", "host to device"), ("d2h", "device to host")):
        for mode, mode_name in LINK_MODES:
            curve = next((row for row in derived.get("curves") or [] if (row["impl"], row["mode"], row["direction"])
                          == ("copy_engine", mode, direction)), None)
            if not curve or not curve["points"]:
                continue
            point = max(curve["points"], key=lambda point: point["n"])
            interval = inverse(point["n"], stats.Interval.of_record(point["interval_s"]))
            reference = ({"value": link["bytes_per_s"],
                          "what": f"PCIe Gen{link['generation']} x{link['width']}, theoretical per direction"}
                         if link else None)
            entry = entry_of(document, {"study": "transfer", "impl": "copy_engine", "mode": mode, "precision": direction,
                                      "n": point["n"]})  # the transfer study's direction is its precision slot
            found.append(figure(f"link/{direction}/{mode}", f"Copy {name}, {mode_name} host memory",
                                point["bytes_per_s"], interval, "B/s", "higher", LATENCY,
                                f"transfer: copy_engine {mode} {direction}, {point['n']} bytes per copy", reference,
                                between_runs=between_runs(entry, point["bytes_per_s"]) if entry else None))
    return found


def crossovers(document):
    """From which matrix size the best GPU path beats the best CPU one, per GPU mode (matmul, FP32)."""
    derived = (document["studies"].get("matmul") or {}).get("derived") or {}
    found = []
    for row in derived.get("crossovers") or []:
        if row.get("measure", "time") != "time" or row.get("upper") is None:
            continue
        trials = [value for value in row.get("estimate_n_trials") or [] if value is not None]
        value = row.get("estimate_n") or row["upper"]
        # Over the trials where they cross; else the bracket of measured sizes, stretched to an extrapolated estimate.
        interval = ((min(trials), max(trials)) if len(trials) > 1 else
                    (min(row["lower"], value), max(row["upper"], value)) if row.get("lower") else (None, None))
        found.append(figure(f"crossover/matmul/{row['mode']}",
                            f"GPU beats CPU from n (FP32 GEMM, {MODE_NAMES.get(row['mode'], row['mode'])})",
                            value, interval, "n", None, THROUGHPUT if row["mode"] == "resident" else LATENCY,
                            f"matmul: {row['gpu_impl']} against the best CPU; {row['method']}", device="both"))
    return found


def _epoch_point(study, device, mode=None):
    """(epoch_s, interval, row, point) of the fastest epoch on a device (and mode), or None."""
    derived = study.get("derived") or {}
    samples = (derived.get("epoch_times") or {}).get("samples")
    best = None
    for row in derived.get("throughput") or []:
        if row["device"] != device or (mode and row["mode"] != mode):
            continue
        for point in row["points"]:
            epoch_s = samples * point["median_s"] / point["batch"]
            if best is None or epoch_s < best[0]:
                scale = samples / point["batch"]
                interval = stats.Interval.of_record(point["interval_s"])
                best = (epoch_s, (interval.low * scale, interval.high * scale) if interval.known else (None, None),
                        row, point)
    return best


def epoch_times(document):
    """The MLP's fastest epoch on the GPU (data resident) and on the CPU, at the batch where each is fastest."""
    study = document["studies"].get("mlp_training") or {}
    samples = ((study.get("derived") or {}).get("epoch_times") or {}).get("samples")
    if not samples:
        return []
    found = []
    for device, mode, name in (("gpu", "resident", "GPU"), ("cpu", None, "CPU")):
        best = _epoch_point(study, device, mode)
        if best:
            epoch_s, interval, row, point = best
            entry = entry_of(document, {"study": "mlp_training", **row, "batch": point["batch"]})
            found.append(figure(f"mlp_epoch/{device}", f"MLP training epoch of {samples:,} samples, {name}", epoch_s,
                                interval, "s", "lower", THROUGHPUT if device == "gpu" else "cpu: host clock",
                                f"mlp_training: {row['impl']} {row['mode']} {row['precision']}, batch {point['batch']}",
                                device=device, between_runs=between_runs(entry, epoch_s, "time") if entry else None))
    return found


def energy(document):
    """Energy of one GEMM at the largest size measured with energy, per series of ENERGY_SERIES."""
    rows = document["findings"].get("energy_per_gemm", {}).get("rows") or []
    found = []
    for study, impl, precision in ENERGY_SERIES:
        mine = [row for row in rows if (row["study"], row["impl"], row["mode"], row["precision"])
                == (study, impl, "resident", precision)]
        if not mine:
            continue
        row = max(mine, key=lambda row: row["n"])
        spread = row.get("energy_uncertainty_j")
        interval = (row["energy_j_per_op"] - spread, row["energy_j_per_op"] + spread) if spread is not None \
            else (None, None)
        entry = entry_of(document, row)
        # Energy is not a scale of the time: no value per trial; its entry's noise floor between runs.
        found.append(figure(f"energy/{precision}", f"Energy of one {PRECISION_NAMES[precision]} GEMM, n={row['n']}",
                            row["energy_j_per_op"], interval, "J", "lower", ENERGY, where_text(row),
                            between_runs=between_runs(entry, row["energy_j_per_op"], None) if entry else None))
    return found


def derive_headline(document, datasheets=None):
    """findings["headline"]: the datasheet the run is set against and the figures, in the page's order."""
    if not (document.get("findings") or {}).get("roofline"):
        return {"datasheet": None, "figures": []}
    sheet = datasheet_of(document, load_datasheets() if datasheets is None else datasheets)
    figures = (peak_rates(document, sheet) + memory_bandwidth(document, sheet) + link_bandwidths(document)
               + crossovers(document) + epoch_times(document) + energy(document))
    return {"datasheet": {"model": sheet["model"], "source": sheet["source"]} if sheet else None,
            "figures": figures}
