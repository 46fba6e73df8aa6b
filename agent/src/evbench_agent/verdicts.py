"""Which codec wins a metric, and only when the data say so.

A winner is named only when the difference is significant after Holm's
correction for the number of rows compared together, and larger than a
minimum effect: the whole 95 % interval of the ratio of the candidate to the
baseline lies outside 1 +/- `min_effect`. Anything else is a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evbench_agent import stats

ALPHA = 0.05
MIN_EFFECT = 0.02

#: Direction in which each metric improves.
LOWER_IS_BETTER = "lower"
HIGHER_IS_BETTER = "higher"
TIE = "tie"


@dataclass(frozen=True)
class Question:
    """One row to decide: the same metric measured for two codecs."""

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
    pct_diff: float  # (candidate - baseline) / baseline, in percent, on medians
    p_value: float
    p_holm: float
    ratio_low: float | None
    ratio_high: float | None
    winner: str  # "baseline", "candidate" or "tie"

    @property
    def significant(self) -> bool:
        return self.winner != TIE


def _faster(better: str, ratio_low: float, ratio_high: float, min_effect: float) -> str:
    """Which side the ratio interval favours beyond the minimum effect, if any."""
    if ratio_high < 1 - min_effect:
        candidate_smaller = True
    elif ratio_low > 1 + min_effect:
        candidate_smaller = False
    else:
        return TIE
    candidate_wins = candidate_smaller == (better == LOWER_IS_BETTER)
    return "candidate" if candidate_wins else "baseline"


def decide(
    questions: Sequence[Question], alpha: float = ALPHA, min_effect: float = MIN_EFFECT
) -> list[Verdict]:
    """Decide every row, correcting the significance level across all of them."""
    raw = [stats.mann_whitney(q.baseline, q.candidate)[1] for q in questions]
    adjusted = stats.holm(raw)
    verdicts = []
    for question, p_value, p_holm in zip(questions, raw, adjusted, strict=False):
        if question.better not in (LOWER_IS_BETTER, HIGHER_IS_BETTER):
            raise ValueError(f"unknown direction {question.better!r}")
        base = stats.summarize(question.baseline).median
        cand = stats.summarize(question.candidate).median
        # A ratio needs positive values: counts such as lost messages are often 0, and
        # then no minimum effect can be shown, so the row stays a tie.
        positive = min(question.baseline) > 0 and min(question.candidate) > 0
        interval = stats.ratio_ci(question.baseline, question.candidate) if positive else None
        winner = TIE
        if interval is not None and p_holm < alpha:
            winner = _faster(question.better, *interval, min_effect)
        verdicts.append(
            Verdict(
                label=question.label,
                better=question.better,
                baseline_median=base,
                candidate_median=cand,
                pct_diff=(cand - base) / base * 100 if base else float("nan"),
                p_value=p_value,
                p_holm=p_holm,
                ratio_low=interval[0] if interval else None,
                ratio_high=interval[1] if interval else None,
                winner=winner,
            )
        )
    return verdicts
