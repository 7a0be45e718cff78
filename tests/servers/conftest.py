"""The servers the Redis, PostgreSQL and SQLAlchemy tests run against, and their cleanup.

``REDIS_URL``, ``DATABASE_URL`` and ``MYSQL_URL`` (MariaDB, for SQLAlchemy) name them
(defaults: the local servers `.ci/services` starts). A server that does not answer skips
its tests with a one-line reason; under CI (any truthy ``CI``) tests/conftest.py turns
that skip into a failure. Every test run uses its own key prefix and its own table,
removed at the end, so parallel runs and leftover data do not interfere.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Iterator

import psycopg
import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from psycopg import sql
from sqlalchemy.ext.asyncio import create_async_engine

from agent_sessions.postgres import MIGRATIONS_TABLE
from agent_sessions.sqlalchemy import MIGRATIONS_TABLE as SA_MIGRATIONS_TABLE

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"


def _unavailable(reason: str) -> None:
    pytest.skip(reason)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = os.environ.get("REDIS_URL", DEFAULT_REDIS_URL)

    async def ping() -> None:
        client = aioredis.Redis.from_url(url, socket_connect_timeout=2)
        try:
            await client.ping()
        finally:
            await client.aclose()

    try:
        asyncio.run(ping())
    except Exception as exc:
        _unavailable(f"Redis not reachable at REDIS_URL={url}: {_first_line(exc)}")
    return url


@pytest.fixture(scope="session")
def database_url() -> str:
    url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    try:
        psycopg.connect(url, connect_timeout=2).close()
    except Exception as exc:
        _unavailable(f"PostgreSQL not reachable at DATABASE_URL={url}: {_first_line(exc)}")
    return url


@pytest.fixture(scope="session")
def redis_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix of this test run's own; its keys are deleted afterwards."""
    prefix = f"agent_sessions_test:{uuid.uuid4().hex[:12]}:"
    yield prefix

    async def delete_keys() -> None:
        client = aioredis.Redis.from_url(redis_url)
        try:
            async for key in client.scan_iter(match=prefix.replace(":", "\\:") + "*"):
                await client.delete(key)
        finally:
            await client.aclose()

    asyncio.run(delete_keys())


@pytest.fixture(scope="session")
def postgres_tables(database_url: str) -> Iterator[list[str]]:
    """Tables created by this test run (append to the list); dropped afterwards."""
    tables: list[str] = []
    yield tables
    with psycopg.connect(database_url, autocommit=True) as conn:
        for table in tables:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
            conn.execute(
                sql.SQL("DELETE FROM {} WHERE table_name = %s").format(
                    sql.Identifier(MIGRATIONS_TABLE)
                ),
                (table,),
            )


@pytest.fixture(scope="session")
def postgres_table(postgres_tables: list[str]) -> str:
    """The table this test run's PostgreSQL sessions share."""
    table = f"test_items_{uuid.uuid4().hex[:12]}"
    postgres_tables.append(table)
    return table


@pytest.fixture
def fresh_postgres_table(postgres_tables: list[str]) -> str:
    """A table of one test's own (for schema and migration tests)."""
    table = f"test_items_{uuid.uuid4().hex[:12]}"
    postgres_tables.append(table)
    return table


@pytest.fixture
async def redis_client(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    """A client of the test's own, for looking at what the store wrote."""
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


# -- the SQLAlchemy backend's servers (tests/servers/test_sqlalchemy*.py) --------------------

DEFAULT_MYSQL_URL = "mysql+asyncmy://root@127.0.0.1:3306/test"


def _sa_reachable(url: str, what: str) -> str:
    async def ping() -> None:
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        finally:
            await engine.dispose()

    try:
        asyncio.run(ping())
    except Exception as exc:
        pytest.skip(f"{what} not reachable at {url}: {_first_line(exc)}")
    return url


@pytest.fixture(scope="session")
def mysql_url() -> str:
    return _sa_reachable(os.environ.get("MYSQL_URL", DEFAULT_MYSQL_URL), "MariaDB (MYSQL_URL)")


@pytest.fixture(scope="session")
def sa_postgres_url() -> str:
    url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    rest = url.partition("://")[2]
    return _sa_reachable(f"postgresql+psycopg://{rest}", "PostgreSQL (DATABASE_URL)")


@pytest.fixture(scope="session")
def sa_asyncpg_url() -> str:
    """PostgreSQL through asyncpg, the Agents SDK's driver (its statements take the
    driver-connection path too)."""
    url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL)
    rest = url.partition("://")[2]
    return _sa_reachable(f"postgresql+asyncpg://{rest}", "PostgreSQL (DATABASE_URL)")


@pytest.fixture(scope="session")
def created_tables() -> Iterator[list[tuple[str, str]]]:
    """(url, table) pairs this run created on the servers; dropped afterwards."""
    created: list[tuple[str, str]] = []
    yield created

    async def drop() -> None:
        for url, table in created:
            engine = create_async_engine(url)
            try:
                async with engine.begin() as conn:
                    for name in (table, f"{table}_locks"):
                        await conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))
                    if await conn.run_sync(
                        lambda sync: sa.inspect(sync).has_table(SA_MIGRATIONS_TABLE)
                    ):
                        await conn.execute(
                            sa.text(f"DELETE FROM {SA_MIGRATIONS_TABLE} WHERE table_name = :t"),
                            {"t": table},
                        )
            finally:
                await engine.dispose()

    asyncio.run(drop())


def new_sa_table(url: str, created: list[tuple[str, str]]) -> str:
    """A fresh table name for the SQLAlchemy backend on ``url``, dropped after the run."""
    table = f"test_sa_{uuid.uuid4().hex[:12]}"
    created.append((url, table))
    return table
