"""summary.md's sections across the studies (findings, across.py): fraction of the measured peak, roofline,
how each figure was measured, per-entry telemetry, the trials' agreement and the GPU clocks during each study."""
import os

from gpubench_driver import studies
from gpubench_driver.lib.document import Beside, Figures, bullets, figure_of, paragraph, section, table
from gpubench_driver.lib.formatting import joules, md, percent, rate, ratio, seconds, whole
from gpubench_driver.lib.sections import table_section

CLOCK_LIMITED_LINES = 25
ROOFLINE_KEY = "roofline"  # the roofline chart's key among the report's plots by study


def _in_units(value, unit):
    return "n/a" if value is None else f"{value:.0f} {unit}"


def _gflop_per_joule(row):
    return "n/a" if row["flop_per_joule"] is None else f"{row['flop_per_joule'] / 1e9:.1f}"


def _entry_where(row, with_study=False):
    """'cublas resident n=4096 (batch 64)' of a findings row."""
    text = (f"{md(row['study'])}: " if with_study else "") + f"{md(row['impl'])} {md(row['mode'])} n={md(row['n'])}"
    return text + (f" (batch {md(row['batch'])})" if row.get("batch") is not None else "")


def _fraction_of_peak(findings):
    rows = findings["fraction_of_peak"]
    if not rows:
        return []
    peaks = {row["precision"]: row for row in findings["roofline"]["peaks"]}
    # A study's best entry that is the peak itself says nothing: the headline gives the peaks.
    body = [[md(row["study"]), md(row["precision"]), _entry_where(row), rate(row["flop_per_s"]),
             percent(row["fraction_of_peak"]),
             f"{rate(peaks[row['precision']]['flop_per_s'])}: {_entry_where(peaks[row['precision']], True)}"]
            for row in rows if not _is_peak(row, peaks[row["precision"]])]
    if not body:
        return []
    nominal = findings["nominal_flop"]
    return section("Across the studies: fraction of the measured peak", [
        table(["study", "precision", "its best entry", "rate", "fraction of the peak", "the peak: where"], body),
        paragraph("The measured peak of a precision: the highest FLOP/s (int8: operations/s) of any GPU entry of that "
                  "precision in this run, any mode, among the studies that count the FLOP that ran (a "
                  + ", ".join(md(study) for study in nominal["studies"]) + " entry sets it only for a precision "
                  "no other study measured). Every GPU entry's rate over it is `fraction_of_peak` in results.json; "
                  "this table shows each study's best entry per precision."),
        bullets(f"{md(row['study'])}: {md(row['note'])}." for row in nominal["notes"])])


def _is_peak(row, peak):
    return all(row.get(key) == peak.get(key) for key in ("study", "impl", "mode", "precision", "n", "batch"))


def _roof_items(roof):
    bandwidth = roof.get("bandwidth")
    if bandwidth:  # in the words of the study that measured it
        items = [studies.BY_NAME[bandwidth["study"]].memory_roof.summary(bandwidth)]
    else:
        items = [f"No memory roof: {md(roof.get('memory_roof_note'))}; only the compute roofs are drawn."]
    items.append("Compute roofs, the measured peak of each precision: " + "; ".join(
        f"{md(row['precision'])} {rate(row['flop_per_s'])}"
        + ("" if row["ridge_intensity"] is None else f", ridge at {row['ridge_intensity']:.1f} FLOP/B")
        for row in roof["compute_roofs"]) + ".")
    rules = {}  # one line per distinct rule, naming the studies it serves
    for study, text in roof["traffic_models"].items():
        rules.setdefault(text, []).append(md(study))
    items += [f"Device memory bytes per call ({', '.join(names)}): {md(text)}." for text, names in rules.items()]
    items.append("Only GPU entries in resident mode are placed: the transfer modes time PCIe copies, not device "
                 "memory. The model counts compulsory traffic, each operand read once and the result written once "
                 "per call: re-reads between tiles make the real traffic larger, operands that stay in the L2 cache "
                 "from one timed call to the next (small sizes) make it smaller, so a small size's point can sit "
                 "beyond the memory roof.")
    return items


