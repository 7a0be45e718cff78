"""The SQLAlchemy backend: the conformance kit over MariaDB, PostgreSQL and SQLite, and its
own behaviour (URLs, injected engines, schema versions, errors).

MariaDB is read from ``MYSQL_URL`` (default: the local server `.ci/services` starts),
PostgreSQL from ``DATABASE_URL``; a server that does not answer skips its tests (a failure
under CI, see tests/conftest.py). Every run uses tables of its own, dropped at the end.
The kit's frozen-server tests reach MariaDB and PostgreSQL through a
:class:`~tests.servers.freezer.FreezableProxy` of the test's own (the shared servers
themselves are never frozen); tests/servers/test_sqlalchemy_faults.py cuts and stops them
the same way.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import io
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from agent_sessions import (
    BackendDatabaseMissingError,
    BackendUnreachableError,
    ForeignDataError,
    InvalidSessionIdError,
    Item,
    Session,
    SessionConfigError,
    SessionSettings,
    UnsupportedSchemaError,
    open_session,
    open_store,
)
from agent_sessions.cli import main as cli_main
from agent_sessions.sqlalchemy import (
    MAX_SESSION_ID_BYTES,
    MIGRATIONS_TABLE,
    SCHEMA_VERSION,
    SQLAlchemySession,
    SQLAlchemyStore,
)
from agent_sessions.testing import SessionConformance

from .conftest import new_sa_table
from .test_conformance import UNREACHABLE_SECRET, FreezableServer, unreachable_url


@pytest.fixture(scope="session")
def mysql_kit_table(mysql_url: str, created_tables: list[tuple[str, str]]) -> str:
    """The table the kit's MariaDB sessions share in this run."""
    return new_sa_table(mysql_url, created_tables)


@pytest.fixture(scope="session")
def sa_postgres_kit_table(sa_postgres_url: str, created_tables: list[tuple[str, str]]) -> str:
    """The table the kit's PostgreSQL sessions share in this run."""
    return new_sa_table(sa_postgres_url, created_tables)


@pytest.fixture(scope="session")
def sa_asyncpg_kit_table(sa_asyncpg_url: str, created_tables: list[tuple[str, str]]) -> str:
    """The table the kit's PostgreSQL sessions through asyncpg share in this run."""
    return new_sa_table(sa_asyncpg_url, created_tables)


@pytest.fixture(params=["mariadb", "postgresql", "sqlite"])
def any_url(
    request: pytest.FixtureRequest, tmp_path: Path, created_tables: list[tuple[str, str]]
) -> tuple[str, str]:
    """(url, fresh table) on each database in turn."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}", "items"
    fixture = "mysql_url" if request.param == "mariadb" else "sa_postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url, new_sa_table(url, created_tables)


class _Kit(SessionConformance):
    supports_processes = True
    url: str
    table: str
    store: SQLAlchemyStore

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.store.session(session_id, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(SQLAlchemySession, url=self.url, table=self.table)

    failing: str

    def failing_store_address(self) -> tuple[str, str]:
        if self.url.startswith("sqlite"):
            path = Path(self.url.partition(":///")[2]).with_name("not-a-database.db")
            path.write_bytes(b"not a SQLite database, " * 100)
            self.failing = f"sqlite+aiosqlite:///{path}"
            return str(path), ""
        self.failing, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        return SQLAlchemySession(session_id, url=self.failing, table=self.table)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        """Insert ``raw`` as a foreign writer would. A text column of MariaDB or
        PostgreSQL refuses bytes that are not UTF-8 (or a NUL), so no such row can exist
        there and that test is skipped."""
        assert isinstance(session, SQLAlchemySession)
        await session.get_items(limit=1)  # the store creates its table on first use
        engine = create_async_engine(self.url)
        table = sa.table(self.table, sa.column("session_id"), sa.column("payload"))
        value: str | bytes = raw
        if not self.url.startswith("sqlite"):
            try:
                value = raw.decode("utf-8")
            except UnicodeDecodeError:
                pytest.skip(f"a text column cannot hold {raw!r}: no such row")
            if "\x00" in value:
                pytest.skip(f"a text column cannot hold {raw!r}: no such row")
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    sa.insert(table).values(
                        session_id=session.session_id.encode("utf-8"), payload=value
                    )
                )
        finally:
            await engine.dispose()


class _Freezable(FreezableServer, _Kit):
    """The kit's frozen-server tests through a proxy in front of the shared server."""

    # A write is one autocommit statement: one a frozen server holds runs when it
    # resumes, so a cancelled add_items may be stored then (whole), as on Redis.
    frozen_cancel_discards_write = False

    async def create_freezable_session(self, session_id: str) -> Session:
        url = await self.proxied(self.url)
        return SQLAlchemySession(session_id, url, table=self.table, timeout=1, socket_timeout=2)


