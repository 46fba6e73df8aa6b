"""Runs side by side: each codec's measurements in every later run against the first.

One row per codec and record identity (evbench_core.analysis.identity): records whose
identity params differ are never pooled, outcome params (calibrated loops, ...)
never split a row. Each later run is compared with the first (the baseline) by
evbench_core.comparison.compare_runs, on the unit of replication of each suite:
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

import dataclasses
import json
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evbench.report import exports, table
from evbench.report.context import RunContext
from evbench.report.criteria import Criteria
from evbench.report.units import counted
from evbench_core import comparison as comparing
from evbench_core.analysis import identity as identities
from evbench_core.analysis import stats
from evbench_core.analysis.identity import Identity
from evbench_core.analysis.stats import holm
from evbench_core.analysis.verdicts import (
    ALPHA,
    BASELINE,
    CANDIDATE,
    EQUAL,
    HIGHER_IS_BETTER,
    MIN_EFFECT,
    TOO_SMALL,
    UNDECIDED,
)
from evbench_core.comparison import CONTEXT, FACT, TESTED
from evbench_core.errors import UserError
from evbench_core.results import SampleSet

Key = tuple[str, Identity]  # codec, identity

#: Identity params that say how much was sampled, not what: a timed row's per-operation
#: time is the same measurement under any plan.
PLAN_PARAMS = frozenset({"processes", "values", "warmups", "min_time_s", "min_time"})
#: A tested row that changed by more than this (percent, either way) fails even from
#: two runs: no night-to-night noise makes a codec 1.5x slower.
MAX_CHANGE = 50.0
TWO_NIGHTS = "not confirmed: 2 nights"
BEYOND = "beyond --max-change"
#: A board's history of nights (evbench.history.night_spread.BoardHistory.test):
#: (codec, row identity, later / baseline ratio) -> (nights, two-sided p or None when
#: the history is too short to tell).
NightTest = Callable[[str, Identity, float], tuple[int, "float | None"]]


@dataclass(frozen=True)
class Change:
    """One later run against the baseline run, for one row."""

    row: comparing.Row  # baseline side: the first run; candidate side: this run
    regression: str | None = None
    status: str = ""  # "not confirmed: 2 nights" for a tested row whose verdict names a side
    #: Against the board's history: its nights, and the change's p after Holm over the
    #: rows tested against history (None: no history or too short to tell).
    nights: int = 0
    p_nights: float | None = None
    #: The night test's interval of the ratio, at Holm's step for the row: it excludes 1
    #: exactly when p_nights < 0.05 (None: not tested against the history).
    interval_nights: tuple[float, float] | None = None

    @property
    def basis(self) -> str:
        """Which test the verdict word, p and interval rest on: the history's night test
        where the row was tested against it, else the two runs' rank test."""
        return "nights" if self.p_nights is not None else "runs"

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
    #: Each later run against the first, as evbench_core.comparison decided it.
    pairs: list[comparing.Comparison]
    #: Per later run: what changed in its environment against the first run.
    environment: list[list[str]] = dataclasses.field(default_factory=list)

    @property
    def tested(self) -> list[Row]:
        return [row for row in self.rows if row.role == TESTED]

    @property
    def regressions(self) -> list[str]:
        """Why each failing change fails: a regression, or a gain beyond --max-change."""
        return [c.regression for row in self.rows for c in row.changes if c.regression]

    @property
    def worse(self) -> list[str]:
        """The regressions proper: each failing change in its metric's worse direction."""
        return [c.regression for row in self.rows for c in row.changes if c.regression and c.worse]

    @property
    def gains_beyond(self) -> list[str]:
        """The failing changes in the metric's better direction (faster, smaller, more
        messages a second): a change beyond --max-change fails either way, because two
        runs that far apart may not have measured the same thing, but none regressed."""
        return [
            c.regression for row in self.rows for c in row.changes if c.regression and not c.worse
        ]

    def uncalled(self) -> list[str]:
        """Rows whose change is worse than their threshold but whose plans could not
        reach a verdict ("n too small"): not regressions, named so nobody misses them."""
        found = []
        for row in self.rows:
            for label, change in zip(self.labels[1:], row.changes, strict=True):
                verdict = change.row.verdict
                if verdict is None or verdict.winner != TOO_SMALL or change.regression:
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


