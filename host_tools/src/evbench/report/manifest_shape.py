"""The manifest fields a report (and the results history) reads, each checked against
its type before use.

A manifest may come from a board, a file edited by hand, or a damaged disk:
`"platform": [1]` must not reach code that calls `.get` on it. `checked` keeps
each field the report reads when its type is the expected one and drops it
otherwise (its absence is already rendered as "?"), naming what it dropped;
fields the report does not read pass through as they are.
"""

from __future__ import annotations

from typing import Any

from evbench_core import results

#: Field -> its type: a Python type (or tuple of them), a nested shape (a dict: an
#: object with those fields), or a one-element list (a list of that type).
Shape = dict[str, Any]

_TEXT = str


class _Number:
    """A finite number within results.MAX_VALUE (not a bool, not a 4000-digit integer)."""


_NUMBER = _Number
_TEXTS = [str]

PLATFORM: Shape = {
    "board": _TEXT,
    "hostname": _TEXT,
    "cpu_model": _TEXT,
    "cpu_count": int,
    "image": _TEXT,
    "os": _TEXT,
    "kernel": _TEXT,
    "python": _TEXT,
    "python_implementation": _TEXT,
    "python_debug": bool,
    "python_dev_mode": bool,
    "load_avg": [_NUMBER],
    "protobuf": _TEXT,
    "protobuf_backend": _TEXT,
    "agent": _TEXT,
    "codecs": {"*": _TEXT},
    "machine": _TEXT,
    "native_codecs": {
        "*": {"flags": _TEXT, "version": _TEXT, "library": _TEXT, "architecture": _TEXT}
    },
    "clock": {
        "timer": _TEXT,
        "implementation": _TEXT,
        "clocksource": _TEXT,
        "resolution_s": _NUMBER,
    },
}
SCHEMA: Shape = {
    "message": _TEXT,
    "files": [{"name": _TEXT, "sha256": _TEXT}],
    "samples": {"name": _TEXT, "format": _TEXT},
    "generator": {"name": _TEXT},
    "json_style": _TEXT,
}
SPEC: Shape = {
    "suites": _TEXTS,
    "profiles": _TEXTS,
    "codecs": _TEXTS,
    "schema": SCHEMA,
    "link_rate_hz": _NUMBER,
}
MANIFEST: Shape = {
    "run_id": _TEXT,
    "status": _TEXT,
    "reason": _TEXT,
    "start_time": _TEXT,
    "end_time": _TEXT,
    "quick": bool,
    "gc": _TEXT,
    "platform": PLATFORM,
    "spec": SPEC,
    "telemetry": {
        "sensors": {"*": (list, str)},
        "sensors_detail": {"cpufreq": [{"governor": _TEXT, "cpus": [int]}]},
        "throttled_phases": [
            {"phase": _TEXT, "kind": _TEXT, "profile": _TEXT, "codec": _TEXT, "reasons": _TEXTS}
        ],
    },
    "aa": {"codec": _TEXT, "copy": _TEXT},
    # what the results history keeps of a run (history/indexing.py)
    "place": _TEXT,
    "board_identity": {"id": _TEXT, "source": _TEXT, "place": _TEXT},
}


def checked(manifest: dict[str, Any], problems: list[str] | None = None) -> dict[str, Any]:
    """`manifest` with every field of MANIFEST that has another type left out (named in
    `problems`, when given, as "manifest.json: FIELD is not TYPE (ignored)")."""
    dropped: list[str] = []
    result = _object(manifest, MANIFEST, "", dropped)
    if problems is not None:
        problems += [f"manifest.json: {what} (ignored)" for what in dropped]
    return result


def wrong_fields(manifest: dict[str, Any]) -> list[str]:
    """What `checked` would leave out, each as "FIELD is not TYPE"."""
    dropped: list[str] = []
    _object(manifest, MANIFEST, "", dropped)
    return dropped


def _object(value: dict[str, Any], shape: Shape, where: str, dropped: list[str]) -> dict:
    result = {}
    for key, item in value.items():
        expected = shape.get(key, shape.get("*")) if isinstance(key, str) else None
        if expected is None:
            result[key] = item  # not read by the report: as it is
            continue
        if item is None:
            continue  # null reads as absent: `.get(key, {})` then gives the default
        kept = _typed(item, expected, f"{where}{key}", dropped)
        if kept is not _DROP:
            result[key] = kept
    return result


_DROP = object()


def _typed(value: Any, expected: Any, where: str, dropped: list[str]) -> Any:
    if isinstance(expected, dict):
        if not isinstance(value, dict):
            dropped.append(f"{where} is not an object")
            return _DROP
        return _object(value, expected, f"{where}.", dropped)
    if isinstance(expected, list):
        if not isinstance(value, list):
            dropped.append(f"{where} is not a list")
            return _DROP
        items = [_typed(item, expected[0], f"{where}[]", dropped) for item in value]
        return [item for item in items if item is not _DROP]
    if expected is _Number:
        if results.is_value(value):
            return value
        dropped.append(f"{where} is not a finite number")
        return _DROP
    wanted = expected if isinstance(expected, tuple) else (expected,)
    if isinstance(value, bool) and bool not in wanted:
        dropped.append(f"{where} is not {_name(wanted)}")
        return _DROP
    if not isinstance(value, wanted):
        dropped.append(f"{where} is not {_name(wanted)}")
        return _DROP
    return value


def _name(types: tuple[type, ...]) -> str:
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false"}
    return " or ".join(dict.fromkeys(names.get(kind, kind.__name__) for kind in types))