class TestSQLAlchemyMariaDB(_Freezable):
    @pytest.fixture(autouse=True)
    async def sa_store(self, mysql_url: str, mysql_kit_table: str) -> AsyncIterator[None]:
        self.url, self.table = mysql_url, mysql_kit_table
        async with SQLAlchemyStore(mysql_url, table=self.table) as store:
            self.store = store
            yield


class TestSQLAlchemyPostgres(_Freezable):
    @pytest.fixture(autouse=True)
    async def sa_store(
        self, sa_postgres_url: str, sa_postgres_kit_table: str
    ) -> AsyncIterator[None]:
        self.url, self.table = sa_postgres_url, sa_postgres_kit_table
        async with SQLAlchemyStore(sa_postgres_url, table=self.table) as store:
            self.store = store
            yield


class TestSQLAlchemyPostgresAsyncpg(_Freezable):
    """PostgreSQL through asyncpg: its own statement API on the driver-connection path."""

    @pytest.fixture(autouse=True)
    async def sa_store(self, sa_asyncpg_url: str, sa_asyncpg_kit_table: str) -> AsyncIterator[None]:
        self.url, self.table = sa_asyncpg_url, sa_asyncpg_kit_table
        async with SQLAlchemyStore(sa_asyncpg_url, table=self.table) as store:
            self.store = store
            yield


class TestSQLAlchemySQLite(_Kit):
    @pytest.fixture(autouse=True)
    async def sa_store(self, tmp_path: Path) -> AsyncIterator[None]:
        self.url, self.table = f"sqlite+aiosqlite:///{tmp_path / 'sessions.db'}", "items"
        async with SQLAlchemyStore(self.url, table=self.table) as store:
            self.store = store
            yield


# -- the backend's own behaviour -------------------------------------------------------------


async def test_open_session_picks_the_backend_and_reads_our_options(
    any_url: tuple[str, str],
) -> None:
    url, table = any_url
    session = open_session(f"{url}?table={table}&max_connections=2", "from-url")
    try:
        assert isinstance(session, SQLAlchemySession)
        assert session.store.table == table
        await session.add_items([{"role": "user", "content": "ünïcode ☃ 😀"}])
        assert await session.get_items() == [{"role": "user", "content": "ünïcode ☃ 😀"}]
    finally:
        await session.close()


@pytest.fixture(params=["asyncmy", "psycopg", "asyncpg"])
def driver_url(
    request: pytest.FixtureRequest, created_tables: list[tuple[str, str]]
) -> tuple[str, str]:
    """(url, fresh table) through each driver whose connections run our statements."""
    fixture = {"asyncmy": "mysql_url", "psycopg": "sa_postgres_url", "asyncpg": "sa_asyncpg_url"}
    url: str = request.getfixturevalue(fixture[request.param])
    return url, new_sa_table(url, created_tables)


async def test_reads_adds_and_pops_run_on_the_driver_connection(
    driver_url: tuple[str, str],
) -> None:
    """On the store's own (autocommit, unwatched) engines of these drivers, reads, adds
    and pops run as the driver's own statements (``_on_driver``), with the results
    SQLAlchemy's execution gives."""
    url, table = driver_url
    async with SQLAlchemyStore(url, table=table) as store:
        session = store.session("on-driver")
        await session.add_items([{"n": 0}])  # the tables exist: the rest is the calls
        run: list[str] = []
        on_driver = store._on_driver

        async def recorded(conn: Any, sql: str, params: Any, **options: Any) -> Any:
            run.append(sql.split()[0])
            return await on_driver(conn, sql, params, **options)

        store._on_driver = recorded  # type: ignore[method-assign]
        await session.add_items([{"n": 1}, {"n": "é 👋"}])
        assert await session.get_items(limit=2) == [{"n": 1}, {"n": "é 👋"}]
        assert await session.pop_item() == {"n": "é 👋"}
        assert await session.get_items() == [{"n": 0}, {"n": 1}]
        assert run[0] in ("INSERT", "WITH")
        assert run[1:] == ["SELECT", "DELETE", "SELECT"]


async def test_a_driverless_mysql_url_means_asyncmy(
    mysql_url: str, created_tables: list[tuple[str, str]]
) -> None:
    plain = mysql_url.replace("mysql+asyncmy://", "mysql://", 1)
    table = new_sa_table(mysql_url, created_tables)
    store = open_store(f"{plain}?table={table}")
    try:
        assert isinstance(store, SQLAlchemyStore)
        assert store.url.startswith("mysql+asyncmy://")
        session = store.session("plain")
        await session.add_items([{"n": 1}])
        assert await session.get_items() == [{"n": 1}]
    finally:
        await store.close()


