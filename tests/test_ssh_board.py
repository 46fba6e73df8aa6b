"""The SSH transport against a real OpenSSH sshd on loopback (the board is this machine):
addresses, host keys, logins."""

import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import require_command
from console_rig import typed_on_a_terminal
from sshd import free_port

from evbench.boards import ConnectionLost, open_board
from evbench.boards._ssh_address import parse_address
from evbench.cli import evbench
from evbench_core.errors import UserError

pytestmark = pytest.mark.integration

#: The Debian python3 with python3-protobuf and python3-psutil (tests/system-packages.txt).
BOARD_PYTHON = "/usr/bin/python3"
EVBENCH = str(Path(sys.executable).parent / "evbench")


def board_url(sshd, tmp_path: Path, user: str | None = None, python: str = BOARD_PYTHON) -> str:
    return f"ssh://{user or sshd.user}@127.0.0.1:{sshd.port}?dir={tmp_path}/board&python={python}"


def test_commands_files_and_a_real_drop(sshd, ssh_home, tmp_path):
    with open_board(board_url(sshd, tmp_path)) as board:
        result = board.run(["sh", "-c", "cat; echo oops >&2; exit 3"], 30, stdin=b"in put")
        assert (result.returncode, result.stdout, result.stderr) == (3, b"in put", b"oops\n")
        streamed = board.stream(["sh", "-c", "echo one; echo two; exit 5"])
        assert list(streamed.lines()) == ["one", "two"]
        assert streamed.wait(30) == 5
        source = tmp_path / "source.bin"
        source.write_bytes(bytes(range(256)) * 1000)
        board.put(source, str(tmp_path / "remote.bin"))
        board.get(str(tmp_path / "remote.bin"), tmp_path / "back.bin")
        assert (tmp_path / "back.bin").read_bytes() == source.read_bytes()
        assert sshd.drop_connections() >= 1
        with pytest.raises(ConnectionLost):
            board.run(["true"], 30)
        board.reconnect()
        assert board.run(["echo", "back"], 30).stdout == b"back\n"


def test_config_alias_gives_host_port_user_and_identity(sshd, ssh_home, tmp_path):
    key = ssh_home / "lab-key"
    (ssh_home / ".ssh" / "id_ed25519").rename(key)  # only the alias's IdentityFile can log in
    (ssh_home / ".ssh" / "config").write_text(
        f"Host labboard\n  HostName 127.0.0.1\n  Port {sshd.port}\n"
        f"  User {sshd.user}\n  IdentityFile {key}\n"
    )
    with open_board(f"ssh://labboard?dir={tmp_path}/board") as board:
        assert board.run(["echo", "via alias"], 30).stdout == b"via alias\n"


def test_login_through_ssh_agent(sshd, ssh_home, tmp_path, monkeypatch):
    key = ssh_home / ".ssh" / "id_ed25519"
    socket_path = tmp_path / "agent.sock"
    agent = subprocess.Popen([require_command("ssh-agent"), "-D", "-a", str(socket_path)])
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        subprocess.run([require_command("ssh-add"), "-q", str(key)], check=True)
        key.unlink()  # only the agent holds the key now
        with open_board(board_url(sshd, tmp_path)) as board:
            assert board.run(["echo", "via agent"], 30).stdout == b"via agent\n"
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def test_unknown_host_key_refused_until_accepted_a_changed_one_always(
    sshd, ssh_home, tmp_path, capsys
):
    known_hosts = ssh_home / ".ssh" / "known_hosts"
    known_hosts.unlink()
    url = board_url(sshd, tmp_path)
    assert evbench(["deploy", "--board", url]) == 2
    err = capsys.readouterr().err
    assert "unknown host key" in err and "--accept-new-host-key" in err
    assert not known_hosts.exists()
    assert evbench(["deploy", "--board", url, "--accept-new-host-key"]) == 0
    assert known_hosts.read_text().split()[:3] == sshd.host_key_line().split()[:3]
    assert evbench(["deploy", "--board", url]) == 0  # trusted from now on
    # Then the host's key changes: refused always, with the flag too.
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    key_type, key_data = other.with_suffix(".pub").read_text().split()[:2]
    known_hosts.write_text(f"[127.0.0.1]:{sshd.port} {key_type} {key_data}\n")
    for flags in ([], ["--accept-new-host-key"]):
        assert evbench(["deploy", "--board", url, *flags]) == 2
        err = capsys.readouterr().err
        assert "CHANGED" in err and "ssh-keygen" in err
    assert known_hosts.read_text().split()[2] == key_data  # the trusted key is kept


