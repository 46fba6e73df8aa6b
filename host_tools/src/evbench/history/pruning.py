"""Keeping a store bounded: the newest runs of each board kept, the others deleted."""

from __future__ import annotations

import datetime as dt
import re

from evbench.history.store import Store
from evbench_core.errors import UserError

_KEEP = re.compile(r"(\d+)([d]?)")


def parse_keep(text: str) -> tuple[int | None, int | None]:
    """`--keep 60` (the newest 60 runs per board) or `--keep 90d` (runs of the last 90 days)."""
    match = _KEEP.fullmatch(text.strip())
    if not match or int(match.group(1)) < 1:
        raise UserError(f"--keep {text!r}: give a number of runs per board (60) or of days (90d)")
    number = int(match.group(1))
    return (None, number) if match.group(2) else (number, None)


def days_back(days: int) -> dt.datetime:
    """Now less `days` days; a span longer than the calendar reaches back to its start."""
    try:
        return dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=days)
    except OverflowError:
        return dt.datetime.min.replace(tzinfo=dt.timezone.utc)


def select(store: Store, runs_per_board: int | None, days: int | None) -> list[str]:
    """The run ids `--keep` lets go, oldest first."""
    doomed = []
    if days is not None:
        cutoff = days_back(days).isoformat()
        doomed = [r["run_id"] for r in store.runs() if r["start_time"] < cutoff]
    if runs_per_board is not None:
        for board in store.boards():
            runs = store.runs(board=board)
            doomed += [r["run_id"] for r in runs[: max(0, len(runs) - runs_per_board)]]
    return doomed


def prune(store: Store, keep: str, dry_run: bool = False) -> list[str]:
    runs_per_board, days = parse_keep(keep)
    doomed = select(store, runs_per_board, days)
    if not dry_run:
        store.delete_runs(doomed)
    return doomed
