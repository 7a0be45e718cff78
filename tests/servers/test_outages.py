"""Outages: a fault-injecting proxy in front of the real server cuts connections mid-use.

Each test runs against Redis and PostgreSQL alike, through a URL that carries a password
(accepted by the test servers: Redis's default user has no password, PostgreSQL trusts
loopback), so that the error message can be checked for the masked URL.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from agent_sessions import SessionBackendError
from agent_sessions.postgres import PostgresStore
from agent_sessions.redis import RedisStore

from .proxy import (
    PASSWORD,
    FaultyProxy,
    check_acknowledged_items_survive_a_cut,
    cut_batch,
    proxied_url,
)


@dataclass
class Outage:
    proxy: FaultyProxy
    store: RedisStore | PostgresStore
    masked_url: str


@pytest.fixture(params=["redis", "redis-with-ttl", "postgres"])
async def outage(
    request: pytest.FixtureRequest, redis_prefix: str, postgres_table: str
) -> AsyncIterator[Outage]:
    backend: str = request.param
    redis = backend.startswith("redis")
    url: str = request.getfixturevalue("redis_url" if redis else "database_url")
    target = urlsplit(url)
    proxy = FaultyProxy(target.hostname or "127.0.0.1", target.port or 0)
    await proxy.start()
    store: RedisStore | PostgresStore
    if redis:
        proxied, masked = proxied_url(url, proxy.port, user="default")
        # With a TTL every write is MULTI/RPUSH/PEXPIRE/EXEC: a cut transaction is dropped.
        ttl = 600 if backend == "redis-with-ttl" else None
        store = RedisStore(proxied, key_prefix=redis_prefix, ttl=ttl)
    else:
        proxied, masked = proxied_url(url, proxy.port, user=target.username or "postgres")
        # Long enough for the pool to retry connecting (it backs off) once the server is back.
        store = PostgresStore(proxied, table=postgres_table, timeout=10.0)
    yield Outage(proxy, store, masked)
    await store.close()
    await proxy.stop()


def _new_id() -> str:
    return f"outage-{uuid.uuid4().hex}"


BATCH = [{"n": i, "text": "x" * 200} for i in range(1, 51)]


async def test_cut_mid_request_raises_backend_error_naming_masked_url(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    caught = await cut_batch(session, outage.proxy, "mid_request", BATCH, SessionBackendError)
    assert outage.masked_url in str(caught)
    assert PASSWORD not in str(caught)


async def test_batch_cut_mid_request_stores_none_of_its_items(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    await cut_batch(session, outage.proxy, "mid_request", BATCH, SessionBackendError)
    assert await session.get_items() == [{"n": 0}]


async def test_batch_whose_reply_is_lost_is_stored_whole_or_not_and_says_so(
    outage: Outage,
) -> None:
    session = outage.store.session(_new_id())
    caught = await cut_batch(session, outage.proxy, "before_reply", BATCH, SessionBackendError)
    if isinstance(outage.store, PostgresStore):
        # COMMIT was never sent: the server rolled the insert back, and says so.
        assert not caught.may_have_written
        assert await session.get_items() == [{"n": 0}]
    else:
        # Redis may have stored it (one RPUSH).
        assert caught.may_have_written
        assert await session.get_items() in ([{"n": 0}], [{"n": 0}, *BATCH])


async def test_batch_cut_mid_request_says_whether_it_may_have_been_written(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    assert await session.get_items() == []  # connected and ready
    outage.proxy.cut_next_request("mid_request")
    with pytest.raises(SessionBackendError) as caught:
        await session.add_items(BATCH)
    # PostgreSQL: the insert was cut before COMMIT was sent, so it certainly rolled back.
    assert caught.value.may_have_written is not isinstance(outage.store, PostgresStore)
    assert len(await session.get_items()) in (0, len(BATCH))


async def test_read_failing_in_an_outage_says_nothing_was_written(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    outage.proxy.down()
    with pytest.raises(SessionBackendError) as caught:
        await session.get_items()
    assert not caught.value.may_have_written


async def test_acknowledged_items_survive_a_cut_and_writes_work_after_it(
    outage: Outage,
) -> None:
    await check_acknowledged_items_survive_a_cut(
        outage.store.session(_new_id()), outage.proxy, SessionBackendError
    )


async def test_server_down_raises_backend_error_naming_masked_url(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    outage.proxy.down()
    with pytest.raises(SessionBackendError) as caught:
        await session.get_items()
    assert outage.masked_url in str(caught.value)
    assert PASSWORD not in str(caught.value)


async def test_session_works_again_once_the_server_is_back(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    outage.proxy.down()
    with pytest.raises(SessionBackendError):
        await session.add_items([{"n": 1}])
    outage.proxy.up()
    await session.add_items([{"n": 2}])
    assert await session.get_items() == [{"n": 0}, {"n": 2}]
