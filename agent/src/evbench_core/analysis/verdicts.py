"""Which codec wins a metric, equal, or undecided: only as far as the data say.

Every row of a test family (suite, profile) gets one ratio interval, the one its
verdict uses: the interval that inverts the row's exact test at the level of
Holm's step for that row (1 - alpha / (m - j) for the j-th smallest p of m, the
rejected rows; 1 - alpha / (m - r) for every row Holm did not reject, r rows
having been rejected before it stopped). Holm's procedure and the intervals then
agree by construction: a row whose adjusted p is >= alpha has an interval that
holds 1 (where the exact test and its inverted interval disagree at the edge,
the interval is widened to 1), and a rejected row's interval leaves 1 out.

On that interval, with the row's equivalence margin (analysis/margins.py: a band
1 +/- m around the ratio, or +/- d seconds around a zero difference; `min_effect`,
2 %, for rows given none):

- a winner when the adjusted p < alpha and the whole interval lies beyond the
  margin (the side it favours, given the metric's direction);
- "equal" when the whole interval lies inside the margin and holds no difference
  (always when p (Holm) >= alpha): both one-sided tests against the margin's edges
  reject at the interval's level (TOST, Lakens 2017, each side at alpha / 2 of Holm's
  step);
- "negligible" when the whole interval lies inside the margin but leaves out no
  difference (p (Holm) < alpha): different, shown smaller than the margin, so equal
  for the product. A row Holm rejects whose interval still holds no difference (tied
  differences: the test drops zeros and approximates, the interval keeps them and is
  exact) is "equal": the word follows the interval the row shows;
- "undecided" when it straddles an edge of the margin;
- "n too small" when the plan could not have reached a verdict whatever the
  data (the exact test cannot reach alpha / m at this n: no interval exists).

A margin in seconds (a share of the period or of a core, resolved per row) is
decided on the replicates' differences candidate - baseline instead of their
log-ratios: the same tests, the interval in seconds, and the estimate the
difference's (Hodges-Lehmann), the ratio then 1 + difference / baseline's median.

Looks (sequential runs, `--until-decided`): each look decides its rows at the alpha
it spends (docs/method.md); the intervals of every look then hold together with
probability 1 - the total spent, so a verdict reached at any look keeps its error
rate whichever look stopped the run.

Two designs, both decided on replicates, never on values that share a
replicate (docs/method.md):

- `Paired`: one log-ratio log(candidate / baseline) per replicate, the two
  codecs measured side by side within it (the codec suite: per worker process,
  the median over rounds of the per-round log-ratio; the link suite: per pair
  of phases, a duet or interleaved capacity blocks, the log of the ratio of the
  two phases' figures). Exact
  Wilcoxon signed-rank test; Tukey's Walsh-average interval for the ratio.
- `Independent`: one value per replicate and codec, the replicates of the two
  codecs separate (two runs compared with each other: their replicates share
  nothing, comparison.compare_runs). Exact Mann-Whitney test; Moses' interval of
  the ratio (Hodges-Lehmann).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from evbench_core.analysis import margins, stats

ALPHA = 0.05
MIN_EFFECT = 0.02

#: Direction in which each metric improves.
LOWER_IS_BETTER = "lower"
HIGHER_IS_BETTER = "higher"
#: The interval lies inside the margin and holds no difference: shown equal.
EQUAL = "equal"
#: The interval lies inside the margin and leaves out no difference: different, but by
#: less than the margin (equal for the product).
NEGLIGIBLE = "negligible"
#: The interval straddles an edge of the margin: not yet shown beyond it nor within it.
UNDECIDED = "undecided"
BASELINE = "baseline"
CANDIDATE = "candidate"
#: The plan could not have named a winner, whatever the data (too few replicates
#: for the test to reach the family's level, or for any 95 % ratio interval).
TOO_SMALL = "n too small"

#: Every outcome a tested row can have, besides the two codecs.
NO_WINNER = (EQUAL, NEGLIGIBLE, UNDECIDED)
#: Outcomes that settle a row: a winner, or shown within the margin.
DECIDED = (BASELINE, CANDIDATE, EQUAL, NEGLIGIBLE)

PAIRED_METHOD = "paired: exact Wilcoxon signed-rank on per-replicate log-ratios, Walsh interval"
INDEPENDENT_METHOD = "independent: exact Mann-Whitney on per-replicate values, Moses interval"


@dataclass(frozen=True)
class Paired:
    """One row's evidence from paired replicates: log(candidate / baseline) per replicate."""

    label: str
    better: str
    log_ratios: Sequence[float]
    baseline_median: float
    candidate_median: float
    #: candidate - baseline per replicate (the same replicates as `log_ratios`), for a
    #: margin in seconds.
    differences: Sequence[float] = ()


