"""A place whose board is reached over its serial console, and an exporter killed mid-run.

The console is the console tests' real line (tests/console_rig.py: agetty, login and
bash behind a pty pair at 115200 baud, no kernel noise here). A second real labgrid 26
exporter, `serial-exporter`, exports the host end of the line as a RawSerialPort (the
resolved /dev/pts/N: labgrid wants a /dev path); clients see a NetworkSerialPort, and
the exporter starts ser2net (RFC 2217) when the place is acquired. Place am62x-a (the
first exporter's NetworkService for the loopback sshd) is the matrix's other board.
"""

from __future__ import annotations

import json
import os
import subprocess

import labgrid_rig
import pytest
from conftest import require_command
from console_rig import ConsoleRig
from test_lab_run import EVBENCH, plan
from test_labgrid_board import evbench, wait_while_running

from evbench_core import results

pytestmark = [pytest.mark.integration, pytest.mark.lab, pytest.mark.slow]

QUICK = ["--quick", "--suite", "codec", "--profile", "seed", "--codecs", "json"]


@pytest.fixture(scope="module")
def serial_line(tmp_path_factory):
    commands = require_command("socat"), require_command("agetty")
    rig = ConsoleRig(tmp_path_factory.mktemp("line"), *commands, noise=False)
    yield rig
    rig.stop()


@pytest.fixture(scope="module")
def lab(sshd, serial_line, console_user, tmp_path_factory):
    require_command("ser2net")  # the exporter serves the port with it
    service = (f"board-a:\n  NetworkService:\n    address: 127.0.0.1\n"
               f"    username: {sshd.user}\n    port: {sshd.port}\n")  # fmt: skip
    lab = labgrid_rig.Lab(tmp_path_factory.mktemp("lab"), service)
    try:
        device = os.path.realpath(serial_line.host_link)
        port = f"board-s:\n  RawSerialPort:\n    port: {device}\n    speed: 115200\n"
        lab.add_exporter("serial-exporter", port)
        lab.make_place("am62x-a", "board-a", {"board": "am62x", "unit": "a"})
        lab.make_place("am62x-s", "board-s", {"board": "am62x", "unit": "s"}, "serial-exporter")
        yield lab
    finally:
        lab.stop()


@pytest.fixture
def lab_env(lab, ssh_home, console_user, monkeypatch, tmp_path):
    # Console transcripts go to ./results/console: here, not the checkout's results/,
    # which test_docs tidies on another worker.
    monkeypatch.chdir(tmp_path)
    lab.use(monkeypatch)
    monkeypatch.setenv("EVBENCH_PASSWORD", console_user.password)
    return lab


def test_a_run_on_a_place_over_its_serial_console(lab_env, console_user, tmp_path):
    lab = lab_env
    out = tmp_path / "run"
    url = f"labgrid://am62x-s?user={console_user.name}"
    console_user.install_agent()  # the agent "in the image": not 500 KB over the line
    done = evbench("run", "--board", url, *QUICK, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "acquired place am62x-s" in done.stderr and "released place am62x-s" in done.stderr
    assert (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    manifest = json.loads((out / results.MANIFEST).read_text())
    assert manifest["board_identity"]["id"] == "place:am62x-s"
    place = manifest["lab"]
    assert place["exporters"] == ["serial-exporter"]
    # What the exporter exported as a RawSerialPort, the client sees served by ser2net.
    assert [r["class"] for r in place["resources"]] == ["NetworkSerialPort"]
    served = place["resources"][0]["params"]
    assert place["transport"].startswith(f"rfc2217://127.0.0.1:{served['port']}?")
    # The console transcript (the serial board's) lies beside the results, no password.
    transcript = (out / "console.transcript").read_bytes()
    assert b"@@" in transcript and console_user.password.encode() not in transcript
    assert lab.acquired_by("am62x-s") is None


def test_an_exporter_killed_mid_run_leaves_its_entry_partial_and_the_other_completes(
    lab_env, console_user, tmp_path, monkeypatch
):
    lab = lab_env
    lab_file = plan(tmp_path, lab.coordinator, units="a")
    # The serial board's entry: the full plan, so that it is still running when killed.
    text = lab_file.read_text().replace(
        "boards:\n",
        f"boards:\n  - board: labgrid://am62x-s?user={console_user.name}&coordinator="
        f"{lab.coordinator}\n    name: am62x-s\n    options: [--processes, '10', --values, '10']\n",
    )
    lab_file.write_text(text.replace("retries: 1", "retries: 0"))
    runs = console_user.home / ".evbench" / "runs"
    before = set(runs.glob("*")) if runs.is_dir() else set()
    lab_dir = tmp_path / "lab"
    console_user.install_agent()
    job = subprocess.Popen(
        [EVBENCH, "lab", "run", str(lab_file), "--out", str(lab_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # The run has started on the serial board: its run directory is there.
        started = lambda: runs.is_dir() and bool(set(runs.glob("*")) - before)  # noqa: E731
        wait_while_running(job, started, "the serial entry never started on the board", 300, 0.5)
        lab.kill_exporter("serial-exporter")
        _, err = job.communicate(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode == 4, err  # some entry did not complete
    index = json.loads((lab_dir / "lab.json").read_text())
    entries = {entry["board"]: entry for entry in index["entries"]}
    killed, other = entries["am62x-s"], entries["am62x-a"]
    outcome = (killed["status"], killed["exit_code"], killed["attempts"])
    assert outcome == ("partial", 4, 1), (killed, err[-3000:])
    assert "exporter serial-exporter no longer serves" in killed["error"], killed
    assert (other["status"], other["exit_code"]) == ("complete", 0)
    assert results.verify_checksums(lab_dir / other["run_dir"]) == []
    # Both places released: the one whose exporter died too.
    assert lab.acquired_by("am62x-s") is None
    assert lab.acquired_by("am62x-a") is None
