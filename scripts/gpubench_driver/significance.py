"""Whether two entries' sample times differ: the two-sided Mann–Whitney U test, exact for small samples.

For up to EXACT_MAX samples a side the p-value is exact, ties included: the null distribution of
the first sample's rank sum (midranks for ties) is counted over every way of drawing its size from
the pooled ranks, without scipy. With 3 to 5 samples a side the smallest attainable p-value can
reach alpha (3 vs 3: 2/20 = 0.1); the verdict then says that no difference could be shown, whatever
the times. Larger samples (the steady-state loop takes hundreds) use the normal approximation with
the tie correction: counting every draw would take hours.
"""
import collections
import math
from dataclasses import dataclass

ALPHA = 0.05
EXACT_MAX = 30
A_FASTER = "A faster"
B_FASTER = "B faster"
NO_DIFFERENCE = "no significant difference"
TOO_FEW = "too few repetitions to show a difference"
NO_SAMPLES = "no repetition times"


@dataclass(frozen=True)
class Test:
    verdict: str  # one of the constants above
    p_value: float = None  # None without samples
    smallest_p: float = None  # the smallest p-value these sample sizes (and ties) allow


def _doubled_midranks(pooled):
    """Twice each value's midrank in the pooled sample: integers even with ties."""
    ordered = sorted(pooled)
    first, last = {}, {}
    for position, value in enumerate(ordered, start=1):
        first.setdefault(value, position)
        last[value] = position
    return [first[value] + last[value] for value in pooled]


def _rank_sum_counts(doubled_ranks, size):
    """How many draws of `size` of the ranks give each (doubled) rank sum."""
    counts = [collections.Counter() for _ in range(size + 1)]
    counts[0][0] = 1
    for rank in doubled_ranks:
        for taken in range(size, 0, -1):
            for total, ways in counts[taken - 1].items():
                counts[taken][total + rank] += ways
    return counts[size]


def mann_whitney(a, b, alpha=ALPHA):
    """Two-sided test of the times `a` against `b` (seconds; lower is faster)."""
    if not a or not b:
        return Test(NO_SAMPLES)
    ranks = _doubled_midranks(list(a) + list(b))
    if min(len(a), len(b)) > EXACT_MAX:
        return _normal_approximation(ranks, len(a), len(b), alpha)
    observed = sum(ranks[:len(a)])
    mean = len(a) * (len(a) + len(b) + 1)  # doubled, like the ranks
    counts = _rank_sum_counts(ranks, len(a))
    draws = math.comb(len(a) + len(b), len(a))
    deviation = abs(observed - mean)
    p_value = min(1.0, sum(ways for total, ways in counts.items() if abs(total - mean) >= deviation) / draws)
    widest = max(abs(total - mean) for total in counts)
    smallest_p = sum(ways for total, ways in counts.items() if abs(total - mean) == widest) / draws
    if smallest_p >= alpha:
        return Test(TOO_FEW, p_value, smallest_p)
    if p_value >= alpha:
        return Test(NO_DIFFERENCE, p_value, smallest_p)
    return Test(A_FASTER if observed < mean else B_FASTER, p_value, smallest_p)


def _normal_approximation(doubled_ranks, size_a, size_b, alpha):
    """The test on large samples: the rank sum's z-score with the variance corrected for ties."""
    total = size_a + size_b
    observed = sum(doubled_ranks[:size_a]) / 2
    mean = size_a * (total + 1) / 2
    ties = collections.Counter(doubled_ranks).values()
    tie_term = sum(count ** 3 - count for count in ties) / (total * (total - 1))
    variance = size_a * size_b / 12 * (total + 1 - tie_term)
    if variance <= 0:
        return Test(NO_DIFFERENCE, 1.0, 1.0)
    p_value = min(1.0, math.erfc(abs(observed - mean) / math.sqrt(2 * variance)))
    if p_value >= alpha:
        return Test(NO_DIFFERENCE, p_value, 0.0)
    return Test(A_FASTER if observed < mean else B_FASTER, p_value, 0.0)
