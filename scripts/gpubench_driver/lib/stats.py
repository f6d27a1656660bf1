"""Statistics over the sample times of one entry, and over its runs' counters; the uncertainty of an
entry's median and whether two entries differ beyond it."""
import math
import statistics
from dataclasses import dataclass
from typing import Optional

CONFIDENCE = 0.95  # of the median's interval


def finite(value):
    """A finite number (a bool is none), else None: fields may be absent, null, NaN or of another type."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def combine_repetitions(runs, count_key, medians=(), weighted=(), maxima=()):
    """Counters read over each repetition's timed loop, combined: `count_key` (its readings) summed, `medians`,
    readings-`weighted` means and `maxima` over the repetitions with readings; all None where none has a count."""
    combined = dict.fromkeys((count_key, *medians, *weighted, *maxima))
    counted = [(run, finite(run.get(count_key))) for run in runs]
    counted = [(run, count) for run, count in counted if count is not None]
    if not counted:
        return combined
    combined[count_key] = sum(count for _, count in counted)
    read = [(run, count) for run, count in counted if count > 0]

    def values(name):
        pairs = [(finite(run.get(name)), count) for run, count in read]
        return [(value, count) for value, count in pairs if value is not None]
    for name in medians:
        found = [value for value, _ in values(name)]
        combined[name] = statistics.median(found) if found else None
    for name in weighted:
        pairs = values(name)
        weight = sum(count for _, count in pairs)
        combined[name] = sum(value * count for value, count in pairs) / weight if weight else None
    for name in maxima:
        combined[name] = max((value for value, _ in values(name)), default=None)
    return combined


def summarize(samples):
    """median/min/max/quartiles/mean/sample stddev/cv of the repetition times (seconds)."""
    ordered = sorted(samples)
    mean = statistics.fmean(ordered)
    # Sample standard deviation (n-1), as Google Benchmark's own stddev aggregate.
    stddev = statistics.stdev(ordered) if len(ordered) > 1 else 0.0
    # 'inclusive' interpolates between the measured values, so q1/q3 stay within min..max.
    q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive") if len(ordered) > 1 else (ordered[0],) * 3
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1], "q1": q1, "q3": q3,
            "mean": mean, "stddev": stddev, "cv": stddev / mean if mean > 0 else None, "samples": list(samples)}


def nearest_rank_percentile(values, fraction):
    """The smallest value with at least `fraction` of the values at or below it (None for none)."""
    ordered = sorted(values)
    return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)] if ordered else None


def from_aggregates(values):
    """The part of the summary Google Benchmark's aggregates give when the samples are absent."""
    mean, stddev = values.get("mean"), values.get("stddev")
    return {"median": values["median"], "min": None, "max": None, "q1": None, "q3": None, "mean": mean,
            "stddev": stddev, "cv": stddev / mean if mean and stddev is not None else None, "samples": []}


# --- the uncertainty of the median --------------------------------------------------------
@dataclass(frozen=True)
class Interval:
    """Where an entry's median time lies: low..high seconds (None: no interval) and how they were found."""
    low: Optional[float]
    high: Optional[float]
    basis: str

    @property
    def known(self):
        return self.low is not None

    def record(self):
        """As results.json keeps it (`interval_s`): {low, high, basis}."""
        return {"low": self.low, "high": self.high, "basis": self.basis}

    @classmethod
    def of_record(cls, record):
        return cls(record["low"], record["high"], record["basis"])

    def per(self, items):
        """The interval of the time per item, for comparing entries of different batches by rate."""
        return Interval(self.low / items, self.high / items, self.basis) if self.known else self


def _order_statistic_rank(count, confidence):
    """(k, coverage): x(k)..x(count + 1 - k) of the sorted samples covers the median with probability
    1 - 2 P(Binomial(count, 1/2) < k); k the largest reaching confidence, else 1 (min..max)."""
    below = 0.0  # P(Binomial(count, 1/2) < k)
    rank, coverage = 1, 1 - 2 * 0.5 ** count
    for k in range(1, (count + 1) // 2 + 1):
        # P(Binomial(count, 1/2) = k - 1) in logarithms: comb(count, k - 1) / 2^count overflows from 1000 samples
        below += math.exp(math.lgamma(count + 1) - math.lgamma(k) - math.lgamma(count - k + 2) - count * math.log(2))
        if 1 - 2 * below < confidence:
            break
        rank, coverage = k, 1 - 2 * below
    return rank, coverage


def median_interval(time_s, confidence=CONFIDENCE):
    """The uncertainty interval of an entry's median time from its `time_s` (docs/results-schema.md): the
    order-statistic interval of its samples (min..max below 6), else q1..q3 or min..max; none for one sample."""
    samples = sorted(value for value in (time_s.get("samples") or []) if finite(value) is not None)
    unit = "trials' medians" if time_s.get("over") == "trials" else "samples"
    if len(samples) > 1:
        rank, coverage = _order_statistic_rank(len(samples), confidence)
        return Interval(samples[rank - 1], samples[-rank],
                        f"{coverage:.1%} order-statistic interval of the median of {len(samples)} {unit}")
    if len(samples) == 1:
        return Interval(None, None, "one trial: no interval" if time_s.get("over") == "trials"
                        else "one sample: no interval")
    for low, high in (("q1", "q3"), ("min", "max")):
        if finite(time_s.get(low)) is not None and finite(time_s.get(high)) is not None:
            return Interval(time_s[low], time_s[high], f"{low}..{high} (no samples)")
    return Interval(None, None, "no samples or quartiles: no interval")


def time_ratio_interval(reference_time_s, time_s):
    """[low, high] of reference time / time from the two medians' intervals; None where either has none."""
    reference, this = median_interval(reference_time_s), median_interval(time_s)
    if not (reference.known and this.known):
        return None
    return [reference.low / this.high, reference.high / this.low]


def interval_side(value, interval, threshold):
    """"below" or "above" the threshold where the value's interval ([low, high], or None: the value) lies wholly
    on that side (at it counts as above), else "within noise"."""
    low, high = interval or (value, value)
    if high < threshold:
        return "below"
    return "above" if low >= threshold else "within noise"


def time_per_item(point, rate_key):
    """The interval of a derived point's (`median_s`, rate_key, `interval_s`) median time per item."""
    return Interval.of_record(point["interval_s"]).per(point[rate_key] * point["median_s"])


def medians_differ(first_time_s, second_time_s):
    """beyond_spread of two `time_s` summaries' median intervals."""
    return beyond_spread(median_interval(first_time_s), median_interval(second_time_s))


def beyond_spread(first, second):
    """Whether two median times differ beyond their spread (their intervals do not overlap); None without one."""
    if not (first.known and second.known):
        return None
    return first.high < second.low or second.high < first.low
