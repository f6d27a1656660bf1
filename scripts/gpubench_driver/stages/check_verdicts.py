"""The verdicts of `gpubench check` (docs/health-check.md): each figure against its model's expected range,
else the datasheet fraction healthy GPUs reached, else its peers' median; the machine checks (clocks, power
limit, PCIe link, ECC, other processes); a verdict per GPU and the check's, with its exit status."""
import functools

from gpubench_driver.lib import environment, expected, noise_model
from gpubench_driver.lib.formatting import percent
from gpubench_driver.lib.measurements import CLOCK_LIMITED_CLOCK
from gpubench_driver.stages import health

HEALTHY, BELOW, NOT_JUDGED = "healthy", "below", "not judged"
EXIT_STATUS = {HEALTHY: 0, BELOW: 1, NOT_JUDGED: 2}
# Worst first: a figure below decides even where others could not be judged.
SEVERITY = (BELOW, NOT_JUDGED, HEALTHY)
TOGETHER_MARK = " checked at once"
TOGETHER = ", {together}" + TOGETHER_MARK
EXPECTED_RANGE, DATASHEET_FRACTION, PEER_MEDIAN = "expected range", "datasheet fraction", "median of its peers"
NO_BASIS = ("no expected range of this model and no recorded datasheet fraction of healthy GPUs at this point "
            "(record check runs of healthy GPUs: gpubench expected CHECK_DIR/check.json)")
LIMITED = 0.5  # an entry whose telemetry saw a limit active in at least this share of its readings was held by it
CLOCK_PROTOCOL = "throughput"  # device-timed, back-to-back calls: the GPU busy throughout, its clock its own


def model_key(name, together=1):
    """A GPU model's key in the ranges file; checked beside others it is a model of its own ("<name>, 8
    checked at once")."""
    return name if together == 1 else f"{name}{TOGETHER.format(together=together)}"


def _together(key):
    """', N checked at once' of a model key (model_key), '' for a GPU checked alone."""
    return ", " + key.rpartition(", ")[2] if key.endswith(TOGETHER_MARK) else ""


def _same_conditions(models, key):
    """The models whose key says the same number of GPUs checked at once as `key`."""
    return {name: model for name, model in models.items() if _together(name) == _together(key)}


@functools.lru_cache(maxsize=1)
def noise():
    """The noise model (scripts/noise_model.json) the margins are read from, loaded once."""
    return noise_model.load()


def judge_figure(row, model_name, models):
    """{status, basis, why, ...}: against the model's expected range, else the datasheet fraction of healthy
    GPUs."""
    found = expected.figure_range(models.get(model_name), row)
    verdict = health.judge(row, found, noise()) if found else None
    if verdict and verdict["status"] != health.DATASHEET_ONLY:
        return {**verdict, "basis": EXPECTED_RANGE,
                "why": f"{verdict['runs']} run(s) of this model at the same point measured "
                       f"{found['min']:.4g} to {found['max']:.4g} {row['unit']}"}
    healthy = expected.reference_fraction(_same_conditions(models, model_name), row)
    fraction = row.get("fraction_of_reference")
    if healthy and fraction is not None:
        floor = healthy["min"] * (1 - health.margin(row, noise())[1])
        status = health.AS_EXPECTED if fraction >= floor else health.BELOW
        return {"status": status, "basis": DATASHEET_FRACTION, "healthy_fraction": healthy,
                "by": None if status == health.AS_EXPECTED else 1 - fraction / healthy["min"],
                "why": f"{percent(fraction)} of the {row['reference']['what']}; {len(healthy['runs'])} check run(s) "
                       f"of healthy GPUs ({', '.join(healthy['models'])}) reached at least {percent(healthy['min'])}"}
    return {"status": health.NOT_JUDGED, "basis": None, "why": NO_BASIS}


