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
from evbench_agent.errors import UserError

CONNECT_TIMEOUT_S = 10
#: An arbitrary constant naming evbench's schema lock among the server's advisory locks.
SCHEMA_LOCK = 0x65766265  # "evbe"


class PostgresStore(Store):
    dialect = "postgresql"

    @classmethod
    def open(cls, url: StoreURL) -> PostgresStore:
        try:
            import psycopg
        except ImportError:
            raise UserError(
                "a PostgreSQL history store needs psycopg 3",
                hint="pip install 'evbench[postgres]'",
            ) from None
        try:
            connection = psycopg.connect(url.dsn, connect_timeout=CONNECT_TIMEOUT_S)
        except psycopg.Error as error:
            reason = " ".join(str(error).split()) or type(error).__name__
            raise UserError(
                f"cannot connect to the history store {url.display}: {reason}",
                hint="check the server, the port, the user and its password (PGPASSWORD or "
                "~/.pgpass keep it off the command line)",
            ) from None
        store = cls(url, connection)
        try:
            store.ensure_schema()
        except psycopg.Error as error:
            store.close()
            raise UserError(f"the history store {url.display} refused: {error}") from None
        except BaseException:
            store.close()
            raise
        return store

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s")

    def _begin_write(self, cursor: Any) -> None:
        # psycopg opens the transaction on the first statement; schema changes serialize here.
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
