"""Places beyond a plain exporter's on one real labgrid 26 lab on loopback (am62x-a a
NetworkService for tests/sshd.py's sshd); each other place has its own exporter, added by
its module fixture:

- am62x-iso: behind an `--isolated` exporter; a second sshd plays its host (the proxy,
  mapped in ~/.ssh/config), which evbench jumps through, its host key verified.
- am62x-r: a board with its own sshd, powered by labgrid_rig.PowerSwitch: off stops its
  sshd, on starts it (the agent's processes go on: the run completes after the recovery).
- am62x-s: tests/console_rig.py's serial line exported as a RawSerialPort, which clients
  see as a NetworkSerialPort served by ser2net (RFC 2217).
"""

import json
import os
import re
import subprocess

import labgrid_rig
import pytest
from conftest import require_command
from console_rig import ConsoleRig
from test_labgrid_board import (
    BOARD_PYTHON,
    board_url,
    evbench,
    place_run,
    plan,
    running,
    wait_while_running,
)

from evbench.boards._labgrid_client import Resource
from evbench.boards._ssh_jump import SshJump, parse_jump
from evbench.boards.labgrid import LabgridBoard
from evbench.boards.ssh import SshBoard
from evbench_core import results
from evbench_core.errors import UserError

pytestmark = [pytest.mark.integration, pytest.mark.lab, pytest.mark.slow]

ISOLATED, POWERED = "am62x-iso", "am62x-r"
QUICK = ["--quick", "--suite", "codec", "--profile", "seed", "--codecs", "json"]
#: The full plan for one codec: long enough to be running when the board goes silent.
LONG = ["--suite", "codec", "--profile", "seed", "--codecs", "json"]


@pytest.fixture(scope="module")
def lab(sshd, tmp_path_factory):
    service = labgrid_rig.network_service("board-a", sshd)
    lab = labgrid_rig.Lab(tmp_path_factory.mktemp("lab"), service)
    try:
        lab.make_place("am62x-a", "board-a", {"board": "am62x", "unit": "a"})
        yield lab
    finally:
        lab.stop()


def trust(ssh_home, line: str) -> None:
    """`line` added to the test user's known_hosts."""
    known_hosts = ssh_home / ".ssh" / "known_hosts"
    known_hosts.write_text(known_hosts.read_text() + line)


@pytest.fixture(scope="module")
def exporter_host(sshd, tmp_path_factory):
    """The isolated exporter's host: an sshd the test client key logs in to."""
    jump = sshd.another(tmp_path_factory.mktemp("jump"))
    yield jump
    jump.stop()


@pytest.fixture(scope="module")
def isolated(lab, sshd):
    lab.add_exporter("isolated", labgrid_rig.network_service("board-iso", sshd), ("--isolated",))
    lab.make_place(ISOLATED, "board-iso", {"board": "am62x", "site": "isolated"}, "isolated")
    return lab


@pytest.fixture
def env(isolated, exporter_host, ssh_home, monkeypatch):
    """The proxy the isolated exporter names, which ~/.ssh/config maps to its host."""
    isolated.use(monkeypatch)
    monkeypatch.delenv("LG_PROXY", raising=False)
    shown = isolated.client("-p", ISOLATED, "show").stdout
    assert "'proxy_required': True" in shown, shown  # --isolated marks every resource
    match = re.search(r"'proxy': '([^']+)'", shown)
    assert match, shown
    proxy = match.group(1)
    (ssh_home / ".ssh" / "config").write_text(
        f"Host {proxy}\n  HostName 127.0.0.1\n  Port {exporter_host.port}\n"
    )
    return proxy


