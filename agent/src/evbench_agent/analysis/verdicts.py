"""Which codec wins a metric, equal, or undecided: only as far as the data say.

Every row of a test family (suite, profile) gets one ratio interval, the one its
verdict uses: the interval that inverts the row's exact test at the level of
Holm's step for that row (1 - alpha / (m - j) for the j-th smallest p of m, the
rejected rows; 1 - alpha / (m - r) for every row Holm did not reject, r rows
having been rejected before it stopped). Holm's procedure and the intervals then
agree by construction: a row whose adjusted p is >= alpha has an interval that
holds 1 (where the exact test and its inverted interval disagree at the edge,
the interval is widened to 1), and a rejected row's interval leaves 1 out.

On that interval, with the minimum effect `min_effect` (2 %):

- a winner when the adjusted p < alpha and the whole interval lies outside
  1 +/- `min_effect` (the side it favours, given the metric's direction);
- "equal" when the whole interval lies inside 1 +/- `min_effect`;
- "undecided" when it straddles an edge of that band;
- "n too small" when the plan could not have reached a verdict whatever the
  data (the exact test cannot reach alpha / m at this n: no interval exists).

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

from evbench_agent.analysis import stats

ALPHA = 0.05
MIN_EFFECT = 0.02

#: Direction in which each metric improves.
LOWER_IS_BETTER = "lower"
HIGHER_IS_BETTER = "higher"
#: The interval lies inside 1 +/- the minimum effect: shown equal.
EQUAL = "equal"
#: The interval straddles an edge of that band: neither shown equal nor different.
UNDECIDED = "undecided"
BASELINE = "baseline"
CANDIDATE = "candidate"
#: The plan could not have named a winner, whatever the data (too few replicates
#: for the test to reach the family's level, or for any 95 % ratio interval).
TOO_SMALL = "n too small"

#: Every outcome a tested row can have, besides the two codecs.
NO_WINNER = (EQUAL, UNDECIDED)

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
    winner: str  # BASELINE, CANDIDATE, EQUAL, UNDECIDED or TOO_SMALL
    ratio: float | None = None  # point estimate of candidate / baseline
    n: int | None = None  # replicates the test counted (pairs, or per side)
    method: str = ""  # PAIRED_METHOD or INDEPENDENT_METHOD (decide_family names it)
    #: Smallest relative difference this row's plan and spread could have
    #: named (0.05 = 5 %); None when no verdict was reachable.
    min_detectable: float | None = None
    #: Smallest p the exact test can give at this n, and the family's size.
    min_p: float | None = None
    family_size: int = 1
    #: The confidence level of ratio_low..ratio_high: Holm's step for this row
    #: (module docstring); None when there is no interval.
    interval_level: float | None = None

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
    better: str, ratio_low: float, ratio_high: float, rejected: bool, min_effect: float
) -> str:
    """The verdict an interval gives: a winner only beyond the band and with Holm's
    rejection, equal inside it, undecided across an edge."""
    if rejected and (ratio_high < 1 - min_effect or ratio_low > 1 + min_effect):
        candidate_smaller = ratio_high < 1
        candidate_wins = candidate_smaller == (better == LOWER_IS_BETTER)
        return CANDIDATE if candidate_wins else BASELINE
    if ratio_low >= 1 - min_effect and ratio_high <= 1 + min_effect:
        return EQUAL
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


def _min_detectable(log_interval: tuple[float, float] | None, min_effect: float) -> float | None:
    """The smallest ratio change (as a fraction) that would clear the minimum effect with
    an interval as wide as this one: exp(log(1 + min_effect) + half width) - 1."""
    if log_interval is None:
        return None
    half_width = (log_interval[1] - log_interval[0]) / 2
    return math.exp(math.log1p(min_effect) + half_width) - 1


def _positive(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0


def _log_interval(row: Paired | Independent, level: float) -> tuple[float, float] | None:
    """The row's interval of log(candidate / baseline) at `level`, inverting its test."""
    if isinstance(row, Paired):
        diffs = [d for d in row.log_ratios if math.isfinite(d)]
        return stats.center_ci(diffs, level) if diffs else None
    base, cand = list(row.baseline), list(row.candidate)
    if not (_positive(base) and _positive(cand)):
        return None
    bounds = stats.ratio_ci(base, cand, level)
    return (math.log(bounds[0]), math.log(bounds[1])) if bounds else None


