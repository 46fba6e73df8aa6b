"""What the exports share: a record's key, and CSV cells and tables."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

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


def csv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def table_csv(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Any rendered table as CSV (the cells as displayed)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buffer.getvalue()
