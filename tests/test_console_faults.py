"""Console faults: each ends with a clear one-line message and the transcript saved.

The faults are real where they can be (a wrong password at a real login, a
command that never returns); the line's faults (mute, garbled as at a wrong
baud rate, silent mid-transfer) come from the test line between the two
pseudo-terminals, because a pty has no baud rate and no cable to pull.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evbench.boards.serial import SerialBoard
from evbench.cli import evbench
from evbench.console.link import ConsoleError

pytestmark = pytest.mark.integration


def _diag_fails(url: str, capsys) -> tuple[str, Path]:
    assert evbench(["diag", "--board", url]) == 2
    error = capsys.readouterr().err
    lines = error.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("evbench: error: "), error
    match = re.search(r"transcript: (\S+)$", lines[1])
    assert match, lines[1]
    transcript = Path(match.group(1))
    assert transcript.is_file()
    assert "# error: " in transcript.read_text()
    return lines[0], transcript


def test_wrong_password(console_line, console_user, monkeypatch, capsys):
    monkeypatch.setenv("EVBENCH_PASSWORD", "not-the-password")
    message, transcript = _diag_fails(f"{console_line.url}?user={console_user.name}", capsys)
    assert f"login as '{console_user.name}'" in message and "refused" in message
    text = transcript.read_text()
    assert "not-the-password" not in text and "<password redacted>" in text


def test_no_prompt_at_all(console_line, console_user, capsys):
    console_line.line.mute = True
    message, _ = _diag_fails(f"{console_line.url}?user={console_user.name}", capsys)
    assert "no prompt" in message and "nothing came back" in message


def test_baud_mismatch_garbage(console_line, console_user, capsys):
    console_line.line.garble = True
    message, _ = _diag_fails(f"{console_line.url}?user={console_user.name}", capsys)
    assert "unreadable characters" in message and "baud" in message


def test_line_silent_mid_transfer(console_line, console_user, tmp_path):
    url = f"{console_line.url}?user={console_user.name}"
    remote = f"{console_user.home}/evbench-test-silent.bin"
    board = SerialBoard(url, show_progress=False)
    try:
        assert board.run(["sh", "-c", f"head -c 40000 /dev/urandom > {remote}"], 30).returncode == 0
        console_line.line.silent_after = 4000  # the cable comes out 4000 bytes in
        with pytest.raises(ConsoleError, match="went silent") as raised:
            board.get(remote, tmp_path / "back.bin")
    finally:
        board.close()
    assert not (tmp_path / "back.bin").exists(), "an unverified file was saved"
    assert "transcript: " in raised.value.hint
    assert "# error: " in board.transcript_path.read_text()


def test_command_that_never_returns(console_line, console_user):
    url = f"{console_line.url}?user={console_user.name}"
    with SerialBoard(url, show_progress=False) as board:
        with pytest.raises(ConsoleError, match="did not return within 3 s and was interrupted"):
            board.run(["sleep", "600"], timeout=3)
        # The session recovers: Ctrl-C stopped the command, the shell answers again.
        after = board.run(["echo", "still here"], timeout=30)
    assert (after.returncode, after.stdout) == (0, b"still here\n")
