"""A TTL on a Redis that runs no scripts: ``EVAL`` renamed away on a redis-server of the
test's own, so that it refuses scripts as plain fakeredis does. The store then refreshes
the TTL with ``WATCH``, ``TYPE`` and a ``PEXPIRE`` in the write's own ``MULTI``/``EXEC``;
these tests hold that fallback to the contract on a real server, under concurrency: no
batch lost, doubled or split, and never a TTL on a key another program wrote meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from agent_sessions import ForeignDataError
from agent_sessions.redis import RedisStore, session_key

from .own_servers import redis_without_scripts


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with redis_without_scripts() as port:
        yield f"redis://127.0.0.1:{port}/0"


@pytest.fixture
async def client(url: str) -> AsyncIterator[aioredis.Redis]:
    raw = aioredis.Redis.from_url(url)
    await raw.flushdb()
    yield raw
    await raw.aclose()


async def test_the_server_refuses_scripts(client: aioredis.Redis) -> None:
    with pytest.raises(ResponseError, match="unknown command"):
        await client.eval("return 1", 0)


async def test_concurrent_writers_and_pops_keep_every_batch_whole(
    url: str, client: aioredis.Redis
) -> None:
    writers, batches, size, pops = 6, 15, 3, 10
    async with RedisStore(url, ttl=60) as store:
        session = store.session("u")

        async def write(name: int) -> None:
            for batch in range(batches):
                await session.add_items([{"w": name, "b": batch, "n": n} for n in range(size)])

        async def pop() -> list[Any]:
            popped: list[Any] = []
            for _ in range(pops):
                popped.append(await session.pop_item())
                await asyncio.sleep(0)
            return popped

        results = await asyncio.gather(*(write(n) for n in range(writers)), pop(), pop())
        popped = [
            item for result in results[writers:] if result for item in result if item is not None
        ]
        stored = await session.get_items()
        assert 0 < await client.pttl(session_key(store.key_prefix, "u")) <= 60_000
    assert len(stored) + len(popped) == writers * batches * size
    everything = stored + popped
    assert len({(i["w"], i["b"], i["n"]) for i in everything}) == len(everything)  # none doubled
    # What is left holds whole batches in order, but for the last one pops cut into.
    runs: dict[tuple[int, int], list[int]] = {}
    for item in stored:
        runs.setdefault((item["w"], item["b"]), []).append(item["n"])
    for numbers in runs.values():
        assert numbers == list(range(len(numbers)))


async def test_a_key_another_program_writes_meanwhile_never_gets_the_ttl(
    url: str, client: aioredis.Redis
) -> None:
    rounds = 150
    async with RedisStore(url, ttl=60) as store:
        session = store.session("u")
        key = session_key(store.key_prefix, "u")
        outcomes = {"stored": 0, "refused": 0}
        foreign_with_ttl = 0

        async def write() -> None:
            for n in range(rounds):
                try:
                    await session.add_items([{"n": n}])
                    outcomes["stored"] += 1
                except ForeignDataError:
                    outcomes["refused"] += 1

        async def intrude() -> None:
            nonlocal foreign_with_ttl
            for _ in range(rounds):
                await client.set(key, b"not a session")  # SET drops any TTL
                await asyncio.sleep(0)  # the writers' WATCH, TYPE and EXEC run here
                await asyncio.sleep(0)
                async with client.pipeline(transaction=True) as pipe:
                    pipe.type(key)
                    pipe.pttl(key)
                    kind, pttl = await pipe.execute()
                if kind == b"string" and pttl != -1:
                    foreign_with_ttl += 1
                await client.delete(key)
                await asyncio.sleep(0)

        await asyncio.gather(write(), write(), write(), intrude())
    assert foreign_with_ttl == 0
    # both sides of the race ran
    assert outcomes["stored"], outcomes
    assert outcomes["refused"], outcomes
