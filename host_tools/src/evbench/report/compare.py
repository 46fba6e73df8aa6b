"""Runs side by side: each metric's change against the first (baseline) run.

A change is significant when the two-sided Mann-Whitney test on the runs' raw
samples gives p < 0.05 after Holm's correction over every compared row (one
family, as the codec table does). A metric regresses when its median moved in
its worse direction by more than its threshold (criteria.py) and the change is
significant; when a run kept no raw samples, the threshold alone decides and
the row says so. Only rows every run has are compared; the rest are listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evbench.report import exports, table
from evbench.report.context import RunContext
from evbench.report.criteria import Criteria
from evbench.report.sections import metric_label
from evbench_agent import comparison as comparing
from evbench_agent import metrics, stats
from evbench_agent.verdicts import ALPHA, HIGHER_IS_BETTER

Key = tuple[str, str, str, str]  # suite, profile, codec, metric


@dataclass(frozen=True)
class Change:
    pct: float
    p_holm: float | None
    significant: bool
    worse: bool
    regression: str | None


@dataclass(frozen=True)
class Row:
    key: Key
    unit: str
    records: list[dict]
    changes: list[Change]
    threshold: float


@dataclass(frozen=True)
class Comparison:
    labels: list[str]
    rows: list[Row]
    left_out: list[str]

    @property
    def regressions(self) -> list[str]:
        return [c.regression for row in self.rows for c in row.changes if c.regression]


def labels(contexts: Sequence[RunContext]) -> list[str]:
    """Each run's board (or host) name; letters first when names repeat."""
    names = []
    for context in contexts:
        platform = context.manifest.get("platform") or {}
        names.append(str(platform.get("board") or platform.get("hostname") or "run"))
    if len(set(names)) < len(names):
        names = [f"{chr(ord('A') + i)} ({name})" for i, name in enumerate(names)]
    return names


def _pooled(context: RunContext) -> dict[Key, list[float]]:
    """Every worker's (or phase's) raw values, per record key."""
    pooled: dict[Key, list[float]] = {}
    for sample_set in context.samples():
        key = exports.record_key(
            {
                "suite": sample_set.suite,
                "profile": sample_set.profile,
                "codec": sample_set.codec,
                "metric": sample_set.metric,
                "params": sample_set.params,
            }
        )
        pooled.setdefault(key, []).extend(sample_set.values)
    return pooled


def compare(
    contexts: Sequence[RunContext], criteria: Criteria, baseline: bool = False
) -> Comparison:
    """Compare every run with the first; with `baseline`, flag regressions."""
    by_run = [
        {exports.record_key(r): r for r in c.records if r.get("median") is not None}
        for c in contexts
    ]
    common = [k for k in by_run[0] if all(k in records for records in by_run[1:])]
    everything = set().union(*by_run)
    left_out = sorted("/".join(k) for k in everything - set(common))
    samples = [_pooled(c) for c in contexts]
    order = list(metrics.METRICS)
    common.sort(key=lambda k: (k[0], k[1], k[2], order.index(k[3]) if k[3] in order else 99))

    tests = []  # (row index, run index, p) for the Holm family
    for row_index, key in enumerate(common):
        for run_index in range(1, len(contexts)):
            base, other = samples[0].get(key), samples[run_index].get(key)
            if base and other:
                tests.append((row_index, run_index, stats.mann_whitney(base, other)[1]))
    adjusted = dict(
        zip(((r, i) for r, i, _ in tests), stats.holm([p for *_, p in tests]), strict=True)
    )

    rows = []
    for row_index, key in enumerate(common):
        metric = exports.base_metric(key)
        threshold = criteria.threshold(*key[:3], metric)
        base_median = by_run[0][key]["median"]
        changes = []
        for run_index in range(1, len(contexts)):
            median = by_run[run_index][key]["median"]
            pct = (median - base_median) / base_median * 100 if base_median else 0.0
            p_holm = adjusted.get((row_index, run_index))
            significant = p_holm is not None and p_holm < ALPHA
            worse_pct = -pct if metrics.better(metric) == HIGHER_IS_BETTER else pct
            regression = None
            if baseline and worse_pct > threshold and (significant or p_holm is None):
                basis = f"p (Holm) {p_holm:.2g}" if p_holm is not None else "no raw samples"
                regression = (
                    f"{'/'.join(key)} regressed {pct:+.1f}% against the baseline "
                    f"(threshold {threshold:g}%, {basis})"
                )
            changes.append(Change(pct, p_holm, significant, worse_pct > 0, regression))
        unit = str(by_run[0][key].get("unit", ""))
        rows.append(Row(key, unit, [r[key] for r in by_run], changes, threshold))
    return Comparison(labels(contexts), rows, left_out)


def _cell(record: dict, unit: str) -> str:
    text = table.format_median_ci(
        record["median"],
        record.get("ci95_low"),
        record.get("ci95_high"),
        unit,
        record.get("metric"),
    )
    return f"{text} (n={record.get('n')})"


def _verdict(change: Change) -> str:
    if change.regression:
        return "REGRESSION"
    if not change.significant:
        return "no significant change" if change.p_holm is not None else "untested (no samples)"
    return "worse" if change.worse else "better"


def cells(comparison: Comparison) -> tuple[list[str], list[list[str]]]:
    """Headers and cells: one column group per run after the baseline."""
    headers = ["Suite", "Profile", "Codec", "Metric", comparison.labels[0]]
    for label in comparison.labels[1:]:
        headers += [label, "% Diff", "Change", "p (Holm)"]
    headers.append("threshold")
    body = []
    for row in comparison.rows:
        suite, profile, codec, _metric = row.key
        line = [suite, profile, table.display_name(codec), metric_label(row.records[0])]
        line.append(_cell(row.records[0], row.unit))
        for record, change in zip(row.records[1:], row.changes, strict=True):
            p_text = f"{change.p_holm:.2g}" if change.p_holm is not None else "-"
            line += [_cell(record, row.unit), f"{change.pct:+.1f}%", _verdict(change), p_text]
        line.append(f"{row.threshold:g}%")
        body.append(line)
    return headers, body


NOTES = (
    "Values: median [95% CI of the median] (n). % Diff: change of the median against the "
    "first run. Change: two-sided Mann-Whitney on the raw samples, p < 0.05 after Holm's "
    "correction over every row; REGRESSION when worse by more than the threshold (with "
    "--baseline) and significant."
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
