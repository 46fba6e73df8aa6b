"""Machine-readable exports for CI dashboards: CSV of the records, the comparison's
CSV, JUnit XML.

Each file `evbench report` writes beside the results besides report.md and
report.html is registered here, once, by `@export(FILE)` on the function that makes
it from the run and its comparison; report/writer.py writes what `registered()`
lists, and tests/test_report_exports.py checks docs/reports.md's table against the
files a real render writes.

comparison.csv: one row per row of the comparison table (tested rows and facts),
the columns of COMPARISON_FIELDS (docs/results-format.md): the ratio estimate
and the verdict's own interval (at Holm's step for the row), p (Holm), the
verdict in the table's words (the winning codec, `equal`, `undecided`,
`n too small`; `fact` for a fact), n and `detectable` in percent.

CSV: one row per summary record, the columns of summary.json in its order;
`params` is JSON; a field that does not apply is empty; numbers are written
with repr() so they read back to the same float.

JUnit: one <testsuite> per run, one <testcase> per record (a metric of one
suite, profile and codec; classname `suite.profile.codec`, name the metric).
The document validates against the JUnit schema of Jenkins' xUnit plugin
(tests/data/junit-10.xsd), which allows <properties> only in a <testsuite>:
each case's numbers are suite properties named `<classname>.<name>.<field>`
(value (the median), unit, median, mean, stdev, min, max, the median's 95 %
interval, n; for a record of a tested row of the run's comparison its
`verdict` in the table's words), and the same fields as `field=value` lines in
the case's <system-out>. A case fails when the metric regressed against the baseline
(its <failure type> is `regression`), or changed beyond --max-change in its better
direction (`gain-beyond-max-change`): compare.py decides; without a baseline every
case passes and only carries the numbers.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evbench.report import ratios
from evbench_core.analysis import margins
from evbench_core.analysis.verdicts import BASELINE, CANDIDATE
from evbench_core.comparison import CONTEXT, FACT, Comparison
from evbench_core.results import RECORD_FIELDS

if TYPE_CHECKING:
    from evbench.report.context import RunContext

#: The <failure type> of a JUnit case: a regression, or a gain beyond --max-change
#: (which fails too: two runs that far apart may not have measured the same thing).
REGRESSION = "regression"
GAIN_BEYOND = "gain-beyond-max-change"
#: What an export is made from: the run, and its comparison (None when it has none).
Maker = Callable[["RunContext", "Comparison | None"], bytes]


@dataclass(frozen=True)
class Export:
    """A file written beside a run's results, declared by `@export` on its maker."""

    file: str
    make: Maker


_EXPORTS: dict[str, Export] = {}


def export(file: str) -> Callable[[Maker], Maker]:
    """Register the decorated function as the maker of `file` (a file given twice is a bug)."""

    def register(make: Maker) -> Maker:
        if file in _EXPORTS:
            raise ValueError(f"export {file!r} is registered twice")
        _EXPORTS[file] = Export(file, make)
        return make

    return register


def registered() -> tuple[Export, ...]:
    """Every export, in the order they were declared."""
    return tuple(_EXPORTS.values())


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

PROPERTY_FIELDS = ("median", "mean", "stdev", "min", "max", "ci95_low", "ci95_high", "n")


#: Params that tell records of one metric apart within a run (telemetry's phase and
#: kind, the operation of an energy figure); the others are settings, compared as is.
IDENTITY_PARAMS = ("phase", "kind", "operation")


