"""The SQLite backend: one file on this host, safe with several processes adding at once.

WAL lets readers go on while one process writes; every write transaction
begins IMMEDIATE, so writers queue on the database lock (up to `BUSY_TIMEOUT_S`)
instead of failing half-way through a run.
"""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any

from evbench.history.store import Store
from evbench.history.url import StoreURL
from evbench_core.errors import FormatError, UserError

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


def _quiet_wal(path: Path) -> bool:
    """A WAL store (its header says so) that no connection has open: no -wal, no -shm."""
    try:
        with open(path, "rb") as stream:
            header = stream.read(20)
    except OSError:
        return False
    in_wal = header[:16] == b"SQLite format 3\0" and header[18:20] == b"\x02\x02"
    sidecars = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    return in_wal and not any(side.exists() for side in sidecars)


def _cannot_open(error: sqlite3.OperationalError) -> bool:
    """Opening failed where another way may succeed: the file or its -wal/-shm cannot be
    opened or made (a read-only file or directory)."""
    said = str(error)
    return "unable to open" in said or "readonly database" in said


def _not_a_store(url: StoreURL, error: Exception) -> FormatError:
    return FormatError(
        f"{url.path} is not an SQLite history store ({error})",
        hint="give the path of an evbench history store, or a new file",
    )


class SqliteStore(Store):
    dialect = "sqlite"
    errors = (sqlite3.Error,)

    @classmethod
    def open(cls, url: StoreURL, read_only: bool = False) -> SqliteStore:
        assert url.path is not None
        if read_only:
            return cls._open_read_only(url)
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
        except sqlite3.DatabaseError as error:
            raise _not_a_store(url, error) from error
        store = cls(url, connection)
        try:
            store.refuse_foreign()  # before WAL: someone else's database is left as it was
            _use_wal(connection, url)
            connection.execute("PRAGMA foreign_keys=ON")
            store.ensure_schema()
        except sqlite3.OperationalError as error:
            store.close()
            raise store._unreadable(error) from error
        except sqlite3.DatabaseError as error:
            store.close()
            raise _not_a_store(url, error) from error
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _open_read_only(cls, url: StoreURL) -> SqliteStore:
        """Open without writing anything: no file, directory, table or journal mode is
        created or changed. A missing or empty file reads as an empty store."""
        assert url.path is not None
        if not url.path.exists():
            return cls._empty(url)
        if not url.path.is_file():
            raise UserError(f"the history store {url.path} is not a file")
        # A WAL store nobody has open (no -wal or -shm beside it) is opened read-write,
        # only to read (query_only): SQLite makes its -wal and -shm, and removes them
        # when the last connection closes, where a read-only connection has to leave
        # them behind. Otherwise mode=ro: SQLite opens the file read-only (the files a
        # WAL store needs are already there, or made); immutable=1 where even that
        # cannot be done (a read-only directory, SQLITE_READONLY_DIRECTORY), since then
        # no other process can be writing to it either.
        target = urllib.parse.quote(str(url.path.absolute()))
        attempts = ["mode=ro", "mode=ro&immutable=1"]
        if _quiet_wal(url.path):
            attempts.insert(0, "mode=rw")
        store = None
        for flags in attempts:
            try:
                connection = sqlite3.connect(
                    f"file:{target}?{flags}", uri=True, timeout=BUSY_TIMEOUT_S,
                    isolation_level=None,
                )  # fmt: skip
                store = cls(url, connection, read_only=True)
                connection.execute("PRAGMA query_only=ON")
                store._table_names()  # the first read: where opening really happens
                break
            except sqlite3.OperationalError as error:
                if store is not None:
                    store.close()
                    store = None
                if flags == attempts[-1] or not _cannot_open(error):
                    raise _not_a_store(url, error) from error
            except sqlite3.DatabaseError as error:
                if store is not None:
                    store.close()
                raise _not_a_store(url, error) from error
            except BaseException:
                if store is not None:
                    store.close()
                raise
        assert store is not None
        try:
            if store.refuse_foreign():  # no tables at all: an empty file
                store.close()
                return cls._empty(url)
            store.check_readable()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _empty(cls, url: StoreURL) -> SqliteStore:
        """A store with evbench's tables and no runs, in memory: what reading a store that
        does not exist yet finds, without creating it."""
        store = cls(url, sqlite3.connect(":memory:", isolation_level=None))
        store.ensure_schema()
        store.read_only = True
        return store

    def _unreadable(self, error: BaseException) -> FormatError:
        assert isinstance(error, Exception)
        if isinstance(error, sqlite3.OperationalError) and (
            _cannot_open(error) or "locked" in str(error)
        ):
            return self._failed(error)  # a store that cannot be written here, not a foreign file
        return _not_a_store(self.url, error)

    def _table_names(self) -> list[str]:
        cursor = self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        try:
            return [name for (name,) in cursor.fetchall() if not name.startswith("sqlite_")]
        finally:
            cursor.close()

    def _begin_write(self, cursor: Any) -> None:
        cursor.execute("BEGIN IMMEDIATE")
