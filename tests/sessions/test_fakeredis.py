"""Our Redis sessions on plain fakeredis (no Lua), what the SDK's users test with
(issue 23): every operation works, with or without a TTL."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest

fakeredis = pytest.importorskip("fakeredis")

from agent_sessions import ForeignDataError  # noqa: E402
from agent_sessions.redis import RedisSession, RedisStore  # noqa: E402

HAS_LUA = importlib.util.find_spec("lupa") is not None  # what fakeredis runs Lua with


def numbered(count: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"m{n}"} for n in range(count)]


async def test_every_operation_without_a_ttl() -> None:
    client = fakeredis.FakeAsyncRedis()
    store = RedisStore(client=client)
    session = store.session("u")
    other = store.session("v")
    await session.add_items(numbered(3))
    await other.add_items(numbered(1))
    assert await session.get_items(limit=2) == numbered(3)[1:]
    assert await session.pop_item() == numbered(3)[2]
    assert (await store.list_sessions()).session_ids == ["u", "v"]
    await session.clear_session()
    assert await session.get_items() == []
    assert await other.get_items() == numbered(1)
    assert (await store.list_sessions()).session_ids == ["v"]
    await store.close()
    assert await client.ping() is True  # the caller's client stays open


async def test_the_sdk_form_with_an_injected_fakeredis_client() -> None:
    client = fakeredis.FakeAsyncRedis()
    session = RedisSession("u", redis_client=client, key_prefix="test")
    await session.add_items(numbered(2))
    assert await session.ping() is True
    await session.clear_session()
    assert await session.get_items() == []
    assert await client.exists(b"test:u") == 0
    await session.close()


async def test_clear_session_leaves_a_key_of_another_type_alone() -> None:
    client = fakeredis.FakeAsyncRedis()
    await client.set(b"agent_sessions:u", b"not ours")
    session = RedisSession("u", redis_client=client, layout="native")
    with pytest.raises(ForeignDataError):
        await session.clear_session()
    assert await client.get(b"agent_sessions:u") == b"not ours"


def test_asyncio_run_per_call_sees_one_fake_server() -> None:
    server = fakeredis.FakeServer()
    store = RedisStore(client=fakeredis.FakeAsyncRedis(server=server))
    session = store.session("u")
    asyncio.run(session.add_items(numbered(1)))
    asyncio.run(session.add_items(numbered(2)[1:]))
    assert asyncio.run(session.get_items()) == numbered(2)


@pytest.mark.skipif(HAS_LUA, reason="fakeredis has Lua here (lupa is installed)")
async def test_a_ttl_works_on_plain_fakeredis_without_lua() -> None:
    client = fakeredis.FakeAsyncRedis()
    session = RedisSession("u", redis_client=client, ttl=60, layout="native")
    key = b"agent_sessions:u"
    await session.add_items(numbered(3))
    assert 0 < await client.pttl(key) <= 60_000
    await client.persist(key)
    assert await session.pop_item() == numbered(3)[2]  # a pop refreshes it too
    assert 0 < await client.pttl(key) <= 60_000
    await session.add_items(numbered(1_500))  # a large batch: its own path
    assert len(await session.get_items()) == 2 + 1_500
    await client.persist(key)
    await session.replace_items(numbered(2))
    assert await session.get_items() == numbered(2)
    assert 0 < await client.pttl(key) <= 60_000
    # a key of another type is refused and keeps having no TTL
    await client.set(b"agent_sessions:v", b"not ours")
    other = RedisSession("v", redis_client=client, ttl=60, layout="native")
    with pytest.raises(ForeignDataError):
        await other.add_items(numbered(1))
    with pytest.raises(ForeignDataError):
        await other.add_items(numbered(1_500))
    assert await client.get(b"agent_sessions:v") == b"not ours"
    assert await client.pttl(b"agent_sessions:v") == -1


async def test_the_sdks_keys_on_plain_fakeredis_with_a_ttl() -> None:
    from redis.exceptions import ResponseError

    client = fakeredis.FakeAsyncRedis()
    session = RedisSession("user:1", redis_client=client, ttl=60)  # the SDK's form: its keys
    meta, messages = b"agents:session:user:1", b"agents:session:user:1:messages"
    await session.add_items(numbered(3))
    assert await client.lrange(messages, 0, -1) == [
        b'{"role":"user","content":"m%d"}' % n for n in range(3)
    ]
    assert (await client.hgetall(meta)).keys() == {b"session_id", b"created_at", b"updated_at"}
    assert 0 < await client.pttl(meta) <= 60_000
    assert 0 < await client.pttl(messages) <= 60_000
    assert await session.pop_item() == numbered(3)[2]
    await session.replace_items(numbered(1))
    assert await session.get_items() == numbered(1)
    assert (await session.store.list_sessions()).session_ids == ["user:1"]
    await session.clear_session()
    assert await client.exists(meta, messages) == 0
    # A key of another type where the SDK's hash would be: refused, nothing written, as
    # the SDK refuses it (a redis ResponseError naming WRONGTYPE, and our ForeignDataError).
    await client.set(b"agents:session:v", b"not ours")
    other = RedisSession("v", redis_client=client, ttl=60)
    for error in (ForeignDataError, ResponseError):
        with pytest.raises(error, match="WRONGTYPE"):
            await other.add_items(numbered(1))
    assert await client.exists(b"agents:session:v:messages") == 0
    assert await client.pttl(b"agents:session:v") == -1


def test_a_ttl_beyond_redis_range_is_refused_by_each_write_as_the_sdk_does() -> None:
    client = fakeredis.FakeAsyncRedis()
    for layout in ("sdk", "native"):
        session = RedisSession("u", redis_client=client, ttl=2**63, layout=layout)
        for _ in range(2):
            with pytest.raises(ValueError, match="outside Redis's supported expiration range"):
                asyncio.run(session.add_items(numbered(1)))
        assert asyncio.run(session.get_items()) == []
