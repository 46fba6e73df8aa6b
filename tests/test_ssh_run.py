"""deploy, run, fetch and resume through a real OpenSSH sshd on loopback, and the link suite
over it (`--peer host|board`). The board is this machine with Debian's python3 (protobuf,
psutil); a drop kills the connection's sshd."""

import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import process_tree
import psutil
import pytest
from conftest import ROOT, require, require_command

from evbench.boards.base import ConnectionLost
from evbench.cli import evbench
from evbench.usecases import remote_run
from evbench_agent.run import detached
from evbench_core import results
from evbench_core.errors import UserError

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"
EVBENCH = str(Path(sys.executable).parent / "evbench")
AGENT_SRC = Path(__file__).resolve().parent.parent / "agent" / "src"
QUICK = ["--quick", "--suite", "codec", "--codecs", "json,protobuf"]
#: Long enough (several seconds) to stop the run while it measures.
SLOW_PROFILES = ["--profile", "seed,ev-full,int,double,ten-strings"]
#: The quick link plan at 100 Hz: the link tests check the wiring, not the figures.
LINK = ["--suite", "link", "--codecs", "json,protobuf", "--profile", "seed", "--quick",
        "--rate", "100"]  # fmt: skip


@pytest.fixture
def board(sshd, ssh_home, tmp_path):
    work = tmp_path / "board"
    return work, f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"


