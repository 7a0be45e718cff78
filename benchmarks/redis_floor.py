"""How fast can one `LRANGE key -10 -1` be on redis-py? The floor under any session built on it.

In one run on `REDIS_URL` (default `redis://127.0.0.1:6379/0`), the same read of the latest
10 of 100 items: the Agents SDK's `RedisSession.get_items(limit=10)`, ours, the bare command
through a redis-py client, at redis-py's connection level (no pool, no retry wrapper), and
as raw RESP bytes over asyncio streams. A session library on redis-py cannot be cheaper per
call than the connection-level figure, so SDK / connection level bounds the speed-up any
such library can show over the SDK. Prints microseconds per call, medians of 3 runs.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable

import redis.asyncio as aioredis
from agents.extensions.memory.redis_session import RedisSession as SDKRedisSession

from agent_sessions.redis import RedisSession

CALLS = 3000
URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


async def per_call(call: Callable[[], Awaitable[object]]) -> float:
    """Median over 3 runs of the seconds one call takes."""
    runs = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(CALLS):
            await call()
        runs.append((time.perf_counter() - start) / CALLS)
    return statistics.median(runs)


async def main() -> None:
    run_id = uuid.uuid4().hex
    items = [{"role": "user", "content": "hi"}] * 100
    sdk_client = aioredis.Redis.from_url(URL)
    sdk = SDKRedisSession("floor", redis_client=sdk_client, key_prefix=f"bench:sdk:{run_id}")
    ours = RedisSession("floor", URL, key_prefix=f"bench:ours:{run_id}:")
    await sdk.add_items(items)  # type: ignore[arg-type]
    await ours.add_items(items)
    key = f"bench:floor:{run_id}"
    client = aioredis.Redis.from_url(URL)
    await client.rpush(key, *[b'{"role":"user","content":"hi"}'] * 100)
    connection = await client.connection_pool.get_connection()  # type: ignore[no-untyped-call]
    packed = connection.pack_command("LRANGE", key, -10, -1)

    async def through_connection() -> object:
        await connection.send_packed_command(packed, check_health=False)
        return await connection.read_response()

    host_port = URL.split("//", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
    host, _, port = host_port.partition(":")
    reader, writer = await asyncio.open_connection(host or "127.0.0.1", int(port or 6379))
    raw_command = b"".join(
        f"${len(part)}\r\n".encode() + part + b"\r\n"
        for part in (b"LRANGE", key.encode(), b"-10", b"-1")
    )
    raw_command = b"*4\r\n" + raw_command

    async def raw_streams() -> object:
        writer.write(raw_command)
        await writer.drain()
        count = int((await reader.readline())[1:])
        for _ in range(count):
            length = int((await reader.readline())[1:])
            await reader.readexactly(length + 2)
        return count

    try:
        figures = {
            "Agents SDK RedisSession.get_items(10)": await per_call(lambda: sdk.get_items(10)),
            "ours RedisSession.get_items(10)": await per_call(lambda: ours.get_items(10)),
            "redis-py client (client.lrange)": await per_call(lambda: client.lrange(key, -10, -1)),
            "redis-py connection level": await per_call(through_connection),
            "raw RESP over asyncio streams": await per_call(raw_streams),
        }
    finally:
        writer.close()
        await client.connection_pool.release(connection)
        await client.delete(key)
        await client.aclose()
        await sdk.clear_session()
        await sdk_client.aclose()
        await ours.clear_session()
        await ours.close()
    floor = figures["redis-py connection level"]
    for name, seconds in figures.items():
        print(f"{name:40} {seconds * 1e6:8.1f} us/call")
    sdk_seconds = figures["Agents SDK RedisSession.get_items(10)"]
    print(f"SDK / ours: {sdk_seconds / figures['ours RedisSession.get_items(10)']:.2f}x; ")
    print(
        f"SDK / redis-py connection level (the most any library on redis-py can show): "
        f"{sdk_seconds / floor:.2f}x"
    )


if __name__ == "__main__":
    asyncio.run(main())