def _plan_free(sample_set: SampleSet) -> SampleSet:
    """A timed codec set without its plan params: the same per-operation time under any plan."""
    if sample_set.suite == "codec" and identities.role("codec", sample_set.metric) == TESTED:
        params = {k: v for k, v in sample_set.params.items() if k not in PLAN_PARAMS}
        return dataclasses.replace(sample_set, params=params)
    return sample_set


def record_identity(record: dict[str, Any]) -> Identity:
    """A summary record's row identity in a comparison (plan aside for timed codec rows)."""
    params = dict(record.get("params") or {})
    if record["suite"] == "codec" and identities.role("codec", record["metric"]) == TESTED:
        params = {k: v for k, v in params.items() if k not in PLAN_PARAMS}
    return identities.of_record({**record, "params": params})


def _keys(samples: Sequence[SampleSet]) -> set[Key]:
    return {(s.codec, comparing.identity_of(s)) for s in samples if s.codec is not None}


def _why(codec: str, key: Identity, others: set[Key], codecs: set[str]) -> str:
    """Why (codec, key) has no match in a run that measured `others`."""
    if codec not in codecs:
        return f"codec {codec} not measured there"
    mine = key.params_dict
    for other_codec, other in sorted(others, key=str):
        if (other_codec, other.suite, other.profile, other.metric) != (
            codec,
            key.suite,
            key.profile,
            key.metric,
        ):
            continue
        theirs = other.params_dict
        differ = sorted(n for n in set(mine) | set(theirs) if mine.get(n) != theirs.get(n))
        if "payload_digest" in differ:
            return "payloads differ"
        if differ:
            shown = ", ".join(f"{n} {mine.get(n)} vs {theirs.get(n)}" for n in differ[:4])
            return f"settings differ ({shown})"
    return "not measured there"


def _left_out(keys: list[set[Key]], common: set[Key], runs: list[str]) -> list[str]:
    """What not every run measured, one entry a row: where it is, where not, and why."""
    missing = set.union(*keys) - common
    labelled = comparing.labels(sorted({key for _codec, key in missing}))
    codecs = [{codec for codec, _key in measured} for measured in keys]
    entries = set()
    for codec, key in missing:
        found = [run for run, measured in zip(runs, keys, strict=True) if (codec, key) in measured]
        reasons = [
            f"{run}: {_why(codec, key, measured, have)}"
            for run, measured, have in zip(runs, keys, codecs, strict=True)
            if (codec, key) not in measured
        ]
        entries.add(
            f"{_name(codec, key)} [{labelled[key]}] in {', '.join(found)} only; "
            + "; ".join(reasons)
        )
    return sorted(entries)


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


def _regression(
    change: Change, name: str, threshold: float, max_change: float
) -> tuple[str | None, str]:
    """(why this change is a regression or None, its status)."""
    row, verdict = change.row, change.row.verdict
    if row.role == FACT:
        if change.worse and _worse_percent(change) > threshold:
            return (
                f"{name} regressed {_percent(change)} against the baseline "
                f"(threshold {threshold:g}%, exact figure, not tested)"
            ), ""
        return None, ""
    if row.role != TESTED or change.difference is None:
        return None, ""
    # Symmetric in the ratio: 1.5x slower and 1.5x faster are the same size of change.
    beyond = _beyond(change, max_change)
    # A worse change must also pass the row's own threshold (--criteria) to fail.
    if beyond and (not change.worse or _worse_percent(change) > threshold):
        # The factors too: "-42.6 %, beyond 50 %" reads as a contradiction otherwise.
        factor = 1 + (change.difference or 0.0)
        bound = 1 + max_change / 100
        return (
            f"{name} changed {_percent(change)} (x{factor:.3g}) against the baseline, beyond "
            f"--max-change {max_change:g}% (x{bound:.3g} or x{1 / bound:.3g}) ({_basis(change)})"
        ), BEYOND
    if verdict is not None and verdict.winner in (BASELINE, CANDIDATE):
        return None, TWO_NIGHTS
    return None, ""


