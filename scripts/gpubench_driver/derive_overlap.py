"""Findings of the overlap study: for each workload, host memory and n, the chunked pipelines
against the serial run and against the ideal, the larger of the total copy time (copy_only) and
the total compute time (compute_only) at the same number of chunks.

Entry axes in this study: impl = schedule, mode = host memory, precision = workload, n = array
dimension, batch = chunks. Time saved = serial time - pipelined time; fraction of the ideal =
ideal time / pipelined time (1 when the pipeline hides the shorter of copying and computing
completely)."""
from gpubench_driver.derive import grouped_failures, ok_entries

SERIAL = "serial"
COPY_ONLY, COMPUTE_ONLY = "copy_only", "compute_only"
PARTS = (SERIAL, COPY_ONLY, COMPUTE_ONLY)


def _median(entry):
    return entry["time_s"]["median"]


def pipeline_rows(entries):
    """One row per pipelined entry (a streamsS schedule at some chunk count) whose serial run was
    measured: its time, the time saved, and the ideal and fraction of it where both the copy-only
    and the compute-only runs at its chunk count were measured."""
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
        ideal = max(_median(copies), _median(compute)) if copies and compute else None
        rows.append({"workload": entry["precision"], "memory": entry["mode"], "n": entry["n"],
                     "schedule": entry["impl"], "chunks": entry["batch"], "median_s": _median(entry),
                     "serial_s": _median(serial), "saved_s": _median(serial) - _median(entry),
                     "saved_fraction": (_median(serial) - _median(entry)) / _median(serial),
                     "copy_s": _median(copies) if copies else None,
                     "compute_s": _median(compute) if compute else None, "ideal_s": ideal,
                     "fraction_of_ideal": ideal / _median(entry) if ideal else None})
    return rows


def best_rows(rows):
    """Per workload, memory and n: the fastest pipelined configuration."""
    best = {}
    for row in rows:
        key = (row["workload"], row["memory"], row["n"])
        if key not in best or row["median_s"] < best[key]["median_s"]:
            best[key] = row
    return [best[key] for key in sorted(best)]


def derive(entries):
    rows = pipeline_rows(entries)
    return {"pipelines": rows, "best": best_rows(rows), "failures": grouped_failures(entries)}
