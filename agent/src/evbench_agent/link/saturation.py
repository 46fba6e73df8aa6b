"""The saturating sender: a window of messages always in flight, the real capacity.

After each reply the next message goes at once, so the link runs as fast as
the responder answers; the replies that arrive in the measured window, after
a warm-up, give messages and payload bytes per second, over the measured
time from the window's opening to the last counted reply. Each counted
message's transport RTT (send to reply, less the responder's processing time)
is kept: with a window of 1 a back-to-back ping-pong, with more the time a
message waits behind the others in flight as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evbench_agent.link import client, framing
from evbench_agent.link.timing import clock_ns


@dataclass(frozen=True)
class CapacityResult:
    messages: int
    payload_bytes: int
    #: Measured: from the window's opening to the arrival of the last counted reply.
    seconds: float
    error: str | None = None
    #: Send to reply arrival less the responder's processing time, s, per counted message.
    rtt_transport: list[float] = field(default_factory=list)
    #: Every message sent on the connection, warm-up included (energy's count).
    total_sent: int = 0


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
    exchange = client.Exchange(connection, data)
    wait_lost = round(client.lost_after(deadline_s) * 1e9)
    start = clock_ns()
    measure_from = start + round(warmup_s * 1e9)
    end = measure_from + round(duration_s * 1e9)
    counted = payload = 0
    last_counted = measure_from
    rtt_transport = []
    error = None
    exchange.set_receive_timeout(wait_lost / 1e9)  # a window is always in flight: block
    try:
        for _ in range(window):
            exchange.send_next()
        while clock_ns() < end:
            before = len(exchange.arrivals)
            if not exchange.block():
                raise framing.PeerClosed(f"no reply for {wait_lost / 1e9:g} s")
            for sequence in exchange.arrivals[before:]:
                arrival = exchange.replies[sequence][0]
                if arrival > end:
                    continue  # the window has closed: no new message
                if arrival >= measure_from:
                    counted += 1
                    last_counted = arrival
                    payload += exchange.sent_at[sequence][2]
                    processing = exchange.replies[sequence][2]
                    sent = exchange.sent_at[sequence][1]
                    rtt_transport.append((arrival - sent - processing) / 1e9)
                exchange.send_next()
        exchange.set_receive_timeout(0)
        client.drain(exchange, clock_ns() + wait_lost)
    except framing.PeerClosed as problem:
        error = f"the responder at {connection.address} went away: {problem}"
    seconds = (last_counted - measure_from) / 1e9
    return CapacityResult(counted, payload, seconds, error, rtt_transport, exchange.next_sequence)
