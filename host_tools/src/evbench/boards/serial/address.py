"""Console URLs: serial://, rfc2217:// and socket://, the schemes of this transport.

    serial:///dev/ttyUSB0?baud=115200&user=root&python=python3&dir=.evbench
    rfc2217://HOST:PORT[?user=...]      (ser2net, RFC 2217)
    socket://HOST:PORT[?user=...]       (a raw TCP console)

A console URL's own options (user, baud, and as for ssh:// boards, python and dir:
the board's interpreter and evbench's directory there) are taken out before pyserial sees
the URL: pyserial refuses query options it does not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import SplitResult, quote, urlencode, urlunsplit

from evbench.boards.urls import (
    DEFAULT_PYTHON,
    DEFAULT_USER,
    DEFAULT_WORK_DIR,
    query_pairs,
    scheme,
    schemes,
    split_url,
    usage,
)
from evbench_core.errors import UserError

#: The transport of the console schemes (serial://, rfc2217://, socket://).
CONSOLE = "serial"
DEFAULT_BAUD = 115200
#: The options evbench reads itself; anything else is pyserial's.
OWN_OPTIONS = ("baud", "user", "python", "dir")
STANDARD_BAUDS = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600, 1500000, 3000000)


@dataclass(frozen=True)
class ConsoleAddress:
    """Where the console is, and how evbench logs in there."""

    url: str  # as the user gave it
    port: str  # what pyserial opens: a device path or a pyserial URL
    baud: int
    user: str
    python: str
    work_dir: str

    @property
    def is_network(self) -> bool:
        return self.port.startswith(("rfc2217://", "socket://"))


def _own_options(query: list[tuple[str, str]], url: str) -> tuple[dict[str, str], list]:
    own: dict[str, str] = {}
    rest = []
    for key, value in query:
        if key in OWN_OPTIONS:
            if key in own:
                raise UserError(f"console URL {url!r} gives {key!r} twice", hint="give it once")
            own[key] = value
        else:
            rest.append((key, value))
    return own, rest


def _baud(text: str | None, url: str) -> int:
    if text is None:
        return DEFAULT_BAUD
    if not text.isdigit() or int(text) <= 0:
        raise UserError(
            f"console URL {url!r}: baud must be a positive whole number, not {text!r}",
            hint=f"common rates: {', '.join(map(str, STANDARD_BAUDS))}",
        )
    return int(text)


# Registered bottom up: serial, then rfc2217, then socket.
@scheme(
    "socket",
    "socket://HOST:PORT[?user=...]",
    transport=CONSOLE,
    board="SerialBoard",
    example="socket://lab:4001",
)
@scheme(
    "rfc2217",
    "rfc2217://HOST:PORT[?user=...]",
    transport=CONSOLE,
    board="SerialBoard",
    example="rfc2217://lab:7000",
)
@scheme(
    "serial",
    "serial:///dev/TTY[?baud=N&user=NAME&python=PATH&dir=PATH]",
    transport=CONSOLE,
    board="SerialBoard",
    example="serial:///dev/ttyUSB0?baud=115200",
)
def parse_console_url(url: str) -> ConsoleAddress:
    """Split a console URL into pyserial's part and evbench's options."""
    parts = split_url(url)
    if parts.scheme not in {entry.name for entry in schemes() if entry.transport == CONSOLE}:
        raise UserError(f"not a console URL: {url!r}", hint=f"use {usage(CONSOLE)}")
    own, rest = _own_options(query_pairs(parts.query, url), url)
    user = own.get("user", DEFAULT_USER)
    python = own.get("python", DEFAULT_PYTHON)
    work_dir = own.get("dir", DEFAULT_WORK_DIR)
    _check_login(url, user, python, work_dir)
    baud = _baud(own.get("baud"), url)
    if parts.scheme == "serial":
        port = _serial_device(parts, rest, url)
    else:
        port = _network_port(parts, rest, url)
    return ConsoleAddress(url, port, baud, user, python, work_dir)


def _check_login(url: str, user: str, python: str, work_dir: str) -> None:
    """A UserError unless the login user, the board's Python and its directory can be
    said on a shell line: no blank or control character, a user name of 64 at most."""
    if not user or any(c.isspace() for c in user) or len(user) > 64:
        raise UserError(f"console URL {url!r}: invalid user {user!r}", hint="e.g. user=root")
    for key, value in (("python", python), ("dir", work_dir)):
        if not value.strip() or any(ord(c) < 32 for c in value):
            raise UserError(f"console URL {url!r}: invalid {key} {value!r}", hint="give a path")


def _serial_device(parts: SplitResult, rest: list[tuple[str, str]], url: str) -> str:
    """serial:///dev/TTY's device: a path, no host, no option but evbench's own."""
    if rest:
        names = ", ".join(key for key, _ in rest)
        raise UserError(
            f"console URL {url!r}: unknown option(s) {names}",
            hint=f"serial:// takes {', '.join(OWN_OPTIONS)}",
        )
    if not parts.path or parts.netloc:
        raise UserError(
            f"console URL {url!r} names no device",
            hint="three slashes and a path: serial:///dev/ttyUSB0",
        )
    return parts.path


def _network_port(parts: SplitResult, rest: list[tuple[str, str]], url: str) -> str:
    """A network console's URL for pyserial (HOST:PORT, with pyserial's own options)."""
    if not parts.hostname or parts.port is None:
        raise UserError(f"console URL {url!r} needs HOST:PORT", hint="e.g. rfc2217://lab:7000")
    if parts.scheme == "rfc2217" and not any(key == "ign_set_control" for key, _ in rest):
        # A pseudo-terminal behind ser2net has no modem lines: without this
        # option pyserial fails on the first RTS/DTR request.
        rest.append(("ign_set_control", ""))
    query = urlencode(rest, quote_via=quote)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))
