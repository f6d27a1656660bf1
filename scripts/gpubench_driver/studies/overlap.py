"""The overlap study's plug-in: copies and computation in chunks on several streams, each pipeline against the
serial run and against the ideal, the larger of the copy-only and the compute-only time at its chunk count
(docs/studies.md, overlap). Axes: impl = schedule, mode = host memory, precision = workload, batch = chunks."""
from gpubench_driver.lib import charts
from gpubench_driver.lib.document import paragraph
from gpubench_driver.lib.findings import group_by, grouped_failures, interval_record, median_s, ok_entries
from gpubench_driver.lib.formatting import md, percent, seconds
from gpubench_driver.lib.registry import Study, no_rates
from gpubench_driver.lib.sections import failures_section, noise_note, table_section
from gpubench_driver.lib.stats import Interval, beyond_spread, medians_differ

SERIAL = "serial"
COPY_ONLY, COMPUTE_ONLY = "copy_only", "compute_only"
PARTS = (SERIAL, COPY_ONLY, COMPUTE_ONLY)


def _apart(first, second):
    """Whether two entries' median times differ beyond noise (None without the second or an interval)."""
    return None if second is None else medians_differ(first["time_s"], second["time_s"])


def pipeline_rows(entries):
    """One row per pipelined entry with a serial run: the time saved, the ideal and its fraction, if measured."""
    measured = [e for e in ok_entries(entries) if e.get("batch")]
    index = {(e["impl"], e["mode"], e["precision"], e["n"], e["batch"]): e for e in measured}
    rows = []
    for entry in sorted(measured, key=lambda e: (e["precision"], e["mode"], e["n"], e["impl"], e["batch"])):
        where = (entry["mode"], entry["precision"], entry["n"])
        serial = index.get((SERIAL, *where, 1))
        if entry["impl"] in PARTS or serial is None:
            continue
        copies, compute = (index.get((part, *where, entry["batch"])) for part in (COPY_ONLY, COMPUTE_ONLY))
        slower_part = max(copies, compute, key=median_s) if copies and compute else None
        ideal = median_s(slower_part) if slower_part else None
        rows.append({"workload": entry["precision"], "memory": entry["mode"], "n": entry["n"],
                     "schedule": entry["impl"], "chunks": entry["batch"], "median_s": median_s(entry),
                     "interval_s": interval_record(entry),
                     "serial_s": median_s(serial), "saved_s": median_s(serial) - median_s(entry),
                     "saved_fraction": (median_s(serial) - median_s(entry)) / median_s(serial),
                     "saved_beyond_noise": _apart(entry, serial),
                     "copy_s": median_s(copies) if copies else None,
                     "compute_s": median_s(compute) if compute else None, "ideal_s": ideal,
                     "fraction_of_ideal": ideal / median_s(entry) if ideal else None,
                     "ideal_beyond_noise": _apart(entry, slower_part)})
    return rows


def best_rows(rows):
    """Per workload, memory and n: the fastest pipeline, with the others within its noise as `ties`."""
    groups = group_by(rows, lambda row: (row["workload"], row["memory"], row["n"]))
    best = []
    for key in sorted(groups):
        fastest, *others = sorted(groups[key], key=lambda row: row["median_s"])
        interval = Interval.of_record(fastest["interval_s"])
        best.append({**fastest, "ties": [{key: row[key] for key in ("schedule", "chunks", "median_s")} for row in others
                                         if not beyond_spread(interval, Interval.of_record(row["interval_s"]))]})
    return best


def derive(entries):
    rows = pipeline_rows(entries)
    return {"pipelines": rows, "best": best_rows(rows), "failures": grouped_failures(entries)}


HEADER = ("workload", "host memory", "n", "serial", "best pipeline", "ties within noise", "time saved", "ideal",
          "fraction of the ideal")


def _pipeline(row):
    return f"{md(row['schedule'])}, {row['chunks']} chunks"


def _row(row):
    interval = row["interval_s"]
    unknown = "" if interval["low"] is not None else f"; {md(interval['basis'])}"
    ties = "; ".join(f"{_pipeline(tie)} ({seconds(tie['median_s'])})" for tie in row["ties"]) or "none"
    saved = f"{seconds(row['saved_s'])} ({row['saved_fraction']:.0%}{noise_note(row['saved_beyond_noise'])})"
    fraction = percent(row["fraction_of_ideal"], 0)
    if row["ideal_s"] is not None:
        fraction += noise_note(row["ideal_beyond_noise"])
    return [md(row["workload"]), md(row["memory"]), str(row["n"]), seconds(row["serial_s"]),
            f"{seconds(row['median_s'])} ({_pipeline(row)}{unknown})", ties, saved, seconds(row["ideal_s"]), fraction]


NOTE = ("Ideal: the larger of the copy-only and the compute-only time at the same chunk count (the pipeline cannot "
        "beat it); fraction of the ideal = ideal / pipelined time. Ties within noise: the other configurations whose "
        "interval of the median time overlaps the best's (or which have none); the best is the winner only where "
        "there are none. \"Within noise\": the saving, or the pipeline's distance from the ideal, is inside the two "
        "runs' intervals; \"no interval\": one of them has none (one sample). Every configuration is in results.json "
        "and the plots.")


def sections(study, document):
    return (table_section("Overlap: copies hidden behind compute", HEADER, study["derived"].get("best") or [], _row,
                          paragraph(NOTE), empty="No pipeline was measured.")
            + failures_section(study, "Overlap: skipped and failed entries"))


def plots(pyplot, study, plot_dir):
    """Per workload, host memory and n: each schedule's time over the chunks, the serial run and the ideal."""
    study_charts = []
    for (workload, memory, n), mine in group_by(study["derived"].get("pipelines", []),
                                                lambda row: (row["workload"], row["memory"], row["n"])).items():
        series = {(schedule,): [(row["chunks"], row["median_s"]) for row in rows]
                  for schedule, rows in group_by(mine, lambda row: row["schedule"]).items()}
        ideal = {row["chunks"]: row["ideal_s"] for row in mine}
        series[("ideal: max(copy-only, compute-only)",)] = sorted(ideal.items())
        study_charts += charts.line_charts(
            plot_dir, ("overlap", workload, memory, f"n{n}"),
            f"overlap: {workload}, {memory} host memory, n = {n}", series, ylabel="seconds per run (s)",
            xlabel="chunks (pieces the data is copied and computed in)",
            mark=charts.lines_mark(charts.across(mine[0]["serial_s"], "serial (one chunk, one stream)")))
    return charts.draw(pyplot, study_charts)


# Its entries are whole pipelined runs: no rate on the progress line.
STUDY = Study(name="overlap", batch_axis=True, derive=lambda study, document, rounds: derive(study["entries"]),
              summary=sections, plots=plots, rates=no_rates,
              axes={"impl": "schedule", "mode": "host_memory", "precision": "workload", "batch": "chunks"}, position=70)
