"""Board URLs, every scheme parsed here (one parser per scheme).

    local                               (the built-in local board)
    ssh://[USER@]HOST[:PORT][?python=PATH&dir=PATH]
    serial:///dev/ttyUSB0?baud=115200&user=root&python=python3&dir=.evbench
    rfc2217://HOST:PORT[?user=...]      (ser2net, RFC 2217)
    socket://HOST:PORT[?user=...]       (a raw TCP console)
    labgrid://PLACE[?coordinator=HOST:PORT]        (a labgrid place: boards/labgrid.py)
    labgrid://?tags=board=am62x,site=lab1[&prio=N]  (any free place with these tags)

A console URL's own options (user, baud, and as for ssh:// boards, python and dir:
the board's interpreter and evbench's directory there) are taken out before pyserial sees
the URL: pyserial refuses query options it does not know.

The parsers are the registry of schemes: `@scheme` on a parser declares its scheme,
how the help, the errors and docs/boards.md's table write it, and the Board class that
opens it (named, imported only when a board is opened: `--help` loads no transport).
`schemes()` lists them; tests/test_board_schemes.py checks the docs and the
transports against it.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import SplitResult, parse_qs, parse_qsl, urlencode, urlsplit, urlunsplit

from evbench_core.errors import UserError

if TYPE_CHECKING:
    from evbench.boards.base import Board

LOCAL = "local"
SSH_SCHEME = "ssh"
#: The transport of the console schemes (serial://, rfc2217://, socket://).
CONSOLE = "serial"
LABGRID_SCHEME = "labgrid"
DEFAULT_BAUD = 115200
DEFAULT_USER = "root"
DEFAULT_PYTHON = "python3"
#: Where the agent and the runs live on a remote board, relative to the login directory.
DEFAULT_WORK_DIR = ".evbench"
#: The options evbench reads itself; anything else is pyserial's.
OWN_OPTIONS = ("baud", "user", "python", "dir")
STANDARD_BAUDS = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600, 1500000, 3000000)


@dataclass(frozen=True)
class Scheme:
    """One way to name a board in `--board`, declared by `@scheme` on its parser."""

    #: The URL scheme ("ssh"), or for a bare word (`local`) the whole word.
    name: str
    #: How the help, the errors and docs/boards.md's table write it (options in [...]).
    forms: tuple[str, ...]
    #: The kind of board it opens: "local", "ssh", "serial", "labgrid".
    transport: str
    #: "module:Class" of the Board that opens it (a `from_url` classmethod).
    board: str
    parse: Callable[[str], object]
    #: A URL of the scheme that its parser takes (tests/test_board_schemes.py tries each).
    example: str
    #: It can switch the board off and on (`--power-cycle`).
    power_switch: bool = False

    @property
    def bare(self) -> bool:
        """A whole word (`local`), not a `scheme://` URL."""
        return all("://" not in form for form in self.forms)

    def board_class(self) -> type[Board]:
        """The transport's Board class (its module imported now)."""
        module, _, name = self.board.partition(":")
        return getattr(importlib.import_module(module), name)


_SCHEMES: dict[str, Scheme] = {}
_Parser = TypeVar("_Parser", bound=Callable[[str], object])


def scheme(
    name: str,
    *forms: str,
    transport: str,
    board: str,
    example: str,
    power_switch: bool = False,
) -> Callable[[_Parser], _Parser]:
    """Register the decorated parser as the one for `name` (a scheme given twice is a bug);
    `example` is a URL of it that the parser takes."""

    def register(parse: _Parser) -> _Parser:
        if name in _SCHEMES:
            raise ValueError(f"board URL scheme {name!r} is registered twice")
        _SCHEMES[name] = Scheme(name, forms, transport, board, parse, example, power_switch)
        return parse

    return register


def schemes() -> tuple[Scheme, ...]:
    """Every registered scheme, in the order the help and the docs list them."""
    return tuple(_SCHEMES.values())


def _short(form: str) -> str:
    """A form without its options: what a one-line help or hint shows."""
    return re.split(r"\[[?&]", form, maxsplit=1)[0]


def usage(transport: str | None = None) -> str:
    """Every way to name a board (of one transport), for the errors and `--board`'s help."""
    return ", ".join(
        _short(form)
        for entry in schemes()
        if transport in (None, entry.transport)
        for form in entry.forms
    )


#: A URL's scheme as RFC 3986 spells it (read before the rest, which may be malformed).
_SCHEME_NAME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _scheme_name(url: str) -> str:
    match = _SCHEME_NAME.match(url)
    return match.group(1).lower() if match else ""