def judge_against_median(rows, peers):
    """Figures of one point that no record judged, each against their median (from three figures on): below
    where it falls short of it, in its better direction, by more than its kind's margin; `peers` names them."""
    values = sorted(row["value"] for row in rows if row.get("value"))
    if len(values) < 3:
        return
    middle = values[len(values) // 2]
    for row in rows:
        if row.get("value") and row["status"] == health.NOT_JUDGED:
            short = (1 - row["value"] / middle) * (-1 if row.get("better") == "lower" else 1)
            status = health.BELOW if short > health.margin(row, noise())[1] else health.AS_EXPECTED
            row.update(status=status, basis=PEER_MEDIAN, by=short if status == health.BELOW else None,
                       why=f"{percent(row['value'] / middle)} of the median of its {len(values)} {peers}")


def judge_peers(rows):
    """Figures of one measure on different GPU pairs (`peers`) that no record judged: against their median."""
    judge_against_median(rows, "peers")


def judge_across_gpus(parts):
    """Each GPU's figures that no record judged, against the same figure's median over the GPUs checked at once
    (from three GPUs on: two cannot tell which of them is off)."""
    points = {}
    for part in parts:
        for row in part["figures"]:
            if row.get("better") in ("higher", "lower") and row["status"] == health.NOT_JUDGED:
                points.setdefault((row.get("key"), row.get("where")), []).append(row)
    for rows in points.values():
        judge_against_median(rows, "GPUs checked at once")


def clock_check(gpu, entries):
    """The device-timed entries' SM clock: below the maximum only by the power limit, else the check fails."""
    highest = gpu.get("clocks.max.sm")
    timed = [entry for entry in entries if entry.get("protocol") == CLOCK_PROTOCOL and entry.get("sm_clock_mhz")]
    if not highest or not timed:
        return None
    lowest = min(timed, key=lambda entry: entry["sm_clock_mhz"])
    thermal = [entry["name"] for entry in timed if (entry.get("thermal_limited_fraction") or 0) >= LIMITED]
    capped = [entry for entry in timed if (entry.get("power_limited_fraction") or 0) >= LIMITED]
    lowered = [entry["name"] for entry in timed if entry["sm_clock_mhz"] < CLOCK_LIMITED_CLOCK * highest
               and entry not in capped and entry["name"] not in thermal]
    text = (f"SM clock under load {lowest['sm_clock_mhz']:.0f} MHz at the lowest "
            f"({percent(lowest['sm_clock_mhz'] / highest)} of its {highest:.0f} MHz maximum, {len(timed)} device-timed "
            "entries)")
    if capped:
        text += f"; {len(capped)} held by the power limit (the GPU's own cap at work)"
    if thermal:
        text += f"; {len(thermal)} held by a thermal slowdown: the GPU is not cooled enough ({thermal[0]})"
    if lowered:
        text += (f"; {len(lowered)} below {percent(CLOCK_LIMITED_CLOCK, 0)} of the maximum with no limit active: "
                 f"its clocks are locked or lowered (nvidia-smi -lgc, application clocks) ({lowered[0]})")
    return {"check": "clocks", "ok": not thermal and not lowered, "text": text}


def power_check(gpu, sheet):
    """The power limit against the GPU's default limit (nvidia-smi), else the datasheet's (health.power_check)."""
    limit, default = gpu.get("power.limit"), gpu.get("power.default_limit")
    if limit is None or default is None:
        return health.power_check(gpu, sheet)
    ok = limit >= health.POWER_LIMIT_SHARE * default
    return {"check": "power_limit", "ok": ok,
            "text": f"power limit {limit:.0f} W" + ("" if ok else f", below its default {default:.0f} W: sustained "
                                                             "rates fall with it (nvidia-smi -pl)")}


def process_check(processes):
    """Other compute processes on the GPU (nvidia-smi's, when the check started or ended; None: unknown)."""
    if processes is None:
        return None
    when = "when the check started or ended"
    return {"check": "processes", "ok": not processes,
            "text": environment.gpu_processes_warning(processes, when) or f"no other process on the GPU {when}"}


def gpu_checks(gpu, sheet, entries, processes):
    """The checks of one GPU: its nvidia-smi record, datasheet, check entries and other processes (None: unknown)."""
    found = [clock_check(gpu, entries), power_check(gpu, sheet), health.link_check(gpu, sheet), health.ecc_check(gpu),
             process_check(processes)]
    return [{key: value for key, value in check.items() if key != "affects"} for check in found if check]


def part_verdict(figures, checks):
    """One GPU's (or the node's) verdict: below, else not judged where a figure could not be, else healthy."""
    statuses = {{health.BELOW: BELOW, health.NOT_JUDGED: NOT_JUDGED}.get(row["status"], HEALTHY) for row in figures}
    if BELOW in statuses or any(check["ok"] is False for check in checks):
        return BELOW
    return NOT_JUDGED if NOT_JUDGED in statuses or not figures else HEALTHY


def overall(parts):
    """The check's verdict over its parts' verdicts (none: nothing could be judged)."""
    return next((verdict for verdict in SEVERITY if verdict in parts), NOT_JUDGED) if parts else NOT_JUDGED


def below_names(part):
    """What made a part below: its figures below and its failed checks, by name."""
    return ([row["label"] for row in part["figures"] if row["status"] == health.BELOW]
            + [check["check"] for check in part["checks"] if check["ok"] is False])
