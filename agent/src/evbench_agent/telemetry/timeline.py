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
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MARKERS = "markers.jsonl"
PHASE_FIELDS = ("suite", "profile", "codec")


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
        self._stream.close()


def phase_key(marker: dict[str, Any]) -> tuple:
    """What names a phase: suite, profile and codec, plus any other field but counts."""
    extra = {
        k: v for k, v in marker.items() if k not in ("t_ns", "event", "messages", "operations")
    }
    return tuple(sorted((k, json.dumps(v)) for k, v in extra.items()))


def read_markers(path: Path) -> list[dict[str, Any]]:
    if not Path(path).exists():
        return []
    with open(path, encoding="utf-8") as stream:
        return [json.loads(line) for line in stream if line.endswith("\n")]


def windows(markers: list[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], int, int | None]]:
    """(end-or-start marker, start ns, end ns) per phase; end None when it never ended."""
    open_phases: dict[tuple, dict[str, Any]] = {}
    for marker in sorted(markers, key=lambda m: m["t_ns"]):
        key = phase_key(marker)
        if marker["event"] == "start":
            open_phases[key] = marker
        elif key in open_phases:
            yield marker, open_phases.pop(key)["t_ns"], marker["t_ns"]
    for marker in open_phases.values():
        yield marker, marker["t_ns"], None
