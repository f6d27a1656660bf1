"""gpubench check's plan, run and collect: every study with a check point (Study.check) measured once there
by the runner every run uses, into a results document derived as any run's; then each study's check figures,
and what kept a study from giving any as figures not measured."""
import os
from dataclasses import dataclass, replace

from gpubench_driver import studies
from gpubench_driver.lib import outputs, results
from gpubench_driver.lib.figures import datasheet_of, load_datasheets
from gpubench_driver.stages import analyse, build, journal, runner, session
from gpubench_driver.stages.health import NOT_JUDGED

NOT_MEASURED = "not measured"


@dataclass
class CheckPlan:
    name: str
    binary: str
    description: dict
    options: object  # the RunOptions its binary runs with: the check point's sizes, batches, impls, modes


def point_text(check):
    """The point of a check, as its figures' records and the docs say it."""
    parts = [f"n = {', '.join(map(str, check.sizes))}"]
    if check.batches:
        parts.append(f"batch {', '.join(map(str, check.batches))}")
    for name, values in (("impls", check.impls), ("modes", check.modes)):
        if values:
            parts.append(f"{name} {', '.join(values)}")
    return "; ".join(parts)


def _known(chosen, known):
    """The chosen ids this binary has (None: all of them); [] where it has none."""
    return None if chosen is None else [value for value in chosen if value in known]


def is_peers(name):
    """Whether a study's check figures are one measure on different GPUs or pairs (CheckPoint.peers)."""
    record = studies.BY_NAME.get(name)
    return bool(record and record.check and record.check.peers)


def plan(options, gpus_seen):
    """(plans, not-measured rows) of the check points of one GPU (gpus_seen 1) or between up to gpus_seen
    GPUs."""
    plans, missing = [], []
    chosen = [record for record in studies.STUDIES if record.check and record.check.gpus <= gpus_seen
              and (record.check.gpus == 1) == (gpus_seen == 1)]
    binaries = {record.name: build.binary_path(options.build_dir, f"gpubench_{record.name}") for record in chosen}
    built = [record for record in chosen if os.access(binaries[record.name], os.X_OK)]
    missing += [not_measured(record.name, f"{binaries[record.name]} was not built") for record in chosen
                if record not in built]
    # Every binary described at once: each start of a study binary initialises CUDA, which takes a while.
    described = dict(zip([record.name for record in built],
                         runner.describe_all([(binaries[record.name], ()) for record in built], errors_as_text=True)))
    for record in built:
        check, binary, description = record.check, binaries[record.name], described[record.name]
        if isinstance(description, str):
            missing.append(not_measured(record.name, description))
            continue
        gpu = description.get("gpu") or {}
        if not gpu.get("available"):
            why = gpu.get("reason") or "no reason given"
            missing.append(not_measured(record.name, f"its binary found no GPU: {why}"))
            continue
        implementations = description["implementations"]
        impls = _known(check.impls, [impl.get("id") for impl in implementations])
        modes = _known(check.modes, [mode for impl in implementations for mode in impl.get("modes") or []])
        if impls == [] or modes == []:
            missing.append(not_measured(record.name, f"this build of it has none of {point_text(check)}"))
            continue
        plans.append(CheckPlan(record.name, binary, description, replace(  # the rest: the check's (check.options_of)
            options, studies=[record.name], sizes=list(check.sizes), batches=list(check.batches or []) or None,
            impls=impls, modes=modes)))
    return plans, missing


def not_measured(study, why):
    """A figure row for what a study's check could not measure (its status: not judged)."""
    return {"key": f"{study}/{NOT_MEASURED}", "label": f"{study}: {NOT_MEASURED}", "value": None, "unit": "",
            "where": None, "study": study, "status": NOT_JUDGED, "basis": None, "why": why}


def new_document(options, argv, plans):
    """The check's results document: the run record, the machine and software as a run captures them."""
    document = session.new_run_document(options, argv)
    session.capture_environment(document, options, [item.description for item in plans])
    for item in plans:
        document["studies"][item.name] = results.new_study(item.description, item.options.sizes,
                                                           item.options.batches)
    return document


def measure(plans, document, out_dir):
    """Each plan's entries, one trial, into the document; not-measured rows of the studies that could not run."""
    results_path = os.path.join(out_dir, "results.json")
    save = lambda: results.write(document, results_path, checked=False)  # noqa: E731 (after every size)
    save()
    progress = runner.Progress(0)
    scratch_dir = outputs.subfolder(out_dir, outputs.SCRATCH)
    failed = []
    studies_run = [runner.Study(item.name, item.binary, item.options, document["studies"][item.name], save,
                                progress, journal_path=os.path.join(out_dir, journal.FILE), artifacts_dir=out_dir,
                                scratch_dir=scratch_dir) for item in plans]
    # Every sweep described at once, as the plan's descriptions were (each start initialises CUDA).
    descriptions = runner.describe_all([study.sweep_request() for study in studies_run], errors_as_text=True)
    for study, description in zip(studies_run, descriptions):
        try:
            if isinstance(description, str):
                raise runner.RunnerError(description)
            study.plan(description)
            study.sweep(1)
        except runner.RunnerError as error:
            failed.append(not_measured(study.name, str(error)))
    return failed


def collect(document):
    """{"figures": each study's check figures, "missing": not-measured rows}; the findings derived on the
    way."""
    failed = any(study["invocations"] for study in document["studies"].values())
    document["run"].update(status="partial" if failed else "complete", finished=session.utc_now())
    analyse.derive_findings(document, 0)
    sheet = datasheet_of(document, load_datasheets())
    found, missing = [], []
    for name, study in document["studies"].items():
        check = studies.BY_NAME[name].check
        rows = check.figures(study, document, sheet)
        by_name = {entry["name"]: entry for entry in study["entries"]}
        for row in rows:
            entry = by_name.get(row["entry"])
            found.append({**row, "study": name, "point": point_text(check), "plateau": check.plateau,
                          "budget": check.budget, "converged": (entry or {}).get("converged"),
                          "stop": ((entry or {}).get("measurement") or {}).get("headline", {}).get("stop")})
        errors = [entry for entry in study["entries"] if entry["status"] == "error"]
        missing += [not_measured(name, f"{entry['name']}: {entry['message']}") for entry in errors]
        if not rows and not errors:
            missing.append(not_measured(name, "no entry at its check point gave a figure"))
    return {"figures": found, "missing": missing}