async def test_an_injected_engine_is_used_and_never_disposed(any_url: tuple[str, str]) -> None:
    url, table = any_url
    engine = create_async_engine(url)
    try:
        store = SQLAlchemyStore(engine=engine, table=table)
        session = store.session("injected")
        await session.add_items([{"n": 1}, {"n": 2}])
        await store.close()
        # Still ours: the engine answers after the store closed, and sees the items.
        async with engine.connect() as conn:
            count = await conn.execute(sa.text(f"SELECT count(*) FROM {table}"))
            assert count.scalar_one() == 2
        again = SQLAlchemySession("injected", engine=engine, table=table)
        assert await again.get_items(limit=1) == [{"n": 2}]
        await again.close()
        async with engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))
    finally:
        await engine.dispose()


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "transactions"])
async def test_an_injected_engines_statement_events_see_every_call(
    any_url: tuple[str, str], autocommit: bool
) -> None:
    """A listener on an engine you give (tracing, query logging, a statement comment) sees
    the statements of reads, adds and pops too, in autocommit mode as in a transaction:
    such an engine's calls go through SQLAlchemy's execution, not the driver's own."""
    url, table = any_url
    engine = create_async_engine(url, **({"isolation_level": "AUTOCOMMIT"} if autocommit else {}))
    seen: list[str] = []

    @sa.event.listens_for(engine.sync_engine, "before_cursor_execute")
    def record(*args: Any) -> None:
        seen.append(str(args[2]).upper())

    session = SQLAlchemySession("events", engine=engine, table=table)
    calls: list[tuple[Callable[[], Awaitable[object]], str]] = [
        (lambda: session.add_items([{"n": 1}, {"n": 2}]), "INSERT"),
        (lambda: session.add_items([{"n": 3}]), "INSERT"),  # the lock row exists now
        (lambda: session.get_items(limit=1), "SELECT"),
        (session.get_items, "SELECT"),
        (session.pop_item, "DELETE"),
        (session.pop_item, "DELETE"),
    ]
    try:
        await session.clear_session()
        for call, verb in calls:
            del seen[:]
            await call()
            assert any(verb in text for text in seen), (verb, seen)
        assert await session.get_items() == [{"n": 1}]
        await session.clear_session()
        await session.close()
    finally:
        await engine.dispose()


@pytest.mark.parametrize("isolation", ["REPEATABLE READ", "SERIALIZABLE"])
async def test_concurrent_writers_on_an_injected_postgres_engine_of_a_strict_isolation(
    sa_postgres_url: str, created_tables: list[tuple[str, str]], isolation: str
) -> None:
    """An engine you give may begin its transactions at a stricter level than READ
    COMMITTED: writers of one session that wait for its lock row then neither fail with
    a serialization error nor break a batch (the store's transactions run at READ
    COMMITTED, as on its own engines)."""
    table = new_sa_table(sa_postgres_url, created_tables)
    engine = create_async_engine(sa_postgres_url, isolation_level=isolation, pool_size=8)
    session = SQLAlchemySession("strict", engine=engine, table=table)
    writers, batches = 6, 4

    async def write(writer: int) -> None:
        for batch in range(batches):
            await session.add_items([{"w": writer, "b": batch, "k": k} for k in range(3)])

    try:
        for _ in range(3):
            await session.clear_session()
            await asyncio.gather(*(write(writer) for writer in range(writers)))
            items = await session.get_items()
            assert len(items) == writers * batches * 3
            for start in range(0, len(items), 3):
                assert [item["k"] for item in items[start : start + 3]] == [0, 1, 2]
                assert len({(item["w"], item["b"]) for item in items[start : start + 3]}) == 1
            await asyncio.gather(session.pop_item(), session.replace_items([{"n": 1}]))
            assert await session.get_items() in ([{"n": 1}], [])
        await session.close()
    finally:
        await engine.dispose()


async def test_a_rejected_batch_stores_nothing_and_leaves_the_order(
    any_url: tuple[str, str],
) -> None:
    url, table = any_url
    async with SQLAlchemyStore(url, table=table) as store:
        session = store.session("atomic")
        await session.add_items([{"n": 0}])
        with pytest.raises(TypeError):
            await session.add_items([{"n": 1}, {"bad": object()}])
        await session.add_items([{"n": 2}])
        assert await session.get_items() == [{"n": 0}, {"n": 2}]


