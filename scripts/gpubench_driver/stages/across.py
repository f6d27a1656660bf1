"""Findings across the studies of one run (analyse.derive_findings rewrites them each report): fraction of the
measured peak, the roofline (docs/methodology.md), energy per call (NVML), the clock-limited entries and how
each entry was measured. A study whose precision slot holds no number format has no peak and no roofline
point."""
from gpubench_driver import studies as registry
from gpubench_driver.lib import noise_floor, trials
from gpubench_driver.lib.findings import memory_traffic, ok_entries, positive
from gpubench_driver.lib.gbench import TRAFFIC_COUNTERS
from gpubench_driver.lib.results import CLOCK_LIMITED, ENTRY_TELEMETRY
from gpubench_driver.lib.stats import finite as number

RESIDENT = "resident"  # the only mode whose timed region holds no host-device copy
# Studies whose FLOP count is that of a reference algorithm, not of what ran: their rate can exceed
# what the multiply units did, so it exceeds a peak rather than setting it (the registry's nominal_flop).
NOMINAL_FLOP = {study.name: study.nominal_flop for study in registry.STUDIES if study.nominal_flop}
# The device memory traffic of one call (compulsory: each operand read once, the result written once).
MEMORY_READ, MEMORY_WRITTEN = TRAFFIC_COUNTERS[:2]
TRAFFIC_RULE = (f"{MEMORY_READ} + {MEMORY_WRITTEN} as the study binary reports them for one call (compulsory "
                "traffic: each operand read once, the result written once)")
# Why an entry without them has no roofline point: its binary has no model of that traffic, or (no axis_names)
# it was written before the binaries reported traffic.
NO_TRAFFIC = f"its binary reports no device-memory traffic for it ({MEMORY_READ}, {MEMORY_WRITTEN})"
NO_TRAFFIC_YET = (f"written before the binaries reported device-memory traffic ({MEMORY_READ}, {MEMORY_WRITTEN}): "
                  "no traffic, no intensity")


def _where(study, entry):
    return {"study": study, "impl": entry["impl"], "mode": entry["mode"], "precision": entry["precision"],
            "n": entry["n"], "batch": number(entry.get("batch"))}


def _rated_gpu_entries(studies):
    """(study, entry) of every ok GPU entry with a FLOP rate in a study whose precision is a format."""
    for name, study in studies.items():
        if registry.format_note(name, study):
            continue
        for entry in ok_entries(study["entries"]):
            if entry["device"] == "gpu" and positive(entry.get("flop_per_s")):
                yield name, entry


def peak_rates(studies):
    """Per precision, the fastest GPU entry; from a NOMINAL_FLOP study only when no other study has the
    precision."""
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
    """Every entry's `fraction_of_peak`: its FLOP/s over its precision's peak (GPU entries with a rate), else None."""
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
    return [{**_where(name, entry), "flop_per_s": entry["flop_per_s"], "peak_flop_per_s": peak[entry["precision"]],
             "fraction_of_peak": entry["flop_per_s"] / peak[entry["precision"]]}
            for name, entry in sorted(best.values(), key=lambda item: (list(studies).index(item[0]),
                                                                       list(peak).index(item[1]["precision"])))]


def device_bandwidth(studies):
    """(bandwidth record, None) of the first study by memory-roof rank that measured one, or (None, why
    none)."""
    roofs = sorted((record for record in registry.STUDIES if record.memory_roof),
                   key=lambda record: record.memory_roof.rank)
    notes = []
    for record in roofs:
        if record.name in studies:
            found, note = record.memory_roof.bandwidth(studies[record.name])
            if found:
                return found, None
            notes += [note] if note else []
    return None, notes[0] if notes else "the run has neither " + " nor ".join(record.memory_roof.absent
                                                                              for record in roofs)


def _placement(name, study, entry):
    """(bytes, None) of a GPU entry with a rate, or (None, why it has no place on the roofline)."""
    note = registry.format_note(name, study)
    if note:
        return None, note
    if entry["mode"] != RESIDENT:
        return None, f"{entry['mode']} times host-device copies, not device memory"
    traffic = memory_traffic(entry)
    if traffic is None:
        if not isinstance(study.get("axis_names"), dict):
            return None, NO_TRAFFIC_YET
        return None, study.get("memory_traffic_note") or NO_TRAFFIC
    return traffic, None


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
            "traffic_models": {name: TRAFFIC_RULE for name in dict.fromkeys(point["study"] for point in points)},
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


