"""BranchingSession over the real Redis: the conformance kit on the current branch (in
child processes too), and a branch with usage on Redis lists."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import pytest

from agent_sessions import Session, SessionSettings
from agent_sessions.branches import BranchingSession, Usage, branch_session_id
from agent_sessions.items import assistant_message, user_message
from agent_sessions.redis import RedisSession, RedisStore, session_key
from agent_sessions.testing import SessionConformance

from .test_conformance import UNREACHABLE_SECRET, unreachable_url


def open_branching_redis(session_id: str, *, url: str, key_prefix: str) -> BranchingSession:
    """A branching session on Redis (module level: child processes call it)."""
    return BranchingSession(
        functools.partial(RedisSession, url=url, key_prefix=key_prefix), session_id
    )


class TestBranchingRedisSession(SessionConformance):
    supports_processes = True
    url: str
    failing_url: str
    key_prefix: str
    store: RedisStore

    failing_stores: list[RedisStore]

    @pytest.fixture(autouse=True)
    async def redis_store(self, redis_url: str, redis_prefix: str) -> AsyncIterator[None]:
        self.url, self.key_prefix = redis_url, redis_prefix + "branches:"
        self.failing_stores = []
        async with RedisStore(redis_url, key_prefix=self.key_prefix) as store:
            self.store = store
            yield
        for failing in self.failing_stores:
            await failing.close()

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        failing = RedisStore(self.failing_url, key_prefix=self.key_prefix, connect_timeout=1)
        self.failing_stores.append(failing)
        return BranchingSession(failing, session_id)

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return BranchingSession(self.store, session_id, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(open_branching_redis, url=self.url, key_prefix=self.key_prefix)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, BranchingSession)
        current = await session.current_session()
        client = await self.store._ready_client()
        await client.rpush(session_key(self.key_prefix, current.session_id), raw)


@pytest.fixture
async def store(redis_url: str, redis_prefix: str) -> AsyncIterator[RedisStore]:
    async with RedisStore(redis_url, key_prefix=redis_prefix + "branches-use:") as store:
        yield store


async def test_a_branch_and_its_usage_on_redis_lists(store: RedisStore) -> None:
    session = BranchingSession(store, "chat")
    await session.add_items([user_message("a"), assistant_message("1")])
    await session.add_items([user_message("b"), assistant_message("2")])
    await session.record_usage({"input_tokens": 4, "output_tokens": 2})
    assert await session.branch_from(1, "edit") == user_message("b")
    await session.add_items([user_message("b2")])
    await session.record_usage({"requests": 1, "input_tokens": 9, "output_tokens": 3})
    branch = store.session(branch_session_id("chat", "edit"))
    assert await branch.get_items() == [
        user_message("a"),
        assistant_message("1"),
        user_message("b2"),
    ]
    assert len(await store.session("chat").get_items()) == 4
    again = BranchingSession(store, "chat")
    assert await again.current_branch() == "edit"
    assert await again.usage() == Usage(1, 13, 5, 18)
    assert await again.usage_by_turn("main") == {1: Usage(0, 4, 2, 6)}
