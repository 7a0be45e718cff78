"""Redis specifics the conformance kit does not cover: layout, TTL, ownership, errors."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from agent_sessions import SessionClosedError, SessionConfigError
from agent_sessions.redis import RedisSession, RedisStore

UNUSED_URL = "redis://127.0.0.1:1/0"  # for checks that fail before connecting


@pytest.fixture
async def store(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_url, key_prefix=redis_prefix) as opened:
        yield opened


@pytest.fixture
async def ttl_store(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_url, key_prefix=redis_prefix, ttl=600) as opened:
        yield opened


def _new_id() -> str:
    return f"redis-{uuid.uuid4().hex}"


async def test_session_is_one_list_of_json_documents_under_the_prefix(
    store: RedisStore, redis_client: aioredis.Redis
) -> None:
    session_id = _new_id()
    await store.session(session_id).add_items([{"role": "user", "content": "é"}, {"n": 2}])
    key = f"{store.key_prefix}{session_id}".encode()
    assert await redis_client.type(key) == b"list"
    assert await redis_client.lrange(key, 0, -1) == [
        '{"role":"user","content":"é"}'.encode(),
        b'{"n":2}',
    ]


async def test_session_without_ttl_never_expires(
    store: RedisStore, redis_client: aioredis.Redis
) -> None:
    session = store.session(_new_id())
    await session.add_items([{"n": 1}])
    assert await redis_client.pttl(f"{store.key_prefix}{session.session_id}") == -1


async def test_each_write_refreshes_the_ttl(
    ttl_store: RedisStore, redis_client: aioredis.Redis
) -> None:
    session = ttl_store.session(_new_id())
    key = f"{ttl_store.key_prefix}{session.session_id}"
    await session.add_items([{"n": 1}, {"n": 2}])
    await redis_client.pexpire(key, 5_000)
    await session.add_items([{"n": 3}])
    assert await redis_client.pttl(key) > 590_000
    await redis_client.pexpire(key, 5_000)
    await session.pop_item()
    assert await redis_client.pttl(key) > 590_000


async def test_session_expires_ttl_after_its_last_write(
    redis_url: str, redis_prefix: str, redis_client: aioredis.Redis
) -> None:
    # 0.5 s: long enough that a loaded machine still sees the key before it expires (with
    # 50 ms, a stall between the write and PTTL made the key vanish first: pttl -2).
    async with RedisStore(redis_url, key_prefix=redis_prefix, ttl=0.5) as store:
        session = store.session(_new_id())
        await session.add_items([{"n": 1}])
        key = f"{store.key_prefix}{session.session_id}"
        assert 0 < await redis_client.pttl(key) <= 500
        # Observed, not slept for: the key is gone once its TTL ran out (bounded wait).
        for _ in range(500):  # at most about 5 s
            if not await redis_client.exists(key):
                break
            await asyncio.sleep(0.01)
        assert not await redis_client.exists(key), "the key outlived its TTL"
        assert await session.get_items() == []


@pytest.mark.parametrize("ttl", [0, -5, True, float("inf"), float("nan")])
def test_ttl_must_be_positive_seconds(ttl: float) -> None:
    with pytest.raises(ValueError, match="ttl must be a finite number of seconds > 0"):
        RedisStore(UNUSED_URL, ttl=ttl)


async def test_closing_the_store_leaves_an_injected_client_open(
    redis_client: aioredis.Redis, redis_prefix: str
) -> None:
    store = RedisStore(client=redis_client, key_prefix=redis_prefix)
    await store.session(_new_id()).add_items([{"n": 1}])
    await store.close()
    assert await redis_client.ping()


async def test_sessions_of_a_closed_store_raise_session_closed_error(store: RedisStore) -> None:
    session = store.session(_new_id())
    await store.close()
    with pytest.raises(SessionClosedError, match="RedisStore"):
        await session.get_items()


async def test_closing_a_borrowed_session_leaves_its_store_open(store: RedisStore) -> None:
    first = store.session(_new_id())
    await first.close()
    second = store.session(_new_id())
    await second.add_items([{"n": 1}])
    assert await second.get_items() == [{"n": 1}]


async def test_session_with_its_own_url_closes_its_store(redis_url: str, redis_prefix: str) -> None:
    session = RedisSession(_new_id(), redis_url, key_prefix=redis_prefix)
    await session.add_items([{"n": 1}])
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.store.session("other").get_items()


def test_store_needs_exactly_one_of_url_and_client() -> None:
    with pytest.raises(ValueError, match="exactly one of url= or client="):
        RedisStore()


@pytest.mark.parametrize("cursor", ["abc", "-1", ":x"])
async def test_malformed_listing_cursor_is_refused(store: RedisStore, cursor: str) -> None:
    with pytest.raises(ValueError, match="not a RedisStore listing cursor"):
        await store.list_sessions(cursor=cursor)


def test_missing_driver_raises_import_error_with_install_hint() -> None:
    code = "import sys; sys.modules['redis'] = None; import agent_sessions.redis"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert 'pip install "agent-sessions[redis]"' in result.stderr


def test_session_on_a_store_refuses_settings_of_its_own(store: RedisStore) -> None:
    with pytest.raises(SessionConfigError, match="pass either store= or ttl, not both"):
        RedisSession("s", store=store, ttl=5)
    with pytest.raises(SessionConfigError, match="store= or url, key_prefix, not both"):
        RedisSession("s", "redis://127.0.0.1:1/0", store=store, key_prefix="other:")
