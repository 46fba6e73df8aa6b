"""The link suite across the SSH connection: `--peer host` and `--peer board`.

Against the loopback sshd the "network" is loopback, so these tests check the
wiring (who listens where, who measures, that the responder goes away), not
the wire's figures.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"
EVBENCH = str(Path(sys.executable).parent / "evbench")
#: The quick link plan at 100 Hz (20 Hz by default): these tests check the wiring and the
#: resuming, not the figures. With the plan's 6 messages a phase, a phase takes 0.06 s.
LINK = ["--suite", "link", "--codecs", "json,protobuf", "--profile", "seed", "--quick",
        "--rate", "100"]  # fmt: skip
QUICK_COUNT = ["--count", "6"]


@pytest.fixture
def board(sshd, ssh_home, tmp_path):
    work = tmp_path / "board"
    return work, f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"


def run_cli(*argv: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([EVBENCH, *map(str, argv)], capture_output=True, text=True, timeout=600)


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
    result = run_cli("run", "--board", url, *LINK, *QUICK_COUNT, "--peer", peer, "--out", out)
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


def test_peer_host_needs_a_network_board(tmp_path):
    result = run_cli("run", "--board", "local", *LINK, "--peer", "host", "--out", tmp_path / "o")
    assert result.returncode == 2
    assert "--peer host needs a board over the network" in result.stderr


def test_connection_dropped_mid_link_run_keeps_every_message_once(sshd, board, tmp_path):
    work, url = board
    out = tmp_path / "out"
    # 40 messages per periodic phase: 32 phases of 0.4 s, so the drop (once the run has
    # advanced) comes mid-run, with most of the run still to follow
    count = 40
    argv = [EVBENCH, "run", "--board", url, *LINK, "--count", str(count), "--out", str(out)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while '"event": "advance"' not in "".join(
        path.read_text() for path in work.glob("runs/*/progress.jsonl")
    ):
        assert time.monotonic() < deadline, "the link run did not start"
        time.sleep(0.05)
    assert not list(work.glob("runs/*/exit")), "the run ended before the drop"
    assert sshd.drop_connections() >= 1
    _stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert "reconnecting" in stderr
    assert len(list((work / "runs").iterdir())) == 1
    samples = [s for s in results.read_samples(out) if s.suite == "link"]
    rtt = {(s.codec, s.worker): s for s in samples if s.metric == "rtt"}
    lost = {(s.codec, s.worker): s.values[0] for s in samples if s.metric == "lost"}
    # 2 codecs x the quick link plan's phases (16 pairs, docs/link.md), as recorded
    phases = {s.params["phases"] for s in samples if s.metric == "rtt"}
    assert phases == {16}
    assert len(rtt) == len([s for s in samples if s.metric == "rtt"]) == 2 * 16
    for phase, sample_set in rtt.items():
        # Each message of the phase is measured once (or counted lost), none twice.
        assert len(sample_set.values) + lost[phase] == count
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()
