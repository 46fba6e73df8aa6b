"""Markers: suites and phases on the run's monotonic timeline (markers.jsonl).

A marker is `{"t_ns", "event", "suite", "profile", "codec", ...}` with event
`start` or `end`; a start and the next end with the same fields frame a phase.
`t_ns` is `time.monotonic_ns()`, the clock of the telemetry samples. A worker
process may report its own times (the clock is system-wide): those markers
are written with the `t_ns` it gave, after the fact.

Before every live `start` (one without a given `t_ns`) the cool-down guard,
when one is set, waits until the board is cool enough.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MARKERS = "markers.jsonl"
PHASE_FIELDS = ("suite", "profile", "codec")
#: What telemetry records are grouped by: a `kind` keeps, say, periodic and
#: saturation phases of one codec apart.
GROUP_FIELDS = (*PHASE_FIELDS, "kind")


class Timeline:
    def __init__(self, directory: Path, guard: Callable[[dict[str, Any]], None] | None = None):
        self.path = Path(directory) / MARKERS
        self.guard = guard
        self._stream = open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def mark(self, event: str, t_ns: int | None = None, **fields: Any) -> None:
        """Mark `event` ('start' or 'end') of the phase named by `fields`, now or at `t_ns`."""
        if event not in ("start", "end"):
            raise ValueError(f"a marker event is 'start' or 'end', not {event!r}")
        if t_ns is None and event == "start" and self.guard is not None:
            self.guard(fields)
        marker = {"t_ns": time.monotonic_ns() if t_ns is None else t_ns, "event": event}
        marker.update({name: fields.get(name) for name in PHASE_FIELDS})
        marker.update({k: v for k, v in fields.items() if k not in PHASE_FIELDS})
        self._stream.write(json.dumps(marker) + "\n")
        self._stream.flush()

    def close(self) -> None:
        """Push the markers to disk (flushed per line, synced once here) and close."""
        self._stream.flush()
        os.fsync(self._stream.fileno())
        self._stream.close()


#: Fields that are counts, not names: an end marker may carry them.
COUNTS = ("messages", "operations")


def group_name(marker: dict[str, Any]) -> tuple[Any, ...]:
    """The phase a marker belongs to, for records: suite, profile, codec and kind."""
    return tuple(marker.get(name) for name in GROUP_FIELDS)


def _closes(end: dict[str, Any], start: dict[str, Any]) -> bool:
    """An end closes a start of the same phase whose fields agree with the end's."""
    if group_name(end) != group_name(start):
        return False
    return all(start.get(k) == v for k, v in end.items() if k not in ("t_ns", "event", *COUNTS))


def read_markers(path: Path) -> list[dict[str, Any]]:
    if not Path(path).exists():
        return []
    with open(path, encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.endswith("\n")]


def windows(markers: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int, int | None]]:
    """(start marker with the end's counts, start ns, end ns) per phase, in time order.

    An end closes the latest open start it agrees with (an end may leave out
    fields its start gave, such as a repetition number); a start never closed
    (a run cut short) gets None as its end.
    """
    opened: list[dict[str, Any]] = []
    for marker in sorted(markers, key=lambda m: m["t_ns"]):
        if marker["event"] == "start":
            opened.append(marker)
            continue
        for index in range(len(opened) - 1, -1, -1):
            if _closes(marker, opened[index]):
                start = opened.pop(index)
                counts = {k: marker[k] for k in COUNTS if k in marker}
                yield {**start, **counts}, start["t_ns"], marker["t_ns"]
                break
    for marker in opened:
        yield marker, marker["t_ns"], None


__all__ = ["MARKERS", "read_markers", "windows"]
