"""What a run records so that `run --resume` can finish it (each study's finished `units`, saved with their
entries, its `refinement_plans` as made and its `third_trial` decisions, which a resume replays), and
`run.resumed`, one record per resume."""
from gpubench_driver.lib.formatting import md
from gpubench_driver.lib.schema import ResultsError, expect, expect_fields, expect_type, has_type

SWEEP, REFINEMENT, END = "sweep", "refinement", "end"
PHASES = (SWEEP, REFINEMENT, END)
_KEYS = ("phase", "round", "trial", "n")


def unit(phase, trial=None, n=None, round_number=None):
    """A unit as a study's `units` lists it (the fields it does not have left out)."""
    found = {"phase": phase, "round": round_number, "trial": trial, "n": n}
    return {key: value for key, value in found.items() if value is not None}


def key(found):
    return tuple(found.get(name) for name in _KEYS)


def finished(record):
    """The keys of a study record's finished units."""
    return {key(found) for found in record.get("units") or []}


def describe(found):
    """A unit in words: 'matmul sweep, trial 2, n = 256'."""
    parts = [" ".join(part for part in (found.get("study"), found.get("phase")) if part)]
    for name, shown in (("round", "round {}"), ("trial", "trial {}"), ("n", "n = {}")):
        if found.get(name) is not None:
            parts.append(shown.format(found[name]))
    return ", ".join(parts)


# --- checks of what a resume reads (a results file may be hostile) --------------------------------
def _positive_int(value):
    return has_type(value, int) and value >= 1


def _items(values, path):
    """[(path of the item, item)] of the list expected at path."""
    expect_type(values, list, path)
    return [(f"{path}[{index}]", value) for index, value in enumerate(values)]


def _expect_positive(record, names, path):
    for name in names:
        valid = record.get(name) is None or _positive_int(record[name])
        expect(valid, f"{path}.{name}", "expected a positive integer")


def _expect_phase(record, path, phases=(SWEEP, REFINEMENT)):
    expected = f"one of {', '.join(phases)}" if len(phases) > 2 else " or ".join(phases)
    expect(record is not None and record.get("phase") in phases, f"{path}.phase", f"expected {expected}")


def check_study(record, path):
    """A study record's `units`, `refinement_plans` and `third_trial`, as a resume reads them; ResultsError
    otherwise."""
    if "units" not in record:
        expect(not record.get("entries"), f"{path}.units", "missing: the run was written before runs recorded "
                                                           "their finished units, so what finished is unknown")
    for where, found in _items(record.get("units", []), f"{path}.units"):
        expect_type(found, dict, where)
        _expect_phase(found, where, PHASES)
        _expect_positive(found, ("round", "trial", "n"), where)
    raw = record.get("raw_benchmarks")
    expect(raw is None or has_type(raw, int) and raw >= 0, f"{path}.raw_benchmarks", "expected a count")
    for where, plan in _items(record.get("refinement_plans", []), f"{path}.refinement_plans"):
        for at, size in _items(plan, where):
            expect_fields(size, {"n": int, "impls": list, "modes": list}, at)
            expect(size is not None and _positive_int(size.get("n")), f"{at}.n", "expected a positive integer")
            for name in ("impls", "modes"):
                expect(all(isinstance(value, str) for value in size[name]), f"{at}.{name}", "expected names")
    # Per sweep or refinement round decided: how many units it judged and those that got a third trial.
    for where, decision in _items(record.get("third_trial", []), f"{path}.third_trial"):
        expect_fields(decision, {"units": int, "third": list}, where)
        _expect_phase(decision, where)
        _expect_positive(decision, ("round",), where)
        for item, chosen in enumerate(decision.get("third") or []):
            expect(isinstance(chosen, dict) and _positive_int(chosen.get("n")), f"{where}.third[{item}].n",
                   "expected a positive integer")


def validate_against(record, path="run.against"):
    """run.against (run --against's passes of extra trials, stages/against.py): absent, or its fields typed."""
    if record is None:
        return
    expect_fields(record, {"path": str, "run_id": (str, type(None)), "budget_s": (int, float),
                           "spent_s": (int, float), "passes": list, "stopped": (str, type(None)),
                           "verdicts": (list, type(None))}, path)
    for name in ("budget_s", "spent_s"):
        expect(record[name] >= 0, f"{path}.{name}", "expected 0 or more seconds")
    for where, found in _items(record["passes"], f"{path}.passes"):
        expect_fields(found, {"pass": int, "units": int, "more": list, "states": dict}, where)
        expect(found is not None, where, "expected an object")
        expect(all(has_type(count, int) for count in found["states"].values()), f"{where}.states", "expected counts")
        for at, chosen in _items(found["more"], f"{where}.more"):
            expect_fields(chosen, {"study": str, "phase": str, "n": int, "trial": int}, at)
            _expect_phase(chosen, at)
            _expect_positive(chosen, ("n", "trial", "round"), at)


def plan_record(plan):
    """findings.refinement_plan's {n: (impls, modes)} as `refinement_plans` keeps it (JSON keys are text)."""
    return [{"n": n, "impls": list(impls), "modes": list(modes)} for n, (impls, modes) in plan.items()]


def plan_of(recorded):
    return {size["n"]: (size["impls"], size["modes"]) for size in recorded}


# --- the record of each resume ----------------------------------------------------------------------
_RESUMED = {"at": str, "from": (dict, type(None)), "units_kept": int, "measured_again": int,
            "command_line": (list, type(None)), "git": (dict, type(None)), "differences": (list, type(None))}


def validate(resumed, path="run.resumed"):
    """run.resumed: absent, or a list of resume records."""
    expect_type(resumed, (list, type(None)), path)
    for where, record in _items(resumed or [], path):
        expect(isinstance(record, dict), where, "expected an object")
        expect_fields(record, _RESUMED, where)
        if record.get("from") is not None:
            expect_fields(record["from"], {"study": str, "phase": str}, f"{where}.from")


def summary_lines(run):
    """The summary's lines on the run's resumes: when, from which unit, what was kept."""
    lines = []
    for record in run.get("resumed") or []:
        start = record.get("from")
        where = f"from {md(describe(start))}" if start else "with nothing left to measure"
        again = record.get("measured_again") or 0
        differed = [md(difference.get("what")) for difference in record.get("differences") or []
                    if isinstance(difference, dict)]
        lines.append(f"Resumed {md(record['at'])} {where}: {record['units_kept']} finished units kept"
                     + (f", {again} entries of unfinished units measured again" if again else "")
                     + (f"; the machine then differed in {', '.join(differed)}" if differed else ""))
    return lines


def checked_run(document, source):
    """ResultsError naming source where a study's resume records are damaged."""
    try:
        for name, study in document["studies"].items():
            check_study(study, f"studies.{name}")
    except ResultsError as error:
        raise ResultsError(f"{source}: {error}") from None
    return document
