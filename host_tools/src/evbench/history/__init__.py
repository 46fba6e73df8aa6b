"""Results history: every run indexed in one store, trends across nights, change points.

- `url`: where the store is (a path, ``sqlite:///path``, ``postgresql://...``);
- `schema`: the tables, the schema version and the migrations;
- `store`: what every backend does, in SQL both SQLite and PostgreSQL speak;
- `sqlite_store`, `postgres_store`: the two backends;
- `indexing`: a verified run directory turned into rows;
- `queries`: list, show, export;
- `changes`: change points across nights, and which versions moved with them;
- `trend_page`: the self-contained HTML trend page.
"""

from __future__ import annotations

from evbench.history.store import Store
from evbench.history.url import StoreURL, default_url, parse_url


def open_store(url: StoreURL, read_only: bool = False) -> Store:
    """Connect to the store at `url`, creating or migrating its schema; `read_only`:
    write nothing at all (a store that does not exist yet reads as empty)."""
    if url.kind == "postgresql":
        from evbench.history.postgres_store import PostgresStore

        return PostgresStore.open(url, read_only)
    from evbench.history.sqlite_store import SqliteStore

    return SqliteStore.open(url, read_only)


__all__ = ["Store", "StoreURL", "default_url", "open_store", "parse_url"]
