"""The saturating sender: a window of messages always in flight, the real capacity.

After each reply the next message goes at once, so the link runs as fast as
the responder answers; the replies that arrive in the measured window, after
a warm-up, give messages and payload bytes per second, over the measured
time from the window's opening to the last counted reply. Each counted
message's transport RTT (send to reply, less the responder's processing time)
is kept: with a window of 1 a back-to-back ping-pong, with more the time a
message waits behind the others in flight as well.

`run_interleaved` measures several codecs' capacity in one pair of short
alternating blocks (RMIT: randomised multiple interleaved trials, Abedi and
Brecht, ICPE 2017), each codec on its own connection, one codec saturating
at a time: every block opens its codec's window after a warm-up, measures,
and takes in every reply before the next codec's block starts. A codec's
figures are its blocks' together: replies over measured seconds, every
counted RTT.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evbench_agent.link import client, framing
from evbench_agent.link.timing import clock_ns


@dataclass
class CapacityResult:
    messages: int = 0
    payload_bytes: int = 0
    #: Measured: from the window's opening to the arrival of the last counted reply
    #: (summed over a codec's blocks).
    seconds: float = 0.0
    error: str | None = None
    #: Send to reply arrival less the responder's processing time, s, per counted message.
    rtt_transport: list[float] = field(default_factory=list)
    #: Every message sent on the connection, warm-up included (energy's count).
    total_sent: int = 0
    #: Each block's start and end (its last reply taken in), monotonic ns.
    spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class _Counted:
    """Which replies of a block were looked at, and the last one counted."""

    measure_from: int
    end: int
    last: int
    #: How many of the exchange's replies were looked at already.
    seen: int

    def take(self, exchange: client.Exchange, result: CapacityResult) -> int:
        """Count the replies taken in since the last call that arrived in the measured
        window into `result`; how many arrived before the window closed (each makes
        room for a new message)."""
        room = 0
        for sequence in exchange.arrivals[self.seen :]:
            arrival, _decoded, processing = exchange.replies[sequence]
            if arrival > self.end:
                continue  # the window has closed: no new message
            room += 1
            if arrival >= self.measure_from:
                result.messages += 1
                self.last = max(self.last, arrival)
                _encode_start, sent, payload_bytes, _frame_bytes = exchange.sent_at[sequence]
                result.payload_bytes += payload_bytes
                result.rtt_transport.append((arrival - sent - processing) / 1e9)
        self.seen = len(exchange.arrivals)
        return room


def _block(
    exchange: client.Exchange,
    result: CapacityResult,
    window: int,
    duration_s: float,
    warmup_s: float,
    wait_lost: int,
) -> None:
    """Keep `window` messages in flight for `warmup_s` + `duration_s`; add the replies
    that arrive in the last `duration_s` to `result`; take in every reply before
    returning, so that nothing of this block is in flight in the next."""
    start = clock_ns()
    measure_from = start + round(warmup_s * 1e9)
    end = measure_from + round(duration_s * 1e9)
    # (An interleaved codec's exchange holds its earlier blocks' replies: not this one's.)
    counted = _Counted(measure_from, end, last=measure_from, seen=len(exchange.arrivals))
    exchange.set_receive_timeout(wait_lost / 1e9)  # a window is always in flight: block
    try:
        for _ in range(window):
            exchange.send_next()
        while clock_ns() < end:
            if not exchange.block():
                raise framing.PeerClosed(f"no reply for {wait_lost / 1e9:g} s")
            for _ in range(counted.take(exchange, result)):
                exchange.send_next()
        exchange.set_receive_timeout(0)
        client.drain(exchange, clock_ns() + wait_lost)
        # Replies that arrived in the window but were taken in after it: read while a
        # long burst of large messages was being sent (Connection.send keeps them).
        counted.take(exchange, result)
    except framing.FrameError as problem:
        result.error = client.went_wrong(exchange.connection.address, problem)
    result.seconds += (counted.last - measure_from) / 1e9
    result.total_sent = exchange.next_sequence
    result.spans.append((start, clock_ns()))


def run_saturation(
    connection: client.LinkConnection,
    data: list[Any],
    window: int,
    duration_s: float,
    warmup_s: float,
    deadline_s: float,
) -> CapacityResult:
    """Keep `window` messages in flight for `warmup_s` + `duration_s`; count the
    replies that arrive in the last `duration_s`: the real throughput."""
    result = CapacityResult()
    wait_lost = round(client.lost_after(deadline_s) * 1e9)
    _block(client.Exchange(connection, data), result, window, duration_s, warmup_s, wait_lost)
    return result


def run_interleaved(
    links: Sequence[tuple[client.LinkConnection, list[Any]]],
    window: int,
    duration_s: float,
    warmup_s: float,
    blocks: int,
    deadline_s: float,
) -> list[CapacityResult]:
    """Each link's capacity in `blocks` blocks of `warmup_s` + `duration_s / blocks`,
    the links' blocks alternating in a counterbalanced order (A B, B A, A B, ...: no
    link always first or always after the same one). One result per link, in order;
    a link whose responder went away ends the pair, its result carrying the error."""
    wait_lost = round(client.lost_after(deadline_s) * 1e9)
    exchanges = [client.Exchange(connection, data) for connection, data in links]
    results = [CapacityResult() for _ in links]
    for block in range(blocks):
        order = list(range(len(links)))
        if block % 2:
            order.reverse()
        for index in order:
            result = results[index]
            _block(exchanges[index], result, window, duration_s / blocks, warmup_s, wait_lost)
            if result.error:
                return results
    return results
