"""junit.xml: the run's records as JUnit test cases, for CI dashboards.

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

import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evbench.report.exports._records import csv_value, record_key
from evbench.report.exports.comparison_table import comparison_rows, listed_rows
from evbench.report.exports.registry import export

if TYPE_CHECKING:
    from evbench.report.context import RunContext
    from evbench_core.comparison import Comparison

#: The <failure type> of a JUnit case: a regression, or a gain beyond --max-change
#: (which fails too: two runs that far apart may not have measured the same thing).
REGRESSION = "regression"
GAIN_BEYOND = "gain-beyond-max-change"

PROPERTY_FIELDS = ("median", "mean", "stdev", "min", "max", "ci95_low", "ci95_high", "n")


def junit_case_id(key: tuple[str, str, str, str]) -> tuple[str, str]:
    """(classname, name) of a record's test case."""
    return ".".join(key[:3]), key[3]


def junit_fields(record: Mapping[str, Any], verdict: str | None = None) -> list[tuple[str, str]]:
    """The (field, text) pairs a test case carries: value (the median), unit, the spread,
    and the verdict of its row, when it has one."""
    fields = [("value", csv_value(record.get("median"))), ("unit", str(record.get("unit") or ""))]
    fields += [(name, csv_value(record.get(name))) for name in PROPERTY_FIELDS]
    if verdict is not None:
        fields.append(("verdict", verdict))
    return fields


def verdict_words(comparison: Comparison | None) -> dict[tuple[str, str, str, str], str]:
    """record_key of both codecs' records of each tested row -> the row's verdict word."""
    words: dict[tuple[str, str, str, str], str] = {}
    for entry, row in zip(comparison_rows(comparison), listed_rows(comparison), strict=True):
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
