"""The bus budget as text: "Does it fit at N Hz?" (`evbench budget`, `evbench run` and the
report lay out the same cells)."""

from __future__ import annotations

from collections.abc import Sequence

from evbench_agent.buses.budget import NATIVE_CAN_CODECS, Row

HEADERS = [
    "bus",
    "codec",
    "bytes mean/max",
    "frames/msg",
    "busy ms mean",
    "worst",
    "share mean",
    "worst",
    "verdict",
]
#: Text widths of the columns (negative: left-aligned).
_WIDTHS = [-16, -14, 15, 11, 12, 7, 10, 7, 0]


def _frames(row: Row) -> str:
    if row.max_frames == round(row.mean_frames, 3):
        return f"{row.max_frames}"
    return f"{row.mean_frames:.1f}/{row.max_frames}"


def cells(row: Row) -> list[str]:
    """A row's cells, in the order of HEADERS."""
    return [
        row.bus,
        row.codec,
        f"{row.mean_size:.1f}/{row.max_size}",
        _frames(row),
        f"{row.mean_seconds * 1e3:.2f}",
        f"{row.worst_seconds * 1e3:.2f}",
        f"{row.mean_share * 100:.1f}%",
        f"{row.worst_share * 100:.1f}%",
        row.verdict,
    ]


def notes(rows: Sequence[Row]) -> list[str]:
    """What the busy times count, and how dbc goes on CAN when it is in the table."""
    said = []
    if any(row.stuffing == "bounds" for row in rows):
        said.append(
            "from the run's measured sizes: busy = message + reply (+ ISO-TP flow control) on a"
            " shared CAN bus, the busier direction on a full-duplex line; mean = the mean-size"
            " message without dynamic stuff bits (a lower bound), worst = the largest message"
            " with worst-case stuffing"
        )
    else:
        said.append(
            "busy = message + reply (+ ISO-TP flow control) on a shared CAN bus, the busier"
            " direction on a full-duplex line; exact stuffing (mean) and worst-case stuffing"
            " of the largest message (worst)"
        )
    if any(row.codec in NATIVE_CAN_CODECS for row in rows):
        said.append(
            "dbc on CAN: its own CAN frames (64-byte CAN FD messages; on classic CAN their"
            " 8-byte slices), no evbench header, no ISO-TP; the reply is its LinkAck frame"
        )
    return said


def heading(rows: Sequence[Row], rate_hz: float) -> str:
    first = rows[0]
    profiles = ", ".join(dict.fromkeys(row.profile for row in rows))
    return (
        f"Does it fit at {rate_hz:g} Hz? profile {profiles}, period {first.period_s * 1e3:g} ms,"
        f" bus-load ceiling {first.ceiling * 100:g} %"
    )


def _line(values: Sequence[str]) -> str:
    parts = [
        f"{value:<{-width}}" if width < 0 else f"{value:>{width}}"
        for value, width in zip(values, _WIDTHS, strict=True)
    ]
    return " ".join(parts[:-1]) + "  " + parts[-1]


def table(rows: Sequence[Row]) -> list[str]:
    """The rows as aligned text lines under their header."""
    header = _line(HEADERS).rstrip()
    lines = [header, "-" * len(header)]
    return lines + [_line(cells(row)) for row in rows]


def render(rows: Sequence[Row], rate_hz: float, mode: str, seed: int) -> str:
    """`evbench budget`'s table: one row per bus and codec, the verdict last."""
    if not rows:
        return "no budget rows"
    first = rows[0]
    lines = [
        f"Does it fit at {rate_hz:g} Hz? profile {first.profile}, period "
        f"{first.period_s * 1e3:g} ms, {mode} mode, {first.messages} payloads (seed {seed}), "
        f"bus-load ceiling {first.ceiling * 100:g} %",
        *notes(rows),
    ]
    return "\n".join(lines + table(rows))


def render_measured(rows: Sequence[Row], rate_hz: float) -> str:
    """A run's budget per profile (`evbench run` prints it after its table)."""
    if not rows:
        return "no budget rows"
    lines = [heading(rows, rate_hz), *notes(rows)]
    for profile in dict.fromkeys(row.profile for row in rows):
        lines += ["", f"profile {profile}:"]
        lines += table([row for row in rows if row.profile == profile])
    return "\n".join(lines)


__all__ = ["HEADERS", "cells", "notes", "render_measured"]
