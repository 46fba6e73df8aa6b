"""--quiet prints only errors; a full disk is the user's error, told in one line, with the
run kept and marked partial: real runs of `evbench run`, a real tmpfs for the full disk.
Third-party loggers stay quiet unless --debug: a real paramiko failure on loopback."""

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import require, require_command

pytestmark = pytest.mark.integration  # real agent runs, a real tmpfs, paramiko on loopback

EVBENCH = [sys.executable, "-m", "evbench"]
#: The smallest run that measures something: one profile, two codecs, the quick plan.
SMALL_RUN = ["run", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*EVBENCH, *argv], capture_output=True, text=True, timeout=600)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str):
    """A real small file system: writes past `size` fail with ENOSPC."""
    require(os.geteuid() == 0, "root, to mount a tmpfs")
    mount = require_command("mount")
    where.mkdir()
    subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run([require_command("umount"), str(where)], check=False)


def test_quiet_run_prints_nothing_at_all_when_all_goes_well(tmp_path):
    out = tmp_path / "run"
    done = _evbench(*SMALL_RUN, "--quick", "--quiet", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stderr == "" and done.stdout == ""  # a cron job mails whatever is printed
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    assert (out / "report.html").is_file()  # quiet, not idle: the report is still written


def test_a_disk_filling_up_during_the_run_is_exit_4_in_one_line_with_a_partial_run(tmp_path):
    # 280 KiB: a 256 KiB reserve, the manifest and the first samples (of some 35 KB), then ENOSPC.
    with _tmpfs(tmp_path / "small", "280k") as disk:
        out = disk / "run"
        done = _evbench(*SMALL_RUN, "--quick", "--quiet", "--out", str(out))
        lines = done.stderr.splitlines()
        assert done.returncode == 4 and len(lines) == 1, done.stderr
        assert lines[0].startswith(f"PARTIAL run (cannot write the results in {out}: No space")
        assert "internal error" not in done.stderr
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "partial"
        assert "No space left on device" in manifest["reason"]
        # What was written is whole: every line of samples.jsonl is a JSON object.
        samples = (out / "samples.jsonl").read_text().splitlines()
        assert samples and all(json.loads(line)["suite"] for line in samples)


def test_a_disk_too_small_to_start_is_a_usage_error_and_nothing_is_left_running(tmp_path):
    with _tmpfs(tmp_path / "tiny", "64k") as disk:
        out = disk / "run"
        done = _evbench(*SMALL_RUN, "--quick", "--out", str(out))
        assert done.returncode == 2, done.stderr
        errors = [line for line in done.stderr.splitlines() if ": error: " in line]
        full = f"cannot write the results in {out}: No space left on device"
        assert errors == [f"evbench: error: {full}"]
        assert "internal error" not in done.stderr
        assert not (out / "manifest.json").exists()  # refused before the run began


def test_vv_shows_evbench_s_own_steps_and_no_third_party_chatter(tmp_path):
    out = tmp_path / "run"
    done = _evbench("-vv", *SMALL_RUN, "--quick", "--out", str(out))
    assert done.returncode == 0, done.stderr
    said = done.stderr.splitlines()
    assert any(line.startswith("evbench: info: run ") and str(out) in line for line in said)
    assert "evbench: info: suite codec: started (9 steps)" in said  # 1 calibration + 8 workers
    assert "evbench: info: suite codec: finished" in said
    assert "evbench: info: the agent exited with 0" in said
    assert f"evbench: info: writing the report into {out}" in said
    assert any(line.startswith("evbench: info: history: adding run ") for line in said)
    # -vv's detail names the module it comes from: evbench's own, never a library's.
    detail = [line for line in said if line.startswith("evbench: debug: ")]
    agent = "evbench: debug: [evbench.commands.run] the agent: "
    assert any(line.startswith(agent) for line in detail)
    own = ("evbench: debug: [evbench.", "evbench: debug: [evbench_agent.")
    assert [line for line in detail if not line.startswith(own)] == []
    # matplotlib's font search (292 lines at -vv; still there with --debug) stays at warnings
    assert not [line for line in said if "findfont" in line or "matplotlib" in line]


# A TCP server on loopback resets the connection; paramiko's transport thread then logs
# "Exception (client): Error reading SSH protocol banner" and its traceback at ERROR.
PARAMIKO_FAILS = textwrap.dedent(
    """
    import socket, sys, threading
    import paramiko
    from evbench_core.log_output import setup_logging

    setup_logging("evbench", 0, False, debug=sys.argv[1] == "debug")
    server = socket.create_server(("127.0.0.1", 0))

    def refuse():
        connection, _ = server.accept()
        connection.recv(256)  # the client's banner: then the board goes away
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\\x01\\0\\0\\0\\0\\0\\0\\0")
        connection.close()  # a reset, as from a board that went away

    threading.Thread(target=refuse, daemon=True).start()
    sock = socket.create_connection(server.getsockname(), timeout=10)
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=10)
    except paramiko.SSHException:
        pass
    transport.close()
    import logging
    logging.getLogger("paramiko.transport").info("connected (version 2.0, client OpenSSH)")
    logging.getLogger("paramiko.transport").error("a plain error line from the library")
    """
)


def _paramiko_stderr(mode: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PARAMIKO_FAILS, mode], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_paramiko_s_traceback_and_chatter_show_only_with_debug() -> None:
    # Without --debug: no traceback, no error, none of its INFO chatter (below the cap); what
    # the library says outside a traceback still shows, as a warning, and nothing else.
    quiet = _paramiko_stderr("quiet")
    assert quiet.splitlines() == ["evbench: warning: a plain error line from the library"]
    debug = _paramiko_stderr("debug")
    assert "Traceback (most recent call last):" in debug
    assert "evbench: error: Exception (client): Error reading SSH protocol banner" in debug
