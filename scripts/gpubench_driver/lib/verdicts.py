"""Verdicts for `rank`: is a headline figure of run B the same as, faster or slower than in run A, or
is it unclear? (`compare` judges entries by the noise model instead: noise_verdicts.py.)

As nvbench-compare-robust decides SAME/FAST/SLOW/AMBIGUOUS from intervals: a ratio B/A and its
interval, against a minimum effect worth reporting.
- Both entries measured in at least two independent trials (trials.py): Welch's t-test on the
  logarithms of the trials' medians (scipy), the interval of the log ratio from the same t
  distribution; the p-values of all the entries compared are held to a false discovery rate
  (Benjamini-Hochberg), so a comparison of hundreds of entries does not flag noise by chance.
- Otherwise (one trial: the samples of one process say nothing of the next, docs/methodology.md)
  the interval is the ratio +- the between-run noise floor of the entry's protocol, measured on
  an A/A pair (aa_noise_floor.py: scripts/noise_floor.json); no p-value.
Then: `faster`/`slower` when the difference is significant (the interval excludes no change, and for
trials also the corrected test) and at least the minimum effect; `same` when the whole interval lies
within the minimum effect; `unclear` otherwise.
"""
import functools
import math
import statistics
from dataclasses import dataclass
from typing import Optional

from gpubench_driver.lib import aa_noise_floor, stats

SAME, FASTER, SLOWER, UNCLEAR = "same", "faster", "slower", "unclear"
CONFIDENCE = 0.95
FALSE_DISCOVERY_RATE = 0.05
# The smallest change worth a verdict: device-timed entries of 100 us or more are steady to a few
# percent within a run; shorter or host-timed ones are not.
LONG_ENTRY_S = 1e-4
MIN_EFFECT_LONG_DEVICE = 0.02
MIN_EFFECT_OTHER = 0.05


class MissingScipy(Exception):
    """This Python has no scipy; the message says what to install."""


@dataclass(frozen=True)
class Verdict:
    ratio: float              # B's median over A's (below 1: B faster)
    low: float                # the ratio's interval
    high: float
    verdict: str
    basis: str                # "trials" or "noise floor"
    p_value: Optional[float] = None
    min_effect: float = None

    def record(self):
        return {"ratio": self.ratio, "interval": [self.low, self.high], "verdict": self.verdict,
                "basis": self.basis, "p_value": self.p_value, "min_effect": self.min_effect}


@dataclass(frozen=True)
class Measured:
    """What a verdict reads of one file's side: its value (an entry's median time, or a figure computed
    from it), that value at each of its independent trials (fewer than two: the noise floor decides) and
    the protocol that timed it (whose noise floor)."""
    value: float
    trial_values: tuple = ()
    protocol: Optional[str] = None


def long_gpu_entry(entry):
    """A GPU entry of LONG_ENTRY_S or more: the A/A targets' kind held to 2% (docs/methodology.md)."""
    return entry["device"] == "gpu" and entry["time_s"]["median"] >= LONG_ENTRY_S


def min_effect(entry):
    long_device = entry.get("protocol") == "throughput" and entry["time_s"]["median"] >= LONG_ENTRY_S
    return MIN_EFFECT_LONG_DEVICE if long_device else MIN_EFFECT_OTHER


def _trial_logs(measured):
    """The logarithms of the side's trial values, or None when it has fewer than two."""
    logs = [math.log(value) for value in measured.trial_values if stats.finite(value) and value > 0]
    return logs if len(logs) >= 2 else None


def _welch(first, second):
    """(difference of means of second - first, its standard error, degrees of freedom)."""
    va, vb = statistics.variance(first) / len(first), statistics.variance(second) / len(second)
    se = math.sqrt(va + vb)
    if se == 0:
        return statistics.fmean(second) - statistics.fmean(first), 0.0, math.inf
    df = (va + vb) ** 2 / (va ** 2 / (len(first) - 1) + vb ** 2 / (len(second) - 1))
    return statistics.fmean(second) - statistics.fmean(first), se, df


def _t_test(first, second):
    """(log ratio, its interval half-width, two-sided p-value) from the trials' log medians."""
    try:
        from scipy import stats as scipy_stats
    except ImportError:
        raise MissingScipy("comparing entries measured in trials needs scipy's t distribution: "
                           "install python3-scipy (e.g. 'sudo apt-get install python3-scipy')") from None
    difference, se, df = _welch(first, second)
    if se == 0:
        return difference, 0.0, 1.0 if difference == 0 else 0.0
    quantile = scipy_stats.t.ppf(0.5 + CONFIDENCE / 2, df)
    p_value = 2 * scipy_stats.t.sf(abs(difference) / se, df)
    return difference, quantile * se, p_value


@functools.cache
def noise_floor():
    """scripts/noise_floor.json (aa_noise_floor.load), read once: its floors and the pair they were measured on."""
    return aa_noise_floor.load()


def _floor(measured):
    floors = noise_floor()["floors"]
    return floors.get(measured.protocol, max(floors.values()))  # the widest for files from before the protocols


def _decide(log_ratio, half_width, effect, significant):
    bound = math.log1p(effect)
    if significant and abs(log_ratio) >= bound and abs(log_ratio) > half_width:
        return FASTER if log_ratio < 0 else SLOWER
    if abs(log_ratio) + half_width <= bound:
        return SAME
    return UNCLEAR


def benjamini_hochberg(p_values, rate=FALSE_DISCOVERY_RATE):
    """Which of the p-values are discoveries at the false discovery rate (Benjamini-Hochberg step-up).
    Written here: Debian 12's scipy (1.10) has no false_discovery_control."""
    order = sorted(range(len(p_values)), key=lambda index: p_values[index])
    cutoff = 0
    for rank, index in enumerate(order, start=1):
        if p_values[index] <= rank / len(p_values) * rate:
            cutoff = rank
    return {index for index in order[:cutoff]}


def compare_measured(pairs, effects):
    """[Verdict] for [(Measured of A, Measured of B)], each held to its minimum effect (effects, in order):
    rank's judgement of the figures computed from entries. The trial-based tests share one family."""
    tests, floors = {}, {}
    for index, (first, second) in enumerate(pairs):
        logs = (_trial_logs(first), _trial_logs(second))
        if logs[0] and logs[1]:
            tests[index] = _t_test(*logs)
        else:
            log_ratio = math.log(second.value / first.value)
            floors[index] = (log_ratio, max(_floor(first), _floor(second)))
    keys = list(tests)
    discoveries = {keys[i] for i in benjamini_hochberg([tests[key][2] for key in keys])} if keys else set()
    verdicts = []
    for index, effect in enumerate(effects):
        if index in tests:
            log_ratio, half_width, p_value = tests[index]
            verdict = _decide(log_ratio, half_width, effect, index in discoveries)
            basis = "trials"
        else:
            (log_ratio, half_width), p_value = floors[index], None
            verdict = _decide(log_ratio, half_width, effect, True)
            basis = "noise floor"
        verdicts.append(Verdict(math.exp(log_ratio), math.exp(log_ratio - half_width),
                                math.exp(log_ratio + half_width), verdict, basis, p_value, effect))
    return verdicts