def _split(url: str) -> SplitResult:
    """urlsplit, with a malformed host or port a UserError rather than a ValueError."""
    try:
        parts = urlsplit(url)
    except ValueError as error:  # an unclosed [ around an IPv6 address
        raise UserError(f"malformed board URL {url!r}: {error}") from None
    if parts.password is not None:
        # Named without the URL: the message must not carry the password to a log.
        raise UserError(
            f"a {parts.scheme}:// board URL must not hold a password (USER:PASSWORD@): "
            "it would reach the command line, logs and transcripts",
            hint="give the password in EVBENCH_PASSWORD, or log in with a key "
            "(docs/boards.md, Logins)",
        )
    try:
        parts.port  # noqa: B018 - urlsplit reads the port only when asked
    except ValueError:
        raise UserError(f"bad port in {url!r}", hint="the port is a number 1-65535") from None
    return parts


def scheme_of(url: str) -> Scheme:
    """The registered scheme of a `--board` URL; a UserError naming the known ones if none."""
    entry = _SCHEMES.get(url)
    if entry is None or not entry.bare:
        entry = _SCHEMES.get(_scheme_name(url))
        if entry is not None and entry.bare:
            entry = None
    if entry is None:
        raise UserError(f"unsupported board {url!r}", hint=f"use one of: {usage()}")
    return entry


def transport_of(url: str) -> str:
    """Which transport a `--board` URL names: "local", "ssh", "serial" or "labgrid"."""
    return scheme_of(url).transport


@scheme(
    LOCAL,
    "local",
    transport="local",
    board="evbench.boards.local:LocalBoard",
    example="local",
)
def parse_local(url: str) -> str:
    """The built-in board has no options: its URL is the word itself."""
    if url != LOCAL:
        raise UserError(f"not the local board: {url!r}", hint="write local")
    return url


@dataclass(frozen=True)
class SshUrl:
    """What an `ssh://` URL itself says (~/.ssh/config fills in the rest: ssh_address.py)."""

    url: str
    host: str
    port: int | None
    user: str | None
    python: str
    work_dir: str


@scheme(
    SSH_SCHEME,
    "ssh://[USER@]HOST[:PORT][?python=PATH&dir=PATH]",
    transport="ssh",
    board="evbench.boards.ssh:SshBoard",
    example="ssh://root@192.0.2.7:2222",
)
def parse_ssh_url(url: str) -> SshUrl:
    """Split an `ssh://` URL into host, port, user and evbench's options."""
    parts = _split(url)
    if parts.scheme != SSH_SCHEME or not parts.hostname:
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


_SERIAL_BOARD = "evbench.boards.serial:SerialBoard"


# Registered bottom up: serial, then rfc2217, then socket.
@scheme(
    "socket",
    "socket://HOST:PORT[?user=...]",
    transport=CONSOLE,
    board=_SERIAL_BOARD,
    example="socket://lab:4001",
)
@scheme(
    "rfc2217",
    "rfc2217://HOST:PORT[?user=...]",
    transport=CONSOLE,
    board=_SERIAL_BOARD,
    example="rfc2217://lab:7000",
)
@scheme(
    "serial",
    "serial:///dev/TTY[?baud=N&user=NAME&python=PATH&dir=PATH]",
    transport=CONSOLE,
    board=_SERIAL_BOARD,
    example="serial:///dev/ttyUSB0?baud=115200",
)
def parse_console_url(url: str) -> ConsoleAddress:
    """Split a console URL into pyserial's part and evbench's options."""
    parts = _split(url)
    known = _SCHEMES.get(parts.scheme)
    if known is None or known.transport != CONSOLE:
        raise UserError(f"not a console URL: {url!r}", hint=f"use {usage(CONSOLE)}")
    own, rest = _own_options(parse_qsl(parts.query, keep_blank_values=True), url)
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
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), ""))


#: A labgrid place or tag name, and a tag value: what labgrid itself accepts.
_LABGRID_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LABGRID_TAG_VALUE = re.compile(r"[A-Za-z0-9_.:/+-]{1,128}")
LABGRID_OPTIONS = ("coordinator", "tags", "prio", "via", "user", "python", "dir", "recover_after")
#: A board silent this long mid-run is power-cycled where its place has a power switch.
DEFAULT_RECOVER_AFTER = 60.0
MAX_RECOVER_AFTER = 3600.0
#: Which of a place's resources to use when it has both (default: SSH).
LABGRID_VIAS = ("ssh", "serial")


@dataclass(frozen=True)
class LabgridUrl:
    """A labgrid place by name, or a filter of tags any free place may match."""

    url: str
    place: str | None
    tags: tuple[tuple[str, str], ...]
    coordinator: str | None  # None: LG_COORDINATOR, then labgrid's default
    prio: int
    via: str | None  # "ssh" or "serial"; None: SSH where the place has it
    #: For a place reached over its serial console: the login user.
    user: str
    python: str
    work_dir: str
    #: Seconds without an answer mid-run before a power cycle (0: never recover by power).
    recover_after: float = DEFAULT_RECOVER_AFTER