@dataclass(frozen=True)
class Independent:
    """One row's evidence from independent replicates: one positive value each."""

    label: str
    better: str
    baseline: Sequence[float]
    candidate: Sequence[float]


@dataclass(frozen=True)
class Verdict:
    label: str
    better: str
    baseline_median: float
    candidate_median: float
    pct_diff: float  # (ratio - 1) * 100: the method's estimate
    p_value: float
    p_holm: float
    ratio_low: float | None
    ratio_high: float | None
    winner: str  # BASELINE, CANDIDATE, EQUAL, NEGLIGIBLE, UNDECIDED or TOO_SMALL
    #: Point estimate of candidate / baseline: exp of the log-ratios' estimate, or on the
    #: DIFFERENCE scale 1 + difference / baseline_median (`_ratio_estimate`).
    ratio: float | None = None
    n: int | None = None  # replicates the test counted (pairs, or per side)
    method: str = ""  # PAIRED_METHOD or INDEPENDENT_METHOD (decide_family names it)
    #: Smallest relative difference this row's plan and spread could have
    #: named (0.05 = 5 %); None when no verdict was reachable.
    min_detectable: float | None = None
    #: Smallest p the exact test can give at this n, and the family's size.
    min_p: float | None = None
    family_size: int = 1
    #: The confidence level of the verdict's interval: Holm's step for this row
    #: (module docstring); None when there is no interval.
    interval_level: float | None = None
    #: The scale the verdict was decided on (margins.RATIO or margins.DIFFERENCE), the
    #: margin in words ("5 %", "50 µs, 0.1 % of the 50 ms period") and its half width
    #: (a fraction of the ratio, or seconds).
    scale: str = margins.RATIO
    margin: str = ""
    margin_width: float = MIN_EFFECT
    #: DIFFERENCE rows: the estimate and the verdict's interval of candidate - baseline,
    #: in the metric's unit (ratio_low and ratio_high are then None).
    difference: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    #: The look of a sequential run that decided this row (1 for a single look).
    look: int = 1

    @property
    def decided(self) -> bool:
        return self.winner in DECIDED

    @property
    def interval(self) -> tuple[float, float] | None:
        """The verdict's interval on its own scale (ratio, or difference)."""
        if self.scale == margins.DIFFERENCE:
            if self.diff_low is None or self.diff_high is None:
                return None
            return self.diff_low, self.diff_high
        if self.ratio_low is None or self.ratio_high is None:
            return None
        return self.ratio_low, self.ratio_high

    @property
    def significant(self) -> bool:
        return self.winner in (BASELINE, CANDIDATE)

    @property
    def too_small(self) -> bool:
        return self.winner == TOO_SMALL


def _check_direction(better: str) -> None:
    if better not in (LOWER_IS_BETTER, HIGHER_IS_BETTER):
        raise ValueError(f"unknown direction {better!r}")


def _outcome(
    better: str, low: float, high: float, rejected: bool, limits: tuple[float, float], centre: float
) -> str:
    """The verdict an interval gives against the margin's `limits` around `centre` (1 for
    a ratio, 0 for a difference): a winner only beyond them and with Holm's rejection,
    equal or negligible inside them, undecided across an edge."""
    if rejected and (high < limits[0] or low > limits[1]):
        candidate_smaller = high < centre
        candidate_wins = candidate_smaller == (better == LOWER_IS_BETTER)
        return CANDIDATE if candidate_wins else BASELINE
    if low >= limits[0] and high <= limits[1]:
        # "negligible" claims a difference: only an interval that leaves out `centre` shows
        # one (with ties Holm can reject a row whose exact-rank interval still holds it)
        return NEGLIGIBLE if rejected and not low <= centre <= high else EQUAL
    return UNDECIDED


