"""`evbench lab run` on the local board (the lab, its entries and the agent real): lab.json
and `lab status` when the lab is stopped after an entry's measurement (SIGTERM, as systemd
sends it) or killed outright (SIGKILL, as the OOM killer does)."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from process_tree import descendants, read_proc
from test_labgrid_board import wait_while_running

from evbench_core import results

EVBENCH = str(Path(sys.executable).parent / "evbench")
ENTRY = "local/codec-seed-json"


def _plan(tmp_path: Path, options: str, profiles: str = "[seed]") -> Path:
    path = tmp_path / "LAB.yaml"
    matrix = f"matrix:\n  suites: [codec]\n  profiles: {profiles}\n  codecs: [json]\n"
    path.write_text(f"boards: [local]\n{matrix}options: {options}\nretries: 0\n")
    return path


def _start(tmp_path: Path, plan: Path, lab_dir: Path) -> subprocess.Popen:
    # A session of its own: the test can signal the lab and its entries as a group.
    return subprocess.Popen(
        [EVBENCH, "lab", "run", str(plan), "--out", str(lab_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip


def _status(lab_dir: Path) -> subprocess.CompletedProcess:
    argv = [EVBENCH, "lab", "status", str(lab_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def _end_group(job: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(job.pid, signal.SIGKILL)
    job.wait(timeout=60)
    if job.stdout is not None:
        job.stdout.close()


def test_an_entry_stopped_after_its_measurement_is_complete(tmp_path: Path) -> None:
    # Stopped once the run holds its `complete` marker (the agent may still be exiting, the
    # entry drawing its report): the run is whole and stays sealed, so the entry is complete.
    for _attempt in range(3):  # the entry may end before the signal lands: try again
        lab_dir = tmp_path / f"lab{_attempt}"
        job = _start(tmp_path, _plan(tmp_path, "[--quick]"), lab_dir)
        marker = lab_dir / "runs" / ENTRY / results.COMPLETE
        try:
            wait_while_running(job, marker.exists, "the entry never completed", 300, 0.005)
            # SIGTERM as systemd sends it; the lab passes it on to the entry's `evbench run`
            # (every 0.5 s): here it reaches the entry (the lab's child processes) at once too.
            entries = [child.pid for child in psutil.Process(job.pid).children()]
            job.send_signal(signal.SIGTERM)
            for pid in entries:
                os.kill(pid, signal.SIGTERM)
            out, _ = job.communicate(timeout=300)
        finally:
            _end_group(job)
        if not entries:
            continue  # the entry had ended before the signal: it shows nothing
        (entry,) = json.loads((lab_dir / "lab.json").read_text())["entries"]
        # The entry exits 0 (its run sealed before the signal), 130, or -15 (killed once its
        # handler is gone), never partial; the lab 130 when it saw the signal (and says so),
        # 0 when it came as the lab was ending.
        assert entry["exit_code"] in (0, 130, -signal.SIGTERM), entry
        assert job.returncode == (130 if "lab: interrupted" in out else 0), out
        assert entry["status"] == "complete", (entry, out)
        assert results.verify_checksums(lab_dir / entry["run_dir"]) == []
        assert marker.is_file()
        return
    pytest.fail("the entry ended before the signal every time")


def test_lab_status_says_when_the_runner_was_killed(tmp_path: Path) -> None:
    lab_dir = tmp_path / "lab"
    # The full plan: long enough to be running when the lab is killed.
    job = _start(tmp_path, _plan(tmp_path, "[]", "['seed,ev-full,int,double']"), lab_dir)
    try:
        index = lab_dir / "lab.json"
        started = lambda: index.exists() and '"running"' in index.read_text()  # noqa: E731
        wait_while_running(job, started, "the entry never started", 300, 0.05)
        running = _status(lab_dir).stdout
        assert running.rstrip().endswith("the lab is running"), running
        job.send_signal(signal.SIGKILL)  # the runner alone, as the OOM killer would
        job.wait(timeout=60)
        done = _status(lab_dir).stdout
    finally:
        _end_group(job)
    assert "the lab is running" not in done
    assert f"the lab is not running: its runner, PID {job.pid} on" in done, done
    assert "killed" in done.splitlines()[2], done  # the entry's row
    # PIDs are reused: the runner's PID now this test's (started at another time than the
    # one recorded) names the runner as gone too.
    document = json.loads((lab_dir / "lab.json").read_text())
    document["runner"]["pid"] = os.getpid()
    (lab_dir / "lab.json").write_text(json.dumps(document))
    reused = _status(lab_dir).stdout
    assert f"PID {os.getpid()} on" in reused, reused
    assert "another process has that PID now" in reused


def test_the_nightly_comparison_reads_the_store_the_entries_history_option_names(tmp_path):
    # LAB.yaml's --history sends the runs to a store of their own; the autouse fixture's
    # EVBENCH_HISTORY names another, empty one. Night 2's baseline is night 1's run.
    store = tmp_path / "lab-history.sqlite"
    options = f"[--quick, --processes, 1, --history, '{store}']"
    plan = _plan(tmp_path, options)
    for night in ("night-1", "night-2"):
        done = subprocess.run([EVBENCH, "lab", "run", str(plan), "--out", str(tmp_path / night)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        # 3: night 2 regressed against night 1, the machine's doing (a shared VM's speed
        # drifts 2x within minutes); which store the comparison read is what is checked.
        assert done.returncode in (0, 3), done.stdout + done.stderr
    (entry,) = json.loads((tmp_path / "night-2" / "lab.json").read_text())["entries"]
    assert entry["comparison"]["baseline"] == str(tmp_path / "night-1" / "runs" / ENTRY), entry
    # and compare confirms changes against that store's nights, not EVBENCH_HISTORY's
    table = (tmp_path / "night-2" / "logs" / f"{ENTRY}.compare.txt").read_text()
    assert f"history: sqlite:///{store}, board " in table, table
    # --no-history: no store holds the runs, and the comparison says why it has none.
    plan = _plan(tmp_path, "[--quick, --processes, 1, --no-history]")
    done = subprocess.run([EVBENCH, "lab", "run", str(plan), "--out", str(tmp_path / "none")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (entry,) = json.loads((tmp_path / "none" / "lab.json").read_text())["entries"]
    assert entry["comparison"]["note"] == "no history: the entry runs with --no-history"


def _agent_of(job: subprocess.Popen, out: Path) -> int | None:
    for pid in descendants(job.pid):
        argv = read_proc(pid, "cmdline").split(b"\0")
        if b"evbench_agent" in argv and b"run" in argv and str(out).encode() in argv:
            return pid
    return None


def test_an_entry_stopped_by_a_signal_of_its_own_does_not_stop_the_lab(tmp_path: Path) -> None:
    # Two boards, two entries each. The first entry of board `here` has its agent killed
    # with SIGTERM (someone on the board stops it): that entry alone fails, not retried
    # (retries: 1), and the lab, never signalled itself, runs every other entry.
    path = tmp_path / "LAB.yaml"
    path.write_text(
        "boards: [{board: local, name: here}, {board: local, name: there}]\n"
        "matrix: {suites: [codec], profiles: [seed, ev-full], codecs: [json]}\n"
        "options: [--quick, --processes, '1', --no-history]\nretries: 1\n"
    )
    lab_dir = tmp_path / "lab"
    job = _start(tmp_path, path, lab_dir)
    out = lab_dir / "runs" / "here" / "codec-seed-json"
    try:
        # Its agent, once it has written its manifest (its signal handlers are set by then).
        def running() -> bool:
            return (out / results.MANIFEST).exists() and _agent_of(job, out) is not None

        wait_while_running(job, running, "the entry's agent never ran", 300, 0.005)
        agent = _agent_of(job, out)
        assert agent is not None
        os.kill(agent, signal.SIGTERM)
        output, _ = job.communicate(timeout=600)
    finally:
        _end_group(job)
    document = json.loads((lab_dir / "lab.json").read_text())
    entries = {entry["id"]: entry for entry in document["entries"]}
    assert document["interrupted"] is None, output
    killed = entries["here/codec-seed-json"]
    assert (killed["status"], killed["exit_code"], killed["attempts"]) == ("interrupted", 130, 1)
    for other in ("here/codec-ev-full-json", "there/codec-seed-json", "there/codec-ev-full-json"):
        assert entries[other]["status"] == "complete", (entries[other], output)
    assert job.returncode == 4, output  # some entry did not complete
