"""What every headline figure is made of (the figures themselves: stages/headline.py and the plug-ins): the
datasheet a run is set against, one figure with its interval and its noise between runs."""
import json
import os

from gpubench_driver.lib import outputs, stats, verdicts
from gpubench_driver.lib.findings import ok_entries

DATASHEETS = os.path.join(outputs.SCRIPTS_DIR, "gpu_datasheets.json")
# The formats a reader compares (the precision study's names), in the order the page lists them.
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "int8")
PRECISION_NAMES = {"fp64": "FP64", "fp32": "FP32", "tf32": "TF32", "fp16": "FP16", "bf16": "BF16",
                   "fp8_e4m3": "FP8 (E4M3)", "int8": "INT8"}
THROUGHPUT = "throughput: device time, back-to-back calls, warm L2, sustained"
LATENCY = "latency: one call on the host clock"
ENERGY = "energy: NVML board energy over a sustained window of back-to-back calls"


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


# --- one figure -----------------------------------------------------------------------------------
def figure(key, label, value, interval=(None, None), unit="", better=None, timed_as=None, where=None,
           reference=None, device="gpu", between_runs=None):
    """One headline figure: interval (low, high); reference {value, what}; between_runs: between_runs()."""
    low, high = interval
    return {"key": key, "label": label, "value": value, "low": low, "high": high, "unit": unit, "better": better,
            "timed_as": timed_as, "where": where, "device": device, "reference": reference,
            "fraction_of_reference": value / reference["value"] if reference and reference.get("value") else None,
            "between_runs": between_runs}


def between_runs(entry, value, scales="rate"):
    """What rank's noise judgement reads of a figure: its value per trial, noise model and smallest change."""
    time_s = entry["time_s"]
    median = time_s["median"]
    trials = []
    if scales and time_s.get("over") == "trials" and median:
        trials = [value * (median / time if scales == "rate" else time / median)
                  for time in time_s["samples"] if stats.finite(time) and time > 0]
    return {"trial_values": trials, "protocol": entry.get("protocol"), "median_s": median,
            "min_effect": verdicts.min_effect(entry)}


def spread(row):
    """The interval's largest distance from the value, as a share of it; None without an interval."""
    if row["low"] is None or row["high"] is None or not row["value"]:
        return None
    return max(row["value"] - row["low"], row["high"] - row["value"]) / abs(row["value"])


def inverse(numerator, time_interval):
    """(low, high) of numerator / time from the time's interval (the rate is high when the time is low)."""
    if not time_interval.known or not time_interval.low or not time_interval.high:
        return None, None
    return numerator / time_interval.high, numerator / time_interval.low


def entry_of(document, row):
    """The entry of a findings row ({study, impl, mode, precision, n, batch})."""
    study = document["studies"].get(row["study"]) or {}
    for entry in ok_entries(study.get("entries") or []):
        if all(entry.get(axis) == row.get(axis) for axis in ("impl", "mode", "precision", "n")) \
                and entry.get("batch") == row.get("batch"):
            return entry
    return None


def where_text(row):
    text = f"{row['study']}: {row['impl']} {row['mode']} n={row['n']}"
    return text + (f", batch {row['batch']}" if row.get("batch") is not None else "")


def energy_figure(document, study, impl, precision):
    """[the headline figure of one GEMM's energy of a study's (impl, resident, precision) at its largest n] or []."""
    rows = [row for row in (document["findings"].get("energy_per_gemm", {}).get("rows") or [])
            if (row["study"], row["impl"], row["mode"], row["precision"]) == (study, impl, "resident", precision)]
    if not rows:
        return []
    row = max(rows, key=lambda row: row["n"])
    spread = row.get("energy_uncertainty_j")
    interval = (row["energy_j_per_op"] - spread, row["energy_j_per_op"] + spread) if spread is not None \
        else (None, None)
    entry = entry_of(document, row)
    # Energy is not a scale of the time: no value per trial; its entry's kind gives its noise between runs.
    return [figure(f"energy/{precision}", f"Energy of one {PRECISION_NAMES[precision]} GEMM, n={row['n']}",
                   row["energy_j_per_op"], interval, "J", "lower", ENERGY, where_text(row),
                   between_runs=between_runs(entry, row["energy_j_per_op"], None) if entry else None)]
