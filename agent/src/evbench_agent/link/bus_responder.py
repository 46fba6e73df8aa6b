"""`evbench-agent serve --transport URL`: the responder on a UART or ISO-TP link.

A bus has one peer and no connections: the responder answers whatever intact
frames arrive, in the link's protocol (docs/link.md). A HELLO (re)starts the
conversation with its codec, profile and mode; MESSAGEs before any HELLO are
counted and dropped; a message that does not decode is logged and left
unanswered (the client counts it lost), and the responder goes on. It stops
on SIGTERM (exit 0).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any, Protocol

from evbench_agent import __version__
from evbench_agent.link import framing, handshake, messages, stop_signal
from evbench_agent.link.timing import clock_ns, thread_cpu_ns
from evbench_agent.processes import private_environment
from evbench_core.errors import EvbenchError, UserError

log = logging.getLogger(__name__)
#: How often the receive loop looks up from an idle line.
POLL_S = 0.5


class BusPort(Protocol):
    def send_frame(self, kind: int, sequence: int, body: bytes = b"") -> None: ...

    def send_packed(self, data: bytes) -> None:
        """Send a frame the link's connection packed already (BusConnection.pack)."""

    def receive_frames(self, timeout_s: float) -> list[framing.Frame]: ...

    def close(self) -> None: ...


def open_port(url: str, max_frame: int = framing.DEFAULT_MAX_FRAME) -> BusPort:
    """The port a transport URL names: uart:// or isotp://."""
    scheme = url.split(":", 1)[0]
    if scheme == "uart":
        from evbench_agent.link import uart_port

        return uart_port.UartPort(uart_port.parse(url), max_frame)
    if scheme == "isotp":
        from evbench_agent.link import isotp_port

        return isotp_port.IsotpPort(isotp_port.parse(url))
    raise UserError(
        f"unknown transport {url!r}",
        "uart:///dev/ttyS1?baud=115200 or isotp://can0?tx=0x7E8&rx=0x7E0 (the responder's ids)",
    )


class BusResponder:
    def __init__(self, port: BusPort, max_frame: int, token: str | None) -> None:
        self.port = port
        self.max_frame = max_frame
        self.token = token
        self.link: Any = None
        self.echo = False
        self.answered = 0
        self.dropped = 0
        self.cpu_start = thread_cpu_ns()

    def handle(self, frame: framing.Frame, receive_ns: int) -> None:
        if frame.kind == framing.HELLO:
            self._hello(frame)
        elif self.link is None:
            self.dropped += 1
        elif frame.kind == framing.MESSAGE:
            self._message(frame, receive_ns)
        elif frame.kind == framing.STATS:
            counts = {"messages": self.answered, "cpu_ns": thread_cpu_ns() - self.cpu_start}
            self.port.send_frame(framing.STATS_REPLY, frame.sequence, json.dumps(counts).encode())
        else:
            self.dropped += 1

    def _hello(self, frame: framing.Frame) -> None:
        try:
            hello = handshake.parse_hello(frame, self.token)
            link = messages.bind(hello.codec, hello.profile)
            if messages.message_name(link.profile) != hello.message:
                raise handshake.HandshakeError(
                    f"profile {hello.profile!r} carries {messages.message_name(link.profile)}"
                )
        except EvbenchError as error:
            log.warning("refused a HELLO: %s", error)
            document: dict[str, Any] = {"ok": False, "error": str(error)}
        else:
            self.link, self.echo = link, hello.mode == "echo"
            self.answered, self.cpu_start = 0, thread_cpu_ns()
            document = {
                "ok": True,
                "max_frame": self.max_frame,
                "responder": f"evbench-agent {__version__}",
            }
        self.port.send_frame(framing.HELLO, 0, json.dumps(document).encode())

    def _message(self, frame: framing.Frame, receive_ns: int) -> None:
        if self.echo:
            body = frame.body
        else:
            try:
                self.link.decode(frame.body)
            except Exception as error:  # each codec library raises its own types
                log.warning("message %d does not decode: %s", frame.sequence, error)
                self.dropped += 1
                return
            body = self.link.encode_ack(frame.sequence, receive_ns)
        processing = clock_ns() - receive_ns
        self.port.send_frame(
            framing.REPLY, frame.sequence, framing.PROCESSING.pack(processing) + body
        )
        self.answered += 1


def serve_transport(
    url: str,
    max_frame: int = framing.DEFAULT_MAX_FRAME,
    opener: Callable[[str, int], BusPort] = open_port,
) -> None:
    """Answer on the transport `url` until SIGTERM; say on stdout (JSON) where it listens.

    `opener` makes the port from `url` and `max_frame`: the host passes its own
    (evbench.usecases.can_peer, python-can), which the agent cannot depend on."""
    port = opener(url, max_frame)
    responder = BusResponder(port, max_frame, private_environment.link_token())
    try:
        # The handler goes in before the line: a caller may send SIGTERM as soon as it reads it.
        with stop_signal.until_sigterm():
            print(json.dumps({"transport": url, "pid": os.getpid()}), flush=True)
            while True:
                try:
                    for frame in port.receive_frames(POLL_S):
                        responder.handle(frame, clock_ns())
                except framing.PeerClosed as error:  # not one frame: the line itself
                    raise UserError(
                        f"the line went away: {error}",
                        "check the adapter and its cable, then start the responder again",
                    ) from error
                except framing.FrameError as error:
                    # A PDU that is not a link frame (another node's traffic on the same
                    # ids), a damaged transfer, a reply nobody took: one message lost.
                    log.warning("dropped a transfer: %s", error)
                    responder.dropped += 1
    finally:
        port.close()
        log.info("answered %d, dropped %d", responder.answered, responder.dropped)


__all__ = ["BusPort", "open_port", "serve_transport"]
