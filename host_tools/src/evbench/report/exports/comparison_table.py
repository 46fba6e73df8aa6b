"""comparison.csv: one row per row of the comparison table (tested rows and facts),
the columns of COMPARISON_FIELDS (docs/results-format.md): the ratio estimate
and the verdict's own interval (at Holm's step for the row), p (Holm), the
verdict in the table's words (the winning codec, `equal`, `undecided`,
`n too small`; `fact` for a fact), n and `detectable` in percent.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from evbench.report import ratios
from evbench.report.exports._records import csv_value
from evbench.report.exports.registry import export
from evbench_core.analysis import margins
from evbench_core.analysis.verdicts import BASELINE, CANDIDATE
from evbench_core.comparison import CONTEXT, FACT, Comparison

if TYPE_CHECKING:
    from evbench.report.context import RunContext

COMPARISON_FIELDS = (
    "suite",
    "profile",
    "metric",
    "phase",
    "label",
    "baseline",
    "candidate",
    "estimate",
    "change",
    "ci_low",
    "ci_high",
    "p_holm",
    "verdict",
    "n",
    "detectable",
    "margin",
    "scale",
    "difference",
    "diff_low",
    "diff_high",
    "look",
)


def comparison_rows(comparison: Comparison | None) -> list[dict[str, Any]]:
    """The comparison table's rows as COMPARISON_FIELDS (None: no pair compared)."""
    if comparison is None:
        return []
    rows = []
    for row in comparison.rows:
        if row.role == CONTEXT:
            continue
        verdict = row.verdict
        entry: dict[str, Any] = {
            "suite": row.identity.suite,
            "profile": row.identity.profile,
            "metric": row.identity.metric,
            "phase": row.identity.params_dict.get("phase"),
            "label": row.label,
            "baseline": comparison.baseline,
            "candidate": comparison.candidate,
            "n": row.n,
        }
        if row.role == FACT:
            difference = row.fact_difference
            entry["estimate"] = None if difference is None else 1 + difference
            entry["verdict"] = "fact"
            if difference is not None and difference > -1:
                entry["change"] = ratios.change_text(1 + difference, row.identity.metric)
        elif verdict is not None:
            named = {BASELINE: comparison.baseline, CANDIDATE: comparison.candidate}
            detectable = verdict.min_detectable
            entry |= {
                "estimate": verdict.ratio,
                "ci_low": verdict.ratio_low,
                "ci_high": verdict.ratio_high,
                "p_holm": verdict.p_holm,
                "verdict": named.get(verdict.winner, verdict.winner),
                "margin": verdict.margin,
                "scale": verdict.scale,
                "look": verdict.look,
            }
            if verdict.ratio is not None and verdict.ratio > 0:
                entry["change"] = ratios.change_text(verdict.ratio, row.identity.metric)
            if verdict.scale == margins.DIFFERENCE:  # in the row's unit, not a percent
                entry |= {
                    "difference": verdict.difference,
                    "diff_low": verdict.diff_low,
                    "diff_high": verdict.diff_high,
                    "detectable": detectable,
                }
            else:
                entry["detectable"] = None if detectable is None else detectable * 100
        rows.append(entry)
    return rows


def comparison_csv(comparison: Comparison | None) -> str:
    """comparison.csv: the header, then one line per row of the comparison table."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COMPARISON_FIELDS)
    for entry in comparison_rows(comparison):
        writer.writerow([csv_value(entry.get(name)) for name in COMPARISON_FIELDS])
    return buffer.getvalue()


@export("comparison.csv")
def comparison_file(context: RunContext, comparison: Comparison | None) -> bytes:
    return comparison_csv(comparison).encode()


def listed_rows(comparison: Comparison | None) -> list:
    """The rows comparison_rows lists, in its order."""
    return [] if comparison is None else [r for r in comparison.rows if r.role != CONTEXT]
