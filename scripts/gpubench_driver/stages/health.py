"""The health check (docs/health-check.md): each headline figure with a direction against its model's expected
range (the committed runs, this run left out), below where even its interval's better end lies beyond the
range by more than the noise model's margin; and the run's records (PCIe link, power limit, clocks, ECC, other
processes) as the likely causes. Host-bound figures are judged but only the GPU's make the verdict."""
import math
import statistics

from gpubench_driver import studies
from gpubench_driver.lib import expected, noise_model, noise_verdicts
from gpubench_driver.lib.figures import datasheet_of, first_gpu, load_datasheets

AS_EXPECTED, BELOW, ABOVE, NOT_JUDGED = "as expected", "below expected", "above expected", "not judged"
DATASHEET_ONLY = "datasheet only"
MIN_RUNS = 3  # the fewest other runs whose values make a range: one run's range has no width
# The range's own runs bound a new run too: a figure whose runs scatter more than its kind's typical entry
# (a launch rate the host paces, an INT8 GEMM) gets a one-sided 99% prediction bound from them.
PREDICTION_LEVEL = 0.99

try:
    from scipy import stats as distributions
except ImportError:  # the kind's margin alone, as before (the health check runs without scipy)
    distributions = None
POWER_LIMIT_SHARE = 0.98  # a power limit under this share of the datasheet's is a lowered limit
# Figures the host paces as much as the GPU (pageable copies, the CPU's side and the crossovers against it)
# moved by 20-60% between hosts of one GPU model while the GPU figures held within a few percent
# (suite-time-20261124, results/ at 1d0dbe8): judged and shown, but they say nothing of the GPU's health.
HOST_CAUSE = ("host-bound: the host's CPU and memory pace this figure (pageable copies are staged by the CPU "
              "through host memory; the CPU side of a comparison is the host's), not the GPU")


def host_bound(row):
    return row.get("device") in ("cpu", "both") or row["key"] in studies.HOST_BOUND_FIGURES


def margin(row, model):
    """(the noise model's kind of the figure, how far beyond its range it may lie), from its entry's protocol
    and median time (between_runs), else from its 'timed as'."""
    between = row.get("between_runs") or {}
    protocol = between.get("protocol") or (row.get("timed_as") or "").split(":")[0] or None
    return noise_verdicts.range_margin(model, protocol, between.get("median_s"))


def judge(row, expected_figure, model, run_id=None):
    """{status, by, expected, runs, left_out, kind, margin}: a figure against its expected range ({values,
    runs}), the run run_id left out of it; DATASHEET_ONLY where fewer than MIN_RUNS values remain."""
    if row["better"] is None or not expected_figure:
        return {"status": NOT_JUDGED}
    sources = expected_figure.get("runs") or [None] * len(expected_figure["values"])
    values = [value for value, run in zip(expected_figure["values"], sources) if run is None or run != run_id]
    left_out = len(values) < len(expected_figure["values"])
    if len(values) < MIN_RUNS:
        return {"status": DATASHEET_ONLY, "runs": len(values), "left_out": left_out,
                "fraction_of_reference": row.get("fraction_of_reference")}
    kind, allowed = margin(row, model)
    low, high = min(values), max(values)
    sign = 1 if row["better"] == "higher" else -1
    allowed = max(allowed, prediction_margin(values, sign))
    best = row["high" if sign > 0 else "low"]
    worst_expected, best_expected = (low, high) if sign > 0 else (high, low)
    own_best = row["value"] if best is None else best
    if sign * (own_best - worst_expected * (1 - sign * allowed)) < 0:
        status = BELOW
    elif sign * (row["value"] - best_expected * (1 + sign * allowed)) > 0:
        status = ABOVE
    else:
        status = AS_EXPECTED
    median = statistics.median(values)
    by = abs(row["value"] / median - 1) if status != AS_EXPECTED else None
    return {"status": status, "by": by, "expected": {"min": low, "median": median, "max": high},
            "runs": len(values), "left_out": left_out, "kind": kind, "margin": allowed}


def prediction_margin(values, sign):
    """How far beyond the range's worst value a new run may lie by the range's own scatter: the one-sided
    PREDICTION_LEVEL bound of a new log value (Student's t, len(values) - 1 degrees of freedom) past the worst
    value, as a fraction of it; 0 without scipy or where the bound lies inside the range."""
    if distributions is None:
        return 0.0
    logs = [math.log(value) for value in values]
    half = (distributions.t.ppf(PREDICTION_LEVEL, len(logs) - 1) * statistics.stdev(logs)
            * math.sqrt(1 + 1 / len(logs)))
    if sign > 0:
        return max(0.0, 1 - math.exp(statistics.fmean(logs) - half) / min(values))
    return max(0.0, math.exp(statistics.fmean(logs) + half) / max(values) - 1)


# The checks: what the run recorded that would explain a shortfall.
def link_check(gpu, sheet):
    """The PCIe link the GPU and host allow against the model's; affects the copies."""
    generation, width = gpu.get("pcie.link.gen.max"), gpu.get("pcie.link.width.max")
    want = (sheet or {}).get("link")
    if generation is None or width is None or not want:
        return None
    ok = generation >= want["generation"] and width >= want["width"]
    return {"check": "link", "ok": ok, "affects": "link/",
            "text": f"PCIe link Gen{generation} x{width}" + ("" if ok else
                    f", below the model's Gen{want['generation']} x{want['width']}: host-device copies are capped "
                    "by the slower link (a riser, a slot wired for fewer lanes, a host of an older generation)")}


