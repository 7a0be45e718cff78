"""``replace_items`` on Redis survives the server killed in the middle of it: a
redis-server of the test's own (append-only file, ``appendfsync always``), SIGKILLed at
chosen bytes of the replacement's MULTI/EXEC as it crosses a loopback proxy, then started
again from its file. The history is then wholly the old one (the transaction never
complete: Redis ran none of it, and a partial transaction at the end of the file is
dropped on load) or wholly the new one (the whole request arrived and ran before the
kill, or the call returned: acknowledged, so on disk). Kills a few milliseconds after the
request's last byte land while Redis runs it or writes it to its file: the server's log
(``redis.log`` in its directory) then says it truncated the file's partial transaction,
and the history read back is the old one, whole."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import AsyncIterator

import pytest

from agent_sessions import SessionError
from agent_sessions.protocol import Item
from agent_sessions.redis import RedisStore

from .own_servers import DurableRedis, durable_redis
from .proxy import FaultyProxy

OLD: list[Item] = [{"role": "user", "content": f"old {n}"} for n in range(5)]
# Large enough for a request of many TCP segments (about 0.6 MB) and a write to the
# append-only file that takes a while: room for a kill in the middle of each.
NEW: list[Item] = [{"role": "assistant", "content": f"new {n} " + "x" * 20} for n in range(20_000)]
# Where the kill falls, as a share of the replacement's request bytes.
CUTS = [1 / 10_000, 0.25, 0.5, 0.75, 0.9999, 1.0]
# Seconds from the whole request's last byte to the kill.
DELAYS = [0, 0.004, 0.008, 0.016, 0.024, 0.032, 0.04, 0.05, 0.07, 0.1]


@pytest.fixture
async def server() -> AsyncIterator[tuple[DurableRedis, FaultyProxy]]:
    with durable_redis() as redis_server:
        proxy = FaultyProxy("127.0.0.1", redis_server.port)
        await proxy.start()
        try:
            yield redis_server, proxy
        finally:
            await proxy.stop()


def session_id() -> str:
    return f"crash-{uuid.uuid4().hex}"  # one length: the same request size for each


async def request_size(proxy: FaultyProxy, ttl: int | None) -> int:
    """The bytes a replacement of NEW sends, measured on a session of its own."""
    async with RedisStore(f"redis://127.0.0.1:{proxy.port}/0", ttl=ttl) as store:
        session = store.session(session_id())
        await session.add_items(OLD)
        before = proxy.request_bytes
        await session.replace_items(NEW)
        return proxy.request_bytes - before


def kill_later(redis_server: DurableRedis, delay: float) -> None:
    asyncio.get_running_loop().call_later(delay, redis_server.kill)


async def history_after_restart(redis_server: DurableRedis, sid: str) -> list[Item]:
    redis_server.start()
    async with RedisStore(f"redis://127.0.0.1:{redis_server.port}/0") as store:
        return await store.session(sid).get_items()


@pytest.mark.parametrize("ttl", [None, 3600])
async def test_a_replacement_killed_mid_way_leaves_the_old_history_or_the_new_whole(
    server: tuple[DurableRedis, FaultyProxy], ttl: int | None
) -> None:
    redis_server, proxy = server
    size = await request_size(proxy, ttl)
    assert size > 100_000, size  # many segments: the cuts below fall inside the request
    for cut in CUTS:
        sid = session_id()
        async with RedisStore(f"redis://127.0.0.1:{proxy.port}/0", ttl=ttl) as store:
            await store.session(sid).add_items(OLD)
            proxy.after_request_bytes(round(size * cut), redis_server.kill)
            with pytest.raises(SessionError):
                await store.session(sid).replace_items(NEW)
        assert redis_server.process is None  # killed
        history = await history_after_restart(redis_server, sid)
        if cut < 1.0:
            assert history == OLD, (cut, len(history))  # EXEC never arrived: nothing ran
        else:
            assert history in (OLD, NEW), (cut, len(history))
    # The whole request sent, the kill a little later: while Redis reads it, runs it or
    # writes it to its file, or after it answered. A replacement that returned was on
    # disk before its answer: the new history.
    for delay in DELAYS:
        sid = session_id()
        async with RedisStore(f"redis://127.0.0.1:{proxy.port}/0", ttl=ttl) as store:
            await store.session(sid).add_items(OLD)
            proxy.after_request_bytes(
                size, functools.partial(kill_later, redis_server, delay), cut=False
            )
            try:
                await store.session(sid).replace_items(NEW)
                returned = True
            except SessionError:
                returned = False
            await asyncio.sleep(delay)  # the kill has come
        history = await history_after_restart(redis_server, sid)
        assert history == NEW if returned else history in (OLD, NEW), (delay, len(history))
