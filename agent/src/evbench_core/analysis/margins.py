"""Equivalence margins: how large a difference must be before it matters to the product.

Every tested metric has a margin fixed before the data (`DEFAULTS`), printed beside
its verdict and overridable per run (`--margin NAME=VALUE`, spec key `margins`). A
margin is one of four kinds:

- ``5%``: relative, a band of 1 +/- 0.05 around the ratio candidate / baseline
  (codec operation times, and link rows that have no period: the capacity phase);
- ``50us``: absolute, in the metric's unit (seconds), on the paired difference
  candidate - baseline;
- ``0.1%period``: a share of the period the run asked for (1 / rate_hz), resolved
  per row to an absolute margin (50 µs at 20 Hz): the link's timing rows;
- ``0.1%core``: a share of one core at the run's rate and stream count, resolved to
  CPU seconds per message (0.001 / (20 Hz x 1 stream) = 50 µs): CPU per message.

A metric takes only the kinds that fit its rows (`ROW_KINDS`: capacity only a share of
its ratio, codec operations no share of a period, only CPU rows a share of a core);
`parse` refuses the rest. A row whose margin is a share of the period or of a core but
whose record has no rate (RTT in the link's capacity phase) gets `UNPACED` instead. Why
each default is what it is: docs/method.md, "Margins".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evbench_core.errors import UserError

RELATIVE = "relative"
SECONDS = "seconds"
PERIOD = "period"
CORE = "core"

#: The two scales a verdict is decided on: the ratio's band, or the difference's.
RATIO = "ratio"
DIFFERENCE = "difference"


@dataclass(frozen=True)
class Margin:
    """A margin as given: its kind and value (a fraction, or seconds for SECONDS)."""

    kind: str
    value: float

    @property
    def text(self) -> str:
        """How it is written on the command line: 5%, 50us, 0.1%period, 0.1%core."""
        if self.kind == SECONDS:
            return f"{self.value * 1e6:g}us"
        suffix = {RELATIVE: "", PERIOD: "period", CORE: "core"}[self.kind]
        return f"{self.value * 100:g}%{suffix}"


@dataclass(frozen=True)
class Band:
    """A margin resolved for one row: the verdict's scale and the band's half width
    (a fraction of the ratio, or seconds of the difference), and how to say it."""

    scale: str
    half_width: float
    words: str

    @property
    def ratio_limits(self) -> tuple[float, float]:
        return 1 - self.half_width, 1 + self.half_width


#: Codec operations: relative. A/A runs here detect 4 to 7 % on these rows and carry a
#: role bias near 1 %; no codec choice turns on less than 5 % of a sub-millisecond call.
CODEC_OPERATION = Margin(RELATIVE, 0.05)
#: Link timing at a period: 0.1 % of it, 50 µs at 20 Hz, Linux's default timer slack, the
#: resolution a non-real-time sender's own wake-ups have; the seed's smallest claimed
#: effect (jitter 332 µs on the AM62x) is 6.6 times that.
LINK_TIMING = Margin(PERIOD, 0.001)
#: CPU per message: 0.1 % of one core at the run's rate and streams (50 µs at 20 Hz).
LINK_CPU = Margin(CORE, 0.001)
#: Rows with no period (saturation: capacity, RTT at capacity): relative.
UNPACED = Margin(RELATIVE, 0.05)

DEFAULTS: dict[str, Margin] = {
    "encode": CODEC_OPERATION,
    "decode": CODEC_OPERATION,
    "decode_access": CODEC_OPERATION,
    "rtt": LINK_TIMING,
    "rtt_transport": LINK_TIMING,
    "jitter_stdev": LINK_TIMING,
    "jitter_rfc3550": LINK_TIMING,
    "rtt_delta_abs": LINK_TIMING,
    "send_lateness": LINK_TIMING,
    "cpu_per_msg_client": LINK_CPU,
    "cpu_per_msg_responder": LINK_CPU,
    "capacity_msgs": UNPACED,
}
#: A tested metric this table does not name.
FALLBACK = Margin(RELATIVE, 0.05)

#: Names a --margin may give for several metrics at once.
GROUPS: dict[str, tuple[str, ...]] = {
    "codec": ("encode", "decode", "decode_access"),
    "jitter": ("jitter_stdev", "jitter_rfc3550", "rtt_delta_abs"),
    "cpu": ("cpu_per_msg_client", "cpu_per_msg_responder"),
    "capacity": ("capacity_msgs",),
}

#: The kinds of margin a metric's rows take (any other is refused, never swapped): the
#: capacity phase counts messages a second and has no period, so only a share of its
#: ratio; a codec operation is a time per call with no period; only CPU rows take a share
#: of a core. A metric not named here takes `_TIMING_KINDS`.
_TIMING_KINDS = (RELATIVE, SECONDS, PERIOD)
ROW_KINDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(GROUPS["codec"], (RELATIVE, SECONDS)),
    **dict.fromkeys(GROUPS["cpu"], (*_TIMING_KINDS, CORE)),
    "capacity_msgs": (RELATIVE,),
}
#: Each kind as written on the command line.
_WRITTEN: dict[str, tuple[str, ...]] = {
    RELATIVE: ("N%",),
    SECONDS: ("Nus", "Nms", "Ns"),
    PERIOD: ("N%period",),
    CORE: ("N%core",),
}

_VALUE = re.compile(r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(%period|%core|%|us|µs|ms|s)")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_KINDS = {"%": RELATIVE, "%period": PERIOD, "%core": CORE}


def parse_value(text: str) -> Margin:
    """'5%', '50us', '0.2ms', '0.1%period' or '0.1%core' as a Margin."""
    found = _VALUE.fullmatch(text.strip())
    if not found:
        raise UserError(
            f"margin {text!r} is not a margin",
            hint="give N% (relative), Nus, Nms or Ns (absolute), N%period or N%core",
        )
    number, unit = float(found.group(1)), found.group(2)
    if unit in _SECONDS:
        value = number * _SECONDS[unit]
        if not 0 < value <= 1.0:
            raise UserError(f"margin {text!r}: an absolute margin is above 0 and at most 1 s")
        return Margin(SECONDS, value)
    if not 0 < number < 100:
        raise UserError(f"margin {text!r}: a share is above 0 % and below 100 %")
    return Margin(_KINDS[unit], number / 100)


def _names(name: str) -> tuple[str, ...]:
    if name in GROUPS:
        return GROUPS[name]
    if name in DEFAULTS:
        return (name,)
    known = ", ".join([*GROUPS, *DEFAULTS])
    raise UserError(f"--margin: no tested metric or group {name!r}", hint=f"known: {known}")


def parse(items: list[str] | Mapping[str, str] | None) -> dict[str, str]:
    """--margin NAME=VALUE items (or a spec's mapping) as metric -> margin text, checked:
    a group name sets each of its metrics; a later item overrides an earlier one."""
    if not items:
        return {}
    pairs = list(items.items()) if isinstance(items, Mapping) else [_split(i) for i in items]
    chosen: dict[str, str] = {}
    for name, value in pairs:
        margin = parse_value(str(value))
        for metric in _names(name.strip()):
            kinds = ROW_KINDS.get(metric, _TIMING_KINDS)
            if margin.kind not in kinds:
                *others, last = [unit for kind in kinds for unit in _WRITTEN[kind]]
                units = f"{', '.join(others)} or {last}" if others else f"only {last}"
                raise UserError(f"--margin {name}={value}: {metric} rows take {units}")
            chosen[metric] = margin.text
    return chosen


def _split(item: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or not name.strip():
        raise UserError(f"--margin {item!r}: give NAME=VALUE", hint="e.g. --margin jitter=50us")
    return name, value


def margin_of(metric: str, chosen: Mapping[str, str] | None = None) -> Margin:
    """The margin of `metric`: the run's choice, else the default."""
    if chosen and metric in chosen:
        return parse_value(chosen[metric])
    return DEFAULTS.get(metric, FALLBACK)


def _micro(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def resolve(
    metric: str,
    params: Mapping[str, Any],
    chosen: Mapping[str, str] | None = None,
    streams: int = 1,
) -> Band:
    """The band of one row: its metric's margin, made absolute at the row's rate where
    the margin is a share of the period or of a core (module docstring)."""
    margin = margin_of(metric, chosen)
    rate = params.get("rate_hz")
    paced = isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0
    if margin.kind in (PERIOD, CORE) and not paced:
        margin = UNPACED
    if margin.kind == RELATIVE:
        return Band(RATIO, margin.value, f"{margin.value * 100:g} %")
    if margin.kind == SECONDS:
        return Band(DIFFERENCE, margin.value, _micro(margin.value))
    assert isinstance(rate, (int, float))
    if margin.kind == PERIOD:
        seconds = margin.value / rate
        words = f"{_micro(seconds)}, {margin.value * 100:g} % of the {_micro(1 / rate)} period"
        return Band(DIFFERENCE, seconds, words)
    seconds = margin.value / (rate * streams)
    per = f"{rate:g} Hz" + (f" x {streams} streams" if streams > 1 else "")
    words = f"{_micro(seconds)}/msg, {margin.value * 100:g} % of a core at {per}"
    return Band(DIFFERENCE, seconds, words)


__all__ = [
    "DEFAULTS",
    "DIFFERENCE",
    "RATIO",
    "Band",
    "Margin",
    "margin_of",
    "parse",
    "parse_value",
    "resolve",
]
