"""Board URLs: the registry of schemes (one parser per scheme) and what the parsers share.

Each transport is a module (or package) of boards/ that declares its schemes with
`@scheme` on its parser, beside its Board class: how the help, the errors and
docs/boards.md's table write it, the Board class that opens it, and a URL of it that
the parser takes. `collect` imports every module of boards/ (boards/__init__.py calls
it; a module whose name starts with `_` is a helper, and a transport declaring no
scheme is refused), so a new transport is one new module and no list to extend.
Collecting imports the transports, and `--help` reads the registry: a transport
imports its heavy library (paramiko, pyserial) inside the functions that use it
(tests/test_import_weight.py checks it). `schemes()` lists them;
tests/test_board_schemes.py checks the docs and the transports against it.
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import SplitResult, unquote, urlsplit

from evbench_core import extensions
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from evbench.boards.base import Board

log = logging.getLogger(__name__)

#: What the remote transports' URLs default to (ssh://, the consoles, labgrid://).
DEFAULT_USER = "root"
DEFAULT_PYTHON = "python3"
#: Where the agent and the runs live on a remote board, relative to the login directory.
DEFAULT_WORK_DIR = ".evbench"
#: The modules of boards/ that are no transport: this registry and the protocol.
NOT_TRANSPORTS = ("base", "urls")
#: The transports the help and the errors list first (the rest follow by name).
FIRST = ("local", "ssh", "serial")


@dataclass(frozen=True)
class Scheme:
    """One way to name a board in `--board`, declared by `@scheme` on its parser."""

    #: The URL scheme ("ssh"), or for a bare word (`local`) the whole word.
    name: str
    #: How the help, the errors and docs/boards.md's table write it (options in [...]).
    forms: tuple[str, ...]
    #: The kind of board it opens: "local", "ssh", "serial", "labgrid".
    transport: str
    #: The name of the Board class that opens it (a `from_url` classmethod), in the
    #: transport's module or package (`module`).
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

    @property
    def module(self) -> str:
        """The transport's module or package of boards/ ("evbench.boards.serial"), where
        its parser is declared."""
        return ".".join(self.parse.__module__.split(".")[:3])

    def board_class(self) -> type[Board]:
        """The transport's Board class."""
        return getattr(importlib.import_module(self.module), self.board)


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


def split_url(url: str) -> SplitResult:
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


def query_pairs(query: str, url: str) -> list[tuple[str, str]]:
    """A board URL's ?NAME=VALUE pairs, in order, as RFC 3986 writes a query: %XX an
    escaped byte and `+` a plus. (parse_qsl reads HTML form data, where `+` is a space:
    dir=/x/c++ became '/x/c  '.) A bare NAME is NAME with an empty value."""
    return [
        (unescaped(key, url), unescaped(value, url))
        for key, _, value in (pair.partition("=") for pair in query.split("&") if pair)
    ]


def unescaped(text: str, url: str) -> str:
    """`text` with its %XX escapes decoded; bytes that are no UTF-8 are refused, not
    replaced by U+FFFD (a path that exists nowhere)."""
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise UserError(
            f"malformed board URL {url!r}: a %-escape that is not UTF-8",
            hint="write a character that is not ASCII as its UTF-8 bytes, %XX each",
        ) from None


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


def collect(path: Iterable[str], package: str) -> None:
    """Import every transport module of `package` (at `path`), FIRST's then by name: each
    declares its schemes with `@scheme` as it is imported (one declaring none is a bug)."""

    def declares(module: ModuleType) -> bool:
        return any(entry.module == module.__name__ for entry in _SCHEMES.values())

    what = "board URL scheme (no @scheme in it)"
    for module in extensions.collect(
        path, package, what, declares, first=FIRST, skip=NOT_TRANSPORTS
    ):
        log.debug("board transport %s collected", module.__name__)
