"""A console behind a real ser2net (RFC 2217) whose ser2net dies: every read and write
after that is a ConnectionLost (which reconnects or ends the run partial), never a raw
BrokenPipeError or pyserial error. In a lab run an exporter killed mid-run once ended its
entry "internal error: BrokenPipeError": the read's timeout change, an RFC 2217 parameter
negotiation on the wire, was outside the read's error handling."""

from __future__ import annotations

import contextlib
import os
import time

import pytest
import serial
from conftest import require_command
from console_rig import Ser2net

from evbench.boards.base import ConnectionLost
from evbench.boards.serial.address import parse_console_url
from evbench.boards.serial.link import ConsoleLink, Deadline
from evbench.boards.serial.transcript import Transcript

pytestmark = pytest.mark.integration


# pyserial's rfc2217 close() skips closing a socket whose peer is gone (its shutdown()
# raises first): the unclosed-socket warning is pyserial's, not evbench's.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_reads_and_writes_after_ser2net_died_are_connection_lost(tmp_path):
    board_end, host_end = os.openpty()
    server = Ser2net(require_command("ser2net"), os.ttyname(host_end), tmp_path)
    url = server.url
    link = ConsoleLink(parse_console_url(url), Transcript(tmp_path / "t.transcript", url))
    try:
        os.write(board_end, b"login: ")
        deadline = time.monotonic() + 10
        while b"login: " not in link.buffer:
            assert time.monotonic() < deadline, bytes(link.buffer)
            link.read_some(Deadline(0.5))
        server.stop()
        # Deadlines shorter than the poll change the port's timeout on each read.
        for seconds in (0.01, 0.5, 0.02, 0.5, 0.03):
            with pytest.raises(ConnectionLost):
                link.read_some(Deadline(seconds))
        with pytest.raises(ConnectionLost):
            link.write(b"\r")
    finally:
        server.stop()
        with contextlib.suppress(OSError, serial.SerialException):
            link.close()  # pyserial's close reports the dead socket again
        os.close(board_end)
        os.close(host_end)
