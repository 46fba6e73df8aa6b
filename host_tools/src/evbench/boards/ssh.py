"""Boards over SSH (paramiko): commands on exec channels, files over SFTP.

Logins are what OpenSSH users expect: ssh-agent, then key files, then a
password only from EVBENCH_PASSWORD or a prompt (_ssh_address.py resolves the
address and the host-key policy). A changed host key is always refused. A
dropped connection surfaces as ConnectionLost, and `reconnect` opens it again.

The `ssh://` scheme is declared here, on its parser. paramiko is imported inside the
functions that use it: collecting the transports (boards/urls.py) imports this module,
and `--help` must not load paramiko (tests/test_import_weight.py).
"""

from __future__ import annotations

import contextlib
import logging
import shlex
import socket
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from evbench.boards._ssh_address import (
    SshAddress,
    SshUrl,
    fingerprint,
    host_key_policy,
    load_known_hosts,
    parse_address,
    password_for,
    read_ssh_url,
)
from evbench.boards._ssh_jump import SshJump
from evbench.boards.base import (
    PASSWORD_VARIABLE,
    BoardOptions,
    CommandResult,
    ConnectionLost,
    PipedCommand,
    RemoteBoard,
    StreamedCommand,
    shown,
)
from evbench.boards.urls import scheme
from evbench_core.errors import EvbenchError, UserError

if TYPE_CHECKING:
    import paramiko


CONNECT_TIMEOUT = 15.0
KEEPALIVE_SECONDS = 5
UNACKNOWLEDGED_MS = 30_000
#: Output of one command beyond this is a fault, not data (a length read from the wire).
MAX_OUTPUT = 64 << 20

log = logging.getLogger(__name__)


@scheme(
    "ssh",
    "ssh://[USER@]HOST[:PORT][?python=PATH&dir=PATH]",
    transport="ssh",
    board="SshBoard",
    example="ssh://root@192.0.2.7:2222",
)
def parse_ssh_url(url: str) -> SshUrl:
    """Split an `ssh://` URL into host, port, user and evbench's options (read_ssh_url, in
    _ssh_address.py: the SSH jump reads its host's address the same way)."""
    return read_ssh_url(url)


class _NoAuthentication(Exception):
    """No key and no password to offer: a login failure, not a network one."""


def dropped() -> tuple[type[Exception], ...]:
    """What paramiko raises when the connection goes away under a call."""
    import paramiko

    return (paramiko.SSHException, EOFError, ConnectionError)


@contextlib.contextmanager
def lost_when_dropped(address: SshAddress) -> Iterator[None]:
    """Turn the ways paramiko reports a dead connection into ConnectionLost."""
    try:
        yield
    except dropped() as error:
        reason = str(error) or type(error).__name__
        raise ConnectionLost(f"the connection to {address} dropped ({reason})") from error


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
        status = self._channel.recv_exit_status()
        log.debug("channel %d: exit status %d (streamed)", self._channel.get_id(), status)
        return status

    def stderr(self) -> str:
        return self._errors.decode("utf-8", errors="replace")

    def interrupt(self) -> None:
        # Without a pty there is no Ctrl-C to send: closing the channel
        # hangs the command up, which the agent treats like an interrupt.
        log.debug("channel %d: closed to interrupt the command", self._channel.get_id())
        self._channel.close()


class SshPipedCommand(PipedCommand):
    """Bytes into a command's stdin over its exec channel (evbench flash --board)."""

    def __init__(self, channel: paramiko.Channel, board: SshBoard, argv: Sequence[str]) -> None:
        self._channel = channel
        self._board = board
        self._argv = tuple(argv)

    def write(self, data: bytes) -> None:
        import paramiko

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
        log.debug(
            "channel %d: exit status %d (piped), %d bytes out, %d bytes err",
            self._channel.get_id(),
            status,
            len(out),
            len(err),
        )
        return CommandResult(self._argv, status, bytes(out), bytes(err))


