"""Boards over SSH (paramiko): `ssh://[USER@]HOST[:PORT][?python=PATH&dir=PATH]`.

Authentication is what OpenSSH users expect: ssh-agent, key files, and
~/.ssh/config (Host aliases, HostName, User, Port, IdentityFile,
UserKnownHostsFile). A password is used only from EVBENCH_PASSWORD or typed
at a prompt, and never logged. Host keys are checked against known_hosts: an
unknown host is refused unless the user accepts it (trust on first use,
saved to known_hosts); a changed key is always refused.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shlex
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import paramiko

from evbench.boards.base import (
    Board,
    CommandResult,
    ConnectionLost,
    PipedCommand,
    StreamedCommand,
)
from evbench_agent.errors import EvbenchError, UserError

DEFAULT_PORT = 22
CONNECT_TIMEOUT = 15.0
#: Output of one command beyond this is a fault, not data (a length read from the wire).
MAX_OUTPUT = 64 << 20
PASSWORD_VARIABLE = "EVBENCH_PASSWORD"
#: Where the agent and the runs live on the board, relative to the login directory.
DEFAULT_WORK_DIR = ".evbench"


@dataclass(frozen=True)
class SshAddress:
    """What a `ssh://` URL and ~/.ssh/config say about where to connect."""

    host: str
    hostname: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    known_hosts: Path
    python: str
    work_dir: str

    @property
    def known_hosts_name(self) -> str:
        """How known_hosts names this host (OpenSSH's `[host]:port` form off port 22)."""
        return self.hostname if self.port == DEFAULT_PORT else f"[{self.hostname}]:{self.port}"

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


def _ssh_config(host: str) -> dict:
    path = Path.home() / ".ssh" / "config"
    if not path.is_file():
        return {}
    try:
        return paramiko.SSHConfig.from_path(str(path)).lookup(host)
    except (OSError, paramiko.SSHException) as error:
        raise UserError(f"cannot read {path}: {error}", hint="fix the file") from error


def parse_address(url: str) -> SshAddress:
    """Split an `ssh://` URL and fill in what ~/.ssh/config adds."""
    parts = urlsplit(url)
    if parts.scheme != "ssh" or not parts.hostname:
        raise UserError(
            f"not an SSH board address: {url!r}",
            hint="write ssh://[USER@]HOST[:PORT], with an IPv6 address in brackets",
        )
    try:
        url_port = parts.port
    except ValueError:
        raise UserError(f"bad port in {url!r}", hint="the port is a number 1-65535") from None
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - {"python", "dir"})
    if unknown:
        raise UserError(
            f"unknown board option(s) in {url!r}: {', '.join(unknown)}",
            hint="the options are python=PATH and dir=PATH",
        )
    config = _ssh_config(parts.hostname)
    known_hosts = (config.get("userknownhostsfile") or "~/.ssh/known_hosts").split()[0]
    return SshAddress(
        host=parts.hostname,
        hostname=config.get("hostname", parts.hostname),
        port=url_port or int(config.get("port", DEFAULT_PORT)),
        user=parts.username or config.get("user") or getpass.getuser(),
        identity_files=tuple(str(Path(p).expanduser()) for p in config.get("identityfile", [])),
        known_hosts=Path(known_hosts).expanduser(),
        python=query.get("python", "python3"),
        work_dir=query.get("dir", DEFAULT_WORK_DIR),
    )


def _fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


class _HostKeyPolicy(paramiko.MissingHostKeyPolicy):
    """Unknown hosts: refuse, or with the user's consent trust and save the key."""

    def __init__(self, address: SshAddress, accept_new: bool) -> None:
        self.address = address
        self.accept_new = accept_new

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey):
        if not self.accept_new:
            raise UserError(
                f"unknown host key for {self.address.known_hosts_name} ({_fingerprint(key)})",
                hint="check the fingerprint on the board (ssh-keygen -lf on its host key), "
                "then run again with --accept-new-host-key to trust it and save it "
                f"to {self.address.known_hosts}",
            )
        known_hosts = self.address.known_hosts
        known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(known_hosts, "a", encoding="ascii") as stream:
            stream.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
        client.get_host_keys().add(hostname, key.get_name(), key)
        print(
            f"evbench: trusted the new host key of {hostname} ({_fingerprint(key)}), "
            f"saved to {known_hosts}",
            file=sys.stderr,
        )