def test_a_run_goes_through_the_exporter_host_whose_key_is_verified(
    env, isolated, exporter_host, ssh_home, tmp_path
):
    lab, proxy = isolated, env
    # The jump host's key is not known yet: refused, naming it; nothing reached the board.
    refused = evbench("deploy", "--board", board_url(ISOLATED, tmp_path / "board"))
    assert refused.returncode == 2, refused.stderr
    assert f"unknown host key for [127.0.0.1]:{exporter_host.port}" in refused.stderr
    assert not (tmp_path / "board").exists()
    assert lab.acquired_by(ISOLATED) is None
    trust(ssh_home, exporter_host.host_key_line())
    logins_before = exporter_host.log_text().count("Accepted publickey")
    out = tmp_path / "run"
    url = board_url(ISOLATED, tmp_path / "board")
    done = evbench("run", "--board", url, *QUICK, "--out", str(out))
    assert done.returncode == 0, done.stderr
    jump = f"{exporter_host.user}@{proxy}:{exporter_host.port}"
    assert f"through the jump host {jump}" in done.stderr
    # The exporter host saw evbench log in (it logs in there only to jump).
    assert exporter_host.log_text().count("Accepted publickey") > logins_before
    lab_record = place_run(out, ISOLATED)["lab"]
    assert lab_record["jump"] == jump
    assert lab.acquired_by(ISOLATED) is None


def _jumped_board(sshd, spec: str, tmp_path):
    url = f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python={BOARD_PYTHON}"
    return SshBoard(url, jump=SshJump(spec))


def test_lg_proxy_names_the_jump_host_before_the_exporters_proxy(
    sshd, exporter_host, ssh_home, tmp_path, monkeypatch
):
    # Checked here, not through labgrid-client: with LG_PROXY it reaches the coordinator by
    # OpenSSH, which reads root's ~/.ssh, not this test's HOME. The jump it names is real.
    def network_service(**params) -> Resource:
        path = "e/g/NetworkService/NetworkService"
        return Resource("NetworkService", path, "NetworkService", params, True, None)

    extra = {"proxy": "exporter-7.lab", "proxy_required": True}
    service = network_service(address="127.0.0.1", extra=extra)
    plain = network_service(address="127.0.0.1")
    monkeypatch.delenv("LG_PROXY", raising=False)
    assert LabgridBoard._proxy_of(service) == "exporter-7.lab"
    assert LabgridBoard._proxy_of(plain) is None  # no proxy needed, none asked for
    spec = f"{exporter_host.user}@127.0.0.1:{exporter_host.port}"
    monkeypatch.setenv("LG_PROXY", spec)
    assert LabgridBoard._proxy_of(service) == spec
    assert LabgridBoard._proxy_of(plain) == spec  # LG_PROXY forces the jump
    trust(ssh_home, exporter_host.host_key_line())
    logins_before = exporter_host.log_text().count("Accepted publickey")
    with _jumped_board(sshd, spec, tmp_path) as board:
        done = board.run(["echo", "through the jump"], timeout=30)
    assert (done.returncode, done.stdout) == (0, b"through the jump\n")
    assert exporter_host.log_text().count("Accepted publickey") == logins_before + 1


def test_a_bad_or_changed_jump_host_is_refused(sshd, exporter_host, ssh_home, tmp_path):
    for spec in ("a b", "host:port", "ssh://host", "-oProxyCommand=x", ""):
        with pytest.raises(UserError, match="bad SSH jump host"):
            parse_jump(spec)  # refused before connecting
    other = ssh_home / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    key_type, key_data = other.with_suffix(".pub").read_text().split()[:2]
    trust(ssh_home, f"[127.0.0.1]:{exporter_host.port} {key_type} {key_data}\n")
    with pytest.raises(UserError) as refused:
        _jumped_board(sshd, f"127.0.0.1:{exporter_host.port}", tmp_path)
    changed = f"the host key of the jump host [127.0.0.1]:{exporter_host.port} has CHANGED"
    assert changed in str(refused.value)


@pytest.fixture(scope="module")
def powered(lab, sshd, tmp_path_factory):
    """The board of am62x-r (its own sshd) and its power switch."""
    board = sshd.another(tmp_path_factory.mktemp("board"))

    def power(value: str) -> None:
        if value == "0":
            board.stop()
        elif board.process is None:
            board.start()

    switch = labgrid_rig.PowerSwitch(power)
    try:
        resources = labgrid_rig.network_service("board-r", board) + labgrid_rig.power_port(switch)
        lab.add_exporter("power", resources)
        lab.make_place(POWERED, "board-r", {"board": "am62x", "site": "power"}, "power")
        yield board, switch
    finally:
        switch.stop()
        board.stop()


