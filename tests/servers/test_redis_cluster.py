"""Redis Cluster (issue 23): a ``RedisCluster`` client works for every operation (the
whole conformance kit, with and without a TTL, listing across nodes, other event
loops), and a URL or plain client naming one node of a cluster is refused at the first
call, before anything is written. The cluster is a real one on loopback, started here
(three primaries, ``redis-cli --cluster create``)."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from agent_sessions import Session, SessionClosedError, SessionConfigError, SessionSettings
from agent_sessions.redis import RedisSession, RedisStore, session_key
from agent_sessions.testing import SessionConformance

from .own_servers import redis_cluster
from .test_conformance import UNREACHABLE_SECRET, free_port


@pytest.fixture(scope="module")
def cluster_ports() -> Iterator[list[int]]:
    with redis_cluster() as ports:
        yield ports


@pytest.fixture
async def cluster_client(cluster_ports: list[int]) -> AsyncIterator[RedisCluster]:
    client = RedisCluster(host="127.0.0.1", port=cluster_ports[0])
    yield client
    await client.aclose()


def _prefix() -> str:
    return f"cluster_test:{uuid.uuid4().hex[:12]}:"


def _child_session(
    ports: list[int], key_prefix: str, ttl: float | None, session_id: str
) -> Session:
    """A session on the cluster, made in a child process (the kit's process test)."""
    client = RedisCluster(host="127.0.0.1", port=ports[0])
    return RedisStore(client=client, key_prefix=key_prefix, ttl=ttl).session(session_id)


class TestRedisClusterSession(SessionConformance):
    """The conformance kit on a store given a RedisCluster client."""

    supports_processes = True
    ttl: float | None = None
    store: RedisStore
    ports: list[int]

    @pytest.fixture(autouse=True)
    async def cluster_store(
        self, cluster_ports: list[int], cluster_client: RedisCluster
    ) -> AsyncIterator[None]:
        self.ports = cluster_ports
        async with RedisStore(client=cluster_client, key_prefix=_prefix(), ttl=self.ttl) as store:
            self.store = store
            # The injected client serves the first loop that uses the store: make it this
            # one (the fixture's), not a thread's loop that is gone when the client closes.
            await store.ping()
            yield

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.store.session(session_id, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(_child_session, self.ports, self.store.key_prefix, self.ttl)

    failing_client: RedisCluster | None = None

    def failing_store_address(self) -> tuple[str, str]:
        port = free_port()
        self.failing_client = RedisCluster(
            host="127.0.0.1", port=port, password=UNREACHABLE_SECRET, socket_connect_timeout=1
        )
        return f"redis://127.0.0.1:{port} (Redis Cluster)", UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        assert self.failing_client is not None
        return RedisSession(session_id, redis_client=self.failing_client, key_prefix=_prefix())

    @pytest.fixture(autouse=True)
    async def close_failing_client(self) -> AsyncIterator[None]:
        yield
        if self.failing_client is not None:
            await self.failing_client.aclose()
            self.failing_client = None

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        client = await self.store._ready_client()
        await client.rpush(self.store._key(session.session_id), raw)


class TestRedisClusterSessionWithTTL(TestRedisClusterSession):
    """Writes with a TTL are MULTI/EXEC transactions with a script, on the key's node."""

    ttl = 3600


async def test_the_cluster_spreads_sessions_over_its_nodes(cluster_client: RedisCluster) -> None:
    prefix = _prefix()
    store = RedisStore(client=cluster_client, key_prefix=prefix, ttl=60)
    ids = [f"user-{n}" for n in range(30)]
    for session_id in ids:
        await store.session(session_id).add_items([{"id": session_id}])
    nodes = {
        str(cluster_client.get_node_from_key(session_key(prefix, sid).decode())) for sid in ids
    }
    assert len(nodes) == 3  # the test is about a real spread, not one node
    for session_id in ids:
        key = session_key(prefix, session_id)
        assert await cluster_client.lrange(key, 0, -1) == [f'{{"id":"{session_id}"}}'.encode()]
        assert 0 < await cluster_client.ttl(key) <= 60


async def test_listing_pages_through_every_node_once(cluster_client: RedisCluster) -> None:
    store = RedisStore(client=cluster_client, key_prefix=_prefix())
    ids = {f"s{n:02}" for n in range(40)}
    for session_id in ids:
        await store.session(session_id).add_items([{"n": 1}])
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await store.list_sessions(limit=7, cursor=cursor)
        seen.extend(page.session_ids)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            break
    assert sorted(seen) == sorted(ids)  # every id exactly once
    assert pages >= 6
    with pytest.raises(ValueError, match="cursor"):
        await store.list_sessions(cursor="12345")  # a plain store's cursor names no node
    with pytest.raises(ValueError, match="cursor"):
        await store.list_sessions(cursor="9.0")  # no tenth node


def test_asyncio_run_per_call(cluster_ports: list[int]) -> None:
    # The given client serves the first loop; each later asyncio.run gets a cluster
    # client of the store's own, with the same startup nodes and settings.
    client = RedisCluster(host="127.0.0.1", port=cluster_ports[0], decode_responses=True)
    store = RedisStore(client=client, key_prefix=_prefix(), ttl=60)
    session = store.session("u")
    for n in range(3):
        asyncio.run(session.add_items([{"n": n}]))
    assert asyncio.run(session.get_items()) == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert asyncio.run(session.pop_item()) == {"n": 2}
    assert asyncio.run(store.list_sessions()).session_ids == ["u"]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    asyncio.run(store.close())


async def test_the_sdk_form_with_a_cluster_client(cluster_client: RedisCluster) -> None:
    session = RedisSession("u", redis_client=cluster_client, key_prefix=_prefix()[:-1], ttl=60)
    assert await session.ping() is True
    await session.add_items([{"n": 1}])
    assert await session.get_items() == [{"n": 1}]
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.get_items()
    assert await cluster_client.ping() is True


@pytest.mark.parametrize("how", ["url", "client", "from_url"])
async def test_one_node_by_url_or_plain_client_is_refused_at_the_first_call(
    cluster_ports: list[int], cluster_client: RedisCluster, how: str
) -> None:
    url = f"redis://127.0.0.1:{cluster_ports[0]}/0"
    prefix = _prefix()
    client = aioredis.Redis.from_url(url)
    try:
        if how == "url":
            session = RedisSession("u", url, key_prefix=prefix)
        elif how == "client":
            session = RedisSession("u", redis_client=client, key_prefix=prefix)
        else:
            session = RedisSession.from_url("u", url=url, key_prefix=prefix)
        for n in range(5):  # whichever node holds the id's slot
            other = session if n == 0 else RedisSession(f"u{n}", url, key_prefix=prefix)
            with pytest.raises(SessionConfigError, match="node of a Redis Cluster"):
                await other.add_items([{"n": n}])
            await other.close()
        pattern = prefix.replace(":", "\\:") + "*"
        keys = [key async for key in cluster_client.scan_iter(match=pattern)]
        assert keys == []  # nothing written, not even the layout's version
    finally:
        await client.aclose()