def holm_levels(pvalues: Sequence[float], alpha: float = ALPHA) -> list[float]:
    """Per row, the confidence level of its interval at Holm's step (module docstring):
    1 - alpha / (m - j) for the j-th smallest p (0-based) while Holm rejects, then
    1 - alpha / (m - r) for every row from the first it does not reject (r rejected)."""
    m = len(pvalues)
    order = sorted(range(m), key=pvalues.__getitem__)
    levels = [0.0] * m
    stopped = None
    for step, index in enumerate(order):
        # the same arithmetic as stats.holm: rejected while (m - j) p < alpha
        if stopped is None and min(1.0, (m - step) * pvalues[index]) >= alpha:
            stopped = step
        levels[index] = 1 - alpha / (m - (step if stopped is None else stopped))
    return levels


def _min_detectable(interval: tuple[float, float] | None, band: margins.Band) -> float | None:
    """The smallest change that would clear the margin with an interval as wide as this
    one: on a ratio (a fraction, `interval` of logs) exp(log(1 + m) + half width) - 1; on
    a difference (seconds) the margin plus the half width."""
    if interval is None:
        return None
    half_width = (interval[1] - interval[0]) / 2
    if band.scale == margins.DIFFERENCE:
        return band.half_width + half_width
    return math.exp(math.log1p(band.half_width) + half_width) - 1


