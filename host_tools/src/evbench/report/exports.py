"""Machine-readable exports for CI dashboards: CSV of the records, JUnit XML.

CSV: one row per summary record, the columns of summary.json in its order;
`params` is JSON; a field that does not apply is empty; numbers are written
with repr() so they read back to the same float.

JUnit: one <testsuite> per run, one <testcase> per record (a metric of one
suite, profile and codec; classname `suite.profile.codec`, name the metric).
The document validates against the JUnit schema of Jenkins' xUnit plugin
(tests/data/junit-10.xsd), which allows <properties> only in a <testsuite>:
each case's numbers are suite properties named `<classname>.<name>.<field>`
(value (the median), unit, median, mean, stdev, min, max, the median's 95 %
interval, n), and the same fields as `field=value` lines in the case's
<system-out>. A case fails when the metric regressed against the baseline
(compare.py decides); without a baseline every case passes and only carries
the numbers.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from typing import Any

from evbench_agent.results import RECORD_FIELDS

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


def junit_case_id(key: tuple[str, str, str, str]) -> tuple[str, str]:
    """(classname, name) of a record's test case."""
    return ".".join(key[:3]), key[3]


def junit_fields(record: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The (field, text) pairs a test case carries: value (the median), unit, the spread."""
    fields = [("value", _csv_value(record.get("median"))), ("unit", str(record.get("unit") or ""))]
    fields += [(name, _csv_value(record.get(name))) for name in PROPERTY_FIELDS]
    return fields


def junit_xml(
    run_id: str,
    records: Sequence[Mapping[str, Any]],
    failures: Mapping[tuple[str, str, str, str], str] | None = None,
    timestamp: str | None = None,
) -> bytes:
    """The JUnit document; `failures` maps a record_key to why that metric regressed."""
    failures = failures or {}
    root = ET.Element("testsuites", name="evbench")
    suite = ET.SubElement(root, "testsuite", name=f"evbench {run_id}", tests=str(len(records)))
    suite.set("failures", str(sum(1 for r in records if record_key(r) in failures)))
    suite.set("errors", "0")
    suite.set("time", "0")
    if timestamp:
        suite.set("timestamp", timestamp)
    root.set("tests", suite.get("tests"))
    root.set("failures", suite.get("failures"))
    root.set("errors", "0")
    # The schema allows <properties> only in the suite: one property per case and field.
    properties = ET.SubElement(suite, "properties")
    for record in records:
        classname, name = junit_case_id(record_key(record))
        for field, text in junit_fields(record):
            ET.SubElement(properties, "property", name=f"{classname}.{name}.{field}", value=text)
    for record in records:
        key = record_key(record)
        classname, name = junit_case_id(key)
        case = ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")
        if key in failures:
            failure = ET.SubElement(case, "failure", type="regression", message=failures[key])
            failure.text = failures[key]
        out = ET.SubElement(case, "system-out")
        out.text = "".join(f"{field}={text}\n" for field, text in junit_fields(record))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def table_csv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Any rendered table as CSV (the cells as displayed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue()
