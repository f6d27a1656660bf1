"""Which units of a run get a third trial under the default trial policy: every unit (a study at one size,
in its sweep or in a refinement round) runs two trials, and a third where its two disagree beyond the
noise model's width between the trials of one run (noise_model.py). docs/methodology.md, "The default
suite and how long it takes"."""
import math

from gpubench_driver.lib import noise_model, noise_verdicts

ADAPTIVE, FIXED = "adaptive", "fixed"  # run.options.trial_policy; a file without one ran its trials fixed
EVERY_UNIT = 2        # the trials every unit gets under the adaptive policy (options.trials: the most)
# The chance that a unit whose trials agree as the model says gets a third trial anyway, over all its
# entries (Bonferroni: entries of one process are not independent, and Bonferroni holds for any dependence).
FAMILY_LEVEL = 0.01
NO_MODEL = "the noise model could not be read"


def load(path=None):
    """(the noise Model, None), or (None, why not) where the file or scipy is missing."""
    try:
        noise_model.require_scipy()
        return noise_model.load(path or noise_model.FILE), None
    except noise_model.NoiseModelError as error:
        return None, str(error)


def _trial_medians(entry):
    """The medians of an entry's first two trials; None where either is missing or not positive."""
    records = (entry.get("trials") or [])[:EVERY_UNIT]
    medians = [(record.get("time_s") or {}).get("median") for record in records]
    if len(medians) < EVERY_UNIT or not all(isinstance(value, (int, float)) and value > 0 for value in medians):
        return None
    return medians


def _within_sd(model, study, entry, median_s):
    """The noise model's sd of one trial's log median for this entry (its kind's prior, moderated by its own
    A/A trials); None where the model has no kind for it."""
    key = (study, entry["name"])
    kind, own = noise_verdicts.kind_in(model, entry, median_s, key)
    if not own:
        return None
    return math.sqrt(model.kinds[kind].within(model.history(key), [])[0])


def judge(study, entries, model):
    """Why a unit whose entries (results.json's, after two trials) are these needs a third trial:
    {entry, reason[, ratio, allowed]}; None where its trials agree. model: a noise_model.Model, None
    when it could not be read (every unit then gets a third trial)."""
    if model is None:
        return {"entry": None, "reason": NO_MODEL}
    judged = []  # (name, log ratio of the trials' medians, the largest |log ratio| the noise allows / quantile)
    for entry in entries:
        statuses = [record.get("status") for record in entry.get("trials") or []] or [entry["status"]]
        if "ok" not in statuses:
            continue  # skipped or failed in each trial: a third would not change it
        if set(statuses) != {"ok"}:
            return {"entry": entry["name"], "reason": "it failed in one trial"}
        medians = _trial_medians(entry)
        if medians is None:
            return {"entry": entry["name"], "reason": "it has no two trial medians"}
        sd = _within_sd(model, study, entry, math.sqrt(medians[0] * medians[1]))
        if sd is None:
            return {"entry": entry["name"], "reason": "the noise model has no width for its kind"}
        # Two trials of one run: their log medians differ by N(0, 2 sigma_w^2).
        judged.append((entry["name"], math.log(medians[1] / medians[0]), math.sqrt(2) * sd))
    if not judged:
        return None
    # The model's sigma_w is taken as known: the Student t of its moderated df (under 1 for an entry the
    # A/A runs did not see) would allow a ratio of thousands and never ask for a third trial.
    quantile = noise_model.distributions.norm.isf(FAMILY_LEVEL / 2 / len(judged))
    name, log_ratio, sd = max(judged, key=lambda row: abs(row[1]) / row[2])  # the model's widths are positive
    if abs(log_ratio) <= quantile * sd:
        return None
    return {"entry": name, "reason": "its two trials disagree beyond the noise model's width",
            "ratio": math.exp(log_ratio), "allowed": math.exp(quantile * sd)}


def summary_lines(document):
    """The summary's line on how many units got a third trial (a run under the adaptive policy)."""
    if (document["run"].get("options") or {}).get("trial_policy") != ADAPTIVE:
        return []
    decisions = [decision for study in document["studies"].values() for decision in study.get("third_trial") or []]
    units = sum(decision["units"] for decision in decisions)
    third = sum(len(decision["third"]) for decision in decisions)
    return [f"Trials: two per unit (a study at one size), a third for {third} of {units} units where the two "
            f"disagreed beyond the noise model's width (`third_trial` of each study in results.json)"]
