"""The statistics module against known distributions and SciPy as an oracle."""

import functools
import itertools
import math
import random
import statistics
from fractions import Fraction

import pytest
from scipy import stats as scipy_stats

from evbench_core.analysis import stats


def test_summarize_fields_of_a_known_sample_and_too_small_constant_or_non_positive_ones():
    values = [float(v) for v in range(1, 101)]  # 1..100
    summary = stats.summarize(values)
    assert summary.n == 100 and (summary.min, summary.max) == (1.0, 100.0)
    assert summary.mean == pytest.approx(50.5) and summary.median == pytest.approx(50.5)
    assert summary.stdev == pytest.approx(statistics.stdev(values))
    # Type 7 quantiles, as numpy's default.
    assert summary.p90 == pytest.approx(90.1) and summary.p99 == pytest.approx(99.01)
    assert summary.ci95_low < 50.5 < summary.ci95_high
    # too small, constant or non-positive samples
    small = stats.summarize([3.0, 1.0, 2.0, 5.0, 4.0])
    assert small.p90 is None and small.p99 is None
    assert small.ci95_low is None and small.ci95_high is None
    assert stats.summarize([1.0]).stdev is None
    with pytest.raises(ValueError):
        stats.summarize([])
    assert stats.mann_whitney([5.0] * 10, [5.0] * 10)[1] == 1.0  # identical constants
    with pytest.raises(ValueError):
        stats.ratio_ci([0.0, 1.0], [1.0, 2.0])
    assert stats.ratio_ci([1.0, 2.0], [1.0, 2.0]) is None


def test_median_and_ratio_intervals_cover_the_true_median_of_a_skewed_distribution_and_ratio():
    rng = random.Random(7)
    covered = 0
    for _ in range(400):
        summary = stats.summarize([rng.lognormvariate(0.0, 1.0) for _ in range(30)])
        covered += summary.ci95_low <= math.exp(0.0) <= summary.ci95_high  # lognormal(0, 1)
    assert 0.92 <= covered / 400 <= 0.995
    rng = random.Random(11)
    covered = 0
    for _ in range(300):
        base = [rng.lognormvariate(0.0, 0.3) for _ in range(20)]
        cand = [1.5 * rng.lognormvariate(0.0, 0.3) for _ in range(20)]
        low, high = stats.ratio_ci(base, cand)
        covered += low <= 1.5 <= high
    assert 0.92 <= covered / 300 <= 0.99


@pytest.mark.parametrize("seed", range(5))
def test_mann_whitney_matches_scipy(seed):
    rng = random.Random(seed)
    x = [round(rng.gauss(10, 2), 1) for _ in range(15 + seed)]  # rounding makes ties
    y = [round(rng.gauss(11, 2), 1) for _ in range(12)]
    u, p = stats.mann_whitney(x, y)
    expected = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
    assert u == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, rel=1e-9)


# Exact rank intervals against null distributions counted here by other methods than the
# module's: U by Mann and Whitney's recursion on the largest value, W+ by listing all 2^n
# sign patterns, the binomial by math.comb. A rank off by one breaks coverage or tightness.


@functools.cache
def _u_count(m: int, n: int, u: int) -> int:
    """Orderings of m x's and n y's with exactly u pairs (x, y) where y < x."""
    if u < 0 or u > m * n:
        return 0
    if m == 0 or n == 0:
        return 1 if u == 0 else 0
    # The largest of all m + n values is an x (it beats all n y's) or a y (beats nothing).
    return _u_count(m - 1, n, u - n) + _u_count(m, n - 1, u)


def _u_lower_tail(m: int, n: int, k: int) -> Fraction:
    """P(U <= k) under the null, exactly."""
    return Fraction(sum(_u_count(m, n, u) for u in range(k + 1)), math.comb(m + n, m))


