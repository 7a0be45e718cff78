"""Session URLs: ``open_store`` and ``open_session`` pick the backend and its options."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from agent_sessions import SessionConfigError, SessionSettings, SQLiteSession, SQLiteStore
from agent_sessions.postgres import PostgresSession, PostgresStore
from agent_sessions.redis import RedisSession, RedisStore
from agent_sessions.urls import open_session, open_store


async def test_sqlite_url_with_three_slashes_names_a_relative_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite:///relative.db?table_prefix=app_")
    assert isinstance(store, SQLiteStore)
    await store.session("s").add_items([{"n": 1}])
    await store.close()
    assert (tmp_path / "relative.db").exists()
    assert store.table_prefix == "app_"


async def test_sqlite_url_with_four_slashes_names_an_absolute_file(tmp_path: Path) -> None:
    session = open_session(f"sqlite:///{tmp_path / 'abs.db'}", "s")
    assert isinstance(session, SQLiteSession)
    await session.add_items([{"n": 1}])
    await session.close()
    assert (tmp_path / "abs.db").exists()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:"])
async def test_sqlite_url_without_a_path_is_in_memory(url: str) -> None:
    store = open_store(url)
    assert isinstance(store, SQLiteStore)
    assert store.db_path == ":memory:"
    await store.close()


def test_sqlite_url_with_a_host_is_refused() -> None:
    with pytest.raises(ValueError, match="a SQLite URL has no host"):
        open_store("sqlite://host/x.db")


def test_sqlite_url_with_an_unknown_option_is_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown option\(s\) in SQLite URL: durable"):
        open_store("sqlite:///x.db?durable=1")


async def test_redis_url_options_configure_the_store_and_stay_out_of_the_driver() -> None:
    store = open_store("redis://127.0.0.1:6379/0?key_prefix=app:&ttl=90&socket_timeout=5")
    assert isinstance(store, RedisStore)
    assert (store.key_prefix, store.ttl_ms) == ("app:", 90_000)
    await store.close()


async def test_redis_url_layout_chooses_the_sdks_keys(redis_url: str, redis_prefix: str) -> None:
    prefix = redis_prefix.rstrip(":")
    store = open_store(f"{redis_url}?layout=sdk&key_prefix={prefix}")
    assert isinstance(store, RedisStore)
    assert (store.layout, store.key_prefix) == ("sdk", prefix)
    await store.session("u").add_items([{"role": "user", "content": "hi"}])
    sdk_form = RedisSession.from_url("u", url=redis_url, key_prefix=prefix)
    assert await sdk_form.get_items() == [{"role": "user", "content": "hi"}]
    await sdk_form.close()
    await store.close()
    with pytest.raises(SessionConfigError, match="layout must be one of"):
        open_store(f"{redis_url}?layout=auto")


def test_redis_ttl_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(ValueError, match="ttl must be a number of seconds"):
        open_store("redis://127.0.0.1/0?ttl=soon")


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
async def test_postgres_urls_open_a_postgres_store_on_the_named_table(scheme: str) -> None:
    store = open_store(f"{scheme}://u:pw@127.0.0.1:5432/db?table=app_items")
    assert isinstance(store, PostgresStore)
    assert store.table == "app_items"
    assert store.url == f"{scheme}://u:***@127.0.0.1:5432/db"
    await store.close()


def test_unknown_scheme_is_refused_with_the_known_ones_and_no_password() -> None:
    with pytest.raises(ValueError, match=r"unsupported session URL 'mongodb://u:\*\*\*@h/db'"):
        open_store("mongodb://u:secret@h/db")


async def test_redis_session_from_url_stores_items(redis_url: str, redis_prefix: str) -> None:
    url = f"{redis_url}?key_prefix={redis_prefix}"
    session = open_session(url, f"url-{uuid.uuid4().hex}", session_settings=SessionSettings(2))
    assert isinstance(session, RedisSession)
    await session.add_items([{"n": 1}, {"n": 2}, {"n": 3}])
    assert await session.get_items() == [{"n": 2}, {"n": 3}]
    await session.close()


async def test_postgres_session_from_url_stores_items(
    database_url: str, postgres_table: str
) -> None:
    sep = "&" if "?" in database_url else "?"
    session = open_session(f"{database_url}{sep}table={postgres_table}", f"url-{uuid.uuid4()}")
    assert isinstance(session, PostgresSession)
    await session.add_items([{"n": 1}])
    assert await session.get_items() == [{"n": 1}]
    await session.clear_session()
    await session.close()


# -- driver options byte for byte; unknown options and bad database numbers at open ------


def _with(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


async def test_postgres_options_reach_the_server_as_written(
    database_url: str, fresh_postgres_table: str
) -> None:
    # %20 must stay %20 (libpq does not read "+" as a space) and %3D an "=".
    url = _with(database_url, f"options=-c%20statement_timeout%3D1234&table={fresh_postgres_table}")
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    try:
        await store.session("s").add_items([{"n": 1}])
        async with store._connection(write=False) as call:  # a connection of the store's pool
            cursor = await call.db().execute("SHOW statement_timeout")
            assert await cursor.fetchone() == ("1234ms",)
    finally:
        await store.close()


@pytest.mark.parametrize(
    "query",
    [
        "options=-c%20statement_timeout%3D1234",
        "application_name=a+b%2Bc&sslmode=disable",
        "application_name=x@y&sslmode=prefer",
    ],
)
def test_driver_options_are_passed_on_byte_for_byte(query: str) -> None:
    url = f"postgresql://u:pw@127.0.0.1:5432/db?{query}&table=app_items&timeout=3"
    store = open_store(url)
    assert isinstance(store, PostgresStore)
    assert store._conninfo == f"postgresql://u:pw@127.0.0.1:5432/db?{query}"
    assert (store.table, store.timeout) == ("app_items", 3.0)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("redis://127.0.0.1:6379/abc", "'abc'"),
        ("redis://127.0.0.1:6379/-1", "'-1'"),
        ("redis://127.0.0.1:6379/0?db=x", "'db'"),
        ("redis://127.0.0.1:6379?db=-2", "db"),
        ("redis://127.0.0.1:6379/0?bogus=1", "'bogus'"),
        ("unix:///tmp/redis.sock?db=1&bogus=1", "'bogus'"),
        ("postgresql://u@127.0.0.1:5432/db?bogus=1", '"bogus"'),
        ("sqlite:///x.db?bogus=1", "bogus"),
    ],
)
def test_a_bad_database_number_or_an_unknown_option_is_refused_at_open(
    url: str, named: str
) -> None:
    with pytest.raises(SessionConfigError) as caught:
        open_store(url)
    assert named in str(caught.value)
    with pytest.raises(SessionConfigError, match=re.escape(named)):
        open_session(url, "s")


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/abc", "redis://127.0.0.1:6379/0?bogus=1"])
def test_the_redis_constructors_refuse_them_too(url: str) -> None:
    with pytest.raises(SessionConfigError):
        RedisStore(url)
    with pytest.raises(SessionConfigError):
        RedisSession("s", url)


@pytest.mark.parametrize("path", ["", "/", "/0", "/15", "/3/"])
def test_a_redis_database_number_or_none_is_accepted(path: str) -> None:
    assert isinstance(open_store(f"redis://127.0.0.1:6379{path}"), RedisStore)
