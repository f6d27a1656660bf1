"""Findings computed from the measured entries: crossovers, speedups, best rates."""
import math

REFINEMENT_RULE = ("the midpoint of each crossover's bracket is measured with the implementations fastest at "
                   "its ends; refinement stops when the bracket is narrower than max(8, 10% of its lower end)")


def ok_entries(entries):
    return [e for e in entries if e.get("status") == "ok" and e.get("n") and (e.get("time_s") or {}).get("median")]


def _median(entry):
    return entry["time_s"]["median"]


def best_by_size(entries):
    """{n: fastest entry at n} over the given entries."""
    best = {}
    for entry in entries:
        if entry["n"] not in best or _median(entry) < _median(best[entry["n"]]):
            best[entry["n"]] = entry
    return best


def cpu_entries(entries):
    return [e for e in ok_entries(entries) if e.get("device") == "cpu"]


def gpu_entries(entries, mode=None):
    return [e for e in ok_entries(entries) if e.get("device") == "gpu" and mode in (None, e.get("mode"))]


def gpu_modes(entries):
    return sorted({e["mode"] for e in gpu_entries(entries) if e.get("mode")})


# --- crossover ------------------------------------------------------------------------
def crossover(best_cpu, best_gpu, mode):
    """Where the GPU (best implementation of one mode) starts to beat the best CPU.

    lower: largest measured size at which the CPU is at least as fast; upper: smallest size
    from which the GPU wins at every larger measured size. Sizes measured on one side only
    are ignored."""
    sizes = sorted(set(best_cpu) & set(best_gpu))
    result = {"mode": mode, "lower": None, "upper": None, "estimate_n": None, "gpu_impl": None,
              "method": None, "note": None, "sizes_compared": sizes}
    if not sizes:
        result["method"] = "no size was measured on both the CPU and the GPU in this mode"
        return result
    gpu_wins = [_median(best_gpu[n]) < _median(best_cpu[n]) for n in sizes]
    if not gpu_wins[-1]:
        result["method"] = f"no crossover: the CPU is at least as fast at the largest measured size (n={sizes[-1]})"
        return result
    first = _first_of_final_run(gpu_wins)
    result["upper"] = sizes[first]
    result["gpu_impl"] = best_gpu[sizes[first]]["impl"]
    if first == 0:
        result["method"] = f"the GPU is faster at every measured size; the crossover is at or below n={sizes[0]}"
        return result
    lower = sizes[first - 1]
    result["lower"] = lower
    result["estimate_n"] = _interpolate(lower, sizes[first], _speedup(best_cpu, best_gpu, lower),
                                        _speedup(best_cpu, best_gpu, sizes[first]))
    result["method"] = "bracket of measured sizes; estimate by log-log interpolation of the speedup to 1"
    earlier = [n for n, won in zip(sizes[:first], gpu_wins[:first]) if won]
    if earlier:
        result["note"] = (f"the GPU was also faster at n={', '.join(map(str, earlier))} below the bracket "
                          f"(noisy or non-monotone)")
    return result


def _first_of_final_run(flags):
    """Index where the final run of True values starts (flags[-1] is True)."""
    index = len(flags) - 1
    while index > 0 and flags[index - 1]:
        index -= 1
    return index


def _speedup(best_cpu, best_gpu, n):
    return _median(best_cpu[n]) / _median(best_gpu[n])


def _interpolate(lower, upper, speedup_lower, speedup_upper):
    """Size at which log(speedup) crosses 0, linear in log(n) between the bracket ends."""
    low, high = math.log(speedup_lower), math.log(speedup_upper)
    if high <= low:
        return None
    fraction = -low / (high - low)
    return round(math.exp(math.log(lower) + fraction * (math.log(upper) - math.log(lower))))


def crossovers(entries):
    best_cpu = best_by_size(cpu_entries(entries))
    return [crossover(best_cpu, best_by_size(gpu_entries(entries, mode)), mode) for mode in gpu_modes(entries)]


def refinement_size(found):
    """Midpoint to measure next for one crossover, or None when its bracket is narrow enough."""
    lower, upper = found.get("lower"), found.get("upper")
    if lower is None or upper is None:
        return None
    if upper - lower < max(8, 0.1 * lower):
        return None
    middle = (lower + upper) // 2
    return middle if lower < middle < upper else None


def refinement_plan(entries):
    """{n: (impls, modes)} to measure next: each unresolved crossover's midpoint, with only
    the implementations that were fastest at its bracket ends (the candidates to win there)
    in the host mode and that crossover's GPU mode."""
    best_cpu = best_by_size(cpu_entries(entries))
    measured = {e["n"] for e in entries if e.get("n")}
    plan = {}
    for found in crossovers(entries):
        n = refinement_size(found)
        if n is None or n in measured:
            continue
        best_gpu = best_by_size(gpu_entries(entries, found["mode"]))
        impls, modes = plan.setdefault(n, (set(), set()))
        for end in (found["lower"], found["upper"]):
            impls.update((best_cpu[end]["impl"], best_gpu[end]["impl"]))
            modes.update((best_cpu[end]["mode"], found["mode"]))
    return {n: (sorted(impls), sorted(modes)) for n, (impls, modes) in sorted(plan.items())}


# --- speedups and rates ---------------------------------------------------------------
def speedups(entries):
    """Best-CPU time / GPU time for every GPU entry at a size the CPU side also measured."""
    best_cpu = best_by_size(cpu_entries(entries))
    rows = []
    for entry in sorted(gpu_entries(entries), key=lambda e: (e["n"], e["impl"], e["mode"])):
        cpu = best_cpu.get(entry["n"])
        if cpu:
            rows.append({"n": entry["n"], "impl": entry["impl"], "mode": entry["mode"],
                         "speedup": _median(cpu) / _median(entry), "best_cpu_impl": cpu["impl"]})
    return rows


def best_rates(entries, axes=("impl", "mode")):
    """Highest FLOP/s of each combination of the axes (implementation+mode by default) and the
    size where it was reached."""
    best = {}
    for entry in ok_entries(entries):
        if entry.get("flop_per_s") is None:
            continue
        key = tuple(entry[axis] for axis in axes)
        if key not in best or entry["flop_per_s"] > best[key]["flop_per_s"]:
            best[key] = {**{axis: entry[axis] for axis in axes}, "device": entry["device"],
                         "flop_per_s": entry["flop_per_s"], "n": entry["n"]}
    return sorted(best.values(), key=lambda row: (row["device"] or "", -row["flop_per_s"]))


def set_fraction_of_best_rate(entries):
    """Each entry's FLOP/s over the best FLOP/s measured on its device (cpu or gpu) in this run."""
    device_best = {}
    for row in best_rates(entries):
        device_best[row["device"]] = max(device_best.get(row["device"], 0.0), row["flop_per_s"])
    for entry in entries:
        best = device_best.get(entry.get("device"))
        rate = entry.get("flop_per_s")
        entry["fraction_of_best_rate"] = rate / best if entry.get("status") == "ok" and rate and best else None


def best_cpu_by_size(entries):
    return [{"n": n, "impl": entry["impl"], "median_s": _median(entry)}
            for n, entry in sorted(best_by_size(cpu_entries(entries)).items())]


def derive(entries, refinement_rounds):
    set_fraction_of_best_rate(entries)
    return {
        "crossovers": crossovers(entries),
        "refinement": {"rounds": refinement_rounds, "rule": REFINEMENT_RULE},
        "speedups": speedups(entries),
        "best_rates": best_rates(entries),
        "best_cpu_by_size": best_cpu_by_size(entries),
    }
