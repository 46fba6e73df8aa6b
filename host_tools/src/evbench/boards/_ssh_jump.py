"""An SSH jump, as `ssh -J`: the board's SSH reached through a channel of another host.

A labgrid exporter started with `--isolated` (or one whose resources say
`proxy_required`) exports boards the lab PC cannot reach directly, only through the
exporter host. labgrid's own client forwards ports there with OpenSSH; evbench, on
paramiko, opens a `direct-tcpip` channel through the jump host and runs the board's
SSH over it. The jump host's key is verified like any host's (known_hosts, trust on
first use only with --accept-new-host-key), and it gets keys or the ssh-agent only:
the board's password is never offered to it. paramiko is imported inside the functions
that use it (boards/ssh.py says why).
"""

from __future__ import annotations

import contextlib
import re
import socket
from typing import TYPE_CHECKING

from evbench.boards._ssh_address import SshAddress, fingerprint, host_key_policy, parse_address
from evbench.boards.base import ConnectionLost
from evbench_core.errors import UserError

if TYPE_CHECKING:
    import paramiko

CONNECT_TIMEOUT = 15.0
#: `[USER@]HOST[:PORT]`, as `ssh -J` and LG_PROXY take it (an IPv6 address in brackets).
_SPEC = re.compile(
    r"(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]{0,63})@)?"
    r"(?P<host>[A-Za-z0-9][A-Za-z0-9._-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\])"
    r"(?::(?P<port>[0-9]{1,5}))?"
)
#: paramiko's ChannelException codes (RFC 4254 5.1): the jump host refuses forwarding.
_PROHIBITED = 1


def parse_jump(spec: str) -> SshAddress:
    """The jump host's address: `[USER@]HOST[:PORT]` with what ~/.ssh/config adds."""
    if not _SPEC.fullmatch(spec):
        raise UserError(
            f"bad SSH jump host {spec[:80]!r}",
            hint="write [USER@]HOST[:PORT] (LG_PROXY, or the exporter's proxy)",
        )
    return parse_address(f"ssh://{spec}")


class SshJump:
    """One connection to the jump host, and channels through it to boards."""

    def __init__(self, spec: str, accept_new_host_key: bool = False) -> None:
        self.spec = spec
        self.address = parse_jump(spec)
        self.accept_new_host_key = accept_new_host_key
        self._client: paramiko.SSHClient | None = None

    def __str__(self) -> str:
        return str(self.address)

    def _connect(self) -> paramiko.SSHClient:
        import paramiko

        address = self.address
        client = paramiko.SSHClient()
        client.load_system_host_keys()
        if address.known_hosts.is_file():
            client.load_host_keys(str(address.known_hosts))
        client.set_missing_host_key_policy(host_key_policy(address, self.accept_new_host_key))
        try:
            client.connect(
                address.hostname,
                port=address.port,
                username=address.user,
                key_filename=list(address.identity_files) or None,  # type: ignore[arg-type]  # paramiko takes a list; its stub says str
                timeout=CONNECT_TIMEOUT,
                banner_timeout=CONNECT_TIMEOUT,
                auth_timeout=CONNECT_TIMEOUT,
            )
        except paramiko.BadHostKeyException as error:
            client.close()
            raise UserError(
                f"the host key of the jump host {address.known_hosts_name} has CHANGED "
                f"(now {fingerprint(error.key)}): refusing to connect, it may be an attack",
                hint=f"if it was reinstalled: ssh-keygen -f {address.known_hosts} "
                f"-R '{address.known_hosts_name}'",
            ) from None
        except paramiko.AuthenticationException:
            client.close()
            raise UserError(
                f"the jump host {address} refused the login as {address.user!r}",
                hint="the jump host takes keys or the ssh-agent only; install your public "
                "key there, or name the user (LG_PROXY=USER@HOST, or ~/.ssh/config)",
            ) from None
        except paramiko.SSHException as error:
            client.close()
            if str(error) == "No authentication methods available":
                raise UserError(
                    f"no SSH key to log in to the jump host {address}",
                    hint="add a key (ssh-agent, ~/.ssh/id_*, or IdentityFile in ~/.ssh/config)",
                ) from None
            raise ConnectionLost(f"cannot reach the jump host {address}: {error}") from None
        except (OSError, EOFError) as error:
            client.close()
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            raise ConnectionLost(f"cannot reach the jump host {address}: {reason}") from None
        except BaseException:
            client.close()
            raise
        return client

    def channel_to(self, hostname: str, port: int) -> paramiko.Channel:
        """A direct-tcpip channel from the jump host to HOST:PORT, (re)connecting first."""
        import paramiko

        transport = self._client.get_transport() if self._client else None
        if transport is None or not transport.is_active():
            self.close()
            self._client = self._connect()
            transport = self._client.get_transport()
            assert transport is not None  # a connected client has its transport
        try:
            return transport.open_channel(
                "direct-tcpip", (hostname, port), ("127.0.0.1", 0), timeout=CONNECT_TIMEOUT
            )
        except paramiko.ChannelException as error:
            if error.code == _PROHIBITED:
                raise UserError(
                    f"the jump host {self.address} refuses to forward to {hostname}:{port} "
                    f"({error.text})",
                    hint="its sshd needs AllowTcpForwarding yes (and PermitOpen allowing it)",
                ) from None
            raise ConnectionLost(
                f"the jump host {self.address} cannot reach {hostname}:{port} ({error.text})"
            ) from None
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise ConnectionLost(
                f"no channel through the jump host {self.address} to {hostname}:{port}: {error}"
            ) from None

    def socket(self) -> socket.socket | None:
        """The TCP socket to the jump host (where keepalive timeouts must be set)."""
        transport = self._client.get_transport() if self._client else None
        sock = transport.sock if transport is not None else None
        return sock if isinstance(sock, socket.socket) else None  # never a proxy's channel

    def close(self) -> None:
        import paramiko

        with contextlib.suppress(paramiko.SSHException, EOFError, OSError):
            if self._client is not None:
                self._client.close()
        self._client = None
