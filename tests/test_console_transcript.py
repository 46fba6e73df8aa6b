"""Console transcripts keep no password, however the board splits or echoes it (issue 16).

The split tests drive the real Transcript with every way to cut a stream; the
board test is a fake console on a real TCP socket (pyserial's socket://), since
no real UART here echoes a password byte by byte: it says so.
"""

from __future__ import annotations

import socket
import stat
import threading
import time

import pytest
from console_rig import transcript_streams

from evbench.boards import open_board
from evbench.boards.serial.link import ConsoleError
from evbench.boards.serial.transcript import Transcript

PASSWORD = b"Pa55-w0rd!x"


def test_a_password_split_anywhere_in_the_stream_is_redacted(tmp_path):
    stream = b"login: root\r\n$ cat notes\r\nit is " + PASSWORD + b" today\r\n$ "
    for size in (1, 2, 3, 5, 7):
        path = tmp_path / f"split-{size}.transcript"
        record = Transcript(path, "socket://board:1")
        record.add_secret(PASSWORD)
        for start in range(0, len(stream), size):
            record.received(stream[start : start + size])
        record.close()
        received = transcript_streams(path)["<"]
        assert PASSWORD not in received
        assert received == stream.replace(PASSWORD, b"<password redacted>")


def test_a_password_cut_off_by_the_end_of_the_session_leaves_no_piece(tmp_path):
    path = tmp_path / "cut.transcript"
    record = Transcript(path, "socket://board:1")
    record.add_secret(PASSWORD)
    record.received(b"it is " + PASSWORD[:6])  # the line died mid-password
    record.close()
    received = transcript_streams(path)["<"]
    assert PASSWORD[:6] not in received and received.startswith(b"it is ")


def test_the_echo_after_the_password_is_counted_not_kept(tmp_path):
    path = tmp_path / "echo.transcript"
    record = Transcript(path, "socket://board:1")
    record.add_secret(PASSWORD)
    record.received(b"Password: ")
    record.sent_secret()
    # A board that echoes a mistyped password (not the secret itself), one byte a read.
    for byte in b"Pa55-w0rd!y":
        record.received(bytes([byte]))
    record.received(b"\r\nLogin incorrect\r\nlogin: ")
    record.close()
    assert transcript_streams(path)["<"] == (
        b"Password: <11 bytes after the password withheld>\r\nLogin incorrect\r\nlogin: "
    )
    assert b"Pa55" not in path.read_bytes()


def test_every_copy_is_private(tmp_path):
    record = Transcript(tmp_path / "t.transcript", "socket://board:1")
    record.received(b"hello\r\n")
    (tmp_path / "results").mkdir()
    copy = record.copy_to(tmp_path / "results")
    record.close()
    for path in (tmp_path / "t.transcript", copy):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert transcript_streams(copy)["<"] == b"hello\r\n"


def test_a_transcript_removed_during_the_session_loses_only_its_copy(tmp_path, caplog):
    # Another process cleaned ./results/console under a running session (seen when a docs
    # test tidied results/ beside a labgrid run): the run must not end in an internal error.
    record = Transcript(tmp_path / "console" / "t.transcript", "socket://board:1")
    record.received(b"hello\r\n")
    (tmp_path / "console" / "t.transcript").unlink()
    (tmp_path / "results").mkdir()
    assert record.copy_to(tmp_path / "results") is None
    record.close()
    assert list((tmp_path / "results").iterdir()) == []
    assert "was removed during the session" in caplog.text


class EchoingConsole:
    """A fake login on a TCP socket that echoes the password one byte per segment, then
    refuses it (a real UART may split the echo anywhere; a socket:// console server
    forwards each byte as it comes)."""

    def __init__(self) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(30)
        self.port = self._server.getsockname()[1]
        self.echoed = b""
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connection, _ = self._server.accept()
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        connection.settimeout(30)
        state, pending = "wake", b""
        with connection:
            while True:
                try:
                    data = connection.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                pending += data
                while b"\r" in pending:
                    line, _, pending = pending.partition(b"\r")
                    if state == "wake":
                        connection.sendall(b"\r\nfakeboard login: ")
                        state = "user" if not line else state
                        if line:
                            connection.sendall(b"Password: ")
                            state = "password"
                    elif state == "user":
                        connection.sendall(b"Password: ")
                        state = "password"
                    elif state == "password":
                        for byte in line:  # the echo, one byte a segment
                            connection.sendall(bytes([byte]))
                            self.echoed += bytes([byte])
                            time.sleep(0.01)
                        connection.sendall(b"\r\n")
                        time.sleep(0.05)
                        connection.sendall(b"\r\nLogin incorrect\r\nfakeboard login: ")
                        state = "user"

    def close(self) -> None:
        self._server.close()


def test_a_board_echoing_the_password_byte_by_byte_leaves_it_in_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVBENCH_PASSWORD", PASSWORD.decode())
    board = EchoingConsole()
    try:
        with pytest.raises(ConsoleError, match="refused"):
            open_board(f"socket://127.0.0.1:{board.port}?user=tester")
    finally:
        board.close()
    assert board.echoed == PASSWORD  # the board did echo it, split over many reads
    [transcript] = (tmp_path / "results" / "console").glob("*.transcript")
    assert stat.S_IMODE(transcript.stat().st_mode) == 0o600
    received = transcript_streams(transcript)["<"]
    assert b"<11 bytes after the password withheld>" in received
    assert b"Login incorrect" in received  # the evidence stays
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert PASSWORD not in path.read_bytes(), path
            if path.suffix == ".transcript":
                assert all(PASSWORD not in data for data in transcript_streams(path).values()), path
