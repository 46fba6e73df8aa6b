"""The store's tables, its schema version, and the migrations from one version to the next.

Version history (a store written by a newer evbench is refused, naming both):

- 1: runs, records, samples (raw values, zlib-compressed little-endian doubles),
  acceptances (known changes: who accepted them and why).

A migration is a list of statements taking a store from version N-1 to N; the
same statements run on SQLite and PostgreSQL, with `{blob}` and `{serial}`
filled in per dialect.
"""

from __future__ import annotations

from evbench_core.errors import FormatError

SCHEMA_VERSION = 1

#: Column types that differ between the two dialects.
DIALECT_TYPES = {
    "sqlite": {"blob": "BLOB", "serial": "INTEGER PRIMARY KEY AUTOINCREMENT"},
    "postgresql": {"blob": "BYTEA", "serial": "BIGSERIAL PRIMARY KEY"},
}

META = "CREATE TABLE IF NOT EXISTS evbench_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            board TEXT NOT NULL,
            board_source TEXT NOT NULL,
            place TEXT,
            start_time TEXT NOT NULL,
            end_time TEXT,
            quick INTEGER NOT NULL,
            partial INTEGER NOT NULL,
            profiles TEXT NOT NULL,
            codecs TEXT NOT NULL,
            image TEXT,
            kernel TEXT,
            python TEXT,
            protobuf TEXT,
            protobuf_backend TEXT,
            codec_versions TEXT NOT NULL,
            agent TEXT,
            directory TEXT,
            digest TEXT NOT NULL,
            added_at TEXT NOT NULL,
            manifest TEXT NOT NULL
        )""",
        "CREATE INDEX runs_board_time ON runs (board, start_time)",
        """CREATE TABLE records (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            profile TEXT NOT NULL,
            codec TEXT NOT NULL,
            metric TEXT NOT NULL,
            params TEXT NOT NULL,
            unit TEXT NOT NULL,
            n INTEGER,
            median DOUBLE PRECISION,
            mean DOUBLE PRECISION,
            stdev DOUBLE PRECISION,
            min DOUBLE PRECISION,
            max DOUBLE PRECISION,
            ci95_low DOUBLE PRECISION,
            ci95_high DOUBLE PRECISION,
            PRIMARY KEY (run_id, suite, profile, codec, metric, params)
        )""",
        "CREATE INDEX records_series ON records (suite, profile, codec, metric)",
        """CREATE TABLE samples (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            suite TEXT NOT NULL,
            profile TEXT NOT NULL,
            codec TEXT NOT NULL,
            metric TEXT NOT NULL,
            params TEXT NOT NULL,
            count INTEGER NOT NULL,
            packed {blob} NOT NULL,
            PRIMARY KEY (run_id, suite, profile, codec, metric, params)
        )""",
        """CREATE TABLE acceptances (
            id {serial},
            board TEXT NOT NULL,
            run_id TEXT NOT NULL,
            series TEXT NOT NULL,
            accepted_by TEXT NOT NULL,
            reason TEXT NOT NULL,
            accepted_at TEXT NOT NULL,
            UNIQUE (board, run_id, series)
        )""",
    ],
}

TABLES = ("runs", "records", "samples", "acceptances")


def statements(dialect: str, start: int, end: int = SCHEMA_VERSION) -> list[tuple[int, str]]:
    """(version, statement) pairs taking a store from version `start` to `end`."""
    types = DIALECT_TYPES[dialect]
    return [
        (version, statement.format(**types))
        for version in range(start + 1, end + 1)
        for statement in MIGRATIONS[version]
    ]


def refuse_newer(found: int, where: str) -> None:
    """A store from a newer evbench is never written to: it names both versions."""
    if found > SCHEMA_VERSION:
        raise FormatError(
            f"the history store {where} has schema version {found}; "
            f"this evbench knows versions up to {SCHEMA_VERSION}",
            hint="update evbench to use this store (it is left untouched)",
        )
