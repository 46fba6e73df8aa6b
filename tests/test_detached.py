"""Detached runs on the board (evbench_agent.run.detached): states, follow, seal, one run per
id. A real sleeping Python naming the run directory stands in for a live or dead agent."""

import io
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evbench_agent.run import detached
from evbench_core import results
from evbench_core.errors import ExitCode, UserError


def fake_launch(run_dir: Path, pid: int, boot_id: str | None = None) -> None:
    run_dir.mkdir(parents=True)
    (run_dir / detached.PROGRESS).write_bytes(b"")
    launched = {"pid": pid, "boot_id": boot_id or detached.boot_id(), "started": time.time()}
    (run_dir / detached.LAUNCH).write_text(json.dumps(launched))


@pytest.fixture
def sleeper(tmp_path):
    """A live process whose command line names the run directory, as the agent's does."""
    run_dir = tmp_path / "runs" / "r1"
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(run_dir)])
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{process.pid}/cmdline").read_bytes():  # empty until exec is over
        assert time.monotonic() < deadline, "the process did not start"
        time.sleep(0.01)
    yield run_dir, process
    process.kill()
    process.wait()


def test_states_absent_running_stopped_recycled_rebooted_finished(sleeper, tmp_path):
    run_dir, process = sleeper
    assert detached.status(run_dir)["state"] == "absent"
    fake_launch(run_dir, process.pid)
    assert detached.status(run_dir)["state"] == "running"
    process.kill()
    process.wait()
    stopped = detached.status(run_dir)
    assert stopped["state"] == "stopped" and "ended without a word" in stopped["reason"]
    recycled = tmp_path / "runs" / "r3"
    fake_launch(recycled, os.getpid())  # a live pid, but its process does not name the run
    assert detached.status(recycled)["state"] == "stopped"
    other = tmp_path / "runs" / "r2"
    fake_launch(other, process.pid, boot_id="another-boot")
    assert detached.status(other)["reason"] == "the board rebooted during the run"
    (other / detached.EXIT).write_text("0\n")
    assert detached.status(other) | {"boot_id": None} == {
        "run_id": "r2", "boot_id": None, "state": "finished", "exit": 0, "reason": None,
        "complete": False,
    }  # fmt: skip


def test_follow_sends_heartbeats_then_the_final_status(sleeper, monkeypatch):
    run_dir, process = sleeper
    fake_launch(run_dir, process.pid)
    (run_dir / detached.PROGRESS).write_bytes(b'{"event": "start"}\n{"event": "adv')
    monkeypatch.setattr(detached, "HEARTBEAT_SECONDS", 0.3)
    written = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(written, encoding="utf-8"))

    def end_after_a_heartbeat() -> None:
        # The run ends once a heartbeat went out (or a minute passed), not after a fixed time.
        deadline = time.monotonic() + 60
        while b"heartbeat" not in written.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        (run_dir / detached.EXIT).write_text("4\n")

    ender = threading.Thread(target=end_after_a_heartbeat)
    ender.start()
    final = detached.follow(run_dir, offset=0)
    ender.join()
    lines = written.getvalue().decode().splitlines()
    assert lines[0] == '{"event": "start"}'  # the half-written line is held back
    assert '{"event": "heartbeat"}' in lines[1:]
    assert final["state"] == "finished" and final["exit"] == ExitCode.PARTIAL
    assert final["offset"] == len(b'{"event": "start"}\n')


def test_seal_keeps_what_was_measured_as_partial(tmp_path):
    run_dir = tmp_path / "runs" / "r1"
    # What a run cut by power loss leaves: a running manifest and raw samples only.
    directory = run_dir / detached.RESULTS
    directory.mkdir(parents=True)
    manifest = {"format": results.FORMAT, "version": results.VERSION, "run_id": "r1"}
    results.write_json(directory / results.MANIFEST, {**manifest, "status": "running"})
    sample = results.SampleSet("codec", "seed", "json", "encode", "s", {}, [1e-6, 2e-6])
    (directory / results.SAMPLES).write_text(json.dumps(sample.as_dict()) + "\n")
    detached.seal(run_dir, "the board rebooted during the run")
    assert results.verify_checksums(directory) == []
    run = results.load_run(directory)
    assert run.manifest["status"] == "partial" and not run.complete
    assert [r["n"] for r in run.records] == [2]
    assert detached.status(run_dir)["reason"] == "the board rebooted during the run"


def _stopped_run(run_dir: Path, status: str, samples: bytes, boot_id: str | None = None) -> Path:
    """A run the agent stopped writing (a live pid not naming it unless `boot_id` differs)."""
    fake_launch(run_dir, os.getpid(), boot_id)
    directory = run_dir / detached.RESULTS
    directory.mkdir()
    manifest = {"format": results.FORMAT, "version": results.VERSION, "run_id": run_dir.name}
    results.write_json(directory / results.MANIFEST, {**manifest, "status": status})
    (directory / results.SAMPLES).write_bytes(samples)
    return directory


