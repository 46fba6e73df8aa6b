"""The SQLite backend: one file on this host, safe with several processes adding at once.

WAL lets readers go on while one process writes; every write transaction
begins IMMEDIATE, so writers queue on the database lock (up to `BUSY_TIMEOUT_S`)
instead of failing half-way through a run.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from evbench.history.store import Store
from evbench.history.url import StoreURL
from evbench_agent.errors import FormatError, UserError

#: How long a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_S = 60.0


def _use_wal(connection: sqlite3.Connection, url: StoreURL) -> None:
    """Switch to WAL, waiting for other processes: the switch needs the database to
    itself, and SQLite answers "database is locked" at once, without the busy timeout,
    while another process holds it (two runs adding to a new store at the same time)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error):
                raise
            if time.monotonic() > deadline:
                connection.close()
                raise UserError(
                    f"the history store {url.path} stayed locked by another process for "
                    f"{BUSY_TIMEOUT_S:.0f} s",
                    hint="another evbench may be stuck writing to it",
                ) from error
            time.sleep(0.05)


class SqliteStore(Store):
    dialect = "sqlite"

    @classmethod
    def open(cls, url: StoreURL) -> SqliteStore:
        assert url.path is not None
        try:
            url.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(
                f"cannot create the directory of the history store {url.path}: {error.strerror}",
                hint="give another --history or EVBENCH_HISTORY",
            ) from error
        try:
            connection = sqlite3.connect(
                str(url.path), timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
            _use_wal(connection, url)
            connection.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as error:
            raise FormatError(
                f"{url.path} is not an SQLite history store ({error})",
                hint="give the path of an evbench history store, or a new file",
            ) from error
        store = cls(url, connection)
        try:
            store.ensure_schema()
        except sqlite3.DatabaseError as error:
            store.close()
            raise FormatError(f"{url.path} is not an SQLite history store ({error})") from error
        except BaseException:
            store.close()
            raise
        return store

    def _begin_write(self, cursor: Any) -> None:
        cursor.execute("BEGIN IMMEDIATE")
