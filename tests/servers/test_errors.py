"""Errors that name their cause at once, bad input refused where the session is made, and
options that are out of range: against the shared servers and servers of our own."""

from __future__ import annotations

import asyncio
import secrets
import threading
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
import redis.asyncio as aioredis

from agent_sessions import (
    BackendAuthenticationError,
    BackendDatabaseMissingError,
    BackendUnreachableError,
    ForeignDataError,
    InvalidSessionIdError,
    SessionConfigError,
    SQLiteSession,
    UnsupportedSchemaError,
)
from agent_sessions.postgres import (
    MAX_SESSION_ID_BYTES,
    MIGRATIONS_TABLE,
    SCHEMA_VERSION,
    PostgresSession,
    PostgresStore,
)
from agent_sessions.redis import SCHEMA_VERSION as REDIS_SCHEMA_VERSION
from agent_sessions.redis import RedisSession, RedisStore, session_key
from agent_sessions.urls import open_session, open_store

from .own_servers import PASSWORD, postgres_with_password, redis_with_password, spare_port


@pytest.fixture(scope="module")
def own_redis() -> Iterator[int]:
    with redis_with_password() as port:
        yield port


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[int]:
    with postgres_with_password() as port:
        yield port


def _new_id() -> str:
    return f"errors-{uuid.uuid4().hex}"


# -- the cause, named at once ------------------------------------------------------------


async def test_redis_wrong_password_is_an_authentication_error(own_redis: int) -> None:
    async with RedisStore(f"redis://default:wrong-pw@127.0.0.1:{own_redis}/0") as store:
        with pytest.raises(BackendAuthenticationError) as caught:
            await store.session(_new_id()).add_items([{"n": 1}])
    assert "wrong-pw" not in str(caught.value)
    assert "default:***@" in str(caught.value)
    assert not caught.value.may_have_written
    async with RedisStore(f"redis://default:{PASSWORD}@127.0.0.1:{own_redis}/0") as store:
        session = store.session(_new_id())
        await session.add_items([{"n": 1}])
        assert await session.get_items() == [{"n": 1}]


async def test_postgres_wrong_password_is_an_authentication_error(own_postgres: int) -> None:
    url = f"postgresql://postgres:wrong-pw@127.0.0.1:{own_postgres}/postgres"
    async with PostgresStore(url, timeout=30) as store:
        with pytest.raises(BackendAuthenticationError, match="refused the credentials") as caught:
            await store.session(_new_id()).add_items([{"n": 1}])
    assert "wrong-pw" not in str(caught.value)
    assert not caught.value.may_have_written
    good = f"postgresql://postgres:{PASSWORD}@127.0.0.1:{own_postgres}/postgres"
    async with PostgresStore(good) as store:
        session = store.session(_new_id())
        await session.add_items([{"n": 1}])
        assert await session.get_items() == [{"n": 1}]


async def test_postgres_missing_database_is_named(database_url: str) -> None:
    missing = f"no_such_db_{uuid.uuid4().hex[:8]}"
    url = database_url.rsplit("/", 1)[0] + f"/{missing}"
    async with PostgresStore(url, timeout=30) as store:
        with pytest.raises(BackendDatabaseMissingError, match=missing):
            await store.session(_new_id()).get_items()


async def test_redis_database_out_of_range_is_named(redis_url: str) -> None:
    url = redis_url.rsplit("/", 1)[0] + "/99"
    async with RedisStore(url) as store:
        with pytest.raises(BackendDatabaseMissingError, match="no such database"):
            await store.session(_new_id()).get_items()


@pytest.mark.parametrize("scheme", ["redis", "postgresql"])
async def test_refused_port_is_unreachable_and_wrote_nothing(scheme: str) -> None:
    url = f"{scheme}://u:pw@127.0.0.1:{spare_port()}/0"
    store = open_store(url + ("" if scheme == "redis" else "?timeout=30"))
    try:
        with pytest.raises(BackendUnreachableError) as caught:
            await store.session(_new_id()).add_items([{"n": 1}])
    finally:
        await store.close()
    assert not caught.value.may_have_written
    assert "u:***@" in str(caught.value)


