"""The bus budget as text: "Does it fit at N Hz?" (the host's `evbench budget` prints it)."""

from __future__ import annotations

from collections.abc import Sequence

from evbench_agent.buses.budget import NATIVE_CAN_CODECS, Row


def _frames(row: Row) -> str:
    if row.max_frames == round(row.mean_frames, 3):
        return f"{row.max_frames}"
    return f"{row.mean_frames:.1f}/{row.max_frames}"


def render(rows: Sequence[Row], rate_hz: float, mode: str, seed: int) -> str:
    """A table: one row per bus and codec, the verdict last."""
    if not rows:
        return "no budget rows"
    first = rows[0]
    lines = [
        f"Does it fit at {rate_hz:g} Hz? profile {first.profile}, period "
        f"{first.period_s * 1e3:g} ms, {mode} mode, {first.messages} payloads (seed {seed}), "
        f"bus-load ceiling {first.ceiling * 100:g} %",
        "busy = message + reply (+ ISO-TP flow control) on a shared CAN bus, the busier"
        " direction on a full-duplex line; exact stuffing (mean) and worst-case stuffing"
        " of the largest message (worst)",
    ]
    if any(row.codec in NATIVE_CAN_CODECS for row in rows):
        lines.append(
            "dbc on CAN: its own CAN frames (64-byte CAN FD messages; on classic CAN their"
            " 8-byte slices), no evbench header, no ISO-TP; the reply is its LinkAck frame"
        )
    header = (
        f"{'bus':<16} {'codec':<14} {'bytes mean/max':>15} {'frames/msg':>11}"
        f" {'busy ms mean':>12} {'worst':>7} {'share mean':>10} {'worst':>7}  verdict"
    )
    lines += [header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row.bus:<16} {row.codec:<14} {f'{row.mean_size:.1f}/{row.max_size}':>15}"
            f" {_frames(row):>11} {row.mean_seconds * 1e3:>12.2f} {row.worst_seconds * 1e3:>7.2f}"
            f" {row.mean_share * 100:>9.1f}% {row.worst_share * 100:>6.1f}%  {row.verdict}"
        )
    return "\n".join(lines)
