"""Pure statistics for benchmark samples: no I/O, no clocks, standard library only.

Everything is distribution-free. Benchmark timings are skewed and heavy-tailed,
so medians with order-statistic intervals and rank tests describe them more
honestly than means with normal intervals, and unlike the bootstrap they cost
a sort, which matters on a Cortex-A53.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

#: Below this many samples p90 and p99 are not reported: they would be the
#: maximum or an interpolation towards it, not a tail estimate.
MIN_N_FOR_TAILS = 100


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    stdev: float | None
    min: float
    max: float
    p90: float | None
    p99: float | None
    ci95_low: float | None
    ci95_high: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (Hyndman and Fan type 7)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * fraction


def _binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    if n > 1000:
        # Normal approximation with continuity correction; exact sums of
        # math.comb get slow and the approximation is excellent here.
        return statistics.NormalDist(n / 2, math.sqrt(n) / 2).cdf(k + 0.5)
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the order statistics bounding the median.

    The interval [x(lo), x(hi)] covers the population median with probability
    at least `level` for any continuous distribution. None when n is too small
    for any interval to reach that level (n < 6 at 95 %).
    """
    alpha = 1.0 - level
    best = None
    for r in range(1, n // 2 + 1):
        if _binomial_half_cdf(r - 1, n) <= alpha / 2:
            best = r
        else:
            break
    if best is None:
        return None
    return best - 1, n - best


def summarize(values: Sequence[float]) -> Summary:
    """n, mean, median, stdev, min, max, p90/p99 (n >= 100) and the median's 95 % CI."""
    if not values:
        raise ValueError("cannot summarize an empty sample")
    ordered = sorted(values)
    n = len(ordered)
    ranks = median_ci_ranks(n)
    tails = n >= MIN_N_FOR_TAILS
    return Summary(
        n=n,
        mean=statistics.fmean(ordered),
        median=statistics.median(ordered),
        stdev=statistics.stdev(ordered) if n > 1 else None,
        min=ordered[0],
        max=ordered[-1],
        p90=quantile(ordered, 0.90) if tails else None,
        p99=quantile(ordered, 0.99) if tails else None,
        ci95_low=ordered[ranks[0]] if ranks else None,
        ci95_high=ordered[ranks[1]] if ranks else None,
    )


def _ranks(values: Sequence[float]) -> tuple[list[float], float]:
    """Mid-ranks (1-based) of `values` and the tie term sum(t^3 - t)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    tie_term = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid_rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = mid_rank
        tied = j - i + 1
        tie_term += tied**3 - tied
        i = j + 1
    return ranks, tie_term


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test: (U of x, p-value).

    Normal approximation with tie and continuity corrections, as SciPy's
    `mannwhitneyu(method="asymptotic")`. When every value is tied, p is 1.
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney needs two non-empty samples")
    ranks, tie_term = _ranks(list(x) + list(y))
    u1 = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    n = n1 + n2
    variance = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:
        return u1, 1.0
    mean_u = n1 * n2 / 2
    z = (abs(u1 - mean_u) - 0.5) / math.sqrt(variance)
    p = 2 * (1 - statistics.NormalDist().cdf(max(z, 0.0)))
    return u1, min(1.0, p)


def ratio_ci(
    baseline: Sequence[float], candidate: Sequence[float], level: float = 0.95
) -> tuple[float, float] | None:
    """Distribution-free CI of candidate/baseline (Hodges-Lehmann shift of logs).

    The interval is the pair of order statistics of all pairwise differences
    log(c_j) - log(b_i) that inverts the Mann-Whitney test (Moses' interval),
    mapped back to a ratio. Needs positive values; None when the samples are
    too small for any interval at `level`.
    """
    if min(baseline) <= 0 or min(candidate) <= 0:
        raise ValueError("ratio_ci needs positive values")
    n1, n2 = len(baseline), len(candidate)
    z = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)
    k = math.floor(n1 * n2 / 2 - z * math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12))
    if k < 0:
        return None
    log_b = [math.log(v) for v in baseline]
    diffs = sorted(math.log(c) - lb for c in candidate for lb in log_b)
    return math.exp(diffs[k]), math.exp(diffs[len(diffs) - 1 - k])


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given."""
    m = len(pvalues)
    order = sorted(range(m), key=pvalues.__getitem__)
    adjusted = [0.0] * m
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (m - position) * pvalues[index]))
        adjusted[index] = running
    return adjusted