def test_a_board_silent_mid_run_is_power_cycled_and_the_run_completes(
    lab, powered, ssh_home, tmp_path, monkeypatch
):
    board, switch = powered
    lab.use(monkeypatch)
    trust(ssh_home, board.host_key_line())
    out = tmp_path / "run"
    work = tmp_path / "board"
    log = tmp_path / "evbench.err"
    argv = ["run", "--board", board_url(POWERED, work, recover_after="3"), *LONG, "--out", str(out)]
    quiet = {"stdout": subprocess.DEVNULL}
    try:
        with log.open("w") as stderr, running(*argv, **quiet, stderr=stderr) as job:
            started = lambda: bool(list(work.glob("runs/*")))  # noqa: E731
            wait_while_running(job, started, "the run never started on the board", 300, 0.5)
            board.stop()  # the board stops answering: no SSH any more, connections cut
            job.wait(timeout=600)
    finally:
        if board.process is None:
            board.start()
    err = log.read_text()
    assert job.returncode == 0, err
    assert f"place {POWERED}: the board has not answered for " in err
    assert f"power-cycling place {POWERED} (NetworkPowerPort)" in err
    # Quiet recovery: no library tracebacks, no error lines, one line per reconnect attempt.
    assert "Traceback" not in err and "paramiko" not in err
    assert "evbench: error:" not in err
    attempts = [line for line in err.splitlines() if "reconnect attempt" in line]
    assert all(re.search(r"reconnect attempt \d+ failed \(", line) for line in attempts)
    numbers = [int(re.search(r"attempt (\d+)", line).group(1)) for line in attempts]
    assert numbers == list(range(1, len(numbers) + 1))  # each attempt once
    assert re.search(rf"reconnected to .* \(attempt {len(numbers) + 1}\)", err)
    # labgrid's own simplerest driver, run by labgrid-client: off, then on, once.
    assert switch.seen == ["/outlet/1/0", "/outlet/1/1"]
    place_run(out, POWERED)  # complete, every checksum matching, on its place
    assert lab.acquired_by(POWERED) is None


@pytest.fixture(scope="module")
def serial(lab, tmp_path_factory):
    require_command("ser2net")  # the exporter serves the port with it
    commands = require_command("socat"), require_command("agetty")
    line = ConsoleRig(tmp_path_factory.mktemp("line"), *commands, noise=False)
    try:
        port = f"board-s:\n  RawSerialPort:\n    port: {os.path.realpath(line.host_link)}\n"
        lab.add_exporter("serial-exporter", port + "    speed: 115200\n")
        lab.make_place("am62x-s", "board-s", {"board": "am62x", "unit": "s"}, "serial-exporter")
        yield lab
    finally:
        line.stop()


@pytest.fixture
def lab_env(serial, ssh_home, console_user, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # console transcripts go to ./results/console: here
    serial.use(monkeypatch)
    monkeypatch.setenv("EVBENCH_PASSWORD", console_user.password)
    return serial


def test_a_run_on_a_place_over_its_serial_console(lab_env, console_user, tmp_path):
    lab = lab_env
    out = tmp_path / "run"
    url = f"labgrid://am62x-s?user={console_user.name}"
    console_user.install_agent()  # the agent "in the image": not 500 KB over the line
    done = evbench("run", "--board", url, *QUICK, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "acquired place am62x-s" in done.stderr and "released place am62x-s" in done.stderr
    place = place_run(out, "am62x-s")["lab"]
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
    # The file's last test: the serial exporter stays dead.
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
    with running("lab", "run", str(lab_file), "--out", str(lab_dir)) as job:
        # The run has started on the serial board: its run directory is there.
        started = lambda: runs.is_dir() and bool(set(runs.glob("*")) - before)  # noqa: E731
        wait_while_running(job, started, "the serial entry never started on the board", 300, 0.5)
        lab.kill_exporter("serial-exporter")
        _, err = job.communicate(timeout=600)
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
