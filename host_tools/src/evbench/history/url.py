"""Where a history store lives: a path, ``sqlite:///path`` or ``postgresql://...``.

The default is an SQLite file in the user's data directory
(``$XDG_DATA_HOME/evbench/history.sqlite``, ``~/.local/share`` without it);
``EVBENCH_HISTORY`` or ``--history`` name another. A PostgreSQL URL may carry a
password; `StoreURL.display` never shows it, so it reaches no log or message.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from evbench_core.errors import UserError

ENVIRONMENT = "EVBENCH_HISTORY"
#: A URL longer than this is a mistake, not a store.
MAX_URL_LENGTH = 4096
POSTGRES_SCHEMES = ("postgresql", "postgres")
#: A path that starts like this (`file:/x`, `sqlite:x`) is ambiguous: refused, never a
#: directory named `file:` created by accident.
_SCHEME_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True)
class StoreURL:
    kind: str  # "sqlite" or "postgresql"
    path: Path | None = None  # sqlite
    dsn: str | None = None  # postgresql, as given (may hold a password)

    @property
    def display(self) -> str:
        """The URL for messages: the password, if any, replaced by ***."""
        if self.kind == "sqlite":
            return f"sqlite:///{self.path}" if self.path else "sqlite"
        parts = urllib.parse.urlsplit(self.dsn or "")
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            if ":" in user:
                user = user.split(":", 1)[0] + ":***"
            netloc = f"{user}@{host}"
        query = urllib.parse.urlencode(
            [
                (k, "***" if k == "password" else v)
                for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
            ]
        )
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def default_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "evbench" / "history.sqlite"


def parse_url(text: str) -> StoreURL:
    """A store URL from the command line or the environment; anything else is refused."""
    text = text.strip()
    if not text:
        raise UserError("the history store URL is empty", hint="give a path or sqlite:///PATH")
    if len(text) > MAX_URL_LENGTH:
        raise UserError(f"the history store URL is longer than {MAX_URL_LENGTH} characters")
    scheme, sep, rest = text.partition("://")
    if not sep:
        prefix = _SCHEME_LIKE.match(text)
        if prefix:  # file:/x, sqlite:x, postgresql:db: a URL written wrong, or a path?
            raise UserError(
                f"the history store {text!r} starts like a URL ({prefix.group(0)}) but is "
                "not one evbench reads",
                hint="a path (write ./ before one that holds a colon), sqlite:///PATH or "
                "postgresql://USER@HOST/DATABASE",
            )
        return StoreURL("sqlite", Path(text).expanduser())
    scheme = scheme.lower()
    if scheme == "sqlite":
        # sqlite:///relative/or/absolute as SQLAlchemy writes it: sqlite:////abs, sqlite:///rel
        if not rest.startswith("/") or rest == "/":
            raise UserError(
                f"bad SQLite URL {text!r}",
                hint="write sqlite:///PATH (three slashes, then the path)",
            )
        return StoreURL("sqlite", Path(rest[1:]).expanduser())
    if scheme in POSTGRES_SCHEMES:
        parts = urllib.parse.urlsplit(text)
        if not parts.hostname and "host=" not in parts.query:
            raise UserError(
                "the PostgreSQL URL names no host",
                hint="write postgresql://USER@HOST:PORT/DATABASE",
            )
        return StoreURL("postgresql", dsn=text)
    raise UserError(
        f"unknown history store scheme {scheme!r}",
        hint="use a path, sqlite:///PATH or postgresql://USER@HOST/DATABASE",
    )


def default_url(given: str | None = None) -> StoreURL:
    """`given` (--history), else EVBENCH_HISTORY, else the SQLite file in the data directory."""
    if given:
        return parse_url(given)
    if os.environ.get(ENVIRONMENT):
        return parse_url(os.environ[ENVIRONMENT])
    return StoreURL("sqlite", default_path())
