"""The bus budget: what one 20 Hz exchange (message and its reply) costs on each bus.

Every figure is computed from the bytes the link would send: the evbench
frame (13-byte header: length, kind, sequence) around each encoded message,
and the REPLY (header, 8 bytes of processing time, the ack or the echo),
segmented and framed as the bus does it. docs/buses.md has the rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import fmean

from evbench_agent.buses import can_classic, can_fd, ethernet, isotp, uart
from evbench_agent.link import framing, uart_framing
from evbench_core.errors import UserError

#: The bus-load ceiling a combination must stay under to "fit" (a share of the period).
DEFAULT_CEILING = 0.40
#: A typical responder processing time and receipt clock (they set the reply's bytes).
TYPICAL_PROCESSING_NS = 300_000
TYPICAL_RECEIVE_NS = 3_600 * 10**9
REQUEST_ID, RESPONSE_ID = 0x7E0, 0x7E8


@dataclass(frozen=True)
class Bus:
    name: str
    kind: str  # "can", "canfd", "uart", "ethernet"
    bit_rate: int
    data_rate: int = 0
    frame_length: int = 8
    extended_ids: bool = False

    @property
    def shared(self) -> bool:
        """CAN is one medium for both directions; UART (RS-232) and 100BASE-T1 are full duplex."""
        return self.kind in ("can", "canfd")


BUSES: dict[str, Bus] = {
    bus.name: bus
    for bus in (
        Bus("can-500k", "can", 500_000),
        Bus("can-500k-29bit", "can", 500_000, extended_ids=True),
        Bus("canfd-500k-2M", "canfd", 500_000, 2_000_000, 64),
        Bus("canfd-500k-5M", "canfd", 500_000, 5_000_000, 64),
        Bus("uart-115200", "uart", 115_200),
        Bus("uart-921600", "uart", 921_600),
        Bus("100base-t1", "ethernet", ethernet.RATE),
    )
}
DEFAULT_BUSES = ("can-500k", "canfd-500k-2M", "uart-115200")


def bus(name: str) -> Bus:
    try:
        return BUSES[name]
    except KeyError:
        raise UserError(f"unknown bus {name!r}", f"choose from {', '.join(BUSES)}") from None


@dataclass(frozen=True)
class Direction:
    """One direction's share of an exchange: frames, bits, seconds on the wire."""

    frames: int
    bits: int
    seconds: float
    worst_seconds: float
    #: Without dynamic stuff bits (a lower bound where the bytes are not known).
    bare_seconds: float


#: A frame's bits depend only on its bytes and id, and an ISO-TP message repeats the
#: same few frames (the padding, sequence numbers 0-15): counted once each, not bit by
#: bit per frame (a full run's budget in the report took 1.2 s, now a few ms).
_classic_frame_bits = lru_cache(maxsize=4096)(can_classic.frame_bits)
_fd_frame_bits = lru_cache(maxsize=4096)(can_fd.frame_bits)


def _can_frames(bus: Bus, frames: Iterable[bytes], can_id: int) -> Direction:
    count, bits, seconds, worst, bare = 0, 0, 0.0, 0.0, 0.0
    for data in frames:
        count += 1
        if bus.kind == "can":
            frame = _classic_frame_bits(bytes(data), can_id, bus.extended_ids)
            bits += frame.total
            seconds += frame.total / bus.bit_rate
            worst += frame.worst_total / bus.bit_rate
            bare += frame.unstuffed / bus.bit_rate
        else:
            fd = _fd_frame_bits(bytes(data), can_id)
            bits += fd.nominal + fd.nominal_stuff + fd.data + fd.data_stuff
            seconds += fd.seconds(bus.bit_rate, bus.data_rate)
            worst += fd.seconds(bus.bit_rate, bus.data_rate, worst=True)
            bare += fd.nominal / bus.bit_rate + fd.data / bus.data_rate
    return Direction(count, bits, seconds, worst, bare)


