"""Findings of the mandelbrot study: per configuration (image, iteration limit, precision), the GPU
against compiled C++ on one core and on all cores, with the counts left on the device (the kernel
alone) and copied back; the rates in pixels and iterations per second; how warp-uniform the work is;
the pixels a contracted (FMA) kernel counts differently; and the guide's claim (4.07 s on one CPU core
in interpreted Python against 0.0046 s of GPU kernel, 885x) beside the ratios measured at its
configuration.

Entry axes: impl, mode (host; resident, transfer_pageable), precision (fp32, fp64), n the image's
rows (every image is the guide's region at another resolution, 1.5 n pixels wide), batch its iteration
limit. What an entry knows comes from its counters: width, height,
escape_iterations (what the formula ran over the image), flop, warp_divergence (GPU entries),
differing_pixels and max_count_difference (against the CPU's counts), threads (CPU entries)."""
from gpubench_driver.lib.findings import gpu_entries, gpu_modes, grouped_failures, ok_entries
from gpubench_driver.lib.stats import median_interval

# The guide's published configuration and figures (the issue that asked for this study).
GUIDE = {"width": 1536, "height": 1024, "max_iterations": 20, "precision": "fp64",
         "cpu_s": 4.07, "gpu_s": 0.0046, "ratio": 885,
         "cpu": "interpreted Python on one core", "gpu": "the kernel alone, 16 x 16-thread blocks, no copy back"}
RESIDENT, COPY_BACK = "resident", "transfer_pageable"
ONE_CORE, ALL_CORES = "one_core", "all_cores"


def _median(entry):
    return entry["time_s"]["median"]


def _pixels(entry):
    """The image's pixels from its width and height counters; None without them."""
    width, height = entry.get("width"), entry.get("height")
    return width * height if width and height else None


def _per_pixel(value, entry):
    pixels = _pixels(entry)
    return value / pixels if value is not None and pixels else None


def _per_second(count, entry):
    return count / _median(entry) if count else None


def _configuration(entry):
    return entry["n"], entry["batch"], entry["precision"]


def is_guide(row):
    """Whether a configuration row is the guide's: its image, iteration limit and precision."""
    return (row["width"], row["height"], row["max_iterations"], row["precision"]) == (
        GUIDE["width"], GUIDE["height"], GUIDE["max_iterations"], GUIDE["precision"])


def _side(entry):
    return {"impl": entry["impl"], "median_s": _median(entry), "interval_s": median_interval(entry["time_s"]).record()}


def _cores(entry):
    return ONE_CORE if entry.get("threads") == 1 else ALL_CORES


def _fastest(entries):
    return min(entries, key=_median) if entries else None


def _contraction(members, contracted):
    """Per GPU mode and contracted implementation: the fastest separately rounded GPU entry's time over
    its time (above 1: contraction is faster)."""
    found = []
    for mode in gpu_modes(members):
        measured = gpu_entries(members, mode)
        separate = _fastest([e for e in measured if e["impl"] not in contracted])
        for entry in (e for e in measured if e["impl"] in contracted):
            if separate:
                found.append({"mode": mode, "impl": entry["impl"], "separate_impl": separate["impl"],
                              "speedup": _median(separate) / _median(entry)})
    return found


def _configuration_row(members, contracted):
    """One configuration's findings from its ok entries."""
    first = members[0]
    cpu = {cores: _fastest([e for e in members if e["device"] == "cpu" and _cores(e) == cores])
           for cores in (ONE_CORE, ALL_CORES)}
    gpu = {}
    for mode in gpu_modes(members):
        best = _fastest(gpu_entries(members, mode))
        gpu[mode] = {**_side(best), **{f"over_{cores}": _median(found) / _median(best)
                                       for cores, found in cpu.items() if found}}
    kernels = [{"impl": e["impl"], "mode": e["mode"], "median_s": _median(e),
                "differing_pixels": e.get("differing_pixels"), "max_count_difference": e.get("max_count_difference"),
                "allowed_differing_pixels": e.get("allowed_differing_pixels"),
                "differing_fraction": _per_pixel(e.get("differing_pixels"), e)}
               for e in sorted(gpu_entries(members), key=lambda e: (e["impl"], e["mode"]))]
    divergence = next((e["warp_divergence"] for e in members if e.get("warp_divergence") is not None), None)
    iterations = first.get("escape_iterations")
    return {"n": first["n"], "max_iterations": first["batch"], "precision": first["precision"],
            "width": first.get("width"), "height": first.get("height"), "escape_iterations": iterations,
            "iterations_per_pixel": _per_pixel(iterations, first), "warp_divergence": divergence,
            "cpu": {cores: _side(found) for cores, found in cpu.items() if found}, "gpu": gpu, "kernels": kernels,
            "contraction": _contraction(members, contracted)}


def contracted_ids(implementations):
    """The implementations whose arithmetic contracts multiply-adds (--describe's `contracted`)."""
    return {impl.get("id") for impl in implementations or [] if isinstance(impl, dict) and impl.get("contracted")}


def configurations(entries, contracted=frozenset()):
    """One row per configuration measured, in size, limit and precision order."""
    groups = {}
    for entry in ok_entries(entries):
        groups.setdefault(_configuration(entry), []).append(entry)
    return [_configuration_row(members, contracted) for _, members in sorted(groups.items())]


def rates(entries):
    """Per implementation, mode, precision and iteration limit: pixels and iterations per second over n (rows)."""
    found = {}
    for entry in ok_entries(entries):
        found.setdefault((entry["impl"], entry["device"], entry["mode"], entry["precision"], entry["batch"]),
                         []).append(entry)
    return [{"impl": impl, "device": device, "mode": mode, "precision": precision, "max_iterations": limit,
             "points": [{"n": e["n"], "median_s": _median(e), "interval_s": median_interval(e["time_s"]).record(),
                         "pixels_per_s": _per_second(_pixels(e), e),
                         "iterations_per_s": _per_second(e.get("escape_iterations"), e)}
                        for e in sorted(members, key=lambda e: e["n"])]}
            for (impl, device, mode, precision, limit), members in sorted(found.items())]


def guide_claim(rows):
    """The guide's figures beside the ratios measured at its configuration: the GPU (kernel alone, and
    with the counts copied back) against compiled C++ on one core and on all cores; and the guide's
    CPU time over this machine's one compiled core (how much of the 885x the interpreter was, on
    another CPU of the guide's day). None when the configuration was not measured."""
    row = next((row for row in rows if is_guide(row)), None)
    if row is None:
        return None
    one_core = row["cpu"].get(ONE_CORE)
    return {"guide": GUIDE, "configuration": row,
            "ratios": {mode: {cores: found.get(f"over_{cores}") for cores in (ONE_CORE, ALL_CORES)}
                       for mode, found in row["gpu"].items()},
            "interpreter_factor": GUIDE["cpu_s"] / one_core["median_s"] if one_core else None}


def derive(entries, implementations=()):
    rows = configurations(entries, contracted_ids(implementations))
    return {"configurations": rows, "rates": rates(entries), "guide_claim": guide_claim(rows),
            "failures": grouped_failures(entries)}
