"""The overlap study's plug-in (its findings, sections and plots): copies and computation in chunks on
several streams. Its findings: for each workload, host memory and n, the chunked pipelines
against the serial run and against the ideal, the larger of the total copy time (copy_only) and
the total compute time (compute_only) at the same number of chunks.

Entry axes in this study: impl = schedule, mode = host memory, precision = workload, n = array
dimension, batch = chunks. Time saved = serial time - pipelined time; fraction of the ideal =
ideal time / pipelined time (1 when the pipeline hides the shorter of copying and computing
completely). Each comparison of two times says whether they differ beyond noise (stats.beyond_spread):
a pipeline that saves time, one faster than the ideal, the best pipeline against the others."""
from gpubench_driver.lib import charts
from gpubench_driver.lib.document import paragraph
from gpubench_driver.lib.findings import group_by, grouped_failures, median_s, ok_entries
from gpubench_driver.lib.formatting import md, percent, seconds
from gpubench_driver.lib.registry import Study, no_rates
from gpubench_driver.lib.sections import failures_section, noise_note, table_section
from gpubench_driver.lib.stats import Interval, beyond_spread, median_interval, medians_differ

SERIAL = "serial"
COPY_ONLY, COMPUTE_ONLY = "copy_only", "compute_only"
PARTS = (SERIAL, COPY_ONLY, COMPUTE_ONLY)


def _apart(first, second):
    """Whether two entries' median times differ beyond noise (None without the second or an interval)."""
    return None if second is None else medians_differ(first["time_s"], second["time_s"])


def pipeline_rows(entries):
    """One row per pipelined entry (a streamsS schedule at some chunk count) whose serial run was
    measured: its time and its interval, the time saved and whether it is beyond noise, and the ideal
    and fraction of it where both the copy-only and the compute-only runs at its chunk count were
    measured, with whether the pipeline's time differs from the ideal's (the slower part's) beyond noise."""
    measured = [e for e in ok_entries(entries) if e.get("batch")]
    index = {(e["impl"], e["mode"], e["precision"], e["n"], e["batch"]): e for e in measured}
    rows = []
    for entry in sorted(measured, key=lambda e: (e["precision"], e["mode"], e["n"], e["impl"], e["batch"])):
        if entry["impl"] in PARTS:
            continue
        where = (entry["mode"], entry["precision"], entry["n"])
        serial = index.get((SERIAL, *where, 1))
        if serial is None:
            continue
        copies, compute = (index.get((part, *where, entry["batch"])) for part in (COPY_ONLY, COMPUTE_ONLY))
        slower_part = max(copies, compute, key=median_s) if copies and compute else None
        ideal = median_s(slower_part) if slower_part else None
        rows.append({"workload": entry["precision"], "memory": entry["mode"], "n": entry["n"],
                     "schedule": entry["impl"], "chunks": entry["batch"], "median_s": median_s(entry),
                     "interval_s": median_interval(entry["time_s"]).record(),
                     "serial_s": median_s(serial), "saved_s": median_s(serial) - median_s(entry),
                     "saved_fraction": (median_s(serial) - median_s(entry)) / median_s(serial),
                     "saved_beyond_noise": _apart(entry, serial),
                     "copy_s": median_s(copies) if copies else None,
                     "compute_s": median_s(compute) if compute else None, "ideal_s": ideal,
                     "fraction_of_ideal": ideal / median_s(entry) if ideal else None,
                     "ideal_beyond_noise": _apart(entry, slower_part)})
    return rows


def _tie(row):
    return {"schedule": row["schedule"], "chunks": row["chunks"], "median_s": row["median_s"]}


def best_rows(rows):
    """Per workload, memory and n: the fastest pipelined configuration, and in `ties` the others of
    its group it does not beat beyond noise (their intervals overlap, or one has none), fastest
    first: the best is a winner only when `ties` is empty."""
    groups = group_by(rows, lambda row: (row["workload"], row["memory"], row["n"]))
    best = []
    for key in sorted(groups):
        fastest, *others = sorted(groups[key], key=lambda row: row["median_s"])
        interval = Interval.of_record(fastest["interval_s"])
        best.append({**fastest, "ties": [_tie(row) for row in others
                                         if not beyond_spread(interval, Interval.of_record(row["interval_s"]))]})
    return best


def derive(entries):
    rows = pipeline_rows(entries)
    return {"pipelines": rows, "best": best_rows(rows), "failures": grouped_failures(entries)}


# --- summary.md -----------------------------------------------------------------------------------
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
    return table_section("Overlap: copies hidden behind compute", HEADER, derived.get("best") or [], _row, paragraph(
        "Ideal: the larger of the copy-only and the compute-only time at the same chunk count (the pipeline cannot "
        "beat it); fraction of the ideal = ideal / pipelined time. Ties within noise: the other configurations whose "
        "interval of the median time overlaps the best's (or which have none); the best is the winner only where "
        "there are none. \"Within noise\": the saving, or the pipeline's distance from the ideal, is inside the two "
        "runs' intervals; \"no interval\": one of them has none (one sample). Every configuration is in results.json "
        "and the plots."), empty="No pipeline was measured.")


def sections(study, document):
    return _best_pipelines(study["derived"]) + failures_section(study, "Overlap: skipped and failed entries")


# --- plots ----------------------------------------------------------------------------------------
def plots(pyplot, study, plot_dir):
    """One chart per workload, host memory and n: each schedule's time over the chunk count, with
    the serial run and the ideal (the larger of copy-only and compute-only time) beside them."""
    rows = study["derived"].get("pipelines", [])
    study_charts = []
    for workload, memory, n in dict.fromkeys((row["workload"], row["memory"], row["n"]) for row in rows):
        mine = [row for row in rows if (row["workload"], row["memory"], row["n"]) == (workload, memory, n)]
        series = {(schedule,): [(row["chunks"], row["median_s"]) for row in mine if row["schedule"] == schedule]
                  for schedule in dict.fromkeys(row["schedule"] for row in mine)}
        ideal = {row["chunks"]: row["ideal_s"] for row in mine}
        series[("ideal: max(copy-only, compute-only)",)] = sorted(ideal.items())
        study_charts += charts.line_charts(
            plot_dir, ("overlap", workload, memory, f"n{n}"),
            f"overlap: {workload}, {memory} host memory, n = {n}", series, ylabel="seconds per run (s)",
            xlabel="chunks (pieces the data is copied and computed in)",
            mark=charts.lines_mark(charts.across(mine[0]["serial_s"], "serial (one chunk, one stream)")))
    return charts.draw(pyplot, study_charts)


# --- the record -----------------------------------------------------------------------------------
# Its entries are whole pipelined runs: no rate on the progress line.
STUDY = Study(name="overlap", batch_axis=True, derive=lambda study, document, rounds: derive(study["entries"]),
              summary=sections, plots=plots, rates=no_rates,
              axes={"impl": "schedule", "mode": "host_memory", "precision": "workload", "batch": "chunks"}, position=70)
