"""What every history backend does, in SQL that SQLite and PostgreSQL both speak.

A backend supplies a DB-API connection, its placeholder style and how a write
transaction is begun (SQLite: BEGIN IMMEDIATE; PostgreSQL: a transaction with
an advisory lock for schema changes). Everything else is here, once.

Adding a run is one transaction: the run row goes in with ``ON CONFLICT DO
NOTHING``, so of two processes (or hosts) adding the same run one wins and the
other finds it there; a run already in the store with the same content digest
is a no-op, one with a different digest under the same run id is refused, but
for a partial run, which its complete version (same board) replaces.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import json
import logging
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from evbench.history import rows, schema
from evbench.history.indexing import IndexedRun, RunRow
from evbench.history.url import StoreURL
from evbench_core.analysis import stats
from evbench_core.errors import FormatError, UserError

log = logging.getLogger(__name__)


def series_name(key: tuple[str, ...]) -> str:
    """A series as people name it (`history accept --series`, the check's lines)."""
    return "/".join(key)


RUN_COLUMNS = RunRow.columns()
RECORD_COLUMNS = (
    "run_id", "suite", "profile", "codec", "metric", "params", "unit", "n", "median", "mean",
    "stdev", "min", "max", "ci95_low", "ci95_high",
)  # fmt: skip
SAMPLE_COLUMNS = ("run_id", "suite", "profile", "codec", "metric", "params", "count", "packed")
ACCEPT_COLUMNS = ("board", "run_id", "series", "accepted_by", "reason", "accepted_at")


@dataclass(frozen=True)
class SeriesPoint:
    """One night of one series: the run's facts and the record's figures."""

    run: dict[str, Any]
    record: dict[str, Any]


def _insert(table: str, columns: Sequence[str], conflict: str) -> str:
    marks = ", ".join("?" for _ in columns)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) "
        f"ON CONFLICT {conflict} DO NOTHING"
    )


