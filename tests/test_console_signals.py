"""SIGTERM and SIGHUP end `evbench console` as quitting does: terminal and link given
back, the transcript kept, exit 130 (a closed terminal sends SIGHUP; a service, SIGTERM).

The board is the far end of a real pty pair; nothing answers on it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from console_rig import transcript_streams

pytestmark = pytest.mark.integration  # a real pty pair and the evbench program

EVBENCH = str(Path(sys.executable).parent / "evbench")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_ends_the_console_with_its_transcript(tmp_path: Path, stop: int) -> None:
    board, line = os.openpty()
    keys_read, keys_write = os.pipe()  # typed keys: an open pipe that never ends
    transcript = tmp_path / "console.log"
    process = subprocess.Popen(
        [EVBENCH, "console", "--board", f"serial://{os.ttyname(line)}",
         "--transcript", str(transcript)],
        stdin=keys_read, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        err = ""
        while "connected to" not in err:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            err += os.read(process.stderr.fileno(), 4096).decode()
        os.write(keys_write, b"ls\r")
        os.write(board, b"U-Boot SPL 2025.01\r\n")  # the board's side, to be recorded
        time.sleep(1.0)
        process.send_signal(stop)
        _, rest = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for fd in (board, line, keys_read, keys_write):
            os.close(fd)
    err += rest
    assert process.returncode == 130, err
    assert "evbench: interrupted" in err and "Traceback" not in err
    # Where the reads split the board's bytes into records depends on timing.
    assert b"U-Boot SPL 2025.01\r\n" in transcript_streams(transcript)["<"]
