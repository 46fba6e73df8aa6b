"""The saturating sender: a window of messages always in flight, the real capacity.

After each reply the next message goes at once, so the link runs as fast as
the responder answers; the replies that arrive in the measured window, after
a warm-up, give messages and payload bytes per second. With a window of 1
this is a back-to-back ping-pong, and the transport RTTs are kept.
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
    seconds: float
    error: str | None = None
    #: Send to reply arrival of each counted message, s (with a window of 1: back-to-back RTT).
    rtt_transport: list[float] = field(default_factory=list)


def run_saturation(
    connection: client.Connection,
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
                    payload += exchange.sent_at[sequence][2]
                    rtt_transport.append((arrival - exchange.sent_at[sequence][1]) / 1e9)
                exchange.send_next()
        exchange.set_receive_timeout(0)
        client.drain(exchange, clock_ns() + wait_lost)
    except framing.PeerClosed as problem:
        error = f"the responder at {connection.address} went away: {problem}"
    return CapacityResult(counted, payload, duration_s, error, rtt_transport)
