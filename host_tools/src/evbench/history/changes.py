"""Change points across nights: where a metric's level moved, and what moved with it.

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
   1 +/- `MIN_EFFECT`, as a codec winner's must.

Before all this, a wild single night (further than 5 robust spreads from the
running median of 5 nights around it) is replaced by that running median
(`tame_outliers`), for the scan, the size and the interval alike: ranks know
order, not distance, and would count a wild night before a step as one after it.
4. Binary segmentation: a change splits the segment and both halves are
   scanned again, so a series with two steps shows both.

A change is reported with the first night after it, its size (ratio of the
segments' medians), its interval, p, and the version fields that differ
between the last run before it and the first after it.
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from evbench_core import results
from evbench_core.analysis import stats
from evbench_core.analysis.verdicts import ALPHA, HIGHER_IS_BETTER, MIN_EFFECT
from evbench_core.errors import FormatError

#: The fewest nights on either side of a change: fewer cannot tell a step from an outlier.
MIN_SEGMENT = 3
PERMUTATIONS = 1999
#: The running median's width, in nights, and how many robust spreads make a night wild.
RUNNING_NIGHTS = 5
OUTLIER_SCALES = 5.0
#: How far (in nights) the location of a change may move from the scan's split.
REFINE_NIGHTS = 3
SEED = 20261201
#: The run fields whose change a change point reports.
VERSION_FIELDS = ("image", "kernel", "python", "protobuf", "protobuf_backend", "agent")


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


def tame_outliers(logs: Sequence[float]) -> list[float]:
    """The series with wild single nights replaced by their neighbourhood's median.

    A running median of `RUNNING_NIGHTS` keeps a step's edge where it is but
    not a lone wild night; a night further than `OUTLIER_SCALES` robust
    spreads (1.4826 MAD of the residuals) from it is replaced by it. Ranks
    alone would count a wild night before a step as one after it.
    """
    n = len(logs)
    if n < RUNNING_NIGHTS:
        return list(logs)
    half = RUNNING_NIGHTS // 2
    array = np.asarray(logs, dtype=float)
    level = np.array([np.median(array[max(0, i - half) : min(n, i + half + 1)]) for i in range(n)])
    residuals = array - level
    spread = 1.4826 * float(np.median(np.abs(residuals)))
    if spread == 0:
        return list(logs)
    wild = np.abs(residuals) > OUTLIER_SCALES * spread
    return [float(v) for v in np.where(wild, level, array)]


def _beyond_min_effect(low: float | None, high: float | None) -> bool:
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
        if not _beyond_min_effect(low, high):
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


#: The newest nights the nightly watch tests against the nights before them.
WINDOW = MIN_SEGMENT
#: The most reference nights the watch uses (the exact rank test's reach).
MAX_REFERENCE = 57


def reference_needed(alpha: float = ALPHA, one_sided: bool = False) -> int:
    """The fewest reference nights with which WINDOW nights can reach p < alpha.

    The exact two-sided Mann-Whitney test of WINDOW against r nights cannot go
    below 2 / C(r + WINDOW, WINDOW) (every window night beyond every reference night);
    the one-sided test (worse only) not below half that.
    """
    r = 1
    while stats.min_p_rank_sum(r, WINDOW) / (2 if one_sided else 1) >= alpha:
        if r >= MAX_REFERENCE:
            break
        r += 1
    return r


@dataclass(frozen=True)
class Seen:
    """A change point with the night the series first showed it.

    The watch re-places a change each night as nights arrive, until `WINDOW` nights
    from its alarm night are in (`watch`); `first_index` is where the alarm placed it,
    `through` the newest night its placement used.
    """

    split: Split
    seen: int  # index of the newest night of the first series that showed it
    first_index: int | None = None
    through: int | None = None
    #: The watch's change as placed on each night from its alarm night on (seen, seen + 1,
    #: ...): what `history check` run that night showed (benchmarks replay it from these).
    placements: tuple[Split, ...] = ()

    @property
    def provisional(self) -> bool:
        """Whether later nights may still move the placement (the watch's changes only)."""
        return self.through is not None and self.through < self.seen + WINDOW - 1


#: The smallest robust spread (log scale) a series' reference nights are given: a
#: reference of identical nights would otherwise weigh infinitely.
MIN_SPREAD = 1e-9


def _likeliest_start(series: Sequence[Sequence[float]], reference_start: int, first: int,
                     last: int, newest: int | None = None) -> int:  # fmt: skip
    """The night of first..last from which a shift is likeliest, over `series` together
    (logs of the same nights: the watched series, then its companions; NaN where a
    series lacks a night), with the nights up to `newest` (default `last`).

    Each series shifts from its reference's level (nights reference_start..first-1:
    their robust line carried on where, from TAME_NIGHTS nights on, they drifted beyond
    their scatter, else their median) by its window's median residual (first..newest).
    For a shift of that size in noise of spread s, a night from the start on adds
    shift / s^2 times its distance past the
    midpoint of the two levels to the log likelihood ratio (Gaussian noise: exactly),
    so the start is the t maximising that sum over nights t..newest, summed over the
    series (independent noise: their log likelihoods add). s is the reference's robust
    spread (1.4826 MAD about its level), so a quiet series weighs more than a noisy one
    and a series that did not move (shift near 0) next to nothing. A distance is
    clipped at half the shift: a night beyond a level counts as that level and no more,
    so one wild night in one series cannot outvote the others (a codec's wild night, in
    all its series at once, counts as the new level: whether it lay just before the
    step or on its first night nothing tells). One series alone at a time is fooled by
    a night before the step that lay high; the codec's other operations, measured on the
    same nights with noise of their own, are not (benchmarks/README.md).
    """
    newest = last if newest is None else newest
    score = np.zeros(last - first + 1)
    for logs in series:
        array = np.asarray(logs, dtype=float)
        nights = np.arange(reference_start, first)
        known = np.isfinite(array[reference_start:first])
        window = array[first : newest + 1]
        if known.sum() < MIN_SEGMENT or not np.isfinite(window).any():
            continue
        # The level before, carried into the window: the reference's robust line (its
        # newest TREND_NIGHTS nights, from TAME_NIGHTS on) where it drifted further than
        # its scatter over them, else its median. Against a median, a series that drifts
        # with the lab's load shifted at every window night, and a wild one there looked
        # like the step's first night.
        t, y = nights[known][-TREND_NIGHTS:], array[reference_start:first][known][-TREND_NIGHTS:]
        slope, centre, spread = _robust_line(y, t - t[0]) if len(y) >= TAME_NIGHTS else (0, 0, 0)
        if abs(slope) * len(y) > spread:  # the level drifted beyond its scatter: the line
            expected = centre + slope * (np.arange(first, newest + 1) - t[0])
        else:
            level = float(np.median(array[reference_start:first][known]))
            reference = array[reference_start:first][known]
            spread = 1.4826 * float(np.median(np.abs(reference - level)))
            expected = np.full(len(window), level)
        residual = window - expected
        shift = float(np.nanmedian(residual))
        if shift == 0:
            continue
        spread = max(spread, MIN_SPREAD)
        distance = np.clip(math.copysign(1.0, shift) * (residual - shift / 2),
                           -abs(shift) / 2, abs(shift) / 2)  # fmt: skip
        distance = np.where(np.isfinite(distance), distance, 0.0)
        sums = np.cumsum(distance[::-1])[::-1]  # nights t..newest, for each t from first
        score += abs(shift) / spread**2 * sums[: last - first + 1]
    best = int(np.argmax(score[::-1]))  # ties: the later night
    return last - best


def _split(values: Sequence[float], start: int, split: int, end: int, z: float, p: float) -> Split:
    before, after = values[start:split], values[split:end]
    interval = stats.ratio_ci(before, after)
    low, high = interval if interval else (None, None)
    return Split(
        split, z, p, stats.summarize(before).median, stats.summarize(after).median, low, high
    )


def _levelled(
    series: Sequence[Sequence[float]], before: int, start: int, first: int
) -> list[list[float]]:
    """`series` (logs) with the nights before..start-1 moved by the shift of the
    change at `start`: each series' median of nights start..first-1 less its median
    of nights before..start-1. The watch's reference after a change too recent to
    test against alone: the nights before it, at the new level, with the nights since.
    """
    out = []
    for logs in series:
        array = np.asarray(logs, dtype=float)
        old, new = array[before:start], array[start:first]
        old, new = old[np.isfinite(old)], new[np.isfinite(new)]
        moved = array.copy()
        if len(old) and len(new):
            moved[before:start] += float(np.median(new)) - float(np.median(old))
        out.append(moved.tolist())
    return out


def _nightly(tested: list[list[float]], placing: list[list[float]],
             values: Sequence[float]) -> Sequence[float]:  # fmt: skip
    """The watched series' nightly values as tested: `values`, or levelled ones."""
    return values if tested is placing else [math.exp(v) for v in tested[0]]


def _beyond_new_level(logs: Sequence[float], before: int, start: int, first: int,
                      last: int, worse: str | None) -> float:  # fmt: skip
    """p of the window first..last against the level of the nights since the change at
    `start` (start..first-1), one-sided on the `worse` side (two-sided if None).

    The level a levelled reference was moved to rests on those few nights: a
    two-sample t test of the window against them, with the noise's spread pooled
    over the three stretches (before..start-1, start..first-1 and the window, each
    about its own mean), counts that level's own uncertainty, which the rank test
    against the levelled reference does not.
    """
    stretches = [np.asarray(logs[a:b], dtype=float) for a, b in
                 ((before, start), (start, first), (first, last + 1))]  # fmt: skip
    df = sum(len(x) for x in stretches) - len(stretches)
    if df < 1 or any(len(x) == 0 for x in stretches):
        return 1.0
    spread = math.sqrt(sum(float(((x - x.mean()) ** 2).sum()) for x in stretches) / df)
    since, window = stretches[1], stretches[2]
    shift = float(window.mean() - since.mean())
    error = spread * math.sqrt(1 / len(since) + 1 / len(window))
    t = shift / error if error else math.copysign(math.inf, shift) if shift else 0.0
    if worse is None:
        return min(1.0, 2 * stats.student_t_sf(abs(t), df))
    toward = t if worse == "higher" else -t  # the worse side's t
    return stats.student_t_sf(toward, df) if toward >= 0 else 1 - stats.student_t_sf(-toward, df)


#: The newest reference nights the step test fits its trend on: a local line follows a
#: level that wanders (a lab's load over weeks) where one line over months would not.
TREND_NIGHTS = 12
#: The fewest reference nights in which the step test tames a wild night (fewer: a
#: running median of 5 took a night 1 % off a 1 % zigzag for wild).
TAME_NIGHTS = 8
#: How many reference spreads beyond the window's median make a window night wild: far
#: more than a reference night needs, as a step's own nights scatter about the window's.
WILD_WINDOW_SCALES = 10.0
#: The fewest reference nights the step test needs: level, trend and step leave
#: MIN_REFERENCE + WINDOW - 3 = 4 degrees of freedom for the noise.
MIN_REFERENCE = 4


def step_test(
    logs: Sequence[float],
    reference_start: int,
    first: int,
    last: int,
    worse: str | None = None,
    min_reference: int = MIN_REFERENCE,
    wanders: bool = False,
    either_side: bool = False,
) -> tuple[float, float, float, int]:
    """(p, step, its standard error, degrees of freedom) of a step at night `first`
    beside a linear trend: least squares of y_t = a + b t + d [t >= first] over the
    newest TREND_NIGHTS reference nights (reference_start..first-1) and first..last.
    A wild reference night (from TAME_NIGHTS reference nights on) is tamed first
    (`_tame_about_line`): it would swamp the scatter and hide a step; a window night
    wild on the worse side (WILD_WINDOW_SCALES reference spreads beyond the window's
    median) is left out, while 2 window nights remain; with `either_side` (a codec's
    relative series) on either side: there a wild night on the better side is a partner
    codec's, not news of this codec.

    A drift (the lab's load growing night by night) moves every night a little: the
    trend takes it, and d is the window's departure from where the trend puts it,
    tested by Student's t against the nights' scatter about the line (exact for
    Gaussian noise about any straight line). A series that carries the lab's load
    (`wanders`: an absolute series) may also wander like a random walk, which no line
    follows: its step is held, when that is larger, to the standard error the walk its
    reference nights show would give it (`_walk_error`).

    One-sided on the `worse` side ("higher", "lower"), two-sided if None. Fewer than
    `min_reference` reference nights, or fewer than 6 nights in all (3 degrees of
    freedom): p 1.
    """
    start = max(reference_start, first - TREND_NIGHTS)
    if first - start < min_reference or last - start + 1 < 6 or last < first:
        return 1.0, math.nan, math.nan, 0
    y = np.asarray(logs[start : last + 1], dtype=float)
    nights = np.arange(len(y))
    if first - start >= TAME_NIGHTS:  # a wild reference night would swamp the scatter
        y[: first - start] = _tame_about_line(y[: first - start])
        # A window night wild on the worse side (WILD_WINDOW_SCALES reference spreads
        # beyond the window's median) would swamp the scatter too: left out, while 2
        # window nights remain. Only on the worse side: no night is left out that
        # speaks against a change.
        window = y[first - start :]
        spread = _robust_line(y[: first - start])[2]
        beyond = window - np.median(window)
        toward = beyond if worse == "higher" else -beyond if worse == "lower" else np.abs(beyond)
        if either_side:  # a relative series: a partner codec's wild night lies low in it
            toward = np.abs(beyond)
        wild = toward > WILD_WINDOW_SCALES * spread
        if spread > 0 and 0 < wild.sum() <= len(window) - 2:
            kept = first - start + np.flatnonzero(~wild)
            nights = np.concatenate([nights[: first - start], kept])
            y = y[nights]
    return _step_fit(y, nights, first - start, worse, wanders)


def _tame_about_line(reference: np.ndarray) -> np.ndarray:
    """The reference nights with a wild night put back on their robust line.

    The line is Theil and Sen's (the median of the slopes between every two nights,
    the level the median of what it leaves); a night further than OUTLIER_SCALES
    robust spreads (1.4826 MAD of the residuals) from it is replaced by the line's
    value plus the median residual. Not `tame_outliers`: on a dozen nights a running
    median of 5 equals many of the nights themselves, so the MAD of its residuals is
    near 0 and ordinary nights were taken for wild, which smoothed the scatter away
    (a drifting lab's nights then raised alarms).
    """
    slope, centre, spread = _robust_line(reference)
    t = np.arange(len(reference), dtype=float)
    if spread == 0:
        return reference
    wild = np.abs(reference - slope * t - centre) > OUTLIER_SCALES * spread
    return np.where(wild, slope * t + centre, reference)


def _robust_line(reference: np.ndarray, nights: np.ndarray | None = None
                 ) -> tuple[float, float, float]:  # fmt: skip
    """(slope, level, robust spread) of the nights (at `nights`, default 0, 1, ...):
    Theil and Sen's slope, the median residual and 1.4826 MAD of the residuals."""
    t = np.arange(len(reference), dtype=float) if nights is None else nights.astype(float)
    i, j = np.triu_indices(len(reference), k=1)
    slope = float(np.median((reference[j] - reference[i]) / (t[j] - t[i])))
    residual = reference - slope * t
    centre = float(np.median(residual))
    return slope, centre, 1.4826 * float(np.median(np.abs(residual - centre)))


def _tamed_reference(logs: Sequence[float], reference_start: int, first: int) -> list[float]:
    """The reference nights reference_start..first-1 with the newest TREND_NIGHTS tamed
    about their line (`_tame_about_line`, from TAME_NIGHTS of them on): the rank test's
    reference, so one wild night there cannot hide a step from it."""
    reference = np.asarray(logs[reference_start:first], dtype=float)
    newest = min(TREND_NIGHTS, len(reference))
    if newest >= TAME_NIGHTS:
        reference[-newest:] = _tame_about_line(reference[-newest:])
    return reference.tolist()


def _walk_error(
    reference: np.ndarray, weights: np.ndarray, nights: np.ndarray
) -> tuple[float, int]:
    """(standard error, df) of the estimate sum(weights x y) were the nights a random walk
    (with any drift) whose steps scatter as the reference's consecutive differences do.

    Every night-to-night move is taken for the walk's: with a dozen nights a walk cannot
    be told from noise (the differences' lag-1 covariance, -noise variance, is too
    uncertain; trusting it raised alarms on 8 % of a drifting lab's nights), and noise
    counted as walk only widens the interval. The weights sum to 0 and are orthogonal
    to the night (the step of `_step_fit`), so level and drift cancel; a walk's nights
    i and j share min(i, j) steps, so the estimate's variance is s^2 x w' min(i, j) w,
    s^2 the variance of the differences about their mean (the drift), k - 1 df of k.
    """
    steps = np.diff(reference)
    if len(steps) < 4:
        return 0.0, 0
    centred = steps - steps.mean()
    walk = float(centred @ centred) / (len(steps) - 1)
    shared = np.minimum.outer(nights, nights).astype(float)
    return math.sqrt(walk * float(weights @ shared @ weights)), len(steps) - 1


def _step_fit(y: np.ndarray, nights: np.ndarray, window: int, worse: str | None,
              wanders: bool) -> tuple[float, float, float, int]:  # fmt: skip
    """`step_test`'s fit of the nights `nights` (their logs y), the step at night `window`."""
    t = nights.astype(float)
    design = np.column_stack([np.ones_like(t), t - t.mean(), (nights >= window).astype(float)])
    df = len(y) - 3
    weights = np.linalg.solve(design.T @ design, design.T)[2]  # the step's estimator
    step = float(weights @ y)
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    residual = y - design @ coef
    variance = float(residual @ residual) / df
    error = math.sqrt(variance * float(weights @ weights))
    if wanders:
        walk, walk_df = _walk_error(y[nights < window], weights, nights)
        if walk > error:
            error, df = walk, walk_df
    if error <= 1e-12 * max(1.0, abs(step)):  # no scatter at all: the sign decides
        tstat = math.copysign(math.inf, step) if step else 0.0
    else:
        tstat = step / error
    if worse is None:
        p = 1.0 if tstat == 0 else min(1.0, 2 * stats.student_t_sf(abs(tstat), df))
    else:
        toward = tstat if worse == "higher" else -tstat
        tail = stats.student_t_sf(abs(toward), df) if math.isfinite(toward) else 0.0
        p = tail if toward >= 0 else 1 - tail
    return p, step, error, df


def _beyond_reference(reference: Sequence[float], window: Sequence[float],
                      worse: str | None) -> bool:  # fmt: skip
    """Whether every window night lies beyond every reference night on the worse side
    (either side if None): the rank test's most extreme outcome."""
    if worse in (None, "higher") and min(window) > max(reference):
        return True
    return worse in (None, "lower") and max(window) < min(reference)


def _watching(
    values: Sequence[float],
    level: float,
    worse: str | None,
    companions: Sequence[Sequence[float]],
    wanders: bool = False,
    joint: Sequence[float] | None = None,
) -> Generator[float | None, bool, list[Seen]]:
    """The watch of one series as a generator: one yield per night, the night's p (None
    when nothing is tested), answered with whether the family's procedure (`watch_family`)
    calls it. Returns the changes. `level` is the strictest level the series is held to
    (alpha / m): where the exact rank test can reach it, it must agree.

    `joint` (positive, one a night): what the tests read instead of the series itself,
    the codec's operations together (`Watched.joint`); the change is still placed and
    sized on the series' own nights. Such a series (a codec's relative series) is ranked
    about its reference's line (`_detrended_rank_p`), not on its raw nights, and a
    partner codec's wild night in its window is tamed (`step_test`'s `either_side`)."""
    if any(not math.isfinite(v) or v <= 0 for v in values):
        raise ValueError("change detection needs positive, finite nightly values")
    if any(len(c) != len(values) for c in companions):
        raise ValueError("companion series need one value per night of the series")
    logs = [math.log(v) for v in values]
    placing = [logs, *([math.log(v) if v > 0 else math.nan for v in c] for c in companions)]
    if joint is not None and (
        len(joint) != len(values) or any(not math.isfinite(v) or v <= 0 for v in joint)
    ):
        raise ValueError("a joint series needs one positive, finite value per night")
    relative = joint is not None  # a codec's relative series, its operations together
    test = logs if joint is None else [math.log(v) for v in joint]
    ranked = _detrended_rank_p if relative else _rank_p
    need = reference_needed(level, one_sided=worse is not None)
    found: list[Seen] = []
    start = 0
    before = 0  # where the segment before the last change began
    # found[-1]'s reference start, first candidate and the series it was tested on
    moving: tuple[int, int, list[list[float]]] | None = None
    for last in range(len(values)):
        if moving is not None and last <= found[-1].seen + WINDOW - 1:
            reference_start, first, tested = moving
            seen = found[-1]
            split = _likeliest_start(tested, reference_start, first, seen.seen, last)
            candidate = _split(_nightly(tested, placing, values), reference_start, split,
                               last + 1, math.nan, seen.split.p)  # fmt: skip
            found[-1] = replace(seen, split=candidate, through=last,
                                placements=(*seen.placements, candidate))  # fmt: skip
            start = split
        first = last - WINDOW + 1
        tested, reference_start = placing, max(start, first - MAX_REFERENCE)
        p: float | None = None
        if first - start >= need:
            # The exact rank test can reach the level: it and the step test must agree.
            reference = _tamed_reference(test, reference_start, first)
            window = test[first : last + 1]
            p = max(ranked(reference, window, worse),
                    step_test(test, reference_start, first, last, worse, MIN_REFERENCE,
                              wanders, relative)[0])  # fmt: skip
        elif found and first > found[-1].seen and first - before >= need:
            # Too few nights since the last change to test against: the nights
            # before it, moved to the new level, stand in (`_levelled`), so a
            # second step soon after a first one is not left unseen. The window
            # must lie after the nights the last change may still be placed at
            # (a step that takes nights to settle is one change, not two).
            tested = _levelled(placing, before, start, first)
            reference_start = max(before, first - MAX_REFERENCE)
            reference, window = tested[0][reference_start:first], tested[0][first : last + 1]
            p = max(_rank_p(reference, window, worse),
                    _beyond_new_level(logs, before, start, first, last, worse))  # fmt: skip
        elif first - start >= MIN_REFERENCE and (not found or first > found[-1].seen):
            # The first nights (of the series, or since a change): the rank test cannot
            # reach the level yet; the step test decides, and the window must still lie
            # wholly beyond the reference (the rank test's most extreme outcome), so one
            # wild night cannot make a change.
            reference, window = test[reference_start:first], test[first : last + 1]
            if relative:
                # A relative series about its reference's line, a wild reference night
                # (from TAME_NIGHTS on) put back on it, and a partner's wild night in the
                # window tamed: on the worse side one wild reference night stood beyond
                # any window, on the better side a partner's wild night held every window.
                tamed = _tamed_reference(test, reference_start, first)
                reference, window = _about_line(tamed, window)
            if _beyond_reference(reference, window, worse):
                p = step_test(test, reference_start, first, last, worse, wanders=wanders,
                              either_side=relative)[0]  # fmt: skip
            else:
                p = 1.0
        called = yield p
        if p is None or not called:
            continue
        split = _likeliest_start(tested, reference_start, first, last)
        candidate = _split(_nightly(tested, placing, values), reference_start, split,
                           last + 1, math.nan, p)  # fmt: skip
        moses_short = candidate.ratio_low is None or (
            relative and not _beyond_min_effect(candidate.ratio_low, candidate.ratio_high)
        )
        if moses_short:
            # Too few nights for the rank interval at 95 % (4 against 3), or a relative
            # series whose window holds a partner codec's wild night (the rank interval
            # then reaches down to it): the step test's own interval, exp(d +- t(0.975,
            # df) x its standard error), which leaves that night out.
            _p, step, error, df = step_test(logs, reference_start, split, last, worse,
                                             wanders=wanders, either_side=relative)  # fmt: skip
            if df > 0 and math.isfinite(error):
                spread = stats.student_t_quantile(0.975, df) * error
                candidate = replace(candidate, ratio_low=math.exp(step - spread),
                                    ratio_high=math.exp(step + spread))  # fmt: skip
        if not _beyond_min_effect(candidate.ratio_low, candidate.ratio_high):
            continue
        found.append(Seen(candidate, last, split, last, (candidate,)))
        before, start = start, split
        moving = (reference_start, first, tested)
    return found


def _about_line(reference: Sequence[float], window: Sequence[float]
                ) -> tuple[list[float], list[float]]:  # fmt: skip
    """The reference's and the window's residuals about the reference's robust line
    (`_robust_line`, carried on into the window), a wild reference night put on the
    line; a window night further than
    WILD_WINDOW_SCALES reference spreads from the window's median, on either side, is
    put at that median while 2 window nights remain (as `step_test` leaves it out of a
    relative series).

    A relative series drifts when the codecs' sensitivities to the lab's load differ (a
    load growing by 1-3 % a night moved json-aa / json by about 0.5 % a night in the
    simulation): ranked raw, a step that brings it back to an earlier level does not
    rank above the reference, and a drift toward the worse side ranks as a change.
    """
    ref = np.asarray(reference, dtype=float)
    slope, centre, spread = _robust_line(ref)
    residual = ref - (slope * np.arange(len(ref)) + centre)
    # A wild reference night (OUTLIER_SCALES spreads off the line) is put on it: one
    # night on the worse side, however old, would rank above any window.
    residual = np.where(np.abs(residual) > OUTLIER_SCALES * spread, 0.0, residual)
    beyond = np.asarray(window, dtype=float) - (
        slope * np.arange(len(ref), len(ref) + len(window)) + centre
    )
    middle = float(np.median(beyond))
    wild = np.abs(beyond - middle) > WILD_WINDOW_SCALES * spread
    if spread > 0 and 0 < wild.sum() <= len(beyond) - 2:
        beyond = np.where(wild, middle, beyond)  # tamed, as a wild reference night is
    return residual.tolist(), beyond.tolist()


def _detrended_rank_p(reference: Sequence[float], window: Sequence[float],
                      worse: str | None) -> float:  # fmt: skip
    """The exact Mann-Whitney p of the window against the reference about the
    reference's line (`_about_line`): a drift of the level is not a change, a step off
    it is. One-sided on the `worse` side (two-sided if None), 1 when the window moved
    the other way.

    The residuals tie where they need not: Theil and Sen's line passes through two
    nights at equal residual, and a tamed night sits on the line or at the window's
    median. A tie within one side leaves U as it is; one across the sides counts a half.
    U is then held to the exact distribution without ties, rounded toward no change (a
    tie would otherwise send `stats.mann_whitney_exact` to its normal approximation,
    which for 3 nights against a dozen is far from exact: 1 / 190 for 1 / 680)."""
    ref, win = _about_line(reference, window)
    if worse is None or len(ref) > stats.EXACT_RANK_SUM_MAX_N:
        return _rank_p(ref, win, worse)
    sign = 1.0 if worse == "higher" else -1.0
    if sign * (statistics.median(win) - statistics.median(ref)) <= 0:
        return 1.0  # better, or no move: not the watch's question
    beyond = sum(1.0 if sign * (b - a) > 0 else 0.5 if b == a else 0.0 for a in ref for b in win)
    counts = stats.rank_sum_counts(len(win), len(ref))
    return sum(counts[math.floor(beyond) :]) / math.comb(len(ref) + len(win), len(win))


def _rank_p(reference: Sequence[float], window: Sequence[float], worse: str | None) -> float:
    """The exact Mann-Whitney p of the window against the reference, one-sided on the
    worse side (1 when the window moved the other way), two-sided if `worse` is None."""
    _u, p = stats.mann_whitney_exact(reference, window)
    if worse is None:
        return p
    higher = statistics.median(window) > statistics.median(reference)
    if higher != (worse == "higher"):
        return 1.0  # better, or no move: not the watch's question
    return p / 2  # the exact (or approximate) test's tail on the worse side


def benjamini_hochberg(p_values: Sequence[float | None], q: float = ALPHA) -> list[bool]:
    """Which of the p values (None: not tested) the Benjamini-Hochberg procedure calls
    at false discovery rate q over the tested ones: the k smallest, k the largest with
    p_(k) < k q / m."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    called = [False] * len(p_values)
    k = max((rank for rank, (p, _i) in enumerate(tested, 1) if p < rank * q / m), default=0)
    for _p, i in tested[:k]:
        called[i] = True
    return called


@dataclass(frozen=True)
class Watched:
    """One series of a family watched together: its nightly values, which way is worse,
    the series that help place its changes, and each night's key (its run's start)."""

    values: Sequence[float]
    worse: str | None = None
    companions: Sequence[Sequence[float]] = ()
    nights: Sequence[str] | None = None
    #: The series carries the lab's load (an absolute series): `step_test`.
    wanders: bool = False
    #: What the tests read instead of `values` (one positive value a night): a relative
    #: series' codec over all its operations, the geometric mean of its relative series
    #: (trends.joint_values). A change of the codec moves every operation on the same
    #: nights while each operation's noise is its own: the mean of three has about 1/1.7
    #: of one's scatter, so a 10 % step stands clear of it within 3 nights.
    joint: Sequence[float] | None = None


def watch_family(members: Sequence[Watched], q: float = ALPHA) -> list[list[Seen]]:
    """The nightly watch of many series of one board, night by night together.

    Each night every series that can be tested gives its p (`_watching`); the
    Benjamini-Hochberg procedure over that night's p values, at false discovery rate
    q, says which alarm. Unlike Bonferroni (each at q / m), a change that moves several
    series at once (a codec's operations, absolute and relative) is called at up to
    k q / m for k series, so a board of many series is tested from its 7th night on
    (`MIN_REFERENCE` + `WINDOW`). Nights are matched by their keys (`Watched.nights`;
    by index when absent).
    """
    if not members:
        return []
    level = q / len(members)
    runs = [_watching(m.values, level, m.worse, m.companions, m.wanders, m.joint)
            for m in members]  # fmt: skip
    keys = [list(m.nights) if m.nights is not None else [f"{i:09d}" for i in range(len(m.values))]
            for m in members]  # fmt: skip
    position = [0] * len(members)
    pending: list[float | None] = [None] * len(members)
    found: list[list[Seen]] = [[] for _ in members]
    alive = [len(k) > 0 for k in keys]
    for i, run in enumerate(runs):
        if alive[i]:
            pending[i] = next(run)
    for key in sorted({k for night in keys for k in night}):
        due = [i for i in range(len(members)) if alive[i] and keys[i][position[i]] == key]
        calls = benjamini_hochberg([pending[i] for i in due], q)
        for i, called in zip(due, calls, strict=True):
            position[i] += 1
            try:
                pending[i] = runs[i].send(called)
            except StopIteration as done:
                found[i] = done.value
                alive[i] = False
    return found


def watch(
    values: Sequence[float],
    alpha: float = ALPHA,
    worse: str | None = None,
    companions: Sequence[Sequence[float]] = (),
    wanders: bool = False,
) -> list[Seen]:
    """The nightly watch, replayed night by night over one series (positive values).

    Each night the newest WINDOW nights are tested against the nights before them
    since the last change (at most MAX_REFERENCE), on the nightly medians:

    - where the exact rank test can reach alpha (`reference_needed`), exact
      Mann-Whitney, one-sided on the `worse` side, and the drift-aware step test
      (`step_test`: the window against a linear trend through the newest
      TREND_NIGHTS reference nights) must both call it; p is the larger of the two;
    - before that (a series' first nights, or the nights since a change), from
      MIN_REFERENCE reference nights on, the step test alone, with every window night
      beyond every reference night;
    - while fewer than `reference_needed(alpha)` nights follow the last change, the
      nights before it, moved to its new level (`_levelled`), stand in, and the window
      must also pass a t test against the nights since the change (`_beyond_new_level`).

    A call needs p < alpha and the ratio's 95 % interval wholly beyond 1 +/- MIN_EFFECT.
    A change is placed within the window where a shift is likeliest over the series and
    its `companions` together (`_likeliest_start`); the nights from it on are the next
    reference. On its alarm night a change rests on as few as one night after its
    start. Each later night, until WINDOW nights from the alarm night are in, it is
    placed again among the same candidate nights with every night since, and its size
    and interval are recomputed with them; the alarm's night (`seen`) and the first
    placement (`first_index`) are kept.

    `companions` are other series of the same nights (same length; NaN where one
    lacks a night): the same codec's other operations, absolute and relative. They
    only place a change; they never raise one.

    `worse` ("higher" or "lower": which way the values get worse) makes the test
    one-sided: the watch raises alarms, and an alarm is a regression; an improvement
    is left to the segmentation (`detect`), which tests both ways. Many series of a
    board are watched together by `watch_family`.
    """
    return watch_family([Watched(values, worse, companions, wanders=wanders)], alpha)[0]


#: `detect` over the first N nights of one series, each prefix scanned once.
PrefixScans = Callable[[int], list[Split]]


def prefix_scans(values: Sequence[float], alpha: float = ALPHA, wanders: bool = False
                 ) -> PrefixScans:  # fmt: skip
    """The scan of each prefix of `values`, remembered: `first_seen` and `segmentation`
    ask for the same prefixes (a prefix and the one WINDOW nights shorter)."""

    @functools.cache
    def scan(nights: int) -> list[Split]:
        return detect(values[:nights], alpha, wanders)

    return scan


def segmentation(
    values: Sequence[float], alpha: float = ALPHA, scans: PrefixScans | None = None
) -> list[Split]:
    """The segmentation's changes the check shows: found by `detect` over every night
    and, near the same night, over the nights before the newest WINDOW alike.

    The scan cannot place a change with fewer than MIN_SEGMENT nights after it, so a
    step in the newest nights lends them to an earlier split (nights that lay high
    before the step then look like its start); those nights are the watch's, which
    places a step among them. A change must therefore stand on the nights before
    them, and still hold with them. `scans` (of a longer series `values` begins) saves
    scanning again.
    """
    scan = scans or prefix_scans(values, alpha)
    settled = scan(max(0, len(values) - WINDOW))
    return [
        split
        for split in scan(len(values))
        if any(abs(other.index - split.index) <= REFINE_NIGHTS for other in settled)
    ]


def first_seen(
    values: Sequence[float], index: int, alpha: float = ALPHA, scans: PrefixScans | None = None
) -> int:
    """The newest night of the shortest prefix whose `segmentation` shows a change near
    `index`."""
    scan = scans or prefix_scans(values, alpha)
    for last in range(index + MIN_SEGMENT - 1, len(values)):
        shown = segmentation(values[: last + 1], alpha, scan)
        if any(abs(s.index - index) <= REFINE_NIGHTS for s in shown):
            return last
    return len(values) - 1


def changes_of(
    values: Sequence[float],
    alpha: float = ALPHA,
    worse: str | None = None,
    companions: Sequence[Sequence[float]] = (),
    watched: Sequence[Seen] | None = None,
    wanders: bool = False,
) -> list[Seen]:
    """The watch's changes and the segmentation's (older ones the watch could not see:
    in a too-short stretch, or a drift), each with the night it was first shown.
    `companions` place the watch's changes (`watch`). The segmentation's changes stand
    on the nights before the newest WINDOW (`segmentation`).
    """
    if watched is None:  # alone; a board's series are watched together (watch_family)
        watched = watch(values, alpha, worse, companions, wanders)
    found = list(watched)
    scans = prefix_scans(values, alpha, wanders)
    for split in segmentation(values, alpha, scans):
        if any(abs(seen.split.index - split.index) <= REFINE_NIGHTS for seen in watched):
            continue
        found.append(Seen(split, first_seen(values, split.index, alpha, scans)))
    return sorted(found, key=lambda seen: seen.split.index)


def series_needed(alpha: float = ALPHA) -> int:
    """The fewest nights of a series in which a change can be placed anywhere: the
    scan's `nights_needed` before the newest WINDOW nights (`segmentation`)."""
    return nights_needed(alpha) + WINDOW


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


@dataclass(frozen=True)
class Change:
    """A change point of one metric of one board, with what moved with it."""

    board: str
    series: tuple[str, str, str, str]
    unit: str
    better: str
    split: Split
    run_id: str  # the first run after the change
    previous_run_id: str
    date: str
    versions: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    accepted: dict[str, Any] | None = None
    #: The night at which the series first showed this change (the check's "new").
    first_seen_run: str = ""
    first_seen_date: str = ""
    #: Context and facts of the same board that moved at the same night (untested).
    context: tuple[str, ...] = ()
    #: What tells this series apart from others of the same name (payloads differ).
    qualifier: str = ""
    #: The watch's placement: the first run after the change where the alarm placed it
    #: (it is placed again on the nights after the alarm), the date of the newest night
    #: the placement used, how many nights from the change on it used, and whether
    #: later nights may still move it.
    first_placed_run: str = ""
    placed_date: str = ""
    nights_after: int = 0
    provisional: bool = False

    @property
    def pct(self) -> float:
        return (self.split.ratio - 1) * 100

    @property
    def worse(self) -> bool:
        return (self.split.ratio < 1) == (self.better == HIGHER_IS_BETTER)

    @property
    def replaced(self) -> bool:
        """Whether nights after the alarm moved the change from where the alarm placed it."""
        return self.first_placed_run not in ("", self.run_id)

    @property
    def series_name(self) -> str:
        return "/".join(self.series) + (f" {{{self.qualifier}}}" if self.qualifier else "")

    def describe(self) -> str:
        low, high = self.split.ratio_low, self.split.ratio_high
        interval = (
            f"[{(low - 1) * 100:+.1f}%, {(high - 1) * 100:+.1f}%]"
            if low is not None and high is not None
            else "[no interval]"
        )
        moved = "; ".join(f"{k} {a} -> {b}" for k, (a, b) in self.versions.items())
        context = (
            f"; context that moved with it (not tested): {'; '.join(self.context)}"
            if self.context
            else ""
        )
        seen = (
            f", first seen at run {self.first_seen_run}"
            if self.first_seen_run and self.first_seen_run != self.run_id
            else ""
        )
        if self.replaced:
            seen += f", first placed at run {self.first_placed_run}"
        if self.provisional:
            nights = f"{self.nights_after} night{'s' if self.nights_after != 1 else ''}"
            seen += f"; placement provisional: {nights} from it so far"
        return (
            f"{self.board} {self.series_name}: {self.pct:+.1f}% "
            f"{'worse' if self.worse else 'better'} from {self.date} (run {self.run_id}, "
            f"after run {self.previous_run_id}{seen}), 95% CI {interval}, p {self.split.p:.2g}"
            + (f"; changed with it: {moved}" if moved else "; no version or environment changed")
            + context
        )


#: The spec keys that make a run's sample plan: nights with other plans measure differently.
PLAN_KEYS = ("quick", "processes", "values", "warmups", "min_time", "payloads", "seed")


def _malformed(run: dict[str, Any], what: str) -> FormatError:
    run_id = run.get("run_id")
    named = f" (run {run_id})" if isinstance(run_id, str) else ""
    return FormatError(
        f"a history row{named} is malformed: {what}",
        hint="the store was damaged or edited by hand: it is left as it is",
    )


def _json_object(run: dict[str, Any], column: str) -> dict[str, Any]:
    """A row's JSON column (manifest, codec_versions) as an object, or FormatError."""
    text = run.get(column)
    if text is None:
        return {}
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise _malformed(run, f"{column} is not a JSON object")
    return value


def _spec(run: dict[str, Any]) -> dict[str, Any]:
    """The plan keys of the run's manifest spec, each of its type (FormatError if not)."""
    spec = _json_object(run, "manifest").get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise _malformed(run, "manifest.spec is not an object")
    for key in PLAN_KEYS:
        value = spec.get(key)
        fits = isinstance(value, bool) if key == "quick" else results.is_value(value)
        if value is not None and not fits:
            kind = "true or false" if key == "quick" else "a number"
            raise _malformed(run, f"manifest.spec.{key} is not {kind}: {value!r:.40}")
    return spec


def plan(run: dict[str, Any]) -> str:
    """The run's sample plan in a few words, from its manifest's spec."""
    spec = _spec(run)
    given = [f"{key}={spec[key]}" for key in PLAN_KEYS if spec.get(key) not in (None, False)]
    return " ".join(given) or "full"


def codec_versions(run: dict[str, Any]) -> dict[str, str | None]:
    """Each codec's library version the run recorded (text or null, FormatError if not)."""
    versions = _json_object(run, "codec_versions")
    for codec, version in versions.items():
        if version is not None and not isinstance(version, str):
            raise _malformed(run, f"codec_versions.{codec} is not text: {version!r:.40}")
    return versions


#: The machine's state a run records (manifest platform, telemetry): not versions, but
#: a change in them explains a moved figure as well as a new protobuf does.
ENVIRONMENT_FIELDS = (
    ("platform", "cpu_model"),
    ("platform", "cpu_count"),
    ("platform", "affinity"),
    ("platform", "python_implementation"),
    ("platform", "clock", "clocksource"),
    ("platform", "clock", "timer"),
    ("telemetry", "governor"),
    ("telemetry", "throttled_phases"),
    ("gc",),
)


def _dig(document: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document  # any JSON value, once a step down
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def environment(manifest: dict[str, Any]) -> dict[str, str | None]:
    """The run's environment fields (ENVIRONMENT_FIELDS) as short text."""
    found = {}
    for path in ENVIRONMENT_FIELDS:
        value = _dig(manifest, path)
        found[".".join(path[1:] if path[0] == "platform" else path)] = (
            None if value is None else json.dumps(value) if isinstance(value, list) else str(value)
        )
    return found


def version_changes(
    before: dict[str, Any], after: dict[str, Any]
) -> dict[str, tuple[str | None, str | None]]:
    """The version fields (each codec's version, the sample plan) and the environment
    fields (CPU, affinity, clock, governor, throttling) that differ between runs."""
    moved = {}
    for name in VERSION_FIELDS:
        if before.get(name) != after.get(name):
            moved[name] = (before.get(name), after.get(name))
    codecs_before, codecs_after = codec_versions(before), codec_versions(after)
    for codec in sorted(set(codecs_before) | set(codecs_after)):
        if codec != "protobuf" and codecs_before.get(codec) != codecs_after.get(codec):
            moved[f"codec {codec}"] = (codecs_before.get(codec), codecs_after.get(codec))
    if "manifest" in before and "manifest" in after:
        if plan(before) != plan(after):
            moved["plan"] = (plan(before), plan(after))
        env_before = environment(_json_object(before, "manifest"))
        env_after = environment(_json_object(after, "manifest"))
        for name, value in env_before.items():
            if value != env_after[name]:
                moved[name] = (value, env_after[name])
    return moved
