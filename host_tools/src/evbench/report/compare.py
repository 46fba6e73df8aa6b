"""Runs side by side: each codec's measurements in every later run against the first.

One row per codec and record identity (evbench_agent.identity): records whose
identity params differ are never pooled, outcome params (calibrated loops, ...)
never split a row. Each later run is compared with the first (the baseline) by
evbench_agent.comparison.compare_runs, on the unit of replication of each suite:
the codec suite's per-process medians, the link suite's per-phase values, as two
independent samples (nothing is paired across runs). Exact Mann-Whitney, Moses'
ratio interval, Holm within (suite, profile) of one run pair; "n too small" when
the two plans could not reach a verdict whatever the data (docs/method.md).
Facts (sizes, nominal bandwidth) carry their exact difference, untested; context
(telemetry, modelled energy, rare counts) is listed apart, untested.

With a baseline, a row **regresses** when its verdict names the baseline run
better and the change in the metric's worse direction is beyond its threshold
(criteria.py), or when a fact is worse by more than its threshold. Only rows
every run has are compared; the rest are listed as left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from evbench.report import exports, table
from evbench.report.context import RunContext
from evbench.report.criteria import Criteria
from evbench_agent import comparison as comparing
from evbench_agent.comparison import CONTEXT, FACT
from evbench_agent.errors import UserError
from evbench_agent.identity import Identity
from evbench_agent.results import SampleSet
from evbench_agent.verdicts import (
    BASELINE,
    CANDIDATE,
    EQUAL,
    HIGHER_IS_BETTER,
    TOO_SMALL,
    UNDECIDED,
)

Key = tuple[str, Identity]  # codec, identity


@dataclass(frozen=True)
class Change:
    """One later run against the baseline run, for one row."""

    row: comparing.Row  # baseline side: the first run; candidate side: this run
    regression: str | None = None

    @property
    def difference(self) -> float | None:
        """(later / baseline) - 1: the test's ratio estimate, or a fact's exact change."""
        return table.difference(self.row)

    @property
    def worse(self) -> bool:
        change = self.difference
        if change is None:
            return False
        return (-change if self.row.better == HIGHER_IS_BETTER else change) > 0


@dataclass(frozen=True)
class Row:
    codec: str
    identity: Identity
    name: str  # suite/profile/codec/metric[qualifiers], as criteria and JUnit know it
    threshold: float
    changes: list[Change]

    @property
    def first(self) -> comparing.Row:
        return self.changes[0].row

    @property
    def role(self) -> str:
        return self.first.role


@dataclass(frozen=True)
class Comparison:
    labels: list[str]
    rows: list[Row]
    left_out: list[str]
    #: Each later run against the first, as evbench_agent.comparison decided it.
    pairs: list[comparing.Comparison]

    @property
    def regressions(self) -> list[str]:
        return [c.regression for row in self.rows for c in row.changes if c.regression]

    def uncalled(self) -> list[str]:
        """Rows whose change is worse than their threshold but whose plans could not
        reach a verdict ("n too small"): not regressions, named so nobody misses them."""
        found = []
        for row in self.rows:
            for label, change in zip(self.labels[1:], row.changes, strict=True):
                verdict = change.row.verdict
                if verdict is None or verdict.winner != TOO_SMALL:
                    continue
                if change.worse and _worse_percent(change) > row.threshold:
                    found.append(f"{row.name} in {label} ({_percent(change)})")
        return found


def labels(contexts: Sequence[RunContext]) -> list[str]:
    """Each run's board (or host) name; letters first when names repeat."""
    names = []
    for context in contexts:
        platform = context.manifest.get("platform") or {}
        names.append(str(platform.get("board") or platform.get("hostname") or "run"))
    if len(set(names)) < len(names):
        names = [f"{chr(ord('A') + i)} ({name})" for i, name in enumerate(names)]
    return names


def _name(codec: str, key: Identity) -> str:
    """suite/profile/codec/metric, the metric qualified by its phase, kind or operation."""
    record = {"suite": key.suite, "profile": key.profile, "codec": codec, "metric": key.metric}
    return "/".join(exports.record_key({**record, "params": key.params_dict}))


