"""The board password never reaches a child process, and a killed agent leaves an honest
partial run (issue 16, item 6): `evbench run --board local` end to end, real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from process_tree import descendants, read_proc
from test_agent_secrets import run_watched

from evbench_core import results

EVBENCH = [sys.executable, "-m", "evbench"]
QUICK_CODEC = ["--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf"]
PIPE = subprocess.PIPE


def _cmdline(pid: int) -> str:
    return read_proc(pid, "cmdline").replace(b"\0", b" ").decode()


def test_no_child_of_a_run_inherits_the_password(tmp_path):
    # The watch of test_agent_secrets.py (children's /proc/PID/environ), over the host too.
    secrets = {"EVBENCH_PASSWORD": "evbench-sentinel-" + os.urandom(6).hex()}
    out = tmp_path / "run"
    argv = [*EVBENCH, "run", "--board", "local", *QUICK_CODEC, "--quick", "--out", str(out)]
    watch, _stderr = run_watched(argv, secrets)
    assert watch.saw("evbench_agent"), watch.seen  # it did look
    assert watch.leaked == {}
    assert watch.files_holding(out) == []  # nor does any file the run leaves


def test_a_killed_agent_leaves_a_partial_run_and_exit_4(tmp_path):
    out = tmp_path / "run"
    argv = [*EVBENCH, "run", "--board", "local", *QUICK_CODEC, "--out", str(out)]
    process = subprocess.Popen(argv, stdout=PIPE, stderr=PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / results.SAMPLES).exists():
            assert time.monotonic() < deadline and process.poll() is None, "the run never began"
            time.sleep(0.05)
        agents = [p for p in descendants(process.pid) if "evbench_agent run" in _cmdline(p)]
        assert agents, "no agent process found"
        while not (workers := descendants(agents[0])):  # its workers and sampler
            assert time.monotonic() < deadline, "the agent started no worker"
            time.sleep(0.02)
        os.kill(agents[0], signal.SIGKILL)  # as the OOM killer would
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 4, stderr
    assert "PARTIAL" in stderr and "partial results in" in stderr and "killed" in stderr
    manifest = json.loads((out / results.MANIFEST).read_text())
    assert manifest["status"] == "partial"
    assert manifest["reason"] == "the agent was killed (signal 9)"
    assert stdout.splitlines()[0] == "PARTIAL: the agent was killed (signal 9)"  # said first
    report = (out / "report.md").read_text()
    assert report.splitlines()[0] == "**PARTIAL: the agent was killed (signal 9)**"
    assert not (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    summary = json.loads((out / results.SUMMARY).read_text())
    assert summary["partial"] is True
    # No worker of the dead agent goes on writing into the sealed run.
    assert [pid for pid in workers if _cmdline(pid)] == []