# -- bad input, refused where the session is made --------------------------------------


def test_postgres_session_id_too_long_for_its_index_is_bad_input() -> None:
    store = PostgresStore("postgresql://postgres@127.0.0.1:1/none")
    with pytest.raises(InvalidSessionIdError, match=f"at most {MAX_SESSION_ID_BYTES}"):
        store.session("x" * 9000)
    with pytest.raises(ValueError, match="9000 bytes"):
        PostgresSession("é" * 4500, "postgresql://postgres@127.0.0.1:1/none")


async def test_postgres_session_id_of_the_longest_size_is_stored(
    database_url: str, postgres_table: str
) -> None:
    longest = secrets.token_hex(MAX_SESSION_ID_BYTES // 2)  # random: no compression helps
    async with PostgresStore(database_url, table=postgres_table) as store:
        session = store.session(longest)
        await session.add_items([{"n": 1}])
        assert await session.get_items() == [{"n": 1}]
        await session.clear_session()


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
def test_lone_surrogate_session_id_is_refused_at_creation(backend: str) -> None:
    bad = "user-\ud800"
    makers: dict[str, Callable[[], object]] = {
        "sqlite": lambda: SQLiteSession(bad),
        "redis": lambda: RedisSession(bad, "redis://127.0.0.1:1/0"),
        "postgres": lambda: PostgresSession(bad, "postgresql://postgres@127.0.0.1:1/none"),
    }
    with pytest.raises(InvalidSessionIdError, match="lone surrogate"):
        makers[backend]()


@pytest.mark.parametrize(
    "url",
    [
        "sqlite://u:Pw-123@host/x.db",
        "redis://u:Pw-123@h:notaport/0?ttl=inf",
        "postgresql://u:Pw-123@[::1/db",
    ],
)
def test_password_is_masked_in_every_url_error(url: str) -> None:
    with pytest.raises(ValueError, match=r"\S") as caught:
        open_store(url)
    assert "Pw-123" not in str(caught.value)


# -- options out of range: a clear error naming the option -------------------------------


@pytest.mark.parametrize(
    ("url", "option"),
    [
        ("redis://127.0.0.1:6379/0?ttl=inf", "ttl"),
        ("redis://127.0.0.1:6379/0?ttl=nan", "ttl"),
        ("redis://127.0.0.1:6379/0?key_prefix=", "key_prefix"),
        ("redis://127.0.0.1:6379/0?key_prefix=app", "key_prefix"),
        ("redis://127.0.0.1:6379/0?socket_timeout=0", "socket_timeout"),
        ("redis://127.0.0.1:6379/0?connect_timeout=soon", "connect_timeout"),
        ("postgresql://u@127.0.0.1/db?table=pg_class", "table"),
        ("postgresql://u@127.0.0.1/db?table=a-b", "table"),
        ("postgresql://u@127.0.0.1/db?statement_timeout=-1", "statement_timeout"),
        ("postgresql://u@127.0.0.1/db?max_connections=0", "max_connections"),
    ],
)
def test_option_out_of_range_names_the_option(url: str, option: str) -> None:
    with pytest.raises(SessionConfigError, match=option):
        open_store(url)
    with pytest.raises(ValueError, match=option):
        open_session(url, "s")


def test_empty_key_prefix_is_refused_by_the_constructor() -> None:
    with pytest.raises(SessionConfigError, match="key_prefix"):
        RedisStore("redis://127.0.0.1:1/0", key_prefix="")


async def test_postgres_table_of_a_newer_schema_raises_unsupported_schema_error(
    database_url: str, fresh_postgres_table: str
) -> None:
    async with PostgresStore(database_url, table=fresh_postgres_table) as store:
        await store.session(_new_id()).add_items([{"n": 1}])
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (table_name, version) VALUES (%s, %s)",
            (fresh_postgres_table, SCHEMA_VERSION + 1),
        )
    async with PostgresStore(database_url, table=fresh_postgres_table) as store:
        with pytest.raises(UnsupportedSchemaError, match="newer"):
            await store.session(_new_id()).get_items()


