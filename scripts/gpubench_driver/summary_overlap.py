"""summary.md: the overlap study's sections, from its `derived` (derive_overlap.py)."""
from gpubench_driver.document import paragraph, section, table
from gpubench_driver.formatting import md, percent, seconds
from gpubench_driver.summary_common import grouped_failures

HEADER = ("workload", "host memory", "n", "serial", "best pipeline", "time saved", "ideal", "fraction of the ideal")


def _row(row):
    fraction = row["fraction_of_ideal"]
    return [md(row["workload"]), md(row["memory"]), str(row["n"]), seconds(row["serial_s"]),
            f"{seconds(row['median_s'])} ({md(row['schedule'])}, {row['chunks']} chunks)",
            f"{seconds(row['saved_s'])} ({row['saved_fraction']:.0%})", seconds(row["ideal_s"]),
            percent(fraction, 0)]


def _best(derived):
    rows = derived.get("best") or []
    title = "Overlap: copies hidden behind compute"
    if not rows:
        return section(title, [paragraph("No pipeline was measured.")])
    return section(title, [table(HEADER, map(_row, rows)), paragraph(
        "Ideal: the larger of the copy-only and the compute-only time at the same chunk count (the pipeline cannot "
        "beat it); fraction of the ideal = ideal / pipelined time. Every configuration is in results.json and the "
        "plots.")])


def sections(study, document):
    return _best(study["derived"]) + grouped_failures(study, "Overlap: skipped and failed entries")
