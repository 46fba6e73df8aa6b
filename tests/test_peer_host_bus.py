"""`evbench run --peer host --host-transport URL`: the bus responder on this host for a run.
The board is this machine over the loopback sshd; the bus a UART, a pty pair made by socat
(no SocketCAN here; pycan:// is test_can_peer.py's)."""

import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import require_command
from link_sockets import held_ptys
from process_tree import read_proc

from evbench import cli as host_cli
from evbench.usecases import link_peer
from evbench_core import results
from evbench_core.errors import UserError

EVBENCH = str(Path(sys.executable).parent / "evbench")
COUNT = 8  # messages per periodic phase: a short plan
LINK = ["--suite", "link", "--codecs", "json,protobuf", "--quick", "--count", str(COUNT)]
PHASES_PER_CODEC = 16  # the quick link plan: 16 pairs (docs/link.md)
STARTED = re.compile(r"link responder on this host over (\S+) \(pid (\d+)\)")


@pytest.fixture
def pty_pair(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """Two joined ptys: the board's end and this host's end of the "UART"."""
    socat = require_command("socat")
    ends = [tmp_path / "board-end", tmp_path / "host-end"]
    links = [f"pty,raw,echo=0,link={end}" for end in ends]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    with held_ptys(ends, [subprocess.Popen([socat, *links], **quiet)]):
        yield tuple(f"uart://{os.path.realpath(end)}?baud=115200" for end in ends)


@pytest.fixture
def board(sshd, ssh_home, tmp_path: Path) -> tuple[Path, str]:
    work = tmp_path / "board"
    return work, f"ssh://{sshd.address}?dir={work}&python={sys.executable}"


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([EVBENCH, *argv], capture_output=True, text=True, timeout=300)


def peer_host_run(url: str, board_end: str, host_end: str, out: Path) -> list[str]:
    """`evbench run` on `url` over a bus: the board on `board_end`, the responder here."""
    return ["run", "--board", url, *LINK, "--link-transport", board_end, "--peer", "host",
            "--host-transport", host_end, "--out", str(out)]  # fmt: skip


def serving(url: str) -> list[psutil.Process]:
    """`evbench serve` processes answering on `url`."""
    found = [(p, p.info["cmdline"] or []) for p in psutil.process_iter(["cmdline"])]
    return [process for process, cmdline in found if "serve" in cmdline and url in cmdline]


@pytest.mark.integration
@pytest.mark.slow
def test_the_run_measures_against_a_responder_it_starts_and_stops_here(pty_pair, board, tmp_path):
    """First a host end that cannot open: the run stops before the board runs anything."""
    board_end, host_end = pty_pair
    work, url = board
    out = tmp_path / "out"
    missing = f"uart://{tmp_path}/ttyNONE?baud=115200"
    result = run_cli(*peer_host_run(url, board_end, missing, out))
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("evbench: error: the link responder on this host: cannot open ")
    assert f"{tmp_path}/ttyNONE" in lines[0]
    assert [line for line in lines[1:] if not line.startswith("evbench: hint: ")] == []
    assert not out.exists()  # nothing written
    assert not (work / "runs").exists() and not (work / "agent").exists()  # nothing started
    result = run_cli(*peer_host_run(url, board_end, host_end, out))
    assert result.returncode == 0, result.stderr
    [(said_url, pid)] = STARTED.findall(result.stderr)
    assert said_url == host_end
    assert not psutil.pid_exists(int(pid)) and serving(host_end) == []
    # the board's agent measured (its run directory is there) over its end of the bus,
    # given no --peer: its spec keeps the default and names the bus
    assert len(list((work / "runs").iterdir())) == 1
    spec = json.loads((out / results.MANIFEST).read_text())["spec"]
    assert (spec["link_transport"], spec["link_peer"]) == (board_end, "loopback")
    link = [s for s in results.read_samples(out) if s.suite == "link"]
    periodic = [s for s in link if s.params["phase"] == "periodic"]
    rtt = {(s.codec, s.worker): s for s in periodic if s.metric == "rtt_transport"}
    lost = {(s.codec, s.worker): s.values for s in periodic if s.metric == "lost"}
    assert sorted(rtt) == sorted(lost)
    assert sorted(rtt) == [(c, p) for c in ("json", "protobuf") for p in range(PHASES_PER_CODEC)]
    for phase, sample_set in rtt.items():
        assert (sample_set.params["transport"], sample_set.params["peer"]) == ("uart", "bus")
        assert len(sample_set.values) == COUNT, phase  # every message sent was answered
        assert lost[phase] == [0.0], phase
    assert results.verify_checksums(out) == [] and (out / results.COMPLETE).exists()


@pytest.mark.integration
@pytest.mark.slow
def test_an_interrupted_run_stops_the_responder(pty_pair, board, tmp_path):
    board_end, host_end = pty_pair
    _work, url = board
    process = subprocess.Popen(
        [EVBENCH, *peer_host_run(url, board_end, host_end, tmp_path / "out")],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    said = ""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(process.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + 60
            while not STARTED.search(said):
                assert time.monotonic() < deadline, f"the responder did not start: {said}"
                if selector.select(1.0):
                    line = process.stderr.readline()
                    assert line, f"evbench exited: {said}"
                    said += line
        [(_url, pid)] = STARTED.findall(said)
        assert psutil.pid_exists(int(pid))
        process.send_signal(signal.SIGINT)  # to evbench only, not to its responder
        said += process.communicate(timeout=60)[1]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
    assert process.returncode == 130, said
    assert not psutil.pid_exists(int(pid)) and serving(host_end) == []


def test_the_responder_is_not_given_the_board_password(pty_pair, monkeypatch):
    _board_end, host_end = pty_pair
    monkeypatch.setenv("EVBENCH_PASSWORD", "serve-sentinel-" + os.urandom(6).hex())
    with link_peer.host_bus_responder(host_end) as pid:  # serving until the block ends
        environ = read_proc(pid, "environ").split(b"\0")
    assert any(entry.startswith(b"PATH=") for entry in environ)  # it was read while it ran
    assert [entry for entry in environ if entry.startswith(b"EVBENCH_PASSWORD=")] == []


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--peer", "host", "--link-transport", "isotp://can0?tx=0x7E0&rx=0x7E8"],
         "--peer host over a --link-transport bus needs --host-transport"),
        (["--link-transport", "isotp://can0?tx=0x7E0&rx=0x7E8",
          "--host-transport", "pycan://virtual/x?tx=0x7E8&rx=0x7E0"],
         "--host-transport is the responder's end of a --link-transport bus"),
    ],
)  # fmt: skip
def test_host_transport_and_peer_host_over_a_bus_go_together(extra, message, tmp_path):
    # no board is reached: the options are checked before one is opened
    out = tmp_path / "out"
    result = run_cli("run", "--board", "ssh://nobody@192.0.2.1", *LINK, *extra, "--out", str(out))
    assert result.returncode == 2
    error, hint = result.stderr.strip().splitlines()
    assert error.startswith(f"evbench: error: {message}")
    assert hint.startswith("evbench: hint: ")
    assert not out.exists()


