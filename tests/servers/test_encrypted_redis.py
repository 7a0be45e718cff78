"""EncryptedSession over the real Redis: the conformance kit, and the raw values."""

from __future__ import annotations

import base64
import functools
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import redis.asyncio as aioredis

from agent_sessions import Session, SessionSettings
from agent_sessions.encrypted import EncryptedSession, generate_key
from agent_sessions.redis import RedisSession, RedisStore, session_key
from agent_sessions.testing import SessionConformance

from .test_conformance import UNREACHABLE_SECRET, FreezableServer, unreachable_url

SECRET = "the launch code is 0000-swordfish"


def open_encrypted_redis(
    session_id: str, *, url: str, key_prefix: str, key: str
) -> EncryptedSession:
    """An encrypted session on Redis (module level: child processes call it)."""
    return EncryptedSession(RedisSession(session_id, url, key_prefix=key_prefix), key=key)


class TestEncryptedRedisSession(FreezableServer, SessionConformance):
    supports_processes = True
    frozen_cancel_discards_write = False  # as for Redis itself (tests/servers/test_conformance.py)
    key = generate_key()
    url: str
    failing_url: str
    key_prefix: str
    store: RedisStore

    @pytest.fixture(autouse=True)
    async def redis_store(self, redis_url: str, redis_prefix: str) -> AsyncIterator[None]:
        self.url, self.key_prefix = redis_url, redis_prefix + "encrypted:"
        async with RedisStore(redis_url, key_prefix=self.key_prefix) as store:
            self.store = store
            yield

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        inner = self.store.session(session_id)
        return EncryptedSession(inner, key=self.key, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(
            open_encrypted_redis, url=self.url, key_prefix=self.key_prefix, key=self.key
        )

    async def create_freezable_session(self, session_id: str) -> Session:
        url = await self.proxied(self.url)
        inner = RedisSession(
            session_id, url, key_prefix=self.key_prefix, connect_timeout=1, socket_timeout=1
        )
        return EncryptedSession(inner, key=self.key)

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        inner = RedisSession(session_id, self.failing_url, connect_timeout=1)
        return EncryptedSession(inner, key=self.key)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, EncryptedSession)
        client = await self.store._ready_client()
        await client.rpush(session_key(self.key_prefix, session.session_id), raw)


@pytest.fixture
async def store(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_url, key_prefix=redis_prefix + "encrypted-raw:") as store:
        yield store


async def test_the_redis_values_hold_no_plaintext(
    store: RedisStore, redis_client: aioredis.Redis
) -> None:
    session_id, key = f"user-{uuid.uuid4().hex}", generate_key()
    item = {"role": "user", "content": SECRET}
    session = EncryptedSession(store.session(session_id), key=key)
    await session.add_items([item, {"role": "assistant", "content": [{"text": SECRET}]}])
    assert (await session.get_items())[0] == item
    plain_id = f"plain-{uuid.uuid4().hex}"
    await store.session(plain_id).add_items([item])  # shows the search finds plaintext

    async def raw_values(sid: str) -> bytes:
        values = await redis_client.lrange(session_key(store.key_prefix, sid), 0, -1)
        assert all(isinstance(value, bytes) for value in values)
        return b"".join(value for value in values if isinstance(value, bytes))

    needles = [SECRET.encode(), b"swordfish", b"launch"]
    plain = await raw_values(plain_id)
    assert all(needle in plain for needle in needles)
    encrypted = await raw_values(session_id)
    assert encrypted
    assert not any(needle in encrypted for needle in needles)
    assert key.encode() not in encrypted


async def test_a_byte_flipped_in_a_redis_value_is_skipped_with_a_warning(
    store: RedisStore, redis_client: aioredis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    session_id = f"tamper-{uuid.uuid4().hex}"
    session = EncryptedSession(store.session(session_id), key=generate_key())
    await session.add_items([{"n": 0}, {"content": SECRET}, {"n": 1}])
    redis_key = session_key(store.key_prefix, session_id)
    stored = await redis_client.lindex(redis_key, 1)
    assert isinstance(stored, bytes)
    envelope = json.loads(stored)
    data = bytearray(base64.b64decode(envelope["data"]))
    data[-1] ^= 0x80  # in the authentication tag
    envelope["data"] = base64.b64encode(bytes(data)).decode("ascii")
    await redis_client.lset(redis_key, 1, json.dumps(envelope))
    with caplog.at_level(logging.WARNING):
        assert await session.get_items() == [{"n": 0}, {"n": 1}]
    assert any("1 tampered or corrupt" in r.getMessage() for r in caplog.records)


async def test_a_read_after_the_wrappers_own_adds_decrypts_nothing(
    store: RedisStore, decryptions: list[int]
) -> None:
    """Redis returns decoded envelopes, so the cache is keyed by their data: the entries
    of the wrapper's own adds are found by its next read (they were keyed by the stored
    text, which such a read never looks up, so every first read decrypted them)."""
    session_id, key = f"warm-{uuid.uuid4().hex}", generate_key()
    session = EncryptedSession(store.session(session_id), key=key)
    await session.add_items([{"n": 0}])
    await session.add_items([{"n": 1}, {"n": 2}])
    assert await session.get_items() == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert decryptions == [0]
    other = EncryptedSession(store.session(session_id), key=key)
    assert await other.get_items(limit=2) == [{"n": 1}, {"n": 2}]
    assert decryptions == [2]
    await session.clear_session()


async def test_the_agents_sdks_encrypted_items_on_redis_read_back_through_ours(
    store: RedisStore, redis_client: aioredis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """What the Agents SDK's EncryptedSession wrote through our RedisSession (decoded
    envelopes on the way back: the cache keyed by their Fernet token) reads in order
    with ours after it, with the same key; a token changed in Redis is skipped."""
    from agents.extensions.memory import EncryptedSession as SDKEncryptedSession

    session_id, key = f"sdk-{uuid.uuid4().hex}", generate_key()
    inner: Any = store.session(session_id)  # the SDK types it as its own SessionABC
    sdk = SDKEncryptedSession(session_id, inner, encryption_key=key, ttl=600)
    await sdk.add_items(
        [{"role": "user", "content": SECRET}, {"role": "assistant", "content": "ok"}]
    )
    ours = EncryptedSession(store.session(session_id), key=key, ttl=600)
    await ours.add_items([{"role": "user", "content": "and ours"}])
    expected = [
        {"role": "user", "content": SECRET},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and ours"},
    ]
    assert await ours.get_items() == expected
    assert await ours.get_items() == expected  # from the cache
    assert await ours.get_items(limit=2) == expected[1:]
    redis_key = session_key(store.key_prefix, session_id)
    stored = await redis_client.lindex(redis_key, 0)
    assert isinstance(stored, bytes)
    envelope = json.loads(stored)
    assert envelope["__enc__"] == 1
    assert SECRET.encode() not in stored
    token = bytearray(base64.urlsafe_b64decode(envelope["payload"]))
    token[-1] ^= 0x01  # in its HMAC
    envelope["payload"] = base64.urlsafe_b64encode(bytes(token)).decode("ascii")
    await redis_client.lset(redis_key, 0, json.dumps(envelope))
    with caplog.at_level(logging.WARNING):
        assert await ours.get_items() == expected[1:]
        assert (
            await EncryptedSession(store.session(session_id), key=key).get_items() == expected[1:]
        )
    assert sum("1 sealed by the Agents SDK" in r.getMessage() for r in caplog.records) == 2
    await ours.clear_session()
