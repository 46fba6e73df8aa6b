"""The link over a UART: `uart:///dev/ttyS1?baud=115200` (pyserial, 8N1, raw).

Frames go in uart_framing's form; a frame that arrives damaged is dropped and
the next one found. Before a run, buses.transport.sustainable() says whether a
message can leave once per period at the line's rate at all: the link never
queues messages silently behind a line that cannot carry them, it reports the
ones that do not fit as late or lost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from evbench_agent.link import uart_framing
from evbench_agent.link.framing import DEFAULT_MAX_FRAME, Frame, PeerClosed
from evbench_core.errors import UserError

#: Rates pyserial and the 8250/pl011 drivers take; anything else is refused up front.
RATES = (1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600,
         1000000, 1500000, 2000000, 3000000, 4000000)  # fmt: skip
DEFAULT_BAUD = 115200
#: Longest single read wait, so a receive loop checks its deadline at least this often.
READ_SLICE_S = 0.05
#: A write the line does not take within this long ends the phase (the peer is gone).
WRITE_TIMEOUT_S = 5.0
#: A frame's bytes come back to back (one write); a part of one followed by this much
#: silence on the line is a frame whose sender stopped (a reboot, Ctrl-C): dropped.
STALE_PART_S = 0.5


@dataclass(frozen=True)
class UartAddress:
    device: str
    baud: int

    def __str__(self) -> str:
        return f"uart://{self.device}?baud={self.baud}"


def parse(url: str) -> UartAddress:
    """`uart:///dev/ttyS1?baud=115200` -> its device and rate; a UserError otherwise."""
    parts = urlsplit(url)
    if parts.scheme != "uart" or parts.netloc or not parts.path.startswith("/"):
        raise UserError(f"not a UART address: {url!r}", "write uart:///dev/ttyS1?baud=115200")
    query = parse_qs(parts.query, strict_parsing=False)
    unknown = set(query) - {"baud"}
    if unknown:
        raise UserError(
            f"unknown UART option(s) {', '.join(sorted(unknown))} in {url!r}",
            "the only option is baud",
        )
    try:
        baud = int(query.get("baud", [str(DEFAULT_BAUD)])[-1])
    except ValueError:
        raise UserError(f"the baud rate in {url!r} is not a number") from None
    if baud not in RATES:
        raise UserError(
            f"{baud} baud is not a rate the UART drivers take",
            f"choose one of {', '.join(map(str, RATES))}",
        )
    return UartAddress(parts.path, baud)


class UartPort:
    """One end of the link on a serial line."""

    def __init__(self, address: UartAddress, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        try:
            import serial  # the agent needs pyserial only for a UART
        except ImportError as error:
            raise UserError(
                "a UART link needs pyserial, which is not installed",
                "pip install pyserial (on the image: python3-pyserial)",
            ) from error

        try:
            self._serial: Any = serial.Serial(
                address.device, address.baud, timeout=READ_SLICE_S, write_timeout=WRITE_TIMEOUT_S
            )
        except (serial.SerialException, ValueError) as error:
            raise UserError(
                f"cannot open {address.device}: {error}",
                "check the device exists, is not in use, and you may open it (group dialout)",
            ) from error
        self.address = address
        self._errors = (serial.SerialTimeoutException, serial.SerialException)
        self.deframer = uart_framing.Deframer(max_frame)
        self._ready: list[Frame] = []
        #: How long the line has been silent while read from (not while nobody read).
        self._silent_s = 0.0

    def send(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.write(uart_framing.encode(kind, sequence, body))

    def send_packed(self, data: bytes) -> None:
        """BusPort's: bytes framed by uart_framing.encode."""
        self.write(data)

    def write(self, data: bytes) -> None:
        """Write bytes already framed (uart_framing.encode); a line that does not take
        them within the write timeout, or a device that went away, is PeerClosed."""
        try:
            self._serial.write(data)
        except self._errors[0] as error:
            raise PeerClosed(
                f"{self.address.device} took no bytes for {WRITE_TIMEOUT_S:g} s"
            ) from error
        except self._errors[1] as error:
            raise PeerClosed(f"{self.address.device} failed: {error}") from error

    def discard_output(self) -> None:
        """Drop the bytes written but not yet sent (the kernel's buffer), so a phase's
        backlog never goes out during the next one."""
        self._serial.reset_output_buffer()

    def receive(self, timeout_s: float) -> list[Frame]:
        """Whole intact frames, waiting up to `timeout_s` for the first (an empty list
        when none came: damaged frames are dropped, never handed out); a line that
        went away is PeerClosed."""
        deadline = time.monotonic() + timeout_s
        while not self._ready:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            started = time.monotonic()
            try:
                self._serial.timeout = min(READ_SLICE_S, left)
                data = self._serial.read(self._serial.in_waiting or 1)
            except (self._errors[1], OSError) as error:  # the adapter went away
                raise PeerClosed(f"{self.address.device} failed: {error}") from error
            if data:
                self._silent_s = 0.0
                self._ready.extend(self.deframer.feed(data))
                continue
            self._silent_s += time.monotonic() - started
            if self._silent_s >= STALE_PART_S and self.deframer.buffered():
                # A part would take the next frames' bytes as its body; those that came
                # already (a client's next HELLO) are found again behind it.
                self._ready.extend(self.deframer.drop_part())
                self._silent_s = 0.0
        frames, self._ready = self._ready, []
        return frames

    def send_frame(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.send(kind, sequence, body)

    def receive_frames(self, timeout_s: float) -> list[Frame]:
        return self.receive(timeout_s)

    def close(self) -> None:
        self._serial.close()

    def __enter__(self) -> UartPort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
