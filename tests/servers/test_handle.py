"""The one session handle of every backend (``agent_sessions.base``): the same checks in the
same order, ``close()`` at the call, and ownership, on SQLite, Redis and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import uuid
import warnings
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import (
    InvalidItemError,
    SessionClosedError,
    SessionConfigError,
    SQLiteSession,
    SQLiteStore,
)
from agent_sessions.base import MAX_INT64, BaseSession, BaseStore
from agent_sessions.postgres import PostgresSession, PostgresStore
from agent_sessions.redis import RedisSession, RedisStore


class Backend:
    """Stores and sessions of one backend, on the test servers (resolved without a loop)."""

    def __init__(self, request: pytest.FixtureRequest, name: str, directory: Path) -> None:
        self.name = name
        self.directory = directory
        if name == "redis":
            self.url: str = request.getfixturevalue("redis_url")
            self.option: str = request.getfixturevalue("redis_prefix")
        elif name == "postgres":
            self.url = request.getfixturevalue("database_url")
            self.option = request.getfixturevalue("postgres_table")

    def store(self) -> Any:
        if self.name == "sqlite":
            return SQLiteStore()
        if self.name == "redis":
            return RedisStore(self.url, key_prefix=self.option)
        return PostgresStore(self.url, table=self.option)

    def own_session(self, session_id: str | None = None) -> BaseSession[Any]:
        """A session that opens a store of its own (of a new id unless one is given)."""
        session_id = session_id or _new_id()
        if self.name == "sqlite":
            return SQLiteSession(session_id, self.directory / "own.db")
        if self.name == "redis":
            return RedisSession(session_id, self.url, key_prefix=self.option)
        return PostgresSession(session_id, self.url, table=self.option)


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return Backend(request, request.param, tmp_path)


@pytest.fixture
async def store(backend: Backend) -> AsyncIterator[Any]:
    opened = backend.store()
    yield opened
    await opened.close()


def _new_id() -> str:
    return f"handle-{uuid.uuid4().hex}"


# -- the order of checks: closed state first ---------------------------------------------


@pytest.mark.parametrize(
    ("call", "arguments"),
    [
        ("get_items", (-1,)),
        ("get_items", ("3",)),
        ("get_items", (0,)),
        ("add_items", ([42],)),
        ("add_items", ([],)),
        ("pop_item", ()),
        ("clear_session", ()),
    ],
)
async def test_a_session_of_a_closed_store_raises_closed_before_checking_arguments(
    store: Any, call: str, arguments: tuple[Any, ...]
) -> None:
    session = store.session(_new_id())
    await store.close()
    with pytest.raises(SessionClosedError, match="is closed"):
        await getattr(session, call)(*arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        {"limit": 0},
        {"limit": "3"},
        {"prefix": 1},
        {"cursor": 1},
    ],
)
async def test_listing_a_closed_store_raises_closed_before_checking_arguments(
    store: Any, arguments: dict[str, Any]
) -> None:
    await store.close()
    with pytest.raises(SessionClosedError):
        await store.list_sessions(**arguments)


async def test_arguments_are_checked_before_the_store_is_reached(store: Any) -> None:
    """Bad input never reaches the server: refused the same way on every backend."""
    session = store.session(_new_id())
    with pytest.raises(ValueError, match="limit must be >= 0"):
        await session.get_items(-1)
    with pytest.raises(TypeError, match="limit must be an int"):
        await session.get_items(2.5)
    with pytest.raises(InvalidItemError, match="item 0"):
        await session.add_items([b"bytes"])
    with pytest.raises(TypeError, match="prefix must be a str"):
        await store.list_sessions(prefix=b"a")
    with pytest.raises(TypeError, match="cursor must be a str or None"):
        await store.list_sessions(cursor=3)


async def test_a_huge_page_size_is_clamped_alike(store: Any) -> None:
    session_id = _new_id()
    await store.session(session_id).add_items([{"n": 1}])
    for limit in (MAX_INT64, 10**30):
        page = await store.list_sessions(prefix=session_id, limit=limit)
        assert (page.session_ids, page.next_cursor) == ([session_id], None)


async def test_a_huge_limit_reads_everything_alike(store: Any) -> None:
    session = store.session(_new_id())
    await session.add_items([{"n": 1}, {"n": 2}])
    for limit in (MAX_INT64, MAX_INT64 + 1, 10**30):
        assert await session.get_items(limit) == [{"n": 1}, {"n": 2}]


# -- close() ---------------------------------------------------------------------------------


async def test_close_closes_at_the_call_and_releases_when_awaited(backend: Backend) -> None:
    session = backend.own_session()
    await session.add_items([{"n": 1}])
    closing = session.close()
    with pytest.raises(SessionClosedError):
        await session.get_items()
    assert not session.store.closed  # released only when awaited
    await closing
    assert session.store.closed


def test_close_runs_in_asyncio_run(backend: Backend) -> None:
    session = backend.own_session()
    asyncio.run(session.add_items([{"n": 1}]))
    asyncio.run(session.close())
    assert session.store.closed
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())


def test_close_left_unawaited_warns_nothing(tmp_path: Path) -> None:
    session = SQLiteSession(_new_id(), tmp_path / "x.db")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # The SDK's examples call close() without await; an unawaited coroutine would warn
        # ("coroutine ... was never awaited") as soon as it is dropped.
        session.close()
        session.store.close()
    assert [str(warning.message) for warning in caught] == []
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())


def test_close_called_plainly_closes_on_every_backend(backend: Backend) -> None:
    """``session.close()`` without ``await``, as the Agents SDK's examples call it."""
    session = backend.own_session()
    asyncio.run(session.add_items([{"n": 1}]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.close()
    assert [str(warning.message) for warning in caught] == []
    for call in (session.get_items(), session.add_items([{"n": 2}]), session.clear_session()):
        with pytest.raises(SessionClosedError):
            asyncio.run(call)
    reopened = backend.own_session(session.session_id)
    assert asyncio.run(reopened.get_items()) == [{"n": 1}]  # nothing lost, nothing half-done
    asyncio.run(reopened.close())


async def test_default_session_settings_have_a_limit_on_every_backend(backend: Backend) -> None:
    session = backend.own_session()
    assert session.session_settings is not None
    assert session.session_settings.limit is None
    await session.add_items([{"n": 1}, {"n": 2}])
    assert await session.get_items() == [{"n": 1}, {"n": 2}]
    await session.close()


async def test_a_store_closed_at_the_call_refuses_its_sessions(store: Any) -> None:
    session = store.session(_new_id())
    closing = store.close()
    with pytest.raises(SessionClosedError):
        await session.add_items([{"n": 1}])
    await closing
    await store.close()  # idempotent


async def test_closing_a_session_on_a_given_store_leaves_the_store_open(store: Any) -> None:
    session = store.session(_new_id())
    await session.close()
    assert not store.closed
    other = store.session(session.session_id)
    await other.add_items([{"n": 1}])
    assert await other.get_items() == [{"n": 1}]


def test_the_closed_error_names_the_session_and_where_it_lives(tmp_path: Path) -> None:
    session = SQLiteSession("user_123", tmp_path / "named.db")
    asyncio.run(session.close())
    with pytest.raises(
        SessionClosedError, match=r"SQLiteSession is closed: 'user_123' \(.*named\.db\)"
    ):
        asyncio.run(session.get_items())


@pytest.mark.parametrize(
    "make",
    [
        lambda store: SQLiteSession("s", "other.db", store=store),
        lambda store: SQLiteSession("s", store=store, durable=True),
    ],
    ids=["db_path", "durable"],
)
def test_options_beside_a_store_are_named(make: Callable[[SQLiteStore], object]) -> None:
    with pytest.raises(SessionConfigError, match=r"pass either store= or (db_path|durable),"):
        make(SQLiteStore())


# -- a backend built on the base -----------------------------------------------------------


def test_every_backend_is_built_on_the_shared_handle() -> None:
    for store_class, session_class in [
        (SQLiteStore, SQLiteSession),
        (RedisStore, RedisSession),
        (PostgresStore, PostgresSession),
    ]:
        assert issubclass(store_class, BaseStore)
        assert issubclass(session_class, BaseSession)
        # The checks live in the base only: no backend redefines them.
        for name in ("get_items", "add_items", "pop_item", "clear_session", "close"):
            assert name not in vars(session_class), f"{session_class.__name__}.{name}"
        for name in ("list_sessions", "close", "check_open"):
            assert name not in vars(store_class), f"{store_class.__name__}.{name}"
