"""The link client over a bus (UART, ISO-TP): the same handshake, frames and phases as TCP.

`BusConnection` is one phase's conversation on an open bus port: it sends
HELLO and waits for the responder's answer within one deadline, then gives
the Exchange (link.client) the same small interface a TCP Connection does,
so the periodic sender, sequence matching, lost/late, RTTs, jitter and CPU
per message are the same code on every transport. The transport URL's bus
and what the link costs on it are `evbench_agent.buses.transport`'s.

A bus has no connections: replies that come after their phase ended (lost
messages answered late) arrive before the next HELLO's answer, since both
directions are in order, and the handshake drops them. The port stays open
across phases (a pty or a UART is not reopened per phase); at the end of a
phase the bytes not yet sent are discarded, not left to go out later: those
messages are already counted lost.
"""

from __future__ import annotations

import json
import time
from typing import Any

from evbench_agent.link import framing, handshake, messages, uart_framing
from evbench_agent.link.bus_responder import BusPort
from evbench_agent.link.timing import clock_ns
from evbench_agent.processes import private_environment

HANDSHAKE_TIMEOUT_S = 10.0
#: What a receive "without a bound" (set_receive_timeout(0)) waits at most on a bus.
LONGEST_WAIT_S = 60.0


class BusConnection:
    """One phase's handshaken conversation with the responder on an open bus port."""

    def __init__(
        self,
        port: BusPort,
        url: str,
        link: messages.LinkCodec,
        mode: str,
        timeout_s: float = HANDSHAKE_TIMEOUT_S,
        token: str | None = None,
    ) -> None:
        """`url`: the `--link-transport` URL the port was opened from (uart:// or isotp://)."""
        self.port = port
        self.link, self.mode, self.address = link, mode, url
        self._uart = url.split(":", 1)[0] == "uart"
        self._receive_timeout_s = 0.0
        self._received_ns = 0
        #: The bodies of the MESSAGEs sent and of the REPLYs received, by sequence:
        #: the bus load is counted on the actual bytes (CAN's bit stuffing depends on them).
        self.message_bodies: dict[int, bytes] = {}
        self.reply_bodies: dict[int, bytes] = {}
        if token is None:
            token = private_environment.link_token()  # withheld from os.environ at start
        hello = handshake.Hello(
            link.codec, link.profile.name, messages.message_name(link.profile), mode, token=token
        )
        self.accepted = self._handshake(hello, timeout_s)

    def _handshake(self, hello: handshake.Hello, timeout_s: float) -> dict[str, Any]:
        self.port.send_frame(framing.HELLO, 0, json.dumps(hello.document()).encode())
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            for frame in self.port.receive_frames(left):
                if frame.kind != framing.HELLO:
                    continue  # a late reply of an earlier phase: the handshake drops it
                return _accepted(frame, self.address)
        raise handshake.HandshakeError(
            f"no answer to HELLO on {self.address} within {timeout_s:g} s",
            hint="start 'evbench-agent serve --transport ...' on the other end of the bus "
            "(for ISO-TP with the ids swapped), at the same bit rate",
        )

    def pack(self, kind: int, sequence: int, body: bytes = b"") -> bytes:
        if kind == framing.MESSAGE:
            self.message_bodies[sequence] = body
        if self._uart:
            return uart_framing.encode(kind, sequence, body)
        return framing.pack(kind, sequence, body)

    def send(self, data: bytes) -> None:
        self.port.send_packed(data)

    def _receive(self, timeout_s: float) -> list[framing.Frame] | None:
        if timeout_s <= 0:  # a socket timeout of 0 would mean non-blocking, not "expired"
            return None
        frames = self.port.receive_frames(timeout_s)
        if not frames:
            return None
        self._received_ns = clock_ns()
        for frame in frames:
            if frame.kind == framing.REPLY:
                self.reply_bodies[frame.sequence] = frame.body
        return frames

    def wait_frames(self, timeout_ns: int) -> list[framing.Frame] | None:
        return self._receive(max(timeout_ns, 0) / 1e9)

    def block_frames(self) -> list[framing.Frame] | None:
        return self._receive(self._receive_timeout_s or LONGEST_WAIT_S)

    def set_receive_timeout(self, seconds: float) -> None:
        self._receive_timeout_s = seconds

    @property
    def received_ns(self) -> int:
        return self._received_ns

    def close(self) -> None:
        """End the phase; the port stays open. Unsent bytes on a UART are discarded."""
        discard = getattr(self.port, "discard_output", None)
        if discard is not None:
            discard()

    def __enter__(self) -> BusConnection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _accepted(frame: framing.Frame, address: str) -> dict[str, Any]:
    try:
        answer = json.loads(frame.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise handshake.HandshakeError(
            f"the responder on {address} sent a HELLO that is not JSON: {error}"
        ) from error
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        reason = answer.get("error", "no reason given") if isinstance(answer, dict) else answer
        raise handshake.HandshakeError(
            f"the responder on {address} refused the conversation: {reason}",
            hint="check that both ends run the same evbench version with the same codecs",
        )
    return answer