class _NoAuthentication(Exception):
    """No key and no password to offer: a login failure, not a network one."""


#: What paramiko raises when the connection goes away under a call.
DROPPED = (paramiko.SSHException, EOFError, ConnectionError)


@contextlib.contextmanager
def lost_when_dropped(address: SshAddress) -> Iterator[None]:
    """Turn the ways paramiko reports a dead connection into ConnectionLost."""
    try:
        yield
    except DROPPED as error:
        reason = str(error) or type(error).__name__
        raise ConnectionLost(f"the connection to {address} dropped ({reason})") from error


def _password(address: SshAddress) -> str | None:
    """The password, from EVBENCH_PASSWORD or a prompt; None when neither can give one."""
    if PASSWORD_VARIABLE in os.environ:
        return os.environ[PASSWORD_VARIABLE]
    if sys.stdin.isatty():
        return getpass.getpass(f"password for {address}: ")
    return None


class SshStreamedCommand(StreamedCommand):
    def __init__(self, channel: paramiko.Channel, board: SshBoard) -> None:
        self._channel = channel
        self._board = board
        self._errors = bytearray()

    def lines(self) -> Iterator[str]:
        with lost_when_dropped(self._board.address):
            yield from self._lines()
        self._board.check_alive()

    def _lines(self) -> Iterator[str]:
        pending = b""
        while True:
            if self._channel.recv_stderr_ready():
                self._errors += self._channel.recv_stderr(1 << 16)
                del self._errors[:-MAX_OUTPUT]
            try:
                chunk = self._channel.recv(1 << 16)
            except TimeoutError:
                continue
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            if len(pending) > MAX_OUTPUT:
                raise EvbenchError(f"a line from {self._board.address} is over {MAX_OUTPUT} bytes")
            for line in complete:
                yield line.decode("utf-8", errors="replace")
        if pending:
            yield pending.decode("utf-8", errors="replace")

    def wait(self, timeout: float) -> int:
        with lost_when_dropped(self._board.address):
            return self._wait(timeout)

    def _wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while not self._channel.exit_status_ready():
            if time.monotonic() > deadline:
                raise EvbenchError(f"a command on {self._board.address} did not end in {timeout} s")
            time.sleep(0.02)
        while self._channel.recv_stderr_ready():
            self._errors += self._channel.recv_stderr(1 << 16)
        self._board.check_alive()
        return self._channel.recv_exit_status()

    def stderr(self) -> str:
        return self._errors.decode("utf-8", errors="replace")

    def interrupt(self) -> None:
        # Without a pty there is no Ctrl-C to send: closing the channel
        # hangs the command up, which the agent treats like an interrupt.
        self._channel.close()


