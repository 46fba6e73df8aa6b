"""Console transcripts: raw bytes kept, private copies, and no password however the board
splits or echoes it (a fake console on a real TCP socket echoes one)."""

import ast
import socket
import stat
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path

import pytest
from console_rig import transcript_streams
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evbench.boards import open_board
from evbench.boards.serial.link import ConsoleError
from evbench.boards.serial.transcript import Transcript

PASSWORD = b"Pa55-w0rd!x"
STREAM = b"login: root\r\n$ cat notes\r\nit is " + PASSWORD + b" today\r\n$ "


def replay(path: Path, reads: list[bytes | None]) -> bytes:
    """The board's stream as recorded from `reads` (None: the password is sent there)."""
    record = Transcript(path, "socket://board:1")
    record.add_secret(PASSWORD)
    for data in reads:
        if data is None:
            record.sent_secret()
        else:
            record.received(data)
    record.close()
    return transcript_streams(path)["<"]


@settings(max_examples=100, deadline=None)
@given(cuts=st.sets(st.integers(1, len(STREAM) - 1)))
@example(cuts=set(range(1, len(STREAM))))  # one byte a read
def test_a_password_split_anywhere_in_the_stream_is_redacted(cuts):
    bounds = [0, *sorted(cuts), len(STREAM)]
    with tempfile.TemporaryDirectory() as folder:
        received = replay(Path(folder) / "t.transcript", [STREAM[a:b] for a, b in pairwise(bounds)])
    assert received == STREAM.replace(PASSWORD, b"<password redacted>")


def test_a_password_cut_off_leaves_no_piece_and_the_echo_after_one_is_counted(tmp_path):
    # The line died mid-password.
    received = replay(tmp_path / "cut.transcript", [b"it is " + PASSWORD[:6]])
    assert PASSWORD[:6] not in received and received.startswith(b"it is ")
    # A board that echoes a mistyped password (not the secret itself), one byte a read.
    echo = [bytes([byte]) for byte in b"Pa55-w0rd!y"]
    path = tmp_path / "echo.transcript"
    received = replay(path, [b"Password: ", None, *echo, b"\r\nLogin incorrect\r\nlogin: "])
    assert received == (
        b"Password: <11 bytes after the password withheld>\r\nLogin incorrect\r\nlogin: "
    )
    assert b"Pa55" not in path.read_bytes()


def test_records_keep_raw_bytes_redacted_and_every_copy_is_private(tmp_path):
    original = tmp_path / "t.transcript"
    record = Transcript(original, "serial:///dev/ttyUSB0")
    record.add_secret(b"s3cret")
    record.received(b"Password: \xff\x00")
    record.sent_secret()
    record.received(b"\r\n")  # the board's echo line (empty: it echoes nothing)
    record.received(b"echo s3cret\r\n")
    record.note("done")
    (tmp_path / "results").mkdir()
    copy = record.copy_to(tmp_path / "results")
    record.close()
    text = original.read_text()
    assert "s3cret" not in text
    data = [line.split(" ", 2) for line in text.splitlines() if not line.startswith("#")]
    raw = [(way, ast.literal_eval(payload)) for _, way, payload in data if way != "#"]
    assert raw == [
        ("<", b"Password: \xff\x00"),
        (">", b"<password redacted>"),
        ("<", b"<0 bytes after the password withheld>\r\n"),
        ("<", b"echo <password redacted>\r\n"),
    ]
    for path in (original, copy):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert transcript_streams(copy) == transcript_streams(original)


def test_a_transcript_removed_during_the_session_loses_only_its_copy(tmp_path, caplog):
    # Another process cleaned ./results/console under a running session: no internal error.
    record = Transcript(tmp_path / "console" / "t.transcript", "socket://board:1")
    record.received(b"hello\r\n")
    (tmp_path / "console" / "t.transcript").unlink()
    (tmp_path / "results").mkdir()
    assert record.copy_to(tmp_path / "results") is None
    record.close()
    assert list((tmp_path / "results").iterdir()) == []
    assert "was removed during the session" in caplog.text


class EchoingConsole:
    """A fake login on a TCP socket that echoes the password one byte per segment (as a
    UART may split it), then refuses it."""

    #: What it says to each line it gets: the wake-up's, then the user name's.
    PROMPTS = (b"\r\nfakeboard login: ", b"Password: ")

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
        said, pending = 0, b""  # prompts said since the last login prompt
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
                    if said < len(self.PROMPTS):  # the wake-up or the user name
                        connection.sendall(self.PROMPTS[said])
                        said += 1
                        continue
                    for byte in line:  # the password's echo, one byte a segment
                        connection.sendall(bytes([byte]))
                        self.echoed += bytes([byte])
                        time.sleep(0.01)
                    connection.sendall(b"\r\n")
                    time.sleep(0.05)
                    connection.sendall(b"\r\nLogin incorrect" + self.PROMPTS[0])
                    said = 1

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
