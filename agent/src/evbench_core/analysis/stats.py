"""Pure statistics for benchmark samples: no I/O, no clocks, standard library only.

Everything is distribution-free. Benchmark timings are skewed and heavy-tailed,
so medians with order-statistic intervals and rank tests describe them more
honestly than means with normal intervals, and unlike the bootstrap they cost
a sort, which matters on a Cortex-A53.

Exactness: the rank tests and the intervals that invert them use the exact
null distribution (counted with Python integers) whenever the samples are small
enough to count and have no ties, and the normal approximation otherwise.
p-values come from survival functions (``math.erfc``), never ``1 - cdf``, so
they do not round to 0 before about 1e-300.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

#: Below this many samples p90 and p99 are not reported: they would be the
#: maximum or an interpolation towards it, not a tail estimate.
MIN_N_FOR_TAILS = 100

#: Largest sample sizes for which the exact null distributions are counted
#: (cost grows with n^3 for the signed-rank and n1 * n2 * (n1 + n2) for the
#: rank-sum; beyond these the normal approximation is excellent).
EXACT_SIGNED_RANK_MAX_N = 60
EXACT_RANK_SUM_MAX_N = 60


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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (Hyndman and Fan type 7)."""
    if not sorted_values:
        raise ValueError("quantile of no values")
    position = (len(sorted_values) - 1) * q
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    fraction = position - low
    below, above = sorted_values[low], sorted_values[high]
    value = below + (above - below) * fraction
    if math.isfinite(value) or not (math.isfinite(below) and math.isfinite(above)):
        return value
    # the difference overflowed (values of both signs near 1e308): the same in two parts
    return below * (1 - fraction) + above * fraction


# --- the normal distribution's tails, without cancellation --------------------------


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z, accurate in the far tail (erfc, not 1 - cdf)."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_two_sided_p(z: float) -> float:
    """P(|Z| >= |z|)."""
    return min(1.0, math.erfc(abs(z) / math.sqrt(2.0)))


# --- Binomial(n, 1/2): the order-statistic interval of the median -----------------


def _log_binomial_half_pmf(k: int, n: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0)


