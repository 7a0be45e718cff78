"""Outages: a fault-injecting proxy in front of the real server cuts connections mid-use.

Each test runs against Redis and PostgreSQL alike, through a URL that carries a password
(accepted by the test servers: Redis's default user has no password, PostgreSQL trusts
loopback), so that the error message can be checked for the masked URL.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import pytest

from agent_sessions import SessionBackendError
from agent_sessions.postgres import PostgresStore
from agent_sessions.redis import RedisStore

from .proxy import FaultyProxy

PASSWORD = "s3cret-pw"


@dataclass
class Outage:
    proxy: FaultyProxy
    store: RedisStore | PostgresStore
    masked_url: str


def _through_proxy(url: str, port: int, user: str) -> tuple[str, str]:
    """``url`` pointed at the proxy with a password, and the same URL as errors show it."""
    parts = urlsplit(url)
    rest = parts._replace(netloc="").geturl().removeprefix(f"{parts.scheme}:")
    host = f"127.0.0.1:{port}"
    return (
        f"{parts.scheme}://{user}:{PASSWORD}@{host}{rest.removeprefix('//')}",
        f"{parts.scheme}://{user}:***@{host}{rest.removeprefix('//')}",
    )


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
        proxied, masked = _through_proxy(url, proxy.port, "default")
        # With a TTL every write is MULTI/RPUSH/PEXPIRE/EXEC: a cut transaction is dropped.
        ttl = 600 if backend == "redis-with-ttl" else None
        store = RedisStore(proxied, key_prefix=redis_prefix, ttl=ttl)
    else:
        proxied, masked = _through_proxy(url, proxy.port, target.username or "postgres")
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
    await session.add_items([{"n": 0}])
    outage.proxy.cut_next_request("mid_request")
    with pytest.raises(SessionBackendError) as caught:
        await session.add_items(BATCH)
    assert outage.masked_url in str(caught.value)
    assert PASSWORD not in str(caught.value)


async def test_batch_cut_mid_request_stores_none_of_its_items(outage: Outage) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    outage.proxy.cut_next_request("mid_request")
    with pytest.raises(SessionBackendError):
        await session.add_items(BATCH)
    assert await session.get_items() == [{"n": 0}]


async def test_batch_whose_reply_is_lost_is_stored_whole_or_not_and_says_so(
    outage: Outage,
) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    outage.proxy.cut_next_request("before_reply")
    with pytest.raises(SessionBackendError) as caught:
        await session.add_items(BATCH)
    if isinstance(outage.store, PostgresStore):
        # COMMIT was never sent: the server rolled the insert back, and says so.
        assert not caught.value.may_have_written
        assert await session.get_items() == [{"n": 0}]
    else:
        # Redis may have stored it (one RPUSH).
        assert caught.value.may_have_written
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
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    await session.add_items([{"n": 1}, {"n": 2}])
    outage.proxy.cut()
    # The dead connection is either replaced silently or reported once; never retried
    # blindly (a retried write could be stored twice).
    with contextlib.suppress(SessionBackendError):
        await session.get_items()
    await session.add_items([{"n": 3}])
    assert await session.get_items() == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]


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
