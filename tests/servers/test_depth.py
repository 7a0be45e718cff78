"""One nesting limit, enforced on write: every accepted item decodes at any stack depth,
and ``pop_item`` never deletes an item because the reader's stack was deep."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
import redis.asyncio as aioredis

from agent_sessions import InvalidItemError, Item, SQLiteStore
from agent_sessions._json import MAX_DEPTH
from agent_sessions.postgres import PostgresStore
from agent_sessions.redis import RedisStore, session_key

Store = SQLiteStore | RedisStore | PostgresStore
_T = TypeVar("_T")


def nested(depth: int) -> Item:
    """An item of ``depth`` levels of objects and arrays (the item itself is level 1)."""
    item: Any = "leaf"
    for level in range(depth - 1):
        item = {"d": item} if level % 2 else [item]
    return {"top": item}


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def make_store(request: pytest.FixtureRequest) -> Callable[[], Store]:
    """Resolved outside any event loop: the server fixtures ping with ``asyncio.run``."""
    if request.param == "sqlite":
        return SQLiteStore
    if request.param == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        return lambda: RedisStore(url, key_prefix=prefix)
    url, table = request.getfixturevalue("database_url"), request.getfixturevalue("postgres_table")
    return lambda: PostgresStore(url, table=table)


@pytest.fixture
async def store(make_store: Callable[[], Store]) -> AsyncIterator[Store]:
    opened = make_store()
    yield opened
    await opened.close()


def _at_a_deep_stack(work: Callable[[], _T], spare_frames: int = 120) -> _T:
    """``work()`` called with all but ``spare_frames`` of the recursion limit used up."""

    def descend(levels: int) -> _T:
        return work() if levels <= 0 else descend(levels - 1)

    used = len(_frames())
    return descend(sys.getrecursionlimit() - used - spare_frames)


def _frames() -> list[object]:
    frame, frames = sys._getframe(), []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back  # type: ignore[assignment]
    return frames


def _in_a_thread(work: Callable[[], _T]) -> _T:
    result: list[_T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            result.append(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "hung"
    if errors:
        raise errors[0]
    return result[0]


async def test_an_item_deeper_than_the_limit_is_refused_and_nothing_is_stored(
    store: Store,
) -> None:
    session = store.session(f"depth-{uuid.uuid4().hex}")
    with pytest.raises(InvalidItemError, match=rf"item 1 .*deeper than {MAX_DEPTH} levels"):
        await session.add_items([{"ok": 1}, nested(MAX_DEPTH + 1)])
    assert await session.get_items() == []
    await session.add_items([nested(MAX_DEPTH)])
    assert await session.get_items() == [nested(MAX_DEPTH)]


async def test_an_accepted_item_reads_back_and_pops_from_a_deep_stack(store: Store) -> None:
    session = store.session(f"depth-{uuid.uuid4().hex}")
    await session.add_items([{"older": True}, nested(MAX_DEPTH)])

    def read_then_pop_deep() -> tuple[list[Item], Item | None]:
        async def calls() -> tuple[list[Item], Item | None]:
            return await session.get_items(), await session.pop_item()

        return _at_a_deep_stack(lambda: asyncio.run(calls()))

    items, popped = await asyncio.get_running_loop().run_in_executor(
        None, _in_a_thread, read_then_pop_deep
    )
    assert items == [{"older": True}, nested(MAX_DEPTH)]
    assert popped == nested(MAX_DEPTH)  # not skipped as corrupt, deleted, and the older one
    assert await session.get_items() == [{"older": True}]


async def test_a_deep_item_an_earlier_version_accepted_still_reads(
    redis_url: str, redis_prefix: str, redis_client: aioredis.Redis
) -> None:
    # Earlier versions accepted items about 980 levels deep; such rows must not be lost.
    async with RedisStore(redis_url, key_prefix=redis_prefix) as store:
        session = store.session(f"depth-{uuid.uuid4().hex}")
        key = session_key(store.key_prefix, session.session_id)
        await redis_client.rpush(key, json.dumps({"older": True}), _nested_text(980))
        older, deep = await session.get_items()
        assert older == {"older": True}
        assert _depth(deep) == 980
        popped = await session.pop_item()
        assert popped is not None
        assert _depth(popped) == 980
        assert await session.get_items() == [{"older": True}]


def _nested_text(depth: int) -> str:
    """The JSON text of ``nested(depth)``, built without recursion."""
    opening, closing = [], []
    for level in range(depth - 1):
        opening.append('{"d":' if level % 2 else "[")
        closing.append("}" if level % 2 else "]")
    return '{"top":' + "".join(reversed(opening)) + '"leaf"' + "".join(closing) + "}"


def _depth(item: object) -> int:
    """Levels of objects and arrays above the one leaf of a ``nested`` item."""
    depth = 0
    while isinstance(item, (dict, list)):
        depth += 1
        item = next(iter(item.values())) if isinstance(item, dict) else item[0]
    assert item == "leaf"
    return depth
