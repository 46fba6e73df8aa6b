"""Link figures from what a phase measured: RTTs, jitter, lateness, bandwidth, CPU.

All results are in SI base units (seconds, bytes per second). Per-message
figures are lists (one value per message); the others are one value per phase.

- `rtt`: from the start of encoding to the end of decoding the reply.
- `rtt_transport`: from the send to the reply's arrival, less the responder's
  own processing time (which it reports in each reply): the same in echo and
  ack mode, whatever each codec costs the responder.
- `send_lateness`: how late the sender sent after each tick: the sender's own
  punctuality (it sleeps twice per tick), not the board's timer latency, which
  the run's context records apart (`wakeup_latency`).
- bandwidth: the bytes of the messages between the first and the last measured
  send, over the measured time between those two sends.
- `lost`: messages with no reply within `lost_after(deadline)` of their own
  send; they are left out of the RTTs.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence

from evbench_agent.link.client import PhaseResult

#: What `bandwidth_wire` adds to each frame: Ethernet (14 header + 4 FCS + 8
#: preamble and start delimiter + 12 interframe gap), IPv4 (20, no options) and
#: TCP with the timestamp option (20 + 12), per segment of at most MSS bytes.
SEGMENT_OVERHEAD = 14 + 4 + 8 + 12 + 20 + 20 + 12
MTU = 1500
MSS = MTU - 20 - 20 - 12
WIRE_ASSUMPTIONS = (
    "client to responder only; Ethernet MTU 1500, IPv4, TCP with timestamps: "
    f"{SEGMENT_OVERHEAD} B per segment of at most {MSS} B; pure ACKs not counted"
)


def wire_bytes(frame_bytes: int) -> int:
    """Bytes on an Ethernet wire for one frame (length prefix included)."""
    segments = max(1, math.ceil(frame_bytes / MSS))
    return frame_bytes + segments * SEGMENT_OVERHEAD


def rfc3550_jitter(transit: Sequence[float]) -> float:
    """RFC 3550's interarrival jitter estimator (6.4.1), final value: J += (|D| - J) / 16.

    Here D is the difference between consecutive round-trip times, which needs
    no clock shared by the two ends."""
    jitter = 0.0
    for previous, current in itertools.pairwise(transit):
        jitter += (abs(current - previous) - jitter) / 16
    return jitter


class PhaseFigures:
    """Every figure of one periodic phase."""

    def __init__(self, result: PhaseResult, rate_hz: float, deadline_s: float) -> None:
        answered = result.answered()
        sent, replies = result.sent, result.replies
        self.rtt = [(replies[s][1] - sent[s].encode_start) / 1e9 for s in answered]
        self.rtt_transport = [
            (replies[s][0] - sent[s].send - replies[s][2]) / 1e9 for s in answered
        ]
        self.rtt_delta_abs = [
            abs(b - a) for a, b in zip(self.rtt_transport, self.rtt_transport[1:], strict=False)
        ]
        self.send_lateness = [value / 1e9 for value in result.lateness]
        self.lost = result.lost
        self.late = sum(1 for value in self.rtt if value > deadline_s)
        order = sorted(sent)
        self.bandwidth_payload = self.bandwidth_wire = None
        if len(order) >= 2 and sent[order[-1]].send > sent[order[0]].send:
            # n sends span n - 1 intervals: the bytes of all but the last, over that span
            seconds = (sent[order[-1]].send - sent[order[0]].send) / 1e9
            counted = [sent[s] for s in order[:-1]]
            self.bandwidth_payload = sum(m.payload_bytes for m in counted) / seconds
            self.bandwidth_wire = sum(wire_bytes(m.frame_bytes) for m in counted) / seconds
        self.cpu_per_msg_client = result.client_cpu_ns / 1e9 / len(sent)
        responder = result.responder
        self.cpu_per_msg_responder = (
            responder["cpu_ns"] / 1e9 / responder["messages"]
            if responder and responder["messages"]
            else None
        )

    def per_message(self) -> dict[str, list[float]]:
        return {
            "rtt": self.rtt,
            "rtt_transport": self.rtt_transport,
            "rtt_delta_abs": self.rtt_delta_abs,
            "send_lateness": self.send_lateness,
        }

    def per_phase(self) -> dict[str, tuple[float, str]]:
        """Figure -> (value, unit); figures that cannot be computed are left out."""
        figures = {
            "cpu_per_msg_client": (self.cpu_per_msg_client, "s"),
            "lost": (float(self.lost), "messages"),
            "late": (float(self.late), "messages"),
        }
        if self.bandwidth_payload is not None and self.bandwidth_wire is not None:
            figures["bandwidth_payload"] = (self.bandwidth_payload, "bytes/s")
            figures["bandwidth_wire"] = (self.bandwidth_wire, "bytes/s")
        if len(self.rtt_transport) >= 2:
            figures["jitter_stdev"] = (statistics.stdev(self.rtt_transport), "s")
            figures["jitter_rfc3550"] = (rfc3550_jitter(self.rtt_transport), "s")
        if self.cpu_per_msg_responder is not None:
            figures["cpu_per_msg_responder"] = (self.cpu_per_msg_responder, "s")
        return figures
