"""Sessions in PostgreSQL: one row per item, one round trip per read.

Items live in one table (default ``agent_session_items``): a ``BIGSERIAL`` id that orders
them, the session id, and the item as ``json``, with an index on ``(session_id, id)``.
Reads, ``pop_item`` and ``clear_session`` are a single statement on an autocommit
connection of the store's own pool (one per event loop): one round trip, atomic (a pop
that finds nothing runs again behind the session's lock, so that one that waited for a
``replace_items`` returns the new list's last item, not ``None``).
``add_items`` sends ``BEGIN`` and its insert in one message and ``COMMIT`` only once the
insert has answered (two round trips), so that a write cancelled or timed out before then
is rolled back by the server, even by a frozen server that processes it after resuming.
Every call is bounded by the store's timeouts. A batch is sent as one JSON array (one
text parameter, which the server splits with ``json_array_elements``); a result of more
than 1,000 rows is turned into rows a page at a time, the event loop running between
pages, and decoded in a worker thread.

The store's own pools run nothing in the background: a call opens the connection it
needs in its own task and puts it back when done, so a loop that ends (``asyncio.run``
per call) has no pool task left to cancel (a ``psycopg_pool`` worker cancelled while it
connects can keep ``asyncio.run`` from ever returning).

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
import weakref
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from ._json import decode_item, decode_items
from ._schema import TableVersions
from ._servers import (
    PerLoop,
    check_timeout,
    check_userinfo,
    deadline,
    mask_url,
    missing_driver,
    scrub,
    url_secrets,
)
from .base import BaseSession, BaseStore, Release
from .errors import (
    BackendAuthenticationError,
    BackendDatabaseMissingError,
    BackendTimeoutError,
    BackendUnreachableError,
    InvalidSessionIdError,
    SessionBackendError,
    SessionConfigError,
    SessionError,
)
from .protocol import Item, SessionClosedError, SessionSettings, SessionsPage

try:
    import psycopg
    from psycopg import AsyncClientCursor, sql
    from psycopg import errors as pg_errors
    from psycopg.conninfo import conninfo_to_dict
    from psycopg.pq import TransactionStatus
    from psycopg_pool import AsyncConnectionPool, PoolClosed, PoolTimeout
except ImportError as exc:  # pragma: no cover - exercised in a venv without psycopg
    raise missing_driver("PostgreSQL", "postgres", "psycopg") from exc

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_SOCKET_TIMEOUT",
    "DEFAULT_STATEMENT_TIMEOUT",
    "DEFAULT_TABLE",
    "MAX_SESSION_ID_BYTES",
    "SCHEMA_VERSION",
    "PostgresSession",
    "PostgresStore",
]

DEFAULT_TABLE = "agent_session_items"
SCHEMA_VERSION = 1
MIGRATIONS_TABLE = "agent_sessions_migrations"
DEFAULT_MAX_CONNECTIONS = 10
DEFAULT_TIMEOUT = 5.0
"""Seconds a call waits for a free pooled connection."""
DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a new connection (libpq's ``connect_timeout``, at least 2)."""
DEFAULT_STATEMENT_TIMEOUT = 15.0
"""Seconds the server lets one statement run (``statement_timeout``)."""
DEFAULT_SOCKET_TIMEOUT = 20.0
"""Seconds a call waits for the server's reply before giving up on the connection."""
MAX_SESSION_ID_BYTES = 2048
_PAGE = 1000  # rows of a large read turned into Python objects between two turns of the loop
"""The longest session id (UTF-8 bytes) the ``(session_id, id)`` index always holds."""

# What libpq reports (without a SQLSTATE) when the server refuses who connects.
_AUTHENTICATION_FAILED = (
    "password authentication failed",
    "authentication failed for user",
    "no password supplied",
    "no pg_hba.conf entry",
    "pg_hba.conf rejects connection",
    "is not permitted to log in",
)
_ROLE_MISSING = re.compile(r'fatal:\s+role ".*" does not exist')
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
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


