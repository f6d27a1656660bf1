"""The sequential rule of `run --against`: after each pass of extra trials, which entries the comparison
with the earlier run has decided, which more trials of this run may still decide, and which they cannot.
docs/methodology.md, "Trials until decided: run --against".

The statistic is the log ratio D_k = mean of this run's k trials' log medians - the median of the
earlier run's (A). With the noise model's variances taken as known (as trial_rule.py takes them),
Var(D_k) = V0 + s^2 / k: V0 holds what no trial of this run shrinks (A's median, both runs' between-run
parts), s^2 = sigma_w^2 of one trial here. D_k has independent increments in its information
I_k = 1 / Var(D_k) (Cov(D_j, D_k) = Var(D_k) for j < k), so S_k = I_k (D_k - delta) is a Brownian motion
at time I_k, and Robbins' normal mixture (Robbins 1970; Howard, Ramdas, McAuliffe and Sekhon 2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences") gives the confidence sequence
    |D_k - delta| <= sqrt((I_k + rho) log((I_k + rho) / (rho alpha^2))) / I_k   for every k at once,
with probability 1 - alpha (Ville's inequality): a verdict read off it at whatever pass the run stops,
decided or out of budget, is wrong at most alpha of the time. rho is set from the variances alone (the
tightest width at the most trials a run may take), never from the trials measured.
"""
import math
import statistics
from dataclasses import dataclass
from functools import cache

from gpubench_driver.lib import noise_model, noise_verdicts

# The chance that the confidence sequence ever misses the true log ratio, over every pass: the coverage of
# compare's interval (noise_verdicts.CONFIDENCE), held at every look instead of one.
LEVEL = 1 - noise_verdicts.CONFIDENCE
MOST_TRIALS = noise_verdicts.MOST_TRIALS  # options.MAX_TRIALS: a run's trials of one unit at most
UNDECIDED, HOPELESS = "unclear", "hopeless"  # besides noise_verdicts' same/faster/slower
# An entry whose chance of being decided by the most trials it may get, were its ratio to stay, is under this gets
# no more: stopping without a verdict never raises the error rates, and the budget goes where trials can decide.
FUTILITY = 0.10


@dataclass(frozen=True)
class Variances:
    """An entry's comparison with A in the model's terms (variances of log times)."""
    fixed: float      # V0: A's median and both runs' between-run parts: no trial of this run shrinks it
    per_trial: float  # sigma_w^2 of one trial of this run

    def information(self, trials):
        return 1.0 / (self.fixed + self.per_trial / trials)


def variances(kind_model, history, logs_a, logs_known):
    """The Variances of an entry of this kind (noise_model.KindModel) and A/A history, A's side the logs of its
    trials' medians; logs_known: this run's trials measured before its extra passes (the model's sigma_w updated
    by them, fixed before the sequence starts, so that the variances stay known through it)."""
    within_a = kind_model.within(history, logs_a)[0]
    within_b = kind_model.within(history, logs_known)[0]
    fixed = (within_a * (noise_model.median_variance(len(logs_a)) + kind_model.ratio)
             + within_b * kind_model.ratio + 2 * kind_model.floor_sd ** 2)
    return Variances(fixed, within_b)


def half_width(information, rho, level=LEVEL):
    """The normal-mixture confidence sequence's half width on the log ratio at this information."""
    return math.sqrt((information + rho) * math.log((information + rho) / (rho * level ** 2))) / information


@cache
def tuned_rho(information, level=LEVEL):
    """The mixture's rho that makes the half width least at this information (Howard et al. 2021, section 3.5)."""
    noise_model.require_scipy()
    centre = math.log(information)
    found = noise_model.optimize.minimize_scalar(lambda log_rho: half_width(information, math.exp(log_rho), level),
                                     bounds=(centre - 30, centre + 10), method="bounded")
    return math.exp(found.x)


