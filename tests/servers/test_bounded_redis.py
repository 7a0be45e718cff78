"""TrimmingSession and CompactingSession over the real Redis: the conformance kit (bounds
the kit never reaches), and compaction on a Redis list."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator, Callable

import pytest

from agent_sessions import Session, SessionSettings
from agent_sessions.bounded import SUMMARY_PREFIX, CompactingSession, TrimmingSession
from agent_sessions.items import (
    assistant_message,
    function_call,
    function_call_output,
    user_message,
)
from agent_sessions.models import OfflineModel
from agent_sessions.redis import RedisSession, RedisStore, session_key
from agent_sessions.testing import SessionConformance

from .test_conformance import UNREACHABLE_SECRET, unreachable_url

NEVER = 10**9


def open_trimming_redis(session_id: str, *, url: str, key_prefix: str) -> TrimmingSession:
    """A trimming session on Redis (module level: child processes call it)."""
    return TrimmingSession(RedisSession(session_id, url, key_prefix=key_prefix), max_items=NEVER)


def open_compacting_redis(session_id: str, *, url: str, key_prefix: str) -> CompactingSession:
    """A compacting session on Redis (module level: child processes call it)."""
    inner = RedisSession(session_id, url, key_prefix=key_prefix)
    return CompactingSession(inner, model=OfflineModel(), threshold=NEVER)


class TestTrimmingRedisSession(SessionConformance):
    supports_processes = True
    url: str
    failing_url: str
    key_prefix: str
    store: RedisStore

    @pytest.fixture(autouse=True)
    async def redis_store(self, redis_url: str, redis_prefix: str) -> AsyncIterator[None]:
        self.url, self.key_prefix = redis_url, redis_prefix + "bounded:"
        async with RedisStore(redis_url, key_prefix=self.key_prefix) as store:
            self.store = store
            yield

    def wrap(self, inner: Session, session_settings: SessionSettings | None = None) -> Session:
        return TrimmingSession(inner, max_items=NEVER, session_settings=session_settings)

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.wrap(self.store.session(session_id), session_settings)

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        return self.wrap(RedisSession(session_id, self.failing_url, connect_timeout=1))

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(open_trimming_redis, url=self.url, key_prefix=self.key_prefix)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, (TrimmingSession, CompactingSession))
        client = await self.store._ready_client()
        await client.rpush(session_key(self.key_prefix, session.session_id), raw)


class TestCompactingRedisSession(TestTrimmingRedisSession):
    def wrap(self, inner: Session, session_settings: SessionSettings | None = None) -> Session:
        return CompactingSession(
            inner, model=OfflineModel(), threshold=NEVER, session_settings=session_settings
        )

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(open_compacting_redis, url=self.url, key_prefix=self.key_prefix)


@pytest.fixture
async def store(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_url, key_prefix=redis_prefix + "bounded-own:") as store:
        yield store


async def test_trimming_and_compaction_on_a_redis_list(store: RedisStore) -> None:
    session_id = f"user-{uuid.uuid4().hex}"
    turns = [
        [user_message("q0"), assistant_message("a0")],
        [
            user_message("q1"),
            function_call("weather", "{}", "c1"),
            function_call_output("c1", "sunny"),
            assistant_message("sunny"),
        ],
        [user_message("q2"), assistant_message("a2")],
    ]
    history = [item for turn in turns for item in turn]
    await store.session(session_id).add_items(history)
    trimmed = TrimmingSession(store.session(session_id), max_items=5)
    assert await trimmed.get_items() == turns[2]  # the tool turn would make 6
    archive = store.session(session_id + ":archive")
    compacting = CompactingSession(
        store.session(session_id),
        model=OfflineModel(["q0 and q1 asked"]),
        threshold=4,
        keep_last_turns=1,
        keep_originals=True,
        archive=archive,
    )
    await compacting.after_run()
    summary = {"role": "system", "content": SUMMARY_PREFIX + "q0 and q1 asked"}
    assert await store.session(session_id).get_items() == [summary, *turns[2]]
    assert await archive.get_items() == history[:6]
    await compacting.after_run()  # 3 items, under the threshold: nothing to do
    assert len(await store.session(session_id).get_items()) == 3
