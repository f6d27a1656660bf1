"""The between-run noise floor of one-trial entries, per protocol, measured on an A/A pair: the same
suite run twice, back to back, on one machine, one trial each. `rank` holds a figure measured in
fewer than two trials to it (verdicts.py); the floor of noise_floor.py is another figure, a run's
own trials against each other.

scripts/noise_floor.json is written by `gpubench noise-floor A B`, never by hand: per protocol, the
95th percentile (nearest rank) of |log(B/A)| over the entries ok in both runs, with the runs it was
measured on (id, revision, machine, options). A and B are run digests (digest.py) or results files."""
import json
import math
import os

from gpubench_driver.lib import measurements, outputs, stats

FILE = os.path.join(outputs.SCRIPTS_DIR, "noise_floor.json")
SCHEMA = "gpubench-noise-floor"
SCHEMA_VERSION = 1
PERCENTILE = 0.95
# What the file says of each run: enough to know the machine and the code that measured the floor.
RUN_FIELDS = ("id", "status", "started", "revision", "machine", "options")


class NoiseFloorError(Exception):
    """The noise floor file, or the pair it is measured on, cannot be used: the message says why."""


def offsets(first, second):
    """{protocol: [|log(B/A)|, ...]} over the entries ok in both run digests (matched by study, GPU and
    name; the first run's protocol). An entry without a protocol (files from before them) is left out:
    verdicts holds such entries to the widest floor."""
    ok = {(entry["study"], entry["gpu"], entry["name"]): entry["median_s"]
          for entry in second["entries"] if entry["status"] == "ok"}
    found = {}
    for entry in first["entries"]:
        other = ok.get((entry["study"], entry["gpu"], entry["name"]))
        if entry["status"] == "ok" and other is not None and entry["protocol"] is not None:
            found.setdefault(entry["protocol"], []).append(abs(math.log(other / entry["median_s"])))
    return found


def record(runs):
    """The noise floor file's document, measured on exactly two run digests."""
    if len(runs) != 2:
        raise NoiseFloorError(f"the noise floor is measured on an A/A pair: two runs, got {len(runs)} "
                              f"({', '.join(run['id'] for run in runs) or 'none'})")
    first, second = runs
    found = offsets(first, second)
    if not found:
        raise NoiseFloorError(f"runs {first['id']} and {second['id']} share no entry that is ok in both")
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "note": "Written by `gpubench noise-floor A B` from an A/A pair of runs; not edited by hand.",
            "statistic": f"per protocol, the {PERCENTILE:.0%} percentile (nearest rank) of |log(B/A)| of the entries' "
                         f"medians, over the entries ok in both runs",
            "runs": [{key: run[key] for key in RUN_FIELDS} for run in runs],
            "entries": {protocol: len(values) for protocol, values in sorted(found.items())},
            "floors": {protocol: stats.nearest_rank_percentile(values, PERCENTILE)
                       for protocol, values in sorted(found.items())}}


def write(document, path=FILE):
    return outputs.write_text(path, json.dumps(document, indent=1) + "\n")


def load(path=FILE):
    """The noise floor document, its floors checked: a positive finite number per known protocol."""
    try:
        with open(path, encoding="utf-8") as stream:
            found = json.load(stream)
        version = (found.get("schema"), found.get("schema_version")) if isinstance(found, dict) else None
        if version != (SCHEMA, SCHEMA_VERSION):
            raise ValueError(f"not a {SCHEMA} file of version {SCHEMA_VERSION}")
        floors = found.get("floors")
        if not isinstance(floors, dict) or not floors:
            raise ValueError("no floors")
        for protocol, floor in floors.items():
            if protocol not in measurements.PROTOCOLS:
                raise ValueError(f"floors: {protocol!r:.40} is no protocol ({', '.join(measurements.PROTOCOLS)})")
            if isinstance(floor, bool) or not isinstance(floor, (int, float)) or not 0 < floor < 10:
                raise ValueError(f"floors.{protocol}: expected a log ratio above 0 and below 10, got {floor!r:.40}")
        runs = found.get("runs")
        if not isinstance(runs, list) or not all(isinstance(run, dict) and isinstance(run.get("id"), str)
                                                 for run in runs):
            raise ValueError("runs: expected a list of runs with their ids")
        return found
    except (OSError, ValueError, RecursionError) as error:
        raise NoiseFloorError(f"cannot read the noise floor {path}: {error}") from None