def start_cli(*argv: str) -> subprocess.Popen:
    # HOME is the test's, set by ssh_home.
    return subprocess.Popen(
        [EVBENCH, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def run_cli(*argv: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EVBENCH, *argv], capture_output=True, text=True, timeout=timeout)


def shell_words(command: str) -> list[str]:
    """`command` split as a POSIX shell splits it, its operators (&, ;, |) words apart."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return list(lexer)


def board_runs(work: Path) -> list[Path]:
    runs = work / "runs"
    return sorted(runs.iterdir()) if runs.is_dir() else []


def wait_for(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def advances(run_dir: Path) -> int:
    path = run_dir / detached.PROGRESS
    return path.read_text().count('"event": "advance"') if path.exists() else 0


def codec_shape(run: results.Run) -> list[tuple]:
    """What the codec records measure and how many samples each has (not their values)."""
    records = (r for r in run.records if r["suite"] == "codec")
    # The machine-state records (contention_*) have no profile or codec: None sorts first.
    return sorted((r["profile"] or "", r["codec"] or "", r["metric"], r["n"]) for r in records)


def assert_each_sample_once(out: Path, board_results: Path) -> None:
    keys = [
        (s.suite, s.profile, s.codec, s.metric, json.dumps(s.params, sort_keys=True), s.worker)
        for s in results.read_samples(out)
    ]
    assert keys and len(keys) == len(set(keys))
    assert (out / results.SAMPLES).read_bytes() == (board_results / results.SAMPLES).read_bytes()


def test_deploy_installs_once_and_keeps_an_image_agent(sshd, board, capsys, tmp_path):
    work, url = board
    assert evbench(["deploy", "--board", url]) == 0
    assert "installed" in capsys.readouterr().err
    zipapp = work / "agent" / "evbench-agent.pyz"
    first = zipapp.stat().st_mtime_ns
    # The zipapp is this host's byte for byte: the broken agent is not started to ask it.
    (copy,) = (work / "agent").glob("evbench-agent-*/")  # what its first start unpacked
    cli = copy / "evbench_agent" / "cli.py"
    working = cli.read_text()
    cli.write_text("raise SystemExit(9)\n")
    assert evbench(["deploy", "--board", url]) == 0
    assert "up to date" in capsys.readouterr().err
    assert zipapp.stat().st_mtime_ns == first
    cli.write_text(working)
    zipapp.unlink()
    # An agent installed in the image: the same package, run by the board's python3.
    image_agent = sshd.image_bin / "evbench-agent"
    image_agent.write_text(
        f'#!/bin/sh\nPYTHONPATH={AGENT_SRC} exec {BOARD_PYTHON} -m evbench_agent "$@"\n'
    )
    image_agent.chmod(0o755)
    try:
        assert evbench(["deploy", "--board", url]) == 0
        assert "in the image: left alone" in capsys.readouterr().err
        assert not zipapp.exists()
        # An older release in the image is refused, with what to do.
        old = tmp_path / "old-agent"
        for package in ("evbench_agent", "evbench_core"):  # an image installs both
            shutil.copytree(AGENT_SRC / package, old / package)
        init = old / "evbench_agent" / "__init__.py"
        init.write_text(init.read_text().replace('__version__ = "', '__version__ = "0.0.0-was-'))
        image_agent.write_text(
            f'#!/bin/sh\nPYTHONPATH={old} exec {BOARD_PYTHON} -m evbench_agent "$@"\n'
        )
        assert evbench(["deploy", "--board", url]) == 2
        hint = capsys.readouterr().err.split("hint: ", 1)[1]
        # Pasted into a shell as given: the URL's & would send the command to the background.
        assert shell_words(hint.split("`")[1]) == ["evbench", "deploy", "--board", url, "--force"]
        assert evbench(["deploy", "--board", url, "--force"]) == 0
        assert zipapp.exists()
    finally:
        image_agent.unlink()


def test_ssh_run_matches_a_local_run_and_starts_the_agent_twice(sshd, ssh_home, tmp_path, capsys):
    """A run over SSH writes what a local run writes; it starts a deployed agent only twice
    (launch, follow: each start costs seconds on a slow board)."""
    work = tmp_path / "board"
    calls = tmp_path / "python-calls"
    python = tmp_path / "python3"  # the board's interpreter, noting each call's arguments
    python.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1 $2" >> {calls}\nexec {BOARD_PYTHON} "$@"\n')
    python.chmod(0o755)
    url = f"ssh://{sshd.address}?dir={work}&python={python}"
    assert evbench(["deploy", "--board", url]) == 0
    calls.unlink()
    remote_out, local_out = tmp_path / "remote", tmp_path / "local"
    seed = [*QUICK, "--profile", "seed"]
    assert evbench(["run", "--board", url, *seed, "--out", str(remote_out)]) == 0
    agent = str(work / "agent" / "evbench-agent.pyz")
    started = [line.split()[1] for line in calls.read_text().splitlines() if line.startswith(agent)]
    assert started == ["launch", "follow"], calls.read_text()
    local = run_cli("run", "--board", "local", *seed, "--out", str(local_out))
    assert local.returncode == 0, local.stderr
    capsys.readouterr()
    assert results.verify_checksums(remote_out) == []
    assert (remote_out / results.COMPLETE).exists()
    local_files = {p.relative_to(local_out) for p in local_out.rglob("*") if p.is_file()}
    remote_files = {p.relative_to(remote_out) for p in remote_out.rglob("*") if p.is_file()}
    assert remote_files - {Path("agent.log")} == local_files - {Path("agent.log")}
    assert not [p for p in remote_files if p.name.startswith(".")]  # no fetch leftovers
    remote_run, local_run = results.load_run(remote_out), results.load_run(local_out)
    assert remote_run.manifest.keys() == local_run.manifest.keys()
    assert remote_run.manifest["platform"]["python"] != ""  # the board's python, recorded
    assert {r["suite"] for r in remote_run.records} == {r["suite"] for r in local_run.records}
    assert codec_shape(remote_run) == codec_shape(local_run)
    [run_dir] = board_runs(work)
    assert_each_sample_once(remote_out, run_dir / detached.RESULTS)


def _sizes(out: Path) -> dict[str, tuple]:
    summary = json.loads((out / "summary.json").read_text())
    sizes = [r for r in summary["records"] if r["metric"] == "size"]
    return {r["codec"]: (r["profile"], r["n"], r["min"], r["max"], r["mean"]) for r in sizes}


def test_a_user_schema_runs_over_ssh_like_locally(board, tmp_path, capsys):
    """The spec file travels; the board's python3 (protobuf 4.21) builds the class, no protoc."""
    _work, url = board
    data, message = ROOT / "tests" / "data" / "bms", "evbench.example.BmsStatus"
    run = [*QUICK, "--schema", str(data / "bms.proto"), "--message", message,
           "--samples", str(data / "bms_samples.jsonl")]  # fmt: skip
    remote_out, local_out = tmp_path / "remote", tmp_path / "local"
    assert evbench(["run", "--board", url, *run, "--out", str(remote_out)]) == 0
    assert f"schema:{message}" in capsys.readouterr().out
    local = run_cli("run", "--board", "local", *run, "--out", str(local_out), timeout=600)
    assert local.returncode == 0, local.stderr
    assert (remote_out / "complete").exists()
    manifest = json.loads((remote_out / "manifest.json").read_text())
    assert manifest["platform"]["protobuf"] == "4.21.12"  # the board's runtime built the class
    assert manifest["spec"]["schema"]["message"] == message
    remote, local = _sizes(remote_out), _sizes(local_out)
    assert remote == local and remote["protobuf"][1] == 12  # the file's 12 lines, both places


def test_the_acceptance_command_as_typed_resumes_the_same_run_after_a_drop(sshd, board, tmp_path):
    """`evbench run --board ssh://... --quick`, dropped mid-run: the run goes on, not relaunched."""
    work, url = board
    out = tmp_path / "out"
    process = start_cli("run", "--board", url, "--quick", "--out", str(out))
    wait_for(lambda: board_runs(work) and advances(board_runs(work)[0]) >= 2, "the run to start")
    [run_dir] = board_runs(work)
    assert not (run_dir / detached.EXIT).exists(), "the run ended before the drop"
    assert sshd.drop_connections() >= 1
    _stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr
    assert "reconnecting" in stderr and "reconnected" in stderr
    assert board_runs(work) == [run_dir]  # only one run on the board
    progress = (run_dir / detached.PROGRESS).read_text().splitlines()
    started = [json.loads(line)["suite"] for line in progress if '"event": "start"' in line]
    assert len(started) == len(set(started)) >= 2, started  # each suite once: never relaunched
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()
    on_board = {p.relative_to(run_dir / detached.RESULTS) for p in (run_dir / "results").rglob("*")}
    fetched = {p.relative_to(out) for p in out.rglob("*")}
    assert on_board <= fetched  # every file the agent wrote came over
    assert {r["suite"] for r in results.load_run(out).records} >= {"codec", "link"}
    assert_each_sample_once(out, run_dir / detached.RESULTS)


def link_peers(out: Path) -> set[str]:
    records = results.load_run(out).records
    # every link record but the board's wake-up probe, which involves no peer
    return {r["params"]["peer"] for r in records if r["suite"] == "link" and "peer" in r["params"]}


def responders_running(zipapp: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if str(zipapp) in cmdline and "serve" in cmdline:
            found.append(process)
    return found


@pytest.mark.parametrize(("peer", "where"), [("host", "this host"), ("board", "the board")])
def test_the_peer_puts_the_responder_where_it_says(board, tmp_path, peer, where):
    work, url = board
    out = tmp_path / "out"
    argv = ["run", "--board", url, *LINK, "--count", "6", "--peer", peer, "--out", str(out)]
    result = run_cli(*argv, timeout=600)
    assert result.returncode == 0, result.stderr
    assert f"link responder on {where} at 127.0.0.1:" in result.stderr
    [address] = link_peers(out)
    assert address.startswith("127.0.0.1:")  # not the agent's own loopback responder
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()
    if peer == "host":  # measured by the agent on the board
        [run_dir] = (work / "runs").iterdir()
        on_the_board = (run_dir / "results" / results.SAMPLES).read_bytes()
        assert on_the_board == (out / results.SAMPLES).read_bytes()
    else:  # this host measured; the board only answered, and its responder is gone
        assert not (work / "runs").exists()
        assert responders_running(work / "agent" / "evbench-agent.pyz") == []


def test_peer_host_needs_a_network_board(tmp_path, capsys):
    out = tmp_path / "o"
    assert evbench(["run", "--board", "local", *LINK, "--peer", "host", "--out", str(out)]) == 2
    assert "--peer host needs a board over the network" in capsys.readouterr().err


def test_connection_dropped_mid_link_run_keeps_every_message_once(sshd, board, tmp_path):
    work, url = board
    out = tmp_path / "out"
    count = 40  # per phase: 32 phases of 0.4 s, so the drop comes mid-run
    process = start_cli("run", "--board", url, *LINK, "--count", str(count), "--out", str(out))
    wait_for(lambda: any(map(advances, board_runs(work))), "the link run to start")
    [run_dir] = board_runs(work)
    assert not (run_dir / detached.EXIT).exists(), "the run ended before the drop"
    assert sshd.drop_connections() >= 1
    _stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "reconnecting" in stderr
    assert board_runs(work) == [run_dir]
    samples = [s for s in results.read_samples(out) if s.suite == "link"]
    rtt = {(s.codec, s.worker): s for s in samples if s.metric == "rtt"}
    lost = {(s.codec, s.worker): s.values[0] for s in samples if s.metric == "lost"}
    # 2 codecs x the quick link plan's 16 phases (docs/link.md)
    phases = {s.params["phases"] for s in samples if s.metric == "rtt"}
    assert phases == {16}
    assert len(rtt) == len([s for s in samples if s.metric == "rtt"]) == 2 * 16
    for phase, sample_set in rtt.items():
        assert len(sample_set.values) + lost[phase] == count  # each once, or lost
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()


def test_fetch_by_id_and_errors(finished, tmp_path, capsys):
    work, url, run_dir = finished
    again = tmp_path / "again"
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(again)]) == 0
    assert results.verify_checksums(again) == []
    assert_each_sample_once(again, run_dir / detached.RESULTS)
    capsys.readouterr()
    assert evbench(["fetch", "--board", url, "20991231T000000Z-000000"]) == 2
    assert "there is no run 20991231T000000Z-000000" in capsys.readouterr().err
    # What is no run id is refused before the board is asked, in one short line (5000
    # characters made the agent's internal error a 5 KB line).
    for run_id in ("a" * 5000, "é" * 60, "20261130T000000Z-c0ffee\x1b[2J", ".hidden", "a/b"):
        assert evbench(["fetch", "--board", url, run_id]) == 2
        err = capsys.readouterr().err
        first = err.splitlines()[0]
        assert first.startswith("evbench: error: not a run id: ") and len(first) < 200, err
        assert "internal error" not in err
    # A second start of the same run id is refused by the board.
    launch = [BOARD_PYTHON, str(work / "agent/evbench-agent.pyz"), "launch"]
    refused = subprocess.run(
        [*launch, "--run-dir", str(run_dir), "--", "run", "--quick"], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "already exists" in refused.stderr
    # A damaged file on the board: refused, and nothing damaged lands here.
    with open(run_dir / detached.RESULTS / results.SAMPLES, "ab") as stream:
        stream.write(b" ")
    damaged = tmp_path / "damaged"
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(damaged)]) == 3
    assert "checksum mismatch for samples.jsonl" in capsys.readouterr().err
    assert not (damaged / results.SAMPLES).exists()
    assert not (damaged / results.COMPLETE).exists()
    assert not list(damaged.glob(".*"))