@dataclass(frozen=True)
class _Evidence:
    n: int
    p: float
    estimate: float | None  # log ratio
    min_p: float
    method: str
    baseline_median: float
    candidate_median: float


def _evidence(row: Paired | Independent) -> _Evidence:
    if isinstance(row, Paired):
        diffs = [d for d in row.log_ratios if math.isfinite(d)]
        return _Evidence(
            n=len(diffs),
            p=stats.signed_rank(diffs)[1] if diffs else 1.0,
            estimate=stats.center_estimate(diffs) if diffs else None,
            min_p=stats.min_p_signed_rank(len(diffs)),
            method=PAIRED_METHOD,
            baseline_median=row.baseline_median,
            candidate_median=row.candidate_median,
        )
    base, cand = list(row.baseline), list(row.candidate)
    usable = _positive(base) and _positive(cand)
    return _Evidence(
        n=min(len(base), len(cand)),
        p=stats.mann_whitney_exact(base, cand)[1] if base and cand else 1.0,
        estimate=math.log(stats.ratio_estimate(base, cand)) if usable else None,
        min_p=stats.min_p_rank_sum(len(base), len(cand)),
        method=INDEPENDENT_METHOD,
        baseline_median=statistics.median(base) if base else math.nan,
        candidate_median=statistics.median(cand) if cand else math.nan,
    )


def decide_family(
    rows: Sequence[Paired | Independent],
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
) -> list[Verdict]:
    """Decide every row of one test family, Holm-correcting across the family.

    A row is TOO_SMALL when its exact test cannot reach alpha / m (Holm's first
    step, m rows) at its n, or when no ratio interval exists at that level; its
    minimum detectable effect is then None, and it has no interval. Otherwise its
    interval is the one at Holm's step for the row (`holm_levels`), and the minimum
    detectable effect comes from the row's own interval at level 1 - alpha / m.
    """
    m = len(rows)
    for row in rows:
        _check_direction(row.better)
    evidence = [_evidence(row) for row in rows]
    raw = [e.p for e in evidence]
    adjusted = stats.holm(raw)
    levels = holm_levels(raw, alpha)
    verdicts = []
    for row, found, p_holm, level in zip(rows, evidence, adjusted, levels, strict=True):
        strict = _log_interval(row, 1 - alpha / m)
        reachable = strict is not None and found.min_p * m < alpha
        interval = _log_interval(row, level) if reachable else None
        rejected = p_holm < alpha
        if interval is not None and not rejected and not interval[0] <= 0 <= interval[1]:
            # The exact test and its inverted interval can disagree at the edge (ties,
            # the normal approximation): the verdict's interval keeps 1 when Holm does.
            interval = (min(interval[0], 0.0), max(interval[1], 0.0))
        ratio_low = math.exp(interval[0]) if interval else None
        ratio_high = math.exp(interval[1]) if interval else None
        if ratio_low is None or ratio_high is None:
            winner = TOO_SMALL
        else:
            winner = _outcome(row.better, ratio_low, ratio_high, rejected, min_effect)
        ratio = math.exp(found.estimate) if found.estimate is not None else None
        verdicts.append(
            Verdict(
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
                min_detectable=_min_detectable(strict, min_effect) if reachable else None,
                min_p=found.min_p,
                family_size=m,
                interval_level=level if interval else None,
            )
        )
    return verdicts


__all__ = [
    "ALPHA",
    "BASELINE",
    "CANDIDATE",
    "EQUAL",
    "HIGHER_IS_BETTER",
    "MIN_EFFECT",
    "TOO_SMALL",
    "UNDECIDED",
]