def _keys(samples: Sequence[SampleSet]) -> set[Key]:
    return {(s.codec, comparing.identity_of(s)) for s in samples if s.codec is not None}


def _left_out(keys: list[set[Key]], common: set[Key], runs: list[str]) -> list[str]:
    """What not every run measured, and which runs did; a name that two identities
    share (a plan changed between runs) carries the label that tells them apart."""
    missing = set.union(*keys) - common
    labelled = comparing.labels(sorted({key for _codec, key in missing}))
    entries = []
    for codec, key in missing:
        found = [run for run, measured in zip(runs, keys, strict=True) if (codec, key) in measured]
        entries.append((_name(codec, key), labelled[key], found))
    repeated = Counter(name for name, _label, _runs in entries)
    return sorted(
        name + (f" [{label}]" if repeated[name] > 1 else "") + f" in {', '.join(found)}"
        for name, label, found in entries
    )


def _samples(context: RunContext) -> list[SampleSet]:
    samples = context.samples()
    if not samples:
        raise UserError(
            f"{context.directory} holds no raw samples ({context.directory / 'samples.jsonl'})",
            hint="compare tests each run's replicates; give run directories with their samples",
        )
    return samples


def _worse_percent(change: Change) -> float:
    value = (change.difference or 0.0) * 100
    return -value if change.row.better == HIGHER_IS_BETTER else value


def _percent(change: Change) -> str:
    return "-" if change.difference is None else f"{change.difference * 100:+.1f}%"


def _regression(change: Change, name: str, threshold: float) -> str | None:
    """Why this change is a regression, or None."""
    row, verdict = change.row, change.row.verdict
    if not change.worse or _worse_percent(change) <= threshold:
        return None
    if row.role == FACT:
        basis = "exact figure, not tested"
    elif verdict is not None and verdict.winner == BASELINE:
        basis = (
            f"p (Holm) {verdict.p_holm:.2g}, ratio CI (Holm step) "
            f"{verdict.ratio_low:.3f}-{verdict.ratio_high:.3f}, {row.n} {row.n_counts}"
        )
    else:
        return None
    return (
        f"{name} regressed {_percent(change)} against the baseline "
        f"(threshold {threshold:g}%, {basis})"
    )


def compare(
    contexts: Sequence[RunContext], criteria: Criteria, baseline: bool = False
) -> Comparison:
    """Compare every run with the first; with `baseline`, flag regressions."""
    samples = [_samples(context) for context in contexts]
    keys = [_keys(s) for s in samples]
    common = set.intersection(*keys)
    names = labels(contexts)
    left_out = _left_out(keys, common, names)
    # Only the rows every run has: each pair's test families are the rows shown.
    kept = [[s for s in run if (s.codec, comparing.identity_of(s)) in common] for run in samples]
    pairs = [
        comparing.compare_runs(kept[0], later, names[0], name)
        for later, name in zip(kept[1:], names[1:], strict=True)
    ]
    by_pair = [{(r.baseline.codec, r.identity): r for r in pair.rows} for pair in pairs]
    shown = pairs[0].rows if pairs else ()
    taken = [_name(r.baseline.codec, r.identity) for r in shown]
    rows = []
    for first, name in zip(shown, taken, strict=True):
        codec, key = first.baseline.codec, first.identity
        if taken.count(name) > 1:  # identities that differ in a setting the name omits
            name += f" ({first.label})"
        threshold = criteria.threshold(key.suite, key.profile or "-", codec, key.metric)
        changes = []
        for found in by_pair:
            change = Change(found[(codec, key)])
            regression = _regression(change, name, threshold) if baseline else None
            changes.append(Change(change.row, regression))
        rows.append(Row(codec, key, name, threshold, changes))
    return Comparison(names, rows, left_out, pairs)


# --- cells ----------------------------------------------------------------------------


def _change_cell(change: Change) -> str:
    row, verdict = change.row, change.row.verdict
    if change.regression:
        return "REGRESSION"
    if row.role == FACT:
        return table.FACT_WINNER
    if verdict is None:
        return "-"
    words = {BASELINE: "worse", CANDIDATE: "better", EQUAL: EQUAL, UNDECIDED: UNDECIDED}
    return {**words, TOO_SMALL: TOO_SMALL}.get(verdict.winner, verdict.winner)