def _seal_by_the_agent(run_dir: Path) -> dict:
    """`evbench-agent seal`, as the host runs it on the board (usecases/remote_run.settle)."""
    argv = [sys.executable, "-m", "evbench_agent", "seal", "--run-dir", str(run_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _line(metric: str, unit: str, values: list[float]) -> bytes:
    sample = results.SampleSet("codec", "seed", "json", metric, unit, {}, values)
    return json.dumps(sample.as_dict()).encode() + b"\n"


def test_seal_after_a_reboot_skips_a_samples_line_the_power_cut_zeroed(tmp_path):
    damaged = bytearray(_line("decode", "s", [3e-6, 4e-6]))
    damaged[10:40] = bytes(30)  # a stretch of the line never reached the disk
    samples = _line("encode", "s", [1e-6, 2e-6]) + damaged + _line("size", "bytes", [10, 20, 30])
    run_dir = tmp_path / "runs" / "r1"
    directory = _stopped_run(run_dir, "running", samples, boot_id="another-boot")
    final = _seal_by_the_agent(run_dir)  # a strict read of the samples refused to seal it
    assert (final["state"], final["exit"], final["complete"]) == ("finished", 4, False)
    assert final["reason"] == "the board rebooted during the run"
    run = results.load_run(directory)
    assert run.manifest["status"] == "partial" and not run.complete
    assert {r["metric"]: r["n"] for r in run.records} == {"encode": 2, "size": 3}
    assert results.verify_checksums(directory) == []


def test_seal_of_a_run_killed_before_its_complete_marker_is_partial(tmp_path):
    run_dir = tmp_path / "runs" / "r2"
    directory = _stopped_run(run_dir, "complete", _line("encode", "s", [1e-6, 2e-6]))
    final = _seal_by_the_agent(run_dir)
    assert (final["state"], final["exit"], final["complete"]) == ("finished", 4, False)
    run = results.load_run(directory)
    assert run.manifest["status"] == "partial" and not run.complete  # it said "complete"
    assert run.manifest["reason"] == "the agent process ended without a word"


def test_launch_refuses_a_run_id_that_exists(tmp_path):
    run_dir = tmp_path / "runs" / "r1"
    run_dir.mkdir(parents=True)
    with pytest.raises(UserError, match="already exists"):
        detached.launch(run_dir, ["run", "--quick"])
    assert list(run_dir.iterdir()) == []  # nothing written into the other run


def test_launch_names_what_it_cannot_create_as_a_users_error(tmp_path):
    # dir=PATH is the user's choice: an OSError making the run's directory is theirs to fix,
    # named. Root passes every permission: a file in the way and a name too long refuse.
    in_the_way = tmp_path / "in-the-way"
    in_the_way.write_text("")
    too_long = tmp_path / "runs" / ("r" * 300)
    refused = {
        in_the_way / "runs" / "r1": f"cannot create {in_the_way}/runs for the run: Not a directory",
        # A file where the runs' folder goes: no run "already exists" there.
        in_the_way / "r1": f"cannot create {in_the_way} for the run: File exists",
        # Cut in the message: a run id may be as long as its caller made it.
        too_long: f"cannot create {str(too_long)[:200]}... for the run: File name too long",
    }
    for run_dir, says in refused.items():
        with pytest.raises(UserError) as raised:
            detached.launch(run_dir, ["run", "--quick"])
        assert str(raised.value) == says
    # As the host meets it: the agent's one error line, exit 2.
    argv = [sys.executable, "-m", "evbench_agent", "launch", "--run-dir", str(in_the_way / "r1")]
    done = subprocess.run([*argv, "--", "run", "--quick"], capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"evbench-agent: error: cannot create {in_the_way} "), done.stderr


def test_launch_with_relative_paths_runs_where_the_caller_meant(tmp_path, monkeypatch):
    # The remote path passes the board's work directory as given, often relative.
    monkeypatch.chdir(tmp_path)
    run_dir = Path("work") / "runs" / "r2"
    argv = ["run", "--suite", "codec", "--profile", "int", "--codecs", "json", "--quick"]
    launcher = [sys.executable, "-m", "evbench_agent", "launch", "--run-dir", str(run_dir), "--"]
    subprocess.run([*launcher, *argv, "--out", str(run_dir / detached.RESULTS)], check=True)
    deadline = time.monotonic() + 300
    while detached.status(run_dir)["state"] == "running":
        assert time.monotonic() < deadline, "the detached run did not end"
        time.sleep(0.2)
    assert detached.status(run_dir)["state"] == "finished"
    assert (tmp_path / run_dir / detached.RESULTS / results.COMPLETE).exists()
