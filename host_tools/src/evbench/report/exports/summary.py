"""summary.csv: one row per summary record, the columns of summary.json in its order.

`params` is JSON; a field that does not apply is empty; numbers are written with
repr() so they read back to the same float.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evbench.report.exports._records import csv_value
from evbench.report.exports.registry import export
from evbench_core.results import RECORD_FIELDS

if TYPE_CHECKING:
    from evbench.report.context import RunContext
    from evbench_core.comparison import Comparison


def csv_text(records: Sequence[Mapping[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(RECORD_FIELDS)
    for record in records:
        writer.writerow([csv_value(record.get(name)) for name in RECORD_FIELDS])
    return buffer.getvalue()


@export("summary.csv")
def summary_file(context: RunContext, comparison: Comparison | None) -> bytes:
    return csv_text(context.records).encode()
