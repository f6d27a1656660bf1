"""The figures `gpubench check` reads from one study's entries at its check points (lib/registry.CheckPoint), in
the form of every headline figure (lib/figures.figure), its `where` the entry's point, so that expected ranges
from check runs and from suite runs at the same point judge it alike."""
from gpubench_driver.lib import stats
from gpubench_driver.lib.figures import LATENCY, THROUGHPUT, between_runs, figure, inverse, where_text
from gpubench_driver.lib.findings import ok_entries

POINT_AXES = ("impl", "mode", "precision", "n", "batch")


def entries_at(study, device="gpu", **axes):
    """The ok entries of a study record on `device` whose axes have the values given (n=8192, impl="cublas")."""
    return [entry for entry in ok_entries(study.get("entries") or [])
            if entry.get("device") == device and all(entry.get(axis) == value for axis, value in axes.items())]


def of_entry(row, entry):
    """A figure with the name of the entry it was read from, which the check reports the measurement of."""
    return {**row, "entry": entry["name"]}


def timed_as(entry):
    return LATENCY if entry.get("protocol") == "latency" else THROUGHPUT


def _entry_figure(study_name, entry, key, label, value, interval, unit, better, reference=None, where=None,
                  scales="rate"):
    """A figure of the entry at its point (figures.figure), named by it (of_entry)."""
    where = where or where_text({"study": study_name, **{axis: entry.get(axis) for axis in POINT_AXES}})
    return of_entry(figure(key, label, value, interval, unit, better, timed_as(entry), where, reference,
                           between_runs=between_runs(entry, value, scales)), entry)


def rate_figure(study_name, entry, key, label, reference):
    """The entry's FLOP/s (OP/s for INT8) with its interval; reference: {"value", "what"} or None."""
    flop = entry["flop_per_s"] * entry["time_s"]["median"]
    unit = "OP/s" if entry.get("precision") == "int8" else "FLOP/s"
    return _entry_figure(study_name, entry, key, label, entry["flop_per_s"],
                         inverse(flop, stats.median_interval(entry["time_s"])), unit, "higher", reference)


def bandwidth_figure(study_name, entry, key, label, bytes_per_call, reference, where=None):
    """bytes_per_call over the entry's median time, in B/s, with its interval."""
    value = bytes_per_call / entry["time_s"]["median"]
    interval = inverse(bytes_per_call, stats.median_interval(entry["time_s"]))
    return _entry_figure(study_name, entry, key, label, value, interval, "B/s", "higher", reference, where)


def roof_figures(roof):
    """The check figures of a study that measures the memory roof, against the datasheet's bandwidth."""
    def figures(study, document, sheet):
        found, _ = roof.bandwidth(study)
        entry = next((entry for entry in ok_entries(study.get("entries") or []) if found and all(
            entry.get(axis) == found.get(axis) for axis in POINT_AXES if axis != "batch")), None)
        if entry is None:
            return []
        rate = (sheet or {}).get("memory_bytes_per_s")
        interval = inverse(found["bytes_per_call"], stats.median_interval(entry["time_s"]))
        return [of_entry(roof.figure(found, entry, interval, {"value": rate, "what": "datasheet"} if rate else None),
                         entry)]
    return figures


def time_figure(study_name, entry, key, label, per=1):
    """The entry's median time per call over `per` (the items one call does), in s, with its interval."""
    interval = stats.median_interval(entry["time_s"]).per(per)
    value = entry["time_s"]["median"] / per
    return _entry_figure(study_name, entry, key, label, value,
                         (interval.low, interval.high) if interval.known else (None, None), "s", "lower", scales="time")
