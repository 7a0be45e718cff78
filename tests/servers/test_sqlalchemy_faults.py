"""The SQLAlchemy backend under faults, on MariaDB and PostgreSQL: the server stopped, cut
mid-request or before its reply, and frozen.

The shared servers are never touched: every test reaches its server through a proxy of its
own on loopback: tests/servers/proxy.py's ``FaultyProxy`` refuses connections as a
stopped server does or cuts them; tests/servers/freezer.py's ``FreezableProxy`` holds every
byte as a server stopped by ``SIGSTOP`` would. What every test asks, as of our other
server backends (issue 25): a call fails within its bound with a ``SessionError`` naming
the server; no batch is ever stored in part; ``may_have_written`` is never ``False`` for a
batch that was stored; once the server answers again the session works.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import urlsplit

import pytest

from agent_sessions import (
    BackendTimeoutError,
    BackendUnreachableError,
    Item,
    SessionBackendError,
)
from agent_sessions.sqlalchemy import SQLAlchemyStore

from .conftest import new_sa_table
from .freezer import FreezableProxy
from .proxy import (
    PASSWORD,
    FaultyProxy,
    check_acknowledged_items_survive_a_cut,
    cut_batch,
    proxied_url,
)

pytestmark = pytest.mark.timeout(120)

TIMEOUT = 1.0
SOCKET_TIMEOUT = 2.0
# What a call may take beyond timeout + socket_timeout (docs/sessions.md, "Any SQL
# database through SQLAlchemy"): on MariaDB dropping the connection is local, so a loaded
# machine's scheduling is all the margin covers; psycopg first asks the server to cancel
# the statement (5 s to send that, 5 s for its reply), as for the PostgreSQL backend.
MARGINS = {"mariadb": 3.0, "postgresql": 13.0, "postgresql-asyncpg": 13.0}
BATCH: list[Item] = [{"n": i, "text": "x" * 200} for i in range(1, 51)]


_Proxy = TypeVar("_Proxy", bound=FaultyProxy)


@dataclass
class Outage(Generic[_Proxy]):
    proxy: _Proxy
    store: SQLAlchemyStore
    shown: str
    """The server's URL as errors must show it (through the proxy, password masked)."""
    bound: float
    """Seconds within which a call on the frozen server fails."""


@dataclass
class Server:
    url: str
    table: str
    password: bool
    """Whether the URL may carry a password: PostgreSQL trusts loopback whatever the
    password; MariaDB's root has none, and a wrong one is refused."""
    bound: float


_URL_FIXTURES = {
    "mariadb": "mysql_url",
    "postgresql": "sa_postgres_url",
    "postgresql-asyncpg": "sa_asyncpg_url",
}


@pytest.fixture(params=list(_URL_FIXTURES))
def server(request: pytest.FixtureRequest, created_tables: list[tuple[str, str]]) -> Server:
    """Each shared server, with a fresh table; PostgreSQL through psycopg and through
    asyncpg (whose reads and writes take asyncpg's own statement path)."""
    url: str = request.getfixturevalue(_URL_FIXTURES[request.param])
    bound = TIMEOUT + SOCKET_TIMEOUT + MARGINS[request.param]
    password = request.param != "mariadb"
    return Server(url, new_sa_table(url, created_tables), password, bound)


@contextlib.asynccontextmanager
async def _outage(server: Server, proxy: _Proxy) -> AsyncIterator[Outage[_Proxy]]:
    await proxy.start()
    proxied, shown = proxied_url(server.url, proxy.port, password=server.password)
    store = SQLAlchemyStore(
        proxied, table=server.table, timeout=TIMEOUT, socket_timeout=SOCKET_TIMEOUT
    )
    try:
        yield Outage(proxy, store, shown, server.bound)
    finally:
        await store.close()
        await proxy.stop()


def _target(server: Server) -> tuple[str, int]:
    parts = urlsplit(server.url)
    return parts.hostname or "127.0.0.1", parts.port or 0


@pytest.fixture
async def outage(server: Server) -> AsyncIterator[Outage[FaultyProxy]]:
    """A store reaching the server through a proxy that can cut or refuse connections."""
    async with _outage(server, FaultyProxy(*_target(server))) as made:
        yield made