def has_telemetry(entry):
    return any(number(entry.get(key)) is not None for key in ENTRY_TELEMETRY) or isinstance(entry.get(CLOCK_LIMITED),
                                                                                            bool)


def energy_rows(studies):
    """Every ok GPU entry with an energy per timed call: that energy, FLOP per joule, the items of its batch."""
    rows = []
    for name, study in studies.items():
        for entry in ok_entries(study["entries"]):
            energy = positive(entry.get("energy_j_per_op"))
            if entry["device"] != "gpu" or energy is None:
                continue
            flop = positive(entry.get("flop")) if not registry.format_note(name, study) else None
            median_s = positive((entry.get("time_s") or {}).get("median"))
            window = ((entry.get("measurement") or {}).get("energy") or {})
            rows.append({**_where(name, entry), "energy_j_per_op": energy, "flop": flop,
                         "energy_uncertainty_j": number(entry.get("energy_j_per_op_uncertainty")),
                         "energy_above_idle_j": number(entry.get("energy_j_per_op_above_idle")),
                         "flop_per_joule": flop / energy if flop else None, "items": positive(entry.get("batch")),
                         # The energy window's mean power (files before it: energy over the median time).
                         "call_power_w": number(window.get("power_w")) or (energy / median_s if median_s else None),
                         "power_w": number(entry.get("power_w")), "sm_clock_mhz": number(entry.get("sm_clock_mhz"))})
    return rows


def clock_limited_rows(studies):
    """The entries measured while a power cap or a thermal slowdown held the clocks down."""
    return [{**_where(name, entry), "name": entry["name"],
             **{key: number(entry.get(key)) for key in ("power_limited_fraction", "thermal_limited_fraction",
                                                        "sm_clock_mhz", "telemetry_samples")}}
            for name, study in studies.items() for entry in ok_entries(study["entries"])
            if entry.get(CLOCK_LIMITED) is True]


MEASUREMENT_ROWS = 12  # the largest differences shown of each kind
BURST_DIFFERENCE = 0.03  # a burst this much faster than the sustained time is worth showing


