"""``list_sessions`` of the server stores: paginated, filtered by prefix, non-empty only."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from agent_sessions import SessionClosedError, SessionStore, SQLiteStore
from agent_sessions.postgres import PostgresStore
from agent_sessions.redis import RedisStore

Store = RedisStore | PostgresStore | SQLiteStore


@pytest.fixture(params=["redis", "postgres"])
async def store(request: pytest.FixtureRequest, redis_prefix: str) -> AsyncIterator[Store]:
    opened: Store
    if request.param == "redis":
        opened = RedisStore(request.getfixturevalue("redis_url"), key_prefix=redis_prefix)
    else:
        opened = PostgresStore(
            request.getfixturevalue("database_url"),
            table=request.getfixturevalue("postgres_table"),
        )
    yield opened
    await opened.close()


@pytest.fixture
def run_prefix() -> str:
    """Every id a test creates starts with this, so other tests' sessions never show."""
    return f"list-{uuid.uuid4().hex[:8]}-"


async def _create(store: Store, session_ids: list[str]) -> None:
    for session_id in session_ids:
        await store.session(session_id).add_items([{"id": session_id}])


async def _all_pages(store: Store, prefix: str, limit: int) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        page = await store.list_sessions(prefix=prefix, cursor=cursor, limit=limit)
        assert len(page.session_ids) <= limit
        pages.append(page.session_ids)
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


async def test_pages_together_hold_every_session_once(store: Store, run_prefix: str) -> None:
    ids = [f"{run_prefix}{n:02}" for n in range(23)]
    await _create(store, ids)
    pages = await _all_pages(store, run_prefix, limit=4)
    listed = [session_id for page in pages for session_id in page]
    assert sorted(listed) == ids


async def test_prefix_is_matched_literally(store: Store, run_prefix: str) -> None:
    await _create(store, [f"{run_prefix}a*[b]?", f"{run_prefix}ab", f"{run_prefix}a\\x"])
    page = await store.list_sessions(prefix=f"{run_prefix}a*[")
    assert page.session_ids == [f"{run_prefix}a*[b]?"]


async def test_emptied_sessions_are_not_listed(store: Store, run_prefix: str) -> None:
    await _create(store, [f"{run_prefix}kept", f"{run_prefix}cleared", f"{run_prefix}popped"])
    await store.session(f"{run_prefix}cleared").clear_session()
    await store.session(f"{run_prefix}popped").pop_item()
    page = await store.list_sessions(prefix=run_prefix)
    assert page.session_ids == [f"{run_prefix}kept"]
    assert page.next_cursor is None


@pytest.mark.parametrize("backend", ["sqlite", "redis", "postgres"])
@pytest.mark.parametrize(
    ("limit", "error"),
    [(0, ValueError), (-1, ValueError), (True, TypeError), (1.5, TypeError), ("3", TypeError)],
)
async def test_every_backend_checks_the_page_limit_alike(
    request: pytest.FixtureRequest, backend: str, limit: object, error: type[Exception]
) -> None:
    """One check shared by the three backends: ``TypeError`` for a non-int (``bool``
    included), ``ValueError`` below 1, both saying "an int >= 1"."""
    store: Store
    if backend == "sqlite":
        store = SQLiteStore()
    elif backend == "redis":
        store = RedisStore(
            request.getfixturevalue("redis_url"), key_prefix=request.getfixturevalue("redis_prefix")
        )
    else:
        store = PostgresStore(
            request.getfixturevalue("database_url"),
            table=request.getfixturevalue("postgres_table"),
        )
    try:
        with pytest.raises(error, match="limit must be an int >= 1"):
            await store.list_sessions(limit=limit)  # type: ignore[arg-type]
    finally:
        await store.close()


def test_store_satisfies_the_session_store_protocol(store: Store) -> None:
    assert isinstance(store, SessionStore)


async def test_listing_a_closed_store_raises_session_closed_error(store: Store) -> None:
    await store.close()
    with pytest.raises(SessionClosedError):
        await store.list_sessions()


async def test_pages_of_different_sizes_together_hold_every_session_once(
    store: Store, run_prefix: str
) -> None:
    ids = [f"{run_prefix}{n:02}" for n in range(30)]
    await _create(store, ids)
    listed: list[str] = []
    cursor: str | None = None
    for limit in [3, 1, 7, 2, 100]:
        page = await store.list_sessions(prefix=run_prefix, cursor=cursor, limit=limit)
        listed += page.session_ids
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(listed) == ids