@dataclass(frozen=True)
class Look:
    """An entry after k trials of this run: its state (same, faster, slower: decided; unclear: more trials may
    decide it; hopeless: the trials this run may still take cannot, were its ratio to stay) and its
    confidence sequence's interval on the ratio."""
    state: str
    ratio: float
    low: float
    high: float
    trials: int

    def record(self):
        return {"state": self.state, "ratio": self.ratio, "interval": [self.low, self.high], "trials": self.trials}


def look(spread, estimate, trials, band, reachable=MOST_TRIALS, level=LEVEL):
    """The Look at an entry whose log ratio estimate (D_k) is `estimate` after `trials` trials here, of these
    Variances, against the equivalence band (relative); reachable: the most trials it could get (the budget's and
    MOST_TRIALS' limit): an entry that those would decide with a chance under FUTILITY is hopeless."""
    rho = tuned_rho(spread.information(MOST_TRIALS), level)  # fixed: the variances alone set it
    half = half_width(spread.information(trials), rho, level)
    bound = math.log1p(band)
    low, high = estimate - half, estimate + half
    if low >= bound or high <= -bound:
        state = noise_verdicts.SLOWER if low >= bound else noise_verdicts.FASTER
    elif -bound <= low and high <= bound:
        state = noise_verdicts.SAME
    else:
        power = conditional_power(spread, estimate, trials, max(trials, min(reachable, MOST_TRIALS)), bound, rho, level)
        state = HOPELESS if power < FUTILITY else UNDECIDED
    return Look(state, math.exp(estimate), math.exp(low), math.exp(high), trials)


def conditional_power(spread, estimate, trials, reach, bound, rho, level=LEVEL):
    """The chance that the confidence sequence decides the entry by `reach` trials were the log ratio the estimate
    now (stochastic curtailment, Lan, Simon and Halperin 1982): the estimate then is normal about the estimate now
    with the variance of what the trials between add, (I_reach - I_now) / I_reach^2."""
    end = spread.information(reach)
    half = half_width(end, rho, level)
    sd = math.sqrt(max(end - spread.information(trials), 0.0)) / end
    if sd == 0:
        return float(abs(abs(estimate) - bound) >= half)
    # P(above bound + half) + P(below -bound - half) + P(within +-(bound - half)), the last where half < bound
    edges = noise_model.distributions.norm.cdf([-bound - half, bound + half, -bound + half, bound - half],
                                               estimate, sd)
    return float(edges[0] + 1 - edges[1] + max(edges[3] - edges[2], 0.0))


def estimate(logs_a, logs_b):
    """D_k: the mean of this run's log trial medians less the median of A's (the mean: its increments are
    independent, the median's are not)."""
    return math.fsum(logs_b) / len(logs_b) - statistics.median(logs_a)


def trial_logs(entry):
    """The logs of an ok entry's trials' medians (of its one median where it was measured once); None where the
    entry is not ok or a trial has no positive median."""
    if entry.get("status") != "ok":
        return None
    records = entry.get("trials") or [entry]
    medians = [(record.get("time_s") or {}).get("median") for record in records]
    if not medians or not all(isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
                              and math.isfinite(value) for value in medians):
        return None
    return [math.log(value) for value in medians]


def judge(model, key, entry_a, entry_b, known, reachable=MOST_TRIALS):
    """The Look at entry_b (this run's, results.json's) against entry_a (A's) of one (study, name) key; known:
    how many of entry_b's trials came before its extra passes. None where either is not ok."""
    logs_a, logs_b = trial_logs(entry_a), trial_logs(entry_b)
    if logs_a is None or logs_b is None:
        return None
    median_s = math.exp(statistics.median(logs_b))
    kind, _ = noise_verdicts.kind_in(model, entry_b, median_s, key)
    spread = variances(model.kinds[kind], model.history(key), logs_a, logs_b[:known])
    return look(spread, estimate(logs_a, logs_b), len(logs_b), noise_verdicts.band_of(kind), reachable)
