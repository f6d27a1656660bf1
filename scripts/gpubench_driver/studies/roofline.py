"""The roofline study's plug-in: per device, precision and size, the FMA chain's rate against its arithmetic
intensity (k FMAs per element, the batch axis), the bandwidth and compute roofs it reached and the measured ridge
point between them (docs/studies.md, roofline). Intensity: flop over the binary's memory traffic counters."""
from gpubench_driver.lib import charts
from gpubench_driver.lib.check_figures import entries_at, rate_figure
from gpubench_driver.lib.document import paragraph, section, table
from gpubench_driver.lib.findings import (curve_rows, group_by, grouped_failures, interval_record, memory_traffic,
                                          ok_entries)
from gpubench_driver.lib.formatting import md, percent, rate, whole
from gpubench_driver.lib.figures import PRECISION_NAMES
from gpubench_driver.lib.registry import CheckPoint, Study, flop_rates
from gpubench_driver.lib.sections import failures_section, table_section
from gpubench_driver.lib.stats import finite

# A point follows a roof while it reaches this share of it: memory-bound until the bandwidth it
# achieves falls below it, compute-bound from where its rate reaches it of the compute roof.
FOLLOWS = 0.9


def _point(entry):
    moved, flop, median = memory_traffic(entry), finite(entry.get("flop")), entry["time_s"]["median"]
    return {"fma_per_element": entry["batch"], "intensity": flop / moved, "flop_per_s": flop / median,
            "bytes_per_s": moved / median, "median_s": median, "interval_s": interval_record(entry),
            "element_bytes": (finite(entry.get("array_bytes")) or 0) / entry["n"] or None}


def series(entries):
    """One row per (implementation, device, mode, precision, n): its points in order of k, and its roofs."""
    measured = [entry for entry in ok_entries(entries) if entry.get("batch") and memory_traffic(entry) is not None
                and (finite(entry.get("flop")) or 0) > 0]
    fields = ("impl", "device", "mode", "precision", "n")
    rows = sorted(curve_rows(measured, fields, _point, "fma_per_element"),
                  key=lambda row: tuple(row[field] for field in fields))
    return [{**row, **roofs(row["points"])} for row in rows]


def roofs(points):
    """A series' roofs and ridge, where its points turn, and each point's bound and fraction of its roof."""
    bandwidth = max(point["bytes_per_s"] for point in points)
    compute = max(point["flop_per_s"] for point in points)
    ridge = compute / bandwidth
    for point in points:
        point["bound"] = "memory" if point["intensity"] < ridge else "compute"
        point["fraction_of_roof"] = point["flop_per_s"] / min(compute, bandwidth * point["intensity"])
    memory = {p["fma_per_element"] for p in points if p["bytes_per_s"] >= FOLLOWS * bandwidth}
    flops = {p["fma_per_element"] for p in points if p["flop_per_s"] >= FOLLOWS * compute}
    element = points[0]["element_bytes"]
    return {"bandwidth_bytes_per_s": bandwidth, "compute_flop_per_s": compute, "ridge_intensity": ridge,
            "ridge_fma_per_element": ridge * element if element else None,
            "memory_bound_until_fma": max(memory) if memory else None,
            "compute_bound_from_fma": min(flops) if flops else None,
            # Both roofs are measured only where some point follows the bandwidth alone and another the
            # FMA units alone: a sweep on one side of the ridge has its fastest point at both "roofs".
            "spans_ridge": bool(memory - flops and flops - memory)}


def derive(entries):
    return {"series": series(entries), "follows": FOLLOWS, "failures": grouped_failures(entries)}


CLAIM = "flops_rarely_limit"  # claims.py's key of the verdict this study's roofs decide


def _ridge_row(row):
    return [md(row["device"]), md(row["precision"]), md(row["n"]), f"{row['bandwidth_bytes_per_s'] / 1e9:.0f} GB/s",
            rate(row["compute_flop_per_s"]), f"{row['ridge_intensity']:.3g} FLOP/B"
            + (f" (k = {whole(row['ridge_fma_per_element'])})" if row.get("ridge_fma_per_element") else ""),
            whole(row["memory_bound_until_fma"]), whole(row["compute_bound_from_fma"]),
            "yes" if row["spans_ridge"] else "no: one roof only"]


def _ridges(derived, findings):
    memory = (findings or {}).get("roofline", {}).get("bandwidth")
    return table_section("Roofline sweep: measured roofs and ridge points", [
        "device", "precision", "elements", "bandwidth reached", "compute roof reached", "ridge",
        "follows the bandwidth up to k", "follows the FMA units from k", "points on both sides"],
        derived.get("series") or [], _ridge_row, paragraph(
            f"The chain y = x, then k times y = y*a + x: 2k FLOP per element over its bytes read and written. "
            f"Bandwidth reached: the most bytes per second of any k; compute roof: the most FLOP/s; the measured "
            f"ridge is where the two lines meet (compute roof / bandwidth). A point follows a roof while it reaches "
            f"{percent(derived['follows'], 0)} of it."),
        *([paragraph(f"The run's memory roof: {memory['bytes_per_s'] / 1e9:.0f} GB/s "
                     f"({md(memory['study'])}: {md(memory['impl'])}, {md(memory['precision'])}).")] if memory else []),
        empty="No entry of the sweep was measured.")


