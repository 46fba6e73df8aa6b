"""Which codec wins a metric, and only when the data say so.

A winner is named only when the difference is significant after Holm's
correction over the rows of its test family, and larger than a minimum
effect: the whole 95 % interval of the ratio of the candidate to the baseline
lies outside 1 +/- `min_effect`. Otherwise the row is a tie, or "n too small"
when its plan could not have reached a verdict whatever the data.

Two designs, both decided on replicates, never on values that share a
replicate (docs/method.md):

- `Paired`: one log-ratio log(candidate / baseline) per replicate, the two
  codecs measured side by side within it (the codec suite: per worker process,
  the median over rounds of the per-round log-ratio). Exact Wilcoxon
  signed-rank test; Tukey's Walsh-average interval for the ratio.
- `Independent`: one value per replicate and codec, the replicates of the two
  codecs separate (the link suite: one value per phase, a per-message figure
  reduced to the phase's median). Exact Mann-Whitney test; Moses' interval of
  the ratio (Hodges-Lehmann). Two runs compared with each other are this
  design too: their replicates share nothing (comparison.compare_runs).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from evbench_agent import stats

ALPHA = 0.05
MIN_EFFECT = 0.02

#: Direction in which each metric improves.
LOWER_IS_BETTER = "lower"
HIGHER_IS_BETTER = "higher"
TIE = "tie"
BASELINE = "baseline"
CANDIDATE = "candidate"
#: The plan could not have named a winner, whatever the data (too few replicates
#: for the test to reach the family's level, or for any 95 % ratio interval).
TOO_SMALL = "n too small"

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
    winner: str  # BASELINE, CANDIDATE, TIE or TOO_SMALL
    ratio: float | None = None  # point estimate of candidate / baseline
    n: int | None = None  # replicates the test counted (pairs, or per side)
    method: str = ""  # PAIRED_METHOD or INDEPENDENT_METHOD (decide_family names it)
    #: Smallest relative difference this row's plan and spread could have
    #: named (0.05 = 5 %); None when no verdict was reachable.
    min_detectable: float | None = None
    #: Smallest p the exact test can give at this n, and the family's size.
    min_p: float | None = None
    family_size: int = 1

    @property
    def significant(self) -> bool:
        return self.winner in (BASELINE, CANDIDATE)

    @property
    def too_small(self) -> bool:
        return self.winner == TOO_SMALL


def _check_direction(better: str) -> None:
    if better not in (LOWER_IS_BETTER, HIGHER_IS_BETTER):
        raise ValueError(f"unknown direction {better!r}")


def _faster(better: str, ratio_low: float, ratio_high: float, min_effect: float) -> str:
    """Which side the ratio interval favours beyond the minimum effect, if any."""
    if ratio_high < 1 - min_effect:
        candidate_smaller = True
    elif ratio_low > 1 + min_effect:
        candidate_smaller = False
    else:
        return TIE
    candidate_wins = candidate_smaller == (better == LOWER_IS_BETTER)
    return CANDIDATE if candidate_wins else BASELINE


def _min_detectable(log_interval: tuple[float, float] | None, min_effect: float) -> float | None:
    """The smallest ratio change (as a fraction) that would clear the minimum effect with
    an interval as wide as this one: exp(log(1 + min_effect) + half width) - 1."""
    if log_interval is None:
        return None
    half_width = (log_interval[1] - log_interval[0]) / 2
    return math.exp(math.log1p(min_effect) + half_width) - 1


def _positive(values: Sequence[float]) -> bool:
    return bool(values) and min(values) > 0


def decide_family(
    rows: Sequence[Paired | Independent],
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
) -> list[Verdict]:
    """Decide every row of one test family, Holm-correcting across the family.

    A row is TOO_SMALL when its exact test cannot reach alpha / m (Holm's first
    step, m rows) at its n, or when no 95 % ratio interval exists; its minimum
    detectable effect is then None. Otherwise the minimum detectable effect is
    computed from the row's own interval at level 1 - alpha / m.
    """
    m = len(rows)
    raw, prepared = [], []
    for row in rows:
        _check_direction(row.better)
        if isinstance(row, Paired):
            diffs = [d for d in row.log_ratios if math.isfinite(d)]
            n = len(diffs)
            p = stats.signed_rank(diffs)[1] if diffs else 1.0
            interval = stats.center_ci(diffs) if diffs else None
            strict = stats.center_ci(diffs, 1 - alpha / m) if diffs else None
            estimate = stats.center_estimate(diffs) if diffs else None
            min_p = stats.min_p_signed_rank(n)
            prepared.append(
                (
                    n,
                    interval,
                    strict,
                    estimate,
                    min_p,
                    PAIRED_METHOD,
                    row.baseline_median,
                    row.candidate_median,
                )
            )
        else:
            base, cand = list(row.baseline), list(row.candidate)
            n = min(len(base), len(cand))
            usable = _positive(base) and _positive(cand)
            p = stats.mann_whitney_exact(base, cand)[1] if base and cand else 1.0
            interval = strict = estimate = None
            if usable:
                logs = stats.ratio_ci(base, cand)
                interval = (math.log(logs[0]), math.log(logs[1])) if logs else None
                tight = stats.ratio_ci(base, cand, 1 - alpha / m)
                strict = (math.log(tight[0]), math.log(tight[1])) if tight else None
                estimate = math.log(stats.ratio_estimate(base, cand))
            min_p = stats.min_p_rank_sum(len(base), len(cand))
            prepared.append(
                (
                    n,
                    interval,
                    strict,
                    estimate,
                    min_p,
                    INDEPENDENT_METHOD,
                    statistics.median(base) if base else math.nan,
                    statistics.median(cand) if cand else math.nan,
                )
            )
        raw.append(p)
    adjusted = stats.holm(raw)
    verdicts = []
    for row, p_value, p_holm, entry in zip(rows, raw, adjusted, prepared, strict=True):
        n, interval, strict, estimate, min_p, method, base_median, cand_median = entry
        ratio_low = math.exp(interval[0]) if interval else None
        ratio_high = math.exp(interval[1]) if interval else None
        winner = TIE
        if interval is not None and p_holm < alpha:
            winner = _faster(row.better, ratio_low, ratio_high, min_effect)
        reachable = interval is not None and min_p * m < alpha
        if winner == TIE and not reachable:
            winner = TOO_SMALL
        ratio = math.exp(estimate) if estimate is not None else None
        verdicts.append(
            Verdict(
                label=row.label,
                better=row.better,
                baseline_median=base_median,
                candidate_median=cand_median,
                pct_diff=(ratio - 1) * 100 if ratio is not None else math.nan,
                p_value=p_value,
                p_holm=p_holm,
                ratio_low=ratio_low,
                ratio_high=ratio_high,
                winner=winner,
                ratio=ratio,
                n=n,
                method=method,
                min_detectable=_min_detectable(strict, min_effect) if reachable else None,
                min_p=min_p,
                family_size=m,
            )
        )
    return verdicts
