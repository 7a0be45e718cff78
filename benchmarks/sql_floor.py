"""How fast can one durable write be on MariaDB and PostgreSQL? The floor under any session.

In one run, interleaved, on each server: a single-item `add_items` and a `pop_item` of the
Agents SDK's `SQLAlchemySession`, of ours (`agent_sessions.sqlalchemy`), and the bare
statement through the driver itself (asyncmy, asyncpg; one autocommit `INSERT`, one
`DELETE ... RETURNING`, no SQLAlchemy). Each commit waits for the server's log flush, so no
session can be cheaper per write than the bare statement: SDK / bare driver bounds the
speed-up any session can show over the SDK on writes. Prints milliseconds per call,
medians of 3 runs. Servers: `MYSQL_URL` (default `mysql+asyncmy://root@127.0.0.1:3306/test`)
and `DATABASE_URL` (default `postgresql://postgres@127.0.0.1:5432/test`, driven through
asyncpg). Needs the benchmark peers (`pip install "sqlalchemy[asyncio]" asyncpg`).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import asyncmy  # type: ignore[import-untyped, import-not-found, unused-ignore]
import asyncpg  # type: ignore[import-untyped, import-not-found, unused-ignore]

from agent_sessions.sqlalchemy import SQLAlchemyStore

# benchmarks/sessions.py: its server defaults and the SDK's set-up (tables on MariaDB).
sys.path.insert(0, str(Path(__file__).parent))
bench: Any = importlib.import_module("sessions")

CALLS = 200
ITEM = {"role": "user", "content": "message 1"}
PAYLOAD = json.dumps(ITEM)
MYSQL_URL = os.environ.get("MYSQL_URL", bench.DEFAULT_MYSQL_URL)
POSTGRES_URL = (
    "postgresql+asyncpg://"
    + os.environ.get("DATABASE_URL", bench.DEFAULT_DATABASE_URL).partition("://")[2]
)
Call = Callable[[], Awaitable[object]]


class Bare:
    """The bare statements on one driver connection of their own table."""

    add: Call
    pop: Call
    fill: Callable[[int], Awaitable[object]]
    close: Call


@asynccontextmanager
async def bare_mariadb(table: str) -> AsyncIterator[Bare]:
    parts = urlsplit(MYSQL_URL)
    conn = await asyncmy.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
        database=parts.path.lstrip("/"),
        autocommit=True,
    )
    cursor = conn.cursor()
    await cursor.execute(
        f"CREATE TABLE {table} (id BIGINT AUTO_INCREMENT PRIMARY KEY, sid VARBINARY(255)"
        " NOT NULL, payload LONGTEXT NOT NULL, KEY (sid, id)) ENGINE=InnoDB"
    )
    bare = Bare()

    async def add() -> None:
        await cursor.execute(f"INSERT INTO {table} (sid, payload) VALUES (%s, %s)", (b"s", PAYLOAD))

    async def pop() -> object:
        await cursor.execute(
            f"DELETE FROM {table} WHERE sid = %s ORDER BY id DESC LIMIT 1 RETURNING id, payload",
            (b"s",),
        )
        return await cursor.fetchall()

    async def fill(count: int) -> None:
        await cursor.executemany(
            f"INSERT INTO {table} (sid, payload) VALUES (%s, %s)", [(b"s", PAYLOAD)] * count
        )

    bare.add, bare.pop, bare.fill = add, pop, fill
    try:
        yield bare
    finally:
        await cursor.execute(f"DROP TABLE {table}")
        conn.close()


@asynccontextmanager
async def bare_postgres(table: str) -> AsyncIterator[Bare]:
    conn: Any = await asyncpg.connect(POSTGRES_URL.replace("+asyncpg", "", 1))
    await conn.execute(
        f"CREATE TABLE {table} (id BIGSERIAL PRIMARY KEY, sid BYTEA NOT NULL,"
        " payload TEXT NOT NULL)"
    )
    await conn.execute(f"CREATE INDEX ON {table} (sid, id)")
    bare = Bare()

    async def add() -> None:
        await conn.execute(f"INSERT INTO {table} (sid, payload) VALUES ($1, $2)", b"s", PAYLOAD)

    async def pop() -> object:
        return await conn.fetch(
            f"DELETE FROM {table} WHERE id = (SELECT id FROM {table} WHERE sid = $1"
            " ORDER BY id DESC LIMIT 1 FOR UPDATE) RETURNING id, payload",
            b"s",
        )

    async def fill(count: int) -> None:
        await conn.executemany(
            f"INSERT INTO {table} (sid, payload) VALUES ($1, $2)", [(b"s", PAYLOAD)] * count
        )

    bare.add, bare.pop, bare.fill = add, pop, fill
    try:
        yield bare
    finally:
        await conn.execute(f"DROP TABLE {table}")
        await conn.close()


async def per_call(call: Call) -> float:
    start = time.perf_counter()
    for _ in range(CALLS):
        await call()
    return (time.perf_counter() - start) / CALLS


async def server(name: str, url: str, bare_of: Callable[[str], Any]) -> None:
    run_id = uuid.uuid4().hex[:12]
    table = f"bench_floor_{run_id}"
    runs: dict[str, list[float]] = {}
    async with bench._sdk_sql(run_id, url) as sdk_sessions, bare_of(table) as bare:
        store = SQLAlchemyStore(url, table=f"bench_floor_sa_{run_id}")
        sdk, ours = sdk_sessions("floor"), store.session("floor")
        await sdk.add_items([ITEM])  # connections and tables ready
        await ours.add_items([ITEM])
        try:
            for _ in range(3):
                adds: list[tuple[str, Call]] = [
                    ("sdk", lambda: sdk.add_items([ITEM])),
                    ("ours", lambda: ours.add_items([ITEM])),
                    ("bare driver", bare.add),
                ]
                for label, call in adds:
                    runs.setdefault(f"add_items, 1 item | {label}", []).append(await per_call(call))
                await sdk.add_items([ITEM] * CALLS)
                await ours.add_items([ITEM] * CALLS)
                await bare.fill(CALLS)
                for label, call in [("sdk", sdk.pop_item), ("ours", ours.pop_item)]:
                    runs.setdefault(f"pop_item | {label}", []).append(await per_call(call))
                runs.setdefault("pop_item | bare driver", []).append(await per_call(bare.pop))
        finally:
            await ours.clear_session()
            await sdk.clear_session()
            await store.close()
            await bench._drop_sql_tables(
                url,
                [f"bench_floor_sa_{run_id}", f"bench_floor_sa_{run_id}_locks"],
                migrated=f"bench_floor_sa_{run_id}",
            )
    medians = {key: statistics.median(values) for key, values in runs.items()}
    for operation in ("add_items, 1 item", "pop_item"):
        sdk_s, ours_s, bare_s = (
            medians[f"{operation} | {label}"] for label in ("sdk", "ours", "bare driver")
        )
        print(
            f"| {operation} | {name} | {sdk_s * 1e3:.2f} ms | {ours_s * 1e3:.2f} ms | "
            f"{bare_s * 1e3:.2f} ms | {sdk_s / ours_s:.2f}x | {sdk_s / bare_s:.2f}x |"
        )


async def main() -> None:
    print(
        "| operation | server | sdk | ours (SQLAlchemy) | bare driver | sdk / ours "
        "| sdk / bare driver |"
    )
    print("|---|---|---|---|---|---|---|")
    await server("mariadb", MYSQL_URL, bare_mariadb)
    await server("postgres", POSTGRES_URL, bare_postgres)


if __name__ == "__main__":
    asyncio.run(main())
