"""The bus a link transport URL runs on, and what the link's frames cost on it.

`BusTransport` is a parsed `--link-transport` URL (`uart://`, `isotp://`) with
the bus it runs on (budget.Bus: kind and bit rates), from which the bus load
follows: `message_seconds` is one link frame's time on the bus, `sustainable`
whether a message fits its period, `bus_load` a phase's share of the bus.
Pure computation: `evbench_agent.link.bus_connection` talks over the bus.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from evbench_agent.buses import budget
from evbench_agent.link import framing
from evbench_core.errors import UserError

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


__all__ = ["parse_transport"]
