"""Tests of a window of the newest nights against the reference nights before it.

The nightly watch (`nightly_watch`) asks every night whether its newest nights
moved away from the nights before them, and the segmentation
(`segmentation.detect`) whether a split it found stands beside a drift. These
are the tests that answer, each on the nights' logs (changes are relative) and
each giving p, one-sided on the `worse` side ("higher", "lower") or two-sided:

- `step_test`: a step at the window's first night beside a linear trend through
  the newest `TREND_NIGHTS` reference nights (Student's t; for a series that
  carries the lab's load, the error a random walk would give), so a drift is
  not a change;
- `rank_p`: exact Mann-Whitney of the window against the reference;
  `detrended_rank_p` the same about the reference's robust line (`about_line`),
  for a codec's relative series;
- `beyond_reference`: whether every window night lies beyond every reference
  night (the rank test's most extreme outcome);
- `beyond_new_level`: a t test of the window against the few nights since a
  recent change.

A wild reference night is tamed first (`wild_nights`), so one night cannot hide
a step from a test or raise one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from evbench.history.wild_nights import OUTLIER_SCALES, robust_line, tame_about_line
from evbench_core.analysis import stats

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
#: MIN_REFERENCE + the watch's WINDOW (3) - 3 = 4 degrees of freedom for the noise.
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
    (`tame_about_line`): it would swamp the scatter and hide a step; a window night
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
        y[: first - start] = tame_about_line(y[: first - start])
        # A window night wild on the worse side (WILD_WINDOW_SCALES reference spreads
        # beyond the window's median) would swamp the scatter too: left out, while 2
        # window nights remain. Only on the worse side: no night is left out that
        # speaks against a change.
        window = y[first - start :]
        spread = robust_line(y[: first - start])[2]
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


def tamed_reference(logs: Sequence[float], reference_start: int, first: int) -> list[float]:
    """The reference nights reference_start..first-1 with the newest TREND_NIGHTS tamed
    about their line (`tame_about_line`, from TAME_NIGHTS of them on): the rank test's
    reference, so one wild night there cannot hide a step from it."""
    reference = np.asarray(logs[reference_start:first], dtype=float)
    newest = min(TREND_NIGHTS, len(reference))
    if newest >= TAME_NIGHTS:
        reference[-newest:] = tame_about_line(reference[-newest:])
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


def beyond_reference(reference: Sequence[float], window: Sequence[float],
                     worse: str | None) -> bool:  # fmt: skip
    """Whether every window night lies beyond every reference night on the worse side
    (either side if None): the rank test's most extreme outcome."""
    if worse in (None, "higher") and min(window) > max(reference):
        return True
    return worse in (None, "lower") and max(window) < min(reference)


def about_line(reference: Sequence[float], window: Sequence[float]
               ) -> tuple[list[float], list[float]]:  # fmt: skip
    """The reference's and the window's residuals about the reference's robust line
    (`robust_line`, carried on into the window), a wild reference night put on the
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
    slope, centre, spread = robust_line(ref)
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


def detrended_rank_p(reference: Sequence[float], window: Sequence[float],
                     worse: str | None) -> float:  # fmt: skip
    """The exact Mann-Whitney p of the window against the reference about the
    reference's line (`about_line`): a drift of the level is not a change, a step off
    it is. One-sided on the `worse` side (two-sided if None), 1 when the window moved
    the other way.

    The residuals tie where they need not: Theil and Sen's line passes through two
    nights at equal residual, and a tamed night sits on the line or at the window's
    median. A tie within one side leaves U as it is; one across the sides counts a half.
    U is then held to the exact distribution without ties, rounded toward no change (a
    tie would otherwise send `stats.mann_whitney_exact` to its normal approximation,
    which for 3 nights against a dozen is far from exact: 1 / 190 for 1 / 680)."""
    ref, win = about_line(reference, window)
    if worse is None or len(ref) > stats.EXACT_RANK_SUM_MAX_N:
        return rank_p(ref, win, worse)
    sign = 1.0 if worse == "higher" else -1.0
    if sign * (statistics.median(win) - statistics.median(ref)) <= 0:
        return 1.0  # better, or no move: not the watch's question
    beyond = sum(1.0 if sign * (b - a) > 0 else 0.5 if b == a else 0.0 for a in ref for b in win)
    counts = stats.rank_sum_counts(len(win), len(ref))
    return sum(counts[math.floor(beyond) :]) / math.comb(len(ref) + len(win), len(win))


def rank_p(reference: Sequence[float], window: Sequence[float], worse: str | None) -> float:
    """The exact Mann-Whitney p of the window against the reference, one-sided on the
    worse side (1 when the window moved the other way), two-sided if `worse` is None."""
    _u, p = stats.mann_whitney_exact(reference, window)
    if worse is None:
        return p
    higher = statistics.median(window) > statistics.median(reference)
    if higher != (worse == "higher"):
        return 1.0  # better, or no move: not the watch's question
    return p / 2  # the exact (or approximate) test's tail on the worse side


def beyond_new_level(logs: Sequence[float], before: int, start: int, first: int,
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
