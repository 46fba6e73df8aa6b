"""Where an `ssh://` board is and who may log in: URL, ~/.ssh/config, host keys, password.

`ssh://[USER@]HOST[:PORT][?python=PATH&dir=PATH]`, filled in from
~/.ssh/config (Host aliases, HostName, User, Port, IdentityFile,
UserKnownHostsFile). Host keys: an unknown host is refused unless the user
accepts it (trust on first use, saved to known_hosts). A password comes only
from EVBENCH_PASSWORD or a prompt on the terminal. paramiko is imported inside the
functions that use it (boards/ssh.py says why).
"""

from __future__ import annotations

import getpass
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from evbench.boards.base import PASSWORD_VARIABLE
from evbench.boards.urls import DEFAULT_PYTHON, DEFAULT_WORK_DIR, split_url
from evbench_core.errors import UserError

if TYPE_CHECKING:
    import paramiko

log = logging.getLogger(__name__)
DEFAULT_PORT = 22


@dataclass(frozen=True)
class SshUrl:
    """What an `ssh://` URL itself says (~/.ssh/config fills in the rest: parse_address)."""

    url: str
    host: str
    port: int | None
    user: str | None
    python: str
    work_dir: str


def read_ssh_url(url: str) -> SshUrl:
    """Split an `ssh://` URL into host, port, user and evbench's options."""
    parts = split_url(url)
    if parts.scheme != "ssh" or not parts.hostname:
        raise UserError(
            f"not an SSH board address: {url!r}",
            hint="write ssh://[USER@]HOST[:PORT], with an IPv6 address in brackets",
        )
    port = parts.port
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = sorted(set(query) - {"python", "dir"})
    if unknown:
        raise UserError(
            f"unknown board option(s) in {url!r}: {', '.join(unknown)}",
            hint="the options are python=PATH and dir=PATH",
        )
    return SshUrl(
        url=url,
        host=parts.hostname,
        port=port,
        user=parts.username or None,
        python=query.get("python", DEFAULT_PYTHON),
        work_dir=query.get("dir", DEFAULT_WORK_DIR),
    )


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
    import paramiko

    try:
        return paramiko.SSHConfig.from_path(str(path)).lookup(host)
    except (OSError, paramiko.SSHException) as error:
        raise UserError(f"cannot read {path}: {error}", hint="fix the file") from error


def parse_address(url: str) -> SshAddress:
    """An `ssh://` URL (boards.urls) with what ~/.ssh/config adds."""
    given = read_ssh_url(url)
    config = _ssh_config(given.host)
    known_hosts = (config.get("userknownhostsfile") or "~/.ssh/known_hosts").split()[0]
    return SshAddress(
        host=given.host,
        hostname=config.get("hostname", given.host),
        port=given.port or int(config.get("port", DEFAULT_PORT)),
        user=given.user or config.get("user") or getpass.getuser(),
        identity_files=tuple(str(Path(p).expanduser()) for p in config.get("identityfile", [])),
        known_hosts=Path(known_hosts).expanduser(),
        python=given.python,
        work_dir=given.work_dir,
    )


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {key.fingerprint}"


def host_key_policy(address: SshAddress, accept_new: bool) -> paramiko.MissingHostKeyPolicy:
    """Unknown hosts: refuse, or with the user's consent trust and save the key (a paramiko
    policy, its class made here: paramiko is loaded only when a connection needs it)."""
    import paramiko

    class HostKeyPolicy(paramiko.MissingHostKeyPolicy):
        def missing_host_key(
            self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
        ) -> None:
            trust_new_key(address, accept_new, client, hostname, key)

    return HostKeyPolicy()


def trust_new_key(
    address: SshAddress,
    accept_new: bool,
    client: paramiko.SSHClient,
    hostname: str,
    key: paramiko.PKey,
) -> None:
    """Refuse an unknown host key, or (accept_new) save it to known_hosts and trust it."""
    if not accept_new:
        raise UserError(
            f"unknown host key for {address.known_hosts_name} ({fingerprint(key)})",
            hint="check the fingerprint on the board (ssh-keygen -lf on its host key), "
            "then run again with --accept-new-host-key to trust it and save it "
            f"to {address.known_hosts}",
        )
    known_hosts = address.known_hosts
    known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(known_hosts, "a", encoding="ascii") as stream:
        stream.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
    client.get_host_keys().add(hostname, key.get_name(), key)
    log.warning(
        "trusted the new host key of %s (%s), saved to %s", hostname, fingerprint(key), known_hosts
    )


def password_for(address: SshAddress) -> str | None:
    """The password, from EVBENCH_PASSWORD or a prompt; None when neither can give one."""
    if PASSWORD_VARIABLE in os.environ:
        return os.environ[PASSWORD_VARIABLE]
    if sys.stdin.isatty():
        return getpass.getpass(f"password for {address}: ")
    return None