def _beyond(change: Change, max_change: float) -> bool:
    """Whether the change lies beyond +/- max_change (symmetric in the ratio: 1.5x slower
    and 1.5x faster are the same size): its whole interval (the verdict's, at Holm's
    step; two noisy quick runs may estimate -35 % with an interval reaching +7 %).
    A row without one ("n too small") never is: its estimate alone shows nothing, so a
    worse change there is listed, not counted (docs/reports.md)."""
    verdict = change.row.verdict
    if verdict is None or verdict.ratio_low is None or verdict.ratio_high is None:
        return False
    limit = math.log1p(max_change / 100)
    low, high = math.log(verdict.ratio_low), math.log(verdict.ratio_high)
    return low > limit or high < -limit


def _basis(change: Change) -> str:
    row, verdict = change.row, change.row.verdict
    if verdict is None or verdict.ratio_low is None:
        return counted(row.n, row.n_counts)
    return (
        f"p (Holm) {verdict.p_holm:.2g}, ratio CI (Holm step) "
        f"{verdict.ratio_low:.3f}-{verdict.ratio_high:.3f}, {counted(row.n, row.n_counts)}"
    )


#: Manifest fields whose change explains a moved row: (label, path).
ENVIRONMENT = (
    ("protobuf", ("platform", "protobuf")),
    ("protobuf backend", ("platform", "protobuf_backend")),
    ("python", ("platform", "python")),
    ("python implementation", ("platform", "python_implementation")),
    ("kernel", ("platform", "kernel")),
    ("os", ("platform", "os")),
    ("cpu", ("platform", "cpu_model")),
    ("cpus", ("platform", "cpu_count")),
    ("affinity", ("platform", "affinity")),
    ("clock source", ("platform", "clock", "clocksource")),
    ("agent", ("platform", "agent")),
    ("codec versions", ("platform", "codecs")),
    ("quick plan", ("quick",)),
    ("processes", ("spec", "processes")),
    ("values", ("spec", "values")),
    ("governor", ("telemetry", "governor")),
    ("throttled phases", ("telemetry", "throttled_phases")),
)


def _dig(document: Any, path: tuple[str, ...]) -> Any:
    for name in path:
        document = document.get(name) if isinstance(document, dict) else None
    return document


def _telemetry(context: RunContext) -> dict[str, float]:
    """Codec-less telemetry medians of a run (machine CPU per phase, ...): context."""
    pooled: dict[str, list[float]] = {}
    for sample_set in context.samples():
        if sample_set.codec is None and sample_set.values:
            record = {"suite": sample_set.suite, "profile": sample_set.profile, "codec": "-",
                      "metric": sample_set.metric, "params": sample_set.params}  # fmt: skip
            name = "/".join(exports.record_key(record)) + f" ({sample_set.unit})"
            pooled.setdefault(name, []).extend(sample_set.values)
    return {name: statistics.median(values) for name, values in pooled.items()}


def environment_changes(first: RunContext, later: RunContext) -> list[str]:
    """What differs between two runs' environments, and their machine telemetry."""
    moved = []
    for label, path in ENVIRONMENT:
        a, b = _dig(first.manifest, path), _dig(later.manifest, path)
        if a != b:
            text = [json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v
                    for v in (a, b)]  # fmt: skip
            moved.append(f"{label}: {text[0]} -> {text[1]}")
    before, after = _telemetry(first), _telemetry(later)
    for name in sorted(set(before) & set(after)):
        a, b = before[name], after[name]
        if a != b and (not a or abs(b / a - 1) > 0.10):
            moved.append(f"{name}: {a:.4g} -> {b:.4g}")
    return moved


def compare(
    contexts: Sequence[RunContext],
    criteria: Criteria,
    baseline: bool = False,
    max_change: float = MAX_CHANGE,
    nights: NightTest | None = None,
) -> Comparison:
    """Compare every run with the first; with `baseline`, flag regressions. With
    `nights` (the board's history), a tested change is confirmed or not against the
    spread of that board's nights (evbench.history.night_spread)."""
    samples = [[_plan_free(s) for s in _samples(context)] for context in contexts]
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
            regression, status = _regression(change, name, threshold, max_change)
            # Beyond --max-change fails even without a baseline: a 10x change never passes
            # (where the runs can call it: `_beyond`).
            kept_regression = regression if baseline or status == BEYOND else None
            changes.append(Change(change.row, kept_regression, status))
        rows.append(Row(codec, key, name, threshold, changes))
    if nights is not None:
        rows = _against_history(rows, nights, baseline, len(pairs))
    environment = [environment_changes(contexts[0], later) for later in contexts[1:]]
    return Comparison(names, rows, left_out, pairs, environment)


