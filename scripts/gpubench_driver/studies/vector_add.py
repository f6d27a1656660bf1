"""Findings of the vector_add study (C = A + B, FP32): per size, the best CPU against the GPU with the
data resident and with A and B copied in and C out in every call; what the copies cost against the
CPU's whole computation; the rate of every implementation; and the study's expected finding (for one
memory-bound operation the copies cost more than the CPU's whole computation at every size, and the
GPU pays off only when the data stays resident), each part of it computed from the entries.

Entry axes: impl, mode (host on the CPU; resident, transfer_pinned, transfer_pageable on the GPU),
precision fp32, n the elements per vector. A GPU entry with resident data is timed on the device
clock (its kernel alone); a transfer entry on the host clock from the call to its completion; a CPU
entry on the host clock. The copies' cost at a size is the transfer entry's time less its
implementation's resident time there: the copies with their latency and the synchronisation."""
from gpubench_driver.lib.findings import (best_by_size, cpu_entries, crossovers, gpu_entries, gpu_modes,
                                    grouped_failures, ok_entries)
from gpubench_driver.lib.stats import median_interval, medians_differ

RESIDENT = "resident"
TRANSFER_MODES = ("transfer_pinned", "transfer_pageable")


def _median(entry):
    return entry["time_s"]["median"]


def _point(entry):
    """An entry as a point of its series: time, its interval, elements and device (or host) memory bytes per second."""
    median = _median(entry)
    traffic = (entry.get("memory_read_bytes") or 0) + (entry.get("memory_written_bytes") or 0)
    return {"n": entry["n"], "median_s": median, "interval_s": median_interval(entry["time_s"]).record(),
            "elements_per_s": entry["n"] / median, "memory_bytes_per_s": traffic / median if traffic else None,
            "link_bytes_per_s": entry["bytes_transferred"] / median if entry.get("bytes_transferred") else None}


def series(entries):
    """Per implementation and mode, its points in size order."""
    found = {}
    for entry in ok_entries(entries):
        found.setdefault((entry["impl"], entry["device"], entry["mode"]), []).append(entry)
    return [{"impl": impl, "device": device, "mode": mode,
             "points": [_point(entry) for entry in sorted(members, key=lambda entry: entry["n"])]}
            for (impl, device, mode), members in sorted(found.items(), key=lambda item: (item[0][1], item[0]))]


def _side(entry):
    return {"impl": entry["impl"], "median_s": _median(entry), "interval_s": median_interval(entry["time_s"]).record()}


def _against_cpu(cpu, gpu):
    """The GPU entry beside the best CPU one: speedup (CPU time / GPU time) and whether the two differ beyond noise."""
    return {**_side(gpu), "speedup": _median(cpu) / _median(gpu), "beyond_noise": medians_differ(gpu["time_s"],
                                                                                                  cpu["time_s"])}


def _copies(transfer, resident, cpu):
    """What the copies of a transfer entry cost: its time less its implementation's resident time."""
    copy_s = _median(transfer) - _median(resident)
    return {"impl": transfer["impl"], "copy_s": copy_s, "over_cpu": copy_s / _median(cpu),
            "link_bytes": transfer.get("bytes_transferred")}


def comparison(entries):
    """Per size the CPU side measured: the best CPU entry, the best GPU entry of each mode against it,
    and the copies' cost of each transfer mode against the CPU's whole time."""
    best_cpu = best_by_size(cpu_entries(entries))
    best_gpu = {mode: best_by_size(gpu_entries(entries, mode)) for mode in gpu_modes(entries)}
    resident = {(entry["impl"], entry["n"]): entry for entry in gpu_entries(entries, RESIDENT)}
    rows = []
    for n, cpu in sorted(best_cpu.items()):
        gpu = {mode: _against_cpu(cpu, found[n]) for mode, found in best_gpu.items() if n in found}
        copies = {}
        for mode in TRANSFER_MODES:
            transfer = best_gpu.get(mode, {}).get(n)
            if transfer and (transfer["impl"], n) in resident:
                copies[mode] = _copies(transfer, resident[(transfer["impl"], n)], cpu)
        rows.append({"n": n, "cpu": _side(cpu), "gpu": gpu, "copies": copies})
    return rows


def expected_finding(rows):
    """The study's expected finding, part by part, from the comparison rows: per transfer mode whether
    the copies cost more than the CPU's whole computation at every size compared (and where not), the
    sizes where the GPU is faster than the best CPU beyond noise with the data resident and with each
    transfer mode; `holds` when the copies cost more everywhere, the GPU with copies never wins and
    the resident GPU wins somewhere. None when no size has both sides."""
    compared = [row for row in rows if row["gpu"]]
    if not compared:
        return None
    copies = {}
    for mode in TRANSFER_MODES:
        shares = {row["n"]: row["copies"][mode]["over_cpu"] for row in compared if mode in row["copies"]}
        if shares:
            cheaper = [n for n, share in shares.items() if share <= 1]
            copies[mode] = {"sizes_compared": list(shares), "more_than_cpu_everywhere": not cheaper,
                            "sizes_cheaper_than_cpu": cheaper, "least_over_cpu": min(shares.values()),
                            "most_over_cpu": max(shares.values())}
    wins = {mode: [row["n"] for row in compared if mode in row["gpu"] and row["gpu"][mode]["speedup"] > 1
                   and row["gpu"][mode]["beyond_noise"] is not False]
            for mode in dict.fromkeys(mode for row in compared for mode in row["gpu"])}
    transfer_wins = [n for mode in TRANSFER_MODES for n in wins.get(mode, [])]
    holds = (bool(copies) and all(found["more_than_cpu_everywhere"] for found in copies.values())
             and not transfer_wins and bool(wins.get(RESIDENT)))
    return {"copies": copies, "gpu_wins": wins, "holds": holds}


def derive(entries):
    rows = comparison(entries)
    return {
        "series": series(entries),
        "comparison": rows,
        "crossovers": crossovers(entries),
        "expected_finding": expected_finding(rows),
        "failures": grouped_failures(entries),
    }
