"""Verdicts from the noise model (noise_model.py): is an entry on side B the same as, faster or slower
than on side A, and if neither can be said yet, what would decide it?

Per entry: the ratio of the medians shown (B over A) and its interval from the model (trial noise,
which more trials shrink, and the between-run part, which only more runs do); the verdict against
the equivalence band: `same` when the interval lies inside it (two one-sided tests at 5%, Schuirmann
1987: the 90% interval), `slower`/`faster` when it lies beyond the band on one side and the entry is
a discovery of its family; `unclear` otherwise, with what would decide it. The minimum detectable
effect is the change found with 80% power at the trials each side has. Error control is per family
(a study; the headline entries a family of their own): the Benjamini-Hochberg procedure over the
family's one-sided p-values of "beyond the band", so the verdicts of one family do not depend on how
many entries another holds. docs/methodology.md, "The noise model".
"""
import math
import statistics
from dataclasses import dataclass
from typing import Optional

from gpubench_driver.lib import noise_model

SAME, FASTER, SLOWER, UNCLEAR = "same", "faster", "slower", "unclear"
VERDICTS = (SAME, FASTER, SLOWER, UNCLEAR)
CONFIDENCE = 0.90              # of the interval shown: each verdict is a one-sided test at 5%
FALSE_DISCOVERY_RATE = 0.05    # per family
POWER = 0.8                    # of the minimum detectable effect
# The equivalence band per kind: a difference within it is none. Device-timed entries of 100 us or
# more are steady to a few tenths of a percent within a run; shorter or host-timed ones are not.
BANDS = {"throughput-long": 0.02}
DEFAULT_BAND = 0.05
MOST_TRIALS = 20               # options.MAX_TRIALS: no advice of more trials than a run can take
MOST_RUNS = 5                  # no advice of more runs of each side than this


def band_of(kind):
    return BANDS.get(kind, DEFAULT_BAND)


def kind_in(model, entry, median_s, key=None):
    """(the kind an entry is judged as, whether that is its own): the kind of the entry (a mapping with its
    protocol, and its device and mode where known; None: unknown), its median and its A/A history in the
    model (key: (study, name); None: a figure, none) where the model has that kind, else the model's widest (an entry of a file from
    before the protocols, or of a kind the A/A runs did not measure)."""
    kind = noise_model.kind_of(entry, median_s, key is not None and noise_model.shown_noisy(model.history(key)))
    if kind in model.kinds:
        return kind, True
    return max(model.kinds, key=lambda name: model.kinds[name].side(None, [0.0])[0][0]
               + model.kinds[name].side(None, [0.0])[1][0]), False


def side_of(entry):
    """A results file entry's side of a comparison: its trials' medians, or its one median (the
    repetitions of one process are no independent measurements of it)."""
    time_s = entry["time_s"]
    if time_s.get("over") == "trials":
        medians = tuple(value for value in time_s["samples"]
                        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0)
        if medians:
            return Side(medians)
    return Side((time_s["median"],))


@dataclass(frozen=True)
class Side:
    """One side of an entry's comparison: its trials' medians (one value for an entry measured once)."""
    medians: tuple

    @property
    def logs(self):
        return [math.log(value) for value in self.medians]

    @property
    def median(self):
        return statistics.median(self.medians)


@dataclass(frozen=True)
class Comparison:
    """An entry compared, before its family's error control (`decide` gives the verdict)."""
    kind: str
    band: float            # relative: 0.02 is +-2%
    ratio: float           # B's median over A's: the ratio shown
    low: float             # its CONFIDENCE interval
    high: float
    sd: float              # of the log ratio
    df: float              # its Satterthwaite degrees of freedom
    between_share: float   # the share of its variance that more trials cannot shrink
    p_beyond: float        # one-sided p-value of "the true ratio lies beyond the band on this side"
    mde: float             # the change detected with POWER at these trials (relative: 0.03 is 3%)
    plan: Optional[tuple]  # (KindModel, history, logs of A, logs of B): what `advice` projects from


def _t():
    noise_model.require_scipy()
    return noise_model.distributions.t


def _quantile(probability, df):
    return float(_t().ppf(probability, min(df, 1e6)))