def _add(first: Direction, second: Direction) -> Direction:
    return Direction(
        first.frames + second.frames,
        first.bits + second.bits,
        first.seconds + second.seconds,
        first.worst_seconds + second.worst_seconds,
        first.bare_seconds + second.bare_seconds,
    )


def direction(bus: Bus, frame: bytes, sender_id: int, receiver_id: int) -> Direction:
    """One evbench frame (length prefix included) sent one way, with what it makes
    the other end send back on a shared bus (ISO-TP flow control)."""
    if bus.kind in ("can", "canfd"):
        segmented = isotp.segment(frame, bus.frame_length)
        sent = _can_frames(bus, segmented.frames, sender_id)
        return _add(sent, _can_frames(bus, segmented.flow_control, receiver_id))
    if bus.kind == "uart":
        size = len(frame) + uart_framing.OVERHEAD
        seconds = uart.seconds(size, bus.bit_rate)
        return Direction(1, size * uart.bits_per_byte(), seconds, seconds, seconds)
    segments = ethernet.tcp_segments(len(frame))
    seconds = segments.bits / bus.bit_rate
    return Direction(segments.frames, segments.bits, seconds, seconds, seconds)


#: Codecs whose payload is CAN frames of its own (dbc): on CAN they go out as those frames.
NATIVE_CAN_CODECS = ("dbc",)


def native_can_frames(bus: Bus, payload: bytes) -> list[tuple[int, bytes]]:
    """A dbc payload's own CAN frames as `bus` sends them: the CAN FD messages as they are;
    on classic CAN each message's 8-byte slices (no signal of the DBC crosses one), each
    counted with its message's id. No evbench header, no ISO-TP."""
    from evbench_agent.payloads import dbc

    sent = []
    for can_id, data in dbc.frames(payload):
        can_id &= 0x1FFF_FFFF
        if bus.kind == "canfd":
            sent.append((can_id, data))
        else:
            sent += [(can_id, data[start : start + 8]) for start in range(0, len(data), 8)]
    return sent


def _native_direction(bus: Bus, payload: bytes) -> Direction:
    total = Direction(0, 0, 0.0, 0.0, 0.0)
    for can_id, data in native_can_frames(bus, payload):
        total = _add(total, _can_frames(bus, [data], can_id))
    return total


@dataclass(frozen=True)
class Exchange:
    request: Direction
    reply: Direction
    #: The request's own frames (without flow control): "frames per message".
    message_frames: int

    def busy_seconds(self, bus: Bus, worst: bool = False, bare: bool = False) -> float:
        """Time the medium is busy: both directions on a shared bus, the busier one otherwise
        (exact stuffing; `worst`: worst-case stuffing; `bare`: no dynamic stuffing)."""
        if worst:
            request, reply = self.request.worst_seconds, self.reply.worst_seconds
        elif bare:
            request, reply = self.request.bare_seconds, self.reply.bare_seconds
        else:
            request, reply = self.request.seconds, self.reply.seconds
        return request + reply if bus.shared else max(request, reply)


def exchange(
    bus: Bus, message: bytes, reply_body: bytes, sequence: int = 0, native_can: bool = False
) -> Exchange:
    """One message and its reply on `bus`; `native_can`: both are dbc payloads, which a CAN
    bus carries as their own frames (the reply is the LinkAck frame, or the message again)."""
    if native_can and bus.kind in ("can", "canfd"):
        request = _native_direction(bus, message)
        return Exchange(request, _native_direction(bus, reply_body), request.frames)
    request_frame = framing.pack(framing.MESSAGE, sequence, message)
    reply_frame = framing.pack_reply(sequence, TYPICAL_PROCESSING_NS, reply_body)
    request = direction(bus, request_frame, REQUEST_ID, RESPONSE_ID)
    reply = direction(bus, reply_frame, RESPONSE_ID, REQUEST_ID)
    if bus.kind in ("can", "canfd"):
        frames = len(isotp.segment(request_frame, bus.frame_length).frames)
    else:
        frames = request.frames
    return Exchange(request, reply, frames)