def _run_args(*argv: str):
    line = ["run", "--board", "ssh://root@192.0.2.7", "--peer", "host", *argv]
    return host_cli.build_parser(line).parse_args(line)


def test_a_pycan_host_transport_is_taken_and_never_passed_to_the_agent():
    from evbench_agent import options

    pycan = "pycan://virtual/demo?tx=0x7E8&rx=0x7E0&fd=1&dlen=64"
    board_end = "isotp://can0?tx=0x7E0&rx=0x7E8"
    args = _run_args("--link-transport", board_end, "--host-transport", pycan)
    assert link_peer.host_transport(args) == pycan
    assert "--host-transport" not in options.agent_argv(args)


@pytest.mark.parametrize(
    ("board_end", "host_end", "message"),
    [
        ("isotp://can0?tx=0x7E0&rx=0x7E8", "pycan://virtual/x?tx=0x7E0&rx=0x7E8",
         "--host-transport sends on id 0x7e0 and listens on 0x7e8"),
        ("isotp://can0?tx=0x7E0&rx=0x7E8", "uart:///dev/ttyUSB0?baud=115200", "is on a UART"),
        ("uart:///dev/ttyS1?baud=115200", "tcp://192.0.2.1:9", "unknown --host-transport"),
    ],
)  # fmt: skip
def test_two_ends_that_cannot_meet_are_refused(board_end, host_end, message):
    args = _run_args("--link-transport", board_end, "--host-transport", host_end)
    with pytest.raises(UserError, match=re.escape(message)):
        link_peer.host_transport(args)
