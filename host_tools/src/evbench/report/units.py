"""Display of stored values: results keep SI base units; people read these.

Three significant digits everywhere, in a unit that keeps the number between 1
and 1000: 57.4 µs, 64.7 MiB, 5.86 KiB/s, 1.23k msg/s. Message sizes below
10 000 B stay in bytes (a reader compares them with a frame or an MTU) with one
decimal, since a size's median over an even count can fall between two bytes.
"""

from __future__ import annotations

import math
import re

_TIME_STEPS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
_SI_STEPS = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))
_BINARY_STEPS = ((1024.0**3, "GiB"), (1024.0**2, "MiB"), (1024.0, "KiB"), (1.0, "B"))
#: Sizes below this many bytes are shown in bytes.
BYTES_UP_TO = 10_000
#: Metrics that hold a process's memory, shown in MiB whatever their size.
MEMORY_METRICS = frozenset({"rss_max"})


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant digits (trailing zeros dropped, as %g does),
    never in exponent notation: 6004.57 -> 6000, not 6e+03."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    text = f"{value:.{digits}g}"
    if "e" not in text:
        return text
    exponent = math.floor(math.log10(abs(value)))
    decimals = digits - 1 - exponent
    rounded = round(value, decimals)
    if rounded != 0 and math.floor(math.log10(abs(rounded))) > exponent:  # 999.7 -> 1000
        decimals -= 1
    return f"{rounded:.{max(decimals, 0)}f}"


def _si(value: float, unit: str) -> str:
    """A unit without its own steps (J, W) with an SI prefix: 15.2 µJ, 1.21 W."""
    for scale, prefix in _SI_STEPS:
        if abs(value) >= scale or scale == _SI_STEPS[-1][0]:
            return f"{significant(value / scale)} {prefix}{unit}"
    raise AssertionError("unreachable: the last step always matches")


def _binary(value: float, suffix: str = "") -> str:
    for scale, name in _BINARY_STEPS:
        if abs(value) >= scale or scale == 1.0:
            return f"{significant(value / scale)} {name}{suffix}"
    raise AssertionError("unreachable: the last step has scale 1")


def format_value(value: float | None, unit: str, metric: str | None = None) -> str:
    """`value` in a readable unit, three significant digits: 57.4 µs, 995.5 B, 64.7 MiB."""
    if value is None:
        return "-"
    if unit == "s":
        for scale, name in _TIME_STEPS:
            if abs(value) >= scale or scale == 1e-9:
                return f"{significant(value / scale)} {name}"
    if unit == "bytes":
        if metric in MEMORY_METRICS:
            return f"{significant(value / 1024**2)} MiB"
        if abs(value) < BYTES_UP_TO:
            return f"{value:.1f} B"
        return _binary(value)
    if unit == "bytes/s":
        return _binary(value, "/s")
    if unit == "messages/s":
        if abs(value) >= 1000:
            return f"{significant(value / 1000)}k msg/s"
        return f"{significant(value)} msg/s"
    if unit == "messages":
        return f"{significant(value)} msg"
    if unit == "count":  # a number of events: the number says it
        return significant(value)
    if unit == "percent":
        return f"{value:.1f} %"
    if unit == "Hz":
        return f"{significant(value / 1e6)} MHz"
    if unit in ("J", "W") and value != 0:
        return _si(value, unit)
    return f"{significant(value)} {unit}"


def display_scale(values: list[float], unit: str) -> tuple[float, str]:
    """(divisor, unit label) that puts a series' typical value in a readable unit, as
    format_value would show it: seconds around 5.7e-05 -> (1e-06, "µs")."""
    typical = sorted(abs(v) for v in values)[len(values) // 2] if values else 0.0
    if unit == "s":
        return next(((s, n) for s, n in _TIME_STEPS if typical >= s), _TIME_STEPS[-1])
    if unit == "bytes" and typical >= BYTES_UP_TO:
        return next((s, n) for s, n in _BINARY_STEPS if typical >= s)
    if unit == "bytes":
        return 1.0, "B"
    if unit == "percent":
        return 1.0, "%"
    return 1.0, unit


def counted(n: int, what: str) -> str:
    """'8 processes', '1 process', '1 phase pair', '1 phase/codec': `what` is plural."""
    if n != 1:
        return f"{n} {what}"

    def singular(match: re.Match) -> str:  # processes -> process, pairs -> pair
        word = match.group(0)
        return word[:-2] if word.endswith("sses") else word[:-1]

    # The counted noun is the first plural word: 'phases per codec', 'phase pairs'.
    return f"{n} {re.sub(r'[A-Za-z]+s(?![A-Za-z])', singular, what, count=1)}"
