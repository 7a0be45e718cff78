"""Sessions in any database SQLAlchemy 2's asyncio extension speaks: MariaDB/MySQL,
PostgreSQL, SQLite.

Give a URL (``mysql+asyncmy://root@127.0.0.1:3306/test``,
``postgresql+psycopg://postgres@127.0.0.1/test``, ``sqlite+aiosqlite:///sessions.db``) or an
``AsyncEngine`` you own (never disposed by us). Items live in one table (default
``agent_sessions_sa_items``): an autoincrement id that orders them, the session id as its
UTF-8 bytes (a binary column: no collation folds ``"a"`` and ``"a "`` or ``"A"``
together, and a NUL is kept), and the item as JSON text, with an index on
``(session_id, id)``. A second table (``<table>_locks``) holds one row per session that
writers lock where a batch needs it to stay contiguous.

The store's own MariaDB/MySQL and PostgreSQL engines run in autocommit mode, so that a
read, an ``add_items`` and a ``pop_item`` are one statement and one round trip each. A
batch is one statement, stored whole or not at all, whose ids are drawn once it holds
the session's lock row: on PostgreSQL an ``INSERT ... ON CONFLICT DO UPDATE`` of the lock
row in its ``WITH``; on MariaDB 10.6+/MySQL 8 an ``INSERT ... SELECT`` from the lock row
``FOR UPDATE`` joined to the batch (``JSON_TABLE``), which the session's first write
precedes with the lock row's upsert; older servers (and a batch over 512 KiB) lock the
row and insert in one transaction. ``pop_item`` is one ``DELETE ... RETURNING`` on
PostgreSQL and MariaDB (MySQL and SQLite: lock row, select, delete), and when it finds
nothing, takes the lock row to tell an empty session from one a replacement refilled. On
SQLite and on an injected engine whose connections are not in autocommit mode the same
statements run in a transaction committed once they answered (on PostgreSQL at READ
COMMITTED, whatever level the engine begins at). A call as a whole is
bounded by ``timeout + socket_timeout``; a connection whose call failed other than by the
server's refusal is dropped, never reused.

Schema versions are tracked in ``agent_sessions_sa_migrations``; a table from a newer,
unknown version is refused, never rewritten, and a table of that name that this backend
did not create is refused too.

Driver for MariaDB/MySQL: ``asyncmy`` (``mysql+asyncmy://``; ``mysql://`` and
``mariadb://`` mean it too): it is the maintained asyncio driver with a compiled protocol
(Cython), where ``aiomysql`` is pure Python on top of PyMySQL. Any other asyncio driver
SQLAlchemy knows can be named in a URL given to :class:`SQLAlchemyStore`; the test suite
runs asyncmy, psycopg, asyncpg and aiosqlite. On asyncmy, psycopg and asyncpg autocommit
connections the statements of reads, adds and pops run on the pooled connection's driver
connection as the driver's own SQL (no compile, result or greenlet hop per statement),
unless someone watches them: an event listener on the engine, its
connection or its dialect, or ``echo`` (then SQLAlchemy executes them, its events fire).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

from ._json import decode_item, decode_items
from ._schema import TableVersions
from ._servers import (
    PerLoop,
    check_timeout,
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
from .protocol import Item, SessionSettings, SessionsPage

try:
    import sqlalchemy as sa
    from sqlalchemy import exc as sa_exc
    from sqlalchemy.dialects import mysql, postgresql, sqlite
    from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
except ImportError as exc:  # pragma: no cover - exercised in a venv without SQLAlchemy
    raise missing_driver("SQLAlchemy", "sqlalchemy", "sqlalchemy") from exc

__all__ = [
    "DEFAULT_TABLE",
    "MAX_SESSION_ID_BYTES",
    "MIGRATIONS_TABLE",
    "SCHEMA_VERSION",
    "SQLAlchemySession",
    "SQLAlchemyStore",
]

DEFAULT_TABLE = "agent_sessions_sa_items"
MIGRATIONS_TABLE = "agent_sessions_sa_migrations"
SCHEMA_VERSION = 1
DEFAULT_MAX_CONNECTIONS = 10
DEFAULT_TIMEOUT = 5.0
"""Seconds a call waits for a free pooled connection."""
DEFAULT_SOCKET_TIMEOUT = 20.0
"""Seconds a call may wait for the server beyond ``timeout`` (connecting and every
statement): a frozen or unreachable server gives ``BackendTimeoutError`` then."""
MAX_SESSION_ID_BYTES = 2048
"""The longest session id (UTF-8 bytes): what every database's ``(session_id, id)`` index
holds (InnoDB's limit is 3072 bytes per key)."""

# Derived names (<table>_locks, <table>_session_idx) stay within MySQL's 64 characters.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
_MYSQL = ("mysql", "mariadb")
# URL schemes that name a driver-less dialect: the asyncio driver we pick for it.
_DEFAULT_DRIVERS = {"mysql": "mysql+asyncmy", "mariadb": "mariadb+asyncmy"}
_DIALECT_NAMES = {
    "mysql": "MySQL/MariaDB",
    "mariadb": "MariaDB",
    "postgresql": "PostgreSQL",
    "sqlite": "SQLite",
}
_RETRIES = 5
"""Attempts of a write the database aborted as a deadlock victim (it stored nothing)."""
_ONE_STATEMENT_BYTES = 512 * 1024
"""The largest batch (payload bytes) MariaDB/MySQL get as one INSERT; a larger one runs in
a transaction (the driver splits a multi-row insert into statements of about 1 MB, and
the server refuses one larger than its ``max_allowed_packet``)."""


@dataclasses.dataclass(frozen=True)
class _DriverSQL:
    """A store's statements as the driver's own SQL (``%s`` parameters, in order)."""

    get_all: str
    get_latest: str
    mysql_add: str
    mariadb_pop: str
    pg_add: str
    pg_pop: str


_ON_DRIVER = ("asyncmy", "psycopg", "asyncpg")
"""The drivers whose connections run our statements directly (``%s`` parameters and an
async cursor; asyncpg: ``$n`` parameters, its own ``fetch``): no SQLAlchemy compile,
result or greenlet hop per statement."""


def _numbered(sql: str) -> str:
    """``sql`` with its ``%s`` parameters as asyncpg's ``$1``, ``$2``... (our statements
    hold no other ``%``)."""
    parts = sql.split("%s")
    return parts[0] + "".join(f"${n}{part}" for n, part in enumerate(parts[1:], start=1))


def _check_table(table: object) -> str:
    if not isinstance(table, str) or not _IDENTIFIER.fullmatch(table):
        raise SessionConfigError(
            f"table must be a plain SQL identifier (letters, digits, _; at most 48), got {table!r}"
        )
    if table.lower().startswith(("pg_", "sqlite_")):
        raise SessionConfigError(
            f"table must not start with 'pg_' or 'sqlite_' (system catalogs), got {table!r}"
        )
    return table


def _session_key() -> sa.types.TypeEngine[bytes]:
    return sa.LargeBinary().with_variant(mysql.VARBINARY(MAX_SESSION_ID_BYTES), *_MYSQL)


def _tables(table: str) -> tuple[sa.Table, sa.Table, sa.Table]:
    """The items, locks and migrations tables of a store, on a metadata of their own."""
    metadata = sa.MetaData()
    options: dict[str, Any] = {
        "mysql_engine": "InnoDB",
        "mysql_charset": "utf8mb4",
        "mysql_collate": "utf8mb4_bin",
    }
    items = sa.Table(
        table,
        metadata,
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("session_id", _session_key(), nullable=False),
        sa.Column("payload", sa.Text().with_variant(mysql.LONGTEXT(), *_MYSQL), nullable=False),
        sa.Index(f"{table}_session_idx", "session_id", "id"),
        **options,
    )
    locks = sa.Table(
        f"{table}_locks",
        metadata,
        sa.Column("session_id", _session_key(), primary_key=True),
        **options,
    )
    migrations = sa.Table(
        MIGRATIONS_TABLE,
        metadata,
        sa.Column("table_name", sa.String(64), primary_key=True),
        sa.Column("version", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("applied_at", sa.DateTime(), nullable=False, server_default=sa.func.now()),
        **options,
    )
    return items, locks, migrations


def _driver_url(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    return _DEFAULT_DRIVERS.get(scheme.lower(), scheme) + sep + rest


class SQLAlchemyStore(BaseStore):
    """Sessions stored in one table of any database SQLAlchemy's asyncio extension drives.

    Give either ``url`` (the store creates its engines and disposes of them in
    :meth:`close`) or ``engine`` (an ``AsyncEngine`` you own; never disposed by us). The
    tables are created (or migrated) on first use; with ``create=False`` nothing is
    created, and a missing table raises ``BackendDatabaseMissingError``. ``timeout`` bounds
    the wait for a free pooled connection; ``max_connections`` sizes the store's own pools.
    A call as a whole (its wait for a connection, connecting, every statement) takes at
    most ``timeout + socket_timeout`` seconds, then raises ``BackendTimeoutError`` naming
    the server; its connection is dropped, never reused.

    An engine's connections belong to the event loop that opened them, so the store keeps
    one engine per running loop: an injected engine serves the first loop that uses the
    store; other loops get an engine of the store's own on the same URL. Use a database
    file with SQLite: an in-memory database is private to one connection.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        engine: AsyncEngine | None = None,
        table: str = DEFAULT_TABLE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout: float = DEFAULT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        create: bool = True,
    ) -> None:
        if (url is None) == (engine is None):
            raise ValueError("SQLAlchemyStore needs exactly one of url= or engine=")
        self.table = _check_table(table)
        if (
            isinstance(max_connections, bool)
            or not isinstance(max_connections, int)
            or max_connections < 1
        ):
            raise SessionConfigError(
                f"max_connections must be an int >= 1, got {max_connections!r}"
            )
        self.timeout = check_timeout("timeout", timeout)
        self.socket_timeout = check_timeout("socket_timeout", socket_timeout)
        self._max_connections = max_connections
        self._create = bool(create)
        self._injected = engine
        if engine is not None:
            if not isinstance(engine, AsyncEngine):
                raise TypeError(
                    f"engine must be a sqlalchemy AsyncEngine, got {type(engine).__name__}"
                )
            self._url: sa.URL = engine.url
        else:
            if not isinstance(url, str):
                raise TypeError(f"url must be a str, got {type(url).__name__}")
            try:
                self._url = sa.make_url(_driver_url(url))
            except sa_exc.ArgumentError as exc:
                raise SessionConfigError(f"bad SQLAlchemy URL {mask_url(url)!r}: {exc}") from None
        self.url = self._url.render_as_string(hide_password=True)
        self._secrets = url_secrets(self._url.render_as_string(hide_password=False))
        self._dialect = self._url.get_backend_name()
        self._items, self._locks, self._migrations = _tables(self.table)
        self._versions = TableVersions(
            self.table, MIGRATIONS_TABLE, SCHEMA_VERSION, "agent-sessions' SQLAlchemy backend"
        )
        # An engine of ours is disposed of on its loop as that loop ends (asyncio.run per
        # call, Runner.run_sync): its connections close then, not at garbage collection.
        self._engines: PerLoop[AsyncEngine] = PerLoop(_drop_engine, at_loop_end=self._dispose)
        self._injected_free = engine is not None
        self._ready = False
        self._prepare_locks: PerLoop[asyncio.Lock] = PerLoop()
        self._statements()

    @property
    def location(self) -> str:
        return f"{self.url} table {self.table}"

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> SQLAlchemySession:
        """A handle on ``session_id`` in this store; closing it leaves the store open."""
        return SQLAlchemySession(session_id, store=self, session_settings=session_settings)

    def _statements(self) -> None:
        items, locks = self._items, self._locks
        sid = sa.bindparam("sid", type_=_session_key())
        self._get_all = (
            sa.select(items.c.id, items.c.payload)
            .where(items.c.session_id == sid)
            .order_by(items.c.id)
        )
        self._get_latest = (
            sa.select(items.c.id, items.c.payload)
            .where(items.c.session_id == sid)
            .order_by(items.c.id.desc())
            .limit(sa.bindparam("n", type_=sa.BigInteger()))  # limits up to MAX_INT64
        )
        self._newest = self._get_latest.with_for_update()
        # Set once the server is known (_prepare): MariaDB's DELETE ... RETURNING, or
        # PostgreSQL's below; None: a pop takes the lock row (MySQL, SQLite).
        self._pop_one_statement: sa.Executable | None = None
        # MariaDB 10.6+/MySQL 8: a batch as one INSERT ... SELECT that locks the session's
        # row before its ids are drawn (set in _prepare); None: the lock row and the
        # insert in a transaction.
        self._mysql_add: sa.Executable | None = None
        self._insert = sa.insert(items)
        self._delete_one = sa.delete(items).where(items.c.id == sa.bindparam("item_id"))
        # MariaDB only (MySQL has no DELETE ... RETURNING); the table name was checked.
        self._pop_returning = sa.text(
            f"DELETE FROM {self.table} WHERE session_id = :sid ORDER BY id DESC LIMIT 1"
            " RETURNING id, payload"
        ).bindparams(sa.bindparam("sid", type_=_session_key()))
        # The table name was checked. The lock row is read FOR UPDATE (a lock at any
        # isolation level) before a row is inserted: InnoDB draws the ids after it, while
        # the session's other writers wait, so the batch lands after every write that
        # held the row before, in its ORDER BY. No lock row (a session never written, or
        # cleared): nothing inserted, and _add_items creates it and runs this again.
        mysql_add = (
            f"INSERT INTO {self.table} (session_id, payload)"
            f" SELECT l.session_id, v.payload FROM {self.table}_locks AS l"
            " JOIN JSON_TABLE({batch}, '$[*]' COLUMNS (n FOR ORDINALITY,"
            " payload LONGTEXT CHARACTER SET utf8mb4 PATH '$' ERROR ON EMPTY ERROR ON ERROR))"
            " AS v WHERE l.session_id = {sid} ORDER BY v.n FOR UPDATE"
        )
        self._mysql_add_statement = sa.text(
            mysql_add.replace("{batch}", ":batch").replace("{sid}", ":sid")
        ).bindparams(sa.bindparam("sid", type_=_session_key()), sa.bindparam("batch"))
        # The same statements as the driver's own SQL (format paramstyle), run on the
        # pooled connection's driver connection by _on_driver where the driver is known.
        table = self.table
        self._driver_sql = _DriverSQL(
            get_all=f"SELECT id, payload FROM {table} WHERE session_id = %s ORDER BY id",
            get_latest=(
                f"SELECT id, payload FROM {table} WHERE session_id = %s ORDER BY id DESC LIMIT %s"
            ),
            # The batch's parameter comes first in the text, as in the tuple.
            mysql_add=mysql_add.replace("{batch}", "%s").replace("{sid}", "%s"),
            mariadb_pop=(
                f"DELETE FROM {table} WHERE session_id = %s ORDER BY id DESC LIMIT 1"
                " RETURNING id, payload"
            ),
            # Typed parameters: asyncpg infers a type from the statement, not the value.
            pg_add=(
                f"WITH locked AS (INSERT INTO {table}_locks (session_id) VALUES (%s::bytea)"
                " ON CONFLICT (session_id) DO UPDATE SET session_id = EXCLUDED.session_id"
                f" RETURNING 1) INSERT INTO {table} (session_id, payload)"
                " SELECT %s::bytea, item.payload FROM locked,"
                " unnest(%s::text[]) WITH ORDINALITY AS item(payload, n) ORDER BY item.n"
            ),
            pg_pop=(
                f"DELETE FROM {table} WHERE id = (SELECT id FROM {table}"
                " WHERE session_id = %s ORDER BY id DESC LIMIT 1 FOR UPDATE)"
                " RETURNING id, payload"
            ),
        )
        # asyncpg (the URL's driver, which the engine's dialect loads) takes them numbered.
        self._asyncpg = self._url.get_driver_name() == "asyncpg"
        if self._asyncpg:
            self._driver_sql = _DriverSQL(
                **{
                    name: _numbered(sql)
                    for name, sql in dataclasses.asdict(self._driver_sql).items()
                }
            )
        # Whether this store runs them (_prepare: asyncmy, psycopg or asyncpg).
        self._on_driver_ok = False
        self._clear_items = sa.delete(items).where(items.c.session_id == sid)
        self._clear_lock = sa.delete(locks).where(locks.c.session_id == sid)
        self._lock: sa.Executable
        if self._dialect in _MYSQL:
            upsert = mysql.insert(locks).values(session_id=sid)
            self._lock = upsert.on_duplicate_key_update(session_id=upsert.inserted.session_id)
        elif self._dialect == "postgresql":
            pg_upsert = postgresql.insert(locks).values(session_id=sid)
            self._lock = pg_upsert.on_conflict_do_update(
                index_elements=[locks.c.session_id],
                set_={"session_id": pg_upsert.excluded.session_id},
            )
            # The table name was checked (_check_table).
            table = self.table
            self._pg_add = sa.text(
                f"WITH locked AS (INSERT INTO {table}_locks (session_id)"
                " VALUES (CAST(:sid AS BYTEA)) ON CONFLICT (session_id)"
                " DO UPDATE SET session_id = EXCLUDED.session_id RETURNING 1)"
                f" INSERT INTO {table} (session_id, payload)"
                " SELECT CAST(:sid AS BYTEA), item.payload FROM locked,"
                " unnest(CAST(:payloads AS TEXT[])) WITH ORDINALITY AS item(payload, n)"
                " ORDER BY item.n"
            ).bindparams(
                sa.bindparam("sid", type_=sa.LargeBinary()),
                sa.bindparam("payloads", type_=postgresql.ARRAY(sa.Text())),
            )
            # FOR UPDATE makes a concurrent pop wait, then skip the row the other took.
            self._pop_one_statement = sa.text(
                f"DELETE FROM {table} WHERE id = (SELECT id FROM {table}"
                " WHERE session_id = :sid ORDER BY id DESC LIMIT 1 FOR UPDATE)"
                " RETURNING id, payload"
            ).bindparams(sa.bindparam("sid", type_=sa.LargeBinary()))
        elif self._dialect == "sqlite":
            lite_upsert = sqlite.insert(locks).values(session_id=sid)
            self._lock = lite_upsert.on_conflict_do_update(
                index_elements=[locks.c.session_id],
                set_={"session_id": lite_upsert.excluded.session_id},
            )
        else:
            raise SessionConfigError(
                f"the SQLAlchemy backend supports MariaDB/MySQL, PostgreSQL and SQLite, "
                f"not {self._dialect!r} ({self.url})"
            )

    # -- the store operations (BaseStore's hooks) ------------------------------------------
    #
    # On the store's own MariaDB/MySQL and PostgreSQL engines every connection is in
    # autocommit mode, so that what can be one statement is one round trip: a read, an
    # add (one INSERT, contiguous as explained in _add_items), a pop where the database
    # can delete and return in one statement. The rest (clear_session, a pop on MySQL, a
    # large batch) runs between an explicit BEGIN and COMMIT. On a connection that is not
    # in autocommit mode (SQLite, an engine you gave), the same statements run inside a
    # transaction committed once they answered.

    async def _get_items(self, session_id: str, limit: int | None) -> list[Item]:
        key = session_id.encode("utf-8")
        async with self._connection(write=False) as conn:
            if self._on_driver_ok and _autocommit(conn) and _unobserved(conn):
                if limit is None:
                    rows = await self._on_driver(conn, self._driver_sql.get_all, (key,))
                else:
                    sql = self._driver_sql.get_latest
                    rows = (await self._on_driver(conn, sql, (key, limit)))[::-1]
            elif limit is None:
                rows = (await conn.execute(self._get_all, {"sid": key})).all()
            else:
                result = await conn.execute(self._get_latest, {"sid": key, "n": limit})
                rows = result.all()[::-1]
        return decode_items([(row[0], row[1]) for row in rows], where=self._where)

    async def _add_items(self, session_id: str, encoded: list[str]) -> None:
        key = session_id.encode("utf-8")
        if self._dialect == "postgresql":
            # One statement: the upsert in its CTE locks the session's row until the
            # statement commits, and the ids are drawn after it, in the batch's order.
            await self._statement(
                self._pg_add,
                {"sid": key, "payloads": encoded},
                driver=(self._driver_sql.pg_add, (key, key, encoded)),
            )
            return
        one_statement = self._mysql_add
        if one_statement is not None:
            batch = _json_list(encoded)
            if len(batch) <= _ONE_STATEMENT_BYTES:
                params = {"sid": key, "batch": batch}
                driver = (self._driver_sql.mysql_add, (batch, key))
                for _ in range(_RETRIES):
                    # One INSERT ... SELECT that waits on the session's lock row before
                    # InnoDB draws its ids (see _statements): 0 rows when the row is
                    # missing, which one autocommitted upsert creates for the next try (a
                    # clear may delete it in between: then again).
                    if await self._statement(one_statement, params, rowcount=True, driver=driver):
                        return
                    await self._statement(self._lock, {"sid": key})
        rows = [{"session_id": key, "payload": payload} for payload in encoded]

        async def write(conn: AsyncConnection) -> None:
            await conn.execute(self._lock, {"sid": key})
            await conn.execute(self._insert, rows)

        await self._transaction(write)

    async def _pop_item(self, session_id: str) -> Item | None:
        key = session_id.encode("utf-8")
        while True:
            row = await self._pop_row(key)
            if row is None:
                return None
            item = decode_item(row[1], where=self._where(row[0]))
            if item is not None:
                return item
            # A corrupt newest row was removed and is skipped; the next one is the latest.

    async def _pop_row(self, key: bytes) -> tuple[int, Any] | None:
        """Delete the newest row of a session and return its ``(id, payload)``, or None
        when it has none."""
        one_statement = self._pop_one_statement
        if one_statement is not None:
            # PostgreSQL's FOR UPDATE and MariaDB's row lock make a concurrent pop wait,
            # then take the next row: each item is popped once.
            sql = (
                self._driver_sql.pg_pop
                if self._dialect == "postgresql"
                else self._driver_sql.mariadb_pop
            )
            row = await self._statement(
                one_statement, {"sid": key}, first=True, driver=(sql, (key,))
            )
            if row is not None:
                return row[0], row[1]
            # Nothing: the session is empty, or the statement waited for a replacement
            # that deleted every row it could see (PostgreSQL reads the rows as they were
            # when the statement began, not those the replacement wrote). The lock row,
            # which a replacement holds to its end, tells them apart.

        async def pop(conn: AsyncConnection) -> tuple[int, Any] | None:
            # The session's lock row serializes pops with every other writer.
            await conn.execute(self._lock, {"sid": key})
            newest = (await conn.execute(self._newest, {"sid": key, "n": 1})).first()
            if newest is None:
                # Empty: no lock row is left behind (as after clear_session).
                await conn.execute(self._clear_lock, {"sid": key})
                return None
            await conn.execute(self._delete_one, {"item_id": newest[0]})
            return newest[0], newest[1]

        popped: tuple[int, Any] | None = await self._transaction(pop)
        return popped

    async def _clear_session(self, session_id: str) -> None:
        key = session_id.encode("utf-8")

        async def clear(conn: AsyncConnection) -> None:
            # The lock first, as writers take it: a clear never deadlocks with them.
            await conn.execute(self._lock, {"sid": key})
            await conn.execute(self._clear_items, {"sid": key})
            await conn.execute(self._clear_lock, {"sid": key})

        await self._transaction(clear)

    async def _replace_items(self, session_id: str, encoded: list[str]) -> None:
        key = session_id.encode("utf-8")
        rows = [{"session_id": key, "payload": payload} for payload in encoded]

        async def replace(conn: AsyncConnection) -> None:
            # _clear_session then _add_items in one transaction: the old rows or the new.
            await conn.execute(self._lock, {"sid": key})
            await conn.execute(self._clear_items, {"sid": key})
            if rows:
                await conn.execute(self._insert, rows)
            else:
                await conn.execute(self._clear_lock, {"sid": key})

        await self._transaction(replace)

    async def _list_sessions(self, prefix: str, cursor: str | None, limit: int) -> SessionsPage:
        # Ids in byte order of their UTF-8 encoding (a binary column), which is the code
        # point order of Python's str comparison.
        column = self._items.c.session_id
        query = sa.select(column).distinct().order_by(column).limit(limit + 1)
        if cursor is None or cursor < prefix:
            query = query.where(column >= prefix.encode("utf-8"))
        else:
            query = query.where(column > cursor.encode("utf-8"))
        if prefix:
            # UTF-8 never holds 0xff: the ids starting with the prefix sort below this.
            raw = prefix.encode("utf-8")
            query = query.where(column < raw[:-1] + bytes([raw[-1] + 1]))
        async with self._connection(write=False) as conn:
            rows = (await conn.execute(query)).all()
        ids = [bytes(row[0]).decode("utf-8") for row in rows]
        if len(ids) > limit:
            return SessionsPage(ids[:limit], ids[limit - 1])
        return SessionsPage(ids, None)

    async def _close(self) -> None:
        """Dispose of every engine this store created, each on its own loop (an injected
        engine stays open)."""
        await self._engines.close_all(self._dispose, self.timeout + 5)

    async def _dispose(self, engine: AsyncEngine) -> None:
        """Close the connections of an engine of ours (an injected one stays open)."""
        if engine is not self._injected:
            await engine.dispose()

    # -- connections and errors ------------------------------------------------------------

    def _where(self, item_id: int) -> str:
        return f"{self.url} table {self.table} id {item_id}"

    def _new_engine(self) -> AsyncEngine:
        if self._injected_free and self._injected is not None:
            self._injected_free = False
            return self._injected
        # Every connection of ours comes back with its transaction ended (committed, or
        # rolled back by SQLAlchemy's Connection on close): the pool's own rollback on
        # return would only cost a round trip per call.
        kwargs: dict[str, Any] = {"pool_reset_on_return": None}
        if self._dialect != "sqlite":
            # Autocommit: a statement is its own transaction, one round trip (no BEGIN,
            # COMMIT or ROLLBACK around a read); transactions begin explicitly.
            kwargs.update(
                pool_size=self._max_connections,
                max_overflow=0,
                pool_timeout=self.timeout,
                isolation_level="AUTOCOMMIT",
                skip_autocommit_rollback=True,
            )
        try:
            return create_async_engine(self._url, **kwargs)
        except ImportError as exc:
            raise ImportError(
                f"the SQLAlchemy backend cannot load the driver of {self.url}: {exc} "
                f'(pip install "agent-sessions[sqlalchemy]" brings asyncmy and aiosqlite)'
            ) from exc

    def _engine(self) -> AsyncEngine:
        return self._engines.get(self._new_engine)

    @asynccontextmanager
    async def _connection(self, *, write: bool) -> AsyncIterator[AsyncConnection]:
        """A pooled connection of the running loop's engine, the tables ready, the whole
        call bounded by ``timeout + socket_timeout``, every driver error turned into a
        ``SessionError``. A connection whose call failed other than by the server's
        refusal (cut, cancelled, timed out) is dropped: a reply still on its way must
        never reach the next call."""
        engine = self._engine()
        connected = False
        try:
            async with deadline(self.timeout + self.socket_timeout):
                if not self._ready:
                    async with self._prepare_locks.get(asyncio.Lock):
                        if not self._ready:
                            await self._prepare(engine)
                async with engine.connect() as conn:
                    connected = True
                    try:
                        yield conn
                    except BaseException as exc:
                        if not isinstance(exc, (sa_exc.DBAPIError, SessionError)):
                            await _drop(conn)
                        raise
        except SessionError:
            raise
        except TimeoutError as exc:
            raise BackendTimeoutError(
                f"{self._server} did not answer within {self.timeout + self.socket_timeout:g}s",
                may_have_written=write and connected,
            ) from exc
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            raise self._translate(exc, connected=connected, write=write) from exc

    async def _statement(
        self,
        statement: sa.Executable,
        params: dict[str, Any],
        *,
        first: bool = False,
        rowcount: bool = False,
        driver: tuple[str, tuple[Any, ...]] | None = None,
    ) -> Any:
        """Run one writing statement as a transaction of its own (the first row it returns
        with ``first``, the number of rows it wrote with ``rowcount``): alone on an
        autocommit connection (as ``driver``'s SQL and parameters on the driver's own
        connection where _on_driver can), else committed once it answered."""

        async def run(conn: AsyncConnection) -> Any:
            if (
                driver is not None
                and self._on_driver_ok
                and _autocommit(conn)
                and _unobserved(conn)
            ):
                sql, values = driver
                if rowcount:
                    return await self._on_driver(conn, sql, values, rowcount=True)
                rows = await self._on_driver(conn, sql, values)
                return rows[0] if first and rows else None
            result = await conn.execute(statement, params)
            if rowcount:
                return result.rowcount
            return result.first() if first else None

        return await self._transaction(run, single=True)

    async def _transaction(
        self, work: Callable[[AsyncConnection], Any], *, single: bool = False
    ) -> Any:
        """Run ``work`` in one transaction, committed only once it returned; retried when
        the database chose it as a deadlock victim (rolled back: nothing was stored).
        ``single``: ``work`` runs one statement, which on an autocommit connection is a
        transaction already."""
        for attempt in range(_RETRIES):
            try:
                async with self._connection(write=True) as conn:
                    if not _autocommit(conn):
                        if self._dialect == "postgresql":
                            # An engine you gave may begin at REPEATABLE READ or
                            # SERIALIZABLE, where a writer that waited for the session's
                            # lock row fails to serialize: ours run at READ COMMITTED, as a
                            # statement on the store's autocommit engines does (set on
                            # the driver connection, no round trip; the pool resets it).
                            await conn.execution_options(isolation_level="READ COMMITTED")
                        async with conn.begin():
                            return await work(conn)
                    if single:
                        return await work(conn)
                    await conn.exec_driver_sql("BEGIN")
                    try:
                        result = await work(conn)
                        await conn.exec_driver_sql("COMMIT")
                    except BaseException as exc:
                        await _abandon(conn, exc)
                        raise
                    return result
            except SessionBackendError as exc:
                if attempt + 1 == _RETRIES or not _is_deadlock(exc.__cause__):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _on_driver(
        self,
        conn: AsyncConnection,
        sql: str,
        params: tuple[Any, ...],
        *,
        rowcount: bool = False,
    ) -> Any:
        """Run ``sql`` on the driver connection under ``conn`` (an autocommit one: the
        statement is its own transaction) and return its rows, or with ``rowcount`` the
        number it wrote. A driver error leaves as SQLAlchemy's ``DBAPIError`` would,
        its connection dropped where the driver says it is lost (``_connection`` drops
        it on anything else: a cancellation, a timeout)."""
        fairy = await conn.get_raw_connection()
        driver: Any = fairy.driver_connection
        if self._asyncpg:
            assert not rowcount, "asyncpg serves PostgreSQL, whose statements return rows"
            error: Exception
            try:
                # A prepared statement of asyncpg's own cache; rows index as tuples do.
                return await driver.fetch(sql, *params)
            except Exception as exc:
                error = exc
                try:
                    # SQLAlchemy's adapter turns asyncpg's errors into its DBAPI's (with
                    # their SQLSTATE); anything else (a cut socket) comes back as it was.
                    cast(Any, fairy.dbapi_connection)._handle_exception(exc)
                except Exception as adapted:
                    error = adapted
                raise await _driver_error(conn, fairy, sql, params, error) from exc
        try:
            cursor = driver.cursor()
            try:
                await cursor.execute(sql, params)
                if rowcount:
                    return cursor.rowcount
                return await cursor.fetchall() if cursor.description else []
            finally:
                await cursor.close()
        except Exception as exc:
            raise await _driver_error(conn, fairy, sql, params, exc) from exc

    @property
    def _server(self) -> str:
        return f"{_DIALECT_NAMES.get(self._dialect, self._dialect)} at {self.url}"

    def _translate(self, exc: BaseException, *, connected: bool, write: bool) -> SessionError:
        where = self._server
        orig = getattr(exc, "orig", None) or exc
        text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        text = scrub(text, self._secrets)
        code = _error_code(orig)
        sqlstate = str(getattr(orig, "sqlstate", "") or "")
        lowered = text.lower()
        if code in (1044, 1045, 1698) or sqlstate.startswith("28"):
            return BackendAuthenticationError(f"{where} refused the credentials: {text}")
        if code == 1049 or sqlstate == "3D000" or "unable to open database" in lowered:
            return BackendDatabaseMissingError(f"{where}: the database does not exist: {text}")
        if not connected:
            return BackendUnreachableError(f"{where} is unreachable: {text}")
        if isinstance(exc, sa_exc.DBAPIError) and not exc.connection_invalidated:
            # The server refused the statement: it was not executed (or rolled back).
            return SessionBackendError(f"{where} refused the statement: {text}")
        return SessionBackendError(f"{where} failed: {text}", may_have_written=write)

    async def _prepare(self, engine: AsyncEngine) -> None:
        """Bring the tables to ``SCHEMA_VERSION`` once per store (serialized across the
        store's loops by a lock per loop and across clients by the database)."""
        connected = False
        try:
            async with engine.connect() as conn:
                connected = True
                if _autocommit(conn) and self._dialect != "sqlite":
                    # A migration is one transaction (on PostgreSQL, DDL included).
                    await conn.execution_options(isolation_level="READ COMMITTED")
                if self._create:
                    await self._migrate(conn)
                else:
                    await self._check_schema(conn)
                if self._dialect in _MYSQL:
                    await self._probe_mysql(conn)
                self._on_driver_ok = conn.dialect.driver in _ON_DRIVER and (
                    self._asyncpg == (conn.dialect.driver == "asyncpg")
                )
        except SessionError:
            raise
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            raise self._translate(exc, connected=connected, write=False) from exc
        self._ready = True

    async def _probe_mysql(self, conn: AsyncConnection) -> None:
        """What this MariaDB/MySQL server allows (from the version it announced, no round
        trip): DELETE ... RETURNING (MariaDB), JSON_TABLE (MariaDB 10.6, MySQL 8.0.4), which
        makes a batch one statement."""
        mariadb = bool(getattr(conn.dialect, "is_mariadb", False))
        if mariadb:
            self._pop_one_statement = self._pop_returning
        version = tuple(
            part for part in conn.dialect.server_version_info or () if isinstance(part, int)
        )
        if version >= ((10, 6) if mariadb else (8, 0, 4)):
            self._mysql_add = self._mysql_add_statement

    async def _migrate(self, conn: AsyncConnection) -> None:
        await self._server_lock(conn, acquire=True)
        # SQLite runs the whole migration in the one transaction that holds its lock.
        commit = conn.commit if self._dialect != "sqlite" else _nothing

        async def taken() -> str | None:
            names = await conn.run_sync(lambda sync: set(sa.inspect(sync).get_table_names()))
            ours = sorted({self._items.name, self._locks.name} & names)
            return ours[0] if ours else None

        async def apply(version: int) -> None:
            if version == 1:
                await conn.run_sync(self._items.create)
                await conn.run_sync(self._locks.create)
            await conn.execute(
                sa.insert(self._migrations).values(table_name=self.table, version=version)
            )
            await conn.commit()

        try:
            await conn.run_sync(self._migrations.create, checkfirst=True)
            await commit()
            await self._versions.migrate(await self._version(conn), taken=taken, apply=apply)
        finally:
            # A failed statement leaves PostgreSQL's open transaction unusable: end it first.
            await conn.rollback()
            await self._server_lock(conn, acquire=False)
            await conn.commit()

    async def _server_lock(self, conn: AsyncConnection, *, acquire: bool) -> None:
        """Serialize migrations across clients: a named lock on MySQL, an advisory lock on
        PostgreSQL, the database file's write lock on SQLite (until the commit)."""
        name = f"agent_sessions_sa:{self.table}"
        if self._dialect == "sqlite":
            if acquire:
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
        elif self._dialect in _MYSQL:
            if acquire:
                await conn.execute(sa.text("SELECT GET_LOCK(:name, 30)"), {"name": name})
            else:
                await conn.execute(sa.text("SELECT RELEASE_LOCK(:name)"), {"name": name})
        elif self._dialect == "postgresql":
            call = "pg_advisory_lock" if acquire else "pg_advisory_unlock"
            await conn.execute(sa.text(f"SELECT {call}(hashtext(:name))"), {"name": name})

    async def _version(self, conn: AsyncConnection) -> int:
        """The recorded version of this store's table (0: none); a newer one is refused."""
        result = await conn.execute(
            sa.select(sa.func.coalesce(sa.func.max(self._migrations.c.version), 0)).where(
                self._migrations.c.table_name == self.table
            )
        )
        return self._versions.checked(int(result.scalar_one()))

    async def _check_schema(self, conn: AsyncConnection) -> None:
        """Refuse a table that is missing or not at ``SCHEMA_VERSION``, creating nothing."""
        has = await conn.run_sync(lambda sync: sa.inspect(sync).has_table(MIGRATIONS_TABLE))
        self._versions.require_current(await self._version(conn) if has else 0, self._server)


async def _nothing() -> None:
    return None


def _autocommit(conn: AsyncConnection) -> bool:
    """Whether ``conn``'s driver connection is in autocommit mode (no round trip)."""
    sync = conn.sync_connection
    driver = None if sync is None else sync.connection.dbapi_connection
    if driver is None:
        return False
    try:
        return bool(conn.dialect.detect_autocommit_setting(driver))
    except NotImplementedError:
        return False


def _unobserved(conn: AsyncConnection) -> bool:
    """Whether no one watches ``conn``'s statements: no event listener on it, its engine
    or its dialect (tracing, query logging, a statement comment: on an engine you gave)
    and no ``echo``. Only then may a statement bypass SQLAlchemy's execution for the
    driver's own (the checks SQLAlchemy's execution makes itself, no round trip)."""
    sync = conn.sync_connection
    if sync is None:
        return False
    return not (
        sync._has_events or sync.engine._has_events or sync.dialect._has_events or sync._echo
    )


async def _abandon(conn: AsyncConnection, exc: BaseException) -> None:
    """End an explicit transaction that failed: roll it back where the server refused a
    statement (the connection works); otherwise (cut, cancelled, timed out) drop the
    connection, which the server then rolls back: it never returns to the pool inside a
    transaction."""
    if conn.invalidated:
        return
    if isinstance(exc, sa_exc.DBAPIError) and not exc.connection_invalidated:
        try:
            await conn.exec_driver_sql("ROLLBACK")
            return
        except sa_exc.SQLAlchemyError:
            pass
    await _drop(conn)


async def _drop(conn: AsyncConnection) -> None:
    """Close ``conn``'s driver connection without a word to the server (which may not
    answer), never to be pooled again."""
    if not conn.invalidated:
        with contextlib.suppress(Exception):
            await conn.invalidate()


def _drop_engine(engine: AsyncEngine) -> None:
    """Forget the pooled connections of an engine whose loop has closed (nothing can be
    awaited there any more); the garbage collector closes them."""
    engine.sync_engine.dispose(close=False)


async def _driver_error(
    conn: AsyncConnection, fairy: Any, sql: str, params: tuple[Any, ...], exc: Exception
) -> sa_exc.StatementError:
    """What SQLAlchemy's own execution makes of a driver error, the connection dropped
    where the driver says it is lost."""
    dbapi_error: type[Exception] = conn.dialect.loaded_dbapi.Error
    lost = not isinstance(exc, dbapi_error) or conn.dialect.is_disconnect(
        cast(Any, exc), fairy.dbapi_connection, None
    )
    if lost:
        await _drop(conn)
    return sa_exc.DBAPIError.instance(
        sql,
        params,
        exc,
        dbapi_error,
        hide_parameters=True,
        connection_invalidated=lost,
        dialect=conn.dialect,
    )


def _json_list(texts: list[str]) -> str:
    """``texts`` as one JSON array of strings (unicode as is), for JSON_TABLE."""
    return json.dumps(texts, ensure_ascii=False, separators=(",", ":"))


def _error_code(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _is_deadlock(exc: BaseException | None) -> bool:
    orig = getattr(exc, "orig", None) or exc
    if orig is None:
        return False
    sqlstate = str(getattr(orig, "sqlstate", "") or "")
    return _error_code(orig) in (1205, 1213) or sqlstate in ("40P01", "40001")


class SQLAlchemySession(BaseSession[SQLAlchemyStore]):
    """One conversation in a database reached through SQLAlchemy.

    ``SQLAlchemySession("user_123", "mysql+asyncmy://...")`` opens its own store (disposed
    of with the session); ``store.session("user_123")`` borrows a shared one. Keyword
    arguments ``engine``, ``table``, ``max_connections``, ``timeout`` and ``socket_timeout``
    are those of
    :class:`SQLAlchemyStore`. Session ids longer than ``MAX_SESSION_ID_BYTES`` in UTF-8
    are refused here with ``InvalidSessionIdError``.
    """

    def __init__(
        self,
        session_id: str,
        url: str | None = None,
        *,
        engine: AsyncEngine | None = None,
        store: SQLAlchemyStore | None = None,
        table: str = DEFAULT_TABLE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout: float = DEFAULT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        session_settings: SessionSettings | None = None,
    ) -> None:
        def own_store() -> tuple[SQLAlchemyStore, Release]:
            if url is None and engine is None:
                raise SessionConfigError("SQLAlchemySession needs a url, an engine or a store")
            opened = SQLAlchemyStore(
                url,
                engine=engine,
                table=table,
                max_connections=max_connections,
                timeout=timeout,
                socket_timeout=socket_timeout,
            )
            return opened, opened.close

        if store is not None:
            self.refuse_options_with_store(
                url=url is not None,
                engine=engine is not None,
                table=table != DEFAULT_TABLE,
                max_connections=max_connections != DEFAULT_MAX_CONNECTIONS,
                timeout=timeout != DEFAULT_TIMEOUT,
                socket_timeout=socket_timeout != DEFAULT_SOCKET_TIMEOUT,
            )
        super().__init__(
            session_id,
            store=store if store is not None else own_store,
            session_settings=session_settings,
        )

    @classmethod
    def check_session_id(cls, session_id: object) -> str:
        """Also refuses an id longer than ``MAX_SESSION_ID_BYTES`` in UTF-8 (the index's
        limit on every database)."""
        checked = super().check_session_id(session_id)
        size = len(checked.encode("utf-8"))
        if size > MAX_SESSION_ID_BYTES:
            raise InvalidSessionIdError(
                f"session_id is {size} bytes in UTF-8; SQLAlchemy sessions take at most "
                f"{MAX_SESSION_ID_BYTES} (the limit of its index)"
            )
        return checked
