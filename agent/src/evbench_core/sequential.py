"""Run until decided (`--until-decided --budget 10m`): the plan grows in stages.

Each stage measures the run's plan again (new worker processes, new duets and
capacity pairs, their records marked with the stage); after each stage, a look
decides every tested row of the answer's pair on all the stages so far. The run
stops when every tested row is decided (a winner, equal or negligible) or when the
next stage would not fit in the budget.

Error rates hold across the looks by alpha spending (Lan and DeMets 1983) on the
budget's time: look k, at elapsed time T_k, spends alpha(t_k) - alpha(t_(k-1)) with
t_k = T_k / budget (1 at the last look: the one after which the next stage would
not fit), and decides at the alpha it spends. The spending function, fixed before
any data, is

    alpha(t) = alpha / 2 + alpha / 2 * ln(1 + (e - 1) t)   for t > 0

half of alpha at the first look, where the plan's own size decides most rows, the
other half over the budget by Pocock's function. By the union bound over looks,
every interval of every look holds together with probability at least 1 - alpha,
whatever look stopped the run, so a verdict reached at any look keeps the
single-look error rate (conservative: the looks' correlation is not used, as a
group-sequential boundary would). The looks' times do not depend on the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evbench_core.analysis import verdicts
from evbench_core.analysis.identity import TESTED
from evbench_core.comparison import Comparison, Row

#: The budget of `--until-decided` when none is given (seconds).
DEFAULT_BUDGET_S = 600.0
#: Stages at the most, whatever the budget (a bound on the run, not a statistical one).
MAX_LOOKS = 50
SPENDING = (
    "alpha(t) = alpha/2 + alpha/2 ln(1 + (e - 1) t), t the budget's share spent "
    "(Lan-DeMets, Pocock-type); union bound over looks"
)


def spent(t: float, alpha: float = verdicts.ALPHA) -> float:
    """The alpha spent by the time the budget's share `t` is used (module docstring)."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    return alpha / 2 + alpha / 2 * math.log(1 + (math.e - 1) * t)


def next_alpha(alphas: Sequence[float], elapsed_s: float, budget_s: float, final: bool) -> float:
    """The alpha the next look spends, after `alphas`, at `elapsed_s` of `budget_s`;
    the final look spends what is left."""
    t = 1.0 if final else min(1.0, elapsed_s / budget_s)
    return max(0.0, spent(t) - sum(alphas))


def open_rows(comparison: Comparison) -> list[Row]:
    """The tested rows no look has decided yet (undecided or n too small)."""
    return [
        row
        for row in comparison.rows
        if row.role == TESTED and row.verdict is not None and not row.verdict.decided
    ]


@dataclass(frozen=True)
class StillOpen:
    """An undecided row at the end: its estimate and what more the plan expects."""

    label: str
    profile: str | None
    suite: str
    #: Stages of the same plan the row's interval would need to narrow enough, on the
    #: assumption that its estimate stays and its width shrinks as 1 / sqrt(replicates).
    more_stages: float | None


def more_stages(row: Row) -> float | None:
    """The stages more a row would need (StillOpen.more_stages), None where its estimate
    sits on the margin's edge (no plan can decide it) or it has no interval yet."""
    verdict = row.verdict
    if verdict is None or verdict.interval is None:
        return None
    low, high = verdict.interval
    if verdict.scale == "difference":
        estimate, edge = verdict.difference, verdict.margin_width
        if estimate is None:
            return None
        centre = estimate
        width = (high - low) / 2
    else:
        if verdict.ratio is None:
            return None
        centre = math.log(verdict.ratio)
        edge = math.log1p(verdict.margin_width)
        width = (math.log(high) - math.log(low)) / 2
    needed = abs(abs(centre) - edge)
    if needed <= 0 or width <= 0:
        return None
    stages_so_far = verdict.look
    return max(0.0, stages_so_far * ((width / needed) ** 2 - 1))


def still_open(comparison: Comparison) -> list[StillOpen]:
    return [
        StillOpen(row.label, row.identity.profile, row.identity.suite, more_stages(row))
        for row in open_rows(comparison)
    ]


def suites_to_grow(comparison: Comparison) -> list[str]:
    """The suites whose rows are still open: the next stage measures only these."""
    return list(dict.fromkeys(row.identity.suite for row in open_rows(comparison)))


def describe(opened: Sequence[StillOpen], stage_s: float) -> list[str]:
    """One line per row still open: its estimate is in the table; here the time more."""
    lines = []
    for item in opened:
        if item.more_stages is None:
            lines.append(f"{item.profile}: {item.label}: no plan can decide it (on the edge)")
        else:
            minutes = item.more_stages * stage_s / 60
            lines.append(f"{item.profile}: {item.label}: about {minutes:.0f} min more")
    return lines


__all__ = [
    "DEFAULT_BUDGET_S",
    "MAX_LOOKS",
    "SPENDING",
    "StillOpen",
    "describe",
    "more_stages",
    "next_alpha",
    "open_rows",
    "spent",
    "still_open",
    "suites_to_grow",
]
