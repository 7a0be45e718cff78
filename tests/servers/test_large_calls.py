"""Large reads and writes (more than 1,000 items) on every backend: the paths that keep the
event loop running (issue 23 point 5) keep the contract.

A large batch is encoded in a worker thread; a large SQLite call runs in the store's
worker; a large Redis read is paged under ``WATCH`` and a large Redis write packed in a
worker and sent in parts; a large PostgreSQL batch is sent as one JSON array and a large
result turned into rows a page at a time. Each of them must stay atomic, ordered and
all-or-nothing, as the small paths are. How long they stall the loop is measured by
``benchmarks/loop_stall.py``, not here.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from agent_sessions import ForeignDataError, InvalidItemError, SQLiteSession
from agent_sessions.base import BaseSession
from agent_sessions.postgres import PostgresStore
from agent_sessions.redis import RedisStore, session_key

fakeredis = pytest.importorskip("fakeredis")

LARGE = 3_000

Opener = Callable[[str], BaseSession[Any]]


def numbered(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"n": n, "text": f"item {n} é"} for n in range(start, start + count)]


@pytest.fixture(
    params=["sqlite-memory", "sqlite-file", "redis", "redis-ttl", "fakeredis", "postgres"]
)
def backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, str]]:
    """The backend's name and its server fixtures (resolved here, outside the event loop)."""
    kind: str = request.param
    names = {
        "redis": ("redis_url", "redis_prefix"),
        "redis-ttl": ("redis_url", "redis_prefix"),
        "postgres": ("database_url", "postgres_table"),
    }.get(kind, ())
    return kind, {name: request.getfixturevalue(name) for name in names}


@pytest.fixture
async def open_session(
    backend: tuple[str, dict[str, str]], tmp_path: Path
) -> AsyncIterator[Callable[[str], BaseSession[Any]]]:
    """Sessions of one backend, all on one store; closed at the end."""
    kind, servers = backend
    closers: list[Any] = []
    opener: Callable[[str], BaseSession[Any]]
    if kind == "sqlite-memory":
        from agent_sessions.sqlite import SQLiteStore

        memory = SQLiteStore()
        closers.append(memory)
        opener = memory.session
    elif kind == "sqlite-file":
        path = tmp_path / "large.db"

        def opener(session_id: str) -> BaseSession[Any]:
            session = SQLiteSession(session_id, path)
            closers.append(session)
            return session
    elif kind in ("redis", "redis-ttl"):
        store = RedisStore(
            servers["redis_url"],
            key_prefix=servers["redis_prefix"],
            ttl=600 if kind == "redis-ttl" else None,
        )
        closers.append(store)
        opener = store.session
    elif kind == "fakeredis":
        store = RedisStore(client=fakeredis.FakeAsyncRedis())
        closers.append(store)
        opener = store.session
    else:
        pg_store = PostgresStore(servers["database_url"], table=servers["postgres_table"])
        closers.append(pg_store)
        opener = pg_store.session
    yield lambda name: opener(f"{name}-{uuid.uuid4().hex}")
    for closer in closers:
        await closer.close()


async def test_a_large_batch_round_trips_in_order(open_session: Opener) -> None:
    session = open_session("round-trip")
    await session.add_items([{"before": True}])
    await session.add_items(numbered(LARGE))
    await session.add_items([{"after": True}])
    expected = [{"before": True}, *numbered(LARGE), {"after": True}]
    assert await session.get_items() == expected
    # limits above the page size, at it and just past it
    for limit in (LARGE + 2, LARGE + 10**6, 2_500, 1_001, 1_000, 999):
        assert await session.get_items(limit=limit) == expected[-limit:]
    assert await session.pop_item() == {"after": True}
    assert await session.get_items(limit=1) == numbered(LARGE)[-1:]


async def test_a_large_batch_with_a_bad_item_stores_nothing(open_session: Opener) -> None:
    session = open_session("bad")
    await session.add_items([{"before": True}])
    batch: list[Any] = numbered(LARGE)
    batch[2_345] = {"n": {1, 2}}  # a set: JSON cannot store it
    with pytest.raises(InvalidItemError, match="item 2345"):
        await session.add_items(batch)
    assert await session.get_items() == [{"before": True}]


async def test_the_caller_may_change_its_list_once_add_items_returned(
    open_session: Opener,
) -> None:
    session = open_session("copy")
    batch = numbered(LARGE)
    await session.add_items(batch)
    batch.clear()
    assert await session.get_items(limit=2) == numbered(LARGE)[-2:]


@pytest.mark.parametrize("cancel_after", [0, 1, 3, 10, 40])
async def test_a_cancelled_large_add_items_stores_all_or_nothing(
    open_session: Opener, cancel_after: int
) -> None:
    session = open_session("cancel")
    await session.add_items([{"before": True}])
    batch = numbered(LARGE)
    task = asyncio.ensure_future(session.add_items(batch))
    for _ in range(cancel_after):
        await asyncio.sleep(0)
    task.cancel()  # it may have finished already: then it committed
    with contextlib.suppress(asyncio.CancelledError):
        await task
    stored = await session.get_items()
    assert stored in ([{"before": True}], [{"before": True}, *batch])
    # the session (and its connection) are usable afterwards
    await session.add_items([{"after": True}])
    assert (await session.get_items())[-1] == {"after": True}


async def test_large_reads_see_one_state_while_the_session_is_written(
    open_session: Opener,
) -> None:
    """A reader of a large session, while a writer appends and pops: every read is a state
    the session was in, never pages of different states put together."""
    session = open_session("concurrent")
    writer_session = type(session)(session.session_id, store=session.store)  # another handle
    start = numbered(2_500)
    await session.add_items(start)
    current = [item["n"] for item in start]
    states = {tuple(current)}
    done = asyncio.Event()

    async def write() -> None:
        next_n = 10_000
        try:
            for round_number in range(25):
                batch = numbered(7, next_n)
                next_n += 7
                await writer_session.add_items(batch)
                current.extend(item["n"] for item in batch)
                states.add(tuple(current))
                for _ in range(round_number % 4):
                    popped = await writer_session.pop_item()
                    assert popped is not None
                    assert popped["n"] == current.pop()
                    states.add(tuple(current))
                await asyncio.sleep(0)
        finally:
            done.set()

    reads: list[tuple[int, ...]] = []

    async def read() -> None:
        while not done.is_set():
            reads.append(tuple(item["n"] for item in await session.get_items()))

    await asyncio.gather(write(), read())
    reads.append(tuple(item["n"] for item in await session.get_items()))
    assert reads, "the reader never read"
    assert all(state in states for state in reads)
    assert reads[-1] == tuple(current)


async def test_a_large_redis_write_on_a_key_of_another_type_changes_nothing(
    redis_url: str, redis_prefix: str, redis_client: aioredis.Redis
) -> None:
    for ttl in (None, 600):
        store = RedisStore(redis_url, key_prefix=redis_prefix, ttl=ttl)
        session = store.session(f"foreign-{uuid.uuid4().hex}")
        key = session_key(redis_prefix, session.session_id)
        await redis_client.set(key, b"not ours")
        with pytest.raises(ForeignDataError):
            await session.add_items(numbered(LARGE))
        assert await redis_client.get(key) == b"not ours"
        assert await redis_client.ttl(key) == -1  # no TTL put on someone else's key
        await redis_client.delete(key)
        # the store's connections are still good
        await session.add_items(numbered(LARGE))
        assert len(await session.get_items()) == LARGE
        if ttl is not None:
            assert 0 < await redis_client.pttl(key) <= 600_000
        await store.close()
