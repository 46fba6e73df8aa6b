"""Display of stored values: results keep SI base units; people read these."""

from __future__ import annotations

_TIME_STEPS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def _significant(value: float, digits: int = 3) -> str:
    if value == 0:
        return "0"
    text = f"{value:.{digits}g}"
    if "e" in text:
        text = f"{value:.{max(digits - 1, 0)}f}"
    return text


def format_value(value: float | None, unit: str) -> str:
    """`value` in a readable unit, three significant digits: 57.4 µs, 995.5 B."""
    if value is None:
        return "-"
    if unit == "s":
        for scale, name in _TIME_STEPS:
            if abs(value) >= scale or scale == 1e-9:
                return f"{_significant(value / scale)} {name}"
    if unit == "bytes":
        return f"{value:.1f} B"
    if unit == "bytes/s":
        return f"{_significant(value / 1024)} KiB/s"
    if unit == "messages/s":
        if abs(value) >= 1000:
            return f"{_significant(value / 1000)}k msg/s"
        return f"{_significant(value)} msg/s"
    if unit == "messages":
        return f"{_significant(value)} msg"
    if unit == "percent":
        return f"{value:.1f} %"
    if unit == "Hz":
        return f"{_significant(value / 1e6)} MHz"
    return f"{_significant(value)} {unit}"