def power_check(gpu, sheet):
    limit, rated = gpu.get("power.limit"), (sheet or {}).get("power_limit_w")
    if limit is None or rated is None:
        return None
    ok = limit >= POWER_LIMIT_SHARE * rated
    return {"check": "power_limit", "ok": ok, "affects": "",
            "text": f"power limit {limit:.0f} W" + ("" if ok else f", below the model's {rated:.0f} W: "
                                                     "sustained rates fall with it")}


def clock_check(findings):
    rows, measured = findings.get("clock_limited") or [], (findings.get("telemetry") or {}).get("entries")
    if not measured:
        return None
    return {"check": "clocks", "ok": not rows, "affects": "rate/",
            "text": ("no entry held below 97% of its clock by a power cap or thermal slowdown" if not rows else
                     f"{len(rows)} of {measured} entries ran held down by a power cap or thermal slowdown (NVML)")}


def ecc_check(gpu):
    mode, errors = gpu.get("ecc.mode.current"), gpu.get("ecc.errors.uncorrected.volatile.total")
    if mode is None:
        return None
    ok = not errors
    text = f"ECC {mode}" + ("" if errors is None else f", {errors} uncorrected error(s) since the driver loaded")
    return {"check": "ecc", "ok": ok, "affects": "", "text": text + ("" if ok else ": the memory is failing")}


def process_check(machine):
    processes = machine.get("gpu_processes")
    if processes is None:
        return None
    return {"check": "processes", "ok": not processes, "affects": "",
            "text": "no other process on the GPU when the run started" if not processes else
                    f"{len(processes)} other process(es) on the GPU when the run started: they share it"}


def checks(document, sheet):
    gpu = first_gpu(document)
    found = [link_check(gpu, sheet), power_check(gpu, sheet), clock_check(document.get("findings") or {}),
             ecc_check(gpu), process_check(document.get("machine") or {})]
    return [check for check in found if check]


def _causes(row, found_checks):
    return [check["text"] for check in found_checks if not check["ok"] and row["key"].startswith(check["affects"])]


def derive_health(document, ranges=None, datasheets=None, model=None):
    """findings["health"]: the model, each judged figure, the checks and the verdict."""
    if not (document.get("gpu") or {}).get("available"):
        return {"verdict": NOT_JUDGED, "why": "the run has no GPU part", "figures": [], "checks": []}
    gpu = first_gpu(document)
    sheet = datasheet_of(document, load_datasheets() if datasheets is None else datasheets)
    try:
        ranges_model = (expected.load() if ranges is None else ranges).get(gpu.get("name"))
        model = model or noise_model.load()
    except (expected.ExpectedError, noise_model.NoiseModelError) as error:
        return {"verdict": NOT_JUDGED, "why": str(error), "figures": [], "checks": checks(document, sheet)}
    found_checks = checks(document, sheet)
    run_id = (document.get("run") or {}).get("id")
    figures = []
    for row in document["findings"]["headline"]["figures"]:
        verdict = judge(row, expected.figure_range(ranges_model, row), model, run_id)
        if verdict["status"] != NOT_JUDGED:
            bound = "host" if host_bound(row) else "gpu"
            causes = ([HOST_CAUSE] if bound == "host" else _causes(row, found_checks)) if verdict["status"] == BELOW else []
            figures.append({"key": row["key"], **verdict, "bound": bound, "causes": causes})
    judged = [row for row in figures if row["status"] != DATASHEET_ONLY]
    below = [row for row in judged if row["status"] == BELOW and row["bound"] == "gpu"]
    host_below = [row for row in judged if row["status"] == BELOW and row["bound"] == "host"]
    failing = [check for check in found_checks if not check["ok"]]
    source_runs = (ranges_model or {}).get("runs", [])
    runs = [run for run in source_runs if run.get("id") != run_id]
    left_out = run_id if len(runs) < len(source_runs) else None
    if ranges_model is not None and not figures:
        verdict, why = NOT_JUDGED, (f"none of the {len(runs)} committed run(s) of {gpu.get('name')} "
                                    f"{'other than this one ' if left_out else ''}measured its headline figures at "
                                    "the same points (sizes, batches)")
    elif ranges_model is not None and not judged:
        verdict, why = NOT_JUDGED, (f"every headline figure's range has fewer than {MIN_RUNS} committed runs of "
                                    f"{gpu.get('name')}{' other than this one' if left_out else ''} at its point: "
                                    "the headline gives each figure's fraction of the datasheet instead")
    elif ranges_model is None:
        verdict, why = NOT_JUDGED, (f"no committed runs of {gpu.get('name')} to set it against (scripts/"
                                    "expected_ranges.json); the headline gives each figure's fraction of the "
                                    "datasheet where the model is known")
    else:
        verdict = BELOW if below or failing else AS_EXPECTED
        why = (f"against {len(runs)} committed run(s) of {gpu.get('name')}"
               + (f", this run ({left_out}) left out of the ranges it is one of" if left_out else ""))
    return {"verdict": verdict, "why": why, "model": gpu.get("name"), "runs": runs, "left_out": left_out,
            "figures": figures, "checks": found_checks, "below": len(below), "host_below": len(host_below),
            "datasheet_only": len(figures) - len(judged), "failing_checks": len(failing)}


def verdict_line(found):
    """The health check in one line, for the end of a run's console output."""
    below = [row for row in found.get("figures", []) if row["status"] == BELOW]
    failing = [check["text"] for check in found.get("checks", []) if not check["ok"]]
    line = f"health check: {found['verdict']} ({found['why']})"
    for bound, label in (("gpu", "below"), ("host", "host-bound figures below")):
        keys = [row["key"] for row in below if row.get("bound", "gpu") == bound]
        if keys:
            line += f"; {label}: {', '.join(keys)}"
    if failing:
        line += f"; problems: {'; '.join(failing)}"
    return line
