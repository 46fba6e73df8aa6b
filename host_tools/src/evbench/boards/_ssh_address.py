"""Where an `ssh://` board is and who may log in: URL, ~/.ssh/config, host keys, password.

`ssh://[USER@]HOST[:PORT][?python=PATH&dir=PATH]`, filled in from
~/.ssh/config (Host aliases, HostName, User, Port, IdentityFile,
UserKnownHostsFile). What the URL says is used as written or refused, never
changed in silence; `~/PATH` in python= or dir= is under the login directory
on the board, as the default dir (.evbench) is. Host keys: an unknown host is
refused unless the user accepts it (trust on first use, saved to known_hosts);
a damaged known_hosts or ~/.ssh/config is the user's file to fix, named in the
error. A password comes only from EVBENCH_PASSWORD or a prompt on the terminal.
paramiko is imported inside the functions that use it (boards/ssh.py says why).
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult

from evbench.boards.base import PASSWORD_VARIABLE
from evbench.boards.urls import (
    DEFAULT_PYTHON,
    DEFAULT_WORK_DIR,
    query_pairs,
    split_url,
    unescaped,
)
from evbench_core.errors import UserError

if TYPE_CHECKING:
    import paramiko

log = logging.getLogger(__name__)
DEFAULT_PORT = 22
#: What `?NAME=VALUE` an ssh:// URL takes.
OPTIONS = ("python", "dir")
#: OpenSSH's own known_hosts, which paramiko's load_system_host_keys reads.
OPENSSH_KNOWN_HOSTS = "~/.ssh/known_hosts"


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
    _refuse_unused_parts(parts, url)
    options = _options(parts.query, url)
    return SshUrl(
        url=url,
        host=parts.hostname,
        port=parts.port,
        # Escaped as in any URL (labgrid writes USER@ so): user%40corp is user@corp.
        user=unescaped(parts.username, url) if parts.username else None,
        python=_under_login_directory(options.get("python", DEFAULT_PYTHON), "python", url),
        work_dir=_under_login_directory(options.get("dir", DEFAULT_WORK_DIR), "dir", url),
    )


def _refuse_unused_parts(parts: SplitResult, url: str) -> None:
    """Refuse what a URL can say but an SSH board would not use: port 0 (no sshd listens
    there; it was taken as 22), a path or a #fragment (they were ignored)."""
    if parts.port == 0:
        raise UserError(f"bad port in {url!r}", hint="the port is a number 1-65535")
    if parts.path not in ("", "/"):
        raise UserError(
            f"an SSH board URL has no path: {url!r}",
            hint="give the board's directory as ?dir=PATH",
        )
    if "#" in url:  # urlsplit splits at the first #, an empty fragment included
        raise UserError(
            f"an SSH board URL has no #fragment: {url!r}",
            hint="write a # in a path as %23",
        )


def _options(query: str, url: str) -> dict[str, str]:
    """The URL's options, each known, given once, and a path. Read as RFC 3986 writes a
    query, %XX an escaped byte and `+` a plus: parse_qs reads HTML form data, where `+`
    is a space (dir=/x/c++ became '/x/c  ')."""
    pairs = query_pairs(query, url)
    keys = [key for key, _ in pairs]
    unknown = sorted(set(keys) - set(OPTIONS))
    if unknown:
        raise UserError(
            f"unknown board option(s) in {url!r}: {', '.join(unknown)}",
            hint="the options are python=PATH and dir=PATH",
        )
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise UserError(
            f"board option(s) given twice in {url!r}: {', '.join(twice)}", hint="give each once"
        )
    for key, value in pairs:
        # A blank value fell back to the default: the user meant something else.
        if not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise UserError(
                f"invalid {key} {value!r} in {url!r}",
                hint=f"give a path in {key}=PATH, or leave it out for the default",
            )
    return dict(pairs)


def _under_login_directory(path: str, key: str, url: str) -> str:
    """`~/PATH` read as the board's shell would read it. evbench quotes every argument,
    so no shell expands a `~` (dir=~/x made a directory named `~`). A command and SFTP
    start in the login directory: `./PATH` is there, as the default dir `.evbench` is
    the docs' `~/.evbench`."""
    if path == "~" or path.startswith("~/"):
        return "." + path[1:]
    if path.startswith("~"):
        raise UserError(
            f"{key}={path} in {url!r}: only ~/ (the login user's home) is expanded",
            hint="write another user's home as a full path (/home/USER/...)",
        )
    return path


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


