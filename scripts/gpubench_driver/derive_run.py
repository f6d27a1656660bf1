"""Findings across the studies of one run, computed from every study's entries at report time:

- each GPU entry's FLOP rate as a fraction of the measured peak of its precision (the highest rate of
  any GPU entry of that precision in the run whose FLOP count is what ran: a study of NOMINAL_FLOP
  sets a peak only for a precision no other study measured);
- the roofline: achieved FLOP/s against arithmetic intensity (FLOP per byte of device memory traffic,
  from a compulsory-traffic model per study) under one roof per precision at its measured peak and
  one slanted roof at the device memory bandwidth the transfer study's device-to-device copies
  measured;
- the energy per timed call (one GEMM, one batch, one copy) that NVML's energy counter gave;
- the entries measured while a power cap or a thermal slowdown held the clocks down.

The result is document["findings"]; report.derive_findings rewrites it on every report."""
import re

from gpubench_driver.derive import ok_entries
from gpubench_driver.stats import finite as number
from gpubench_driver.results import CLOCK_LIMITED, ENTRY_TELEMETRY

# Studies whose 'precision' axis is no number format: their entries have no peak and no roofline point.
NOT_A_FORMAT = {"transfer": "its precision axis is the copy's direction",
                "overlap": "its precision axis is the workload, and its pipelines time host-device copies"}
RESIDENT = "resident"  # the only mode whose timed region holds no host-device copy
# Studies whose FLOP count is that of a reference algorithm, not of what ran: their rate can exceed
# what the multiply units did, so it exceeds a peak rather than setting it.
NOMINAL_FLOP = {"conv2d": "a convolution's FLOP are those of the direct algorithm; cuDNN may choose Winograd or "
                          "FFT algorithms, which do fewer operations, so its rate can exceed what the multiply units "
                          "did, and its fraction of the peak 100%"}

# Bytes of one element of a type as the studies' --describe names it ("FP32 (TF32 in the multiply)":
# FP32, "FP8 E4M3, per-tensor scale": FP8), from its first word.
TYPE_BYTES = {"FP64": 8, "FP32": 4, "TF32": 4, "FP16": 2, "BF16": 2, "FP8": 1, "INT8": 1, "INT32": 4}
_TYPE_WORD = re.compile(r"\s*([A-Za-z]+[0-9]+)")
# (input, output) element bytes of a precision the study does not describe (matmul and batched GEMM
# are FP32 studies without a 'precisions' record).
DEFAULT_ELEMENT_BYTES = {"fp64": (8, 8), "fp32": (4, 4), "tf32": (4, 4), "fp16": (2, 2), "bf16": (2, 2),
                         "int8": (1, 4)}


def positive(value):
    value = number(value)
    return value if value is not None and value > 0 else None


def _where(study, entry):
    return {"study": study, "impl": entry["impl"], "mode": entry["mode"], "precision": entry["precision"],
            "n": entry["n"], "batch": number(entry.get("batch"))}


def _rated_gpu_entries(studies):
    """(study, entry) of every ok GPU entry with a FLOP rate in a study whose precision is a format."""
    for name, study in studies.items():
        if name in NOT_A_FORMAT:
            continue
        for entry in ok_entries(study["entries"]):
            if entry["device"] == "gpu" and positive(entry.get("flop_per_s")):
                yield name, entry


# --- the measured peak ------------------------------------------------------------------
def peak_rates(studies):
    """Per precision, the GPU entry with the highest FLOP/s in the run, its rate and where; taken from
    the studies that count the FLOP that ran, from a NOMINAL_FLOP study only when no other has it."""
    peaks = {}
    for name, entry in _rated_gpu_entries(studies):
        candidate = {**_where(name, entry), "flop_per_s": entry["flop_per_s"]}
        current = peaks.get(entry["precision"])
        if current is None or _peak_rank(candidate) > _peak_rank(current):
            peaks[entry["precision"]] = candidate
    return sorted(peaks.values(), key=lambda row: -row["flop_per_s"])


def _peak_rank(row):
    return row["study"] not in NOMINAL_FLOP, row["flop_per_s"]


def set_fraction_of_peak(studies, peaks):
    """Every entry's `fraction_of_peak`: its FLOP/s over the peak of its precision (GPU entries with a
    rate), else None."""
    peak = {row["precision"]: row["flop_per_s"] for row in peaks}
    for study in studies.values():
        for entry in study["entries"]:
            entry["fraction_of_peak"] = None
    for _, entry in _rated_gpu_entries(studies):
        entry["fraction_of_peak"] = entry["flop_per_s"] / peak[entry["precision"]]


def fraction_of_peak_rows(studies, peaks):
    """Per study and precision, its best GPU entry and that entry's fraction of the run's peak."""
    best = {}
    for name, entry in _rated_gpu_entries(studies):
        key = (name, entry["precision"])
        if key not in best or entry["flop_per_s"] > best[key][1]["flop_per_s"]:
            best[key] = (name, entry)
    peak = {row["precision"]: row["flop_per_s"] for row in peaks}
    order = {precision: index for index, precision in enumerate(peak)}
    studies_order = {name: index for index, name in enumerate(studies)}
    return [{**_where(name, entry), "flop_per_s": entry["flop_per_s"], "peak_flop_per_s": peak[entry["precision"]],
             "fraction_of_peak": entry["flop_per_s"] / peak[entry["precision"]]}
            for name, entry in sorted(best.values(), key=lambda item: (studies_order[item[0]],
                                                                       order[item[1]["precision"]]))]


