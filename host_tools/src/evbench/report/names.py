"""How a codec is named to a reader: JSON, Protobuf, the native runtimes' own names; and
how a long profile name or row label is shortened to a column, keeping what tells it
from its neighbours."""

from __future__ import annotations

import re

from evbench_agent.native import runtimes

DISPLAY_NAMES = {"json": "JSON", "protobuf": "Protobuf"}
#: What stands for the part of a name or label left out.
CUT = "..."
#: A label's trailing phase or setting, '(periodic)': kept when the label is shortened.
_TAIL = re.compile(r" \([^()]*\)$")
#: A shortened label keeps at least this much of its start beside its kept tail.
_MIN_HEAD = 6


def display_name(codec: str) -> str:
    return DISPLAY_NAMES.get(codec) or runtimes.display_name(codec) or codec


def shorten_label(label: str, width: int) -> str:
    """`label` in at most `width` characters: its start, CUT, and its trailing
    parenthesis ('RTT, encode to... (periodic)') when that leaves room for a start of
    _MIN_HEAD characters, else its start and CUT ('Serializa...')."""
    if len(label) <= width:
        return label
    tail = _TAIL.search(label)
    if tail is not None:
        head = width - len(CUT) - len(tail.group())
        if head >= _MIN_HEAD:
            return label[:head].rstrip(" ,") + CUT + tail.group()
    return label[: max(width - len(CUT), 1)] + CUT


def shorten_profile(profile: str, width: int) -> str:
    """A profile's name in at most `width` characters, keeping its distinguishing end: a
    user schema's 'schema:com.example.ev.v1.BatteryStatus' becomes '...BatteryStatus'
    (whole dotted parts while they fit, else the end of the last one)."""
    if len(profile) <= width:
        return profile
    room = max(width - len(CUT), 1)
    parts = re.split(r"(?<=[.:])", profile)
    kept = ""
    for part in reversed(parts):
        if len(part) + len(kept) > room:
            break
        kept = part + kept
    return CUT + (kept or profile[-room:])


__all__ = ["CUT", "DISPLAY_NAMES", "display_name", "shorten_label", "shorten_profile"]
