"""How far this machine varies from itself, read from one run's trials (each pair of an entry's trials is an A/A
pair of processes): per kind of entry, the share of trial pairs within the band an A/A pair should meet, and the
floor within which the target share lies (docs/methodology.md)."""
from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from gpubench_driver.lib import stats, verdicts


@dataclass(frozen=True)
class Target:
    kind: str
    holds: Callable      # (entry) -> whether the entry is of this kind
    band: float          # two measurements should agree within this relative difference...
    share: float         # ...for at least this share of entries


# The agreement the default suite should reach run to run on one machine (issue 14's targets).
TARGETS = (
    Target("GPU entries of 100 us or more", verdicts.long_gpu_entry, 0.02, 0.95),
    Target("every GPU entry", lambda entry: entry["device"] == "gpu", 0.05, 0.90),
    Target("CPU entries", lambda entry: entry["device"] == "cpu", 0.05, 0.90),
)


def trial_medians(entry):
    """The medians of an ok entry's ok trials (none for an entry measured once)."""
    records = entry.get("trials") or []
    return [record["time_s"]["median"] for record in records
            if record.get("status") == "ok" and stats.finite((record.get("time_s") or {}).get("median"))]


def floor_row(target, entries):
    """One kind's row of the floor; None when no entry of the kind has two trials."""
    measured = [entry for entry in entries if target.holds(entry) and len(trial_medians(entry)) >= 2]
    # |a/b - 1| with a the larger, for every pair of trials of every entry
    offsets = [max(a, b) / min(a, b) - 1 for entry in measured
               for a, b in combinations(trial_medians(entry), 2) if min(a, b) > 0]
    if not offsets:
        return None
    within = sum(offset <= target.band for offset in offsets) / len(offsets)
    return {"kind": target.kind, "band": target.band, "target_share": target.share, "entries": len(measured),
            "pairs": len(offsets), "within_band": within, "median_offset": stats.nearest_rank_percentile(offsets, 0.5),
            "floor": stats.nearest_rank_percentile(offsets, target.share), "met": within >= target.share}


def derive(studies):
    """findings["noise_floor"]: the rows of the kinds measured in two trials or more (empty: one trial)."""
    entries = [entry for study in studies.values() for entry in study["entries"]
               if entry.get("status") == "ok" and isinstance(entry.get("time_s"), dict)]
    rows = [floor_row(target, entries) for target in TARGETS]
    return {"rows": [row for row in rows if row], "trials": max((len(trial_medians(e)) for e in entries), default=0)}