async def test_create_false_on_a_missing_table_creates_nothing(any_url: tuple[str, str]) -> None:
    url, table = any_url
    async with SQLAlchemyStore(url, table=table, create=False) as store:
        with pytest.raises(BackendDatabaseMissingError, match=table):
            await store.session("x").get_items()
    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
        assert table not in names
    finally:
        await engine.dispose()


async def test_a_newer_schema_version_is_refused(any_url: tuple[str, str]) -> None:
    url, table = any_url
    async with SQLAlchemyStore(url, table=table) as store:
        await store.session("x").add_items([{"n": 1}])
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                sa.text(f"INSERT INTO {MIGRATIONS_TABLE} (table_name, version) VALUES (:t, :v)"),
                {"t": table, "v": SCHEMA_VERSION + 1},
            )
        async with SQLAlchemyStore(url, table=table) as newer:
            with pytest.raises(UnsupportedSchemaError, match="upgrade agent-sessions"):
                await newer.session("x").get_items()
        async with engine.connect() as conn:
            count = await conn.execute(sa.text(f"SELECT count(*) FROM {table}"))
            assert count.scalar_one() == 1  # untouched
    finally:
        await engine.dispose()


async def test_a_table_we_did_not_create_is_refused(any_url: tuple[str, str]) -> None:
    url, table = any_url
    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text(f"CREATE TABLE {table} (other INTEGER)"))
        async with SQLAlchemyStore(url, table=table) as store:
            with pytest.raises(ForeignDataError, match="choose another table name"):
                await store.session("x").add_items([{"n": 1}])
        async with engine.connect() as conn:
            columns = await conn.run_sync(lambda sync: sa.inspect(sync).get_columns(table))
        assert [column["name"] for column in columns] == ["other"]
    finally:
        await engine.dispose()


async def test_ids_differing_in_case_or_trailing_spaces_are_distinct_sessions(
    any_url: tuple[str, str],
) -> None:
    url, table = any_url
    async with SQLAlchemyStore(url, table=table) as store:
        ids = ["same", "Same", "same ", "same\x00"]
        for number, session_id in enumerate(ids):
            await store.session(session_id).add_items([{"n": number}])
        for number, session_id in enumerate(ids):
            assert await store.session(session_id).get_items() == [{"n": number}]
        page = await store.list_sessions(prefix="s")
        assert page.session_ids == ["same", "same\x00", "same "]


async def test_list_sessions_pages_through_ids_in_byte_order(any_url: tuple[str, str]) -> None:
    url, table = any_url
    async with SQLAlchemyStore(url, table=table) as store:
        ids = ["a/1", "a/2", "a/é", "a/😀", "b/1", "a"]
        for session_id in ids:
            await store.session(session_id).add_items([{"id": session_id}])
        seen: list[str] = []
        cursor = None
        while True:
            page = await store.list_sessions(prefix="a/", cursor=cursor, limit=2)
            seen += page.session_ids
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert seen == ["a/1", "a/2", "a/é", "a/😀"]


async def test_a_session_id_too_long_for_the_index_is_refused() -> None:
    with pytest.raises(InvalidSessionIdError, match=str(MAX_SESSION_ID_BYTES)):
        SQLAlchemySession("é" * (MAX_SESSION_ID_BYTES // 2 + 1), "sqlite+aiosqlite:///x.db")


async def test_an_unreachable_server_is_reported() -> None:
    async with SQLAlchemyStore("mysql+asyncmy://root@127.0.0.1:1/test") as store:
        with pytest.raises(BackendUnreachableError, match="unreachable"):
            await store.session("x").get_items()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"table": "bad-name"}, "plain SQL identifier"),
        ({"table": "pg_items"}, "system catalogs"),
        ({"max_connections": 0}, "max_connections"),
        ({"timeout": -1}, "timeout"),
        ({"socket_timeout": 0}, "socket_timeout must be a finite number"),
        ({"socket_timeout": float("inf")}, "socket_timeout must be a finite number"),
    ],
)
def test_bad_options_are_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SessionConfigError, match=message):
        SQLAlchemyStore("sqlite+aiosqlite:///x.db", **kwargs)  # type: ignore[arg-type]


def test_an_unsupported_dialect_is_refused() -> None:
    with pytest.raises(SessionConfigError, match="supports MariaDB/MySQL, PostgreSQL and SQLite"):
        SQLAlchemyStore("mssql+aioodbc://u@host/db")


