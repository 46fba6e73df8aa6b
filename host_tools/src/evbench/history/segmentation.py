"""Change points of a whole nightly series, by binary segmentation.

The replicate of a nightly series is the night: one run's median. Raw samples
within a night agree far more closely than nights do (the machine, its
temperature and the image differ from one night to the next), so a test on
pooled raw samples would call every night a change. The method therefore works
on the nightly medians, on a log scale (changes are relative), and is
rank-based, so a single wild night neither hides a step nor raises one:

1. Scan: every split of a segment into before/after (each at least
   `MIN_SEGMENT` nights) gets the standardized Mann-Whitney statistic of the
   two sides; the split with the largest |Z| is the candidate (Pettitt's
   scan, standardized so splits near the ends are not disfavoured).
2. Significance: the candidate's |Z| is compared with the largest |Z| of the
   same scan over random orderings of the segment's scores (a permutation
   test: exact whatever the noise's distribution, with a fixed seed so the
   same series always gives the same answer); p < `ALPHA`.
3. The table's verdict rule: the 95 % interval of the after/before ratio of
   nightly medians (Moses' interval, `stats.ratio_ci`) must lie wholly outside
   1 +/- `MIN_EFFECT`, as a codec winner's must. Drift is not a change: the step
   must also stand beside a local linear trend (`window_tests.step_test`).
4. Binary segmentation: a change splits the segment and both halves are
   scanned again, so a series with two steps shows both.

Before all this, a wild single night (further than 5 robust spreads from the
running median of 5 nights around it) is replaced by that running median
(`wild_nights.tame_outliers`), for the scan, the size and the interval alike:
ranks know order, not distance, and would count a wild night before a step as
one after it.

A change is a `Split`: the first night after it, its size (ratio of the
segments' medians), its interval and p. The segmentation looks back over every
night; the nightly watch (`nightly_watch`) is what raises an alarm on the newest
ones, and `series_changes` puts the two together. `nights_needed` is the fewest
nights in which the scan can place a clean step anywhere in a series.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from evbench.history.wild_nights import tame_outliers
from evbench.history.window_tests import TREND_NIGHTS, step_test
from evbench_core.analysis import stats
from evbench_core.analysis.verdicts import ALPHA, MIN_EFFECT

#: The fewest nights on either side of a change: fewer cannot tell a step from an outlier.
MIN_SEGMENT = 3
PERMUTATIONS = 1999
#: How far (in nights) the location of a change may move from the scan's split.
REFINE_NIGHTS = 3
SEED = 20261201


@dataclass(frozen=True)
class Split:
    """A change point in a plain series: the first index after the change."""

    index: int
    z: float
    p: float
    before_median: float
    after_median: float
    ratio_low: float | None
    ratio_high: float | None

    @property
    def ratio(self) -> float:
        return self.after_median / self.before_median if self.before_median else math.nan


def _normal_scores(n: int) -> np.ndarray:
    """Van der Waerden scores: the normal quantile of each rank, Phi^-1(r / (n + 1))."""
    normal = NormalDist()
    return np.array([normal.inv_cdf(r / (n + 1)) for r in range(1, n + 1)])


def _standardized_scan(scores: np.ndarray) -> np.ndarray:
    """|Z| of the sum of the first t scores against its permutation mean and spread, per t.

    `scores` has the positions on its last axis (one row per permutation); the
    result has one column per split t = MIN_SEGMENT .. n - MIN_SEGMENT.
    """
    n = scores.shape[-1]
    t = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    centered = scores - scores.mean(axis=-1, keepdims=True)
    sums = np.cumsum(centered, axis=-1)[..., t - 1]
    spread = (centered**2).sum(axis=-1, keepdims=True) / (n - 1)
    return np.abs(sums) / np.sqrt(t * (n - t) / n * spread)


@functools.lru_cache(maxsize=64)
def _orderings(n: int) -> np.ndarray:
    """`PERMUTATIONS` random orderings of n positions, fixed by the seed (one row each)."""
    rng = np.random.default_rng(SEED + n)
    return np.argsort(rng.random((PERMUTATIONS, n)), axis=1)


def _null_maxima(scores: np.ndarray) -> np.ndarray:
    """The largest |Z| of the scan over random orderings of these very scores, sorted.

    Permuting the observed scores (not fresh ranks) keeps their ties, so a
    series with tied nights is tested against what its own ties allow.
    """
    return np.sort(_standardized_scan(scores[_orderings(len(scores))]).max(axis=1))


def _scores(values: Sequence[float]) -> np.ndarray:
    """Each value's normal score by its rank; tied values share their mean score."""
    array = np.asarray(values, dtype=float)
    order = np.argsort(array, kind="mergesort")
    scores = np.empty(len(array))
    scores[order] = _normal_scores(len(array))
    for value in np.unique(array):
        tied = array == value
        if tied.sum() > 1:
            scores[tied] = scores[tied].mean()
    return scores


