"""The headline (findings["headline"]): the figures a reader of a run would publish, each with its entry's
interval over the trials carried through the same arithmetic, how it was timed and what it is measured against.
First the roofline's roofs (each precision's peak, the memory bandwidth), then the plug-ins' (Study.headline)."""
from gpubench_driver import studies
from gpubench_driver.lib import stats
from gpubench_driver.lib.figures import (PRECISIONS, PRECISION_NAMES, THROUGHPUT, between_runs, datasheet_of, entry_of,
                                         figure, inverse, load_datasheets, where_text)

# The kinds of figure the plug-ins contribute, in the page's order: the host-device links, from which size the
# GPU beats the CPU, a training epoch, the energy of one GEMM.
KINDS = ("link", "crossover", "epoch", "energy")


def peak_rates(document, sheet):
    """Per format, the measured peak (the highest sustained rate of any GPU entry) against the datasheet."""
    peaks = {row["precision"]: row for row in document["findings"]["roofline"]["peaks"]}
    found = []
    for precision in PRECISIONS:
        row = peaks.get(precision)
        entry = entry_of(document, row) if row else None
        if entry is None:
            continue
        flop = entry["flop_per_s"] * entry["time_s"]["median"]
        # An entry that says it ran on the CUDA cores alone is held to the datasheet's rate without tensor cores.
        plain = entry.get("tensor_cores") == 0
        rates = (sheet or {}).get("peak_flop_per_s_without_tensor_cores" if plain else "peak_flop_per_s", {})
        peak = rates.get(precision)
        what = "datasheet, without tensor cores" if plain else "datasheet (dense)"
        unit = "OP/s" if precision == "int8" else "FLOP/s"
        found.append(figure(f"rate/{precision}", f"{PRECISION_NAMES[precision]} peak rate", row["flop_per_s"],
                            inverse(flop, stats.median_interval(entry["time_s"])), unit, "higher", THROUGHPUT,
                            where_text(row), {"value": peak, "what": what} if peak else None,
                            between_runs=between_runs(entry, row["flop_per_s"])))
    return found


def memory_bandwidth(document, sheet):
    """Device memory bandwidth, the roofline's memory roof, as the study that measured it words it."""
    found = document["findings"]["roofline"].get("bandwidth")
    entry = entry_of(document, found) if found else None
    if entry is None:
        return []
    bytes_moved = found.get("bytes_per_call") or 2 * entry["bytes_transferred"]
    interval = inverse(bytes_moved, stats.median_interval(entry["time_s"]))
    sheet_rate = (sheet or {}).get("memory_bytes_per_s")
    reference = {"value": sheet_rate, "what": "datasheet"} if sheet_rate else None
    return [studies.BY_NAME[found["study"]].memory_roof.figure(found, entry, interval, reference)]


def derive_headline(document, datasheets=None):
    """findings["headline"]: the datasheet the run is set against and the figures, in the page's order."""
    if not (document.get("findings") or {}).get("roofline"):
        return {"datasheet": None, "figures": []}
    sheet = datasheet_of(document, load_datasheets() if datasheets is None else datasheets)
    contributed = sorted(((kind, figures) for record in studies.STUDIES for kind, figures in record.headline),
                         key=lambda item: KINDS.index(item[0]))  # a kind not in KINDS is an error
    figures = (peak_rates(document, sheet) + memory_bandwidth(document, sheet)
               + [row for _, rows in contributed for row in rows(document)])
    return {"datasheet": {"model": sheet["model"], "source": sheet["source"]} if sheet else None,
            "figures": figures}