def _confirmed(change: Change) -> bool:
    return (
        change.p_nights is not None
        and change.p_nights < ALPHA
        and abs(math.log1p(change.difference or 0.0)) > math.log1p(MIN_EFFECT)
    )


def _against_history(rows: list[Row], nights: NightTest, baseline: bool, runs: int) -> list[Row]:
    """Each later run's tested changes against the board's history of nights: Holm over
    the rows of one run pair that have enough history; a confirmed change worse than the
    row's threshold is a regression with a baseline."""
    tested: list[list[Change]] = [list(row.changes) for row in rows]
    for column in range(runs):
        found = _night_tests(rows, column, nights)
        with_p = [index for index, (_n, p) in found.items() if p is not None]
        adjusted = dict(zip(with_p, holm([found[i][1] or 0.0 for i in with_p]), strict=True))
        for index, (count, p) in found.items():
            row = rows[index]
            tested[index][column] = _night_change(
                row, row.changes[column], count, p, adjusted.get(index), baseline
            )
    return [
        dataclasses.replace(row, changes=changes) for row, changes in zip(rows, tested, strict=True)
    ]


def _night_tests(
    rows: list[Row], column: int, nights: NightTest
) -> dict[int, tuple[int, float | None]]:
    """Per row index, the history's (nights, p) for the tested rows' change in run
    `column` (a change beyond --max-change already fails and is not tested again)."""
    found: dict[int, tuple[int, float | None]] = {}
    for index, row in enumerate(rows):
        change = row.changes[column]
        if row.role != TESTED or change.difference is None or change.status == BEYOND:
            continue
        ratio = 1 + change.difference
        found[index] = nights(row.codec, row.identity, ratio) if ratio > 0 else (0, None)
    return found


def _night_change(
    row: Row, change: Change, count: int, p: float | None, p_holm: float | None, baseline: bool
) -> Change:
    """`change` with its night test: confirmed (and with a baseline a regression when
    worse than the row's threshold), or not confirmed over `count` nights when it moved
    beyond the least effect the test can confirm."""
    change = dataclasses.replace(
        change,
        nights=count,
        p_nights=p_holm,
        interval_nights=_night_interval(change, count, p, p_holm),
    )
    if _confirmed(change):
        change = dataclasses.replace(change, status=f"confirmed: {count} nights")
        if baseline and change.worse and _worse_percent(change) > row.threshold:
            change = dataclasses.replace(
                change,
                regression=f"{row.name} changed {_percent(change)} against the "
                f"baseline, confirmed against {count} nights of this board's history "
                f"(p (Holm) {change.p_nights:.2g})",
            )
    elif abs(math.log1p(change.difference or 0.0)) > math.log1p(MIN_EFFECT) and count >= 2:
        change = dataclasses.replace(change, status=f"not confirmed: {count} nights")
    return change


def _night_interval(
    change: Change, nights: int, p: float | None, p_holm: float | None
) -> tuple[float, float] | None:
    """The night test's interval of the ratio, at Holm's step for the row: the ratio
    times exp(+-t x s), s the night-to-night spread (recovered from the raw p: |log r| /
    s is the test's t), t Student's quantile at 1 - 0.05 / (2 k), k = p (Holm) / p the
    row's Holm factor. It excludes 1 exactly when p (Holm) < 0.05."""
    if p is None or p_holm is None or change.difference is None or not 0 < p < 1:
        return None
    ratio = 1 + change.difference
    df = stats.successive_differences_df(nights)  # the night test's (history.night_spread)
    observed = stats.student_t_quantile(1 - p / 2, df)
    spread = abs(math.log(ratio)) / observed if observed > 0 else math.nan
    factor = max(1.0, p_holm / p)
    reach = stats.student_t_quantile(1 - ALPHA / (2 * factor), df) * spread
    return ratio * math.exp(-reach), ratio * math.exp(reach)


