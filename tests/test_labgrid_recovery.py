"""Recovery by power: a board that stops answering mid-run is power-cycled through labgrid.

The board is a loopback sshd of its own (tests/sshd.py) behind a real labgrid 26
exporter; its NetworkPowerPort (model simplerest) is the small HTTP switch of
labgrid_rig.py, which here really powers the board: off stops its sshd, on starts it
again. The run's agent processes are not stopped by "off" (they are this machine's
processes), so after the recovery the run is picked up where it was and completes; on a
real board a reboot ends the run instead, and the agent reports it (partial, "the board
rebooted during the run"), which the detached-run tests cover.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import labgrid_rig
import pytest
from test_labgrid_board import EVBENCH, board_url
from test_labgrid_isolated import trust

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.lab, pytest.mark.slow]

PLACE = "am62x-r"
#: The full plan for one codec: long enough to be running when the board goes silent.
LONG = ["--suite", "codec", "--profile", "seed", "--codecs", "json"]


@pytest.fixture(scope="module")
def board(sshd, tmp_path_factory):
    """The board's own sshd; the test client key logs in there too."""
    server = sshd.another(tmp_path_factory.mktemp("board"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab(board, tmp_path_factory):
    def power(value: str) -> None:
        if value == "0":
            board.stop()
        elif board.process is None:
            board.start()

    switch = labgrid_rig.PowerSwitch(power)
    resources = (f"board-r:\n  NetworkService:\n    address: 127.0.0.1\n"
                 f"    username: {board.user}\n    port: {board.port}\n"
                 f"  NetworkPowerPort:\n    model: simplerest\n    host: '{switch.url}'\n"
                 "    index: '1'\n")  # fmt: skip
    try:
        lab = labgrid_rig.Lab(tmp_path_factory.mktemp("lab"), resources)
        try:
            lab.make_place(PLACE, "board-r", {"board": "am62x", "site": "power"})
            lab.switch = switch
            yield lab
        finally:
            lab.stop()
    finally:
        switch.stop()


def test_a_board_silent_mid_run_is_power_cycled_and_the_run_completes(
    lab, board, ssh_home, tmp_path, monkeypatch
):
    lab.use(monkeypatch)
    trust(ssh_home, board.host_key_line())
    out = tmp_path / "run"
    work = tmp_path / "board"
    log = tmp_path / "evbench.err"
    with open(log, "w") as stderr:
        job = subprocess.Popen(
            [EVBENCH, "run", "--board", board_url(PLACE, work, recover_after="3"), *LONG,
             "--out", str(out)],
            stdout=subprocess.DEVNULL, stderr=stderr, text=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while not list(work.glob("runs/*")):
            assert job.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the run never started on the board"
            time.sleep(0.5)
        board.stop()  # the board stops answering: no SSH any more, connections cut
        job.wait(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
        if board.process is None:
            board.start()
    err = log.read_text()
    assert job.returncode == 0, err
    assert f"place {PLACE}: the board has not answered for " in err
    assert f"power-cycling place {PLACE} (NetworkPowerPort)" in err
    # Quiet recovery: no library tracebacks, no error lines, one line per reconnect attempt.
    assert "Traceback" not in err and "paramiko" not in err
    assert "evbench: error:" not in err
    attempts = [line for line in err.splitlines() if "reconnect attempt" in line]
    assert all(re.search(r"reconnect attempt \d+ failed \(", line) for line in attempts)
    numbers = [int(re.search(r"attempt (\d+)", line).group(1)) for line in attempts]
    assert numbers == list(range(1, len(numbers) + 1))  # each attempt once
    assert re.search(rf"reconnected to .* \(attempt {len(numbers) + 1}\)", err)
    # labgrid's own simplerest driver, run by labgrid-client: off, then on, once.
    assert lab.switch.seen == ["/outlet/1/0", "/outlet/1/1"]
    assert (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    assert json.loads((out / results.MANIFEST).read_text())["lab"]["place"] == PLACE
    assert lab.acquired_by(PLACE) is None
