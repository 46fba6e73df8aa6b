"""The report's content, once, as sections of text and tables.

markdown.py and html.py only lay these out, so both documents say the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evbench.report import exports, table
from evbench.report.context import RunContext, context_rows
from evbench.report.units import format_value
from evbench_agent import metrics

SPREAD_HEADERS = [
    "Suite",
    "Profile",
    "Codec",
    "Metric",
    "n",
    "median [95% CI]",
    "mean",
    "stdev",
    "min",
    "max",
    "p90",
    "p99",
]


@dataclass(frozen=True)
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    warning: bool = False


def partial_section(context: RunContext) -> Section | None:
    """Why the run is partial, or None when it is complete and intact."""
    if not context.partial:
        return None
    lines = []
    if context.missing:
        lines.append(f"Missing files: {', '.join(context.missing)}.")
    status = context.manifest.get("status")
    if status not in (None, "complete"):
        lines.append(f"The manifest's status is {status!r}.")
    lines += [f"{problem}." for problem in context.problems]
    lines.append("What follows is what the run directory holds; figures may be incomplete.")
    return Section("PARTIAL run", lines, warning=True)


def compared_codecs(context: RunContext) -> tuple[str, str] | None:
    """JSON against Protobuf when both ran (the seed's table), else the first two codecs."""
    codecs = context.codecs()
    if "json" in codecs and "protobuf" in codecs:
        return "json", "protobuf"
    return (codecs[0], codecs[1]) if len(codecs) >= 2 else None


def comparison_section(context: RunContext) -> Section | None:
    pair = compared_codecs(context)
    if pair is None:
        return None
    rows = table.compare_codecs(context.as_run(), *pair)
    if not rows:
        return None
    headers, cells = table.comparison_cells(rows, *pair)
    return Section(
        f"Comparison: {table.DISPLAY_NAMES.get(pair[0], pair[0])} against "
        f"{table.DISPLAY_NAMES.get(pair[1], pair[1])}",
        table.COMPARISON_NOTES.split("\n"),
        headers,
        cells,
    )


def _metric_order(record: dict) -> tuple:
    names = list(metrics.METRICS)
    metric = record.get("metric")
    return (
        str(record.get("suite")),
        str(record.get("profile")),
        str(record.get("codec")),
        names.index(metric) if metric in names else len(names),
        str(metric),
    )


def metric_label(record: dict) -> str:
    """The metric's label, with the params that tell its records apart (a telemetry phase)."""
    key = exports.record_key(record)
    base = exports.base_metric(key)
    return " ".join(filter(None, (table._label(base), key[3][len(base) :])))


def spread_section(context: RunContext) -> Section | None:
    """Every record with its spread, per codec: nothing summarized away."""
    if not context.records:
        return None
    rows = []
    for record in sorted(context.records, key=_metric_order):
        unit = record.get("unit", "")

        def value(key: str, record: dict = record, unit: str = unit) -> str:
            return format_value(record.get(key), unit)

        median = table.format_median_ci(
            record.get("median"), record.get("ci95_low"), record.get("ci95_high"), unit
        )
        rows.append(
            [
                str(record.get("suite")),
                str(record.get("profile") or "-"),
                str(record.get("codec") or "-"),
                metric_label(record),
                str(record.get("n")),
                median,
                value("mean"),
                value("stdev"),
                value("min"),
                value("max"),
                value("p90"),
                value("p99"),
            ]
        )
    notes = [
        "Every summary record of the run. Times are per operation; p90/p99 need n >= 100 "
        "and the median's 95 % CI (order statistics) n >= 6; '-' where they do not apply.",
    ]
    return Section("Every metric with its spread", notes, SPREAD_HEADERS, rows)


def build(context: RunContext) -> list[Section]:
    """Every section of the report, in order; the plots follow them."""
    found = [
        partial_section(context),
        Section(
            "Context",
            headers=["What", "Value"],
            rows=[[what, value] for what, value in context_rows(context)],
        ),
        comparison_section(context),
        spread_section(context),
    ]
    return [section for section in found if section is not None]
