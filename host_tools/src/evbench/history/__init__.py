"""Results history: every run indexed in one store, trends across nights, change points.

- `url`: where the store is (a path, ``sqlite:///path``, ``postgresql://...``);
- `schema`: the tables, the schema version and the migrations;
- `store`: what every backend does, in SQL both SQLite and PostgreSQL speak;
- `sqlite_store`, `postgres_store`: the two backends;
- `indexing`: a verified run directory turned into rows;
- `queries`: list, show, export;
- `trends`: every series of a store watched for changes, and which fail a check;
- change points across nights, one module per part of the method: `nightly_watch`
  (the newest nights, each night), `segmentation` (older changes over a whole
  series), `series_changes` (the two together), `window_tests` (the rank and step
  tests they use) and `wild_nights` (a wild night tamed first);
- `board_change`: a change as the check reports it, and `run_differences`: which
  versions, plan and environment moved with it;
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