class Store:
    """A history store; use as a context manager, or call close().

    Opened read-only (`read_only`), it never writes: no table is created, no
    journal mode changed, and `write()` is refused. Any error of the database
    while reading or writing ends as FormatError naming the store."""

    dialect = "sqlite"
    #: The backend's database error types (sqlite3.Error, psycopg.Error).
    errors: tuple[type[BaseException], ...] = ()

    def __init__(self, url: StoreURL, connection: Any, read_only: bool = False) -> None:
        self.url = url
        self.connection = connection
        self.read_only = read_only

    def _failed(self, error: BaseException | str) -> FormatError:
        said = " ".join(str(error).split())[:200] or type(error).__name__
        lowered = said.lower()
        if "locked" in lowered or "busy" in lowered:
            hint = ("another process held the store for longer than evbench waits; "
                    "nothing was written: try again when it is done")  # fmt: skip
        elif "disk is full" in lowered or "no space" in lowered:
            hint = "its file system is full; nothing was written: free space and add again"
        elif "readonly" in lowered or "read-only" in lowered or "unable to open" in lowered:
            hint = "the store or its directory cannot be written here (a read-only mount?)"
        else:
            hint = "the store was damaged or edited by hand: it is left as it is"
        return FormatError(f"the history store {self.url.display} failed: {said}", hint=hint)

    def _unreadable(self, error: BaseException) -> FormatError:
        """The error for a database that cannot even list its tables."""
        return self._failed(error)

    def _table_names(self) -> list[str]:
        """The tables of the database (the backend's catalogue)."""
        raise NotImplementedError

    def refuse_foreign(self) -> bool:
        """Refuse a database that holds tables but not evbench's; True when it holds none."""
        try:
            names = self._table_names()
        except self.errors as error:
            raise self._unreadable(error) from None
        if names and "evbench_meta" not in names:
            shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
            raise FormatError(
                f"{self.url.display} is not an evbench history store: it holds other tables "
                f"({shown}) and not evbench_meta",
                hint="give evbench a store of its own (--history or EVBENCH_HISTORY); "
                "this database is left as it is",
            )
        return not names

    # -- what a backend provides ------------------------------------------------------

    def _sql(self, statement: str) -> str:
        """`statement` in the backend's placeholder style (written with ?)."""
        return statement

    def _begin_write(self, cursor: Any) -> None:
        raise NotImplementedError

    def _blob(self, value: Any) -> bytes:
        return bytes(value)

    # -- plumbing ---------------------------------------------------------------------

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    @contextlib.contextmanager
    def write(self) -> Iterator[Any]:
        """One write transaction: committed when the block ends, rolled back when it raises."""
        if self.read_only:
            raise UserError(f"the history store {self.url.display} is open read-only")
        try:
            cursor = self.connection.cursor()
        except self.errors as error:
            raise self._failed(error) from None
        try:
            self._begin_write(cursor)
            yield cursor
            self.connection.commit()
        except self.errors as error:
            with contextlib.suppress(*self.errors):
                self.connection.rollback()
            raise self._failed(error) from None
        except BaseException:
            self.connection.rollback()
            raise
        finally:
            with contextlib.suppress(*self.errors):
                cursor.close()

    def _execute(self, cursor: Any, statement: str, params: Sequence[Any] = ()) -> Any:
        cursor.execute(self._sql(statement), tuple(params))
        return cursor

    def _query(self, statement: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        try:
            cursor = self.connection.cursor()
            try:
                cursor.execute(self._sql(statement), tuple(params))
                names = [d[0] for d in cursor.description]
                found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            finally:
                cursor.close()
            self.connection.rollback()  # end the read transaction: no snapshot held open
        except self.errors as error:
            raise self._failed(error) from None
        return [rows.checked(row, self.url.display) for row in found]

    # -- schema -----------------------------------------------------------------------

    def ensure_schema(self) -> int:
        """Create the tables or migrate them to this evbench's version; refuse newer ones."""
        self.refuse_foreign()
        with self.write() as cursor:
            self._execute(cursor, schema.META)
            found = self._version(cursor)
            schema.refuse_newer(found, self.url.display)
            if found < schema.SCHEMA_VERSION:
                said = found
                for version, statement in schema.statements(self.dialect, found):
                    if version != said:  # once per version, not per statement
                        log.info(
                            "history store %s: migrating to version %d", self.url.display, version
                        )
                        said = version
                    self._execute(cursor, statement)
                self._execute(cursor, "DELETE FROM evbench_meta WHERE key = 'schema_version'")
                self._execute(
                    cursor,
                    "INSERT INTO evbench_meta (key, value) VALUES ('schema_version', ?)",
                    (str(schema.SCHEMA_VERSION),),
                )
        return schema.SCHEMA_VERSION

    def _version(self, cursor: Any) -> int:
        self._execute(cursor, "SELECT value FROM evbench_meta WHERE key = 'schema_version'")
        row = cursor.fetchone()
        return self._version_number(row[0]) if row else 0

    def schema_version(self) -> int:
        found = self._query("SELECT value FROM evbench_meta WHERE key = 'schema_version'")
        return self._version_number(found[0]["value"]) if found else 0

    def _version_number(self, value: Any) -> int:
        if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 10:
            return int(value)
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise FormatError(
            f"the history store {self.url.display} has a schema_version of {shown}, "
            "not a version number",
            hint="the store was damaged or edited by hand: it is left as it is",
        )

    def check_readable(self) -> None:
        """For a store opened read-only: its version is this evbench's (newer is refused;
        an older one needs a command that writes, which migrates it)."""
        found = self.schema_version()
        schema.refuse_newer(found, self.url.display)
        if found < schema.SCHEMA_VERSION:
            raise UserError(
                f"the history store {self.url.display} has schema version {found}; this "
                f"evbench reads version {schema.SCHEMA_VERSION}",
                hint="`evbench history add` migrates it (reading never writes to a store)",
            )

    # -- adding -----------------------------------------------------------------------

    def add(self, run: IndexedRun) -> bool:
        """Index `run`; False when it was there already (same content). A stored partial
        run is replaced by its complete version; any other run under its id is refused."""
        log.info("history: adding run %s to %s", run.row.run_id, self.url.display)
        row = run.row.as_tuple()
        with self.write() as cursor:
            self._execute(cursor, _insert("runs", RUN_COLUMNS, "(run_id)"), row)
            if cursor.rowcount == 0:
                self._execute(
                    cursor,
                    "SELECT digest, partial, board FROM runs WHERE run_id = ?",
                    (run.row.run_id,),
                )
                digest, partial, board = cursor.fetchone()
                if digest == run.row.digest:
                    log.info("history: run %s was there already, the same", run.row.run_id)
                    return False
                # A run indexed partial (the exporter gone mid-run) is completed by
                # `evbench fetch` later: its complete version replaces it, once.
                if not (partial and not run.row.partial and board == run.row.board):
                    raise UserError(
                        f"the store {self.url.display} holds another run with the id "
                        f"{run.row.run_id} (different content)",
                        hint="a run directory is never indexed over another one",
                    )
                log.info("history: run %s was partial, replaced by its complete version",
                         run.row.run_id)  # fmt: skip
                self._delete_run(cursor, run.row.run_id)
                self._execute(cursor, _insert("runs", RUN_COLUMNS, "(run_id)"), row)
            key = "(run_id, suite, profile, codec, metric, params)"
            cursor.executemany(self._sql(_insert("records", RECORD_COLUMNS, key)), run.records)
            cursor.executemany(self._sql(_insert("samples", SAMPLE_COLUMNS, key)), run.samples)
        log.debug(
            "history: run %s (board %s): %d records, %d samples",
            run.row.run_id,
            run.row.board,
            len(run.records),
            len(run.samples),
        )
        return True

    # -- reading ----------------------------------------------------------------------

    def runs(
        self,
        board: str | None = None,
        since: str | None = None,
        codec: str | None = None,
        profile: str | None = None,
    ) -> list[dict[str, Any]]:
        """Runs, oldest first; `codec` and `profile` keep runs that measured them."""
        where, params = [], []
        if board:
            where.append("board = ?")
            params.append(board)
        if since:
            where.append("start_time >= ?")
            params.append(since)
        if codec:
            where.append("EXISTS (SELECT 1 FROM records r WHERE r.run_id = runs.run_id "
                         "AND r.codec = ?)")  # fmt: skip
            params.append(codec)
        if profile:
            where.append("EXISTS (SELECT 1 FROM records r WHERE r.run_id = runs.run_id "
                         "AND r.profile = ?)")  # fmt: skip
            params.append(profile)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        return self._query(f"SELECT * FROM runs{clause} ORDER BY start_time, run_id", params)

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self._query("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return rows[0] if rows else None

    def boards(self) -> list[str]:
        return [r["board"] for r in self._query("SELECT DISTINCT board FROM runs ORDER BY board")]

    def series_keys(self, board: str) -> list[tuple[str, str, str, str]]:
        rows = self._query(
            "SELECT DISTINCT r.suite, r.profile, r.codec, r.metric FROM records r "
            "JOIN runs ON runs.run_id = r.run_id WHERE runs.board = ? "
            "ORDER BY r.suite, r.profile, r.codec, r.metric",
            (board,),
        )
        return [(r["suite"], r["profile"], r["codec"], r["metric"]) for r in rows]

    def series(
        self, board: str, key: tuple[str, str, str, str], include_partial: bool = False
    ) -> list[SeriesPoint]:
        """One metric of one board over time, oldest first (partial runs left out)."""
        partial = "" if include_partial else " AND runs.partial = 0"
        rows = self._query(
            "SELECT runs.*, r.unit, r.n, r.median, r.ci95_low, r.ci95_high, r.params AS "
            "record_params FROM records r JOIN runs ON runs.run_id = r.run_id "
            "WHERE runs.board = ? AND r.suite = ? AND r.profile = ? AND r.codec = ? "
            f"AND r.metric = ? AND r.median IS NOT NULL{partial} "
            "ORDER BY runs.start_time, runs.run_id",
            (board, *key),
        )
        record_fields = ("unit", "n", "median", "ci95_low", "ci95_high", "record_params")
        by_run: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_run.setdefault(row["run_id"], []).append(row)
        points = []
        for run_rows in by_run.values():
            first = run_rows[0]
            record = {k: first[k] for k in record_fields}
            if len(run_rows) > 1:
                record = self._pooled_record(first["run_id"], key, run_rows, record)
            points.append(
                SeriesPoint({k: v for k, v in first.items() if k not in record_fields}, record)
            )
        return points

    def _pooled_record(
        self,
        run_id: str,
        key: tuple[str, str, str, str],
        rows: list[dict[str, Any]],
        record: dict[str, Any],
    ) -> dict[str, Any]:
        """One figure per run where its workers' records differ only in settings.

        Each worker process calibrates its own loop count, and records differ by
        it; the per-operation values are the same measurement, so they are pooled
        (as `evbench compare` does). Without raw samples, the largest record stands.
        """
        values = self.samples(run_id, key)
        if not values:
            return dict(record, **max(rows, key=lambda r: r["n"] or 0))
        summary = stats.summarize(values)
        return dict(
            record,
            n=summary.n,
            median=summary.median,
            ci95_low=summary.ci95_low,
            ci95_high=summary.ci95_high,
            record_params="pooled: " + "; ".join(r["record_params"] for r in rows),
        )

    def samples(self, run_id: str, key: tuple[str, str, str, str]) -> list[float]:
        """The raw values of one metric of one run (every worker pooled)."""
        from evbench.history.indexing import unpack_values

        found = self._query(
            "SELECT packed FROM samples WHERE run_id = ? AND suite = ? AND profile = ? "
            "AND codec = ? AND metric = ?",
            (run_id, *key),
        )
        try:
            return [v for row in found for v in unpack_values(self._blob(row["packed"]))]
        except (zlib.error, struct.error, ValueError) as error:
            raise self._failed(f"the raw samples of run {run_id} do not unpack ({error})") from None

    def records(self, run_id: str) -> list[dict[str, Any]]:
        return self._query(
            "SELECT * FROM records WHERE run_id = ? ORDER BY suite, profile, codec, metric",
            (run_id,),
        )

    # -- known changes ----------------------------------------------------------------

    def accept(self, board: str, run_id: str, series: str, by: str, reason: str) -> bool:
        """Mark the change at `run_id` in `series` ('*' for every series) as known.

        Refused when the run is not of `board` or the board has no such series: an
        acceptance matching nothing would be taken, and the check would go on failing."""
        found = self.run(run_id)
        if found is None:
            raise UserError(f"no run {run_id} in the store {self.url.display}")
        if found["board"] != board:
            newest = [r["run_id"] for r in self.runs(board)][-3:]
            raise UserError(
                f"run {run_id} is of board {found['board']}, not {board}",
                hint=f"the newest runs of {board}: {', '.join(newest) or 'none'}",
            )
        names = [series_name(key) for key in self.series_keys(board)]
        if series != "*" and series not in names:
            shown = difflib.get_close_matches(series, names, n=3, cutoff=0.6) or names[:3]
            raise UserError(
                f"board {board} has no series {series}",
                hint=f"it has {', '.join(shown) or 'none'}"
                + (f" ({len(names)} in all)" if len(names) > len(shown) else "")
                + "; or give --series '*' for all",
            )
        when = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with self.write() as cursor:
            self._execute(
                cursor,
                _insert("acceptances", ACCEPT_COLUMNS, "(board, run_id, series)"),
                (board, run_id, series, by, reason, when),
            )
            return cursor.rowcount > 0

    def acceptances(self) -> list[dict[str, Any]]:
        return self._query(
            f"SELECT {', '.join(ACCEPT_COLUMNS)} FROM acceptances ORDER BY accepted_at, run_id"
        )

    # -- keeping it bounded -----------------------------------------------------------

    def delete_runs(self, run_ids: Sequence[str]) -> int:
        with self.write() as cursor:
            for run_id in run_ids:
                self._delete_run(cursor, run_id)
        return len(run_ids)

    def _delete_run(self, cursor: Any, run_id: str) -> None:
        """A run's rows, within the caller's transaction (acceptances stay: they name it)."""
        for table in ("samples", "records", "runs"):
            self._execute(cursor, f"DELETE FROM {table} WHERE run_id = ?", (run_id,))

    # -- copying ----------------------------------------------------------------------

    def dump_run(self, run_id: str) -> IndexedRun:
        """A stored run as rows another store can add (what `copy` moves)."""
        row = self.run(run_id)
        if row is None:
            raise UserError(f"no run {run_id} in the store {self.url.display}")
        records = self._query(
            f"SELECT {', '.join(RECORD_COLUMNS)} FROM records WHERE run_id = ?", (run_id,)
        )
        samples = self._query(
            f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM samples WHERE run_id = ?", (run_id,)
        )
        return IndexedRun(
            RunRow(**{k: row[k] for k in RUN_COLUMNS}),
            [tuple(r[c] for c in RECORD_COLUMNS) for r in records],
            [
                tuple(self._blob(r[c]) if c == "packed" else r[c] for c in SAMPLE_COLUMNS)
                for r in samples
            ],
        )

    def add_acceptance(self, row: dict[str, Any]) -> None:
        with self.write() as cursor:
            self._execute(
                cursor,
                _insert("acceptances", ACCEPT_COLUMNS, "(board, run_id, series)"),
                tuple(row[c] for c in ACCEPT_COLUMNS),
            )


def manifest_of(run_row: dict[str, Any]) -> dict[str, Any]:
    return json.loads(run_row["manifest"])
