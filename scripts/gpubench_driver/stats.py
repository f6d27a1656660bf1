"""Statistics over the per-repetition times of one entry."""
import statistics


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
