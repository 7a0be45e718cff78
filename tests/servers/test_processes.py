"""Many processes writing one server session: 4 processes x 500 writes, nothing lost or
duplicated, each process's writes in its own order."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import uuid
from collections.abc import Callable

import pytest

from agent_sessions.postgres import PostgresSession
from agent_sessions.redis import RedisSession

PROCESSES, WRITES = 4, 500
ServerSession = RedisSession | PostgresSession


def _write_in_child(factory: Callable[[str], ServerSession], session_id: str, writer: int) -> None:
    async def write() -> None:
        session = factory(session_id)
        for n in range(WRITES):
            await session.add_items([{"writer": writer, "n": n}])
        await session.close()

    asyncio.run(write())


@pytest.fixture(params=["redis", "postgres"])
def factory(request: pytest.FixtureRequest, redis_prefix: str) -> Callable[[str], ServerSession]:
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        return functools.partial(RedisSession, url=url, key_prefix=redis_prefix)
    url = request.getfixturevalue("database_url")
    table = request.getfixturevalue("postgres_table")
    return functools.partial(PostgresSession, url=url, table=table)


@pytest.mark.slow
async def test_four_processes_of_500_writes_lose_and_duplicate_nothing(
    factory: Callable[[str], ServerSession],
) -> None:
    session_id = f"processes-{uuid.uuid4().hex}"
    context = multiprocessing.get_context("spawn")
    children = [
        context.Process(target=_write_in_child, args=(factory, session_id, writer))
        for writer in range(PROCESSES)
    ]
    for child in children:
        child.start()

    def join_all() -> None:
        for child in children:
            child.join()

    await asyncio.get_running_loop().run_in_executor(None, join_all)
    assert [child.exitcode for child in children] == [0] * PROCESSES
    session = factory(session_id)
    items = await session.get_items()
    await session.clear_session()
    await session.close()
    assert len(items) == PROCESSES * WRITES
    for writer in range(PROCESSES):
        assert [item["n"] for item in items if item["writer"] == writer] == list(range(WRITES))