def _labgrid_tags(text: str, url: str) -> tuple[tuple[str, str], ...]:
    tags = []
    for item in text.split(","):
        key, equals, value = item.partition("=")
        good = _LABGRID_NAME.fullmatch(key) and _LABGRID_TAG_VALUE.fullmatch(value)
        if not equals or not good:
            raise UserError(
                f"labgrid URL {url!r}: bad tag {item!r}",
                hint="write tags=KEY=VALUE,KEY=VALUE (letters, digits, . _ -)",
            )
        tags.append((key, value))
    if len({key for key, _ in tags}) != len(tags):
        raise UserError(f"labgrid URL {url!r} gives a tag twice", hint="give each tag once")
    return tuple(tags)


@scheme(
    LABGRID_SCHEME,
    "labgrid://PLACE[?coordinator=HOST:PORT&via=VIA&recover_after=S]",
    "labgrid://?tags=KEY=VALUE,...[&prio=N]",
    transport="labgrid",
    board="evbench.boards.labgrid:LabgridBoard",
    example="labgrid://am62x-1",
    power_switch=True,
)
def parse_labgrid_url(url: str) -> LabgridUrl:
    """Split a `labgrid://` URL into the place (or tag filter) and the coordinator."""
    parts = _split(url)
    if parts.scheme != LABGRID_SCHEME:
        raise UserError(f"not a labgrid URL: {url!r}", hint="write labgrid://PLACE")
    options = _labgrid_options(parts.query, url)
    place = _labgrid_place(parts, url)
    tags = _labgrid_tags(options["tags"], url) if "tags" in options else ()
    if (place is None) == (not tags):
        raise UserError(
            f"labgrid URL {url!r} must name a place or tags, one of the two",
            hint="labgrid://PLACE or labgrid://?tags=board=am62x",
        )
    coordinator = _coordinator(options.get("coordinator"), url)
    prio_text = options.get("prio", "0")
    try:
        prio = int(prio_text)
    except ValueError:
        raise UserError(f"labgrid URL {url!r}: prio must be a whole number") from None
    via = options.get("via")
    if via is not None and via not in LABGRID_VIAS:
        raise UserError(f"labgrid URL {url!r}: via is ssh or serial, not {via!r}")
    recover_after = _recover_after(options.get("recover_after"), url)
    return LabgridUrl(
        url=url,
        place=place,
        tags=tags,
        coordinator=coordinator,
        prio=prio,
        via=via,
        user=options.get("user", DEFAULT_USER),
        python=options.get("python", DEFAULT_PYTHON),
        work_dir=options.get("dir", DEFAULT_WORK_DIR),
        recover_after=recover_after,
    )


def _labgrid_options(query: str, url: str) -> dict[str, str]:
    """The URL's options, each known (LABGRID_OPTIONS) and given once."""
    pairs = parse_qsl(query, keep_blank_values=True)
    seen = [key for key, _ in pairs]
    unknown = sorted(set(seen) - set(LABGRID_OPTIONS))
    if unknown:
        raise UserError(
            f"labgrid URL {url!r}: unknown option(s) {', '.join(unknown)}",
            hint=f"the options are {', '.join(LABGRID_OPTIONS)}",
        )
    twice = sorted({key for key in seen if seen.count(key) > 1})
    if twice:
        raise UserError(f"labgrid URL {url!r} gives {', '.join(twice)} twice", hint="give it once")
    return dict(pairs)


def _labgrid_place(parts: SplitResult, url: str) -> str | None:
    """The place the URL names (None: a tag filter instead); no path after it."""
    place = parts.netloc or None
    if place is not None and not _LABGRID_NAME.fullmatch(place):
        raise UserError(
            f"labgrid URL {url!r}: bad place name {place!r}",
            hint="a place name is letters, digits, . _ - (up to 64)",
        )
    if parts.path not in ("", "/"):
        raise UserError(f"labgrid URL {url!r} has a path", hint="write labgrid://PLACE")
    return place


def _coordinator(coordinator: str | None, url: str) -> str | None:
    """The coordinator option as given, checked to be HOST:PORT (None: not given)."""
    if coordinator is not None:
        host, colon, port = coordinator.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(
                f"labgrid URL {url!r}: coordinator must be HOST:PORT, not {coordinator!r}",
                hint="e.g. coordinator=lab-host:20408",
            )
    return coordinator


def _recover_after(text: str | None, url: str) -> float:
    """recover_after in seconds, 0 to MAX_RECOVER_AFTER (default DEFAULT_RECOVER_AFTER)."""
    recover_text = str(DEFAULT_RECOVER_AFTER) if text is None else text
    try:
        recover_after = float(recover_text)
    except ValueError:
        recover_after = -1.0
    if not 0 <= recover_after <= MAX_RECOVER_AFTER:
        raise UserError(
            f"labgrid URL {url!r}: recover_after must be 0 to {MAX_RECOVER_AFTER:.0f} seconds, "
            f"not {recover_text[:20]!r}",
            hint="0 never power-cycles a board that stops answering",
        )
    return recover_after
