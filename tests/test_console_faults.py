"""Console faults: each ends with a clear one-line message and the transcript saved.

The faults are real where they can be (a wrong password at a real login, a
command that never returns); the line's faults (mute, garbled as at a wrong
baud rate, silent mid-transfer) come from the test line between the two
pseudo-terminals, because a pty has no baud rate and no cable to pull.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
import serial
from conftest import require_command
from console_rig import Ser2net

from evbench.boards.base import ConnectionLost
from evbench.boards.serial import SerialBoard
from evbench.boards.serial.address import parse_console_url
from evbench.boards.serial.link import ConsoleError, ConsoleLink, Deadline
from evbench.boards.serial.transcript import Transcript
from evbench.cli import evbench

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("password", ("login as '{user}'", "refused")),
        ("mute", ("no prompt", "nothing came back")),
        ("garble", ("unreadable characters", "baud")),
    ],
    ids=["wrong password", "no prompt at all", "baud mismatch garbage"],
)
def test_a_refused_login_or_a_mute_or_garbled_line_is_named(
    console_line, console_user, monkeypatch, capsys, fault, said
):
    if fault == "password":
        monkeypatch.setenv("EVBENCH_PASSWORD", "not-the-password")
    else:
        setattr(console_line.line, fault, True)
    assert evbench(["diag", "--board", f"{console_line.url}?user={console_user.name}"]) == 2
    error = capsys.readouterr().err
    lines = error.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("evbench: error: "), error
    assert all(words.format(user=console_user.name) in lines[0] for words in said), lines[0]
    match = re.search(r"transcript: (\S+)$", lines[1])
    assert match, lines[1]
    text = Path(match.group(1)).read_text()
    assert "# error: " in text
    if fault == "password":
        assert "not-the-password" not in text and "<password redacted>" in text


def test_a_command_that_never_returns_then_a_line_silent_mid_transfer(
    console_line, console_user, tmp_path
):
    # One login for both faults: the interrupted command leaves the session usable.
    url = f"{console_line.url}?user={console_user.name}"
    remote = f"{console_user.home}/evbench-test-silent.bin"
    board = SerialBoard(url, show_progress=False)
    try:
        with pytest.raises(ConsoleError, match="did not return within 3 s and was interrupted"):
            board.run(["sleep", "600"], timeout=3)
        # The session recovers: Ctrl-C stopped the command, the shell answers again.
        after = board.run(["echo", "still here"], timeout=30)
        assert (after.returncode, after.stdout) == (0, b"still here\n")
        assert board.run(["sh", "-c", f"head -c 40000 /dev/urandom > {remote}"], 30).returncode == 0
        console_line.line.silent_after = 4000  # the cable comes out 4000 bytes in
        with pytest.raises(ConsoleError, match="went silent") as raised:
            board.get(remote, tmp_path / "back.bin")
    finally:
        board.close()
    assert not (tmp_path / "back.bin").exists(), "an unverified file was saved"
    assert "transcript: " in raised.value.hint
    noted = board.transcript_path.read_text().splitlines()
    assert any("# error: " in line and "went silent" in line for line in noted)


def test_password_asked_on_the_terminal_only_at_the_password_prompt(
    console_line, console_user, monkeypatch, tmp_path
):
    monkeypatch.delenv("EVBENCH_PASSWORD")
    url = f"{console_line.url}?user={console_user.name}"
    evbench_command = str(Path(sys.executable).parent / "evbench")
    master, slave = os.openpty()
    # `setsid --ctty` makes the pty the controlling terminal, which getpass reads.
    argv = [require_command("setsid"), "--ctty", evbench_command, "diag", "--board", url]
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=tmp_path)
    os.close(slave)
    screen = bytearray()

    def read_until(done) -> None:
        deadline = time.monotonic() + 60
        while not done() and time.monotonic() < deadline:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    screen.extend(os.read(master, 4096))
                except OSError:  # EIO: evbench closed the terminal
                    return

    read_until(lambda: b"password for" in screen)
    assert f"password for {console_user.name} on {url}: ".encode() in screen
    os.write(master, console_user.password.encode() + b"\n")
    read_until(lambda: False)
    os.close(master)
    assert process.wait(timeout=60) == 0, screen.decode(errors="replace")
    assert console_user.password.encode() not in screen  # not echoed, not printed
    assert b"kernel:      Linux" in screen
    (transcript,) = (tmp_path / "results" / "console").glob("*.transcript")
    text = transcript.read_text()
    assert console_user.password not in text
    # Sent once, and only after the board asked for it.
    assert text.count("<password redacted>") == 1
    assert text.index("assword: ") < text.index("> b'<password redacted>'")


# A console behind a real ser2net (RFC 2217) whose ser2net dies: every read and write after
# that is a ConnectionLost (which reconnects or ends the run partial), never a raw
# BrokenPipeError or pyserial error. In a lab run an exporter killed mid-run once ended its
# entry "internal error: BrokenPipeError": the read's timeout change, an RFC 2217 parameter
# negotiation on the wire, was outside the read's error handling.
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