def launch_on_board(url: str, work: Path, run_id: str, *profiles: str) -> Path:
    """Deploy, then start a run on the board directly (the board is this machine)."""
    assert evbench(["deploy", "--board", url]) == 0
    run_dir = work / "runs" / run_id
    run_argv = ["run", *QUICK, *profiles, "--progress", "json", "--run-id", run_id]
    agent = [BOARD_PYTHON, str(work / "agent/evbench-agent.pyz")]
    launch = [*agent, "launch", "--run-dir", str(run_dir), "--", *run_argv]
    subprocess.run([*launch, "--out", str(run_dir / "results")], check=True, capture_output=True)
    return run_dir


RUN_ID = "20261130T000000Z-c0ffee"


@pytest.fixture(scope="module")
def finished_board(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("finished") / "board"


@pytest.fixture
def finished(board, finished_board) -> tuple[Path, str, Path]:
    """The board (work directory, URL) and the run directory of a finished run (profile int):
    run once per module, the board copied for each test (which may damage its copy)."""
    work, url = board
    if finished_board.is_dir():
        shutil.copytree(finished_board, work, symlinks=True)
    else:
        run_dir = launch_on_board(url, work, RUN_ID, "--profile", "int")
        wait_for(lambda: (run_dir / detached.EXIT).exists(), "the run to end")
        shutil.copytree(work, finished_board, symlinks=True)
    return work, url, work / "runs" / RUN_ID


def with_bulk(run_dir: Path) -> Path:
    """The run's results on the board, with a file large enough to cut its fetch mid-file."""
    board_results = run_dir / detached.RESULTS
    (board_results / "bulk.bin").write_bytes(bytes(range(256)) * (1 << 18))
    results.write_checksums(board_results)
    return board_results


@pytest.mark.parametrize("cut", ["connection", "host"])
def test_a_fetch_cut_mid_file_goes_on_into_the_same_directory(sshd, finished, tmp_path, cut):
    """The connection dropped (the fetch resumes), or the host killed (the next fetch does)."""
    _work, url, run_dir = finished
    board_results = with_bulk(run_dir)
    out = tmp_path / "out"
    fetch = ["fetch", "--board", url, run_dir.name, "--out", str(out)]
    process = start_cli(*fetch)
    part = out / ".bulk.bin.part"
    wait_for(lambda: part.exists() and part.stat().st_size > 0, "the fetch to be under way")
    if cut == "connection":
        assert sshd.drop_connections() >= 1
        _stdout, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        assert "reconnecting" in stderr
    else:
        process.kill()
        process.communicate(timeout=60)
        manifest = (out / results.MANIFEST).read_bytes()  # fetched first, so the run is known
        again = run_cli(*fetch)
        assert again.returncode == 0, again.stderr
        assert (out / results.MANIFEST).read_bytes() == manifest
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()
    assert (out / "bulk.bin").read_bytes() == (board_results / "bulk.bin").read_bytes()
    assert not list(out.glob(".*"))
    assert_each_sample_once(out, board_results)


def test_run_stopped_by_a_reboot_is_saved_as_partial(board, tmp_path, capsys):
    work, url = board
    run_id = "20261130T000000Z-feed01"
    run_dir = launch_on_board(url, work, run_id, *SLOW_PROFILES)
    wait_for(lambda: advances(run_dir) >= 2, "the run to measure")
    # A reboot as power loss leaves it: the run killed, its launch record another boot id.
    launched = json.loads((run_dir / detached.LAUNCH).read_text())
    os.killpg(launched["pid"], signal.SIGKILL)
    assert process_tree.ended(launched["pid"], 30), "the killed run did not end"
    launched["boot_id"] = "00000000-0000-0000-0000-000000000000"
    (run_dir / detached.LAUNCH).write_text(json.dumps(launched))
    capsys.readouterr()
    out = tmp_path / "out"
    assert evbench(["fetch", "--board", url, run_id, "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert "the board rebooted during the run" in err and "PARTIAL" in err
    assert not (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    run = results.load_run(out)
    assert run.manifest["status"] == "partial" and not run.complete
    assert run.manifest["reason"] == "the board rebooted during the run"
    assert "partial results in" in err
    assert list(run.samples())  # what was measured before the reboot is kept


def test_a_run_the_agent_refuses_is_reported_by_run_and_fetch(board, tmp_path, capsys):
    work, url = board
    out = tmp_path / "out"
    argv = ["run", "--board", url, "--quick", "--suite", "codec", "--codecs", "no-such-codec"]
    assert evbench([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "unknown codec 'no-such-codec'" in err  # the agent's own message, relayed
    assert not out.exists()  # a refused spec leaves no run behind, as on the local board
    [run_dir] = board_runs(work)
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert f"the run {run_dir.name} failed" in err and "no-such-codec" in err


@pytest.fixture
def full_disk(tmp_path, request):
    """A real full disk: a small tmpfs (96 KiB, or the size given by indirect parametrization)."""
    require(os.geteuid() == 0, "root (to mount a small tmpfs)")
    mount, umount = require_command("mount"), require_command("umount")
    point = tmp_path / "small-disk"
    point.mkdir()
    size = getattr(request, "param", "96k")
    subprocess.run([mount, "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)], check=True)
    yield point
    subprocess.run([umount, str(point)], check=True)


def test_full_disk_on_the_board_stops_deploy_with_a_hint(sshd, ssh_home, full_disk, capsys):
    url = f"ssh://{sshd.address}?dir={full_disk}&python={BOARD_PYTHON}"
    assert evbench(["deploy", "--board", url]) == 2
    err = capsys.readouterr().err
    assert "cannot copy" in err and "free space" in err and "Traceback" not in err
    assert not (full_disk / "agent" / "evbench-agent.pyz").exists()


def test_a_board_directory_the_user_cannot_write_is_named_with_its_cause(
    sshd, ssh_home, console_user, tmp_path, monkeypatch, capsys
):
    """Directories in the login user's home that root owns: deploy, then a run, say why."""
    monkeypatch.setenv("EVBENCH_PASSWORD", console_user.password)
    tag = secrets.token_hex(3)
    locked = console_user.home / f"evb-locked-{tag}"  # root's, 0755: not the user's to write
    work = console_user.home / f"evb-work-{tag}"  # the user's, but its runs/ is root's
    locked.mkdir(mode=0o755)
    (work / "runs").mkdir(parents=True, mode=0o755)
    shutil.chown(work, console_user.name, console_user.name)
    login = f"ssh://{console_user.name}@127.0.0.1:{sshd.port}"
    try:
        url = f"{login}?dir={locked}/ev&python={BOARD_PYTHON}"
        assert evbench(["deploy", "--board", url]) == 2
        err = capsys.readouterr().err
        # Not the copy's "No such file" that followed: the cause, and where.
        assert f"cannot create {locked}/ev/agent on {url}: Permission denied" in err, err
        url = f"{login}?dir={work}&python={BOARD_PYTHON}"
        argv = ["run", "--board", url, *QUICK, "--profile", "int", "--no-history"]
        assert evbench([*argv, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert f"cannot create {work}/runs/" in err and "Permission denied" in err, err
        assert "internal error" not in err and "Traceback" not in err
    finally:
        shutil.rmtree(locked)
        shutil.rmtree(work)


def test_full_disk_on_the_host_stops_fetch_and_keeps_what_it_has(finished, full_disk):
    _work, url, run_dir = finished
    with_bulk(run_dir)
    out = full_disk / "run"
    failed = run_cli("fetch", "--board", url, run_dir.name, "--out", str(out))
    assert failed.returncode == 2, failed.stderr
    assert "No space left" in failed.stderr and "free space" in failed.stderr
    assert not list(out.glob(".*"))  # no half copy left behind
    manifest = run_dir / detached.RESULTS / results.MANIFEST
    assert (out / results.MANIFEST).read_bytes() == manifest.read_bytes()
    assert not (out / "bulk.bin").exists() and not (out / results.COMPLETE).exists()


ODD_LISTINGS = [
    (b"  complete\n", "bad line"),  # the marker itself: never in a listing the agent writes
    (b"  .\n", "bad line"),
    (b"  a\n" + b"b" * 64 + b"  a/b\n", "twice"),
    (b"  " + b"n" * 300 + b"\n", "bad line"),
    (b"  caf\xe9\n", "not UTF-8"),
    (b"  ../../escape\n", "bad line"),
]


def test_fetch_refuses_odd_names_in_the_boards_listing_and_one_over_the_readers_cap(
    finished, tmp_path, capsys
):
    _work, url, run_dir = finished
    listing = run_dir / detached.RESULTS / results.CHECKSUMS
    original = listing.read_bytes()
    for number, (extra, says) in enumerate(ODD_LISTINGS):
        listing.write_bytes(original + b"a" * 64 + extra)
        out = tmp_path / f"out{number}"
        assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(out)]) == 2, extra
        err = capsys.readouterr().err
        assert says in err and "internal error" not in err, err
        assert not (out / results.COMPLETE).exists()
    assert not (tmp_path / "escape").exists()
    # A board's SHA256SUMS was read whole into memory, however large (/dev/zero: for ever).
    with open(listing, "r+b") as stream:
        stream.truncate((64 << 20) + 1)  # one byte over the 64 MiB a run's listing may hold
    out = tmp_path / "out"
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"SHA256SUMS from {url} is 67108865 bytes, over 67108864" in err, err
    assert not list(out.glob(".*")) and not (out / results.COMPLETE).exists()


def test_fetch_goes_by_the_boards_word_and_a_run_failed_there_is_not_a_bug(
    finished, tmp_path, capsys
):
    """The board's exit status decides, whatever its files say. A run failed on the board is
    not evbench's bug (exit 1): what it measured is partial (4); nothing sealed, a failed
    check (3)."""
    _work, url, run_dir = finished
    board_results = run_dir / detached.RESULTS
    assert (board_results / results.COMPLETE).exists()
    (run_dir / detached.EXIT).write_text("4\n")  # the run ended partial, says the board
    out = tmp_path / "stale-marker"
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(out)]) == 4
    assert "PARTIAL" in capsys.readouterr().err
    assert not (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    manifest = json.loads((board_results / results.MANIFEST).read_text())
    manifest["status"] = "failed"  # as the runner leaves a run an exception ended
    results.write_json(board_results / results.MANIFEST, manifest)
    (board_results / results.COMPLETE).unlink()
    results.write_checksums(board_results)
    (run_dir / detached.EXIT).write_text("1\n")
    (run_dir / detached.LOG).write_text("evbench-agent: internal error: RuntimeError: boom\n")
    out = tmp_path / "failed"
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(out)]) == 4
    err = capsys.readouterr().err
    assert f"the run {run_dir.name} failed on" in err and "(exit 1)" in err and "boom" in err
    assert results.verify_checksums(out) == [] and not (out / results.COMPLETE).exists()
    shutil.rmtree(board_results)  # failed before anything was sealed
    nothing = tmp_path / "nothing"
    assert evbench(["fetch", "--board", url, run_dir.name, "--out", str(nothing)]) == 3
    assert "boom" in capsys.readouterr().err


# 24 KiB: room for the manifest (some 5 KB), not for samples.jsonl (some 30 KB).
@pytest.mark.parametrize("full_disk", ["24k"], indirect=True)
def test_a_remote_run_whose_fetch_fills_the_host_disk_ends_in_one_line(board, full_disk):
    """The fetch meets a full disk: one line, exit 4 (partial) or 2, the manifest never
    "running"."""
    _work, url = board
    out = full_disk / "run"
    argv = ["run", "--board", url, *QUICK, "--profile", "seed", "--quiet", "--no-history"]
    done = run_cli(*argv, "--out", str(out), timeout=600)
    assert done.returncode in (2, 4), done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "No space left on device" in lines[0], done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    if (out / results.MANIFEST).exists():
        manifest = json.loads((out / results.MANIFEST).read_text())
        assert manifest["status"] != "running", manifest
        if done.returncode == 4:
            assert manifest["status"] == "partial" and "No space" in manifest["reason"]


class UnreachableBoard:
    """A board whose connection is gone for good (what the two hints need of one)."""

    url = "ssh://root@192.0.2.7:2222?python=/usr/bin/python3&dir=/data/c++ runs"
    work_dir = "/data/c++ runs"

    def reconnect(self) -> None:
        raise ConnectionLost("cannot reach root@192.0.2.7:2222: no route to host")

    def run(self, argv, timeout, stdin=None):
        raise ConnectionLost("the connection to root@192.0.2.7:2222 dropped")


def test_the_collect_it_later_hints_paste_into_a_shell_as_one_command():
    # Unquoted, the URL's & sent `evbench fetch` to the background and ran `dir=...`.
    board = UnreachableBoard()
    expected = ["evbench", "fetch", "--board", board.url, RUN_ID]
    session = remote_run.RemoteRun(board, ["agent"], RUN_ID, reconnect_deadline=0)
    with pytest.raises(ConnectionLost) as lost:
        session._reconnect()
    with pytest.raises(UserError) as stopped:
        remote_run._stop_interrupted(session, board, RUN_ID)
    for error in (lost.value, stopped.value):
        assert shell_words(error.hint.split("`")[1]) == expected, error.hint
