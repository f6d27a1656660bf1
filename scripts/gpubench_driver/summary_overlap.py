"""summary.md: the overlap study's sections, from its `derived` (derive_overlap.py)."""
from gpubench_driver.lib.sections import grouped_failures, noise_note
from gpubench_driver.lib.document import paragraph, section, table
from gpubench_driver.lib.formatting import md, percent, seconds

HEADER = ("workload", "host memory", "n", "serial", "best pipeline", "ties within noise", "time saved", "ideal",
          "fraction of the ideal")


def _pipeline(row):
    return f"{md(row['schedule'])}, {row['chunks']} chunks"


def _best(row):
    interval = row["interval_s"]
    unknown = "" if interval["low"] is not None else f"; {md(interval['basis'])}"
    return f"{seconds(row['median_s'])} ({_pipeline(row)}{unknown})"


def _ties(row):
    return "; ".join(f"{_pipeline(tie)} ({seconds(tie['median_s'])})" for tie in row["ties"]) or "none"


def _row(row):
    saved = f"{seconds(row['saved_s'])} ({row['saved_fraction']:.0%}{noise_note(row['saved_beyond_noise'])})"
    fraction = percent(row["fraction_of_ideal"], 0)
    if row["ideal_s"] is not None:
        fraction += noise_note(row["ideal_beyond_noise"])
    return [md(row["workload"]), md(row["memory"]), str(row["n"]), seconds(row["serial_s"]), _best(row), _ties(row),
            saved, seconds(row["ideal_s"]), fraction]


def _best_pipelines(derived):
    rows = derived.get("best") or []
    title = "Overlap: copies hidden behind compute"
    if not rows:
        return section(title, [paragraph("No pipeline was measured.")])
    return section(title, [table(HEADER, map(_row, rows)), paragraph(
        "Ideal: the larger of the copy-only and the compute-only time at the same chunk count (the pipeline cannot "
        "beat it); fraction of the ideal = ideal / pipelined time. Ties within noise: the other configurations whose "
        "interval of the median time overlaps the best's (or which have none); the best is the winner only where "
        "there are none. \"Within noise\": the saving, or the pipeline's distance from the ideal, is inside the two "
        "runs' intervals; \"no interval\": one of them has none (one sample). Every configuration is in results.json "
        "and the plots.")])


def sections(study, document):
    return _best_pipelines(study["derived"]) + grouped_failures(study, "Overlap: skipped and failed entries")