def _roofline(findings, plots_by_study, out_dir):
    roof = findings["roofline"]
    if not roof["peaks"]:
        return []
    blocks = [bullets(_roof_items(roof))]
    chart = (plots_by_study or {}).get(ROOFLINE_KEY) or []
    figures = Figures(tuple(figure_of(os.path.relpath(path, out_dir)) for path in chart))
    if roof["series"]:
        rows = [[md(row["study"]), md(row["precision"]), str(row["point_count"]),
                 f"{row['min_intensity']:.3g} .. {row['max_intensity']:.3g}",
                 f"{rate(row['best']['flop_per_s'])} ({_entry_where(row['best'])})",
                 f"{row['best']['intensity']:.3g}", _of_roof(row["fraction_of_roof"])] for row in roof["series"]]
        blocks += [Beside((table(["study", "precision", "points", "intensity (FLOP/B)", "best rate", "at intensity",
                                  "of the roof there"], rows),), figures),
                   paragraph("Of the roof there: the best rate over min(peak, bandwidth x intensity) at its intensity "
                             "(over the peak alone when no memory roof was measured). Over 100%: the operands stayed "
                             "in the L2 cache between calls, so the call moved less device memory than the model "
                             "counts.")]
    elif chart:
        blocks.append(figures)
    if roof["not_placed_groups"]:
        blocks += [paragraph("Not placed:"), table(
            ["study", "mode", "entries", "implementations and precisions", "why"],
            [[md(row["study"]), md(row["mode"]), f"{row['entries']:.0f}",
              md(", ".join(f"{series['impl']} {series['precision']}" for series in row["series"])), md(row["reason"])]
             for row in roof["not_placed_groups"]])]
    if not chart:
        blocks.append(paragraph("No chart: matplotlib is not installed for this Python."))
    return section("Across the studies: roofline (GPU, resident)", blocks)


def _of_roof(fraction):
    return percent(fraction) + (" (L2-resident)" if fraction is not None and fraction > 1 else "")


def _no_telemetry(findings):
    return section("Per-entry telemetry", [
        paragraph("No per-entry telemetry in this file: no entry has clocks, power or energy measured during its "
                  "timed loop (a file written before per-entry telemetry, or a run without NVML)."),
        bullets(f"{md(row['study'])}: {md(row['note'])}" for row in findings["telemetry"]["notes"])])


def _joules_within(row):
    uncertainty = row.get("energy_uncertainty_j")
    return joules(row["energy_j_per_op"]) + (f" ± {joules(uncertainty)}" if uncertainty is not None else "")


def _energy_gemm(findings):
    found = findings["energy_per_gemm"]
    return table_section("Across the studies: energy per GEMM (NVML)", [
        "study", "precision", "impl", "mode", "n", "energy per GEMM", "above idle", "GFLOP per joule", "power",
        "median SM clock"], found["rows"], lambda row: [
            md(row["study"]), md(row["precision"]), md(row["impl"]), md(row["mode"]), md(row["n"]),
            _joules_within(row), joules(row.get("energy_above_idle_j")), _gflop_per_joule(row),
            _in_units(row.get("call_power_w"), "W"), _in_units(row["sm_clock_mhz"], "MHz")],
        paragraph(("Every size measured with an energy reading. " if found["every_size"] else
                   "Each series at its largest size with an energy reading (every size: `findings.energy` in "
                   "results.json). ")
                  + "Energy per GEMM: the board's mean power over a window of back-to-back calls at steady state "
                    "(NVML's total-energy counter, read where it was seen to tick, so both ends are synchronous with the "
                    "work; the window's least length is `energy.window_s` under each study's `measurement` in "
                    "results.json), times the sustained time of one call in that window; "
                    "± its uncertainty (the window's two halves' difference and the ticks' timing). Board energy: "
                    "idle and memory power included; above idle subtracts the power NVML read before the process's "
                    "first GPU entry. GFLOP per joule: the GEMM's FLOP (int8: operations) over it. Only resident "
                    "entries whose calls take at least 100 us are measured: shorter calls, and calls timed on the "
                    "host, leave the GPU idle between them."))


