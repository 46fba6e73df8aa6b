"""evbench console: a pass-through terminal on a real login prompt, the quit key, the
transcript; SIGTERM and SIGHUP end it as quitting does (a closed terminal sends SIGHUP; a
service, SIGTERM): terminal and link given back, the transcript kept, exit 130."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from console_rig import transcript_streams

pytestmark = pytest.mark.integration

EVBENCH = str(Path(sys.executable).parent / "evbench")


def read_until(process: subprocess.Popen, stream: str, wanted: bytes) -> bytes:
    """What the running `process` writes on `stream` up to and including `wanted`."""
    fd, seen = getattr(process, stream).fileno(), b""
    deadline = time.monotonic() + 60
    while wanted not in seen:
        assert process.poll() is None and time.monotonic() < deadline, (stream, seen)
        if select.select([fd], [], [], 0.5)[0]:
            seen += os.read(fd, 4096)
    return seen


def test_console_passes_keys_and_output_and_quits_on_ctrl_bracket(console_line, tmp_path):
    transcript = tmp_path / "session.transcript"
    argv = [EVBENCH, "console", "--board", console_line.url, "--transcript", str(transcript)]
    process = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        # Keys only once it is connected: typed earlier, they would all arrive
        # at once, the quit key with them.
        err = read_until(process, "stderr", b"Ctrl-] quits")
        process.stdin.write(b"\r")
        process.stdin.flush()
        out = read_until(process, "stdout", b"login: ")  # agetty asks again
        process.stdin.write(b"\x1d")  # Ctrl-]
        process.stdin.flush()
        rest, more = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    out, err = out + rest, err + more
    assert process.returncode == 0, err
    assert b"login: " in out and str(transcript).encode() in err
    text = transcript.read_text()
    assert "> b'\\r'" in text and "login: " in text
    assert "\\x1d" not in text  # the quit key stays on this side


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_console_with_its_transcript(tmp_path: Path, stop: int) -> None:
    # The board is the far end of a real pty pair; nothing answers on it.
    board, line = os.openpty()
    keys_read, keys_write = os.pipe()  # typed keys: an open pipe that never ends
    transcript = tmp_path / "console.log"
    process = subprocess.Popen(
        [EVBENCH, "console", "--board", f"serial://{os.ttyname(line)}",
         "--transcript", str(transcript)],
        stdin=keys_read, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        err = read_until(process, "stderr", b"connected to")
        os.write(keys_write, b"ls\r")
        os.write(board, b"U-Boot SPL 2025.01\r\n")  # the board's side, to be recorded
        # On the screen, so read and recorded: the transcript holds it before the signal.
        read_until(process, "stdout", b"U-Boot SPL 2025.01\r\n")
        process.send_signal(stop)
        _, rest = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for fd in (board, line, keys_read, keys_write):
            os.close(fd)
    said = (err + rest).decode()
    assert process.returncode == 130, said
    assert "evbench: interrupted" in said and "Traceback" not in said
    # Where the reads split the board's bytes into records depends on timing.
    assert b"U-Boot SPL 2025.01\r\n" in transcript_streams(transcript)["<"]