# --- cells ----------------------------------------------------------------------------


def _change_cell(change: Change) -> str:
    row, verdict = change.row, change.row.verdict
    if change.regression:  # beyond --max-change: named by its direction
        return "REGRESSION" if change.worse else "better, beyond --max-change"
    if row.role == FACT:
        return table.FACT_WINNER
    if verdict is None:
        return "-"
    words = {BASELINE: "worse", CANDIDATE: "better", EQUAL: EQUAL, UNDECIDED: UNDECIDED}
    word = {**words, TOO_SMALL: TOO_SMALL}.get(verdict.winner, verdict.winner)
    if _confirmed(change):  # across nights: the direction the history confirms
        return f"{'worse' if change.worse else 'better'} ({change.status})"
    if change.basis == "nights":  # tested against the history, not confirmed there
        return (
            f"{UNDECIDED} ({change.status})"
            if change.status
            else f"within 2% ({change.nights} nights)"
        )
    return f"{word} ({change.status})" if change.status else word


def _interval_cell(change: Change) -> str:
    """The interval the row's word rests on: the night test's (marked "nights") where
    the row was tested against the history, else the two runs' verdict's."""
    if change.basis == "nights":
        if change.interval_nights is None:
            return "-"
        low, high = change.interval_nights
        return f"{low:.3f}-{high:.3f} (nights)"
    verdict = change.row.verdict
    if verdict is None or verdict.ratio_low is None:
        return "-"
    return f"{verdict.ratio_low:.3f}-{verdict.ratio_high:.3f}"


def _p_cell(change: Change) -> str:
    """The p the row's word rests on: the night test's (Holm over the rows tested against
    the history, marked "nights"), else the two runs' verdict's (Holm)."""
    if change.basis == "nights" and change.p_nights is not None:
        return f"{table.p_value_cell(change.p_nights)} (nights)"
    verdict = change.row.verdict
    return table.p_value_cell(verdict.p_holm) if verdict is not None else "-"


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
            line += [
                table.value_cell(change.row.candidate, change.row),
                _percent(change),
                _change_cell(change),
                _p_cell(change),
                _interval_cell(change),
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
    "means, not tested. Two runs are two nights: a verdict naming a run is 'not confirmed: "
    "2 nights'. With a history of the board's nights, each change moving beyond +/- 2 % is "
    "tested against how far that row moves from night to night: 'confirmed: n nights' or "
    "'not confirmed: n nights'; such a row's word, p and CI all rest on that night test "
    "(marked 'nights': p after Holm over the rows tested against the history, the CI at "
    "the row's Holm step, holding 1 whenever that p >= 0.05), every other row's on the two "
    "runs' rank test. REGRESSION: a tested row whose interval lies wholly beyond "
    "--max-change (either way, and worse than its threshold), or with --baseline a change "
    "the history confirms worse than its threshold, or a fact worse than its threshold, "
    "exactly. Context rows are listed apart, not tested."
)


def codec_cells(
    contexts: Sequence[RunContext], names: Sequence[str], pair: tuple[str, str]
) -> tuple[list[str], list[list[str]]]:
    """The seed's table, one column group per run: JSON | Protobuf (est.) | Change (est.) |
    Verdict."""
    per_run = []
    for context in contexts:
        found = comparing.compare_recorded(context.samples(), context.manifest, *pair)
        _headers, body = table.comparison_cells(found)
        # a row measured on a busy machine in one run only is still the same row
        per_run.append(
            {(line[0], line[1].removesuffix(table.BUSY_MARK)): line[2:6] for line in body}
        )
    common = [k for k in per_run[0] if all(k in cells for cells in per_run[1:])]
    base, cand = (table.display_name(c) for c in pair)
    headers = ["Profile", "Metric"]
    for name in names:
        headers += [f"{name} {base}", f"{name} {cand} (est.)", "Change (est.)", "Verdict"]
    return headers, [[*key, *(c for cells in per_run for c in cells[key])] for key in common]


__all__ = ["Change", "Comparison", "Row", "cells", "codec_cells", "compare", "context_cells"]