def _ssh_config_path() -> Path:
    return Path.home() / ".ssh" / "config"


def _ssh_config(host: str) -> dict:
    path = _ssh_config_path()
    if not path.is_file():
        return {}
    import paramiko

    try:
        return paramiko.SSHConfig.from_path(str(path)).lookup(host)
    except (OSError, paramiko.SSHException) as error:
        raise UserError(f"cannot read {path}: {error}", hint="fix the file") from error
    except UnicodeDecodeError:  # paramiko reads it as UTF-8
        raise UserError(f"cannot read {path}: it is not UTF-8 text", hint="fix the file") from None


def _port(given: int | None, config: dict, host: str) -> int:
    """The URL's port, else ~/.ssh/config's `Port` for the host, else 22. paramiko keeps
    the config's text as written: int() took `２` and said nothing useful of `abc`."""
    if given is not None:
        return given
    text = config.get("port", str(DEFAULT_PORT))
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
        raise UserError(
            f"bad Port {text!r} for {host} in {_ssh_config_path()}",
            hint="the port is a number 1-65535",
        )
    return int(text)


def parse_address(url: str) -> SshAddress:
    """An `ssh://` URL (boards.urls) with what ~/.ssh/config adds."""
    given = read_ssh_url(url)
    config = _ssh_config(given.host)
    known_hosts = (config.get("userknownhostsfile") or OPENSSH_KNOWN_HOSTS).split()[0]
    return SshAddress(
        host=given.host,
        hostname=config.get("hostname", given.host),
        port=_port(given.port, config, given.host),
        user=given.user or config.get("user") or getpass.getuser(),
        identity_files=tuple(str(Path(p).expanduser()) for p in config.get("identityfile", [])),
        known_hosts=Path(known_hosts).expanduser(),
        python=given.python,
        work_dir=given.work_dir,
    )


def load_known_hosts(client: paramiko.SSHClient, address: SshAddress) -> None:
    """Give `client` the host keys this user trusts: OpenSSH's known_hosts and the
    address's own (UserKnownHostsFile). A damaged one is the user's file to fix, named:
    paramiko stops at a line that is not UTF-8 or not a key, outside every handler."""
    with _reading_known_hosts(Path(OPENSSH_KNOWN_HOSTS).expanduser()):
        client.load_system_host_keys()  # none there is no error: no host is known yet
    known_hosts = address.known_hosts
    with _reading_known_hosts(known_hosts):
        # Read unless absent: a directory there is an error now, not a failed save later.
        if known_hosts.exists():
            client.load_host_keys(str(known_hosts))


@contextlib.contextmanager
def _reading_known_hosts(path: Path) -> Iterator[None]:
    """Turn what reading a known_hosts file raises into a UserError naming the file."""
    import paramiko

    try:
        yield
    except OSError as error:
        raise UserError(
            f"cannot read the known hosts file {path}: {error.strerror or error}",
            hint="it must be a readable file of host keys, one a line",
        ) from None
    except UnicodeDecodeError:
        raise _damaged_known_hosts(path, "it is not UTF-8 text") from None
    except paramiko.hostkeys.InvalidHostKey as error:
        raise _damaged_known_hosts(path, f"a line is no host key: {error.line[:80]!r}") from None
    except (ValueError, paramiko.SSHException) as error:  # a key's bytes that are no key
        raise _damaged_known_hosts(path, f"a host key in it is damaged ({error})") from None


def _damaged_known_hosts(path: Path, what: str) -> UserError:
    return UserError(
        f"the known hosts file {path} is damaged: {what}",
        hint="fix or delete the damaged line (OpenSSH's ssh reads the same file)",
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
    try:
        known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(known_hosts, "a", encoding="ascii") as stream:
            stream.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
    except OSError as error:
        # Raised inside paramiko's connect, an OSError read as "cannot reach" the board.
        raise UserError(
            f"cannot save the host key of {hostname} to {known_hosts}: {error.strerror or error}",
            hint="make the file (and its folder) writable, or set UserKnownHostsFile",
        ) from None
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
