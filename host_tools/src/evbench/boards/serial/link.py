"""The raw console line: pyserial underneath, a transcript beside, deadlines on every read.

pyserial is imported inside the methods that use it: collecting the transports
(boards/urls.py) imports this package, and `--help` must not load pyserial.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evbench.boards.base import ConnectionLost
from evbench.boards.serial.transcript import Transcript
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from evbench.boards.serial.address import ConsoleAddress

#: The most evbench keeps of unread console output; older bytes are dropped
#: (they stay in the transcript), so a chatty board cannot exhaust memory.
MAX_BUFFER = 1 << 20
READ_SIZE = 4096

log = logging.getLogger(__name__)


class ConsoleError(UserError):
    """The console did not do what evbench needed; the transcript says what it did."""


class Deadline:
    """A point in monotonic time that loops pass down instead of sleeping blind."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    @property
    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._end


class ConsoleLink:
    """Bytes in and out of one console, all of them in the transcript."""

    def __init__(self, address: ConsoleAddress, transcript: Transcript) -> None:
        import serial

        self.address = address
        self.transcript = transcript
        self.buffer = bytearray()
        #: Bytes received since the line opened: a request that adds none met a dead line.
        self.received = 0
        # A local UART must not block a write forever (flow control stuck);
        # pyserial's network ports keep the default (None) and time out on their own.
        write_timeout = None if address.is_network else 10
        log.debug("opening console %s at %d baud", address.port, address.baud)
        try:
            self._port = serial.serial_for_url(
                address.port, baudrate=address.baud, timeout=0.05, write_timeout=write_timeout
            )
        except (serial.SerialException, ValueError, OSError) as error:
            transcript.note(f"cannot open {address.port}: {error}")
            transcript.close()
            hint = "check the device path and that you may open it (group dialout)"
            if address.is_network:  # (ign_set_control is in every rfc2217 URL already)
                hint = "is ser2net (or the console server) running and listening there?"
            # ConnectionLost: after a drop, a reconnect retries this until the adapter is back.
            raise ConnectionLost(
                f"cannot open console {address.url}: {error}", hint=hint
            ) from error

    @property
    def transcript_path(self) -> Path:
        return self.transcript.path

    def error(self, message: str, hint: str | None = None) -> ConsoleError:
        """An error naming where the transcript is, noted in the transcript too."""
        self.transcript.note(f"error: {message}")
        where = f"transcript: {self.transcript.path}"
        return ConsoleError(message, hint=f"{hint}; {where}" if hint else where)

    def lost(self, message: str) -> ConnectionLost:
        """The port itself failed (adapter unplugged, ser2net gone): a reconnect may help."""
        self.transcript.note(f"error: {message}")
        return ConnectionLost(message, hint=f"transcript: {self.transcript.path}")

    def write(self, data: bytes, secret: bool = False) -> None:
        import serial

        if secret:
            self.transcript.sent_secret()
        else:
            self.transcript.sent(data)
        try:
            self._port.write(data)
            self._port.flush()
        except (serial.SerialException, OSError) as error:
            raise self.lost(f"writing to the console failed: {error}") from error

    def read_some(self, deadline: Deadline) -> bytes:
        """What arrives before the deadline or within one short poll, appended to the buffer."""
        import serial

        timeout = min(0.05, max(deadline.remaining, 0.001))
        try:
            # Set only when it changes: on an rfc2217:// port each change is a parameter
            # negotiation on the wire, which fails like a read once ser2net is gone.
            if self._port.timeout != timeout:
                self._port.timeout = timeout
            # What is waiting, or else the first byte to come: pyserial's read(n)
            # would otherwise sit out the whole timeout for n bytes.
            data = self._port.read(min(max(self._port.in_waiting, 1), READ_SIZE))
        except (serial.SerialException, OSError) as error:
            raise self.lost(f"reading from the console failed: {error}") from error
        if data:
            self.received += len(data)
            self.transcript.received(data)
            self.buffer += data
            if len(self.buffer) > MAX_BUFFER:
                del self.buffer[: len(self.buffer) - MAX_BUFFER]
        return data

    def expect(self, pattern: re.Pattern[bytes], deadline: Deadline) -> re.Match[bytes] | None:
        """The first match in what came (consumed up to its end), or None at the deadline."""
        while True:
            match = pattern.search(self.buffer)
            if match:
                del self.buffer[: match.end()]
                return match
            if deadline.expired:
                return None
            self.read_some(deadline)

    def quiet_for(self, seconds: float, deadline: Deadline) -> bool:
        """Read until nothing came for `seconds`; False if the deadline came first."""
        last = time.monotonic()
        while not deadline.expired:
            if self.read_some(deadline):
                last = time.monotonic()
            elif time.monotonic() - last >= seconds:
                return True
        return False

    def close(self) -> None:
        log.debug("closing console %s (%d bytes received)", self.address.port, self.received)
        try:
            self._port.close()
        finally:
            self.transcript.close()
