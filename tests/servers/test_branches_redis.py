"""BranchingSession over the real Redis: the conformance kit on the current branch (in
child processes too, on a failing server), and a branch with usage on Redis lists."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import pytest

from agent_sessions import Session
from agent_sessions.branches import BranchingSession
from agent_sessions.redis import RedisSession, RedisStore, session_key

from .branches_kit import BranchingServerKit, check_a_branch_and_its_usage


def open_branching_redis(session_id: str, *, url: str, key_prefix: str) -> BranchingSession:
    """A branching session on Redis (module level: child processes call it)."""
    return BranchingSession(
        functools.partial(RedisSession, url=url, key_prefix=key_prefix), session_id
    )


class TestBranchingRedisSession(BranchingServerKit):
    key_prefix: str
    store: RedisStore

    @pytest.fixture(autouse=True)
    async def redis_store(self, redis_url: str, redis_prefix: str) -> AsyncIterator[None]:
        self.url, self.key_prefix = redis_url, redis_prefix + "branches:"
        async with RedisStore(redis_url, key_prefix=self.key_prefix) as store:
            self.store = store
            yield

    def open_failing_store(self) -> RedisStore:
        return RedisStore(self.failing_url, key_prefix=self.key_prefix, connect_timeout=1)

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
    await check_a_branch_and_its_usage(store, "chat")
