"""Expected ranges of the headline figures per GPU model, taken from committed result sets.

scripts/expected_ranges.json is written by `gpubench expected RUN...`, never by hand: for each GPU
model among the runs, every headline figure's value in each run (and the run it came from), so that
the health check (health.py) can say whether a new machine of that model measures like the
committed ones. A figure is kept per entry it was read from (its `where`: a quick run's peak is
measured at a smaller size than the default suite's), so a run is judged only against runs that
measured the same point. Running it again for a model replaces that model's record (give every run
of the model, the default suite's and --quick's, at once); other models are kept."""
import json
import os
import statistics

from gpubench_driver.lib import outputs, results
from gpubench_driver.lib.figures import first_gpu
from gpubench_driver.stages import journal, report

EXPECTED = os.path.join(outputs.SCRIPTS_DIR, "expected_ranges.json")
SCHEMA = "gpubench-expected-ranges"


class ExpectedError(Exception):
    """The ranges file or a run cannot be used: the message says why."""


def load(path=EXPECTED):
    """{GPU name: its record}; {} when the file does not exist."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as stream:
            found = json.load(stream)
        if found.get("schema") != SCHEMA or not isinstance(found.get("models"), dict):
            raise ValueError(f"not a {SCHEMA} file")
        return found["models"]
    except (OSError, ValueError, AttributeError, RecursionError) as error:
        raise ExpectedError(f"cannot read the expected ranges {path}: {error}") from None


def _run_figures(path):
    """(GPU name, run record, its headline figures with a value) of one results.json, its findings
    derived again."""
    try:
        document = journal.load(path)
    except results.ResultsError as error:
        raise ExpectedError(str(error)) from None
    name = first_gpu(document).get("name")
    if not name or not document["gpu"].get("available"):
        raise ExpectedError(f"{path}: the run has no GPU part")
    report.derive_findings(document, 0)
    figures = document["findings"]["headline"]["figures"]
    run = {"id": document["run"]["id"], "path": os.path.relpath(path),
           "revision": (document["run"].get("git") or {}).get("revision")}
    return name, run, [row for row in figures if row["value"] is not None]


def model_records(paths):
    """{GPU name: {"runs": [...], "figures": {key: {where: {"values", "runs", "min", "max", "median"}}}}}."""
    models = {}
    for path in paths:
        name, run, figures = _run_figures(path)
        model = models.setdefault(name, {"runs": [], "figures": {}})
        model["runs"].append(run)
        for row in figures:
            found = model["figures"].setdefault(row["key"], {}).setdefault(row["where"], {"values": [], "runs": []})
            found["values"].append(row["value"])
            found["runs"].append(run["id"])
    for model in models.values():
        for points in model["figures"].values():
            for found in points.values():
                found.update(min=min(found["values"]), max=max(found["values"]),
                             median=statistics.median(found["values"]))
    return models


def figure_range(model, row):
    """The expected range of a headline figure: the committed runs' values at the same entry, or None."""
    return ((model or {}).get("figures", {}).get(row["key"]) or {}).get(row["where"])


def update(paths, path=EXPECTED):
    """Replaces the records of the runs' models in the ranges file; returns {GPU name: run count}."""
    models = load(path)
    found = model_records(paths)
    models.update(found)
    document = {"schema": SCHEMA, "schema_version": 1,
                "note": "Written by `gpubench expected RUN...` from committed result sets; not edited by hand.",
                "models": dict(sorted(models.items()))}
    outputs.write_text(path, json.dumps(document, indent=1) + "\n")
    return {name: len(model["runs"]) for name, model in found.items()}
