"""The headline: the figures a reader of a run would publish, each with its uncertainty, how it was
timed and what it is measured against (the datasheet, the link's theoretical rate).

Every figure is read from the studies' derived findings and the run's findings (derive_run); its
interval is its entry's: the median's interval over the trials (stats.median_interval), carried
through the same arithmetic as the figure. document["findings"]["headline"] holds them; the health
check (health.py), the rank page (rank.py) and the report's first screen read them from there."""
import json
import os

from gpubench_driver.lib import findings
from gpubench_driver.lib import outputs, stats, verdicts

DATASHEETS = os.path.join(outputs.SCRIPTS_DIR, "gpu_datasheets.json")
# The formats a reader compares (the precision study's names), in the order the page lists them.
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "int8")
PRECISION_NAMES = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16",
                   "fp8_e4m3": "FP8 (E4M3)", "int8": "INT8"}
THROUGHPUT = "throughput: device time, back-to-back calls, warm L2, sustained"
LATENCY = "latency: one call on the host clock"
ENERGY = "energy: NVML board energy over a sustained window of back-to-back calls"
MODE_NAMES = {"resident": "data resident", "transfer_pinned": "with pinned copies",
              "transfer_pageable": "with pageable copies"}
LINK_MODES = (("pinned", "pinned"), ("pageable", "pageable"))  # (transfer mode, its name on the page)
ENERGY_SERIES = (("matmul", "cublas", "fp32"), ("precision", "cublas", "bf16"))


class DatasheetError(Exception):
    """The datasheet file cannot be read: the message says why."""


def load_datasheets(path=DATASHEETS):
    """{GPU name as nvidia-smi reports it: its datasheet record}."""
    try:
        with open(path, encoding="utf-8") as stream:
            records = json.load(stream)["models"]
        return {name: record for record in records for name in record["names"]}
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise DatasheetError(f"cannot read the GPU datasheets {path}: {error}") from None


def first_gpu(document):
    """nvidia-smi's record of the run's first GPU ({} without one): the GPU the studies ran on."""
    gpus = (document.get("machine") or {}).get("gpus") or []
    return gpus[0] if gpus and isinstance(gpus[0], dict) else {}


def datasheet_of(document, datasheets):
    """The datasheet record of the run's first GPU, or None (no GPU, or a model the file lacks)."""
    return datasheets.get(first_gpu(document).get("name"))


# --- one figure -------------------------------------------------------------------------------
def figure(key, label, value, interval=(None, None), unit="", better=None, timed_as=None, where=None,
           reference=None, device="gpu", between_runs=None):
    """One headline figure; interval: (low, high) of the value, None where the run has no spread to
    read; reference: {"value", "what"} it is set against (its fraction is value / reference);
    between_runs: what tells it from another run's (between_runs())."""
    low, high = interval
    return {"key": key, "label": label, "value": value, "low": low, "high": high, "unit": unit, "better": better,
            "timed_as": timed_as, "where": where, "device": device, "reference": reference,
            "fraction_of_reference": value / reference["value"] if reference and reference.get("value") else None,
            "between_runs": between_runs}


def between_runs(entry, value, scales="rate"):
    """What rank's noise judgement reads of a figure computed from one entry's median time (verdicts.Measured,
    compare's judgement of that entry): the figure at each of the entry's trials (a rate scales as 1/time,
    scales="time" as the time, None: not from the time alone, no trial values), the protocol that timed the
    entry (its noise floor between runs) and the smallest change worth a verdict."""
    time_s = entry["time_s"]
    median = time_s["median"]
    trials = []
    if scales and time_s.get("over") == "trials" and median:
        trials = [value * (median / time if scales == "rate" else time / median)
                  for time in time_s["samples"] if stats.finite(time) and time > 0]
    return {"trial_values": trials, "protocol": entry.get("protocol"), "min_effect": verdicts.min_effect(entry)}


def spread(row):
    """The interval's largest distance from the value, as a share of it; None without an interval."""
    if row["low"] is None or row["high"] is None or not row["value"]:
        return None
    return max(row["value"] - row["low"], row["high"] - row["value"]) / abs(row["value"])


def _inverse(numerator, time_interval):
    """(low, high) of numerator / time from the time's interval (the rate is high when the time is low)."""
    if not time_interval.known or not time_interval.low or not time_interval.high:
        return None, None
    return numerator / time_interval.high, numerator / time_interval.low


def _entry(document, row):
    """The entry of a findings row ({study, impl, mode, precision, n, batch})."""
    study = document["studies"].get(row["study"]) or {}
    for entry in findings.ok_entries(study.get("entries") or []):
        if all(entry.get(axis) == row.get(axis) for axis in ("impl", "mode", "precision", "n")) \
                and entry.get("batch") == row.get("batch"):
            return entry
    return None


def _where(row):
    text = f"{row['study']}: {row['impl']} {row['mode']} n={row['n']}"
    return text + (f", batch {row['batch']}" if row.get("batch") is not None else "")


# --- the figures --------------------------------------------------------------------------------
def peak_rates(document, sheet):
    """Per format, the measured peak (the highest sustained rate of any GPU entry) against the datasheet."""
    peaks = {row["precision"]: row for row in document["findings"]["roofline"]["peaks"]}
    found = []
    for precision in PRECISIONS:
        row = peaks.get(precision)
        entry = _entry(document, row) if row else None
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
                            _inverse(flop, stats.median_interval(entry["time_s"])), unit, "higher", THROUGHPUT,
                            _where(row), {"value": peak, "what": what} if peak else None,
                            between_runs=between_runs(entry, row["flop_per_s"])))
    return found


THEORETICAL_MEMORY = "theoretical (NVML: max memory clock x bus width x 2 / 8)"


def memory_bandwidth(document, sheet):
    """Device memory bandwidth, the roofline's memory roof: the stream study's fastest kernel past the
    L2 cache, against the theoretical peak NVML's figures give (else the datasheet's); without the
    stream study, twice the fastest device-to-device copy at the largest size, against the datasheet."""
    found = document["findings"]["roofline"].get("bandwidth")
    entry = _entry(document, found) if found else None
    if entry is None:
        return []
    bytes_moved = found.get("bytes_per_call") or 2 * entry["bytes_transferred"]
    interval = _inverse(bytes_moved, stats.median_interval(entry["time_s"]))
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
                   interval, "B/s", "higher", THROUGHPUT, _where(found), reference,
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
            interval = _inverse(point["n"], stats.Interval.of_record(point["interval_s"]))
            reference = ({"value": link["bytes_per_s"],
                          "what": f"PCIe Gen{link['generation']} x{link['width']}, theoretical per direction"}
                         if link else None)
            entry = _entry(document, {"study": "transfer", "impl": "copy_engine", "mode": mode, "precision": direction,
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
            entry = _entry(document, {"study": "mlp_training", **row, "batch": point["batch"]})
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
        entry = _entry(document, row)
        # Energy is not a scale of the time: no value per trial; its entry's noise floor between runs.
        found.append(figure(f"energy/{precision}", f"Energy of one {PRECISION_NAMES[precision]} GEMM, n={row['n']}",
                            row["energy_j_per_op"], interval, "J", "lower", ENERGY, _where(row),
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