# --- device memory traffic per call (compulsory traffic: each operand read once, the result written once)
def type_bytes(name):
    match = _TYPE_WORD.match(name) if isinstance(name, str) else None
    return TYPE_BYTES.get(match.group(1).upper()) if match else None


def element_bytes(study, precision):
    """((input bytes, output bytes), None) of one element of the precision, from the study's description
    of it, else the default table; (None, why) when neither tells."""
    described = next((p for p in study.get("precisions") or [] if isinstance(p, dict) and p.get("id") == precision),
                     None)
    if described is None:
        if precision in DEFAULT_ELEMENT_BYTES:
            return DEFAULT_ELEMENT_BYTES[precision], None
        return None, f"the study does not describe the element types of {precision}"
    sizes = type_bytes(described.get("inputs")), type_bytes(described.get("output"))
    if None in sizes:
        return None, (f"unknown element size of {precision}'s types ({described.get('inputs')} in, "
                      f"{described.get('output')} out)")
    return sizes, None


def gemm_bytes(study, entry):
    """batch x (2 n^2 input + n^2 output elements): A and B read once, C written once (batch 1 without one)."""
    sizes, why = element_bytes(study, entry["precision"])
    if sizes is None:
        return None, why
    n, batch = entry["n"], positive(entry.get("batch")) or 1
    return batch * (2 * n * n * sizes[0] + n * n * sizes[1]), None


CONV_SHAPE = ("in_channels", "out_channels", "kernel", "height", "width", "out_height", "out_width")


def conv_bytes(study, entry):
    """batch x (input + output tensor) + the filter once: the layer's shapes from the study's 'layers'."""
    layer = next((layer for layer in study.get("layers") or [] if isinstance(layer, dict)
                  and number(layer.get("n")) == entry["n"]), None)
    if layer is None:
        return None, f"the study's layers do not describe n = {entry['n']}"
    shape = {key: positive(layer.get(key)) for key in CONV_SHAPE}
    missing = [key for key, value in shape.items() if value is None]
    if missing:
        return None, f"the layer n = {entry['n']} gives no {', '.join(missing)}"
    sizes, why = element_bytes(study, entry["precision"])
    if sizes is None:
        return None, why
    image = shape["in_channels"] * shape["height"] * shape["width"]
    output = shape["out_channels"] * shape["out_height"] * shape["out_width"]
    weights = shape["out_channels"] * shape["in_channels"] * shape["kernel"] ** 2
    batch = positive(entry.get("batch")) or 1
    return batch * (image * sizes[0] + output * sizes[1]) + weights * sizes[0], None


# study -> (bytes of device memory one timed call moves, (bytes, None) or (None, why); the rule in words)
TRAFFIC_MODELS = {
    "matmul": (gemm_bytes, "2 n^2 input + n^2 output elements per call (A and B read once, C written once)"),
    "precision": (gemm_bytes, "2 n^2 input + n^2 output elements per call, element sizes from the study's "
                              "description of each precision (e.g. int8: 1-byte inputs, 4-byte int32 output)"),
    "batched_gemm": (gemm_bytes, "batch x (2 n^2 input + n^2 output elements) per call"),
    "conv2d": (conv_bytes, "batch x (input + output tensor) + the filter once, shapes from the study's layers"),
}
NOT_MODELLED = {"mlp_training": "no traffic model for a training step (weights, activations and gradients each "
                                "move several times)"}


# --- the device memory bandwidth ----------------------------------------------------------
D2D = "d2d"  # the transfer study's direction of a device-to-device copy (impl copy_engine, mode device)
BANDWIDTH_RULE = ("device memory traffic = 2 x the bytes copied per second by the fastest device-to-device copy at "
                  "the largest size the transfer study measured: a copy of B bytes reads B and writes B bytes")


def device_bandwidth(studies):
    """(bandwidth record, None), or (None, why there is no memory roof)."""
    study = studies.get("transfer")
    if study is None:
        return None, "the run has no transfer study, whose device-to-device copies measure the memory bandwidth"
    copies = [e for e in ok_entries(study["entries"]) if e["precision"] == D2D and e["device"] == "gpu"
              and positive(e.get("bytes_transferred")) and positive(e["time_s"]["median"])]
    if not copies:
        return None, "the transfer study measured no device-to-device (d2d) copy"
    largest = max(entry["n"] for entry in copies)
    best = max((entry for entry in copies if entry["n"] == largest),
               key=lambda entry: entry["bytes_transferred"] / entry["time_s"]["median"])
    copy_rate = best["bytes_transferred"] / best["time_s"]["median"]
    return {"study": "transfer", "impl": best["impl"], "mode": best["mode"], "precision": D2D, "n": best["n"],
            "median_s": best["time_s"]["median"], "copy_bytes_per_s": copy_rate, "bytes_per_s": 2 * copy_rate,
            "rule": BANDWIDTH_RULE}, None


