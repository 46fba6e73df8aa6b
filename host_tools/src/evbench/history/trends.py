"""Every series of a store watched for changes; which of them fail a check.

A series is one measurement (suite, profile, codec, metric and the record's
identity, the sample plan aside) of one board over its complete runs, oldest
first. Partial runs are kept in the store but left out here: an interrupted
night's figures are not a night's level. Records whose payloads (or any other
identity param but the plan) differ make separate series, never one.

Only TESTED metrics (evbench_core.analysis.identity) can raise a change: context
(telemetry, modelled energy, rare counts) and facts (sizes) are shown beside
each change as what moved with it, never as a change of their own.

The night is the replicate, and every check of a board tests all its tested
series at once: the nightly watch at false discovery rate alpha over the series
tested that night (Benjamini-Hochberg), the segmentation of older changes at
alpha / m (Bonferroni over the board's m tested series); nightly_watch.py,
segmentation.py and window_tests.py for the tests themselves.

A change fails `evbench history check` when it is new (first shown by a night
on or after --since), worse by more than its threshold (the criteria of
`evbench compare`: 5 % by default), and nobody accepted it.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evbench.history import nightly_watch, segmentation, series_changes, window_tests
from evbench.history.board_change import Change
from evbench.history.indexing import base_metric
from evbench.history.run_differences import version_changes
from evbench.history.store import SeriesPoint, Store, series_name
from evbench.report.criteria import Criteria
from evbench_core.analysis import identity, metrics
from evbench_core.analysis.verdicts import ALPHA, HIGHER_IS_BETTER

log = logging.getLogger(__name__)

Key = tuple[str, str, str, str]

#: Identity params that say how much was sampled, not what: per-operation time is the
#: same measurement under any plan, so a plan change stays one series (and is named).
PLAN_PARAMS = frozenset({"processes", "values", "warmups", "min_time_s", "min_time"})
#: A context figure that moved by more than this (relative) is named beside a change.
CONTEXT_MOVE = 0.10
#: Nights on each side of a change that the context beside it is read from.
CONTEXT_NIGHTS = 3


def tested(key: Key) -> bool:
    """Whether a series can raise a change: only TESTED metrics do."""
    return identity.role(key[0], base_metric(key[3])) == identity.TESTED


def record_params(record: dict[str, Any]) -> dict[str, Any]:
    """The record's params; a run's pooled records (workers' loop counts) share identity."""
    text = str(record.get("record_params") or "{}")
    if text.startswith("pooled: "):
        text = text[len("pooled: ") :]
    try:
        value, _end = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def comparable_identity(params: dict[str, Any]) -> str:
    """What a night must share with the others of its series: identity params, plan aside."""
    kept = {k: v for k, v in identity.identity_params(params).items() if k not in PLAN_PARAMS}
    return json.dumps(kept, sort_keys=True, default=str)


@dataclass(frozen=True)
class Series:
    board: str
    key: Key
    points: list[SeriesPoint]
    qualifier: str = ""  # what tells it from another series of the same name
    #: A relative series: this codec's nightly figure over the geometric mean of the
    #: same night's figures of these other codecs (same operation, same run).
    relative_to: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """The qualifier shown in braces: payload identity and what it is relative to."""
        parts = [self.qualifier] if self.qualifier else []
        if self.relative_to:
            parts.append(f"relative to {', '.join(self.relative_to)} in the same runs")
        return "; ".join(parts)

    @property
    def name(self) -> str:
        return series_name(self.key) + (f" {{{self.label}}}" if self.label else "")


@dataclass(frozen=True)
class Status:
    """How far a tested series can be watched: its nights against what the method needs."""

    series: Series
    nights: int
    needed: int  # nights for the scan to place a change anywhere in the series
    watch_needed: int  # nights before the newest WINDOW ones, for the nightly watch
    alpha: float

    @property
    def too_short(self) -> bool:
        """Fewer nights than the watch tests: it tests from its 7th night on."""
        return self.nights < self.watch_needed + nightly_watch.WINDOW

    @property
    def scan_short(self) -> bool:
        """Watched, but too short for the segmentation to place an older change anywhere."""
        return not self.too_short and self.nights < self.needed

    def describe(self) -> str:
        if not self.too_short:
            return f"{self.series.board} {self.series.name}: {self.nights} nights, watched"
        return (
            f"{self.series.board} {self.series.name}: too short: {self.nights} of "
            f"{self.watch_needed + nightly_watch.WINDOW} nights (the newest {nightly_watch.WINDOW} "
            f"nights are watched once {self.watch_needed} nights precede them)"
        )


def split_series(board: str, key: Key, points: list[SeriesPoint]) -> list[Series]:
    """The series of one name, one per comparable identity (payloads that differ split)."""
    groups: dict[str, list[SeriesPoint]] = {}
    for point in points:
        groups.setdefault(comparable_identity(record_params(point.record)), []).append(point)
    if len(groups) == 1:
        return [Series(board, key, points)]
    dicts = {k: json.loads(k) for k in groups}
    varying = sorted(
        {n for d in dicts.values() for n in d if len({str(e.get(n)) for e in dicts.values()}) > 1}
    )
    return [
        Series(board, key, group, ",".join(f"{n}={dicts[k].get(n)}" for n in varying))
        for k, group in groups.items()
    ]


def board_series(store: Store, board: str) -> tuple[list[Series], list[Series]]:
    """(tested series, context and fact series) of one board."""
    watched: list[Series] = []
    beside: list[Series] = []
    for key in store.series_keys(board):
        for series in split_series(board, key, store.series(board, key)):
            (watched if tested(key) else beside).append(series)
    return watched, beside


def _context_moves(
    beside: Sequence[Series], before: Sequence[str], after: Sequence[str]
) -> tuple[str, ...]:
    """Context and facts whose median over the nights before differs from the nights
    after by more than CONTEXT_MOVE: what moved with a change (never tested)."""
    moved = []
    for series in beside:
        by_run = {p.run["run_id"]: p.record["median"] for p in series.points}
        old = [by_run[r] for r in before if by_run.get(r) is not None]
        new = [by_run[r] for r in after if by_run.get(r) is not None]
        if not old or not new:
            continue
        a, b = statistics.median(old), statistics.median(new)
        if a == b or (a and abs(b / a - 1) <= CONTEXT_MOVE):
            continue
        unit = str(series.points[0].record.get("unit") or "")
        label = metrics.METRICS.get(base_metric(series.key[3]))
        what = label.label if label else base_metric(series.key[3])
        moved.append(
            (
                abs(b / a - 1) if a else math.inf,
                f"{what} ({series.name}) {a:.4g} -> {b:.4g} {unit}".rstrip(),
            )
        )
    return tuple(text for _size, text in sorted(moved, reverse=True)[:6])


@dataclass(frozen=True)
class Survey:
    changes: list[Change]
    statuses: list[Status]

    @property
    def too_short(self) -> list[Status]:
        return [s for s in self.statuses if s.too_short]


def relative_series(watched: Sequence[Series]) -> list[Series]:
    """Each codec's nightly figure relative to the other codecs of the same runs.

    The night's machine (load, temperature, clock, other work) moves every codec of
    a run alike; the codecs of one run are interleaved in the same processes, so the
    ratio of one codec to the geometric mean of the other codecs of that night (same
    suite, profile, metric and identity) keeps a change of that codec whole and
    cancels most of what the night did to all. Built only where two codecs or more share
    runs. With two codecs the two relative series mirror each other: a step in one shows
    as that codec worse relative to the other and the other better; only the worse one
    can fail a check.

    The partners are the other codecs a run measured: a codec added or dropped one
    night changes them. Each set of partners some run had is a series of its own, over
    every run that measured the codec and all those partners (nights against other
    partners are never pooled): when a codec is dropped, the series against the codecs
    left goes on over all their nights, and the one against the old set ends.
    """
    groups: dict[tuple, list[Series]] = {}
    for series in watched:
        if not series.relative_to:
            key = (series.board, series.key[0], series.key[1], series.key[3], series.qualifier)
            groups.setdefault(key, []).append(series)
    relative = []
    for members in groups.values():
        if len(members) < 2:
            continue
        codecs = [m.key[2] for m in members]
        logs: dict[str, dict[str, float]] = {}  # run: codec: log figure (0 or below: absent)
        for member in members:
            for point in member.points:
                if point.record["median"] > 0:
                    night = logs.setdefault(point.run["run_id"], {})
                    night[member.key[2]] = math.log(point.record["median"])
        for member in members:
            codec = member.key[2]
            nights = [logs[p.run["run_id"]] for p in member.points if codec in logs.get(
                p.run["run_id"], {})]  # fmt: skip
            partner_sets = {tuple(c for c in codecs if c != codec and c in n) for n in nights}
            for partners in sorted(partner_sets - {()}):
                points = []
                for point in member.points:
                    night = logs.get(point.run["run_id"], {})
                    if codec not in night or any(c not in night for c in partners):
                        continue
                    others = statistics.fmean(night[c] for c in partners)
                    ratio = math.exp(night[codec] - others)
                    points.append(
                        SeriesPoint(point.run, {**point.record, "median": ratio, "unit": "ratio"})
                    )
                relative.append(replace(member, points=points, relative_to=partners))
    return relative


@dataclass(frozen=True)
class BoardWatch:
    """One scanned series of a board with what the nightly watch found in it."""

    series: Series
    values: list[float]
    worse: str
    companions: list[list[float]]
    seen: list[nightly_watch.Seen]  # the watch's changes (the segmentation's come after)


def board_watch(watched: Sequence[Series], alpha: float = ALPHA) -> tuple[list[BoardWatch], float]:
    """The nightly watch over one board's tested series and their relative series, and
    the segmentation's per-series level: alpha / m, m counting both (Bonferroni over the
    board's family). The watch tests the family night by night together at false
    discovery rate alpha (Benjamini-Hochberg, `nightly_watch.watch_family`); a relative series
    is tested on its codec's operations together (`joint_values`)."""
    relatives = relative_series(watched)
    family = alpha / max(1, len(watched) + len(relatives))
    every = [*watched, *relatives]
    scanned: list[tuple[Series, list[float], str, list[list[float]]]] = []
    for series in every:
        values = [p.record["median"] for p in series.points]
        if len(values) < 2 * segmentation.MIN_SEGMENT:
            continue
        if min(values) <= 0:
            log.info("%s %s: values of 0 or below, not scanned", series.board, series.name)
            continue
        lower_is_better = metrics.better(base_metric(series.key[3])) != HIGHER_IS_BETTER
        worse = "higher" if lower_is_better else "lower"
        scanned.append((series, values, worse, companions(series, every)))
    members = [
        nightly_watch.Watched(
            values,
            worse,
            others,
            [_night_key(p.run) for p in series.points],
            wanders=not series.relative_to,  # the lab's load is in it
            joint=joint_values(series, relatives) if series.relative_to else None,
        )
        for series, values, worse, others in scanned
    ]
    watches = nightly_watch.watch_family(members, alpha)
    return [BoardWatch(*item, seen) for item, seen in zip(scanned, watches, strict=True)], family


def board_changes(
    watched: Sequence[Series], alpha: float = ALPHA
) -> tuple[list[tuple[Series, nightly_watch.Seen]], float]:
    """The changes of one board's tested series and their relative series, the watch's
    (`board_watch`) and the segmentation's at alpha / m, and that level."""
    watches, family = board_watch(watched, alpha)
    found = []
    for w in watches:
        wanders = not w.series.relative_to
        found += [
            (w.series, s)
            for s in series_changes.changes_of(
                w.values, family, w.worse, w.companions, w.seen, wanders
            )
        ]
    return found, family


def joint_values(series: Series, relatives: Sequence[Series]) -> list[float] | None:
    """A relative series' codec over all its operations: each night of `series`, the
    geometric mean of that night's figures of the same codec's relative series (same
    board, suite, profile, payloads and partners; every operation the night has), or None when
    the codec has one relative series only.

    The watch tests this in place of the series alone (`nightly_watch.Watched.joint`): a change
    of the codec reaches all its operations on the same night, while each operation's
    night-to-night noise is its own, so their mean carries the step with less scatter
    (3 operations: about 1/1.7). The lab's load is already cancelled in each of them.
    """
    group = [  # its operations against the same partners: never another set's nights
        other
        for other in relatives
        if (other.board, other.key[:3], other.qualifier, other.relative_to)
        == (series.board, series.key[:3], series.qualifier, series.relative_to)
    ]
    if len(group) < 2:
        return None
    logs: dict[str, list[float]] = {}
    for other in group:
        for point in other.points:
            logs.setdefault(point.run["run_id"], []).append(math.log(point.record["median"]))
    return [math.exp(statistics.fmean(logs[p.run["run_id"]])) for p in series.points]


def _night_key(run: dict[str, Any]) -> str:
    """What orders a board's nights across its series: the run's start, then its id."""
    return f"{run.get('start_time', '')}\x00{run.get('run_id', '')}"


def companions(series: Series, every: Sequence[Series]) -> list[list[float]]:
    """The series that place a change of `series` with it: the same board's other tested
    series of the same codec (suite, profile, codec and payloads; its other operations,
    absolute and relative), each night of `series` in order, NaN where one lacks it.

    A codec's change reaches its operations on the same night, while each operation's
    night-to-night noise is its own: together they place a step where one series alone
    takes a night before it that lay high for the start (nightly_watch._likeliest_start).
    """
    runs = [p.run["run_id"] for p in series.points]
    found = []
    for other in every:
        same = (other.board, other.key[:3], other.qualifier) == (
            series.board, series.key[:3], series.qualifier)  # fmt: skip
        if other is series or not same:
            continue
        by_run = {p.run["run_id"]: p.record["median"] for p in other.points}
        values = [by_run.get(run) for run in runs]
        found.append([float(v) if isinstance(v, int | float) else math.nan for v in values])
    return found


def survey(store: Store, board: str | None = None, alpha: float = ALPHA) -> Survey:
    """Changes of every tested series (accepted ones marked) and each series' status."""
    accepted = {(a["board"], a["run_id"], a["series"]): a for a in store.acceptances()}
    found, statuses = [], []
    for name in [board] if board else store.boards():
        watched, beside = board_series(store, name)
        detected, family = board_changes(watched, alpha)
        log.info(
            "history: board %s: %d series tested, %d change points",
            name,
            len(watched),
            len(detected),
        )
        statuses += [
            Status(
                series,
                len(series.points),
                series_changes.series_needed(family),
                window_tests.MIN_REFERENCE,
                family,
            )
            for series in watched
        ]
        for series, seen in detected:
            points = series.points
            metric = base_metric(series.key[3])
            index = seen.split.index
            first_index = index if seen.first_index is None else seen.first_index
            through = len(points) - 1 if seen.through is None else seen.through
            before, after = points[index - 1].run, points[index].run
            window = [p.run["run_id"] for p in points[max(0, index - CONTEXT_NIGHTS) : index]]
            later = [p.run["run_id"] for p in points[index : index + CONTEXT_NIGHTS]]
            change = Change(
                board=name,
                series=series.key,
                unit=str(points[0].record["unit"]),
                better=metrics.better(metric),
                split=seen.split,
                run_id=after["run_id"],
                previous_run_id=before["run_id"],
                date=after["start_time"],
                versions=version_changes(before, after),
                first_seen_run=points[seen.seen].run["run_id"],
                first_seen_date=points[seen.seen].run["start_time"],
                context=_context_moves(beside, window, later),
                qualifier=series.label,
                first_placed_run=points[first_index].run["run_id"],
                placed_date=points[through].run["start_time"],
                nights_after=through - index + 1,
                provisional=seen.provisional,
            )
            # An acceptance names the run where the change was placed when accepted.
            known = next(
                (accepted[(name, run, which)] for run in (after["run_id"], change.first_placed_run)
                 for which in (series_name(series.key), "*") if (name, run, which) in accepted),
                None,
            )  # fmt: skip
            found.append(replace(change, accepted=known) if known else change)
    return Survey(found, statuses)


def find_changes(store: Store, board: str | None = None) -> list[Change]:
    """Change points of every tested series of `board` (or of every board)."""
    return survey(store, board).changes


def regressions(
    found: Sequence[Change], criteria: Criteria, since: str | None = None
) -> list[Change]:
    """The changes a check fails on: new (first shown since `since`), worse beyond the
    threshold, not accepted."""
    failing = []
    for change in found:
        if change.accepted or not change.worse:
            continue
        if since and (change.first_seen_date or change.date) < since:
            continue
        suite, profile, codec, metric = change.series
        if abs(change.pct) > criteria.threshold(suite, profile, codec, base_metric(metric)):
            failing.append(change)
    return failing