def _scan(values: Sequence[float]) -> tuple[int, float, float] | None:
    """(split index, |Z|, permutation p) of the best split of `values`, if any fits."""
    n = len(values)
    if n < 2 * MIN_SEGMENT:
        return None
    scores = _scores(values)
    if np.ptp(scores) == 0:  # every night the same: nothing to split
        return None
    z = _standardized_scan(scores)
    best = int(np.argmax(z))
    observed = float(z[best])
    maxima = _null_maxima(scores)
    exceed = len(maxima) - int(np.searchsorted(maxima, observed - 1e-9, side="left"))
    return _refine(values, best + MIN_SEGMENT), observed, (1 + exceed) / (1 + PERMUTATIONS)


def _refine(values: Sequence[float], split: int) -> int:
    """The split near `split` that fits two levels best in absolute deviations.

    Ranks know order, not distance: a wild night next to a step ranks like the
    nights after it. Absolute deviations from each side's median place the step
    where the levels change, and a wild night far beyond both levels stays an outlier.
    """
    n = len(values)
    array = np.asarray(values, dtype=float)

    def cost(t: int) -> float:
        before, after = array[:t], array[t:]
        return float(
            np.abs(before - np.median(before)).sum() + np.abs(after - np.median(after)).sum()
        )

    candidates = range(max(MIN_SEGMENT, split - REFINE_NIGHTS),
                       min(n - MIN_SEGMENT, split + REFINE_NIGHTS) + 1)  # fmt: skip
    return min(candidates, key=lambda t: (cost(t), abs(t - split)))


def beyond_min_effect(low: float | None, high: float | None) -> bool:
    """Whether a ratio's interval lies wholly outside 1 +/- MIN_EFFECT (no interval: no)."""
    if low is None or high is None:
        return False
    return high < 1 - MIN_EFFECT or low > 1 + MIN_EFFECT


def detect(values: Sequence[float], alpha: float = ALPHA, wanders: bool = False) -> list[Split]:
    """Change points of a nightly series (positive values), by binary segmentation.
    `wanders`: the series carries the lab's load (`step_test`)."""
    if any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError("change detection needs positive, finite nightly values")
    logs = tame_outliers([math.log(v) for v in values])
    tamed = [math.exp(v) for v in logs]  # a wild night would widen the interval it is in
    found: list[Split] = []
    pending = [(0, len(values))]
    while pending:
        start, end = pending.pop()
        scanned = _scan(logs[start:end])
        if scanned is None:
            continue
        offset, z, p = scanned
        if p >= alpha:
            continue
        split = start + offset
        before, after = tamed[start:split], tamed[split:end]
        interval = stats.ratio_ci(before, after)
        low, high = interval if interval else (None, None)
        if not beyond_min_effect(low, high):
            continue
        # Drift is not a change: the step must also stand beside a linear trend
        # through the segment (`step_test`); p is the larger of the two tests'.
        # The nights within TREND_NIGHTS of the split on either side: a local line.
        # The split is the scan's best of the segment's splits, so the step test's p
        # is multiplied by their number (Bonferroni): the scan's permutation p counts
        # that choice but assumes exchangeable nights, which a drift breaks, and the
        # step test at the chosen split alone would call a drift's largest wobble.
        near = logs[max(start, split - TREND_NIGHTS) : min(end, split + TREND_NIGHTS)]
        first = split - max(start, split - TREND_NIGHTS)
        splits = end - start - 2 * MIN_SEGMENT + 1
        stepped = step_test(near, 0, first, len(near) - 1, None, MIN_SEGMENT, wanders)[0]
        p = max(p, min(1.0, stepped * splits))
        if p >= alpha:
            continue
        found.append(
            Split(
                split,
                z,
                p,
                stats.summarize(before).median,
                stats.summarize(after).median,
                low,
                high,
            )
        )
        pending += [(start, split), (split, end)]
    return sorted(found, key=lambda s: s.index)


@functools.lru_cache(maxsize=32)
def nights_needed(alpha: float = ALPHA, limit: int = 80) -> int:
    """The fewest nights in which the scan can place a clean step anywhere in a series.

    A clean step separates the nights perfectly (every night after it beyond every
    night before). Whether the scan calls it also depends on how the nights are
    ordered within each side: the count is the fewest nights at which at least half
    of 10 seeded orders, with the step `MIN_SEGMENT` nights from an end (the hardest
    place), reach p < alpha. Below it a series is "too short".
    """
    rng = np.random.default_rng(SEED)
    for n in range(2 * MIN_SEGMENT, limit + 1):
        scores = _normal_scores(n)
        maxima = _null_maxima(scores)
        called = 0
        for _ in range(10):
            order = np.concatenate(
                [rng.permutation(n - MIN_SEGMENT), rng.permutation(MIN_SEGMENT) + n - MIN_SEGMENT]
            )
            observed = float(_standardized_scan(scores[order]).max())
            exceed = len(maxima) - int(np.searchsorted(maxima, observed - 1e-9, side="left"))
            called += (1 + exceed) / (1 + PERMUTATIONS) < alpha
        if called >= 5:
            return n
    return limit