def _energy_calls(findings):
    return table_section("Across the studies: energy per call (NVML)", [
        "study", "impl", "mode", "precision", "n", "batch", "energy per call", "per item of the batch",
        "GFLOP per joule", "power"], findings["energy_per_call"], lambda row: [
            md(row["study"]), md(row["impl"]), md(row["mode"]), md(row["precision"]), md(row["n"]), md(row["batch"]),
            _joules_within(row), joules(row["energy_j_per_item"]), _gflop_per_joule(row),
            _in_units(row.get("call_power_w"), "W")],
        paragraph("One call: a batch (batched GEMM, MLP step, convolution), a copy (transfer: n is its bytes, "
                  "precision its direction), a pipelined run (overlap: precision is the workload); each series at its "
                  "largest n and batch; measured as above. Every entry's energy: `energy_j_per_op` in "
                  "results.json."))


def _measurement(findings):
    found = findings.get("measurement")
    if not found or not found["studies"]:
        return []
    per_study = [[md(row["study"]), str(row["entries"]),
                  ", ".join(f"{count} {name}" for name, count in row["protocols"].items() if count),
                  f"{row['converged']} of {row['entries']}", percent(row["median_noise"], 2),
                  str(row["warmup_not_settled"]), str(row["throttled_samples"]), str(row.get("trials") or 1),
                  str(row.get("choices_varied") or 0)] for row in found["studies"]]
    blocks = [paragraph("Every entry is warmed up until its time per call (and SM clock) settles, then sampled "
                        "until the samples' relative spread is below its target or stops shrinking "
                        "(docs/methodology.md). Headline times: **throughput** = device time with launch latency "
                        "held out, warm L2, sustained (resident GPU entries); **latency** = one call on the host "
                        "clock until its work is done (GPU entries with copies in the timed region, and the "
                        "transfer and overlap studies); **cpu** = batches of calls on the host clock."),
              table(["study", "entries", "protocols", "converged", "median noise", "warm-up unsettled",
                     "throttled samples dropped", "trials", "library choice varied between trials"], per_study)]
    for key, title, other in (("burst", "Burst faster than sustained", "burst (first calls)"),
                              ("cold_l2", "Cold L2 beside warm", "cold L2"),
                              ("latency", "Host-observed latency beside device time", "one call, host clock")):
        rows = found[key]
        if not rows:
            continue
        blocks.append(paragraph(f"**{title}** ({found[key + '_count']} entries; the {len(rows)} largest ratios):"))
        blocks.append(table(["entry", "headline", other, "ratio"],
                            [[md(row["name"]), seconds(row["median_s"]), seconds(row["other_s"]), ratio(row["ratio"])]
                             for row in rows]))
    return section("Across the studies: how the figures were measured", blocks)


def _clock_limited(findings):
    rows, measured = findings["clock_limited"], findings["telemetry"]["entries"]
    title = "Across the studies: entries measured with clocks held down"
    if not rows:
        return section(title, [paragraph(f"No entry ran with its clock held below 97% of the maximum by a power cap or "
                                         f"a thermal slowdown ({measured} entries with per-entry telemetry).")])
    items = [f"{md(row['name'])}: power cap in {percent(row['power_limited_fraction'])} and thermal slowdown in "
             f"{percent(row['thermal_limited_fraction'])} of its samples, median SM clock "
             f"{_in_units(row['sm_clock_mhz'], 'MHz')}" for row in rows[:CLOCK_LIMITED_LINES]]
    if len(rows) > CLOCK_LIMITED_LINES:
        items.append(f"and {len(rows) - CLOCK_LIMITED_LINES} more (`clock_limited` in results.json)")
    return section(title, [bullets(items), paragraph(
        f"{len(rows)} of {measured} entries with per-entry telemetry ran, over their sustained measurement, with NVML "
        "reporting a power cap or thermal slowdown in most readings and the SM clock below 97% of its maximum: "
        "their times are the GPU's sustained rate under that limit (what a long job gets), not a burst. Samples "
        "taken below 75% of the clock the entry's warm-up settled at are dropped and re-taken after a pause.")])


def sections(document, plots_by_study, out_dir):
    """The sections across the studies; none when no GPU entry was measured (the warnings say why)."""
    findings = document.get("findings")
    if not findings or not findings["gpu_entries"]:
        return []
    blocks = _fraction_of_peak(findings) + _roofline(findings, plots_by_study, out_dir) + _measurement(findings)
    if not findings["telemetry"]["entries"]:
        return blocks + _no_telemetry(findings)
    return blocks + _energy_gemm(findings) + _energy_calls(findings) + _clock_limited(findings)


