"""The link client over a bus (UART, ISO-TP): the same handshake, frames and phases as TCP.

`BusTransport` is a parsed `--link-transport` URL with the bus it runs on
(buses.budget.Bus: kind and bit rates), from which the bus load follows.
`BusConnection` is one phase's conversation on an open bus port: it sends
HELLO and waits for the responder's answer within one deadline, then gives
the Exchange (link.client) the same small interface a TCP Connection does,
so the periodic sender, sequence matching, lost/late, RTTs, jitter and CPU
per message are the same code on every transport.

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
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from evbench_agent import private_environment
from evbench_agent.buses import budget
from evbench_agent.errors import UserError
from evbench_agent.link import framing, handshake, messages, uart_framing
from evbench_agent.link.bus_responder import BusPort, open_port
from evbench_agent.link.timing import clock_ns

HANDSHAKE_TIMEOUT_S = 10.0
#: What a receive "without a bound" (set_receive_timeout(0)) waits at most on a bus.
LONGEST_WAIT_S = 60.0
#: The bit rates assumed for an ISO-TP interface whose URL names none (vcan has none).
ASSUMED_CAN_RATES = (500_000, 2_000_000)


@dataclass(frozen=True)
class BusTransport:
    """A bus transport URL, what its port opens, and the bus its load is counted on."""

    url: str
    kind: str  # "uart" or "isotp"
    port_url: str  # the URL without the bit rate options (what the port parses)
    bus: budget.Bus
    tx_id: int = budget.REQUEST_ID
    rx_id: int = budget.RESPONSE_ID
    #: Where the bit rate comes from: "baud" (UART), "url", or "assumed" (nominal).
    bit_rate_source: str = "baud"

    def params(self) -> dict[str, Any]:
        """The link records' identity params for this transport."""
        params: dict[str, Any] = {"transport": self.kind, "bit_rate": self.bus.bit_rate}
        if self.kind == "isotp":
            params["frame_length"] = self.bus.frame_length
            params["bit_rate_source"] = self.bit_rate_source
            if self.bus.kind == "canfd":
                params["data_bit_rate"] = self.bus.data_rate
        return params

    def open(self) -> BusPort:
        return open_port(self.port_url)


def parse_transport(url: Any) -> BusTransport:
    """`uart:///dev/ttyS1?baud=115200` or `isotp://can0?tx=..&rx=..[&fd=1&dlen=64]
    [&bitrate=500000&dbitrate=2000000]`; a UserError naming the problem otherwise."""
    if not isinstance(url, str):
        raise UserError(f"not a link transport: {url!r}", "uart://DEVICE?baud=N or isotp://IFACE")
    scheme = url.split(":", 1)[0]
    if scheme == "uart":
        from evbench_agent.link import uart_port

        address = uart_port.parse(url)
        bus = budget.Bus(f"uart-{address.baud}", "uart", address.baud)
        return BusTransport(url, "uart", url, bus)
    if scheme == "isotp":
        return _parse_isotp(url)
    raise UserError(
        f"unknown link transport {url!r}",
        "uart:///dev/ttyS1?baud=115200 or isotp://can0?tx=0x7E0&rx=0x7E8&fd=1&dlen=64",
    )


def _parse_isotp(url: str) -> BusTransport:
    from evbench_agent.link import isotp_port

    parts = urlsplit(url)
    query = parse_qs(parts.query)
    rates = {name: query.pop(name)[-1] for name in ("bitrate", "dbitrate") if name in query}
    port_url = urlunsplit(parts._replace(query=urlencode(query, doseq=True)))
    address = isotp_port.parse(port_url)
    try:
        bit_rate = int(rates.get("bitrate", ASSUMED_CAN_RATES[0]))
        data_rate = int(rates.get("dbitrate", ASSUMED_CAN_RATES[1] if address.fd else 0))
    except ValueError:
        raise UserError(f"bitrate= and dbitrate= in {url!r} are bits per second") from None
    if not 10_000 <= bit_rate <= 1_000_000 or (address.fd and not 0 < data_rate <= 15_000_000):
        raise UserError(
            f"bit rates {bit_rate} / {data_rate} in {url!r} are not CAN rates",
            "bitrate= is 10000..1000000 (arbitration), dbitrate= up to 15000000 (CAN FD data)",
        )
    kind = "canfd" if address.fd else "can"
    name = f"{kind}-{bit_rate}" + (f"-{data_rate}" if address.fd else "")
    bus = budget.Bus(name, kind, bit_rate, data_rate, address.data_length, address.extended)
    source = "url" if "bitrate" in rates else "assumed"
    return BusTransport(url, "isotp", port_url, bus, address.tx_id, address.rx_id, source)


def message_seconds(transport: BusTransport, body: bytes, kind: int = framing.MESSAGE) -> float:
    """Time one link frame with `body` takes on the bus, one way (exact stuffing on CAN;
    with the ISO-TP flow control it makes the other end send)."""
    frame = framing.pack(kind, 0, body)
    sender, receiver = transport.tx_id, transport.rx_id
    if kind == framing.REPLY:
        sender, receiver = receiver, sender
    return budget.direction(transport.bus, frame, sender, receiver).seconds


def sustainable(transport: BusTransport, body: bytes, rate_hz: float) -> str | None:
    """None if a message of `body` fits its period on this bus; else one line saying why not."""
    seconds, period = message_seconds(transport, body), 1.0 / rate_hz
    if seconds <= period:
        return None
    return (
        f"a {len(body)}-byte message takes {seconds * 1e3:.1f} ms on {transport.bus.name} "
        f"({transport.kind}), longer than the {period * 1e3:g} ms period: it cannot go out "
        f"{rate_hz:g} times a second (the run measures how late and how many are lost)"
    )


class BusConnection:
    """One phase's handshaken conversation with the responder on an open bus port."""

    def __init__(
        self,
        port: BusPort,
        transport: BusTransport,
        link: messages.LinkCodec,
        mode: str,
        timeout_s: float = HANDSHAKE_TIMEOUT_S,
        token: str | None = None,
    ) -> None:
        self.port, self.transport = port, transport
        self.link, self.mode, self.address = link, mode, transport.url
        self._uart = transport.kind == "uart"
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
        if self._uart:
            self.port.write(data)  # type: ignore[attr-defined]
        else:
            self.port.send(data)  # type: ignore[attr-defined]

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


def bus_load(
    transport: BusTransport,
    sequences: list[int],
    message_bodies: dict[int, bytes],
    reply_bodies: dict[int, bytes],
    seconds: float,
) -> float:
    """The bus load in % of `seconds`: the wire time of the messages `sequences` and of
    their replies (those that came), both directions on a shared bus (CAN), the busier
    direction on a full-duplex one (UART). Above 100 % the bus cannot carry it."""
    request = sum(message_seconds(transport, message_bodies[s]) for s in sequences)
    reply = sum(
        message_seconds(transport, reply_bodies[s], framing.REPLY)
        for s in sequences
        if s in reply_bodies
    )
    busy = request + reply if transport.bus.shared else max(request, reply)
    return 100.0 * busy / seconds
