"""Sessions in PostgreSQL: one row per item, one round trip per operation.

Items live in one table (default ``agent_session_items``): a ``BIGSERIAL`` id that orders
them, the session id, and the item as ``json``, with an index on ``(session_id, id)``.
Every operation is a single statement on an autocommit connection from a
``psycopg_pool`` pool: one round trip, atomic, and never a connection left inside a
transaction (a cancelled call leaves either nothing or its whole statement committed).

Items are kept as ``json``, not ``jsonb``, on purpose: ``jsonb`` reorders object keys, turns
``1e16`` into the integer ``10000000000000000`` and refuses ``\\u0000`` in strings, so
items would not come back equal to what was stored. ``json`` keeps the exact text, is
still validated by the server, and still supports the JSON operators (cast to ``jsonb``
in a query or an expression index where needed).

Writers of one session are serialized by a transaction-scoped advisory lock taken inside
the ``INSERT`` itself, so two concurrent batches never interleave their ids. Schema
versions are tracked in ``agent_sessions_migrations``; a table from a newer, unknown
version is refused, never rewritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ._json import decode_item, decode_items, encode_items
from ._servers import SessionBackendError, mask_url, missing_driver
from .protocol import (
    Item,
    SessionABC,
    SessionClosedError,
    SessionError,
    SessionSettings,
    SessionsPage,
    coerce_session_settings,
    validate_session_id,
)

try:
    import psycopg
    from psycopg import sql
    from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout
except ImportError as exc:  # pragma: no cover - exercised in a venv without psycopg
    raise missing_driver("PostgreSQL", "postgres", "psycopg") from exc

__all__ = ["DEFAULT_TABLE", "SCHEMA_VERSION", "PostgresSession", "PostgresStore"]

DEFAULT_TABLE = "agent_session_items"
SCHEMA_VERSION = 1
MIGRATIONS_TABLE = "agent_sessions_migrations"
DEFAULT_MAX_CONNECTIONS = 10
DEFAULT_TIMEOUT = 5.0

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_INT64_MAX = 2**63 - 1
_OUTAGES = (psycopg.OperationalError, PoolTimeout, OSError)
# Each entry upgrades a table from version N to N + 1; {table} and {index} are filled in.
_MIGRATIONS = (
    """
    CREATE TABLE {table} (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT COLLATE "C" NOT NULL,
        payload JSON NOT NULL
    );
    CREATE INDEX {index} ON {table} (session_id, id);
    """,
)
assert len(_MIGRATIONS) == SCHEMA_VERSION


class PostgresStore:
    """Sessions stored in one PostgreSQL table, sharing a ``psycopg_pool`` connection pool.

    Give either ``url`` (the store creates its pool, opened on first use and closed in
    :meth:`close`) or ``pool`` (an ``AsyncConnectionPool`` you own whose connections are
    in autocommit mode; never closed by us). ``timeout`` is how long a call waits for a
    connection before raising :class:`~agent_sessions.SessionBackendError`. The table is
    created (or migrated) on first use. Like its pool, a store belongs to the event loop
    that first uses it.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        table: str = DEFAULT_TABLE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if (url is None) == (pool is None):
            raise ValueError("PostgresStore needs exactly one of url= or pool=")
        if not isinstance(table, str) or not _IDENTIFIER.fullmatch(table):
            raise ValueError(
                f"table must be a plain SQL identifier (letters, digits, _), got {table!r}"
            )
        if pool is None:
            assert url is not None
            pool = AsyncConnectionPool(
                url,
                min_size=1,
                max_size=max_connections,
                timeout=timeout,
                kwargs={"autocommit": True},
                open=False,
            )
            self._owns_pool = True
            self.url = mask_url(url)
        else:
            self._owns_pool = False
            self.url = mask_url(pool.conninfo) if isinstance(pool.conninfo, str) else "pool"
        self._pool = pool
        self.table = table
        self._timeout = timeout
        self._queries = _Queries(table)
        self._ready = False
        self._readying: asyncio.Lock | None = None
        self._closed = False

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> PostgresSession:
        """A handle on ``session_id`` in this store; closing it leaves the store open."""
        return PostgresSession(session_id, store=self, session_settings=session_settings)

    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        """Ids of non-empty sessions starting with ``prefix``, in byte order of their
        UTF-8 encoding, at most ``limit`` per page (an index skip-scan: cost grows with
        the page, not with the number of items)."""
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        if cursor is not None and not isinstance(cursor, str):
            raise TypeError(f"cursor must be a str or None, got {type(cursor).__name__}")
        # Start at the prefix itself (inclusive) or right after the cursor (exclusive).
        from_prefix = cursor is None or cursor < prefix
        rows = await self._fetch(
            self._queries.list_sessions,
            {
                "start": prefix if from_prefix else cursor,
                "inclusive": from_prefix,
                "prefix": prefix,
                "n": limit + 1,
            },
        )
        ids = [row[0] for row in rows]
        if len(ids) > limit:
            return SessionsPage(ids[:limit], ids[limit - 1])
        return SessionsPage(ids, None)

    async def close(self) -> None:
        """Close the pool this store created (an injected pool stays open)."""
        if self._closed:
            return
        self._closed = True
        if self._owns_pool:
            await self._pool.close()

    async def __aenter__(self) -> PostgresStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _fetch(self, query: bytes, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            cursor = await conn.execute(query, params)
            return await cursor.fetchall()

    async def _execute(self, query: bytes, params: dict[str, Any]) -> None:
        async with self._connection() as conn:
            await conn.execute(query, params)

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled autocommit connection; outages become ``SessionBackendError``."""
        if self._closed:
            raise SessionClosedError(f"PostgresStore ({self.url}) used after close()")
        try:
            if not self._ready:
                await self._prepare()
            async with self._pool.connection(timeout=self._timeout) as conn:
                if not conn.autocommit:
                    raise SessionError(
                        "the injected pool's connections must be in autocommit mode: "
                        "AsyncConnectionPool(..., kwargs={'autocommit': True})"
                    )
                yield conn
        except PoolClosed as exc:
            raise SessionClosedError(f"the pool of {self.url} is closed") from exc
        except _OUTAGES as exc:
            # Drop the other idle connections that died with this one, so the next call
            # after the server is back gets a live connection.
            if not isinstance(exc, PoolTimeout):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._pool.check(), self._timeout)
            raise SessionBackendError(f"PostgreSQL at {self.url} failed: {exc}") from exc

    async def _prepare(self) -> None:
        """Open our pool and bring the table to ``SCHEMA_VERSION`` (once per store)."""
        if self._readying is None:
            self._readying = asyncio.Lock()
        async with self._readying:
            if self._ready:
                return
            if self._owns_pool:
                await self._pool.open(wait=False)
            async with self._pool.connection(timeout=self._timeout) as conn:
                await _migrate(conn, self.table)
            self._ready = True


class PostgresSession(SessionABC):
    """One conversation in PostgreSQL.

    ``PostgresSession("user_123", "postgresql://...")`` opens its own store (closed with
    the session); ``store.session("user_123")`` borrows a shared one. Keyword arguments
    ``table``, ``max_connections`` and ``timeout`` are those of :class:`PostgresStore`.
    """

    def __init__(
        self,
        session_id: str,
        url: str | None = None,
        *,
        store: PostgresStore | None = None,
        table: str = DEFAULT_TABLE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout: float = DEFAULT_TIMEOUT,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = validate_session_id(session_id)
        if "\x00" in session_id:
            raise ValueError("PostgreSQL text cannot hold a NUL character in a session id")
        self.session_settings = coerce_session_settings(session_settings)
        if store is None:
            if url is None:
                raise ValueError("PostgresSession needs a url or a store")
            store = PostgresStore(
                url, table=table, max_connections=max_connections, timeout=timeout
            )
            self._owns_store = True
        elif (
            url is not None
            or table != DEFAULT_TABLE
            or max_connections != DEFAULT_MAX_CONNECTIONS
            or timeout != DEFAULT_TIMEOUT
        ):
            raise ValueError(
                "pass either store= or url/table/max_connections/timeout, not both: "
                "a session on a given store uses the store's settings"
            )
        else:
            self._owns_store = False
        self.store = store
        self._closed = False

    async def get_items(self, limit: int | None = None) -> list[Item]:
        limit = self._effective_limit(limit)
        if limit is not None and limit > _INT64_MAX:
            limit = None  # more than any session holds; the server's integers are 64-bit
        store = self._open_store()
        if limit == 0:
            return []
        if limit is None:
            rows = await store._fetch(store._queries.get_all, {"sid": self.session_id})
        else:
            rows = await store._fetch(
                store._queries.get_latest, {"sid": self.session_id, "n": limit}
            )
        return decode_items(rows, where=self._where)

    async def add_items(self, items: list[Item]) -> None:
        encoded = encode_items(items)
        store = self._open_store()
        if not encoded:
            return
        await store._execute(
            store._queries.add,
            {"lock": store._queries.lock_class, "sid": self.session_id, "payloads": encoded},
        )

    async def pop_item(self) -> Item | None:
        store = self._open_store()
        while True:
            rows = await store._fetch(store._queries.pop, {"sid": self.session_id})
            if not rows:
                return None
            item_id, payload = rows[0]
            item = decode_item(payload, where=self._where(item_id))
            if item is not None:
                return item
            # A corrupt newest row is removed and skipped; the next one is the latest.

    async def clear_session(self) -> None:
        store = self._open_store()
        await store._execute(store._queries.clear, {"sid": self.session_id})

    async def close(self) -> None:
        """Mark this handle closed; close its store only if the session created it."""
        if self._closed:
            return
        self._closed = True
        if self._owns_store:
            await self.store.close()

    def _open_store(self) -> PostgresStore:
        if self._closed:
            raise SessionClosedError(f"PostgresSession {self.session_id!r} used after close()")
        return self.store

    def _where(self, item_id: int) -> str:
        return f"{self.store.url} table {self.store.table} id {item_id}"


class _Queries:
    """Every statement a store runs, rendered once for its table."""

    def __init__(self, table: str) -> None:
        def render(template: str) -> bytes:
            return sql.SQL(template).format(table=sql.Identifier(table)).as_bytes(None)

        # Advisory locks share one namespace per database: the first key is our table's.
        self.lock_class = _int32(zlib.crc32(f"agent_sessions:{table}".encode()))
        self.add = render(
            "WITH serialized AS (SELECT pg_advisory_xact_lock(%(lock)s, hashtext(%(sid)s)))"
            " INSERT INTO {table} (session_id, payload)"
            " SELECT %(sid)s, item.payload::json"
            " FROM serialized, unnest(%(payloads)s::text[]) WITH ORDINALITY AS item(payload, n)"
            " ORDER BY item.n"
        )
        self.get_all = render(
            "SELECT id, payload::text FROM {table} WHERE session_id = %(sid)s ORDER BY id"
        )
        self.get_latest = render(
            "SELECT id, payload FROM (SELECT id, payload::text FROM {table}"
            " WHERE session_id = %(sid)s ORDER BY id DESC LIMIT %(n)s) AS latest ORDER BY id"
        )
        # FOR UPDATE makes a concurrent pop wait, then skip the row we deleted.
        self.pop = render(
            "DELETE FROM {table} WHERE id = (SELECT id FROM {table} WHERE session_id = %(sid)s"
            " ORDER BY id DESC LIMIT 1 FOR UPDATE) RETURNING id, payload::text"
        )
        self.clear = render("DELETE FROM {table} WHERE session_id = %(sid)s")
        # A skip scan over the (session_id, id) index: one probe per distinct id.
        self.list_sessions = render(
            "WITH RECURSIVE ids(sid) AS ("
            " (SELECT session_id FROM {table} WHERE session_id > %(start)s"
            "  OR (%(inclusive)s AND session_id = %(start)s) ORDER BY session_id LIMIT 1)"
            " UNION ALL"
            " SELECT (SELECT session_id FROM {table} WHERE session_id > ids.sid"
            "  ORDER BY session_id LIMIT 1) FROM ids"
            " WHERE ids.sid IS NOT NULL AND starts_with(ids.sid, %(prefix)s))"
            " SELECT sid FROM ids WHERE sid IS NOT NULL AND starts_with(sid, %(prefix)s)"
            " LIMIT %(n)s"
        )


async def _migrate(conn: psycopg.AsyncConnection[Any], table: str) -> None:
    """Bring ``table`` to ``SCHEMA_VERSION`` in one transaction, serialized across clients."""
    async with conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock(%s)",
            (_int32(zlib.crc32(MIGRATIONS_TABLE.encode())),),
        )
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} (table_name TEXT NOT NULL,"
                " version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),"
                " PRIMARY KEY (table_name, version))"
            ).format(sql.Identifier(MIGRATIONS_TABLE))
        )
        cursor = await conn.execute(
            sql.SQL("SELECT coalesce(max(version), 0) FROM {} WHERE table_name = %s").format(
                sql.Identifier(MIGRATIONS_TABLE)
            ),
            (table,),
        )
        row = await cursor.fetchone()
        current = 0 if row is None else int(row[0])
        if current > SCHEMA_VERSION:
            raise SessionError(
                f"table {table!r} has schema version {current}, newer than this library's "
                f"{SCHEMA_VERSION}: upgrade agent-sessions instead of using it"
            )
        for version in range(current + 1, SCHEMA_VERSION + 1):
            await conn.execute(
                sql.SQL(_MIGRATIONS[version - 1]).format(
                    table=sql.Identifier(table), index=sql.Identifier(f"{table}_session_idx")
                )
            )
            await conn.execute(
                sql.SQL("INSERT INTO {} (table_name, version) VALUES (%s, %s)").format(
                    sql.Identifier(MIGRATIONS_TABLE)
                ),
                (table, version),
            )


def _int32(value: int) -> int:
    """An unsigned 32-bit value as the signed int4 PostgreSQL's advisory locks take."""
    return value - (1 << 32) if value >= 1 << 31 else value