def measurement_rows(studies):
    """Per study, how its entries were measured; the entries whose other figures differ most from the
    headline."""
    per_study, burst, cold, latency = [], [], [], []
    for name, study in studies.items():
        measured = [entry for entry in ok_entries(study["entries"]) if entry.get("measurement")]
        if not measured:
            continue
        noises = sorted(noise for noise in (number(e["measurement"]["headline"].get("noise")) for e in measured)
                        if noise is not None)
        per_study.append({
            "study": name, "entries": len(measured),
            "protocols": {p: sum(e.get("protocol") == p for e in measured) for p in ("throughput", "latency", "cpu")},
            "converged": sum(bool(e.get("converged")) for e in measured),
            "median_noise": noises[len(noises) // 2] if noises else None,
            "throttled_samples": sum(int(number(e["measurement"]["headline"].get("throttled_samples")) or 0)
                                     for e in measured),
            "warmup_not_settled": sum(not (e["measurement"].get("warmup") or {}).get("settled") for e in measured),
            "trials": trials.most(measured),
            "choices_varied": sum(bool(e.get("choices_varied")) for e in measured)})
        for entry in measured:
            median = entry["time_s"]["median"]
            row = {**_where(name, entry), "name": entry["name"], "protocol": entry.get("protocol"), "median_s": median}
            faster_burst = positive(entry.get("burst_s")) and entry["burst_s"] < median * (1 - BURST_DIFFERENCE)
            if faster_burst and entry["device"] == "gpu":
                burst.append({**row, "other_s": entry["burst_s"], "ratio": median / entry["burst_s"]})
            for target, field in ((cold, "cold_l2_s"), (latency, "latency_s")):
                other = positive((entry.get(field) or {}).get("median"))
                if other:
                    target.append({**row, "other_s": other, "ratio": other / median})
    found = {"studies": per_study}
    for key, rows in (("burst", burst), ("cold_l2", cold), ("latency", latency)):
        found.update({key: sorted(rows, key=lambda row: -row["ratio"])[:MEASUREMENT_ROWS], f"{key}_count": len(rows)})
    return found


def telemetry_found(studies):
    """How many entries have per-entry telemetry, and each study's note on its telemetry (why it is missing)."""
    return {"entries": sum(has_telemetry(entry) for study in studies.values() for entry in study["entries"]
                           if isinstance(entry, dict)),
            "notes": [{"study": name, "note": study["telemetry"]["note"]} for name, study in studies.items()
                      if isinstance(study.get("telemetry"), dict) and isinstance(study["telemetry"].get("note"), str)]}


# The studies of which one timed call is one GEMM (their energy is per GEMM).
ENERGY_GEMM_STUDIES = tuple(study.name for study in registry.STUDIES if study.one_gemm_per_call)
ENERGY_ROWS = 40  # more rows than this: each series at its largest size only


def nominal_flop(rows):
    """The studies whose FLOP are nominal (NOMINAL_FLOP), and why, for those among the fraction rows."""
    shown = sorted({row["study"] for row in rows if row["study"] in NOMINAL_FLOP})
    return {"studies": list(NOMINAL_FLOP), "notes": [{"study": study, "note": NOMINAL_FLOP[study]} for study in shown]}


def compute_roofs(roof):
    """Per peak: its rate and the intensity where it meets the memory roof (the ridge; None without one)."""
    bandwidth = (roof.get("bandwidth") or {}).get("bytes_per_s")
    return [{"precision": row["precision"], "flop_per_s": row["flop_per_s"],
             "ridge_intensity": row["flop_per_s"] / bandwidth if bandwidth else None} for row in roof["peaks"]]


def roofline_series(roof):
    """Per study and precision: its points, their intensities, the best one and its fraction of the roof
    there."""
    groups = {}
    for point in roof["points"]:
        groups.setdefault((point["study"], point["precision"]), []).append(point)
    rows = []
    for (study, precision), points in groups.items():
        best = max(points, key=lambda point: point["flop_per_s"])
        ceiling = attainable(roof, precision, best["intensity"])
        intensities = [point["intensity"] for point in points]
        rows.append({"study": study, "precision": precision, "point_count": len(points),
                     "min_intensity": min(intensities), "max_intensity": max(intensities), "best": best,
                     "fraction_of_roof": best["flop_per_s"] / ceiling if ceiling else None})
    return rows


def not_placed_groups(roof):
    """The entries left off the roofline, one row per study, mode and reason (not per series)."""
    groups = {}
    for row in roof["not_placed"]:
        group = groups.setdefault((row["study"], row["mode"], row["reason"]), {
            "study": row["study"], "mode": row["mode"], "reason": row["reason"], "entries": 0, "series": []})
        group["entries"] += row["entries"]
        group["series"].append({"impl": row["impl"], "precision": row["precision"]})
    return list(groups.values())


def energy_per_gemm(rows):
    """The GEMM studies' energy rows in order: every one, or beyond ENERGY_ROWS each series at its largest size."""
    rows = [row for row in rows if row["study"] in ENERGY_GEMM_STUDIES]
    series = {}
    for row in sorted(rows, key=lambda row: (row["study"], row["precision"], row["impl"], row["mode"], row["n"])):
        series.setdefault((row["study"], row["precision"], row["impl"], row["mode"]), []).append(row)
    every = len(rows) <= ENERGY_ROWS
    return {"every_size": every, "rows": [row for found in series.values() for row in (found if every else found[-1:])]}


def energy_per_call(rows):
    """The other studies: per series, the energy row at its largest size and batch, with the energy per item."""
    largest = {}
    for row in rows:
        if row["study"] not in ENERGY_GEMM_STUDIES:
            key = (row["study"], row["impl"], row["mode"], row["precision"])
            if key not in largest or (row["n"], row["batch"] or 0) > (largest[key]["n"], largest[key]["batch"] or 0):
                largest[key] = row
    return [{**row, "energy_j_per_item": row["energy_j_per_op"] / row["items"] if row["items"] else None}
            for row in largest.values()]


def derive(studies):
    """document["findings"]; sets each entry's fraction_of_peak."""
    peaks = peak_rates(studies)
    set_fraction_of_peak(studies, peaks)
    rows, roof, energy = fraction_of_peak_rows(studies, peaks), roofline(studies, peaks), energy_rows(studies)
    roof.update(compute_roofs=compute_roofs(roof), series=roofline_series(roof),
                not_placed_groups=not_placed_groups(roof))
    return {"fraction_of_peak": rows, "roofline": roof, "energy": energy, "clock_limited": clock_limited_rows(studies),
            "telemetry": telemetry_found(studies),
            "gpu_entries": sum(entry["device"] == "gpu" for study in studies.values()
                               for entry in ok_entries(study["entries"])),
            "nominal_flop": nominal_flop(rows), "energy_per_gemm": energy_per_gemm(energy),
            "measurement": measurement_rows(studies), "noise_floor": noise_floor.derive(studies),
            "energy_per_call": energy_per_call(energy)}
