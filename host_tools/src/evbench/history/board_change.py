"""A change point of one metric of one board, as `evbench history check` reports it.

The tests (`nightly_watch`, `segmentation`) find a `Split` in a plain series of
nightly values. A lab needs more to act on it: which board and series, the runs
on either side of it, the versions and environment that moved with it
(`run_differences`), the night it was first shown, whether someone accepted it,
and whether later nights may still move it. `Change` holds all of that and says
it in one line (`Change.describe`); the trend page lists the same records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evbench.history.segmentation import Split
from evbench_core.analysis.verdicts import HIGHER_IS_BETTER


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
