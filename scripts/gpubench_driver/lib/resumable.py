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


def check_study(record, path):
    """A study record's `units` and `refinement_plans`, as a resume reads them; ResultsError otherwise."""
    if "units" not in record:
        expect(not record.get("entries"), f"{path}.units", "missing: the run was written before runs recorded "
                                                           "their finished units, so what finished is unknown")
    expect_type(record.get("units", []), list, f"{path}.units")
    for index, found in enumerate(record.get("units", [])):
        where = f"{path}.units[{index}]"
        expect_type(found, dict, where)
        expect(found.get("phase") in PHASES, f"{where}.phase", f"expected one of {', '.join(PHASES)}")
        for name in ("round", "trial", "n"):
            expect(found.get(name) is None or _positive_int(found[name]), f"{where}.{name}",
                   "expected a positive integer")
    raw = record.get("raw_benchmarks")
    expect(raw is None or has_type(raw, int) and raw >= 0, f"{path}.raw_benchmarks", "expected a count")
    expect_type(record.get("refinement_plans", []), list, f"{path}.refinement_plans")
    for index, plan in enumerate(record.get("refinement_plans", [])):
        expect_type(plan, list, f"{path}.refinement_plans[{index}]")
        for item, size in enumerate(plan):
            where = f"{path}.refinement_plans[{index}][{item}]"
            expect_fields(size, {"n": int, "impls": list, "modes": list}, where)
            expect(size is not None and _positive_int(size.get("n")), f"{where}.n", "expected a positive integer")
            for name in ("impls", "modes"):
                expect(all(isinstance(value, str) for value in size[name]), f"{where}.{name}", "expected names")
    _check_third_trial(record.get("third_trial", []), f"{path}.third_trial")


def _check_third_trial(decisions, path):
    """A study's `third_trial`: per sweep or refinement round decided, how many units it judged and those that
    got a third trial (lib/trial_rule.py)."""
    expect_type(decisions, list, path)
    for index, decision in enumerate(decisions):
        where = f"{path}[{index}]"
        expect_fields(decision, {"units": int, "third": list}, where)
        expect(decision is not None and decision.get("phase") in (SWEEP, REFINEMENT), f"{where}.phase",
               f"expected {SWEEP} or {REFINEMENT}")
        expect(decision.get("round") is None or _positive_int(decision["round"]), f"{where}.round",
               "expected a positive integer")
        for item, chosen in enumerate(decision.get("third") or []):
            expect(isinstance(chosen, dict) and _positive_int(chosen.get("n")), f"{where}.third[{item}].n",
                   "expected a positive integer")


def validate_against(record, path="run.against"):
    """run.against (run --against's passes of extra trials, stages/against.py), as a resume replays it and the
    summary reads it: absent, or its fields typed; ResultsError naming the field otherwise."""
    if record is None:
        return
    expect_fields(record, {"path": str, "run_id": (str, type(None)), "budget_s": (int, float),
                           "spent_s": (int, float), "passes": list, "stopped": (str, type(None)),
                           "verdicts": (list, type(None))}, path)
    for name in ("budget_s", "spent_s"):
        expect(record[name] >= 0, f"{path}.{name}", "expected 0 or more seconds")
    for index, found in enumerate(record["passes"]):
        where = f"{path}.passes[{index}]"
        expect_fields(found, {"pass": int, "units": int, "more": list, "states": dict}, where)
        expect(found is not None, where, "expected an object")
        expect(all(has_type(count, int) for count in found["states"].values()), f"{where}.states", "expected counts")
        for item, chosen in enumerate(found["more"]):
            at = f"{where}.more[{item}]"
            expect_fields(chosen, {"study": str, "phase": str, "n": int, "trial": int}, at)
            expect(chosen is not None and chosen["phase"] in (SWEEP, REFINEMENT), f"{at}.phase",
                   f"expected {SWEEP} or {REFINEMENT}")
            for name in ("n", "trial", "round"):
                expect(chosen.get(name) is None or _positive_int(chosen[name]), f"{at}.{name}",
                       "expected a positive integer")


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
    for index, record in enumerate(resumed or []):
        where = f"{path}[{index}]"
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
