"""The nightly watch: whether the newest nights of a series moved, asked every night.

The segmentation (`segmentation.detect`) looks back over a whole series and needs
`MIN_SEGMENT` nights after a step to place it. The watch answers sooner, as a
lab's check must: each night it tests the newest `WINDOW` nights against the
nights before them since the last change (`window_tests`), one-sided on the side
where the series gets worse, and raises an alarm on the night the window moved.

- `watch_family` watches all the series of a board together, night by night,
  and calls that night's alarms by the Benjamini-Hochberg procedure
  (`benjamini_hochberg`) over the series tested; `watch` replays one series
  alone. `_watching` is one series' watch as a generator, a p a night.
- `reference_needed`: how many reference nights the exact rank test needs to
  reach a level at all; before that the step test decides alone.
- An alarm's change is placed where a shift is likeliest over the series and its
  companions together (`_likeliest_start`), and placed again on each of the
  next nights until `WINDOW` nights from the alarm are in (`Seen`).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from evbench.history.segmentation import MIN_SEGMENT, Split, beyond_min_effect
from evbench.history.wild_nights import robust_line
from evbench.history.window_tests import (
    MIN_REFERENCE,
    TAME_NIGHTS,
    TREND_NIGHTS,
    about_line,
    beyond_new_level,
    beyond_reference,
    detrended_rank_p,
    rank_p,
    step_test,
    tamed_reference,
)
from evbench_core.analysis import stats
from evbench_core.analysis.verdicts import ALPHA

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
        slope, centre, spread = robust_line(y, t - t[0]) if len(y) >= TAME_NIGHTS else (0, 0, 0)
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


@dataclass(frozen=True)
class _Series:
    """One series as its watch reads it: the nightly values, their logs, the logs that
    place a change (the series', then its companions'; NaN where one lacks a night),
    the logs the tests read (the joint series' for a relative one), and how it is tested."""

    values: Sequence[float]
    logs: list[float]
    placing: list[list[float]]
    test: list[float]
    worse: str | None
    wanders: bool
    #: A codec's relative series, its operations together (`Watched.joint`).
    relative: bool
    #: The fewest reference nights with which the exact rank test reaches the level.
    need: int

    def ranked(self, reference: Sequence[float], window: Sequence[float]) -> float:
        """The exact rank test's p, about the reference's line for a relative series."""
        ranked = detrended_rank_p if self.relative else rank_p
        return ranked(reference, window, self.worse)


def _read(
    values: Sequence[float],
    level: float,
    worse: str | None,
    companions: Sequence[Sequence[float]],
    wanders: bool,
    joint: Sequence[float] | None,
) -> _Series:
    """The series as its watch reads it (`_Series`); ValueError for nights it cannot read."""
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
    test = logs if joint is None else [math.log(v) for v in joint]
    need = reference_needed(level, one_sided=worse is not None)
    return _Series(values, logs, placing, test, worse, wanders, joint is not None, need)


def _night_p(series: _Series, start: int, before: int, last_alarm: int | None, first: int,
             last: int) -> tuple[float | None, list[list[float]], int]:  # fmt: skip
    """The night's test of its window first..last: (p, None when nothing is tested; the
    logs a change it calls is placed on; their reference's first night).

    The nights since the last change (from `start`) are the reference once the exact
    rank test can reach the level with them (`_against_reference`); until then the
    nights before that change (from `before`), moved to its level, stand in
    (`_against_levelled`), and in the first nights of a series (or since a change
    nothing stands in for) the step test decides alone (`_first_nights_p`). A window
    must lie after the newest alarm's night (`last_alarm`) but for the first case."""
    reference_start = max(start, first - MAX_REFERENCE)
    if first - start >= series.need:
        p = _against_reference(series, reference_start, first, last)
        return p, series.placing, reference_start
    if last_alarm is not None and first > last_alarm and first - before >= series.need:
        return _against_levelled(series, before, start, first, last)
    if first - start >= MIN_REFERENCE and (last_alarm is None or first > last_alarm):
        p = _first_nights_p(series, reference_start, first, last)
        return p, series.placing, reference_start
    return None, series.placing, reference_start


def _against_reference(series: _Series, reference_start: int, first: int, last: int) -> float:
    """p of the window first..last against the reference nights reference_start..first-1."""
    # The exact rank test can reach the level: it and the step test must agree.
    reference = tamed_reference(series.test, reference_start, first)
    window = series.test[first : last + 1]
    return max(series.ranked(reference, window),
               step_test(series.test, reference_start, first, last, series.worse,
                         MIN_REFERENCE, series.wanders, series.relative)[0])  # fmt: skip


def _against_levelled(series: _Series, before: int, start: int, first: int, last: int
                      ) -> tuple[float, list[list[float]], int]:  # fmt: skip
    """(p, the levelled logs, their reference's first night) of the window first..last
    against the nights before the change at `start`, moved to its new level."""
    # Too few nights since the last change to test against: the nights
    # before it, moved to the new level, stand in (`_levelled`), so a
    # second step soon after a first one is not left unseen. The window
    # must lie after the nights the last change may still be placed at
    # (a step that takes nights to settle is one change, not two).
    tested = _levelled(series.placing, before, start, first)
    reference_start = max(before, first - MAX_REFERENCE)
    reference, window = tested[0][reference_start:first], tested[0][first : last + 1]
    p = max(rank_p(reference, window, series.worse),
            beyond_new_level(series.logs, before, start, first, last, series.worse))  # fmt: skip
    return p, tested, reference_start


def _first_nights_p(series: _Series, reference_start: int, first: int, last: int) -> float:
    """p of the window first..last by the step test alone, 1 unless every window night
    lies beyond every reference night."""
    # The first nights (of the series, or since a change): the rank test cannot
    # reach the level yet; the step test decides, and the window must still lie
    # wholly beyond the reference (the rank test's most extreme outcome), so one
    # wild night cannot make a change.
    test = series.test
    reference, window = test[reference_start:first], test[first : last + 1]
    if series.relative:
        # A relative series about its reference's line, a wild reference night
        # (from TAME_NIGHTS on) put back on it, and a partner's wild night in the
        # window tamed: on the worse side one wild reference night stood beyond
        # any window, on the better side a partner's wild night held every window.
        tamed = tamed_reference(test, reference_start, first)
        reference, window = about_line(tamed, window)
    if not beyond_reference(reference, window, series.worse):
        return 1.0
    return step_test(test, reference_start, first, last, series.worse, wanders=series.wanders,
                     either_side=series.relative)[0]  # fmt: skip


def _placed_again(series: _Series, seen: Seen, moving: tuple[int, int, list[list[float]]],
                  last: int) -> Seen:  # fmt: skip
    """The newest change placed again among the same candidate nights with every night
    up to `last`, and sized again with them; its p and alarm night kept. `moving`: its
    reference's first night, its window's first night and the logs it was tested on."""
    reference_start, first, tested = moving
    split = _likeliest_start(tested, reference_start, first, seen.seen, last)
    candidate = _split(_nightly(tested, series.placing, series.values), reference_start,
                       split, last + 1, math.nan, seen.split.p)  # fmt: skip
    return replace(seen, split=candidate, through=last,
                   placements=(*seen.placements, candidate))  # fmt: skip


def _alarm(series: _Series, tested: list[list[float]], reference_start: int, first: int,
           last: int, p: float) -> Seen | None:  # fmt: skip
    """The change a called night raises: placed where a shift is likeliest
    (`_likeliest_start`) and sized on the series' own nights; None when its ratio's
    interval does not lie wholly beyond 1 +/- MIN_EFFECT."""
    split = _likeliest_start(tested, reference_start, first, last)
    candidate = _split(_nightly(tested, series.placing, series.values), reference_start,
                       split, last + 1, math.nan, p)  # fmt: skip
    moses_short = candidate.ratio_low is None or (
        series.relative and not beyond_min_effect(candidate.ratio_low, candidate.ratio_high)
    )
    if moses_short:
        # Too few nights for the rank interval at 95 % (4 against 3), or a relative
        # series whose window holds a partner codec's wild night (the rank interval
        # then reaches down to it): the step test's own interval, exp(d +- t(0.975,
        # df) x its standard error), which leaves that night out.
        _p, step, error, df = step_test(series.logs, reference_start, split, last,
                                        series.worse, wanders=series.wanders,
                                        either_side=series.relative)  # fmt: skip
        if df > 0 and math.isfinite(error):
            spread = stats.student_t_quantile(0.975, df) * error
            candidate = replace(candidate, ratio_low=math.exp(step - spread),
                                ratio_high=math.exp(step + spread))  # fmt: skip
    if not beyond_min_effect(candidate.ratio_low, candidate.ratio_high):
        return None
    return Seen(candidate, last, split, last, (candidate,))


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
    about its reference's line (`detrended_rank_p`), not on its raw nights, and a
    partner codec's wild night in its window is tamed (`step_test`'s `either_side`)."""
    series = _read(values, level, worse, companions, wanders, joint)
    found: list[Seen] = []
    start = 0  # the first night since the last change
    before = 0  # where the segment before the last change began
    # found[-1]'s reference start, first candidate and the series it was tested on
    moving: tuple[int, int, list[list[float]]] | None = None
    for last in range(len(values)):
        if moving is not None and last <= found[-1].seen + WINDOW - 1:
            found[-1] = _placed_again(series, found[-1], moving, last)
            start = found[-1].split.index
        first = last - WINDOW + 1
        last_alarm = found[-1].seen if found else None
        p, tested, reference_start = _night_p(series, start, before, last_alarm, first, last)
        called = yield p
        if p is None or not called:
            continue
        seen = _alarm(series, tested, reference_start, first, last, p)
        if seen is None:
            continue
        found.append(seen)
        before, start = start, seen.split.index
        moving = (reference_start, first, tested)
    return found


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
      must also pass a t test against the nights since the change (`beyond_new_level`).

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
    is left to the segmentation (`segmentation.detect`), which tests both ways. Many series of a
    board are watched together by `watch_family`.
    """
    return watch_family([Watched(values, worse, companions, wanders=wanders)], alpha)[0]