@dataclass(frozen=True)
class Row:
    """One codec on one bus at one rate: a row of the budget table."""

    bus: str
    codec: str
    profile: str
    messages: int
    mean_size: float
    max_size: int
    mean_frames: float
    max_frames: int
    #: Busy time per exchange: mean with exact stuffing, and the largest message
    #: with worst-case stuffing (seconds).
    mean_seconds: float
    worst_seconds: float
    #: The largest message alone, one way (exact stuffing): can it leave once per period?
    max_message_seconds: float
    period_s: float
    ceiling: float
    #: "exact": stuffing counted on the encoded bytes; "bounds": only sizes known (a run's
    #: records), mean without dynamic stuffing, worst with worst-case stuffing.
    stuffing: str = "exact"

    @property
    def mean_share(self) -> float:
        return self.mean_seconds / self.period_s

    @property
    def worst_share(self) -> float:
        return self.worst_seconds / self.period_s

    @property
    def verdict(self) -> str:
        if self.max_message_seconds > self.period_s or self.worst_seconds > self.period_s:
            return "cannot sustain"
        if self.mean_share > self.ceiling:
            return "over ceiling"
        if self.worst_share > self.ceiling:
            return "marginal"
        return "fits"


def rows(
    bus: Bus,
    codec: str,
    profile: str,
    messages: Sequence[bytes],
    replies: Sequence[bytes],
    rate_hz: float,
    ceiling: float = DEFAULT_CEILING,
    native_can: bool = False,
) -> Row:
    """The budget row for `messages` (and their replies) on `bus` at `rate_hz`."""
    if not messages or len(messages) != len(replies):
        raise ValueError("need one reply per message, and at least one message")
    if rate_hz <= 0:
        raise UserError(f"the rate must be above 0 Hz, not {rate_hz:g}")
    exchanges = [
        exchange(bus, message, reply, index, native_can)
        for index, (message, reply) in enumerate(zip(messages, replies, strict=True))
    ]
    sizes = [len(message) for message in messages]
    return Row(
        bus=bus.name,
        codec=codec,
        profile=profile,
        messages=len(messages),
        mean_size=fmean(sizes),
        max_size=max(sizes),
        mean_frames=fmean(item.message_frames for item in exchanges),
        max_frames=max(item.message_frames for item in exchanges),
        mean_seconds=fmean(item.busy_seconds(bus) for item in exchanges),
        worst_seconds=max(item.busy_seconds(bus, worst=True) for item in exchanges),
        max_message_seconds=max(item.request.seconds for item in exchanges),
        period_s=1.0 / rate_hz,
        ceiling=ceiling,
    )


def codec_rows(
    codec: str,
    profile: str,
    buses: Sequence[Bus],
    rate_hz: float,
    count: int,
    seed: int = 1,
    mode: str = "ack",
    ceiling: float = DEFAULT_CEILING,
) -> list[Row]:
    """Encode `count` payloads of `profile` with `codec` and budget them on every bus."""
    from evbench_agent.link import messages as link_messages

    link = link_messages.bind(codec, profile)
    encoded = [link.encode(item) for item in link.sample_data(count, seed)]
    if mode == "ack":
        replies = [link.encode_ack(index, TYPICAL_RECEIVE_NS) for index in range(count)]
    elif mode == "echo":
        replies = encoded
    else:
        raise UserError(f"unknown reply mode {mode!r}", "choose ack or echo")
    from evbench_agent import codecs

    native = codecs.original_name(codec) in NATIVE_CAN_CODECS
    return [rows(bus, codec, profile, encoded, replies, rate_hz, ceiling, native) for bus in buses]


__all__ = ["DEFAULT_CEILING", "Row"]