def record_key(record: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(suite, profile, codec, metric): the metric qualified by IDENTITY_PARAMS, if any."""
    params = record.get("params") or {}
    qualifiers = [f"{name}={params[name]}" for name in IDENTITY_PARAMS if name in params]
    metric = str(record.get("metric"))
    return (
        str(record.get("suite")),
        str(record.get("profile") or "-"),
        str(record.get("codec") or "-"),
        f"{metric}[{','.join(qualifiers)}]" if qualifiers else metric,
    )


def base_metric(key: tuple[str, str, str, str]) -> str:
    """The metric's name without its qualifiers."""
    return key[3].split("[", 1)[0]


def _csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def csv_text(records: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(RECORD_FIELDS)
    for record in records:
        writer.writerow([_csv_value(record.get(name)) for name in RECORD_FIELDS])
    return buffer.getvalue()


@export("summary.csv")
def summary_file(context: RunContext, comparison: Comparison | None) -> bytes:
    return csv_text(context.records).encode()


def junit_case_id(key: tuple[str, str, str, str]) -> tuple[str, str]:
    """(classname, name) of a record's test case."""
    return ".".join(key[:3]), key[3]


def junit_fields(record: Mapping[str, Any], verdict: str | None = None) -> list[tuple[str, str]]:
    """The (field, text) pairs a test case carries: value (the median), unit, the spread,
    and the verdict of its row, when it has one."""
    fields = [("value", _csv_value(record.get("median"))), ("unit", str(record.get("unit") or ""))]
    fields += [(name, _csv_value(record.get(name))) for name in PROPERTY_FIELDS]
    if verdict is not None:
        fields.append(("verdict", verdict))
    return fields


def verdict_words(comparison: Comparison | None) -> dict[tuple[str, str, str, str], str]:
    """record_key of both codecs' records of each tested row -> the row's verdict word."""
    words: dict[tuple[str, str, str, str], str] = {}
    for entry, row in zip(comparison_rows(comparison), _listed(comparison), strict=True):
        if row.verdict is None:
            continue
        for codec in (row.baseline.codec, row.candidate.codec):
            record = {
                "suite": row.identity.suite,
                "profile": row.identity.profile,
                "codec": codec,
                "metric": row.identity.metric,
                "params": row.identity.params_dict,
            }
            words[record_key(record)] = str(entry["verdict"])
    return words


def _listed(comparison: Comparison | None) -> list:
    """The rows comparison_rows lists, in its order."""
    return [] if comparison is None else [r for r in comparison.rows if r.role != CONTEXT]


def junit_xml(
    run_id: str,
    records: Sequence[Mapping[str, Any]],
    failures: Mapping[tuple[str, str, str, str], str] | None = None,
    timestamp: str | None = None,
    verdicts: Mapping[tuple[str, str, str, str], str] | None = None,
    gains: Collection[tuple[str, str, str, str]] = (),
) -> bytes:
    """The JUnit document; `failures` maps a record_key to why that metric failed,
    `verdicts` to its row's verdict word (verdict_words). A failure's type is
    GAIN_BEYOND for the keys in `gains` (changed beyond --max-change in the better
    direction), else REGRESSION."""
    failures = failures or {}
    verdicts = verdicts or {}
    root = ET.Element("testsuites", name="evbench")
    tests, failed = str(len(records)), str(sum(1 for r in records if record_key(r) in failures))
    suite = ET.SubElement(root, "testsuite", name=f"evbench {run_id}", tests=tests)
    suite.set("failures", failed)
    suite.set("errors", "0")
    suite.set("time", "0")
    if timestamp:
        suite.set("timestamp", timestamp)
    root.set("tests", tests)
    root.set("failures", failed)
    root.set("errors", "0")
    # The schema allows <properties> only in the suite: one property per case and field.
    properties = ET.SubElement(suite, "properties")
    for record in records:
        classname, name = junit_case_id(record_key(record))
        for field, text in junit_fields(record, verdicts.get(record_key(record))):
            ET.SubElement(properties, "property", name=f"{classname}.{name}.{field}", value=text)
    for record in records:
        key = record_key(record)
        classname, name = junit_case_id(key)
        case = ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")
        if key in failures:
            kind = GAIN_BEYOND if key in gains else REGRESSION
            failure = ET.SubElement(case, "failure", type=kind, message=failures[key])
            failure.text = failures[key]
        out = ET.SubElement(case, "system-out")
        fields = junit_fields(record, verdicts.get(key))
        out.text = "".join(f"{field}={text}\n" for field, text in fields)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


@export("junit.xml")
def junit_file(context: RunContext, comparison: Comparison | None) -> bytes:
    timestamp = context.manifest.get("start_time")
    return junit_xml(context.run_id, context.records, None, timestamp, verdict_words(comparison))


def table_csv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Any rendered table as CSV (the cells as displayed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue()


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
        writer.writerow([_csv_value(entry.get(name)) for name in COMPARISON_FIELDS])
    return buffer.getvalue()


@export("comparison.csv")
def comparison_file(context: RunContext, comparison: Comparison | None) -> bytes:
    return comparison_csv(comparison).encode()
