"""A place behind an isolated exporter: the board's SSH reached through the exporter host.

A real labgrid 26 exporter started with `--isolated` marks its resources
`proxy_required`, naming its own host (its fqdn) as the proxy. A second loopback sshd
(tests/sshd.py) plays that exporter host; ~/.ssh/config maps the proxy's name to it, as
a lab's users map their exporter hosts. evbench jumps through it with a direct-tcpip
channel (paramiko), verifying its host key too.
"""

from __future__ import annotations

import json
import re
import subprocess

import labgrid_rig
import pytest
from test_labgrid_board import BOARD_PYTHON, board_url, evbench

from evbench_core import results
from evbench_core.errors import UserError

pytestmark = [pytest.mark.integration, pytest.mark.lab, pytest.mark.slow]

PLACE = "am62x-iso"
QUICK = ["--quick", "--suite", "codec", "--profile", "seed", "--codecs", "json"]


@pytest.fixture(scope="module")
def exporter_host(sshd, tmp_path_factory):
    """The exporter host's sshd: the test client key may log in there as on the board."""
    jump = sshd.another(tmp_path_factory.mktemp("jump"))
    yield jump
    jump.stop()


@pytest.fixture(scope="module")
def isolated_lab(sshd, tmp_path_factory):
    service = (f"board-iso:\n  NetworkService:\n    address: 127.0.0.1\n"
               f"    username: {sshd.user}\n    port: {sshd.port}\n")  # fmt: skip
    lab = labgrid_rig.Lab(tmp_path_factory.mktemp("lab"), service, ("--isolated",))
    try:
        lab.make_place(PLACE, "board-iso", {"board": "am62x", "site": "isolated"})
        yield lab
    finally:
        lab.stop()


def exporter_proxy(lab) -> str:
    """The proxy the exporter names for its resources, as labgrid-client shows it."""
    shown = lab.client("-p", PLACE, "show").stdout
    assert "'proxy_required': True" in shown, shown  # --isolated marks every resource
    match = re.search(r"'proxy': '([^']+)'", shown)
    assert match, shown
    return match.group(1)


@pytest.fixture
def env(isolated_lab, exporter_host, ssh_home, monkeypatch):
    isolated_lab.use(monkeypatch)
    monkeypatch.delenv("LG_PROXY", raising=False)
    proxy = exporter_proxy(isolated_lab)
    # How a lab user reaches the exporter host by the name its exporter gives.
    (ssh_home / ".ssh" / "config").write_text(
        f"Host {proxy}\n  HostName 127.0.0.1\n  Port {exporter_host.port}\n"
    )
    return proxy


def test_a_run_goes_through_the_exporter_host_whose_key_is_verified(
    env, isolated_lab, exporter_host, ssh_home, tmp_path
):
    lab, proxy = isolated_lab, env
    # The jump host's key is not known yet: refused, naming it; nothing reached the board.
    refused = evbench("deploy", "--board", board_url(PLACE, tmp_path / "board"))
    assert refused.returncode == 2, refused.stderr
    assert f"unknown host key for [127.0.0.1]:{exporter_host.port}" in refused.stderr
    assert not (tmp_path / "board").exists()
    assert lab.acquired_by(PLACE) is None

    trust(ssh_home, exporter_host.host_key_line())
    logins_before = exporter_host.log_text().count("Accepted publickey")
    out = tmp_path / "run"
    url = board_url(PLACE, tmp_path / "board")
    done = evbench("run", "--board", url, *QUICK, "--out", str(out))
    assert done.returncode == 0, done.stderr
    jump = f"{exporter_host.user}@{proxy}:{exporter_host.port}"
    assert f"through the jump host {jump}" in done.stderr
    # The exporter host saw evbench log in (it logs in there only to jump).
    assert exporter_host.log_text().count("Accepted publickey") > logins_before
    assert (out / results.COMPLETE).exists()
    assert results.verify_checksums(out) == []
    lab_record = json.loads((out / results.MANIFEST).read_text())["lab"]
    assert lab_record["place"] == PLACE
    assert lab_record["jump"] == jump
    assert lab.acquired_by(PLACE) is None


def trust(ssh_home, line: str) -> None:
    """`line` added to the test user's known_hosts."""
    known_hosts = ssh_home / ".ssh" / "known_hosts"
    known_hosts.write_text(known_hosts.read_text() + line)


def _jumped_board(sshd, spec: str, tmp_path):
    from evbench.boards._ssh_jump import SshJump
    from evbench.boards.ssh import SshBoard

    url = f"ssh://{sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python={BOARD_PYTHON}"
    return SshBoard(url, jump=SshJump(spec))


def test_lg_proxy_names_the_jump_host_before_the_exporters_proxy(
    sshd, exporter_host, ssh_home, tmp_path, monkeypatch
):
    # labgrid-client (which evbench runs with the same environment) reaches the
    # coordinator through LG_PROXY with OpenSSH, which reads root's own ~/.ssh, not this
    # test's HOME: so the choice is checked here, and the jump it names is real.
    from evbench.boards._labgrid_client import Resource
    from evbench.boards.labgrid import LabgridBoard

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
    board = _jumped_board(sshd, spec, tmp_path)
    try:
        done = board.run(["echo", "through the jump"], timeout=30)
    finally:
        board.close()
    assert (done.returncode, done.stdout) == (0, b"through the jump\n")
    assert exporter_host.log_text().count("Accepted publickey") == logins_before + 1


def test_a_changed_jump_host_key_is_refused(sshd, exporter_host, ssh_home, tmp_path):
    other = ssh_home / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    key_type, key_data = other.with_suffix(".pub").read_text().split()[:2]
    trust(ssh_home, f"[127.0.0.1]:{exporter_host.port} {key_type} {key_data}\n")
    with pytest.raises(UserError) as refused:
        _jumped_board(sshd, f"127.0.0.1:{exporter_host.port}", tmp_path)
    changed = f"the host key of the jump host [127.0.0.1]:{exporter_host.port} has CHANGED"
    assert changed in str(refused.value)


def test_a_bad_jump_host_is_refused_before_connecting():
    from evbench.boards._ssh_jump import parse_jump

    for spec in ("a b", "host:port", "ssh://host", "-oProxyCommand=x", ""):
        with pytest.raises(UserError, match="bad SSH jump host"):
            parse_jump(spec)