class SshBoard(RemoteBoard):
    """A board reached over SSH: commands on exec channels, files over SFTP."""

    def __init__(
        self, url: str, accept_new_host_key: bool = False, jump: SshJump | None = None
    ) -> None:
        self.url = url
        self.address = parse_address(url)
        self.python = self.address.python
        self.work_dir = self.address.work_dir
        self.accept_new_host_key = accept_new_host_key
        #: The host whose direct-tcpip channel carries the connection (`ssh -J`), if any.
        self.jump = jump
        self._password: str | None = None
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self.connect()

    @classmethod
    def from_url(cls, url: str, options: BoardOptions) -> SshBoard:
        return cls(url, accept_new_host_key=options.accept_new_host_key)

    # -- connection -------------------------------------------------------

    def _new_client(self) -> paramiko.SSHClient:
        import paramiko

        client = paramiko.SSHClient()
        load_known_hosts(client, self.address)
        client.set_missing_host_key_policy(host_key_policy(self.address, self.accept_new_host_key))
        return client

    def _connect_once(self, password: str | None) -> paramiko.SSHClient:
        import paramiko

        address = self.address
        client = self._new_client()
        try:
            # Through a jump host: the board's SSH runs over a channel opened there.
            sock = self.jump.channel_to(address.hostname, address.port) if self.jump else None
            try:
                client.connect(
                    address.hostname,
                    port=address.port,
                    username=address.user,
                    password=password,
                    key_filename=list(address.identity_files) or None,  # type: ignore[arg-type]  # paramiko takes a list; its stub says str
                    sock=sock,
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
        import paramiko

        address = self.address
        via = f" through {self.jump}" if self.jump else ""
        log.info("connecting to %s%s", address, via)  # USER@HOST:PORT
        try:
            try:
                client = self._connect_once(self._password)
            except (paramiko.AuthenticationException, _NoAuthentication):
                if self._password is not None:
                    raise
                log.debug("%s: no key was accepted; trying a password", address)
                self._password = password_for(address)
                if self._password is None:
                    raise
                client = self._connect_once(self._password)
        except paramiko.BadHostKeyException as error:
            raise UserError(
                f"the host key of {address.known_hosts_name} has CHANGED "
                f"(now {fingerprint(error.key)}): refusing to connect, it may be an attack",
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
        self._client = client
        transport = client.get_transport()
        assert transport is not None  # a connected client has its transport
        # A pulled cable sends no FIN: keepalives every 5 s that stay unacknowledged
        # for 30 s make the kernel close the socket, and the drop shows as ConnectionLost.
        transport.set_keepalive(KEEPALIVE_SECONDS)
        # Through a jump host the TCP connection is the jump host's, not a channel.
        tcp = self.jump.socket() if self.jump else transport.sock
        if hasattr(socket, "TCP_USER_TIMEOUT") and isinstance(tcp, socket.socket):
            tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, UNACKNOWLEDGED_MS)
        self._sftp = None
        log.info(
            "connected to %s (%s, logged in with %s)",
            address,
            transport.remote_version,
            "a password" if self._password is not None else "a key",
        )

    def reconnect(self) -> None:
        log.debug("%s: reconnecting", self.address)
        self.close()
        self.connect()

    def network_addresses(self) -> tuple[str, str]:
        _, transport = self._live()
        if self.jump is not None:
            raise UserError(
                f"{self.address} is reached through the jump host {self.jump}: this host "
                "and the board share no network for the link suite's own connection",
                hint="run the link suite on a board the host reaches directly",
            )
        sock = transport.sock
        assert isinstance(sock, socket.socket)  # a direct connection's own TCP socket
        return sock.getsockname()[0], sock.getpeername()[0]

    def _live(self) -> tuple[paramiko.SSHClient, paramiko.Transport]:
        """The client and its transport; ConnectionLost when the connection has dropped."""
        client = self._client
        transport = client.get_transport() if client is not None else None
        if client is None or transport is None or not transport.is_active():
            raise ConnectionLost(f"the connection to {self.address} dropped")
        return client, transport

    def check_alive(self) -> None:
        """Raise ConnectionLost when the connection has dropped."""
        self._live()

    def close(self) -> None:
        # Closing a dead connection may fail the same ways it died: it is closed either way.
        with contextlib.suppress(*dropped(), OSError):
            if self._sftp is not None:
                self._sftp.close()
            if self._client is not None:
                self._client.close()
        if self.jump is not None:
            self.jump.close()
        if self._client is not None:
            log.debug("%s: connection closed", self.address)
        self._sftp = None
        self._client = None

    # -- commands and files ----------------------------------------------

    def _channel(self, argv: Sequence[str]) -> paramiko.Channel:
        import paramiko

        _, transport = self._live()
        try:
            channel = transport.open_session(timeout=CONNECT_TIMEOUT)
            log.debug("channel %d: exec %s", channel.get_id(), shown(shlex.join(argv)))
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
        log.debug(
            "channel %d: exit status %d, %d bytes in, %d bytes out, %d bytes err",
            channel.get_id(),
            status,
            len(stdin or b""),
            len(out),
            len(err),
        )
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
        client, _ = self._live()
        if self._sftp is None:
            with lost_when_dropped(self.address):
                self._sftp = client.open_sftp()
            log.debug("%s: SFTP session open", self.address)
        return self._sftp

    def put(self, local: Path, remote: str) -> None:
        try:
            with lost_when_dropped(self.address):
                attributes = self._sftp_client().put(str(local), remote)
            log.debug("sftp put %s -> %s: %d bytes", local, remote, attributes.st_size)
        except OSError as error:
            self.check_alive()
            raise UserError(
                f"cannot copy {local} to {self.address}:{remote}: {error}",
                hint="check the board's free space (df) and that the directory is writable",
            ) from error

    def get(self, remote: str, local: Path) -> None:
        try:
            with lost_when_dropped(self.address):
                sftp = self._sftp_client()
                size = sftp.stat(remote).st_size or 0
                sftp.get(remote, str(local))
            copied = local.stat().st_size
            log.debug("sftp get %s -> %s: %d bytes", remote, local, copied)
        except OSError as error:
            self.check_alive()
            if isinstance(error, FileNotFoundError):
                raise UserError(f"{self.address}:{remote} does not exist") from error
            raise UserError(
                f"cannot copy {self.address}:{remote} to {local}: {error}",
                hint="check the free space here (df) and that the directory is writable",
            ) from error
        if copied < size:
            # paramiko's reader takes a send that finds the connection closed (EOFError) for
            # the file's end, and get() returns the short copy without an error.
            raise ConnectionLost(
                f"the copy of {remote} from {self.address} came short ({copied} of {size} "
                "bytes): the connection dropped or the file shrank"
            )