@pytest.fixture
async def frozen(server: Server) -> AsyncIterator[Outage[FreezableProxy]]:
    """A store reaching the server through a proxy that can freeze it."""
    async with _outage(server, FreezableProxy(*_target(server))) as made:
        yield made


def _new_id() -> str:
    return f"faults-{uuid.uuid4().hex}"


def _names_the_server(error: BaseException, outage: Outage[Any]) -> None:
    assert outage.shown in str(error), f"{error} does not name {outage.shown}"
    assert PASSWORD not in str(error)


# -- the server stopped --------------------------------------------------------------------


async def test_a_stopped_server_is_reported_and_the_session_works_once_it_is_back(
    outage: Outage[FaultyProxy],
) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}])
    outage.proxy.down()
    started = time.monotonic()
    with pytest.raises(SessionBackendError) as read:
        await session.get_items()
    _names_the_server(read.value, outage)
    assert not read.value.may_have_written
    with pytest.raises(BackendUnreachableError) as write:
        await session.add_items([{"n": 1}])
    _names_the_server(write.value, outage)
    # Refused before anything was sent: safe to retry.
    assert write.value.may_have_written is False
    assert time.monotonic() - started < 2 * outage.bound
    outage.proxy.up()
    await session.add_items([{"n": 2}])
    assert await session.get_items() == [{"n": 0}, {"n": 2}]
    assert await session.pop_item() == {"n": 2}


# -- connections cut -----------------------------------------------------------------------


async def test_a_batch_cut_mid_request_is_stored_whole_or_not_and_says_it_may_be(
    outage: Outage[FaultyProxy],
) -> None:
    session = outage.store.session(_new_id())
    caught = await cut_batch(session, outage.proxy, "mid_request", BATCH, SessionBackendError)
    _names_the_server(caught, outage)
    # The statement left whole or in part: the client cannot know which.
    assert caught.may_have_written
    assert await session.get_items() in ([{"n": 0}], [{"n": 0}, *BATCH])


async def test_a_batch_whose_reply_is_lost_is_stored_whole_and_says_it_may_be(
    outage: Outage[FaultyProxy],
) -> None:
    session = outage.store.session(_new_id())
    caught = await cut_batch(session, outage.proxy, "before_reply", BATCH, SessionBackendError)
    assert caught.may_have_written
    # The insert is one autocommit statement the server ran: stored, and whole.
    assert await session.get_items() == [{"n": 0}, *BATCH]


async def test_a_pop_whose_reply_is_lost_removed_at_most_that_item(
    outage: Outage[FaultyProxy],
) -> None:
    session = outage.store.session(_new_id())
    await session.add_items([{"n": 0}, {"n": 1}, {"n": 2}])
    outage.proxy.cut_next_request("before_reply")
    with pytest.raises(SessionBackendError) as caught:
        await session.pop_item()
    assert caught.value.may_have_written
    assert await session.get_items() in ([{"n": 0}, {"n": 1}], [{"n": 0}, {"n": 1}, {"n": 2}])


async def test_acknowledged_items_survive_a_cut_and_writes_work_after_it(
    outage: Outage[FaultyProxy],
) -> None:
    await check_acknowledged_items_survive_a_cut(
        outage.store.session(_new_id()), outage.proxy, SessionBackendError
    )


# -- the server frozen ---------------------------------------------------------------------


async def test_calls_on_a_frozen_server_fail_in_time_naming_it_and_store_no_half_batch(
    frozen: Outage[FreezableProxy],
) -> None:
    session = frozen.store.session(_new_id())
    await session.add_items([{"n": 0}])
    async with frozen.proxy.frozen():
        for call in (session.get_items, lambda: session.add_items(BATCH), session.pop_item):
            started = time.monotonic()
            with pytest.raises(BackendTimeoutError) as caught:
                await asyncio.wait_for(call(), 4 * frozen.bound)
            took = time.monotonic() - started
            assert took < frozen.bound, f"a call on the frozen server took {took:.1f}s"
            _names_the_server(caught.value, frozen)
            assert f"within {TIMEOUT + SOCKET_TIMEOUT:g}s" in str(caught.value)
        # The read never wrote; the add and the pop may have (held by the frozen server).
    stored = await asyncio.wait_for(session.get_items(), frozen.bound)
    # Thawed: the batch held meanwhile ran whole or not at all, and the pop held
    # meanwhile took at most the newest item.
    assert stored in (
        [{"n": 0}],
        [],
        [{"n": 0}, *BATCH],
        [{"n": 0}, *BATCH[:-1]],
    )
    await session.add_items([{"n": 99}])
    assert (await session.get_items())[-1] == {"n": 99}


