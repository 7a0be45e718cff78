"""Redis Cluster (issue 23): refused clearly, at construction for a ``RedisCluster`` client
and at the first call for a plain client or URL naming a cluster node; never a crash
deep inside, never a session that works for some ids and not others. The cluster is a
real one on loopback, started here (three primaries, ``redis-cli --cluster create``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster

from agent_sessions import SessionConfigError
from agent_sessions.redis import RedisSession, RedisStore

from .own_servers import redis_cluster


@pytest.fixture(scope="module")
def cluster_ports() -> Iterator[list[int]]:
    with redis_cluster() as ports:
        yield ports


@pytest.fixture
async def cluster_client(cluster_ports: list[int]) -> AsyncIterator[RedisCluster]:
    client = RedisCluster(host="127.0.0.1", port=cluster_ports[0])
    yield client
    await client.aclose()


async def test_the_cluster_serves_every_slot(cluster_client: RedisCluster) -> None:
    # The fixture's cluster is real: keys of many slots land on different nodes.
    for n in range(20):
        await cluster_client.set(f"probe:{n}", n)
    nodes = {str(cluster_client.get_node_from_key(f"probe:{n}")) for n in range(20)}
    assert len(nodes) == 3


async def test_a_cluster_client_is_refused_at_construction(cluster_client: RedisCluster) -> None:
    with pytest.raises(SessionConfigError, match="RedisCluster") as caught:
        RedisStore(client=cluster_client)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "MULTI" in message  # what is unsupported
    assert "SCAN" in message
    with pytest.raises(SessionConfigError, match="RedisCluster"):
        RedisSession("u", redis_client=cluster_client)  # type: ignore[arg-type]
    # The caller's client is untouched and usable.
    await cluster_client.set("after-refusal", "ok")
    assert await cluster_client.get("after-refusal") == b"ok"


@pytest.mark.parametrize("how", ["url", "client", "from_url"])
async def test_a_cluster_node_by_url_or_plain_client_is_refused_at_the_first_call(
    cluster_ports: list[int], cluster_client: RedisCluster, how: str
) -> None:
    url = f"redis://127.0.0.1:{cluster_ports[0]}/0"
    client = aioredis.Redis.from_url(url)
    try:
        if how == "url":
            session = RedisSession("u", url)
        elif how == "client":
            session = RedisSession("u", redis_client=client)
        else:
            session = RedisSession.from_url("u", url=url)
        for n in range(5):  # whichever node holds the id's slot
            other = session if n == 0 else RedisSession(f"u{n}", redis_client=client)
            with pytest.raises(SessionConfigError, match="Redis Cluster"):
                await other.add_items([{"n": n}])
        await session.close()
        keys = [key async for key in cluster_client.scan_iter(match="agent_sessions:*")]
        assert keys == []  # nothing written, not even the layout's version
    finally:
        await client.aclose()