async def test_postgres_table_that_is_not_ours_is_refused_and_kept(
    database_url: str, fresh_postgres_table: str
) -> None:
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(f"CREATE TABLE {fresh_postgres_table} (x int)")
        await conn.execute(f"INSERT INTO {fresh_postgres_table} VALUES (7)")
    async with PostgresStore(database_url, table=fresh_postgres_table) as store:
        with pytest.raises(ForeignDataError, match="not created by agent-sessions"):
            await store.session(_new_id()).add_items([{"n": 1}])
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cursor = await conn.execute(f"SELECT x FROM {fresh_postgres_table}")
        assert await cursor.fetchall() == [(7,)]


# -- Redis keys ----------------------------------------------------------------------------


@pytest.fixture
async def nested(redis_url: str, redis_prefix: str) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    outer = RedisStore(redis_url, key_prefix=f"{redis_prefix}app:")
    inner = RedisStore(redis_url, key_prefix=f"{redis_prefix}app:user:")
    yield outer, inner
    await outer.close()
    await inner.close()


async def test_nested_key_prefixes_never_share_a_session(
    nested: tuple[RedisStore, RedisStore],
) -> None:
    outer, inner = nested
    tag = uuid.uuid4().hex
    in_outer = outer.session(f"user:{tag}")
    in_inner = inner.session(tag)
    await in_outer.add_items([{"store": "outer"}])
    await in_inner.add_items([{"store": "inner"}])
    assert await in_outer.get_items() == [{"store": "outer"}]
    assert await in_inner.get_items() == [{"store": "inner"}]
    assert (await outer.list_sessions(prefix="user:")).session_ids == [f"user:{tag}"]
    assert (await inner.list_sessions()).session_ids == [tag]
    await in_outer.clear_session()
    assert await in_inner.get_items() == [{"store": "inner"}]
    await in_inner.clear_session()


@pytest.mark.parametrize("session_id", ["a:b", "50%", "%3A", "a%253Ab:", "::"])
async def test_ids_with_the_escaped_characters_keep_apart_and_list_back(
    nested: tuple[RedisStore, RedisStore], session_id: str
) -> None:
    outer, _ = nested
    tag = uuid.uuid4().hex
    session = outer.session(f"{tag}{session_id}")
    await session.add_items([{"id": session_id}])
    page = await outer.list_sessions(prefix=tag)
    assert page.session_ids == [f"{tag}{session_id}"]
    assert session_key(outer.key_prefix, session.session_id).count(b":") == (
        outer.key_prefix.count(":")
    )
    await session.clear_session()


@pytest.mark.parametrize("ttl", [None, 600.0])
async def test_foreign_key_type_at_a_session_is_refused_and_never_deleted(
    redis_url: str, redis_prefix: str, redis_client: aioredis.Redis, ttl: float | None
) -> None:
    async with RedisStore(redis_url, key_prefix=redis_prefix, ttl=ttl) as store:
        session = store.session(_new_id())
        key = session_key(store.key_prefix, session.session_id)
        await redis_client.set(key, b"someone else's")
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "get_items": session.get_items,
            "add_items": lambda: session.add_items([{"n": 1}]),
            "pop_item": session.pop_item,
            "clear_session": session.clear_session,
        }
        for name, call in calls.items():
            with pytest.raises(ForeignDataError, match="left untouched"):
                await call()
            assert await redis_client.get(key) == b"someone else's", name
            assert await redis_client.pttl(key) == -1, name
    await redis_client.delete(key)


# -- close() from any loop closes everything ----------------------------------------------


async def _postgres_connections(database_url: str, name: str) -> int:
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cursor = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        )
        row = await cursor.fetchone()
        assert row is not None
        return int(row[0])


async def _redis_clients(redis_client: aioredis.Redis, name: str) -> int:
    return sum(1 for client in await redis_client.client_list() if client.get("name") == name)


