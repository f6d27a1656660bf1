"""Statistics over the per-repetition times of one entry, and over its repetitions' counters."""
import math
import statistics


def finite(value):
    """A finite number (a bool is none), else None: fields may be absent, null, NaN or of another type."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else None


def combine_repetitions(runs, count_key, medians=(), weighted=(), maxima=()):
    """Counters read over each repetition's timed loop (Google Benchmark's per-repetition objects),
    combined: `count_key` (the readings in a loop) summed; `medians` the median of the repetitions'
    values, `weighted` their mean weighted by each repetition's readings, `maxima` the largest, each
    over the repetitions with readings and a finite value. All None when no repetition reported a
    count (no sampler, a CPU entry, only aggregates in the output)."""
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
    q1, q3 = _quartiles(ordered)
    return {
        "median": statistics.median(ordered),
        "min": ordered[0],
        "max": ordered[-1],
        "q1": q1,
        "q3": q3,
        "mean": mean,
        "stddev": stddev,
        "cv": stddev / mean if mean > 0 else None,
        "samples": list(samples),
    }


def _quartiles(ordered):
    if len(ordered) < 2:
        return ordered[0], ordered[0]
    # 'inclusive' interpolates between the measured values, so q1/q3 stay within min..max.
    q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return q1, q3


def from_aggregates(values):
    """The part of the summary Google Benchmark's aggregates give when the samples are absent."""
    mean, stddev = values.get("mean"), values.get("stddev")
    return {
        "median": values["median"],
        "min": None, "max": None, "q1": None, "q3": None,
        "mean": mean,
        "stddev": stddev,
        "cv": stddev / mean if mean and stddev is not None else None,
        "samples": [],
    }