def test_the_admin_cli_moves_sessions_through_every_database_byte_for_byte(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    mysql_url: str,
    sa_postgres_url: str,
    created_tables: list[tuple[str, str]],
) -> None:
    sessions: dict[str, list[Item]] = {
        "user 'one'; DROP TABLE x": [
            {"role": "user", "content": "héllo 👋 \u0000 end"},
            {"zeta": 1, "alpha": {"b": [1, 2.5, None, True], "a": 1e16}},
        ],
        "ユーザー-2": [{"type": "message", "content": [{"type": "text", "text": "x" * 5000}]}],
        "3": [{"n": i} for i in range(30)],
    }
    source = f"sqlite:///{tmp_path / 'source.db'}"
    targets = [
        f"{mysql_url}?table={new_sa_table(mysql_url, created_tables)}",
        f"{sa_postgres_url}?table={new_sa_table(sa_postgres_url, created_tables)}",
        f"sqlite+aiosqlite:///{tmp_path / 'target.db'}",
    ]

    async def fill() -> None:
        store = open_store(source)
        for session_id, items in sessions.items():
            await store.session(session_id).add_items(items)
        await store.close()

    def cli(argv: list[str], stdin: str) -> str:
        original = sys.stdin
        sys.stdin = io.StringIO(stdin)
        try:
            status = cli_main(argv)
        finally:
            sys.stdin = original
        out, err = capsys.readouterr()
        assert status == 0, err
        return out

    asyncio.run(fill())
    exported = cli(["export", source], "")
    assert len(exported.splitlines()) == 33
    for target in targets:
        cli(["import", target], exported)
        assert cli(["export", target], "").encode() == exported.encode()
        assert cli(["list", target], "").splitlines() == sorted(sessions)


# -- connections of loops that ended -----------------------------------------------------------


def _pg_connections(url: str, name: str) -> int:
    """How many connections the server holds with ``application_name`` ``name``."""

    async def count() -> int:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                found = await conn.scalar(
                    sa.text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :n"),
                    {"n": name},
                )
                return int(found or 0)
        finally:
            await engine.dispose()

    return asyncio.run(count())


def _mariadb_connections(url: str, ids: set[int]) -> int:
    """How many of the connections ``ids`` (``CONNECTION_ID()``) the server still holds."""

    async def count() -> int:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                listed = ", ".join(str(int(i)) for i in ids)
                found = await conn.scalar(
                    sa.text(
                        "SELECT count(*) FROM information_schema.PROCESSLIST"
                        f" WHERE ID IN ({listed})"
                    )
                )
                return int(found or 0)
        finally:
            await engine.dispose()

    return asyncio.run(count())


def _settled(count: Callable[[], int]) -> int:
    """``count()`` once it is 0, or after 5 s (the server notices a closed socket at once,
    but its list of connections lags by a few milliseconds)."""
    for _ in range(100):
        found = count()
        if found == 0:
            return 0
        time.sleep(0.05)
    return count()


@pytest.mark.parametrize("server", ["mariadb", "postgresql"])
def test_each_asyncio_run_closes_its_connections_when_its_loop_ends(
    server: str, request: pytest.FixtureRequest, created_tables: list[tuple[str, str]]
) -> None:
    """A sync program (``asyncio.run`` per call, ``Runner.run_sync``) gets an engine per
    loop: its connections are closed when that loop ends, not left to the garbage
    collector (disabled here), and a closed session holds none. Counted on the server:
    PostgreSQL by an ``application_name`` of the test's own, MariaDB by the ids of the
    connections the session used."""
    base: str = request.getfixturevalue("mysql_url" if server == "mariadb" else "sa_postgres_url")
    table = new_sa_table(base, created_tables)
    name = f"loops-{uuid.uuid4().hex[:8]}"
    url = (
        f"{base}{'&' if '?' in base else '?'}application_name={name}"
        if server != "mariadb"
        else base
    )
    session = SQLAlchemySession(f"u-{name}", url, table=table)
    ids: set[int] = set()

    async def turn(n: int) -> list[Item]:
        await session.add_items([{"n": n}])
        items = await session.get_items()
        if server == "mariadb":  # the pooled connection the calls ran on
            async with session.store._engine().connect() as conn:
                ids.add(int(await conn.scalar(sa.text("SELECT CONNECTION_ID()")) or 0))
        return items

    def open_connections() -> int:
        if server == "mariadb":
            return _mariadb_connections(base, ids)
        return _pg_connections(base, name)

    gc.disable()
    try:
        for n in range(3):
            assert asyncio.run(turn(n)) == [{"n": i} for i in range(n + 1)]
            assert _settled(open_connections) == 0, f"after loop {n}"
        assert ids or server != "mariadb"
        session.close()
        assert _settled(open_connections) == 0
    finally:
        gc.enable()