def _positive(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0


def _interval(row: Paired | Independent, level: float, scale: str) -> tuple[float, float] | None:
    """The row's interval at `level`, inverting its test: of log(candidate / baseline) on
    the RATIO scale, of candidate - baseline on the DIFFERENCE scale."""
    if isinstance(row, Paired):
        values = _paired_values(row, scale)
        return stats.center_ci(values, level) if values else None
    base, cand = list(row.baseline), list(row.candidate)
    if scale == margins.DIFFERENCE:
        return stats.shift_ci(base, cand, level) if base and cand else None
    if not (_positive(base) and _positive(cand)):
        return None
    bounds = stats.ratio_ci(base, cand, level)
    return (math.log(bounds[0]), math.log(bounds[1])) if bounds else None


def _paired_values(row: Paired, scale: str) -> list[float]:
    chosen = row.differences if scale == margins.DIFFERENCE else row.log_ratios
    return [d for d in chosen if math.isfinite(d)]


@dataclass(frozen=True)
class _Evidence:
    n: int
    p: float
    estimate: float | None  # log ratio
    difference: float | None  # DIFFERENCE scale: the estimate of candidate - baseline
    min_p: float
    method: str
    baseline_median: float
    candidate_median: float


def _evidence(row: Paired | Independent, scale: str) -> _Evidence:
    """The row's test and estimates on `scale`, by its design."""
    if isinstance(row, Paired):
        return _paired_evidence(row, scale)
    return _independent_evidence(row, scale)


def _paired_evidence(row: Paired, scale: str) -> _Evidence:
    """Wilcoxon's signed-rank test on the tested values (log-ratios, or differences on the
    DIFFERENCE scale); the log-ratio's estimate from the log-ratios."""
    tested = _paired_values(row, scale)
    logs = _paired_values(row, margins.RATIO)
    return _Evidence(
        n=len(tested),
        p=stats.signed_rank(tested)[1] if tested else 1.0,
        estimate=stats.center_estimate(logs) if logs else None,
        difference=(
            stats.center_estimate(tested) if tested and scale == margins.DIFFERENCE else None
        ),
        min_p=stats.min_p_signed_rank(len(tested)),
        method=PAIRED_METHOD,
        baseline_median=row.baseline_median,
        candidate_median=row.candidate_median,
    )


def _independent_evidence(row: Independent, scale: str) -> _Evidence:
    """Mann-Whitney's test on the two sides' values; the ratio's estimate only when every
    value is positive, the shift's only on the DIFFERENCE scale."""
    base, cand = list(row.baseline), list(row.candidate)
    usable = _positive(base) and _positive(cand)
    shift = scale == margins.DIFFERENCE and base and cand
    return _Evidence(
        n=min(len(base), len(cand)),
        p=stats.mann_whitney_exact(base, cand)[1] if base and cand else 1.0,
        estimate=math.log(stats.ratio_estimate(base, cand)) if usable else None,
        difference=stats.shift_estimate(base, cand) if shift else None,
        min_p=stats.min_p_rank_sum(len(base), len(cand)),
        method=INDEPENDENT_METHOD,
        baseline_median=statistics.median(base) if base else math.nan,
        candidate_median=statistics.median(cand) if cand else math.nan,
    )


def relative_band(min_effect: float) -> margins.Band:
    """The band of a row given no margin of its own: 1 +/- `min_effect`."""
    return margins.Band(margins.RATIO, min_effect, f"{min_effect * 100:g} %")


@dataclass(frozen=True)
class _Family:
    """What every row's decision shares: the family's size m and its level alpha."""

    size: int
    alpha: float


def _chosen_bands(
    m: int, min_effect: float, bands: Sequence[margins.Band | None] | None
) -> list[margins.Band]:
    """Each row's band: its own (margins.resolve), or 1 +/- `min_effect` for a row given
    none (every row when `bands` is None)."""
    given = bands if bands is not None else [None] * m
    return [band or relative_band(min_effect) for band in given]


def _first_step_interval(
    row: Paired | Independent, band: margins.Band, found: _Evidence, family: _Family
) -> tuple[float, float] | None:
    """The row's interval at Holm's first step (1 - alpha / m), or None when the plan could
    not have reached a verdict at this n: no interval at that level, or an exact test that
    cannot reach alpha / m. Whatever the row's own step, this says whether it is TOO_SMALL
    and gives its minimum detectable effect."""
    strict = _interval(row, 1 - family.alpha / family.size, band.scale)
    reachable = strict is not None and found.min_p * family.size < family.alpha
    return strict if reachable else None


def _holding_no_difference(
    interval: tuple[float, float] | None, rejected: bool
) -> tuple[float, float] | None:
    """The verdict's interval, widened to hold no difference (0 on its scale) when Holm
    does not reject the row: the exact test and its inverted interval can disagree at the
    edge (ties, the normal approximation), and the interval keeps 1 when Holm does."""
    if interval is None or rejected or interval[0] <= 0 <= interval[1]:
        return interval
    return (min(interval[0], 0.0), max(interval[1], 0.0))


def _judged(
    better: str, interval: tuple[float, float] | None, rejected: bool, band: margins.Band
) -> tuple[str, tuple[float, float] | None]:
    """The row's outcome and the interval it shows on the band's scale: the ratio interval
    (exp of the log-ratio one) against 1 +/- m, or the difference's against 0 +/- d;
    TOO_SMALL, with no interval, when the plan could not reach a verdict."""
    if interval is None:
        return TOO_SMALL, None
    if band.scale == margins.RATIO:
        shown = (math.exp(interval[0]), math.exp(interval[1]))
        return _outcome(better, *shown, rejected, band.ratio_limits, 1.0), shown
    limits = (-band.half_width, band.half_width)
    return _outcome(better, *interval, rejected, limits, 0.0), interval


#: A verdict's pair of bounds on a scale it was not decided on.
_NO_BOUNDS: tuple[float | None, float | None] = (None, None)


def _bounds_by_scale(
    shown: tuple[float, float] | None, on_ratio: bool
) -> tuple[tuple[float | None, float | None], tuple[float | None, float | None]]:
    """The shown interval as (ratio_low, ratio_high) and (diff_low, diff_high): the pair
    of the scale it was decided on holds it, the other pair is None."""
    if shown is None:
        return _NO_BOUNDS, _NO_BOUNDS
    return (shown, _NO_BOUNDS) if on_ratio else (_NO_BOUNDS, shown)


def _ratio_estimate(found: _Evidence, scale: str) -> float | None:
    """The ratio candidate / baseline the change, the candidate's cell and the verdict
    line show. On the RATIO scale exp of the log-ratios' estimate; on the DIFFERENCE scale
    from the difference's estimate, 1 + difference / baseline's median: the log-ratios'
    estimate can point the other way when replicates differ in level (many slow pairs a
    little faster, a few fast ones much slower), and the change must point the way the
    verdict's interval does. Where that is no ratio (at or below 0: replicates on levels
    so far apart that a few loaded pairs' difference outweighs the quiet pairs' baseline,
    which a fresh-clone run met on a jitter row), the log-ratios' estimate, which always
    is one. None where neither estimate exists."""
    if scale == margins.DIFFERENCE and found.difference is not None:
        base = found.baseline_median
        if math.isfinite(base) and base > 0 and found.difference / base > -1:
            return 1 + found.difference / base
    return math.exp(found.estimate) if found.estimate is not None else None


def _decide_row(
    row: Paired | Independent,
    found: _Evidence,
    band: margins.Band,
    p_holm: float,
    level: float,
    family: _Family,
) -> Verdict:
    """One row's verdict, from its evidence and band and its place in Holm's procedure:
    the adjusted p, and the level of its step's interval (`holm_levels`)."""
    first_step = _first_step_interval(row, band, found, family)
    interval = _interval(row, level, band.scale) if first_step is not None else None
    rejected = p_holm < family.alpha
    interval = _holding_no_difference(interval, rejected)
    winner, shown = _judged(row.better, interval, rejected, band)
    on_ratio = band.scale == margins.RATIO
    (ratio_low, ratio_high), (diff_low, diff_high) = _bounds_by_scale(shown, on_ratio)
    ratio = _ratio_estimate(found, band.scale)
    return Verdict(
        label=row.label,
        better=row.better,
        baseline_median=found.baseline_median,
        candidate_median=found.candidate_median,
        pct_diff=(ratio - 1) * 100 if ratio is not None else math.nan,
        p_value=found.p,
        p_holm=p_holm,
        ratio_low=ratio_low,
        ratio_high=ratio_high,
        winner=winner,
        ratio=ratio,
        n=found.n,
        method=found.method,
        min_detectable=_min_detectable(first_step, band),
        min_p=found.min_p,
        family_size=family.size,
        interval_level=level if interval else None,
        scale=band.scale,
        margin=band.words,
        margin_width=band.half_width,
        difference=found.difference,
        diff_low=diff_low,
        diff_high=diff_high,
    )


def decide_family(
    rows: Sequence[Paired | Independent],
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
    bands: Sequence[margins.Band | None] | None = None,
) -> list[Verdict]:
    """Decide every row of one test family, Holm-correcting across the family.

    `bands`: each row's margin (margins.resolve), or None for 1 +/- `min_effect`.
    A row is TOO_SMALL when its exact test cannot reach alpha / m (Holm's first
    step, m rows) at its n, or when no interval exists at that level; its
    minimum detectable effect is then None, and it has no interval. Otherwise its
    interval is the one at Holm's step for the row (`holm_levels`), and the minimum
    detectable effect comes from the row's own interval at level 1 - alpha / m.
    """
    family = _Family(size=len(rows), alpha=alpha)
    for row in rows:
        _check_direction(row.better)
    chosen = _chosen_bands(family.size, min_effect, bands)
    evidence = [_evidence(row, band.scale) for row, band in zip(rows, chosen, strict=True)]
    raw = [e.p for e in evidence]
    adjusted = stats.holm(raw)
    levels = holm_levels(raw, alpha)
    return [
        _decide_row(row, found, band, p_holm, level, family)
        for row, found, p_holm, level, band in zip(
            rows, evidence, adjusted, levels, chosen, strict=True
        )
    ]


__all__ = [
    "ALPHA",
    "BASELINE",
    "CANDIDATE",
    "DECIDED",
    "EQUAL",
    "HIGHER_IS_BETTER",
    "MIN_EFFECT",
    "NEGLIGIBLE",
    "TOO_SMALL",
    "UNDECIDED",
]