@functools.cache
def _wplus_distribution(n: int) -> tuple[int, ...]:
    counts = [0] * (n * (n + 1) // 2 + 1)
    for signs in itertools.product((0, 1), repeat=n):
        ranks = zip(range(1, n + 1), signs, strict=True)
        counts[sum(rank for rank, positive in ranks if positive)] += 1
    return tuple(counts)


def _w_lower_tail(n: int, k: int) -> Fraction:
    """P(W+ <= k) under the null, exactly."""
    return Fraction(sum(_wplus_distribution(n)[: k + 1]), 2**n)


def _assert_tightest(ranks: tuple[int, int] | None, lower_tail, values: int) -> None:
    """`ranks` (0-based, of `values` ordered estimates) cut off each end as much as 95 %
    coverage, 1 - 2 P(statistic <= lo), allows and no more; None when [min, max] falls short."""
    if ranks is None:
        assert 1 - 2 * lower_tail(0) < Fraction(95, 100)
        return
    lo, hi = ranks
    assert lo + hi == values - 1, "symmetric ranks"
    assert 1 - 2 * lower_tail(lo) >= Fraction(95, 100), "covers"
    assert 1 - 2 * lower_tail(lo + 1) < Fraction(95, 100), "the tightest interval"


SIZES = range(3, 13)


def test_the_recursion_agrees_with_brute_force_enumeration_where_that_is_cheap():
    # Cross-check the test's own oracle: list every ordering for small sizes.
    for m, n in [(3, 3), (3, 5), (4, 4), (5, 6)]:
        brute = [0] * (m * n + 1)
        for xs in itertools.combinations(range(m + n), m):
            ys = [p for p in range(m + n) if p not in xs]
            brute[sum(1 for x in xs for y in ys if y < x)] += 1
        assert brute == [_u_count(m, n, u) for u in range(m * n + 1)]


@pytest.mark.parametrize("n1", SIZES)
def test_moses_and_walsh_interval_ranks_are_exact_for_small_samples(n1):
    # Moses: of the n1 x n2 differences, through U; Walsh: of n1's n1 (n1 + 1) / 2 averages,
    # through W+.
    for n2 in SIZES:
        tail = functools.partial(_u_lower_tail, n1, n2)
        _assert_tightest(stats.moses_ranks(n1, n2), tail, n1 * n2)
    walsh = stats.walsh_ranks(n1)
    _assert_tightest(walsh, functools.partial(_w_lower_tail, n1), n1 * (n1 + 1) // 2)
    assert walsh is not None or n1 <= 5
    assert stats.moses_ranks(3, 3) is None  # the old code returned [min, max]: 90 %


@pytest.mark.parametrize("n1,n2", [(4, 4), (4, 5), (4, 6), (5, 5), (6, 6)])
def test_ratio_interval_covers_exactly_as_promised_over_every_ordering(n1, n2):
    # End to end: every way the two samples can interleave is equally likely when the
    # true ratio is 1. Count the orderings whose interval contains 1.
    total, covered = n1 + n2, 0
    for positions in itertools.combinations(range(total), n1):
        baseline = [float(p + 1) for p in positions]
        candidate = [float(p + 1) for p in range(total) if p not in positions]
        interval = stats.ratio_ci(baseline, candidate)
        covered += interval is not None and interval[0] <= 1.0 <= interval[1]
    lo, _hi = stats.moses_ranks(n1, n2)
    expected = 1 - 2 * _u_lower_tail(n1, n2, lo)
    assert Fraction(covered, math.comb(total, n1)) == expected
    assert expected >= Fraction(95, 100)


@pytest.mark.parametrize("n", [6, 7, 9])
def test_center_interval_covers_zero_exactly_as_promised_over_every_sign_pattern(n):
    covered = 0
    for signs in itertools.product((-1, 1), repeat=n):
        differences = [s * rank for s, rank in zip(signs, range(1, n + 1), strict=True)]
        low, high = stats.center_ci(differences)
        covered += low <= 0 <= high
    lo, _hi = stats.walsh_ranks(n)
    assert Fraction(covered, 2**n) == 1 - 2 * _w_lower_tail(n, lo)


def test_exact_p_values_match_scipy_do_not_underflow_and_the_binomial_cdf_at_large_n():
    rng = random.Random(3)
    for n in (6, 8, 10, 12):
        d = [rng.gauss(0.3, 1) for _ in range(n)]
        expected = scipy_stats.wilcoxon(d, alternative="two-sided", method="exact").pvalue
        assert stats.signed_rank(d)[1] == pytest.approx(expected, rel=1e-12)
        x = [rng.gauss(0, 1) for _ in range(n)]
        y = [rng.gauss(0.8, 1) for _ in range(n - 2)]
        expected = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="exact").pvalue
        assert stats.mann_whitney_exact(x, y)[1] == pytest.approx(expected, rel=1e-12)
    # 1 - cdf(z) is exactly 0 from z ~ 8.3; the survival function is not.
    for z in (10.0, 30.0):
        assert 0 < stats.normal_two_sided_p(z) == pytest.approx(2 * scipy_stats.norm.sf(z))
    # Two well-separated samples too large to count exactly: a tiny p, not 0.
    x = [float(i) for i in range(100)]
    y = [float(i) + 100.5 for i in range(100)]
    p = stats.mann_whitney(x, y)[1]
    expected = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic").pvalue
    assert p > 0 and p == pytest.approx(expected, rel=1e-6)
    # exact p far below 1e-16 (1 - cdf would give 0): 2 / C(120, 60)
    assert stats.mann_whitney_exact(x[:60], y[:60])[1] == pytest.approx(2 / math.comb(120, 60))
    for n, k in [(1000, 468), (1000, 500), (10_000, 4900), (100_001, 50_000)]:
        assert stats.binomial_half_cdf(k, n) == pytest.approx(scipy_stats.binom.cdf(k, n, 0.5))


def test_best_exact_p_values_moses_ranks_at_5_and_10_and_holm_are_the_textbook_ones():
    # All ten signs alike: 2 / 2^10; five phases each fully separated: 2 / C(10, 5).
    assert stats.signed_rank([float(i) for i in range(1, 11)])[1] == pytest.approx(2 / 1024)
    assert stats.min_p_signed_rank(10) == pytest.approx(0.001953125)
    separated = stats.mann_whitney_exact([1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10])[1]
    assert separated == pytest.approx(2 / 252) == stats.min_p_rank_sum(5, 5)
    # Two-sided 5 % critical values of U (reject when U <= c): 2 at 5/5, 23 at 10/10.
    # The interval drops the c + 1 smallest and largest differences: 0-based lo = c + 1 - 1.
    assert (stats.moses_ranks(5, 5), stats.moses_ranks(10, 10)) == ((2, 22), (23, 76))
    raw = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06.
    assert stats.holm(raw) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 0.8 * 2 caps at 1
    # Not the identity nor Bonferroni: sorted 0.01, 0.02, 0.03 -> 0.03, 0.04, 0.04.
    assert stats.holm([0.03, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])


@pytest.mark.parametrize("n", [*range(1, 130), 500, 999, 1000, 1001, 1500, 2047, 5000])
def test_median_interval_ranks_against_a_direct_binomial_computation(n):
    """The tightest ranks covering the median at 95 %: one rank narrower falls short."""
    ranks = stats.median_ci_ranks(n)
    # r order statistics cut off each side: coverage 1 - 2 P(B <= r - 1), B ~ Bin(n, 1/2).
    # Exact integer arithmetic: 2 * sum_{i < r} C(n, i) <= 0.05 * 2^n.
    best, cumulative, term = None, 0, 1
    for r in range(1, n // 2 + 1):
        cumulative += term  # C(n, r - 1)
        term = term * (n - r + 1) // r  # C(n, r)
        if 2 * cumulative * 100 <= 5 * 2**n:
            best = r
        else:
            break
    assert ranks == (None if best is None else (best - 1, n - best))
