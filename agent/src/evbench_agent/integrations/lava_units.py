"""evbench's units spelled for LAVA, and back: one table for the signals and the import.

LAVA keeps a test case's unit as free text, but the unit travels inside a
``<LAVA_SIGNAL_TESTCASE ...>`` line, which LAVA splits on white space and on
``=``, and evbench keeps every signal parameter to ``[A-Za-z0-9._-]`` so that
no console, dashboard URL or shell quoting mangles it. So ``bytes/s`` cannot
travel as it is: each unit of the results format has one LAVA spelling here,
and each spelling reads back to exactly one unit.
"""

from __future__ import annotations

import re

#: Every results-format unit (evbench_core.results.UNITS) and the verdict ratio,
#: as the signals spell it.
TO_LAVA = {
    "s": "s",
    "bytes": "bytes",
    "bytes/s": "bytes-per-s",
    "messages/s": "messages-per-s",
    "messages": "messages",
    "count": "count",
    "°C": "degC",
    "Hz": "Hz",
    "percent": "percent",
    "W": "W",
    "J": "J",
    "ratio": "ratio",
}
#: Spellings older agents sent (`B/s` before 2026-11, then `B-s` once the id
#: sanitiser replaced the slash): still read, never written.
LEGACY = {"B/s": "bytes/s", "B-s": "bytes/s", "msg/s": "messages/s", "msg-s": "messages/s"}
FROM_LAVA = {lava: unit for unit, lava in TO_LAVA.items()} | LEGACY
#: What a signal parameter may hold.
LAVA_LEGAL = re.compile(r"^[A-Za-z0-9._-]+$")


class UnknownUnit(ValueError):
    """A unit with no entry in the table."""


def to_lava(unit: str) -> str:
    try:
        return TO_LAVA[unit]
    except KeyError:
        raise UnknownUnit(f"no LAVA spelling for unit {unit!r}") from None


def from_lava(spelling: str) -> str:
    try:
        return FROM_LAVA[spelling]
    except KeyError:
        known = ", ".join(sorted(FROM_LAVA))
        raise UnknownUnit(f"unknown LAVA unit {spelling!r} (known: {known})") from None


__all__ = ["UnknownUnit", "from_lava"]