# --- how far the machine varies from itself (the trials' pairs) -----------------------------------
def _short_of_target(row):
    return (f"This host cannot hold {row['kind']} within {percent(row['band'], 0)} from one process to the next: "
            f"{percent(row['within_band'], 0)} of trial pairs agree that closely (the target is "
            f"{percent(row['target_share'], 0)}), and {percent(row['target_share'], 0)} of them lie within "
            f"{percent(row['floor'])}. Read a difference smaller than that between two runs or two machines in "
            f"these entries as noise.")


def noise_floor(document):
    """The section on the trials' agreement, for any run with entries (a CPU-only one too)."""
    found = (document.get("findings") or {}).get("noise_floor")
    if found is None:
        return []
    title = "How far this machine varies from itself"
    if not found["rows"]:
        return section(title, [paragraph(
            "Each entry was measured in one process (`--quick` or `--trials 1`), so this run cannot say how far the "
            "machine varies from one process to the next: run with three trials (the default), or run "
            "`gpubench run --repeatability` for an A/A pair of runs.")])
    rows = [[row["kind"], str(row["entries"]), str(row["pairs"]), percent(row["within_band"], 0),
             f"{percent(row['target_share'], 0)} within {percent(row['band'], 0)}", percent(row["floor"]),
             "yes" if row["met"] else "no"] for row in found["rows"]]
    short = [_short_of_target(row) for row in found["rows"] if not row["met"]]
    return section(title, [
        paragraph(f"Each entry was measured in up to {found['trials']} separate processes (trials). Two trials of "
                  "one entry are an A/A pair in miniature: per kind of entry, the share of trial pairs whose medians "
                  "agree within the target's band, and the floor, the difference within which the target share "
                  "of the pairs lies. A run's figure is the median of its trials, so two runs agree more closely "
                  "than two trials: the floor bounds what this machine can tell apart from above. The floor is the "
                  "kind's as a whole; `gpubench compare` judges each entry by the noise model: its own width "
                  "between trials and between runs."),
        table(["kind of entry", "entries", "trial pairs", "pairs within the band", "target",
               "floor", "target met"], rows)] + ([bullets(short)] if short else []))


# --- the GPU's clocks during each study (its telemetry record) ------------------------------------

def _clock(name, spread):
    return f"{name} {whole(spread['min'])}–{whole(spread['max'])} MHz, median {whole(spread['median'])} MHz"


def _telemetry_text(record):
    summary = record.get("summary") or {}
    if not summary.get("samples"):
        return md(record.get("note") or "no samples")
    parts = [_clock(name, summary[key]) for name, key in (("SM clock", "sm_clock_mhz"),
                                                          ("while busy", "busy_sm_clock_mhz"),
                                                          ("memory clock", "mem_clock_mhz")) if summary.get(key)]
    if summary.get("max_power_w") is not None:
        parts.append(f"power up to {summary['max_power_w']:.0f} W")
    if summary.get("max_temperature_c") is not None:
        parts.append(f"temperature up to {summary['max_temperature_c']:.0f} °C")
    if summary.get("throttled_fraction") is None:
        parts.append("throttle reasons not reported")
    else:
        reasons = ", ".join(summary.get("throttle_reasons") or [])
        parts.append(f"throttled in {summary['throttled_fraction']:.0%} of samples"
                     + (f" ({md(reasons)})" if reasons else ""))
    interval = record.get("interval_s")
    parts.append(f"{summary['samples']:.0f} sample{'' if summary['samples'] == 1 else 's'}"
                 + ("" if interval is None else f", one every {interval:g} s"))
    return "; ".join(parts) + (f" ({md(record['note'])})" if record.get("note") else "")


def clocks(document):
    """Per study, its NVML telemetry; nothing on a run without a GPU (the warnings say why once)."""
    if not (document.get("gpu") or {}).get("available", True):
        return []
    items = [f"{md(name)}: {_telemetry_text(study['telemetry'])}" for name, study in document["studies"].items()
             if study.get("telemetry")]
    return section("GPU clocks during each study (NVML)", [bullets(items)]) if items else []
