"""Independent trials of one entry, each a separate process (docs/methodology.md): the entry's `time_s` summarises
the trials' medians, each trial's figures kept under `trials`; a failed trial makes the entry an error."""
import random
import statistics

from gpubench_driver.lib import stats

# Figures summarised over the trials like the headline (their medians' summary).
PHASES = ("latency_s", "cold_l2_s")
# Per-call figures whose median over the trials stands for the entry.
MEDIAN_FIELDS = ("burst_s", "energy_j_per_op", "energy_j_per_op_uncertainty", "energy_j_per_op_above_idle")
# What a library chose for the entry in its process (cuDNN's algorithm and engine, the workspace): a
# choice that differs between processes is a source of between-run variance, named on the entry.
CHOICES = ("algorithm", "engine", "workspace_bytes")
# What a trial record keeps of its entry: the measured figures, not the entry's identity.
TRIAL_FIELDS = ("status", "message", "label", "time_s", "protocol", "latency_s", "cold_l2_s", "burst_s", "converged",
                "energy_j_per_op", "energy_j_per_op_uncertainty", "energy_j_per_op_above_idle", "clock_limited",
                "sm_clock_mhz", "power_w", "temperature_c_max", "measurement", "wall_s", "engine_held",
                "algorithm_held", *CHOICES)


def size_order(sizes, trial, seed):
    """The sizes in a trial's order: later trials shuffled (the run's seed), so order effects do not line up."""
    if trial == 1:
        return list(sizes)
    shuffled = list(sizes)
    random.Random(f"{seed}/{trial}").shuffle(shuffled)
    return shuffled


def trial_record(entry, trial):
    return {**{key: entry.get(key) for key in TRIAL_FIELDS}, "trial": trial}


def combine(previous, new, trial):
    """The entry after trial `trial` (1-based) measured `new`; `previous`: the entry so far (None for the first)."""
    if previous is None:
        return new
    if previous["status"] == new["status"] == "skipped":
        return previous  # skipped for what it is (a size cap, no such kernel), not by chance
    records = (previous.get("trials") or [trial_record(previous, 1)]) + [trial_record(new, trial)]
    combined = {**previous, "trials": records, "wall_s": sum(record.get("wall_s") or 0 for record in records)}
    failed = [record for record in records if record["status"] != "ok"]
    if failed:
        first = failed[0]
        combined.update(status=first["status"], time_s=None, flop_per_s=None,
                        message=f"trial {first['trial']} of {len(records)}: {first.get('message')}")
        return combined
    _summarise(combined, records)
    return combined


def before(entry, trial):
    """The entry as its trials before `trial` left it (None for the first), for run --resume to run it again."""
    records = entry.get("trials")
    if trial <= 1:
        return None
    if not records or len(records) < trial:
        return entry
    # The entry's own fields are its first trial's; the trial records hold what each trial measured.
    identity = {key: value for key, value in entry.items() if key not in ("trials", "choices_varied")}
    rebuilt = None
    for record in records[:trial - 1]:
        measured = {**identity, **{key: record.get(key) for key in TRIAL_FIELDS  # a field the entry lacks stays out
                                   if key in identity or record.get(key) is not None}}
        rebuilt = combine(rebuilt, measured, record["trial"])
    if trial == 2:  # one trial: its rate is its own, as the study's output gave it
        median = (rebuilt.get("time_s") or {}).get("median") if rebuilt["status"] == "ok" else None
        rebuilt["flop_per_s"] = rebuilt["flop"] / median if rebuilt.get("flop") is not None and median else None
    return rebuilt


def _summarise(entry, records):
    medians = [record["time_s"]["median"] for record in records]
    entry["time_s"] = {**stats.summarize(medians), "over": "trials"}
    for phase in PHASES:
        found = [record[phase]["median"] for record in records if isinstance(record.get(phase), dict)]
        entry[phase] = {**stats.summarize(found), "over": "trials"} if found else None
    for name in MEDIAN_FIELDS:
        found = [value for value in (stats.finite(record.get(name)) for record in records) if value is not None]
        entry[name] = statistics.median(found) if found else None
    entry["converged"] = all(record.get("converged") for record in records)
    limited = [record.get("clock_limited") for record in records if record.get("clock_limited") is not None]
    entry["clock_limited"] = any(limited) if limited else None
    entry["flop_per_s"] = entry["flop"] / entry["time_s"]["median"] if entry.get("flop") is not None else None
    varied = {name: [record.get(name) for record in records] for name in CHOICES
              if len({record.get(name) for record in records}) > 1}
    entry["choices_varied"] = varied or None


def count(entry):
    """How many trials an entry's time summarises."""
    return len(entry.get("trials") or []) or 1


def most(entries):
    """The largest number of trials any of the entries was measured in."""
    return max((count(entry) for entry in entries), default=1)


def view(entries, trial):
    """The entries as trial `trial` alone measured them (one whose trial failed or is missing left out)."""
    found = []
    for entry in entries:
        records = entry.get("trials")
        if not records:
            found.append(entry)
        elif len(records) >= trial and records[trial - 1]["status"] == "ok":
            record = records[trial - 1]
            found.append({**entry, **{key: record.get(key) for key in ("time_s", "latency_s", "cold_l2_s")},
                          "status": "ok"})
    return found