def test_password_login_from_evbench_password_or_a_terminal_prompt(
    sshd, ssh_home, console_user, monkeypatch, capsys
):
    (ssh_home / ".ssh" / "id_ed25519").unlink()  # no key: the password is the way in
    url = f"ssh://{console_user.name}@127.0.0.1:{sshd.port}?python={BOARD_PYTHON}"
    argv, answer = [EVBENCH, "deploy", "--board", url], console_user.password.encode() + b"\n"
    status, screen = typed_on_a_terminal(require_command("setsid"), argv, b"password for", answer)
    assert status == 0, screen.decode(errors="replace")
    assert console_user.password.encode() not in screen  # not echoed, not printed
    assert b"installed" in screen or b"up to date" in screen
    monkeypatch.setenv("EVBENCH_PASSWORD", console_user.password)
    assert evbench(["deploy", "--board", url]) == 0
    assert (console_user.home / ".evbench" / "agent" / "evbench-agent.pyz").is_file()
    # A wrong password, and one for root (this sshd takes none for root): both offered,
    # refused, and neither echoed nor in the server's log.
    monkeypatch.setenv("EVBENCH_PASSWORD", "not-" + console_user.password)
    assert evbench(["deploy", "--board", url]) == 2
    assert evbench(["deploy", "--board", url.replace(console_user.name, sshd.user, 1)]) == 2
    captured = capsys.readouterr()
    assert f"refused the login as {console_user.name!r}" in captured.err
    assert f"refused the login as {sshd.user!r}" in captured.err
    for secret in (console_user.password, "not-" + console_user.password):
        assert secret not in captured.out + captured.err + sshd.log_text()


def test_deploy_refused_names_its_cause_in_one_line(sshd, ssh_home, tmp_path, capsys):
    bare = tmp_path / "bare-venv"  # a Python without protobuf, as on a minimal image
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    nowhere = f"ssh://root@127.0.0.1:{free_port()}?dir={tmp_path}"
    nobody = board_url(sshd, tmp_path, user="nobody")
    no_protobuf = board_url(sshd, tmp_path, python=bare / "bin/python")
    refusals = [
        (nowhere, ["cannot reach", "hint:"]),
        (nobody, ["refused the login as 'nobody'", "authorized_keys"]),
        (board_url(sshd, tmp_path, python="/nonexistent/python3"), ["has no /nonexistent/python3"]),
        (no_protobuf, ["has no protobuf", "python3-protobuf"]),
    ]
    for url, says in refusals:
        assert evbench(["deploy", "--board", url]) == 2, url
        err = capsys.readouterr().err
        assert all(words in err for words in says) and "Traceback" not in err, err
    key = ssh_home / ".ssh" / "id_ed25519"  # a key the server does not know
    key.unlink()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    assert evbench(["deploy", "--board", board_url(sshd, tmp_path)]) == 2
    assert "refused the login" in capsys.readouterr().err


def test_addresses_are_parsed_as_written_or_refused(ssh_home):
    address = parse_address("ssh://pi@[fe80::1]:2200?python=/opt/py/bin/python3&dir=/data/ev")
    assert (address.hostname, address.port, address.user) == ("fe80::1", 2200, "pi")
    assert (address.python, address.work_dir) == ("/opt/py/bin/python3", "/data/ev")
    assert address.known_hosts_name == "[fe80::1]:2200"
    assert parse_address("ssh://board").port == 22
    # RFC 3986: in a query `+` is a plus (a space only in HTML form data) and %XX a byte.
    address = parse_address("ssh://b?dir=/opt/c++/ev&python=/opt/my%20py/bin/python3")
    assert (address.work_dir, address.python) == ("/opt/c++/ev", "/opt/my py/bin/python3")
    assert parse_address("ssh://first.last%40corp@b").user == "first.last@corp"
    assert parse_address("ssh://b/").work_dir == ".evbench"  # a bare trailing slash is no path
    refused = [
        ("ssh://board?pyhton=/usr/bin/python3", "unknown board option"),
        ("ssh://board:99999", "bad port"),
        ("ssh://b:0", "bad port"),  # was taken as 22
        ("ssh://b:22/some/path", "has no path"),  # was ignored
        ("ssh://b?dir=/data/ev#runs", "has no #fragment"),  # cut the dir short
        ("ssh://b?dir=", "invalid dir ''"),  # was the default
        ("ssh://b?python=%20", "invalid python ' '"),
        ("ssh://b?dir=/a&dir=/b", "given twice"),  # the last one won
        ("ssh://b?dir=/data/%FF", "not UTF-8"),  # was U+FFFD
        ("ssh://b?dir=~pi/ev", "only ~/"),  # another user's home: not expanded
    ]
    for url, says in refused:
        with pytest.raises(UserError, match=re.escape(says)):
            parse_address(url)


