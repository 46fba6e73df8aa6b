"""The statistics module against known distributions and SciPy as an oracle."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from scipy import stats as scipy_stats

from evbench_agent import stats


def test_summarize_fields_of_a_known_sample():
    values = [float(v) for v in range(1, 101)]  # 1..100
    summary = stats.summarize(values)
    assert summary.n == 100
    assert summary.mean == pytest.approx(50.5)
    assert summary.median == pytest.approx(50.5)
    assert summary.stdev == pytest.approx(statistics.stdev(values))
    assert (summary.min, summary.max) == (1.0, 100.0)
    # Type 7 quantiles, as numpy's default.
    assert summary.p90 == pytest.approx(90.1)
    assert summary.p99 == pytest.approx(99.01)
    assert summary.ci95_low < 50.5 < summary.ci95_high


def test_tails_and_interval_are_null_when_the_sample_is_too_small():
    small = stats.summarize([3.0, 1.0, 2.0, 5.0, 4.0])
    assert small.p90 is None and small.p99 is None
    assert small.ci95_low is None and small.ci95_high is None
    assert stats.summarize([1.0]).stdev is None
    with pytest.raises(ValueError):
        stats.summarize([])


@pytest.mark.parametrize("n", [6, 10, 25, 100, 999, 1500])
def test_median_interval_ranks_have_the_promised_coverage(n):
    lo, hi = stats.median_ci_ranks(n)
    # P(x(lo) <= median <= x(hi)) = P(lo < B <= hi) for B ~ Binomial(n, 1/2), 0-based ranks.
    coverage = scipy_stats.binom.cdf(hi, n, 0.5) - scipy_stats.binom.cdf(lo, n, 0.5)
    assert coverage >= 0.95 - 1e-3
    # ... and the interval is the tightest that reaches it (one rank narrower falls short).
    narrower = scipy_stats.binom.cdf(hi - 1, n, 0.5) - scipy_stats.binom.cdf(lo + 1, n, 0.5)
    assert narrower < 0.95


def test_median_interval_covers_the_true_median_of_a_skewed_distribution():
    rng = random.Random(7)
    true_median = math.exp(0.0)  # lognormal(0, 1)
    trials, covered = 400, 0
    for _ in range(trials):
        sample = [rng.lognormvariate(0.0, 1.0) for _ in range(30)]
        summary = stats.summarize(sample)
        covered += summary.ci95_low <= true_median <= summary.ci95_high
    assert 0.92 <= covered / trials <= 0.995


@pytest.mark.parametrize("seed", range(5))
def test_mann_whitney_matches_scipy(seed):
    rng = random.Random(seed)
    x = [round(rng.gauss(10, 2), 1) for _ in range(15 + seed)]  # rounding makes ties
    y = [round(rng.gauss(11, 2), 1) for _ in range(12)]
    u, p = stats.mann_whitney(x, y)
    expected = scipy_stats.mannwhitneyu(x, y, alternative="two-sided", method="asymptotic")
    assert u == pytest.approx(expected.statistic)
    assert p == pytest.approx(expected.pvalue, rel=1e-9)


def test_mann_whitney_of_identical_constants_is_not_significant():
    assert stats.mann_whitney([5.0] * 10, [5.0] * 10)[1] == 1.0


def test_ratio_interval_covers_the_true_ratio():
    rng = random.Random(11)
    trials, covered = 300, 0
    for _ in range(trials):
        base = [rng.lognormvariate(0.0, 0.3) for _ in range(20)]
        cand = [1.5 * rng.lognormvariate(0.0, 0.3) for _ in range(20)]
        low, high = stats.ratio_ci(base, cand)
        covered += low <= 1.5 <= high
    assert 0.92 <= covered / trials <= 0.99


def test_ratio_interval_refuses_non_positive_values_and_tiny_samples():
    with pytest.raises(ValueError):
        stats.ratio_ci([0.0, 1.0], [1.0, 2.0])
    assert stats.ratio_ci([1.0, 2.0], [1.0, 2.0]) is None


def test_holm_matches_the_textbook_procedure():
    raw = [0.01, 0.04, 0.03, 0.005]
    # Sorted: 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> monotone 0.06.
    assert stats.holm(raw) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 0.8 * 2 caps at 1