def _spread(kind_model, history, logs_a, logs_b, more=0, runs=1):
    """(sd, df, the between-run share of the variance) of the log ratio, with `more` trials of each side
    than measured and over `runs` runs of each side (the df stay those of the trials measured)."""
    parts = [part for logs in (logs_a, logs_b) for part in kind_model.side(history, logs, len(logs) + more, runs)]
    trial_part = sum(kind_model.within(history, logs)[0] * noise_model.median_variance(len(logs) + more) / runs
                     for logs in (logs_a, logs_b))
    return _sd_df_share(parts, trial_part)


def _sd_df_share(parts, trial_part):
    variance = sum(part for part, _ in parts)
    return math.sqrt(variance), noise_model.satterthwaite(parts), 1 - trial_part / variance


def detectable(sd, df, band):
    """The minimum detectable effect (relative): the change whose interval lies beyond the band with
    probability POWER, at this sd and df."""
    return math.expm1(math.log1p(band) + (_quantile(0.5 + CONFIDENCE / 2, df) + _quantile(POWER, df)) * sd)


def compare(model, key, kind, first, second, band=None, ratio=None):
    """The Comparison of one entry (key: (study, name), None: no A/A history) of a kind between two Sides;
    ratio: the ratio shown where it is not that of the Sides' medians (a figure computed from the median
    time, whose trials' values have another median where they are even in number)."""
    plan = (_kind_model(model, kind), model.history(key), first.logs, second.logs)
    return _comparison(kind, band_of(kind) if band is None else band,
                       math.log(ratio if ratio is not None else second.median / first.median), _spread(*plan), plan)


def against_reference(model, key, kind, side, reference_s, count, reference_trials, band=None):
    """The Comparison of one entry measured on one GPU (side) against reference_s, the median of the same
    entry's medians on the `count` GPUs of its node (run --gpus), each measured in reference_trials trials
    or more. Each GPU is a run of its own: the reference's variance is that of one run's median (the
    model's prior and the entry's A/A history; the GPUs' trials are not pooled, a difference between
    them is what is asked) times the variance of the median of `count` values, taken as independent of
    the side's (the median of three or more is not moved by one GPU). No advice: a node is not run again
    from its report."""
    kind_model = _kind_model(model, kind)
    history = model.history(key)
    share = noise_model.median_variance(count)
    parts = kind_model.side(history, side.logs) + [
        (variance * share, df) for variance, df in kind_model.side(history, [], reference_trials)]
    trial_part = (kind_model.within(history, side.logs)[0] * noise_model.median_variance(len(side.logs))
                  + kind_model.within(history, [])[0] * noise_model.median_variance(reference_trials) * share)
    return _comparison(kind, band_of(kind) if band is None else band, math.log(side.median / reference_s),
                       _sd_df_share(parts, trial_part), None)


def _kind_model(model, kind):
    kind_model = model.kinds.get(kind)
    if kind_model is None:
        raise noise_model.NoiseModelError(f"the noise model has no {kind} entries (it has "
                                          f"{', '.join(model.kinds)}): fit it on A/A runs that measure them")
    return kind_model


def _comparison(kind, band, log_ratio, spread, plan):
    """A Comparison of a log ratio whose (sd, df, between-run share) is `spread`."""
    sd, df, between_share = spread
    half = _quantile(0.5 + CONFIDENCE / 2, df) * sd
    beyond = (abs(log_ratio) - math.log1p(band)) / sd  # sd > 0: a model's prior_sd is 1e-6 or more
    return Comparison(kind, band, math.exp(log_ratio), math.exp(log_ratio - half), math.exp(log_ratio + half), sd, df,
                      between_share, float(_t().sf(beyond, min(df, 1e6))), detectable(sd, df, band), plan)


def beyond_noise(comparison):
    """The change (relative) beyond which this comparison's interval lies beyond its band: the
    smallest slowdown it would call slower at its sd, before its family's control."""
    return math.expm1(math.log1p(comparison.band) + _quantile(0.5 + CONFIDENCE / 2, comparison.df) * comparison.sd)


def range_margin(model, protocol, median_s=None):
    """(kind, margin): how far beyond a range of other runs' values a run's figure may lie and still be
    no difference, for a figure timed by `protocol` from an entry of median_s seconds (None: unknown, the
    wider of the protocol's two kinds): the kind's band and the one-sided 95% normal quantile of the
    difference of two runs' medians of one trial each, the kind's typical entry. Stdlib only: the health
    check reads it on every report, scipy or not."""
    if median_s is not None:
        kind, _ = kind_in(model, {"protocol": protocol}, median_s)
        candidates = [kind]
    else:
        candidates = [kind for kind in (f"{protocol}-long", f"{protocol}-short") if kind in model.kinds] or [
            kind_in(model, None, 1.0)[0]]

    def margin(kind):
        k = model.kinds[kind]
        one_run = k.prior_sd ** 2 * (1 + k.ratio) + k.floor_sd ** 2
        return math.expm1(math.log1p(band_of(kind)) + statistics.NormalDist().inv_cdf(0.95) * math.sqrt(2 * one_run))
    kind = max(candidates, key=margin)
    return kind, margin(kind)