def _claim(findings):
    found = next((row for row in ((findings or {}).get("claims") or {}).get("answered", []) if row["key"] == CLAIM),
                 None)
    if not found:
        return []
    body = [[md(row["study"]), md(row["precision"]), str(row["memory_bound"]), str(row["compute_bound"])]
            for row in found["numbers"]["by_study"]]
    return section("Roofline sweep: the other studies' GPU entries against the measured roofs", [
        paragraph(f"{md(found['claim'])}: **{md(found['verdict'])}**. {md(found['answer'])}"),
        table(["study", "precision", "memory-bound (left of the ridge)", "compute-bound (right of it)"], body)])


def sections(study, document):
    findings = document.get("findings")
    return (_ridges(study["derived"], findings) + _claim(findings)
            + failures_section(study, "Roofline sweep: skipped and failed entries"))


INTENSITY = "arithmetic intensity (FLOP per byte: k FMAs per element over its bytes read and written)"


def _fitted_roofs(rows):
    """mark(axes, keys): each series' measured roofs, its bandwidth up to the ridge and its compute roof past it."""
    def mark(axes, keys):
        for index, row in enumerate(row for row in rows if (row["impl"], row["precision"]) in keys):
            low, high = row["points"][0]["intensity"], row["points"][-1]["intensity"]
            ridge = row["ridge_intensity"]
            axes.plot([low, ridge, high], [row["bandwidth_bytes_per_s"] * low, row["compute_flop_per_s"],
                                           row["compute_flop_per_s"]],
                      color="black", alpha=0.5, linewidth=0.9,
                      linestyle=charts.CROSSOVER_STYLES[index % len(charts.CROSSOVER_STYLES)],
                      label=charts.plain(f"{row['precision']}: {row['bandwidth_bytes_per_s'] / 1e9:.0f} GB/s, "
                                         f"{rate(row['compute_flop_per_s'])}, ridge {ridge:.3g} FLOP/B"))
    return mark


def plots(pyplot, study, plot_dir):
    """One chart per device and size: FLOP/s over the intensity, a line per precision, with its roofs."""
    study_charts = []
    rows = study["derived"].get("series") or []
    for (device, n), mine in group_by(rows, lambda row: (row["device"], row["n"])).items():
        study_charts += charts.line_charts(
            plot_dir, ("roofline_sweep", device, f"n{n}"),
            f"roofline sweep, {device}: the FMA chain's rate against its intensity\n{n} elements per array",
            charts.row_series(mine, ("impl", "precision"), "intensity"), ylabel="FLOP/s",
            value=lambda point: point["flop_per_s"], xlabel=INTENSITY, mark=_fitted_roofs(mine))
    return charts.draw(pyplot, study_charts)


# gpubench check: the FMA units' peak without tensor cores, the chain's most compute-bound point of the suite.
CHECK_ELEMENTS, CHECK_FMA = 1 << 25, 1024


def check_figures(study, document, sheet):
    """The FMA chain's rate per format at k = CHECK_FMA, against the datasheet's rate without tensor cores."""
    rates = (sheet or {}).get("peak_flop_per_s_without_tensor_cores") or {}
    found = []
    for entry in entries_at(study, impl="fma_kernel", mode="resident", n=CHECK_ELEMENTS, batch=CHECK_FMA):
        if entry.get("flop_per_s"):
            peak = rates.get(entry["precision"])
            found.append(rate_figure("roofline", entry, f"rate/{entry['precision']}",
                                     f"{PRECISION_NAMES.get(entry['precision'], entry['precision'])} CUDA-core FMA "
                                     f"peak ({CHECK_FMA} FMA per element)",
                                     {"value": peak, "what": "datasheet, without tensor cores"} if peak else None))
    return found


CHECK = CheckPoint(
    sizes=(CHECK_ELEMENTS,), batches=(CHECK_FMA,), impls=("fma_kernel",), modes=("resident",), figures=check_figures,
    plateau="k = 1024 FMA per element (256 FLOP per byte in FP32), far right of the ridge: the chain follows the "
            "compute roof there and more FMA per element add no rate; 2^25 elements fill every SM",
    budget="one resident entry per format (FP16, FP32, FP64), one trial, the throughput protocol's stopping rule")


STUDY = Study(name="roofline", batch_axis=True,
              derive=lambda study, document, rounds: derive(study["entries"]), summary=sections, plots=plots,
              roofline_marker="X", rates=flop_rates, axes={"n": "elements", "batch": "fma_per_element"},
              measures_roofs=True, check=CHECK, position=110)