class SshPipedCommand(PipedCommand):
    """Bytes into a command's stdin over its exec channel (evbench flash --board)."""

    def __init__(self, channel: paramiko.Channel, board: SshBoard, argv: Sequence[str]) -> None:
        self._channel = channel
        self._board = board
        self._argv = tuple(argv)

    def write(self, data: bytes) -> None:
        try:
            self._channel.sendall(data)
        except (paramiko.SSHException, EOFError) as error:
            raise OSError(
                f"the command on {self._board.address} stopped reading: {error}"
            ) from error

    def finish(self, timeout: float) -> CommandResult:
        deadline = time.monotonic() + timeout
        out, err = bytearray(), bytearray()
        self._channel.shutdown_write()
        while not (
            self._channel.exit_status_ready()
            and not self._channel.recv_ready()
            and not self._channel.recv_stderr_ready()
        ):
            if self._channel.recv_ready():
                out += self._channel.recv(1 << 16)
            elif self._channel.recv_stderr_ready():
                err += self._channel.recv_stderr(1 << 16)
            elif time.monotonic() > deadline:
                self._channel.close()
                raise EvbenchError(f"a command on {self._board.address} did not end in {timeout} s")
            else:
                time.sleep(0.01)
            if len(out) > MAX_OUTPUT or len(err) > MAX_OUTPUT:
                self._channel.close()
                raise EvbenchError(
                    f"a command on {self._board.address} wrote over {MAX_OUTPUT} bytes"
                )
        self._board.check_alive()
        status = self._channel.recv_exit_status()
        self._channel.close()
        return CommandResult(self._argv, status, bytes(out), bytes(err))


