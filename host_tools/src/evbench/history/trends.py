"""Every series of a store scanned for change points; which of them fail a check.

A series is one metric (suite, profile, codec, metric) of one board over its
complete runs, oldest first. Partial runs are kept in the store but left out
here: an interrupted night's figures are not a night's level. A change fails
`evbench history check` when it is new (on or after --since), worse by more
than its threshold (the criteria of `evbench compare`: 5 % by default), and
nobody accepted it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from evbench.history import changes
from evbench.history.indexing import base_metric
from evbench.history.store import Store
from evbench.report.criteria import Criteria
from evbench_agent import metrics

log = logging.getLogger(__name__)

Key = tuple[str, str, str, str]


def series_name(key: Key) -> str:
    return "/".join(key)


def find_changes(store: Store, board: str | None = None) -> list[changes.Change]:
    """Change points of every series of `board` (or of every board), accepted ones marked."""
    accepted = {(a["board"], a["run_id"], a["series"]): a for a in store.acceptances()}
    found = []
    for name in [board] if board else store.boards():
        for key in store.series_keys(name):
            points = store.series(name, key)
            values = [p.record["median"] for p in points]
            if len(values) < 2 * changes.MIN_SEGMENT:
                continue
            if min(values) <= 0:  # counts such as lost messages: no ratio, no log scale
                log.info("%s %s: values of 0 or below, not scanned", name, series_name(key))
                continue
            metric = base_metric(key[3])
            for split in changes.detect(values):
                before, after = points[split.index - 1].run, points[split.index].run
                change = changes.Change(
                    board=name,
                    series=key,
                    unit=str(points[0].record["unit"]),
                    better=metrics.better(metric),
                    split=split,
                    run_id=after["run_id"],
                    previous_run_id=before["run_id"],
                    date=after["start_time"],
                    versions=changes.version_changes(before, after),
                )
                known = accepted.get((name, after["run_id"], series_name(key))) or accepted.get(
                    (name, after["run_id"], "*")
                )
                found.append(replace(change, accepted=known) if known else change)
    return found


def regressions(
    found: Sequence[changes.Change], criteria: Criteria, since: str | None = None
) -> list[changes.Change]:
    """The changes a check fails on: new, worse beyond the threshold, not accepted."""
    failing = []
    for change in found:
        if change.accepted or not change.worse:
            continue
        if since and change.date < since:
            continue
        suite, profile, codec, metric = change.series
        if abs(change.pct) > criteria.threshold(suite, profile, codec, base_metric(metric)):
            failing.append(change)
    return failing