def binomial_half_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exact to rounding at every n.

    Sums the probability mass from k downwards in floating point, starting
    from the log of the k-th term (lgamma), and stops when the terms no longer
    change the sum: about sqrt(n) * 40 terms at most, so n = 10^6 costs
    milliseconds where summing math.comb took a second at n = 1000.
    """
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if 2 * k > n:  # upper half: the complement is the smaller sum, by symmetry
        return 1.0 - binomial_half_cdf(n - k - 1, n)
    term = math.exp(_log_binomial_half_pmf(k, n))
    total = 0.0
    i = k
    while i >= 0:
        total += term
        if term <= total * 1e-17:
            break
        term *= i / (n - i + 1)  # pmf(i - 1) / pmf(i)
        i -= 1
    return min(total, 1.0)


def median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi) of the order statistics bounding the median.

    The interval [x(lo), x(hi)] covers the population median with probability
    at least `level` for any continuous distribution, and is the narrowest
    symmetric pair of ranks that does. None when n is too small for any
    interval to reach that level (n < 6 at 95 %).
    """
    if n < 1:
        return None
    tail = (1.0 - level) / 2
    # With r order statistics cut off each side, coverage is 1 - 2 P(X <= r - 1).
    # Start near the normal approximation, then step to the exact boundary.
    z = statistics.NormalDist().inv_cdf(1 - tail)
    r = max(1, min(n // 2, math.floor(n / 2 - z * math.sqrt(n) / 2)))
    while r > 1 and binomial_half_cdf(r - 1, n) > tail:
        r -= 1
    while r + 1 <= n // 2 and binomial_half_cdf(r, n) <= tail:
        r += 1
    if binomial_half_cdf(r - 1, n) > tail:
        return None
    return r - 1, n - r


def _stdev(values: Sequence[float], mean: float) -> float:
    """The sample standard deviation, two-pass with an exactly rounded sum: within an ulp
    or two of statistics.stdev, which sums exact fractions and took 0.1 s per 64,000
    values (a full link run's RTTs), most of a report's statistics.

    `values` are sorted. Values near the float range (1e308) overflow the squares:
    they are then scaled by the largest magnitude first (the result is inf only where
    the stdev itself is)."""
    try:
        spread = math.fsum((v - mean) ** 2 for v in values)
    except OverflowError:
        spread = math.inf
    if math.isfinite(spread):
        return math.sqrt(spread / (len(values) - 1))
    scale = max(abs(values[0]), abs(values[-1]))  # sorted: the extremes are at the ends
    if not math.isfinite(scale):
        return spread
    scaled_mean = math.fsum(v / scale for v in values) / len(values)
    spread = math.fsum((v / scale - scaled_mean) ** 2 for v in values)
    return math.sqrt(spread / (len(values) - 1)) * scale


def _mean(values: Sequence[float]) -> float:
    """statistics.fmean of sorted `values`, or near the float range (where its sum
    overflows) the mean of the values scaled by the largest magnitude."""
    try:
        mean = statistics.fmean(values)
    except OverflowError:
        mean = math.inf
    if math.isfinite(mean):
        return mean
    scale = max(abs(values[0]), abs(values[-1]))
    if not math.isfinite(scale):
        return mean  # an infinite or NaN value makes the mean so, as fmean says
    # scaled by the largest magnitude: every term within 1, their mean too
    return math.fsum(v / scale for v in values) / len(values) * scale


def _sorted_median(ordered: Sequence[float]) -> float:
    """statistics.median of values already sorted (it would sort them again)."""
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    median = (ordered[middle - 1] + ordered[middle]) / 2
    if math.isfinite(median) or not math.isfinite(ordered[middle - 1] + 0 * ordered[middle]):
        return median
    return ordered[middle - 1] / 2 + ordered[middle] / 2  # the sum overflowed near 1e308


def summarize(values: Sequence[float]) -> Summary:
    """n, mean, median, stdev, min, max, p90/p99 (n >= 100) and the median's 95 % CI."""
    if not values:
        raise ValueError("cannot summarize an empty sample")
    ordered = sorted(values)
    n = len(ordered)
    ranks = median_ci_ranks(n)
    tails = n >= MIN_N_FOR_TAILS
    mean = _mean(ordered)
    return Summary(
        n=n,
        mean=mean,
        median=_sorted_median(ordered),
        stdev=_stdev(ordered, mean) if n > 1 else None,
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


# --- exact null distributions ----------------------------------------------------


@lru_cache(maxsize=256)
def rank_sum_counts(n1: int, n2: int) -> tuple[int, ...]:
    """counts[u] = number of the C(n1 + n2, n1) orderings whose Mann-Whitney U is u.

    U counts the pairs (x_i, y_j) with y_j < x_i; under the null every
    ordering is equally likely. Counted as the coefficients of the Gaussian
    binomial coefficient, prod_{i=1..n1} (1 - q^(n2 + i)) / (1 - q^i).
    """
    size = n1 * n2 + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n1 + 1):
        step = n2 + i
        for u in range(size - 1, step - 1, -1):  # multiply by (1 - q^step)
            poly[u] -= poly[u - step]
        for u in range(i, size):  # divide by (1 - q^i): a running sum with stride i
            poly[u] += poly[u - i]
    return tuple(poly)


@lru_cache(maxsize=256)
def signed_rank_counts(n: int) -> tuple[int, ...]:
    """counts[w] = number of the 2^n sign patterns whose Wilcoxon W+ is w (prod (1 + q^i))."""
    size = n * (n + 1) // 2 + 1
    poly = [0] * size
    poly[0] = 1
    top = 0
    for i in range(1, n + 1):
        top += i
        for w in range(top, i - 1, -1):
            poly[w] += poly[w - i]
    return tuple(poly)


def _lower_tail_index(counts: Sequence[int], alpha_half: float) -> int:
    """The largest k such that P(T <= k - 1) <= alpha_half (0 when even P(T <= 0) exceeds it)."""
    total = sum(counts)
    cumulative = 0
    k = 0
    for value, count in enumerate(counts):
        cumulative += count
        # exact integer comparison: cumulative / total <= alpha_half
        if cumulative > alpha_half * total * (1 + 1e-12):
            break
        k = value + 1
    return k


def min_p_rank_sum(n1: int, n2: int) -> float:
    """The smallest two-sided p the exact Mann-Whitney test can give at these sizes."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def min_p_signed_rank(n: int) -> float:
    """The smallest two-sided p the exact signed-rank test can give with n pairs."""
    return min(1.0, 2 / 2**n) if n > 0 else 1.0


# --- two independent samples: Mann-Whitney and the Moses / Hodges-Lehmann interval --


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
    return u1, normal_two_sided_p(max(z, 0.0))


def mann_whitney_exact(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney test, exact when it can be (no ties, both n <= 60).

    Otherwise the normal approximation of `mann_whitney`. Returns (U of x, p).
    """
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("Mann-Whitney needs two non-empty samples")
    combined = list(x) + list(y)
    if len(set(combined)) < len(combined) or max(n1, n2) > EXACT_RANK_SUM_MAX_N:
        return mann_whitney(x, y)
    u1 = sum(1 for a in x for b in y if b < a)
    counts = rank_sum_counts(n1, n2)
    total = math.comb(n1 + n2, n1)
    lower = sum(counts[: u1 + 1])
    upper = sum(counts[u1:])
    return float(u1), min(1.0, 2 * min(lower, upper) / total)


def moses_ranks(n1: int, n2: int, level: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi), among the n1 * n2 sorted pairwise differences, of the
    interval for a shift that inverts the two-sided Mann-Whitney test at `level`.

    Exact for n1, n2 <= 60: the interval [d(lo), d(hi)] covers the true shift
    with probability 1 - 2 P(U <= lo) >= level, and cutting one more difference
    off each side would fall below `level`. None when no interval reaches it
    (n1 = n2 = 3 at 95 %). Larger samples use the normal approximation.
    """
    if n1 < 1 or n2 < 1:
        return None
    alpha_half = (1 - level) / 2
    total = n1 * n2
    if max(n1, n2) <= EXACT_RANK_SUM_MAX_N:
        k = _lower_tail_index(rank_sum_counts(n1, n2), alpha_half)
    else:
        z = statistics.NormalDist().inv_cdf(1 - alpha_half)
        # P(U <= k - 1) ~ Phi((k - 1 + 0.5 - mean) / sd): the largest k it allows
        k = math.floor(total / 2 - z * math.sqrt(total * (n1 + n2 + 1) / 12) + 0.5)
    if k < 1:
        return None
    return k - 1, total - k


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
    ranks = moses_ranks(len(baseline), len(candidate), level)
    if ranks is None:
        return None
    log_b = [math.log(v) for v in baseline]
    diffs = sorted(math.log(c) - lb for c in candidate for lb in log_b)
    return math.exp(diffs[ranks[0]]), math.exp(diffs[ranks[1]])


def ratio_estimate(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """Hodges-Lehmann estimate of candidate/baseline: exp(median of log differences)."""
    log_b = [math.log(v) for v in baseline]
    return math.exp(statistics.median(math.log(c) - lb for c in candidate for lb in log_b))


def shift_ci(
    baseline: Sequence[float], candidate: Sequence[float], level: float = 0.95
) -> tuple[float, float] | None:
    """Distribution-free CI of the shift candidate - baseline (Moses' interval): the pair
    of order statistics of all differences c_j - b_i that inverts the Mann-Whitney
    test. None when the samples are too small for any interval at `level`."""
    ranks = moses_ranks(len(baseline), len(candidate), level)
    if ranks is None:
        return None
    diffs = sorted(c - b for c in candidate for b in baseline)
    return diffs[ranks[0]], diffs[ranks[1]]


def shift_estimate(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """Hodges-Lehmann two-sample shift: the median of every c_j - b_i."""
    return statistics.median(c - b for c in candidate for b in baseline)


# --- paired samples: Wilcoxon signed-rank and the Walsh-average interval ------------


def signed_rank(differences: Sequence[float]) -> tuple[float, float]:
    """Two-sided Wilcoxon signed-rank test of a zero median: (W+, p).

    Zero differences are dropped (Wilcoxon's convention). Exact for up to 60
    non-zero differences without ties in |d|; otherwise the normal
    approximation with tie and continuity corrections.
    """
    nonzero = [d for d in differences if d != 0]
    n = len(nonzero)
    if n == 0:
        return 0.0, 1.0
    magnitudes = [abs(d) for d in nonzero]
    ranks, tie_term = _ranks(magnitudes)
    w_plus = sum(r for r, d in zip(ranks, nonzero, strict=True) if d > 0)
    if len(set(magnitudes)) == n and n <= EXACT_SIGNED_RANK_MAX_N:
        counts = signed_rank_counts(n)
        w = round(w_plus)
        lower = sum(counts[: w + 1])
        upper = sum(counts[w:])
        return w_plus, min(1.0, 2 * min(lower, upper) / 2**n)
    mean = n * (n + 1) / 4
    variance = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48
    if variance <= 0:
        return w_plus, 1.0
    z = (abs(w_plus - mean) - 0.5) / math.sqrt(variance)
    return w_plus, normal_two_sided_p(max(z, 0.0))


def walsh_ranks(n: int, level: float = 0.95) -> tuple[int, int] | None:
    """0-based ranks (lo, hi), among the n(n+1)/2 sorted Walsh averages, of the
    interval for the centre of a symmetric distribution that inverts the
    two-sided signed-rank test at `level` (Tukey's interval).

    Exact for n <= 60 (coverage 1 - 2 P(W+ <= lo) >= level, tightest such);
    None when no interval reaches `level` (n <= 5 at 95 %).
    """
    if n < 1:
        return None
    alpha_half = (1 - level) / 2
    total = n * (n + 1) // 2
    if n <= EXACT_SIGNED_RANK_MAX_N:
        k = _lower_tail_index(signed_rank_counts(n), alpha_half)
    else:
        z = statistics.NormalDist().inv_cdf(1 - alpha_half)
        k = math.floor(total / 2 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24) + 0.5)
    if k < 1:
        return None
    return k - 1, total - k


def walsh_averages(values: Sequence[float]) -> list[float]:
    """Every (x_i + x_j) / 2 with i <= j, sorted."""
    return sorted(
        (values[i] + values[j]) / 2 for i in range(len(values)) for j in range(i, len(values))
    )


def center_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float] | None:
    """Tukey's distribution-free interval for the centre (pseudo-median) of `values`."""
    ranks = walsh_ranks(len(values), level)
    if ranks is None:
        return None
    averages = walsh_averages(values)
    return averages[ranks[0]], averages[ranks[1]]


def center_estimate(values: Sequence[float]) -> float:
    """Hodges-Lehmann one-sample estimate: the median of the Walsh averages."""
    return statistics.median(walsh_averages(values))


# --- multiple testing ---------------------------------------------------------------


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


def student_t_sf(t: float, df: int) -> float:
    """P(T > t) for Student's t with `df` degrees of freedom, t >= 0."""
    x = df / (df + t * t)
    return 0.5 * _incomplete_beta(df / 2, 0.5, x)


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction
    (modified Lentz), on the side where it converges fast."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return fraction


def student_t_quantile(probability: float, df: int) -> float:
    """Student's t quantile (probability above 0.5), by bisection of `student_t_sf`."""
    low, high = 0.0, 1e3
    for _ in range(200):
        middle = (low + high) / 2
        if student_t_sf(middle, df) > 1 - probability:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def successive_differences_df(n: int) -> int:
    """The degrees of freedom a spread from the n - 1 successive differences of n values
    carries: about 2 (n - 1) / 3 (von Neumann's mean square successive difference),
    at least 1."""
    return max(1, (2 * (n - 1)) // 3)


__all__ = [
    "EXACT_RANK_SUM_MAX_N",
    "holm",
    "mann_whitney_exact",
    "min_p_rank_sum",
    "rank_sum_counts",
    "ratio_ci",
    "student_t_quantile",
    "student_t_sf",
    "successive_differences_df",
    "summarize",
]
