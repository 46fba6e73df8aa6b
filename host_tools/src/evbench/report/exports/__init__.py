"""Machine-readable exports for CI dashboards, one module per file: summary.csv (CSV
of the records, `summary.py`), comparison.csv (the comparison table,
`comparison_table.py`) and junit.xml (`junit.py`).

Each file `evbench report` writes beside the results besides report.md and
report.html is a module of this package, which declares it, once, by
`@export(FILE)` on the function that makes it from the run and its comparison;
every module is collected when the package is imported, so a new export is one
new module and no list to extend (a module whose name starts with `_` is a
helper: `_records.py`, what they share). report/writer.py writes what
`registered()` lists, and tests/test_report_exports.py checks docs/reports.md's
table against the files a real render writes.
"""

from __future__ import annotations

from evbench.report.exports._records import (
    IDENTITY_PARAMS,
    base_metric,
    csv_value,
    record_key,
    table_csv,
)
from evbench.report.exports.comparison_table import (
    COMPARISON_FIELDS,
    comparison_csv,
    comparison_rows,
)
from evbench.report.exports.junit import GAIN_BEYOND, REGRESSION, junit_file, junit_xml
from evbench.report.exports.registry import Export, Maker, collect, export, registered
from evbench.report.exports.summary import csv_text

collect(__path__, __name__)

__all__ = [
    "COMPARISON_FIELDS",
    "GAIN_BEYOND",
    "IDENTITY_PARAMS",
    "REGRESSION",
    "Export",
    "Maker",
    "base_metric",
    "comparison_csv",
    "comparison_rows",
    "csv_text",
    "csv_value",
    "export",
    "junit_file",
    "junit_xml",
    "record_key",
    "registered",
    "table_csv",
]