def _decided(log_ratio, sd, df, band):
    """Whether the interval of this sd around log_ratio lies inside the band or beyond it."""
    half = _quantile(0.5 + CONFIDENCE / 2, df) * sd
    return abs(abs(log_ratio) - math.log1p(band)) >= half


def advice(comparison):
    """What would decide an unclear entry were its ratio to stay: more trials of each side while the
    trial noise can still shrink enough, else more runs of each; said plainly when neither would (the
    entry's noise is wide for how near the ratio lies to the band's edge)."""
    log_ratio = math.log(comparison.ratio)
    kind_model, history, logs_a, logs_b = comparison.plan
    for more in range(1, MOST_TRIALS - max(len(logs_a), len(logs_b)) + 1):
        sd, df, _ = _spread(kind_model, history, logs_a, logs_b, more)
        if _decided(log_ratio, sd, df, comparison.band):
            return f"{more} more trial{'s' if more > 1 else ''} of each side"
    for runs in range(2, MOST_RUNS + 1):
        sd, df, _ = _spread(kind_model, history, logs_a, logs_b, runs=runs)
        if _decided(log_ratio, sd, df, comparison.band):
            return "another run of each side" if runs == 2 else f"{runs - 1} more runs of each side"
    return f"not within {MOST_TRIALS} trials or {MOST_RUNS} runs of each side"


@dataclass(frozen=True)
class Verdict:
    comparison: Comparison
    verdict: str
    advice: Optional[str]  # for unclear: what would decide it

    def record(self):
        c = self.comparison
        return {"kind": c.kind, "ratio": c.ratio, "interval": [c.low, c.high], "confidence": CONFIDENCE,
                "band": c.band, "verdict": self.verdict, "p_beyond_band": c.p_beyond, "min_detectable_effect": c.mde,
                "between_run_share": c.between_share,
                "dominant": "between runs" if c.between_share > 0.5 else "between trials", "advice": self.advice}


def counts(verdicts):
    """{verdict: how many of the Verdicts have it}, every verdict named."""
    named = [verdict.verdict for verdict in verdicts]
    return {name: named.count(name) for name in VERDICTS}


def benjamini_hochberg(p_values, rate=FALSE_DISCOVERY_RATE):
    """Which of the p-values (their indices) are discoveries at the false discovery rate: the
    Benjamini-Hochberg step-up. Written here: Debian 12's scipy (1.10) has no false_discovery_control."""
    order = sorted(range(len(p_values)), key=lambda index: p_values[index])
    cutoff = 0
    for rank, index in enumerate(order, start=1):
        if p_values[index] <= rank / len(p_values) * rate:
            cutoff = rank
    return set(order[:cutoff])


def decide(comparisons, families, advise=True):
    """[Verdict] of the comparisons, each of the family named at its place in `families` (e.g. its study,
    or "headline"): a family's discoveries (Benjamini-Hochberg) whose interval lies beyond the band are
    faster or slower; an interval inside the band is same; any other is unclear, with advice unless
    advise is false."""
    discovered = set()
    for family in set(families):
        members = [index for index, name in enumerate(families) if name == family]
        p_values = [comparisons[index].p_beyond for index in members]
        discovered |= {members[i] for i in benjamini_hochberg(p_values, FALSE_DISCOVERY_RATE)}
    verdicts = []
    for index, c in enumerate(comparisons):
        bound = math.log1p(c.band)
        if index in discovered and (math.log(c.low) >= bound or math.log(c.high) <= -bound):
            verdicts.append(Verdict(c, SLOWER if c.ratio > 1 else FASTER, None))
        elif -bound <= math.log(c.low) and math.log(c.high) <= bound:
            verdicts.append(Verdict(c, SAME, None))
        else:
            verdicts.append(Verdict(c, UNCLEAR, advice(c) if advise and c.plan else None))
    return verdicts