# --- the roofline ---------------------------------------------------------------------
def _placement(name, study, entry):
    """(bytes, None) of a GPU entry with a rate, or (None, why it has no place on the roofline)."""
    if name in NOT_A_FORMAT:
        return None, NOT_A_FORMAT[name]
    if entry["mode"] != RESIDENT:
        return None, f"{entry['mode']} times host-device copies, not device memory"
    if name not in TRAFFIC_MODELS:
        return None, NOT_MODELLED.get(name, "no device-memory traffic model for this study")
    return TRAFFIC_MODELS[name][0](study, entry)


def roofline(studies, peaks):
    points, skipped = [], {}
    for name, study in studies.items():
        for entry in ok_entries(study["entries"]):
            rate = positive(entry.get("flop_per_s"))
            if entry["device"] != "gpu" or rate is None:
                continue
            traffic, why = _placement(name, study, entry)
            flop = positive(entry.get("flop")) or rate * entry["time_s"]["median"]
            if positive(traffic) is None or positive(flop) is None:
                key = (name, entry["impl"], entry["mode"], entry["precision"], why or "no traffic or FLOP count")
                skipped[key] = skipped.get(key, 0) + 1
                continue
            points.append({**_where(name, entry), "flop_per_s": rate, "flop": flop, "bytes": traffic,
                           "intensity": flop / traffic})
    bandwidth, note = device_bandwidth(studies)
    return {"peaks": peaks, "bandwidth": bandwidth, "memory_roof_note": note,
            "traffic_models": {name: text for name, (_, text) in TRAFFIC_MODELS.items() if name in studies},
            "points": points,
            "not_placed": [{"study": study, "impl": impl, "mode": mode, "precision": precision, "entries": count,
                            "reason": why} for (study, impl, mode, precision, why), count in skipped.items()]}


def attainable(roof, precision, intensity):
    """The roofline's rate at an intensity for a precision: min(its peak, bandwidth x intensity)."""
    peak = next((row["flop_per_s"] for row in roof["peaks"] if row["precision"] == precision), None)
    if peak is None:
        return None
    bandwidth = (roof.get("bandwidth") or {}).get("bytes_per_s")
    return peak if bandwidth is None else min(peak, bandwidth * intensity)


# --- telemetry per entry --------------------------------------------------------------
def has_telemetry(entry):
    return any(number(entry.get(key)) is not None for key in ENTRY_TELEMETRY) or isinstance(entry.get(CLOCK_LIMITED),
                                                                                            bool)


def energy_rows(studies):
    """Every ok GPU entry with an energy per timed call: that energy, FLOP per joule where the entry
    counts FLOP, and the items of its batch."""
    rows = []
    for name, study in studies.items():
        for entry in ok_entries(study["entries"]):
            energy = positive(entry.get("energy_j_per_op"))
            if entry["device"] != "gpu" or energy is None:
                continue
            flop = positive(entry.get("flop")) if name not in NOT_A_FORMAT else None
            median_s = positive((entry.get("time_s") or {}).get("median"))
            rows.append({**_where(name, entry), "energy_j_per_op": energy, "flop": flop,
                         "flop_per_joule": flop / energy if flop else None, "items": positive(entry.get("batch")),
                         # What the call drew: NVML's power reading averages over about a second and lags a loop.
                         "call_power_w": energy / median_s if median_s else None,
                         "power_w": number(entry.get("power_w")), "sm_clock_mhz": number(entry.get("sm_clock_mhz"))})
    return rows


def clock_limited_rows(studies):
    """The entries measured while a power cap or a thermal slowdown held the clocks down."""
    return [{**_where(name, entry), "name": entry["name"],
             **{key: number(entry.get(key)) for key in ("power_limited_fraction", "thermal_limited_fraction",
                                                        "sm_clock_mhz", "telemetry_samples")}}
            for name, study in studies.items() for entry in ok_entries(study["entries"])
            if entry.get(CLOCK_LIMITED) is True]


def telemetry_found(studies):
    """How many entries have per-entry telemetry, and each study's note on its telemetry (why it is missing)."""
    return {"entries": sum(has_telemetry(entry) for study in studies.values() for entry in study["entries"]
                           if isinstance(entry, dict)),
            "notes": [{"study": name, "note": study["telemetry"]["note"]} for name, study in studies.items()
                      if isinstance(study.get("telemetry"), dict) and isinstance(study["telemetry"].get("note"), str)]}


def derive(studies):
    """document["findings"]; sets each entry's fraction_of_peak."""
    peaks = peak_rates(studies)
    set_fraction_of_peak(studies, peaks)
    return {"fraction_of_peak": fraction_of_peak_rows(studies, peaks), "roofline": roofline(studies, peaks),
            "energy": energy_rows(studies), "clock_limited": clock_limited_rows(studies),
            "telemetry": telemetry_found(studies)}