class SshBoard(Board):
    """A board reached over SSH: commands on exec channels, files over SFTP."""

    def __init__(self, url: str, accept_new_host_key: bool = False) -> None:
        self.url = url
        self.address = parse_address(url)
        self.python = self.address.python
        self.work_dir = self.address.work_dir
        self.accept_new_host_key = accept_new_host_key
        self._password: str | None = None
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self.connect()

    # -- connection -------------------------------------------------------

    def _new_client(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        client.load_system_host_keys()
        if self.address.known_hosts.is_file():
            client.load_host_keys(str(self.address.known_hosts))
        client.set_missing_host_key_policy(_HostKeyPolicy(self.address, self.accept_new_host_key))
        return client

    def _connect_once(self, password: str | None) -> paramiko.SSHClient:
        address = self.address
        client = self._new_client()
        try:
            try:
                client.connect(
                    address.hostname,
                    port=address.port,
                    username=address.user,
                    password=password,
                    key_filename=list(address.identity_files) or None,
                    timeout=CONNECT_TIMEOUT,
                    banner_timeout=CONNECT_TIMEOUT,
                    auth_timeout=CONNECT_TIMEOUT,
                )
            except paramiko.SSHException as error:
                # paramiko says this when it has neither a key nor a password to try.
                if str(error) == "No authentication methods available":
                    raise _NoAuthentication() from error
                raise
        except BaseException:
            client.close()
            raise
        return client

    def connect(self) -> None:
        """Open the connection; every failure is one line that says what to do."""
        address = self.address
        try:
            try:
                self._client = self._connect_once(self._password)
            except (paramiko.AuthenticationException, _NoAuthentication):
                if self._password is not None:
                    raise
                self._password = _password(address)
                if self._password is None:
                    raise
                self._client = self._connect_once(self._password)
        except paramiko.BadHostKeyException as error:
            raise UserError(
                f"the host key of {address.known_hosts_name} has CHANGED "
                f"(now {_fingerprint(error.key)}): refusing to connect, it may be an attack",
                hint="if the board was reinstalled, remove the old key with "
                f"ssh-keygen -f {address.known_hosts} -R '{address.known_hosts_name}'",
            ) from None
        except (paramiko.AuthenticationException, _NoAuthentication):
            raise UserError(
                f"{address} refused the login as {address.user!r} (no key or password accepted)",
                hint="check the user, install your public key in the board's "
                f"~/.ssh/authorized_keys, or set {PASSWORD_VARIABLE}",
            ) from None
        except (OSError, paramiko.SSHException, EOFError) as error:
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            raise ConnectionLost(
                f"cannot reach {address}: {reason}",
                hint="check the address, that the board is on the network and runs sshd",
            ) from None
        transport = self._client.get_transport()
        transport.set_keepalive(5)
        self._sftp = None

    def reconnect(self) -> None:
        self.close()
        self.connect()

    def network_addresses(self) -> tuple[str, str]:
        self.check_alive()
        sock = self._client.get_transport().sock
        return sock.getsockname()[0], sock.getpeername()[0]

    def check_alive(self) -> None:
        """Raise ConnectionLost when the connection has dropped."""
        transport = self._client.get_transport() if self._client else None
        if transport is None or not transport.is_active():
            raise ConnectionLost(f"the connection to {self.address} dropped")

    def close(self) -> None:
        # Closing a dead connection may fail the same ways it died: it is closed either way.
        with contextlib.suppress(*DROPPED, OSError):
            if self._sftp is not None:
                self._sftp.close()
            if self._client is not None:
                self._client.close()
        self._sftp = None
        self._client = None

    # -- commands and files ----------------------------------------------

    def _channel(self, argv: Sequence[str]) -> paramiko.Channel:
        self.check_alive()
        try:
            channel = self._client.get_transport().open_session(timeout=CONNECT_TIMEOUT)
            channel.exec_command(shlex.join(argv))
        except (paramiko.SSHException, OSError, EOFError) as error:
            self.check_alive()
            raise ConnectionLost(f"cannot start a command on {self.address}: {error}") from error
        return channel

    def run(self, argv: Sequence[str], timeout: float, stdin: bytes | None = None) -> CommandResult:
        channel = self._channel(argv)
        with lost_when_dropped(self.address):
            return self._collect(channel, argv, timeout, stdin)

    def _collect(
        self, channel: paramiko.Channel, argv: Sequence[str], timeout: float, stdin: bytes | None
    ) -> CommandResult:
        deadline = time.monotonic() + timeout
        if stdin:
            channel.sendall(stdin)
        channel.shutdown_write()
        out, err = bytearray(), bytearray()
        while True:
            busy = False
            if channel.recv_ready():
                out += channel.recv(1 << 16)
                busy = True
            if channel.recv_stderr_ready():
                err += channel.recv_stderr(1 << 16)
                busy = True
            if len(out) > MAX_OUTPUT or len(err) > MAX_OUTPUT:
                channel.close()
                raise EvbenchError(f"{argv[0]} on {self.address} wrote over {MAX_OUTPUT} bytes")
            if not busy and channel.exit_status_ready():
                if channel.recv_ready() or channel.recv_stderr_ready():
                    continue
                break
            if not busy:
                if time.monotonic() > deadline:
                    channel.close()
                    raise EvbenchError(
                        f"{shlex.join(argv)[:80]} on {self.address} did not end in {timeout} s"
                    )
                time.sleep(0.005)
        self.check_alive()
        status = channel.recv_exit_status()
        channel.close()
        return CommandResult(tuple(argv), status, bytes(out), bytes(err))

    def stream(self, argv: Sequence[str]) -> StreamedCommand:
        channel = self._channel(argv)
        with lost_when_dropped(self.address):
            channel.shutdown_write()
        channel.settimeout(1.0)
        return SshStreamedCommand(channel, self)

    def pipe(self, argv: Sequence[str]) -> PipedCommand:
        return SshPipedCommand(self._channel(argv), self, argv)

    def _sftp_client(self) -> paramiko.SFTPClient:
        self.check_alive()
        if self._sftp is None:
            with lost_when_dropped(self.address):
                self._sftp = self._client.open_sftp()
        return self._sftp

    def put(self, local: Path, remote: str) -> None:
        try:
            with lost_when_dropped(self.address):
                self._sftp_client().put(str(local), remote)
        except OSError as error:
            self.check_alive()
            raise UserError(f"cannot copy {local} to {self.address}:{remote}: {error}") from error

    def get(self, remote: str, local: Path) -> None:
        try:
            with lost_when_dropped(self.address):
                self._sftp_client().get(remote, str(local))
        except OSError as error:
            self.check_alive()
            if isinstance(error, FileNotFoundError):
                raise UserError(f"{self.address}:{remote} does not exist") from error
            raise UserError(f"cannot copy {self.address}:{remote} to {local}: {error}") from error

    def agent_command(self) -> list[str]:
        from evbench.deploy import zipapp_path

        return [self.python, zipapp_path(self)]
