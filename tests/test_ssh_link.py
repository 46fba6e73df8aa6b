"""The link suite across the SSH connection: `--peer host` and `--peer board`.

Against the loopback sshd the "network" is loopback, so these tests check the
wiring (who listens where, who measures, that the responder goes away), not
the wire's figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from evbench_agent import results

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BOARD_PYTHON = "/usr/bin/python3"
EVBENCH = str(Path(sys.executable).parent / "evbench")
LINK = ["--suite", "link", "--codecs", "json,protobuf", "--profile", "seed", "--quick"]


@pytest.fixture
def board(sshd, ssh_home, tmp_path):
    work = tmp_path / "board"
    return work, f"ssh://{sshd.address}?dir={work}&python={BOARD_PYTHON}"


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([EVBENCH, *argv], capture_output=True, text=True, timeout=600)


def link_peers(out: Path) -> set[str]:
    return {r["params"]["peer"] for r in results.load_run(out).records if r["suite"] == "link"}


def responders_running(zipapp: Path) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        cmdline = process.info["cmdline"] or []
        if str(zipapp) in cmdline and "serve" in cmdline:
            found.append(process)
    return found


def test_peer_host_puts_the_responder_on_this_host(board, tmp_path):
    work, url = board
    out = tmp_path / "out"
    result = run_cli("run", "--board", url, *LINK, "--peer", "host", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "link responder on this host at 127.0.0.1:" in result.stderr
    [peer] = link_peers(out)
    assert peer.startswith("127.0.0.1:") and peer != "loopback"
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()
    [run_dir] = (work / "runs").iterdir()  # measured by the agent on the board
    assert (run_dir / "results" / results.SAMPLES).read_bytes() == (
        out / results.SAMPLES
    ).read_bytes()


def test_peer_board_puts_the_responder_on_the_board(board, tmp_path):
    work, url = board
    out = tmp_path / "out"
    result = run_cli("run", "--board", url, *LINK, "--peer", "board", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "link responder on the board at 127.0.0.1:" in result.stderr
    [peer] = link_peers(out)
    assert peer.startswith("127.0.0.1:")
    assert (out / results.COMPLETE).exists()
    assert not (work / "runs").exists()  # this host measured; the board only answered
    assert responders_running(work / "agent" / "evbench-agent.pyz") == []


def test_peer_host_needs_a_network_board(tmp_path):
    result = run_cli(
        "run", "--board", "local", *LINK, "--peer", "host", "--out", str(tmp_path / "o")
    )
    assert result.returncode == 2
    assert "--peer host needs a board over the network" in result.stderr
