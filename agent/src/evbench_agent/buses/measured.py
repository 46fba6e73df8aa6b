"""The bus budget of a finished run: "Does it fit at 20 Hz?" from its measured sizes.

A run's records keep each codec's and profile's message size as a mean and a
largest value, not the bytes, so bit stuffing cannot be counted exactly here:
a row's busy time is the mean-size message without dynamic stuff bits (a lower
bound) and the largest message with worst-case stuffing (an upper bound), with
the same frames, headers and reply as `evbench budget` (buses/budget.py).

The sizes come from a record, which anyone can write: they are checked (a whole
number of bytes a link frame can carry), and a large message is never made.
A zero-filled message's cost grows linearly, one period of frames at a time
(16 ISO-TP consecutive frames, cycling their sequence number; a full TCP
segment; one UART byte), so beyond `EXACT_LIMIT` bytes it is worked from two
exact exchanges of a few kilobytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evbench_agent.buses import budget, ethernet
from evbench_agent.buses.budget import Bus, Direction, Exchange, Row
from evbench_agent.link import framing

#: The record of a message's size in the codec suite's results.
SIZE_SUITE, SIZE_METRIC = "codec", "size"
#: The largest message a link frame carries: its 4-byte length counts kind and sequence too.
MAX_MESSAGE = (1 << 32) - 1 - framing.HEADER.size
#: Messages up to this size are made and counted frame by frame; larger ones are extrapolated.
EXACT_LIMIT = 1 << 14


@dataclass(frozen=True)
class Skipped:
    """A codec and profile the budget leaves out, and why."""

    codec: str
    profile: str
    reason: str


def _reply(codec: str, profile: str, sequence: int) -> bytes:
    """The ack the codec sends in ack mode (the link's own encoder)."""
    from evbench_agent import codecs
    from evbench_agent.link import messages

    if codecs.original_name(codec) in budget.NATIVE_CAN_CODECS:
        from evbench_agent.payloads import dbc

        return dbc.blank_payload(messages.message_name(messages.ACK_PROFILE))
    return messages.bind(codec, profile).encode_ack(sequence, budget.TYPICAL_RECEIVE_NS)


def _native_message(profile: str, size: int) -> bytes:
    """A dbc message of `size` bytes: its content only sets stuff bits, which are bounded here.
    (Any other codec's message is `size` zero bytes, never made whole: `_zero_exchange`.)"""
    from evbench_agent import payloads
    from evbench_agent.link import messages
    from evbench_agent.payloads import dbc

    blank = dbc.blank_payload(messages.message_name(payloads.get(profile)))
    if len(blank) != size:
        raise ValueError(f"the DBC's frames are {len(blank)} bytes, the run measured {size}")
    return blank


def _size(value: Any, what: str) -> int:
    """A message size from a record: a whole number of bytes a link frame can carry."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"the {what} message size is not a number ({value!r:.40})")
    if not 0 <= value <= MAX_MESSAGE:
        raise ValueError(
            f"a {what} message of {value:.6g} bytes is more than a link frame carries "
            f"({MAX_MESSAGE} bytes)"
            if value > 0
            else f"a {what} message of {value:g} bytes"
        )
    return round(value)


def _period(bus: Bus) -> int:
    """Bytes after which a zero-filled message's frames repeat on `bus`."""
    if bus.kind in ("can", "canfd"):
        return 16 * (bus.frame_length - 1)  # 16 consecutive frames, sequence 0..15
    if bus.kind == "ethernet":
        return ethernet.MSS
    return 1


def _scaled(base: Direction, step: Direction, times: int) -> Direction:
    """`base` and `times` more of what `step` added to it."""
    return Direction(
        base.frames + times * (step.frames - base.frames),
        base.bits + times * (step.bits - base.bits),
        base.seconds + times * (step.seconds - base.seconds),
        base.worst_seconds + times * (step.worst_seconds - base.worst_seconds),
        base.bare_seconds + times * (step.bare_seconds - base.bare_seconds),
    )


def _zero_exchange(bus: Bus, size: int, reply: bytes) -> Exchange:
    """`budget.exchange` of a zero-filled `size`-byte message, without making a large one.

    Frames, bits without dynamic stuffing and with worst-case stuffing are exact; the
    exact-stuffing figures (unused here) differ by the stuff bits of the length fields."""
    if size <= EXACT_LIMIT:
        return budget.exchange(bus, bytes(size), reply)
    period = _period(bus)
    times, rest = divmod(size - EXACT_LIMIT, period)
    base = budget.exchange(bus, bytes(EXACT_LIMIT + rest), reply)
    step = budget.exchange(bus, bytes(EXACT_LIMIT + rest + period), reply)
    return Exchange(
        _scaled(base.request, step.request, times),
        base.reply,
        base.message_frames + times * (step.message_frames - base.message_frames),
    )


def rows_from_sizes(
    codec: str,
    profile: str,
    mean_size: float,
    max_size: int,
    count: int,
    buses: Sequence[Bus],
    rate_hz: float,
    ceiling: float = budget.DEFAULT_CEILING,
) -> list[Row]:
    """One row per bus for a codec and profile of which only the size's mean and max are known."""
    from evbench_agent import codecs

    native = codecs.original_name(codec) in budget.NATIVE_CAN_CODECS
    max_size = _size(max_size, "largest")
    typical_size = _size(mean_size, "mean")
    if typical_size > max_size:
        raise ValueError(f"the mean size {mean_size:g} is above the largest, {max_size}")
    if native:
        typical = _native_message(profile, typical_size)
        largest = _native_message(profile, max_size)
    reply = _reply(codec, profile, 0)
    made = []
    for bus in buses:
        if native:
            mean = budget.exchange(bus, typical, reply, 0, native)
            top = budget.exchange(bus, largest, reply, 0, native)
        else:
            mean = _zero_exchange(bus, typical_size, reply)
            top = _zero_exchange(bus, max_size, reply)
        made.append(
            Row(
                bus=bus.name,
                codec=codec,
                profile=profile,
                messages=count,
                mean_size=mean_size,
                max_size=max_size,
                mean_frames=mean.message_frames,
                max_frames=top.message_frames,
                mean_seconds=mean.busy_seconds(bus, bare=True),
                worst_seconds=top.busy_seconds(bus, worst=True),
                max_message_seconds=top.request.bare_seconds,
                period_s=1.0 / rate_hz,
                ceiling=ceiling,
                stuffing="bounds",
            )
        )
    return made


def from_records(
    records: Iterable[Mapping[str, Any]],
    rate_hz: float = 20.0,
    ceiling: float = budget.DEFAULT_CEILING,
    buses: Sequence[Bus] | None = None,
) -> tuple[list[Row], list[Skipped]]:
    """The budget of every codec and profile whose size a run recorded; and what it left out
    (a codec not installed here, a profile unknown here, sizes that do not match)."""
    from evbench_core.errors import EvbenchError

    chosen = buses or [budget.bus(name) for name in budget.DEFAULT_BUSES]
    rows: list[Row] = []
    skipped: list[Skipped] = []
    for record in records:
        if record.get("suite") != SIZE_SUITE or record.get("metric") != SIZE_METRIC:
            continue
        codec, profile = str(record.get("codec")), str(record.get("profile"))
        try:
            rows += rows_from_sizes(
                codec,
                profile,
                record["mean"],
                record["max"],
                int(record.get("n") or 0),
                chosen,
                rate_hz,
                ceiling,
            )
        except (EvbenchError, ValueError, KeyError, TypeError) as error:
            skipped.append(Skipped(codec, profile, str(error)))
    order = list(budget.BUSES)
    rows.sort(key=lambda row: (row.profile, order.index(row.bus), row.codec))
    return rows, skipped


def size_records(sample_sets: Iterable[Any]) -> list[dict[str, Any]]:
    """Size records (mean, max, n) of raw sample sets, as the run's summary would hold them
    (for `evbench run`, which prints the budget before any summary is written)."""
    sizes: dict[tuple[str, str], list[float]] = {}
    for sample_set in sample_sets:
        if sample_set.suite == SIZE_SUITE and sample_set.metric == SIZE_METRIC:
            key = (str(sample_set.profile), str(sample_set.codec))
            sizes.setdefault(key, []).extend(sample_set.values)
    return [
        {
            "suite": SIZE_SUITE,
            "metric": SIZE_METRIC,
            "profile": profile,
            "codec": codec,
            "n": len(values),
            "mean": sum(values) / len(values),
            "max": max(values),
        }
        for (profile, codec), values in sizes.items()
        if values
    ]


__all__ = ["Skipped", "from_records", "size_records"]