@pytest.mark.parametrize("backend", ["redis", "postgres"])
async def test_close_from_another_loop_closes_the_clients_of_every_loop(
    request: pytest.FixtureRequest, backend: str, redis_client: aioredis.Redis
) -> None:
    name = f"i14-{uuid.uuid4().hex[:10]}"
    if backend == "redis":
        base: str = request.getfixturevalue("redis_url")
        store: RedisStore | PostgresStore = RedisStore(
            f"{base}?client_name={name}", key_prefix=request.getfixturevalue("redis_prefix")
        )

        async def count() -> int:
            return await _redis_clients(redis_client, name)
    else:
        database_url: str = request.getfixturevalue("database_url")
        sep = "&" if "?" in database_url else "?"
        store = PostgresStore(
            f"{database_url}{sep}application_name={name}",
            table=request.getfixturevalue("postgres_table"),
        )

        async def count() -> int:
            return await _postgres_connections(database_url, name)

    session = store.session(_new_id())
    await session.add_items([{"n": 0}])
    # A thread whose loop keeps running, as a worker thread of a web server would.
    worker_loop = asyncio.new_event_loop()
    worker = threading.Thread(target=worker_loop.run_forever, daemon=True)
    worker.start()
    try:
        items = asyncio.run_coroutine_threadsafe(session.get_items(), worker_loop)
        assert await asyncio.wrap_future(items) == [{"n": 0}]
        assert await count() >= 2
        await asyncio.get_running_loop().run_in_executor(None, asyncio.run, store.close())
        assert await count() == 0
    finally:
        worker_loop.call_soon_threadsafe(worker_loop.stop)
        worker.join(10)
        worker_loop.close()


def test_sqlite_password_in_a_url_is_masked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"u:\*\*\*@host") as caught:
        open_store("sqlite://u:Pw-123@host/x.db")
    assert "Pw-123" not in str(caught.value)


async def test_postgres_pools_of_closed_loops_release_their_connections(
    database_url: str, postgres_table: str
) -> None:
    name = f"i14-{uuid.uuid4().hex[:10]}"
    sep = "&" if "?" in database_url else "?"
    store = PostgresStore(f"{database_url}{sep}application_name={name}", table=postgres_table)
    session = store.session(_new_id())

    def one_loop_per_call() -> None:
        for n in range(6):
            asyncio.run(session.add_items([{"n": n}]))

    await asyncio.get_running_loop().run_in_executor(None, one_loop_per_call)
    # Each new loop released the connections of the loop before it; the last one's remain.
    assert await _postgres_connections(database_url, name) <= 1
    assert len(await session.get_items()) == 6
    await store.close()
    assert await _postgres_connections(database_url, name) == 0


async def test_redis_prefix_of_a_newer_key_layout_raises_unsupported_schema_error(
    redis_url: str, redis_prefix: str, redis_client: aioredis.Redis
) -> None:
    prefix = f"{redis_prefix}layout-{uuid.uuid4().hex[:8]}:"
    async with RedisStore(redis_url, key_prefix=prefix) as store:
        await store.session("s").add_items([{"n": 1}])
    assert await redis_client.get(prefix) == str(REDIS_SCHEMA_VERSION).encode()
    await redis_client.set(prefix, REDIS_SCHEMA_VERSION + 1)
    async with RedisStore(redis_url, key_prefix=prefix) as store:
        with pytest.raises(UnsupportedSchemaError, match="newer"):
            await store.session("s").get_items()
        with pytest.raises(UnsupportedSchemaError, match="newer"):
            await store.list_sessions()
    await redis_client.set(prefix, "not ours")
    async with RedisStore(redis_url, key_prefix=prefix) as store:
        with pytest.raises(ForeignDataError, match="left untouched"):
            await store.session("s").add_items([{"n": 2}])
    assert await redis_client.get(prefix) == b"not ours"
    assert await redis_client.lrange(session_key(prefix, "s"), 0, -1) == [b'{"n":1}']


async def test_postgres_role_that_does_not_exist_is_an_authentication_error(
    database_url: str, postgres_table: str
) -> None:
    parts = urlsplit(database_url)
    role = f"no_such_role_{uuid.uuid4().hex[:8]}"
    url = urlunsplit(parts._replace(netloc=f"{role}@{parts.hostname}:{parts.port or 5432}"))
    async with PostgresStore(url, table=postgres_table) as store:
        with pytest.raises(BackendAuthenticationError, match=role) as caught:
            await store.session("s").get_items()
    assert not isinstance(caught.value, BackendUnreachableError)
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert caught.value.may_have_written is False
