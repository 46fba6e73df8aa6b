"""The system view: what each codec costs the product at the run's rate and streams.

For each profile of the link's periodic phases, one line per budget (context: each
codec's figure, no winner; the verdicts are the answer's):

    seed at 20 Hz x 1 stream: CPU  JSON 1.16 % of a core, Protobuf 0.95 % (client + responder)
    seed at 20 Hz x 1 stream: time JSON RTT 1.0 %, jitter 0.06 % of the 50 ms period; ...

A codec's share of a core is (client + responder CPU per message) x rate x streams,
each the median of its phases' figures; RTT and jitter (stdev) are the medians of its
phases' figures over the period (1 / rate). The bus budget's own fit line follows them
(glance.bus_fit). Figures come from the comparison's rows, never recomputed.
"""

from __future__ import annotations

from collections.abc import Sequence

from evbench.report.names import display_name
from evbench.report.units import format_value
from evbench_core.comparison import Comparison, Row, Side

#: The link's per-message CPU rows that add up to a codec's share of a core.
CPU_METRICS = ("cpu_per_msg_client", "cpu_per_msg_responder")


def _level(side: Side) -> float | None:
    shown = side.replicate_summary if side.replicates > 1 else None
    value = shown.median if shown is not None else side.summary.median
    return value if value == value else None  # NaN: nothing measured


def _periodic(rows: Sequence[Row], metric: str) -> Row | None:
    for row in rows:
        params = row.identity.params_dict
        if row.identity.metric == metric and params.get("phase") == "periodic":
            return row
    return None


def _percent(share: float) -> str:
    return f"{share * 100:.2g} %" if share < 0.1 else f"{share * 100:.0f} %"


def profile_lines(rows: Sequence[Row], comparison: Comparison, streams: int) -> list[str]:
    """The CPU and timing lines of one profile's rows (none without a periodic phase)."""
    rtt = _periodic(rows, "rtt")
    if rtt is None:
        return []
    rate = rtt.identity.params_dict.get("rate_hz")
    if not isinstance(rate, (int, float)) or rate <= 0:
        return []
    period = 1 / rate
    profile = rtt.identity.profile or "-"
    per = f"{profile} at {rate:g} Hz x {streams} stream{'s' if streams > 1 else ''}"
    lines = []
    cpu_rows = [row for metric in CPU_METRICS if (row := _periodic(rows, metric))]
    if len(cpu_rows) == len(CPU_METRICS):
        said = []
        for pick in (lambda row: row.baseline, lambda row: row.candidate):
            levels = [_level(pick(row)) for row in cpu_rows]
            if None in levels:
                break
            share = sum(level for level in levels if level is not None) * rate * streams
            said.append(f"{display_name(pick(cpu_rows[0]).codec)} {_percent(share)}")
        if len(said) == 2:
            lines.append(f"{per}: CPU {', '.join(said)} of a core (client + responder)")
    jitter = _periodic(rows, "jitter_stdev")
    timing = []
    for pick in (lambda row: row.baseline, lambda row: row.candidate):
        level = _level(pick(rtt))
        if level is None:
            continue
        text = f"{display_name(pick(rtt).codec)} RTT {_percent(level / period)}"
        jitter_level = _level(pick(jitter)) if jitter is not None else None
        if jitter_level is not None:
            text += f", jitter {_percent(jitter_level / period)}"
        timing.append(text)
    if timing:
        shown = format_value(period, "s", "rtt")
        lines.append(f"{per}: time {'; '.join(timing)} of the {shown} period")
    return lines


def lines(comparison: Comparison) -> list[str]:
    """Every profile's system view lines, in the comparison's order."""
    streams = comparison.margins.streams
    profiles: dict[str, list[Row]] = {}
    for row in comparison.rows:
        if row.identity.suite == "link":
            profiles.setdefault(row.identity.profile or "-", []).append(row)
    found = []
    for rows in profiles.values():
        found += profile_lines(rows, comparison, streams)
    return found


__all__ = ["lines", "profile_lines"]
