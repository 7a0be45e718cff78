"""The conformance kit against the real Redis and PostgreSQL servers.

Every session the kit creates shares one store, as an application's would, whichever
event loop or thread creates and uses it (the store keeps a client per loop). Child
processes open the same server through ``child_session_factory``. The frozen-server
tests reach the server through a :class:`FreezableProxy` of the test's own, with short
timeouts.
"""

from __future__ import annotations

import functools
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from agent_sessions import Session, SessionSettings
from agent_sessions.postgres import PostgresSession, PostgresStore
from agent_sessions.redis import RedisSession, RedisStore
from agent_sessions.testing import SessionConformance

from .freezer import FreezableProxy


class FreezableServer:
    """The frozen-server hooks of the kit, through a proxy started on first use."""

    proxy: FreezableProxy | None = None
    frozen_call_bound = 40.0  # PostgreSQL's driver waits up to 10s to cancel a query

    async def proxied(self, url: str) -> str:
        parts = urlsplit(url)
        self.proxy = FreezableProxy(parts.hostname or "127.0.0.1", parts.port or 0)
        await self.proxy.start()
        netloc = parts.netloc.rpartition("@")
        host = f"{netloc[0]}@" if netloc[1] else ""
        return parts._replace(netloc=f"{host}127.0.0.1:{self.proxy.port}").geturl()

    @pytest.fixture(autouse=True)
    async def stop_proxy(self) -> AsyncIterator[None]:
        yield
        if self.proxy is not None:
            await self.proxy.stop()
            self.proxy = None

    def freeze_server(self) -> AbstractAsyncContextManager[None]:
        assert self.proxy is not None
        return self.proxy.frozen()


def free_port() -> int:
    """A loopback port where nothing listens (just now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def unreachable_url(url: str) -> tuple[str, str]:
    """``url``'s scheme and path on a loopback port where nothing listens, with a user and
    a password spelled with ``/`` and ``#``; and the URL as errors print it."""
    parts = urlsplit(url)
    netloc = f"127.0.0.1:{free_port()}"
    raw = parts._replace(netloc=f"kit:pa%2Fss%23{UNREACHABLE_SECRET}@{netloc}").geturl()
    return raw, parts._replace(netloc=f"kit:***@{netloc}").geturl()


UNREACHABLE_SECRET = "s3cret"


class TestRedisSession(FreezableServer, SessionConformance):
    supports_processes = True
    # Redis runs a command it received whatever became of the client: a write cancelled
    # while the server was frozen is stored when it resumes (documented).
    frozen_cancel_discards_write = False
    url: str
    failing_url: str
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

    async def create_freezable_session(self, session_id: str) -> Session:
        url = await self.proxied(self.url)
        return RedisSession(
            session_id, url, key_prefix=self.key_prefix, connect_timeout=1, socket_timeout=1
        )

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        return RedisSession(session_id, self.failing_url, connect_timeout=1, socket_timeout=1)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, RedisSession)
        client = await self.store._ready_client()
        await client.rpush(self.store._key(session.session_id), raw)


class TestRedisSessionInTheSDKsLayout(TestRedisSession):
    """The kit on the Agents SDK's keys (``layout="sdk"``), as the SDK's forms
    (``redis_client=``, ``from_url``) use them by default."""

    @pytest.fixture(autouse=True)
    async def redis_store(self, redis_url: str, redis_prefix: str) -> AsyncIterator[None]:
        # The SDK's spelling of a prefix: without the ':' it joins to the id.
        self.url, self.key_prefix = redis_url, redis_prefix.rstrip(":")
        async with RedisStore(redis_url, key_prefix=self.key_prefix, layout="sdk") as store:
            self.store = store
            yield

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(
            RedisSession, url=self.url, key_prefix=self.key_prefix, layout="sdk"
        )

    async def create_freezable_session(self, session_id: str) -> Session:
        url = await self.proxied(self.url)
        return RedisSession(
            session_id,
            url,
            key_prefix=self.key_prefix,
            layout="sdk",
            connect_timeout=1,
            socket_timeout=1,
        )

    async def create_failing_session(self, session_id: str) -> Session:
        return RedisSession(
            session_id, self.failing_url, layout="sdk", connect_timeout=1, socket_timeout=1
        )


class TestPostgresSession(FreezableServer, SessionConformance):
    supports_processes = True
    url: str
    failing_url: str
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

    async def create_freezable_session(self, session_id: str) -> Session:
        url = await self.proxied(self.url)
        return PostgresSession(
            session_id,
            url,
            table=self.table,
            timeout=1,
            connect_timeout=2,
            statement_timeout=2,
            socket_timeout=1,
        )

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        return PostgresSession(session_id, self.failing_url, table=self.table, connect_timeout=1)

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
