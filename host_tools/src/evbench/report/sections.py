"""The report's content, once, as sections of text and tables.

markdown.py and html.py only lay these out, so both documents say the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evbench.report import (
    answer,
    arms,
    exports,
    runtimes,
    system_view,
    table,
    unrepresentative,
    verdict_line,
)
from evbench.report.context import RunContext, context_rows, environment_rows
from evbench.report.units import format_value
from evbench_agent.buses import render
from evbench_core import comparison as comparing
from evbench_core.analysis import metrics
from evbench_core.comparison import Comparison

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
    #: Short labelled values (the environment): a compact box in HTML, a list in Markdown.
    facts: list[tuple[str, str]] = field(default_factory=list)


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
    """The codec and its copy in an A/A control; JSON against Protobuf when both ran
    (the seed's table); else the first two codecs."""
    aa = context.manifest.get("aa")
    if isinstance(aa, dict) and aa.get("codec") and aa.get("copy"):
        return str(aa["codec"]), str(aa["copy"])
    arm_pairs = arms.pairs(context.manifest)  # --arm: the first codec, first two arms
    if arm_pairs:
        return arm_pairs[0]
    return comparing.answer_pair(context.codecs())  # the agent's rule, as --until-decided


def compare_context(context: RunContext) -> Comparison | None:
    """The run's comparison, for a report rendered on its own (evbench report)."""
    pair = compared_codecs(context)
    if pair is None:
        return None
    return comparing.compare_recorded(context.samples(), context.manifest, *pair)


#: The environment box's title; with warnings, WARNING_TITLE follows it.
ENVIRONMENT_TITLE = "Environment"
WARNING_TITLE = "WARNING, these numbers do not stand for the board"


def environment_section(context: RunContext) -> Section:
    """The environment near the top, with what makes the numbers unrepresentative (a
    pure-Python protobuf, a debug build, throttling, contention) said first in it."""
    said = unrepresentative.warnings(context.manifest, context.samples())
    title = f"{ENVIRONMENT_TITLE}: {WARNING_TITLE}" if said else ENVIRONMENT_TITLE
    return Section(title, said, warning=bool(said), facts=environment_rows(context))


def answer_section(comparison: Comparison) -> Section | None:
    lines = answer.answer_lines(comparison)
    if not lines:
        return None
    lines = [*verdict_line.lines(comparison), *lines]  # the verdict in one line, first
    system = system_view.lines(comparison)
    if system:
        lines.append("What it costs the product (context, no winner): " + "; ".join(system) + ".")
    base, cand = (table.display_name(c) for c in (comparison.baseline, comparison.candidate))
    return Section(f"The answer: {cand} against {base}, on this machine", lines)


def comparison_section(comparison: Comparison) -> Section | None:
    headers, cells = table.comparison_cells(comparison)
    if not cells:
        return None
    base, cand = (table.display_name(c) for c in (comparison.baseline, comparison.candidate))
    busy = table.busy_line(comparison)
    notes = ([busy] if busy else []) + table.comparison_notes(comparison)
    return Section(f"Comparison: {base} against {cand}", notes, headers, cells)


def context_section(comparison: Comparison) -> Section | None:
    headers, cells = table.context_cells(comparison)
    if not cells:
        return None
    notes = [
        "Telemetry, modelled energy and rare counts, per codec: median [95% CI of the "
        "median] and the range of the values. Not tested, no winner."
    ]
    return Section("Context per codec (not tested)", notes, headers, cells)


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
    known = metrics.METRICS.get(base)
    return " ".join(filter(None, (known.label if known else base, key[3][len(base) :])))


def spread_section(context: RunContext) -> Section | None:
    """Every record with its spread, per codec: nothing summarized away."""
    if not context.records:
        return None
    rows = []
    for record in sorted(context.records, key=_metric_order):
        unit = record.get("unit", "")

        metric = record.get("metric")

        def value(key: str, record: dict = record, unit: str = unit) -> str:
            return format_value(record.get(key), unit, record.get("metric"))

        median = table.format_median_ci(
            record.get("median"), record.get("ci95_low"), record.get("ci95_high"), unit, metric
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


def bus_budget_section(context: RunContext) -> Section | None:
    """Does it fit at N Hz? The bus budget of every codec's and profile's measured size."""
    from evbench.report import bus_budget

    rows, skipped, rate = bus_budget.budget_of(context.manifest, context.records)
    if not rows and not skipped:
        return None
    notes = []
    if rows:
        notes.append(
            f"Period {rows[0].period_s * 1e3:g} ms, bus-load ceiling {rows[0].ceiling * 100:g} %,"
            f" buses as `evbench budget` prints them (docs/buses.md)."
        )
        notes += render.notes(rows)
    notes += [f"Not budgeted: {s.codec} on {s.profile} ({s.reason})." for s in skipped]
    headers, cells = bus_budget.table_rows(rows)
    return Section(f"Does it fit at {rate:g} Hz?", notes, headers, cells)


def bus_counters_section(context: RunContext) -> Section | None:
    """Bus errors per link phase over a bus: a line when there were none, else the phases."""
    from evbench.report import bus_counters

    found = bus_counters.phases(context.samples())
    if not found:
        return None
    notes = [
        bus_counters.summary_line(found),
        "Counters of the bus interface read before and after each phase (docs/buses.md, "
        '"Bus counters"); a phase with errors is listed with what rose. Context: no test, '
        "no winner.",
    ]
    rows = bus_counters.table_rows(found)
    return Section(
        "Bus errors per phase",
        notes,
        bus_counters.HEADERS if rows else [],
        rows,
        warning=bool(rows),
    )


def arms_section(context: RunContext) -> Section | None:
    """A run with --arm: each arm's versions, before the answer that compares them."""
    lines = arms.describe(context.manifest)
    if not lines:
        return None
    notes = [
        "The same codecs under each environment, in one run on one board: each replicate's "
        "arm processes take turns within every round (docs/method.md). The first arm is "
        "the baseline; the answer below compares the first codec's first two arms, the "
        "terminal (evbench run) every codec and arm.",
        *(line.strip() for line in lines),
    ]
    return Section("Arms", notes)


def build(context: RunContext, comparison: Comparison | None) -> list[Section]:
    """Every section of the report, in order (the answer first); the plots follow them."""
    found = [
        partial_section(context),
        environment_section(context),
        arms_section(context),
        answer_section(comparison) if comparison is not None else None,
        comparison_section(comparison) if comparison is not None else None,
        context_section(comparison) if comparison is not None else None,
        *(  # the C and C++ runtime pairs' answers, when the run has native codecs
            Section(*parts)
            for parts in runtimes.report_sections(
                context.samples(), context.manifest, context.codecs()
            )
        ),
        Section(
            "Run",
            headers=["What", "Value"],
            rows=[[what, value] for what, value in context_rows(context)],
        ),
        bus_budget_section(context),
        bus_counters_section(context),
        spread_section(context),
    ]
    return [section for section in found if section is not None]
