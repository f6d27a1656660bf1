"""The 'expected' command: the expected ranges of the headline figures per GPU model, from committed runs
(results.json, run digests or check.json files), written to scripts/expected_ranges.json for the health check
and gpubench check. A model's record is replaced whole (give every run of it at once); other models are kept."""
import json
import os
import statistics

from gpubench_driver.commands import digest
from gpubench_driver.lib import check_results, outputs, results
from gpubench_driver.lib.expected import EXPECTED, ExpectedError, SCHEMA, load


def _run_figures(path):
    """[(GPU name, run record, its headline figures with a value)] of each run a path holds (a results.json,
    a run digest or a check.json)."""
    checked = check_results.file_in(path)
    if checked:
        try:
            return check_results.recorded_runs(checked)
        except check_results.CheckFileError as error:
            raise ExpectedError(str(error)) from None
    try:
        runs = digest.runs_in(path)
    except (results.ResultsError, digest.DigestError) as error:
        raise ExpectedError(str(error)) from None
    found = []
    for run in runs:
        name = run["machine"]["gpu"]
        if not name or not run["gpu_available"]:
            raise ExpectedError(f"{path}: {'the run' if len(runs) == 1 else 'run ' + run['id']} has no GPU part")
        found.append((name, {"id": run["id"], "path": os.path.relpath(path), "revision": run["revision"]},
                      [row for row in run["figures"] if row["value"] is not None]))
    return found


def model_records(paths):
    """{GPU name: {"runs": [...], "figures": {key: {where: {"values", "runs", "min", "max", "median"}}}}}."""
    models = {}
    for name, run, figures in (found for path in paths for found in _run_figures(path)):
        model = models.setdefault(name, {"runs": [], "figures": {}})
        model["runs"].append(run)
        for row in figures:
            found = model["figures"].setdefault(row["key"], {}).setdefault(row["where"], {"values": [], "runs": []})
            found["values"].append(row["value"])
            found["runs"].append(run["id"])
            if row.get("fraction_of_reference") is not None and row.get("reference"):
                # What a model without ranges of its own is judged by: the share of the reference a healthy GPU reached.
                found.setdefault("fractions", []).append({"run": run["id"], "value": row["fraction_of_reference"],
                                                          "of": row["reference"]["what"]})
    for model in models.values():
        for points in model["figures"].values():
            for found in points.values():
                found.update(min=min(found["values"]), max=max(found["values"]),
                             median=statistics.median(found["values"]))
    return models


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


ERRORS = (ExpectedError, digest.DigestError, results.ResultsError, outputs.WriteError)


def register(subparsers):
    parser = subparsers.add_parser(
        "expected", help="set the health check's expected ranges from committed runs",
        description="Record every headline figure of the given runs as the expected range of their GPU model in "
                    "scripts/expected_ranges.json (the runs' model records are replaced, others kept). Use runs of "
                    "the default suite on healthy machines, committed under results/.")
    parser.add_argument("results", nargs="+",
                        help="results.json (or .json.gz) files, directories holding one, run digests "
                             "(gpubench digest) or check.json files (gpubench check)")
    parser.add_argument("--file", default=EXPECTED, help="the ranges file (default: %(default)s)")
    return parser


def execute(args, argv):
    for model, runs in update(args.results, args.file).items():
        print(f"expected ranges: {model} from {runs} run(s) in {args.file}")
    return 0
