"""The PostgreSQL backend: one store shared by the host PCs of a lab (psycopg 3).

Install it with the extra ``evbench[postgres]``. Schema changes hold a
transaction-scoped advisory lock, so two hosts opening a new store at once do
not both create it; adding runs needs no lock (``ON CONFLICT DO NOTHING``).
Connection errors are reported with the URL's password hidden.
"""

from __future__ import annotations

from typing import Any

from evbench.history.store import Store
from evbench.history.url import StoreURL
from evbench_core.errors import UserError

CONNECT_TIMEOUT_S = 10
#: An arbitrary constant naming evbench's schema lock among the server's advisory locks.
SCHEMA_LOCK = 0x65766265  # "evbe"


class PostgresStore(Store):
    dialect = "postgresql"

    @classmethod
    def open(cls, url: StoreURL, read_only: bool = False) -> PostgresStore:
        """Connect; read-only, every transaction of the session is READ ONLY (the server
        refuses any write) and no table is created."""
        try:
            import psycopg
        except ImportError:
            raise UserError(
                "a PostgreSQL history store needs psycopg 3",
                hint="pip install 'evbench[postgres]'",
            ) from None
        assert url.dsn is not None  # a postgresql URL keeps its DSN
        try:
            connection = psycopg.connect(url.dsn, connect_timeout=CONNECT_TIMEOUT_S)
            if read_only:
                connection.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
                connection.commit()
        except psycopg.Error as error:
            reason = " ".join(str(error).split()) or type(error).__name__
            raise UserError(
                f"cannot connect to the history store {url.display}: {reason}",
                hint="check the server, the port, the user and its password (PGPASSWORD or "
                "~/.pgpass keep it off the command line)",
            ) from None
        store = cls(url, connection, read_only=read_only)
        store.errors = (psycopg.Error,)
        try:
            if read_only:
                if store.refuse_foreign():  # no tables yet: reads as an empty store
                    store.close()
                    from evbench.history.sqlite_store import SqliteStore

                    return SqliteStore._empty(url)  # type: ignore[return-value]
                store.check_readable()
            else:
                store.ensure_schema()
        except BaseException:
            store.close()
            raise
        return store

    def _table_names(self) -> list[str]:
        with self.connection.cursor() as cursor:
            cursor.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
            names = [name for (name,) in cursor.fetchall()]
        self.connection.rollback()
        return names

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def _begin_write(self, cursor: Any) -> None:
        # psycopg opens the transaction on the first statement; schema changes serialize here.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