def test_dir_under_the_home_is_the_login_users_home_on_the_board(
    sshd, ssh_home, console_user, monkeypatch, capsys
):
    # docs/boards.md: ~/PATH is in the board's home. A password: sshd reads the key list
    # as the user, and it is in root's tmp.
    monkeypatch.setenv("EVBENCH_PASSWORD", console_user.password)
    name = f"evb-tilde-{secrets.token_hex(3)}"
    url = f"ssh://{console_user.name}@127.0.0.1:{sshd.port}?dir=~/{name}&python={BOARD_PYTHON}"
    try:
        assert evbench(["deploy", "--board", url]) == 0, capsys.readouterr().err
        assert (console_user.home / name / "agent" / "evbench-agent.pyz").is_file()
        assert not (console_user.home / "~").exists()  # no folder named ~
    finally:
        for made in (console_user.home / name, console_user.home / "~"):
            shutil.rmtree(made, ignore_errors=True)


def one_error(capsys) -> str:
    """The one `evbench: error:` line a user's mistake gives (and at most a hint)."""
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert [line.split(":")[1] for line in lines] in ([" error"], [" error", " hint"]), err
    return lines[0]


def test_a_damaged_known_hosts_or_ssh_config_is_named_in_one_line(sshd, ssh_home, tmp_path, capsys):
    url = board_url(sshd, tmp_path)
    known_hosts = ssh_home / ".ssh" / "known_hosts"
    trusted = sshd.host_key_line()
    damaged = {
        "not UTF-8": b"\xff\xfe\n" + trusted.encode(),
        "no host key": b"[192.0.2.7]:22 ssh-ed25519 AAAA!!not-base64\n" + trusted.encode(),
    }
    for says, content in damaged.items():
        known_hosts.write_bytes(content)
        assert evbench(["deploy", "--board", url]) == 2
        error = one_error(capsys)
        assert str(known_hosts) in error and says in error, error
    known_hosts.unlink()
    known_hosts.mkdir()  # was skipped, then saving the key into it read as "cannot reach"
    assert evbench(["deploy", "--board", url, "--accept-new-host-key"]) == 2
    error = one_error(capsys)
    assert str(known_hosts) in error and "Is a directory" in error, error
    known_hosts.rmdir()
    # UserKnownHostsFile under a file: the new key cannot be saved, and says so.
    config = ssh_home / ".ssh" / "config"
    blocked = tmp_path / "a-file" / "known_hosts"
    blocked.parent.write_text("")
    config.write_text(f"Host 127.0.0.1\n  UserKnownHostsFile {blocked}\n")
    assert evbench(["deploy", "--board", url, "--accept-new-host-key"]) == 2
    error = one_error(capsys)
    assert f"cannot save the host key of [127.0.0.1]:{sshd.port} to {blocked}" in error, error
    # A Port that is no port number, and a config that is not UTF-8.
    for text, says in ((b"Host lab\n  Port abc\n", "bad Port 'abc'"), (b"\xff\n", "not UTF-8")):
        config.write_bytes(text)
        assert evbench(["deploy", "--board", "ssh://lab"]) == 2
        error = one_error(capsys)
        assert str(config) in error and says in error, error


def test_a_copy_cut_short_by_a_send_on_a_dropped_connection_is_a_lost_connection(
    sshd, ssh_home, tmp_path, monkeypatch
):
    # Once paramiko's prefetch ends early (a race), each read of a get() sends its request
    # and waits; a send that finds the connection closed raises EOFError in paramiko's
    # reader, which takes it for the file's end: get() returned a short copy without an
    # error (about 1 cut fetch in 10 under load in test_ssh_run.py). Made certain here, the
    # one stand-in: no prefetch, and before the fourth read request the server is held
    # (SIGSTOP: it never answers the end, so the client never closes the channel first)
    # and the connection's real socket shut for writing, so every send fails.
    import paramiko
    from paramiko.sftp import CMD_READ

    remote = tmp_path / "remote.bin"
    remote.write_bytes(bytes(range(256)) * (1 << 14))  # 4 MiB: 128 reads of 32 KiB
    monkeypatch.setattr(paramiko.SFTPFile, "prefetch", lambda self, *args, **kwargs: None)
    reads = 0
    real_request = paramiko.SFTPClient._async_request

    def request(self, fileobj, kind, *args):
        nonlocal reads
        reads += kind == CMD_READ
        if kind == CMD_READ and reads == 4:
            for server in sshd.connection_processes():
                server.suspend()
            self.sock.get_transport().sock.shutdown(socket.SHUT_WR)
        return real_request(self, fileobj, kind, *args)

    monkeypatch.setattr(paramiko.SFTPClient, "_async_request", request)
    try:
        with open_board(board_url(sshd, tmp_path)) as board, pytest.raises(ConnectionLost) as lost:
            board.get(str(remote), tmp_path / "back.bin")
    finally:
        sshd.drop_connections()
    assert f"came short ({3 * 32768} of {4 << 20} bytes)" in str(lost.value)
