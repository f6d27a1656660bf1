"""summary.md: the roofline study's sections, from its `derived` (derive_roofline.py) and the run's
findings (the memory roof the stream study set, the claim on memory-bound entries)."""
from gpubench_driver.lib.sections import grouped_failures
from gpubench_driver.lib.document import paragraph, section, table
from gpubench_driver.lib.formatting import md, percent, rate

CLAIM = "flops_rarely_limit"  # claims.py's key of the verdict this study's roofs decide


def _k(value):
    return "n/a" if value is None else f"{value:.0f}"


def _ridges(derived, findings):
    rows = derived.get("series") or []
    title = "Roofline sweep: measured roofs and ridge points"
    if not rows:
        return section(title, [paragraph("No entry of the sweep was measured.")])
    body = [[md(row["device"]), md(row["precision"]), md(row["n"]),
             f"{row['bandwidth_bytes_per_s'] / 1e9:.0f} GB/s", rate(row["compute_flop_per_s"]),
             f"{row['ridge_intensity']:.3g} FLOP/B" + (f" (k = {_k(row['ridge_fma_per_element'])})"
                                                        if row.get("ridge_fma_per_element") else ""),
             _k(row["memory_bound_until_fma"]), _k(row["compute_bound_from_fma"]),
             "yes" if row["spans_ridge"] else "no: one roof only"] for row in rows]
    blocks = [table(["device", "precision", "elements", "bandwidth reached", "compute roof reached", "ridge",
                     "follows the bandwidth up to k", "follows the FMA units from k", "points on both sides"], body),
              paragraph(f"The chain y = x, then k times y = y*a + x: 2k FLOP per element over its bytes read and "
                        f"written. Bandwidth reached: the most bytes per second of any k; compute roof: the most "
                        f"FLOP/s; the measured ridge is where the two lines meet (compute roof / bandwidth). A point "
                        f"follows a roof while it reaches {percent(derived['follows'], 0)} of it.")]
    memory = (findings or {}).get("roofline", {}).get("bandwidth")
    if memory:
        blocks.append(paragraph(f"The run's memory roof: {memory['bytes_per_s'] / 1e9:.0f} GB/s "
                                f"({md(memory['study'])}: {md(memory['impl'])}, {md(memory['precision'])})."))
    return section(title, blocks)


def _claim(findings):
    found = next((row for row in ((findings or {}).get("claims") or {}).get("answered", []) if row["key"] == CLAIM),
                 None)
    if not found:
        return []
    numbers = found["numbers"]
    body = [[md(row["study"]), md(row["precision"]), str(row["memory_bound"]), str(row["compute_bound"])]
            for row in numbers["by_study"]]
    return section("Roofline sweep: the other studies' GPU entries against the measured roofs", [
        paragraph(f"{md(found['claim'])}: **{md(found['verdict'])}**. {md(found['answer'])}"),
        table(["study", "precision", "memory-bound (left of the ridge)", "compute-bound (right of it)"], body)])


def sections(study, document):
    findings = document.get("findings")
    return (_ridges(study["derived"], findings) + _claim(findings)
            + grouped_failures(study, "Roofline sweep: skipped and failed entries"))