async def test_a_read_on_a_frozen_server_says_nothing_was_written(
    frozen: Outage[FreezableProxy],
) -> None:
    session = frozen.store.session(_new_id())
    await session.add_items([{"n": 0}])
    async with frozen.proxy.frozen():
        with pytest.raises(BackendTimeoutError) as caught:
            await session.get_items(limit=1)
    assert not caught.value.may_have_written
    assert await session.get_items() == [{"n": 0}]


async def test_a_call_waiting_for_a_new_connection_to_a_frozen_server_fails_in_time(
    frozen: Outage[FreezableProxy],
) -> None:
    """The server froze before the store ever connected: the handshake never answers."""
    session = frozen.store.session(_new_id())
    async with frozen.proxy.frozen():
        started = time.monotonic()
        with pytest.raises(BackendTimeoutError) as caught:
            await session.get_items()
        assert time.monotonic() - started < frozen.bound
    _names_the_server(caught.value, frozen)
    assert await session.get_items() == []


# -- asyncio.run per call, the proxy in a thread of its own ---------------------------------


class ThreadedProxy:
    """A ``FreezableProxy`` whose event loop runs in a thread, so that the test's own
    calls can each run in ``asyncio.run`` as a script's would."""

    def __init__(self, host: str, port: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.proxy = FreezableProxy(host, port)
        self._run(self.proxy.start())

    def _run(self, coroutine: Coroutine[object, object, None]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    def freeze(self, frozen: bool) -> None:
        flowing = self.proxy._flowing
        self.loop.call_soon_threadsafe(flowing.clear if frozen else flowing.set)

    def close(self) -> None:
        self.freeze(False)
        self._run(self.proxy.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def threaded(server: Server) -> Iterator[tuple[ThreadedProxy, str, Server]]:
    proxy = ThreadedProxy(*_target(server))
    proxied, _ = proxied_url(server.url, proxy.proxy.port, password=server.password)
    yield proxy, proxied, server
    proxy.close()


def _in_thread(call: Callable[[], Awaitable[object]], bound: float) -> object:
    """``asyncio.run(call())`` in a thread of its own: what it returned or raised. Fails
    the test if ``asyncio.run`` has not returned within ``bound`` seconds."""
    outcome: list[object] = []

    async def main() -> object:
        return await call()

    def run() -> None:
        try:
            outcome.append(asyncio.run(main()))
        except Exception as exc:  # handed to the test
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(bound)
    assert not worker.is_alive(), f"asyncio.run did not return within {bound}s"
    assert outcome, "the call ended without an outcome"
    return outcome[0]


def test_asyncio_run_per_call_returns_in_time_from_a_frozen_server_and_recovers(
    threaded: tuple[ThreadedProxy, str, Server],
) -> None:
    proxy, url, server = threaded
    bound = server.bound
    store = SQLAlchemyStore(url, table=server.table, timeout=TIMEOUT, socket_timeout=SOCKET_TIMEOUT)
    session = store.session(_new_id())
    try:
        assert _in_thread(lambda: session.add_items([{"n": 0}]), 4 * bound) is None
        for _ in range(2):
            proxy.freeze(True)
            try:
                failed = _in_thread(session.get_items, bound)
                assert isinstance(failed, BackendTimeoutError), failed
                failed = _in_thread(lambda: session.add_items([{"n": 1}]), bound)
                assert isinstance(failed, BackendTimeoutError), failed
            finally:
                proxy.freeze(False)
            stored = _in_thread(session.get_items, 4 * bound)
            assert isinstance(stored, list), stored
            assert stored[0] == {"n": 0}
            assert all(item == {"n": 1} for item in stored[1:])
    finally:
        asyncio.run(store.close())
