"""100BASE-T1 (automotive Ethernet, 100 Mbit/s full duplex) carrying the link's TCP stream.

On the wire each Ethernet frame is preamble (7) and SFD (1), destination and
source MAC (6 + 6), EtherType (2), a payload of 46..1500 bytes, FCS (4) and an
inter-packet gap of 12 byte times. The payload is IPv4 (20 bytes, no options)
and TCP (20 bytes plus 12 of the timestamp option Linux sends by default),
so a segment carries at most 1500 - 52 = 1448 bytes of the stream.
"""

from __future__ import annotations

from typing import NamedTuple

RATE = 100_000_000
#: Preamble, SFD, MACs, EtherType, FCS and the inter-packet gap.
FRAME_OVERHEAD = 7 + 1 + 6 + 6 + 2 + 4 + 12
MIN_PAYLOAD = 46
MTU = 1500
IP_TCP_HEADERS = 20 + 20 + 12
MSS = MTU - IP_TCP_HEADERS


class Segments(NamedTuple):
    frames: int
    bits: int


def tcp_segments(stream_bytes: int) -> Segments:
    """The Ethernet frames and the bits on the wire for `stream_bytes` of TCP payload
    sent as full segments (TCP_NODELAY: one write, one burst)."""
    frames, bits, left = 0, 0, stream_bytes
    while left > 0 or frames == 0:
        carried = min(left, MSS)
        payload = max(MIN_PAYLOAD, IP_TCP_HEADERS + carried)
        bits += (payload + FRAME_OVERHEAD) * 8
        frames += 1
        left -= carried
    return Segments(frames, bits)
