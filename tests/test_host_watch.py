"""The agent stops when its host goes away (docs/running.md): `evbench run --board local`
SIGKILLed mid-run, its agent (reparented to init) and link responder end within the 0.5 s
watch plus a run's stop; the run is kept, marked interrupted."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import process_tree
import pytest

#: The agent starts to stop within 0.5 s; stopping a run (the phase cut, its samples written
#: and summarized) takes a few seconds more on a loaded machine.
STOP_WITHIN_S = 15.0


def _wait_ended(pids: list[int], within_s: float) -> list[int]:
    """The pids still running after `within_s`."""
    deadline = time.monotonic() + within_s
    return [p for p in pids if not process_tree.ended(p, max(0.0, deadline - time.monotonic()))]


def _phase_started(markers: Path) -> bool:
    lines = markers.read_text().splitlines() if markers.exists() else []
    return any('"event": "start", "suite": "link"' in line for line in lines)


@pytest.mark.integration
def test_a_local_run_and_its_responder_stop_when_the_host_is_killed(tmp_path: Path):
    out = tmp_path / "run"
    # a link run of 12 phases of 60 s: it would go on for about 12 minutes by itself
    argv = [sys.executable, "-m", "evbench", "run", "--board", "local", "--suite", "link"]
    argv += ["--quick", "--duration", "60", "--out", str(out), "--no-history"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    host = subprocess.Popen(argv, **quiet, start_new_session=True)
    left: list[int] = []
    try:
        deadline = time.monotonic() + 60
        agent = responder = None
        while time.monotonic() < deadline and (agent is None or responder is None):
            for pid in process_tree.descendants(host.pid):  # b"" once ended: no race
                command = process_tree.read_proc(pid, "cmdline").replace(b"\0", b" ").decode()
                if "evbench_agent" in command and " serve" in command:
                    responder = pid
                elif "evbench_agent" in command and " run" in command:
                    agent = pid
            time.sleep(0.2)
        assert agent is not None and responder is not None, "the run never started its link suite"
        # Into its first phase: its start marker, not a fixed wait (short on a loaded machine).
        while time.monotonic() < deadline and not _phase_started(out / "markers.jsonl"):
            time.sleep(0.05)
        assert _phase_started(out / "markers.jsonl"), "the link suite never started a phase"
        host.send_signal(signal.SIGKILL)
        host.wait(10)
        left = _wait_ended([agent, responder], STOP_WITHIN_S)
        assert left == [], f"still running {STOP_WITHIN_S:g} s after the host was killed"
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "interrupted"
        assert not (out / "complete").exists()
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        for pid in left:
            os.kill(pid, signal.SIGKILL)


@pytest.mark.integration
def test_a_responder_stops_when_the_program_that_started_it_is_killed():
    code = ("import time\nfrom evbench_agent.link.service import start_responder\n"
            "responder = start_responder()\n"
            "print(responder.pid, flush=True)\ntime.sleep(600)\n")  # fmt: skip
    starter = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = None
    try:
        pid = int(starter.stdout.readline())
        assert not process_tree.ended(pid, 0)
        starter.send_signal(signal.SIGKILL)
        starter.wait(10)
        # the watch looks every 0.5 s; the responder then closes its port and exits
        assert _wait_ended([pid], 5.0) == []
    finally:
        if starter.poll() is None:
            starter.kill()
            starter.wait()
        starter.stdout.close()
        if pid is not None and not process_tree.ended(pid, 0):
            os.kill(pid, signal.SIGKILL)
