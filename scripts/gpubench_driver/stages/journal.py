"""The run's journal: each finished entry, a line appended before its progress line, so that an entry seen
to finish is on disk even when the driver is killed (a line costs microseconds, rewriting results.json up to
0.7 s); after each size it is folded in and emptied, and `load` folds in what a killed run left."""
import contextlib
import json
import os

from gpubench_driver import studies
from gpubench_driver.lib import gbench, measurements, migrate, outputs, results, stats, trials

FILE = "journal.jsonl"
RECOVERED = "recovered from the run's journal (counters as the console printed them)"
KILLED = "the run was killed: its driver ended before it finished (results.json still says 'running')"


def path_beside(results_path):
    directory = results_path if os.path.isdir(results_path) else os.path.dirname(os.path.abspath(results_path))
    return os.path.join(directory, FILE)


def record(study, trial, phase, result, measurement, wall_s, axis_fields):
    """The journal line of one finished entry: its console result, its measurements line and its axis fields."""
    return {"layout": migrate.JOURNAL_LAYOUT, "study": study, "trial": trial, "phase": phase, "name": result.name,
            "axis_fields": axis_fields, "failure": result.failure, "median_s": result.median_s,
            "counters": result.counters, "measurement": measurement, "wall_s": wall_s}


def append(path, line):
    try:
        with open(path, "a", encoding="utf-8") as stream:
            stream.write(json.dumps(line, allow_nan=False) + "\n")
    except OSError as error:
        raise outputs.write_error(error, path) from None


def remove(path):
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


def read(path):
    """The journal's complete lines (a line cut by a kill is skipped); none without a journal."""
    return [value for value in measurements.read_objects(path) if isinstance(value.get("study"), str)
            and isinstance(value.get("name"), str) and isinstance(value.get("trial"), int) and value["trial"] >= 1]


def entry_of(line, study):
    """The entry a journal line stands for, as the driver would have read it from the process."""
    fields = migrate.journal_axis_fields(line, studies.axis_names(line["study"], study))
    entry = gbench.blank_entry(line["name"], fields, gbench.declared_counters(study))
    failure = line.get("failure")
    counters = line.get("counters") if isinstance(line.get("counters"), dict) else {}
    gbench.pass_counters(entry, counters)
    entry.update(dict.fromkeys(measurements.FIELDS), measurement=None, phase=line.get("phase"),
                 wall_s=stats.finite(line.get("wall_s")), message=RECOVERED)
    measured = line.get("measurement")
    if isinstance(failure, str):
        entry.update(status="skipped" if failure.startswith(gbench.SKIP_PREFIX) else "error", message=failure)
    elif measurements.usable(measured):
        measurements.apply(entry, measured)
    else:
        entry.update(status="error", message="recovered from the run's journal without its measurement")
    return entry


def fold(document, lines):
    """How many journal entries the document's studies lacked, added (an entry's trial counts once)."""
    by_study = {}  # study name: its entries by name, for the studies the lines name
    added = 0
    for line in lines:
        study = document["studies"].get(line["study"])
        if not isinstance(study, dict):
            continue
        by_name = by_study.setdefault(line["study"], {entry["name"]: entry for entry in study["entries"]})
        previous = by_name.get(line["name"])
        if previous is not None and (line["trial"] == 1 or trials.count(previous) >= line["trial"]):
            continue
        if previous is None and line["trial"] > 1:
            continue  # its earlier trials are not in the file: nothing to combine with
        entry = entry_of(line, study)
        by_name[line["name"]] = trials.combine(previous, entry, line["trial"])
        added += 1
    for name, by_name in by_study.items():
        document["studies"][name]["entries"] = sorted(by_name.values(), key=gbench.entry_order)
    return added


def load(path):
    """results.load with a killed run's journal folded in; 'running' without a live driver shows 'killed'."""
    document = results.load(path)
    folder = os.path.dirname(path_beside(path))
    if document["run"]["status"] == "running" and not outputs.run_in_progress(folder):
        document["run"]["status"] = "killed"
        document["warnings"].append(KILLED)
    added = fold(document, read(path_beside(path)))
    if added:
        document["warnings"].append(f"{added} entries recovered from {FILE}: the run was stopped before it saved "
                                    f"them to results.json")
        results.checked(document, f"{path} with its {FILE}")  # the journal's lines are as untrusted as the file
    return document
