"""evbench console: a pass-through terminal on a real login prompt, quit key, transcript."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration


def test_console_passes_keys_and_output_and_quits_on_ctrl_bracket(console_line, tmp_path):
    transcript = tmp_path / "session.transcript"
    command = [sys.executable, "-m", "evbench", "console", "--board", console_line.url]
    process = subprocess.Popen(
        [*command, "--transcript", str(transcript)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Keys only once it is connected: typed earlier, they would all arrive
        # at once, the quit key with them.
        assert b"Ctrl-] quits" in process.stderr.readline()
        process.stdin.write(b"\r")
        process.stdin.flush()
        time.sleep(2)
        process.stdin.write(b"\x1d")  # Ctrl-]
        process.stdin.flush()
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert b"login: " in out
    assert str(transcript).encode() in err
    text = transcript.read_text()
    assert "> b'\\r'" in text and "login: " in text
    assert "\\x1d" not in text  # the quit key stays on this side
