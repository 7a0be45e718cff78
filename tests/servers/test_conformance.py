"""The conformance kit against the real Redis and PostgreSQL servers.

Every session the kit creates shares one store, as an application's would, whichever
event loop or thread creates and uses it (the store keeps a client per loop). Child
processes open the same server through ``child_session_factory``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
from psycopg import sql

from agent_sessions import Session, SessionSettings
from agent_sessions.postgres import PostgresSession, PostgresStore
from agent_sessions.redis import RedisSession, RedisStore
from agent_sessions.testing import SessionConformance


class TestRedisSession(SessionConformance):
    supports_processes = True
    url: str
    key_prefix: str
    store: RedisStore

    @pytest.fixture(autouse=True)
    async def redis_store(self, redis_url: str, redis_prefix: str) -> AsyncIterator[None]:
        self.url, self.key_prefix = redis_url, redis_prefix
        async with RedisStore(redis_url, key_prefix=redis_prefix) as store:
            self.store = store
            yield

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.store.session(session_id, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(RedisSession, url=self.url, key_prefix=self.key_prefix)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, RedisSession)
        await self.store._client_for("test").rpush(self.store._key(session.session_id), raw)


class TestPostgresSession(SessionConformance):
    supports_processes = True
    url: str
    table: str
    store: PostgresStore

    @pytest.fixture(autouse=True)
    async def postgres_store(self, database_url: str, postgres_table: str) -> AsyncIterator[None]:
        self.url, self.table = database_url, postgres_table
        async with PostgresStore(database_url, table=postgres_table) as store:
            self.store = store
            yield

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.store.session(session_id, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(PostgresSession, url=self.url, table=self.table)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        """Insert ``raw`` as a foreign writer would; the ``json`` column itself refuses
        text that is not JSON, so such a row cannot exist and its test is skipped."""
        assert isinstance(session, PostgresSession)
        insert = sql.SQL("INSERT INTO {} (session_id, payload) VALUES (%s, %s::json)").format(
            sql.Identifier(self.table)
        )
        try:
            text = raw.decode("utf-8")
            async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                await conn.execute(insert, (session.session_id, text))
        except (UnicodeDecodeError, psycopg.DataError) as exc:
            reason = str(exc).splitlines()[0]
            pytest.skip(f"PostgreSQL's json column refuses {raw!r} ({reason}): no such row")
