"""The report's first screen: the headline figures with their uncertainty (findings["headline"]),
the health verdict (findings["health"]) and the claims answered (findings["claims"]). Only what
the run measured is shown: a figure, check or claim the run has no data for is left out."""
from gpubench_driver.lib import figures
from gpubench_driver.lib.document import Panel, bullets, paragraph, section
from gpubench_driver.lib.formatting import md, percent, unit_text
from gpubench_driver.lib.sections import table_section
from gpubench_driver.stages import health


def value_text(value, unit):
    """A figure's value in its unit: FLOP/s and OP/s with a prefix, B/s in GB/s (decimal)."""
    return unit_text(value, unit).strip()


def interval_text(row):
    """The interval as a share of the value (±x%), or the range for a size."""
    share = figures.spread(row)
    if share is None:
        return "one trial: none"
    if row["unit"] == "n":
        return f"{row['low']:.0f}–{row['high']:.0f}"
    return f"±{percent(share, 1 if share < 0.1 else 0)}"


def reference_text(row):
    reference = row.get("reference")
    if not reference or row.get("fraction_of_reference") is None:
        return ""
    return f"{percent(row['fraction_of_reference'], 0)} of {md(reference['what'])} {value_text(reference['value'], row['unit'])}"


def health_text(judged):
    if judged is None:
        return ""
    if judged["status"] == health.DATASHEET_ONLY:  # the headline's fraction of the datasheet, where it has one
        against = "datasheet only" if judged.get("fraction_of_reference") is not None else "no range"
        return f"{against} ({judged['runs']} other run(s) at this point)"
    if judged["status"] == health.AS_EXPECTED:
        return "as expected"
    if judged.get("bound") == "host":
        return f"{judged['status']} by {percent(judged['by'], 0)} (host-bound)"
    return f"**{judged['status']} by {percent(judged['by'], 0)}**"


def headline_section(document):
    findings = document.get("findings") or {}
    judged = {row["key"]: row for row in (findings.get("health") or {}).get("figures", [])}
    sheet = (findings.get("headline") or {}).get("datasheet")
    note = paragraph("Interval: where the median lies over the run's independent trials (their lowest to "
                     "highest median, which holds the true median with 50% probability for two trials, 75% for "
                     "three; a 95% interval from six trials on); energy: ± the window's own uncertainty. Timed as: "
                     "**throughput** = device time of back-to-back calls, warm L2, sustained; **latency** = one "
                     "call on the host clock (copies included); **cpu** = the host clock. Every figure's entry: "
                     "`findings.headline` in results.json."
                     + (f" Datasheet: {md(sheet['model'])}, {md(sheet['source'])}." if sheet else ""))
    return table_section("Headline", ["figure", "measured", "interval", "timed as", "against", "health"],
                         (findings.get("headline") or {}).get("figures") or [], lambda row: [
        md(row["label"]), value_text(row["value"], row["unit"]), interval_text(row),
        md((row.get("timed_as") or "").split(":")[0]), reference_text(row), health_text(judged.get(row["key"]))],
        note)


def health_section(document):
    found = (document.get("findings") or {}).get("health")
    if not found or (found["verdict"] == health.NOT_JUDGED and not found.get("checks")):
        return []
    if found["verdict"] == health.NOT_JUDGED:
        line = f"**Health: not judged**: {md(found['why'])}."
    elif found["verdict"] == health.AS_EXPECTED:
        gpu_figures = [row for row in found["figures"] if row.get("bound") != "host"
                       and row["status"] != health.DATASHEET_ONLY]
        line = (f"**Health: as expected.** Every one of the {len(gpu_figures)} judged GPU figures lies within the "
                f"range measured by {len(found['runs'])} committed run(s) of {md(found['model'])}, and no check "
                f"below found a problem.")
    else:
        below = [row for row in found["figures"] if row["status"] == health.BELOW and row.get("bound") != "host"]
        causes = sorted({cause for row in below for cause in row["causes"]})
        failing = [check["text"] for check in found.get("checks", []) if not check["ok"]]
        if below:
            line = (f"**Health: below expected.** {len(below)} of {len(found['figures'])} judged figures fall short of "
                    f"the range of {len(found['runs'])} committed run(s) of {md(found['model'])}"
                    + (f"; likely cause: {md('; '.join(causes))}" if causes else
                       "; no recorded cause explains it (cooling, a shared host, a different board revision)")
                    + ".")
        else:  # the figures hold, a check below does not
            line = (f"**Health: below expected.** Every judged figure lies within the range of {len(found['runs'])} "
                    f"committed run(s) of {md(found['model'])}, but a check found a problem: {md('; '.join(failing))}.")
    host_below = [row["key"] for row in found["figures"] if row["status"] == health.BELOW and row.get("bound") == "host"]
    if host_below:
        line += (f" Host-bound figures below their range: {md(', '.join(host_below))} ({md(health.HOST_CAUSE)}; "
                 "they do not count against the GPU).")
    if found.get("left_out") and found["verdict"] != health.NOT_JUDGED:
        line += (f" This run ({md(found['left_out'])}) is one of the committed runs the ranges come from: it is "
                 "judged without its own values.")
    sheet_only = [row["key"] for row in found["figures"] if row["status"] == health.DATASHEET_ONLY]
    if sheet_only and found["verdict"] != health.NOT_JUDGED:
        line += (f" Fewer than {health.MIN_RUNS} other runs at their point, so no range (the headline's fraction of "
                 f"the datasheet stands in where there is one): {md(', '.join(sheet_only))}.")
    checks = [("ok: " if check["ok"] else "**problem:** ") + md(check["text"]) for check in found.get("checks", [])]
    return section("Health", [paragraph(line), bullets(checks),
                              paragraph("A run's figures judged at its own points; `gpubench check` judges each at its "
                                        "plateau (docs/health-check.md). The ranges come from committed runs (`gpubench expected`), never the run "
                                        "judged, widened by the noise model's margin for each figure's kind "
                                        "(scripts/noise_model.json); the limits from scripts/gpu_datasheets.json.")])


def claims_section(document):
    answered = ((document.get("findings") or {}).get("claims") or {}).get("answered") or []
    return table_section("Claims, measured here", ["claim", "verdict", "on this machine"], answered, lambda row: [
        f"\"{md(row['claim'])}\" (*{md(row['source'])}*)", f"**{md(row['verdict'])}**", md(row["answer"])])


def first_screen(document):
    """The headline, health and claims, set apart at the top of the page."""
    blocks = headline_section(document) + health_section(document) + claims_section(document)
    return [Panel("first-screen", tuple(blocks))] if blocks else []