def _check_table(table: object) -> str:
    if not isinstance(table, str) or not _IDENTIFIER.fullmatch(table):
        raise SessionConfigError(
            f"table must be a plain SQL identifier (letters, digits, _), got {table!r}"
        )
    if table.lower().startswith("pg_"):
        raise SessionConfigError(
            f"table must not start with 'pg_' (PostgreSQL's system catalogs), got {table!r}"
        )
    return table


class PostgresStore(BaseStore):
    """Sessions stored in one PostgreSQL table, on connection pools of its own.

    Give either ``url`` (the store creates its pools, which run no background task: each
    call connects in its own task when no idle connection is left; closed in
    :meth:`close`) or ``pool`` (a ``psycopg_pool.AsyncConnectionPool`` you own whose
    connections are in autocommit mode; never closed by us). The table is created (or
    migrated) on first use; with ``create=False`` nothing is created, and a missing table
    raises ``BackendDatabaseMissingError``. Every call is bounded: ``timeout`` (a free pooled
    connection), ``connect_timeout`` (a new connection), ``statement_timeout`` (set on
    each connection of the store's own pools) and ``socket_timeout`` (the reply), in
    seconds.

    The store works from any event loop: it keeps one pool per running loop (an injected
    pool serves the first loop that uses the store; other loops get a pool of the store's
    own on the same server). :meth:`close` closes them all, from any loop.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        pool: AsyncConnectionPool[Any] | None = None,
        table: str = DEFAULT_TABLE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        create: bool = True,
    ) -> None:
        if (url is None) == (pool is None):
            raise SessionConfigError("PostgresStore needs exactly one of url= or pool=")
        self._create = bool(create)
        self.table = _check_table(table)
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise SessionConfigError(
                f"max_connections must be an int >= 1, got {max_connections!r}"
            )
        if max_connections < 1:
            raise SessionConfigError(
                f"max_connections must be an int >= 1, got {max_connections!r}"
            )
        self.timeout = check_timeout("timeout", timeout)
        self.connect_timeout = check_timeout("connect_timeout", connect_timeout)
        self.statement_timeout = check_timeout("statement_timeout", statement_timeout)
        self.socket_timeout = check_timeout("socket_timeout", socket_timeout)
        self._max_connections = max_connections
        self._injected = pool
        if pool is None:
            assert url is not None
            if not isinstance(url, str):
                raise TypeError(f"url must be a str, got {type(url).__name__}")
            check_userinfo(url)
            self._conninfo = url
            self.url = mask_url(url)
        else:
            self._conninfo = pool.conninfo if isinstance(pool.conninfo, str) else ""
            self.url = mask_url(self._conninfo) if self._conninfo else "pool"
        self._secrets = url_secrets(self._conninfo)
        try:
            parameters = conninfo_to_dict(self._conninfo)
        except psycopg.ProgrammingError as exc:
            raise SessionConfigError(
                f"bad PostgreSQL URL {self.url}: {self._scrub(str(exc).strip())}"
            ) from None
        # A statement_timeout the URL sets in libpq's options (-c statement_timeout=...)
        # is the user's word: the store's default does not override it.
        self._set_statement_timeout = not (
            statement_timeout == DEFAULT_STATEMENT_TIMEOUT
            and "statement_timeout" in str(parameters.get("options", ""))
        )
        self._injected_free = pool is not None
        self._pools: PerLoop[_Pool] = PerLoop(lambda pool: pool.drop())
        self._queries = _Queries(table)
        self._ready = False

    @property
    def location(self) -> str:
        return self.url

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> PostgresSession:
        """A handle on ``session_id`` in this store; closing it leaves the store open."""
        return PostgresSession(session_id, store=self, session_settings=session_settings)

    # -- the store operations (BaseStore's hooks) ------------------------------------------

    async def _get_items(self, session_id: str, limit: int | None) -> list[Item]:
        params: dict[str, Any]
        if limit is None:
            query, params = self._queries.get_all, {"sid": session_id}
        else:
            query, params = self._queries.get_latest, {"sid": session_id, "n": limit}
        async with self._connection(write=False) as call:
            cursor = await call.db().execute(query, params)
            if cursor.rowcount <= _PAGE:
                return decode_items(await cursor.fetchall(), where=self._where)
            # A large result: turned into rows a page at a time, the loop running between
            # pages, and decoded in a worker thread.
            rows = await cursor.fetchmany(_PAGE)
            while len(rows) < cursor.rowcount:
                await asyncio.sleep(0)
                rows += await cursor.fetchmany(_PAGE)
        return await asyncio.to_thread(decode_items, rows, where=self._where)

    async def _add_items(self, session_id: str, encoded: list[str]) -> None:
        await self._insert(
            self._queries.add,
            # One JSON array of the batch: one text to quote and send, where an array
            # parameter of 20,000 texts would be quoted one by one on the event loop.
            {
                "lock": self._queries.lock_class,
                "sid": session_id,
                "batch": "[" + ",".join(encoded) + "]",
            },
        )

    async def _pop_item(self, session_id: str) -> Item | None:
        while True:
            rows = await self._fetch_write(self._queries.pop, {"sid": session_id})
            if not rows:
                # Empty, or the DELETE waited for a replace_items that deleted every row
                # it could see: a statement reads the rows as they were when it began,
                # not the replacement's. Behind the session's lock, which replace_items
                # holds to its end, a second DELETE sees them (one round trip).
                rows = await self._fetch_write_last(
                    self._queries.pop_locked,
                    {"lock": self._queries.lock_class, "sid": session_id},
                )
            if not rows:
                return None
            item_id, payload = rows[0]
            item = decode_item(payload, where=self._where(item_id))
            if item is not None:
                return item
            # A corrupt newest row is removed and skipped; the next one is the latest.

    async def _clear_session(self, session_id: str) -> None:
        await self._execute(self._queries.clear, {"sid": session_id})

    async def _replace_items(self, session_id: str, encoded: list[str]) -> None:
        # One transaction (BEGIN ... COMMIT, as every insert): the old rows or the new.
        await self._insert(
            self._queries.replace,
            {
                "lock": self._queries.lock_class,
                "sid": session_id,
                "batch": "[" + ",".join(encoded) + "]",  # one JSON array, as _add_items
            },
        )

    async def _list_sessions(self, prefix: str, cursor: str | None, limit: int) -> SessionsPage:
        # Ids in byte order of their UTF-8 encoding; an index skip-scan: the cost grows
        # with the page, not with the number of items.
        if "\x00" in prefix or "\x00" in (cursor or ""):
            return SessionsPage([], None)  # no stored id holds a NUL
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

    async def _close(self) -> None:
        """Close every pool this store created, whichever loop created it and whichever
        loop calls this (an injected pool stays open)."""
        injected = self._injected

        async def close_pool(pool: _Pool) -> None:
            if not isinstance(pool, _InjectedPool) or pool.pool is not injected:
                await pool.close()

        await self._pools.close_all(close_pool, self.connect_timeout + 1)

    def _where(self, item_id: int) -> str:
        return f"{self.url} table {self.table} id {item_id}"

    async def _fetch(self, query: bytes, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self._connection(write=False) as call:
            cursor = await call.db().execute(query, params)
            return await cursor.fetchall()

    async def _fetch_write(self, query: bytes, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        async with self._connection(write=True) as call:
            cursor = await call.db().execute(query, params)
            return await cursor.fetchall()

    async def _fetch_write_last(
        self, query: bytes, params: dict[str, Any]
    ) -> list[tuple[Any, ...]]:
        """The rows of the last of several statements sent as one message (client-side
        binding), which the server runs as one transaction."""
        async with self._connection(write=True) as call:
            cursor = AsyncClientCursor(call.db())
            await cursor.execute(query, params)
            while cursor.nextset():
                pass
            return await cursor.fetchall()

    async def _execute(self, query: bytes, params: dict[str, Any]) -> None:
        async with self._connection(write=True) as call:
            await call.db().execute(query, params)

    async def _insert(self, query: bytes, params: dict[str, Any]) -> None:
        """Run an insert in a transaction whose ``COMMIT`` is sent only once the insert
        succeeded: a call cancelled or timed out before then leaves nothing behind, even
        when a frozen server executes the insert later (it rolls back when it finds the
        connection gone). ``BEGIN`` rides in the insert's own message (client-side
        binding allows two statements in one), so a write costs two round trips.

        Until ``COMMIT`` is sent nothing can be stored (an error, a cut connection or a
        timeout then says ``may_have_written=False``: a connection left mid-transaction
        is closed, never reused); from then on every failure says ``True``, whatever the
        server answered."""
        async with self._connection(write=True) as call:
            conn = call.db()
            call.sent = False
            try:
                await AsyncClientCursor(conn).execute(b"BEGIN; " + query, params)
            except psycopg.DatabaseError:
                # The server refused the insert: end its transaction before the error
                # leaves (a broken connection is closed instead).
                if conn.info.transaction_status == TransactionStatus.INERROR:
                    with contextlib.suppress(psycopg.Error):
                        await conn.execute(b"ROLLBACK")
                raise
            call.sent = call.committing = True
            await conn.execute(b"COMMIT")

    @asynccontextmanager
    async def _connection(self, *, write: bool) -> AsyncIterator[_Call]:
        """A pooled autocommit connection of this loop's pool, the whole call bounded by
        the socket timeout; every failure becomes a ``SessionError``. A write counts as
        sent (``may_have_written``) once it holds a connection, unless the caller says
        otherwise on the yielded ``_Call``."""
        self.check_open()
        pool = self._pools.get(self._new_pool)
        call = _Call()
        try:
            async with deadline(self.socket_timeout + self.timeout):
                if not self._ready:
                    await self._prepare()
                async with pool.connection(self.timeout) as conn:
                    if not conn.autocommit:
                        raise SessionError(
                            "the injected pool's connections must be in autocommit mode: "
                            "AsyncConnectionPool(..., kwargs={'autocommit': True})"
                        )
                    call.conn, call.sent = conn, write
                    yield call
        except PoolClosed as exc:
            raise SessionClosedError(f"the pool of {self.url} is closed") from exc
        except PoolTimeout as exc:
            raise await self._diagnose(exc) from exc
        except TimeoutError as exc:
            raise BackendTimeoutError(
                f"PostgreSQL at {self.url} did not answer within {self.socket_timeout}s",
                may_have_written=call.sent,
            ) from exc
        except psycopg.Error as exc:
            if isinstance(exc, psycopg.OperationalError) and call.conn is not None:
                # Drop the other idle connections that died with this one, so the next
                # call after the server is back gets a live connection.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(pool.discard_idle(), self.connect_timeout)
            raise self._translate(exc, call) from exc
        except OSError as exc:
            raise SessionBackendError(
                f"PostgreSQL at {self.url} failed: {self._scrub(str(exc))}",
                may_have_written=call.sent,
            ) from exc

    def _new_pool(self) -> _Pool:
        """A pool for a loop new to this store (called under ``PerLoop``'s lock)."""
        if self._injected_free and self._injected is not None:
            self._injected_free = False
            return _InjectedPool(self._injected)
        return _OwnPool(self._connect_own, self._max_connections)

    async def _connect_own(self) -> psycopg.AsyncConnection[Any]:
        """A new connection for one of the store's own pools, in the calling task."""
        conn = await self._connect_directly()
        if self._set_statement_timeout:
            try:
                statement_ms = round(self.statement_timeout * 1000)
                await conn.execute(f"SET statement_timeout = {statement_ms:d}")
            except BaseException:
                await conn.close()
                raise
        return conn

    async def _connect_directly(self) -> psycopg.AsyncConnection[Any]:
        """One connection outside the pools, with the pool's connection settings."""
        kwargs: dict[str, Any] = {}
        if self._injected is not None and isinstance(self._injected.kwargs, dict):
            kwargs.update(self._injected.kwargs)
        kwargs["autocommit"] = True
        kwargs.setdefault("connect_timeout", max(2, round(self.connect_timeout)))
        return await psycopg.AsyncConnection.connect(self._conninfo, **kwargs)

    async def _diagnose(self, exc: PoolTimeout) -> SessionError:
        """Why no pooled connection came: try one connection of our own to learn the cause
        (refused, wrong password, missing database) or report an exhausted pool."""
        try:
            conn = await self._connect_directly()
        except psycopg.Error as cause:
            return self._translate(cause, _Call())
        except OSError as cause:
            return BackendUnreachableError(
                f"PostgreSQL at {self.url} is unreachable: {self._scrub(str(cause))}"
            )
        await conn.close()
        return SessionBackendError(
            f"PostgreSQL at {self.url}: no pooled connection came free within "
            f"{self.timeout}s ({exc})"
        )

    def _scrub(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _translate(self, exc: psycopg.Error, call: _Call) -> SessionError:
        """The ``SessionError`` for ``exc``. ``may_have_written`` is ``False`` only when
        the write certainly did not happen: nothing was sent, the insert had not been
        committed yet, or the server refused the statement and the connection lives on
        (an autocommit statement that failed is rolled back). Once ``COMMIT`` was sent
        any error, even one with a SQLSTATE, may follow a commit."""
        where = f"PostgreSQL at {self.url}"
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        text = self._scrub(text)
        sqlstate = exc.sqlstate or ""
        lowered = str(exc).lower()
        conn = call.conn
        connected = conn is not None
        alive = conn is not None and not conn.closed and not conn.broken
        # What may have been written: everything sent once committing, else what was
        # sent on a connection the error ended (a refusal on a live one undid it).
        maybe = call.committing or (call.sent and not alive)
        if (
            sqlstate.startswith("28")
            or any(sign in lowered for sign in _AUTHENTICATION_FAILED)
            or _ROLE_MISSING.search(lowered)
        ):
            return BackendAuthenticationError(f"{where} refused the credentials: {text}")
        if sqlstate == "3D000" or ("database" in lowered and "does not exist" in lowered):
            return BackendDatabaseMissingError(f"{where}: the database does not exist: {text}")
        if isinstance(exc, pg_errors.QueryCanceled):
            return BackendTimeoutError(
                f"{where} cancelled the statement (statement_timeout "
                f"{self.statement_timeout}s): {text}",
                may_have_written=maybe,
            )
        if isinstance(exc, pg_errors.ProgramLimitExceeded) and "index row" in lowered:
            return InvalidSessionIdError(f"{where} cannot index this session id: {text}")
        if isinstance(exc, psycopg.OperationalError) and exc.sqlstate is None:
            if not connected:
                return BackendUnreachableError(f"{where} is unreachable: {text}")
            return SessionBackendError(f"{where} failed: {text}", may_have_written=maybe)
        if maybe:
            return SessionBackendError(f"{where} failed: {text}", may_have_written=True)
        # The server refused the statement: it was not executed (or rolled back).
        return SessionBackendError(f"{where} refused the statement: {text}")

    async def _prepare(self) -> None:
        """Bring the table to ``SCHEMA_VERSION`` once per store, on a connection of its
        own (so that a wrong password or a missing database is reported at once)."""
        conn = await self._connect_directly()
        try:
            if self._create:
                await _migrate(conn, self.table)
            else:
                await _check_schema(conn, self.table, self.url)
        finally:
            await conn.close()
        self._ready = True


class PostgresSession(BaseSession[PostgresStore]):
    """One conversation in PostgreSQL.

    ``PostgresSession("user_123", "postgresql://...")`` opens its own store (closed with
    the session); ``store.session("user_123")`` borrows a shared one. Keyword arguments
    ``table``, ``max_connections`` and the timeouts are those of :class:`PostgresStore`.
    Session ids longer than ``MAX_SESSION_ID_BYTES`` in UTF-8 or holding a NUL are
    refused here with ``InvalidSessionIdError``.
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
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        statement_timeout: float = DEFAULT_STATEMENT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        session_settings: SessionSettings | None = None,
    ) -> None:
        def own_store() -> tuple[PostgresStore, Release]:
            if url is None:
                raise SessionConfigError("PostgresSession needs a url or a store")
            opened = PostgresStore(
                url,
                table=table,
                max_connections=max_connections,
                timeout=timeout,
                connect_timeout=connect_timeout,
                statement_timeout=statement_timeout,
                socket_timeout=socket_timeout,
            )
            return opened, opened.close

        if store is not None:
            self.refuse_options_with_store(
                url=url is not None,
                table=table != DEFAULT_TABLE,
                max_connections=max_connections != DEFAULT_MAX_CONNECTIONS,
                timeout=timeout != DEFAULT_TIMEOUT,
                connect_timeout=connect_timeout != DEFAULT_CONNECT_TIMEOUT,
                statement_timeout=statement_timeout != DEFAULT_STATEMENT_TIMEOUT,
                socket_timeout=socket_timeout != DEFAULT_SOCKET_TIMEOUT,
            )
        super().__init__(
            session_id,
            store=store if store is not None else own_store,
            session_settings=session_settings,
        )

    @classmethod
    def check_session_id(cls, session_id: object) -> str:
        """Also refuses a NUL (PostgreSQL text cannot hold one) and an id longer than
        ``MAX_SESSION_ID_BYTES`` in UTF-8 (the ``(session_id, id)`` index's limit)."""
        checked = super().check_session_id(session_id)
        if "\x00" in checked:
            raise InvalidSessionIdError(
                "PostgreSQL text cannot hold a NUL character in a session id"
            )
        size = len(checked.encode("utf-8"))
        if size > MAX_SESSION_ID_BYTES:
            raise InvalidSessionIdError(
                f"session_id is {size} bytes in UTF-8; PostgreSQL sessions take at most "
                f"{MAX_SESSION_ID_BYTES} (the limit of its index)"
            )
        return checked


class _Call:
    """How far one call got: its connection, and whether a write may have happened."""

    __slots__ = ("committing", "conn", "sent")

    def __init__(self) -> None:
        self.conn: psycopg.AsyncConnection[Any] | None = None
        self.sent = False  # the server may have carried out the write
        self.committing = False  # COMMIT was sent: any error may follow a commit

    def db(self) -> psycopg.AsyncConnection[Any]:
        assert self.conn is not None, "no connection yet"
        return self.conn


async def _discard(conn: psycopg.AsyncConnection[Any]) -> None:
    """Close ``conn`` without waiting for the server (libpq's ``PQfinish`` only sends a
    goodbye): safe in a cancelled task and on a frozen server."""
    with contextlib.suppress(Exception):
        await conn.close()


class _OwnPool:
    """The store's connections on one event loop, with no background task: a call opens
    the connection it needs in its own task (bounded by its deadline) and puts it back
    when done; a connection that failed or was left mid-transaction is closed, never
    reused. At most ``max_size`` are in use at once."""

    def __init__(
        self, connect: Callable[[], Awaitable[psycopg.AsyncConnection[Any]]], max_size: int
    ) -> None:
        self._connect = connect
        self._max_size = max_size
        self._slots: asyncio.Semaphore | None = None  # made on the pool's own loop
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._opened: weakref.WeakSet[psycopg.AsyncConnection[Any]] = weakref.WeakSet()
        self._closed = False

    @asynccontextmanager
    async def connection(self, timeout: float) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if self._closed:
            raise PoolClosed("the store's pool is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_size)
        slots = self._slots
        if slots.locked():
            try:
                await asyncio.wait_for(slots.acquire(), timeout)
            except asyncio.TimeoutError:
                raise PoolTimeout(f"no connection came free within {timeout}s") from None
        else:
            await slots.acquire()  # free: returns at once, no task for wait_for
        try:
            conn = None
            while self._idle and conn is None:
                candidate = self._idle.pop()
                if not candidate.closed:
                    conn = candidate
            if conn is None:
                conn = await self._connect()
                self._opened.add(conn)
            try:
                yield conn
            finally:
                if (
                    not self._closed
                    and not conn.closed
                    and conn.info.transaction_status == TransactionStatus.IDLE
                ):
                    self._idle.append(conn)
                else:
                    await _discard(conn)
        finally:
            slots.release()

    async def discard_idle(self) -> None:
        """Close the idle connections (after one of them was found dead)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await _discard(conn)

    async def close(self) -> None:
        """Close the idle connections now and the ones in use when they come back."""
        self._closed = True
        await self.discard_idle()

    def drop(self) -> None:
        """Close every connection of a pool whose loop has closed, without awaiting:
        nothing runs on a closed loop, so none of them is in use, and the server should
        not keep them until the garbage collector runs."""
        self._closed = True
        for conn in list(self._opened):  # before the idle list goes: it holds them
            if not conn.closed:
                conn.pgconn.finish()
        self._idle = []


class _InjectedPool:
    """A ``psycopg_pool`` pool the caller gave (and owns: never closed by the store)."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self.pool = pool

    def connection(
        self, timeout: float
    ) -> contextlib.AbstractAsyncContextManager[psycopg.AsyncConnection[Any]]:
        return self.pool.connection(timeout=timeout)

    async def discard_idle(self) -> None:
        await self.pool.check()

    async def close(self) -> None:
        """Left open: the caller owns it."""

    def drop(self) -> None:
        """Left alone: the caller owns it."""


_Pool = _OwnPool | _InjectedPool


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
            " SELECT %(sid)s, item.payload"
            " FROM serialized, json_array_elements(%(batch)s::json) WITH ORDINALITY"
            " AS item(payload, n)"
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
        pop = (
            "DELETE FROM {table} WHERE id = (SELECT id FROM {table} WHERE session_id = %(sid)s"
            " ORDER BY id DESC LIMIT 1 FOR UPDATE) RETURNING id, payload::text"
        )
        self.pop = render(pop)
        # The pop again behind the lock replace_items takes: a statement of its own, so
        # it reads what a replacement it waited for wrote.
        self.pop_locked = render(
            "SELECT pg_advisory_xact_lock(%(lock)s, hashtext(%(sid)s)); " + pop
        )
        self.clear = render("DELETE FROM {table} WHERE session_id = %(sid)s")
        # Serialised with add (the same advisory lock), then the rows swapped.
        self.replace = render(
            "SELECT pg_advisory_xact_lock(%(lock)s, hashtext(%(sid)s));"
            " DELETE FROM {table} WHERE session_id = %(sid)s;"
            " INSERT INTO {table} (session_id, payload)"
            " SELECT %(sid)s, item.payload"
            " FROM json_array_elements(%(batch)s::json) WITH ORDINALITY AS item(payload, n)"
            " ORDER BY item.n"
        )
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


def _versions(table: str) -> TableVersions:
    return TableVersions(table, MIGRATIONS_TABLE, SCHEMA_VERSION)


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

        async def taken() -> str | None:
            return table if await _exists(conn, table) else None

        async def apply(version: int) -> None:
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

        await _versions(table).migrate(await _schema_version(conn, table), taken=taken, apply=apply)


async def _check_schema(conn: psycopg.AsyncConnection[Any], table: str, url: str) -> None:
    """Refuse a ``table`` that is missing or not at ``SCHEMA_VERSION``, creating nothing."""
    version = await _schema_version(conn, table) if await _exists(conn, MIGRATIONS_TABLE) else 0
    _versions(table).require_current(version, f"PostgreSQL at {url}")


async def _schema_version(conn: psycopg.AsyncConnection[Any], table: str) -> int:
    """The version of ``table`` recorded in the migrations table (0: none); a version newer
    than this library's is refused."""
    cursor = await conn.execute(
        sql.SQL("SELECT coalesce(max(version), 0) FROM {} WHERE table_name = %s").format(
            sql.Identifier(MIGRATIONS_TABLE)
        ),
        (table,),
    )
    row = await cursor.fetchone()
    return _versions(table).checked(0 if row is None else int(row[0]))


async def _exists(conn: psycopg.AsyncConnection[Any], table: str) -> bool:
    cursor = await conn.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (sql.Identifier(table).as_string(conn),)
    )
    row = await cursor.fetchone()
    return bool(row and row[0])


def _int32(value: int) -> int:
    """An unsigned 32-bit value as the signed int4 PostgreSQL's advisory locks take."""
    return value - (1 << 32) if value >= 1 << 31 else value