def _interval_cell(row: comparing.Row) -> str:
    verdict = row.verdict
    if verdict is None or verdict.ratio_low is None:
        return "-"
    return f"{verdict.ratio_low:.3f}-{verdict.ratio_high:.3f}"


CHANGE_HEADERS = ("% Diff", "Change", "p (Holm)", "ratio CI (Holm step)", "n", "detectable")


def cells(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Tested rows and facts: the baseline run's value, then per later run its value,
    change, verdict, p (Holm), ratio interval, n and the smallest detectable change."""
    headers = ["Suite", "Profile", "Codec", "Metric", comparison.labels[0]]
    for label in comparison.labels[1:]:
        headers += [label, *CHANGE_HEADERS]
    headers.append("threshold")
    body = []
    for row in comparison.rows:
        if row.role == CONTEXT:
            continue
        first = row.first
        line = [row.identity.suite, row.identity.profile or "-", table.display_name(row.codec)]
        line += [first.label, table.value_cell(first.baseline, first)]
        for change in row.changes:
            verdict = change.row.verdict
            line += [
                table.value_cell(change.row.candidate, change.row),
                _percent(change),
                _change_cell(change),
                table.p_value_cell(verdict.p_holm) if verdict is not None else "-",
                _interval_cell(change.row),
                table.n_cell(change.row),
                table.detectable_cell(change.row),
            ]
        line.append(f"{row.threshold:g}%")
        body.append(line)
    return headers, body


def context_cells(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Telemetry, modelled energy and rare counts: each run's figure, no change, no test."""
    headers = ["Suite", "Profile", "Codec", "Context (not tested)", *comparison.labels]
    body = []
    for row in comparison.rows:
        if row.role != CONTEXT:
            continue
        first = row.first
        line = [row.identity.suite, row.identity.profile or "-", table.display_name(row.codec)]
        line += [first.label, table.value_cell(first.baseline, first)]
        line += [table.value_cell(c.row.candidate, c.row) for c in row.changes]
        body.append(line)
    return headers, body


NOTES = (
    "One row per codec and measurement: rows whose settings differ (phase, mode, rate, "
    "operation, ...) are never pooled; outcomes (calibrated loops, ...) never split a row. "
    "Values: the median of the replicates' medians (worker processes in the codec suite, "
    "phases in the link suite) [its 95% CI]. Change: each run against the first, on the "
    "replicates (per-process medians, per-phase values) as independent samples: exact "
    "Mann-Whitney, p < 0.05 after Holm's correction within each suite and profile, AND the "
    "ratio's CI outside 1 +/- 0.02; 'equal': the CI inside 1 +/- 0.02; 'undecided': the CI "
    "across an edge of that band. The ratio CI is the one the verdict uses, at Holm's step "
    "for the row (it holds 1 whenever p (Holm) >= 0.05). 'n too small': the runs' "
    "replicates (column n) could not reach that level whatever the data. detectable: the smallest "
    "change the plans and spread could have named. % Diff: the ratio estimate (Hodges-"
    "Lehmann) minus 1; for facts (sizes, nominal bandwidth) the exact difference of the "
    "means, not tested. REGRESSION (with --baseline): worse by a verdict (or, for a fact, "
    "exactly) and by more than the threshold. Context rows are listed apart, not tested."
)


def codec_cells(
    contexts: Sequence[RunContext], names: Sequence[str], pair: tuple[str, str]
) -> tuple[list[str], list[list[str]]]:
    """The seed's table, one column group per run: JSON | Protobuf | % Diff | Winner."""
    per_run = []
    for context in contexts:
        _headers, body = table.comparison_cells(comparing.compare(context.samples(), *pair))
        per_run.append({(line[0], line[1]): line[2:6] for line in body})
    common = [k for k in per_run[0] if all(k in cells for cells in per_run[1:])]
    base, cand = (table.display_name(c) for c in pair)
    headers = ["Profile", "Metric"]
    for name in names:
        headers += [f"{name} {base}", f"{name} {cand}", "% Diff", "Winner"]
    return headers, [[*key, *(c for cells in per_run for c in cells[key])] for key in common]


__all__ = ["Change", "Comparison", "Row", "cells", "codec_cells", "compare", "context_cells"]
