"""Rows read from a history store, each column checked against its type before use.

SQLite keeps any value in any column, and a store may be damaged or edited by
hand: a `runs.manifest` that is not JSON, a `records.median` that is text or a
NULL `board` must end in FormatError naming the store, never in a KeyError,
TypeError or JSONDecodeError deep in a trend. Columns are checked by name,
whatever query (or join) brought them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from evbench_core.errors import FormatError

Check = Callable[[Any], bool]


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _optional_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_whole(value: Any) -> bool:
    return value is None or _whole(value)


def _optional_number(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _json(kind: type) -> Check:
    def check(value: Any) -> bool:
        if not isinstance(value, str):
            return False
        try:
            return isinstance(json.loads(value), kind)
        except (ValueError, RecursionError):
            return False

    return check


#: How deeply a record's params may nest (the results format's bound for them).
MAX_PARAMS_DEPTH = 32


def _shallow(value: Any, limit: int) -> bool:
    """Whether lists and objects nest at most `limit` deep in `value` (iteratively)."""
    pending = [(value, 1)]
    while pending:
        item, level = pending.pop()
        children = item.values() if isinstance(item, dict) else item
        if level > limit:
            return False
        pending += [(child, level + 1) for child in children if isinstance(child, (dict, list))]
    return True


def _params(value: Any) -> bool:
    """A record's or sample set's params as the store keeps them: a JSON object, shallow
    (a trend reads every one: "[" 3000 times once ended in a RecursionError)."""
    if not isinstance(value, str):
        return False
    try:
        params = json.loads(value)
    except (ValueError, RecursionError):
        return False
    return isinstance(params, dict) and _shallow(params, MAX_PARAMS_DEPTH)


def _blob(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, memoryview))


#: Every column a query of the store returns, by name (joins alias record params).
COLUMNS: dict[str, Check] = {
    "run_id": _text,
    "board": _text,
    "board_source": _text,
    "place": _optional_text,
    "start_time": _text,
    "end_time": _optional_text,
    "quick": _whole,
    "partial": _whole,
    "profiles": _text,  # comma-separated
    "codecs": _text,  # comma-separated
    "image": _optional_text,
    "kernel": _optional_text,
    "python": _optional_text,
    "protobuf": _optional_text,
    "protobuf_backend": _optional_text,
    "codec_versions": _json(dict),
    "agent": _optional_text,
    "directory": _optional_text,
    "digest": _text,
    "added_at": _text,
    "manifest": _json(dict),
    "suite": _text,
    "profile": _text,
    "codec": _text,
    "metric": _text,
    "params": _params,
    "record_params": _params,
    "unit": _text,
    "n": _optional_whole,
    "median": _optional_number,
    "mean": _optional_number,
    "stdev": _optional_number,
    "min": _optional_number,
    "max": _optional_number,
    "ci95_low": _optional_number,
    "ci95_high": _optional_number,
    "count": _whole,
    "packed": _blob,
    "series": _text,
    "accepted_by": _text,
    "reason": _text,
    "accepted_at": _text,
    "key": _text,
    "value": _text,
}


def checked(row: dict[str, Any], store: str) -> dict[str, Any]:
    """`row` when every known column holds its type; FormatError naming the store if not."""
    for name, value in row.items():
        check = COLUMNS.get(name)
        if check is not None and not check(value):
            shown = repr(value)
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            where = f" (run {row['run_id']})" if isinstance(row.get("run_id"), str) else ""
            raise FormatError(
                f"the history store {store} holds a malformed row{where}: {name} is {shown}",
                hint="the store was damaged or edited by hand: it is left as it is",
            )
    return row
