"""Sessions in Redis: one list per session, one round trip per operation (but large reads).

This is the native layout (``layout="native"``); ``layout="sdk"``, the default of the
Agents SDK's forms (``from_url``, ``redis_client=``), uses the SDK's ``RedisSession``'s
keys in place instead (see :class:`RedisStore`).

Each session is a Redis list holding one JSON document per item, oldest first, under the
key ``key_prefix + escaped id``: the id with ``%`` written ``%25`` and ``:`` written
``%3A``. ``key_prefix`` must end with ``:``, so an escaped id never holds a bare ``:``
and the keys of two stores can never meet, even when one prefix extends the other
(``app:`` and ``app:user:``). Ids without ``:`` or ``%`` keep the key they had before
this layout (``prefix + id``); see ``docs/sessions.md`` to move the others. The key
``key_prefix`` itself (never a session's: an escaped id is never empty) holds the layout
version, ``SCHEMA_VERSION``; a newer one is refused with ``UnsupportedSchemaError``.

``add_items`` is one ``RPUSH`` of the whole batch (atomic by itself; wrapped in
``MULTI``/``EXEC`` together with a refresh of the TTL when the store has one, a refresh
that only touches a list, so the TTL is refreshed in the same transaction as the
write: a Lua ``EVAL``). ``get_items(N)`` is ``LRANGE key -N -1``, ``pop_item`` is
``RPOP``, ``clear_session`` is ``LTRIM key 1 0`` (it empties a list, which Redis then
deletes, and fails on a key of another type). Without a TTL no command is a script; with
one, a server that refuses ``EVAL`` (plain fakeredis, without Lua) gets ``WATCH``,
``TYPE`` and a ``PEXPIRE`` queued only on a list in the same ``MULTI``/``EXEC`` instead,
so fakeredis without Lua serves every operation. A key of another type where a session
would be is refused with :class:`~agent_sessions.ForeignDataError` and never changed.
Listing uses ``SCAN`` (never ``KEYS``), so it never blocks the server.

Large calls keep the event loop running (redis-py parses replies and packs commands in
Python): a read of more than 1,000 items is done 1,000 items per ``LRANGE`` under
``WATCH``, closed by an empty ``MULTI``/``EXEC`` that fails if the list changed meanwhile
(then read again; after three such attempts in one ``LRANGE``), and decoded in a worker
thread; a write of more than 1,000 items is packed in a worker thread and sent in parts
of 256 KiB, still one ``RPUSH`` (in one ``MULTI``/``EXEC`` with its TTL refresh). Smaller
calls are one round trip. On a ``RedisCluster`` client large calls take the small path
(one command, parsed and packed on the loop).

Redis Cluster works through a ``redis.asyncio.cluster.RedisCluster`` client: every
command and transaction names one key, so each runs on the node of that key's slot, and
listing scans the primaries one after the other (its cursor names the node). A URL or a
plain client naming one node of a cluster is refused (``SessionConfigError``) at the
first call, before anything is written: it would reach the sessions of that node only.

Our own clients never retry a command on a connection error: a retried ``RPUSH`` whose
first reply was lost would store the batch twice. Failures raise subclasses of
:class:`~agent_sessions.SessionBackendError` naming the masked URL and whether a write may
have been stored; the next call reconnects. The store keeps one client per event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import re
import socket
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote, urlsplit

from typing_extensions import Self

from ._json import decode_item
from ._servers import (
    PerLoop,
    check_timeout,
    check_userinfo,
    mask_url,
    missing_driver,
    scrub,
    url_secrets,
)
from .base import MAX_INT64, BaseSession, BaseStore, Release
from .errors import (
    BackendAuthenticationError,
    BackendDatabaseMissingError,
    BackendTimeoutError,
    BackendUnreachableError,
    ForeignDataError,
    SessionBackendError,
    SessionConfigError,
    UnsupportedSchemaError,
)
from .protocol import Item, SessionSettings, SessionsPage

try:
    import redis.asyncio as aioredis
    from redis.asyncio.cluster import ClusterNode, RedisCluster
    from redis.asyncio.connection import ConnectionPool, parse_url
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import AuthenticationError as RedisAuthenticationError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisClusterException, RedisError, ResponseError, WatchError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - exercised in a venv without redis
    raise missing_driver("Redis", "redis", "redis") from exc

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_SOCKET_TIMEOUT",
    "LAYOUTS",
    "SCHEMA_VERSION",
    "SDK_KEY_PREFIX",
    "RedisSession",
    "RedisStore",
    "WrongTypeError",
    "session_key",
]

DEFAULT_KEY_PREFIX = "agent_sessions:"
SDK_KEY_PREFIX = "agents:session"
"""The Agents SDK's default ``key_prefix`` (its keys are ``<prefix>:<id>...``)."""
NATIVE, SDK = "native", "sdk"
LAYOUTS = (NATIVE, SDK)
"""``layout=``: this library's keys, or the Agents SDK's (see :class:`RedisStore`)."""
SCHEMA_VERSION = 2
"""The key layout's version, kept under the key ``key_prefix`` itself (1: unescaped ids)."""
DEFAULT_CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a connection to the server."""
DEFAULT_SOCKET_TIMEOUT = 10.0
"""Seconds to wait for the server's reply to one command."""
# Reads of more items are done a page at a time (the loop runs between pages); writes of more
# are packed in a worker thread. About 1-3 ms of the driver's and our work per page.
_PAGE = 1000
_PAGED_ATTEMPTS = 3
_SEND_PART = 256 * 1024
# Fixed, so that rescanning from a cursor returns the same batch whatever the page size.
_SCAN_COUNT = 1000
# Refresh the TTL only when the key is a list: after a WRONGTYPE RPUSH it is not ours.
_EXPIRE_IF_LIST = (
    "if redis.call('TYPE', KEYS[1])['ok'] == 'list' then"
    " return redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return 0"
)
_CLUSTER_NODE = (
    "is a node of a Redis Cluster, which answers only for the keys of its own hash slots: "
    "give the store a redis.asyncio.cluster.RedisCluster client instead (client= or "
    "redis_client=); nothing was written"
)


def session_key(key_prefix: str, session_id: str) -> bytes:
    """The Redis key of ``session_id`` under ``key_prefix`` (see the module's docstring)."""
    return (key_prefix + _escape(session_id)).encode("utf-8")


def _escape(session_id: str) -> str:
    if "%" in session_id:
        session_id = session_id.replace("%", "%25")
    if ":" in session_id:
        session_id = session_id.replace(":", "%3A")
    return session_id


def _check_key_prefix(key_prefix: object) -> str:
    if not isinstance(key_prefix, str):
        raise TypeError(f"key_prefix must be a str, got {type(key_prefix).__name__}")
    if not key_prefix.endswith(":"):
        raise SessionConfigError(
            f"key_prefix must be a non-empty str ending with ':', got {key_prefix!r}: the "
            "':' separates the prefix from the session ids, so that no two prefixes share keys"
        )
    return key_prefix


class WrongTypeError(ForeignDataError, ResponseError):
    """A Redis key of another type where a session's would be: a ``ForeignDataError``
    that is also redis-py's ``ResponseError``, its message naming ``WRONGTYPE``, which the
    Agents SDK's ``RedisSession`` raises there."""


class RedisStore(BaseStore):
    """Sessions stored in one Redis database.

    Give either ``url`` (the store creates its clients and closes them in :meth:`close`)
    or ``client`` (a ``redis.asyncio.Redis`` you own: never closed by us; create it with
    ``retry=Retry(NoBackoff(), 0)``, since a client that retries a write whose reply was
    lost stores that batch twice). ``ttl`` (seconds) makes every session expire that long
    after its last write. ``connect_timeout`` and ``socket_timeout`` (seconds) bound
    connecting and each command. ``redis_kwargs`` (with ``url``) are more keyword
    arguments for ``redis.asyncio.Redis.from_url``, over the store's own (checked at
    construction: one the client does not take raises ``SessionConfigError``).

    ``client`` may be a ``redis.asyncio.cluster.RedisCluster``: the store then works on
    the whole cluster (see the module's docstring). A URL or a plain client naming one
    node of a cluster raises ``SessionConfigError`` at the first call.

    The store works from any event loop: it keeps one client per running loop (an
    injected client serves the first loop that uses the store; other loops get a client
    of the store's own with the same connection settings). :meth:`close` closes them all,
    from any loop.

    ``list_sessions`` returns ids in ``SCAN`` order (sorted within each scanned batch); as
    with ``SCAN`` itself, an id may appear twice when Redis resizes its key table
    mid-listing.

    ``layout`` chooses the keys: ``"native"`` this library's (above); ``"sdk"`` the Agents
    SDK's ``RedisSession``'s, read and written in place beside the SDK's own sessions: a
    hash ``<key_prefix>:<id>`` (``session_id``, ``created_at``, ``updated_at``), the list
    ``<key_prefix>:<id>:messages`` and the SDK's ``<key_prefix>:<id>:counter``, with
    ``key_prefix`` joined as the SDK joins it (default there ``"agents:session"``). Its
    writes check the keys' types under ``WATCH`` first, as the SDK does (a few more round
    trips), and its keys of one session lie in different hash slots, so it refuses a
    ``RedisCluster`` client (``SessionConfigError``).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: aioredis.Redis | RedisCluster | None = None,
        key_prefix: str | None = None,
        ttl: float | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        redis_kwargs: Mapping[str, Any] | None = None,
        layout: str = NATIVE,
    ) -> None:
        if client is not None and not isinstance(client, (aioredis.Redis, RedisCluster)):
            raise TypeError(
                f"client must be a redis.asyncio.Redis or RedisCluster, got {type(client).__name__}"
            )
        if (url is None) == (client is None):
            raise SessionConfigError("RedisStore needs exactly one of url= or client=")
        if redis_kwargs is not None and client is not None:
            raise SessionConfigError(
                "redis_kwargs configure the clients a store creates from url=; a given "
                "client= is used as it is"
            )
        if layout not in LAYOUTS:
            raise SessionConfigError(
                f"layout must be one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}"
            )
        self.layout = layout
        self._sdk = layout == SDK
        if self._sdk:
            if key_prefix is None:
                key_prefix = SDK_KEY_PREFIX
            if not isinstance(key_prefix, str):
                raise TypeError(f"key_prefix must be a str, got {type(key_prefix).__name__}")
            if isinstance(client, RedisCluster):
                raise SessionConfigError(
                    "layout='sdk' does not work on a RedisCluster client: the Agents SDK's "
                    "keys of one session lie in different hash slots, so no transaction "
                    "can span them (the SDK's RedisSession refuses its writes there too); "
                    "use layout='native' on a cluster"
                )
            self.key_prefix = key_prefix
        else:
            self.key_prefix = _check_key_prefix(
                DEFAULT_KEY_PREFIX if key_prefix is None else key_prefix
            )
        if ttl is not None:
            ttl = check_timeout("ttl", ttl)
        # As the SDK: a ttl too large for Redis is refused by each write, before it is sent.
        self.ttl_ms = None if ttl is None else max(1, round(ttl * 1000))
        self.connect_timeout = check_timeout("connect_timeout", connect_timeout)
        self.socket_timeout = check_timeout("socket_timeout", socket_timeout)
        self._injected = client
        self._url = url
        if url is not None:
            if not isinstance(url, str):
                raise TypeError(f"url must be a str, got {type(url).__name__}")
            self.url = mask_url(url)
        else:
            assert client is not None
            self.url = _client_url(client)
        self._secrets = url_secrets(url) if url is not None else []
        if url is not None:
            _check_url(url, self.url)
        self._redis_kwargs = _check_redis_kwargs(url, redis_kwargs)
        self._injected_free = client is not None  # the first loop gets the injected client
        self._no_scripts = False  # set when the server refused EVAL (plain fakeredis)
        self._ready = False
        self._cluster = isinstance(client, RedisCluster)
        # Redis or RedisCluster clients; those of closed loops have their sockets shut down
        self._clients: PerLoop[Any] = PerLoop(self._drop_client)

    @property
    def location(self) -> str:
        return self.url

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> RedisSession:
        """A handle on ``session_id`` in this store; closing it leaves the store open."""
        return RedisSession(session_id, store=self, session_settings=session_settings)

    async def ping(self) -> bool:
        """Whether the server answers a ``PING`` (``False`` on any failure to reach it, as
        the Agents SDK's ``RedisSession.ping``); ``SessionClosedError`` once closed."""
        self.check_open()
        try:
            return bool(await self._clients.get(self._first_client).ping())
        except (RedisError, OSError):
            return False

    # -- the store operations (BaseStore's hooks) ------------------------------------------

    async def _get_items(self, session_id: str, limit: int | None) -> list[Item]:
        client = await self._ready_client()
        key = self._key(session_id)
        where = self._where(key)
        async with self._errors():
            if (limit is not None and limit <= _PAGE) or isinstance(client, RedisCluster):
                return _decode(await client.lrange(key, _first(limit), -1), where)
            # Up to _PAGE items: one LRANGE answers, as for any small session.
            raw_items = await client.lrange(key, -(_PAGE + 1), -1)
            if len(raw_items) <= _PAGE:
                return _decode(raw_items, where)
            for _ in range(_PAGED_ATTEMPTS):
                raw_items = await self._read_paged(client, key, limit)
                if raw_items is not None:
                    return await asyncio.to_thread(_decode, raw_items, where)
            # Written to at every attempt: one LRANGE, which holds the loop while the
            # driver parses its reply, but is never inconsistent.
            return _decode(await client.lrange(key, _first(limit), -1), where)

    async def _read_paged(
        self, client: aioredis.Redis, key: bytes, limit: int | None
    ) -> list[Any] | None:
        """The latest ``limit`` stored items of a large list, read ``_PAGE`` at a time (the
        loop runs between pages) under ``WATCH``; ``None`` when the list changed meanwhile
        (the pages may then not fit together)."""
        async with client.pipeline(transaction=True) as pipe:
            await pipe.watch(key)
            length = int(await pipe.llen(key))
            first = 0 if limit is None else max(0, length - limit)
            raw_items: list[Any] = []
            for start in range(first, length, _PAGE):
                raw_items += await pipe.lrange(key, start, min(start + _PAGE, length) - 1)
            pipe.multi()  # type: ignore[no-untyped-call]
            pipe.exists(key)
            try:
                await pipe.execute()
            except WatchError:
                return None
            return raw_items

    async def _add_items(self, session_id: str, encoded: list[str]) -> None:
        if self._sdk:
            await self._sdk_write(session_id, encoded)
            return
        client = await self._ready_client()
        key = self._key(session_id)
        ttl_ms = self._checked_ttl_ms()
        async with self._errors(write=True):
            large = len(encoded) > _PAGE and not isinstance(client, RedisCluster)
            if large and (ttl_ms is None or not self._no_scripts):
                try:
                    await _push_packed_in_worker(client, key, encoded, ttl_ms)
                    return
                except ResponseError as exc:
                    if not _scripts_missing(exc):
                        raise
                    self._no_scripts = True  # the transaction was refused whole
            if ttl_ms is None:
                await client.rpush(key, *encoded)
            else:
                await self._with_ttl(client, key, ttl_ms, lambda pipe: pipe.rpush(key, *encoded))

    async def _pop_item(self, session_id: str) -> Item | None:
        client = await self._ready_client()
        key = self._key(session_id)
        # The SDK's layout pops as the SDK does: one RPOP, its TTL left as the last write set it.
        ttl_ms = None if self._sdk else self._checked_ttl_ms()
        async with self._errors(write=True):
            while True:
                raw: Any
                if ttl_ms is None:
                    raw = await client.rpop(key)
                else:
                    (raw,) = await self._with_ttl(client, key, ttl_ms, lambda pipe: pipe.rpop(key))
                if raw is None:
                    return None
                item = decode_item(raw, where=self._where(key))
                if item is not None:
                    return item
                # A corrupt newest item is removed and skipped; the next one is the latest.

    async def _with_ttl(
        self, client: Any, key: bytes, ttl_ms: int, queue: Callable[[Any], object]
    ) -> list[Any]:
        """The commands ``queue(pipe)`` puts in a pipeline, then a refresh of the TTL that
        touches ``key`` only if it is a list, in one ``MULTI``/``EXEC``; the replies to
        ``queue``'s commands. The refresh is a Lua ``EVAL``; where scripts do not run
        (plain fakeredis) ``WATCH``, ``TYPE`` and a ``PEXPIRE`` queued only when the key is
        a list or absent do the same (retried when the key changed in between)."""
        if not self._no_scripts:
            try:
                async with client.pipeline(transaction=True) as pipe:
                    queue(pipe)
                    pipe.execute_command("EVAL", _EXPIRE_IF_LIST, 1, key, ttl_ms)
                    replies: list[Any] = await pipe.execute()
                    return replies[:-1]
            except ResponseError as exc:
                if not _scripts_missing(exc):
                    raise
                self._no_scripts = True  # the transaction was refused whole: retry below
        async with client.pipeline(transaction=True) as pipe:
            while True:
                await pipe.watch(key)
                kind = _as_bytes(await pipe.type(key))
                pipe.multi()
                queue(pipe)
                refresh = kind in (b"list", b"none")
                if refresh:
                    pipe.pexpire(key, ttl_ms)
                try:
                    replies = await pipe.execute()
                except WatchError as exc:
                    if not _watched_key_changed(exc):
                        raise  # a lost connection: the transaction may have run
                    continue
                return replies[:-1] if refresh else replies

    async def _clear_session(self, session_id: str) -> None:
        if self._sdk:
            await self._sdk_write(session_id, None)
            return
        client = await self._ready_client()
        async with self._errors(write=True):
            await client.ltrim(self._key(session_id), 1, 0)

    async def _replace_items(self, session_id: str, encoded: list[str]) -> None:
        if self._sdk:
            await self._sdk_write(session_id, encoded, replace=True)
            return
        # One MULTI/EXEC: Redis runs it whole, or not at all when the client dies first.
        client = await self._ready_client()
        key = self._key(session_id)
        ttl_ms = self._checked_ttl_ms() if encoded else None

        def replace(pipe: Any) -> None:
            pipe.ltrim(key, 1, 0)
            if encoded:
                pipe.rpush(key, *encoded)

        async with self._errors(write=True):
            if ttl_ms is not None and encoded:
                await self._with_ttl(client, key, ttl_ms, replace)
                return
            async with client.pipeline(transaction=True) as pipe:
                replace(pipe)
                await pipe.execute()

    async def _sdk_write(
        self, session_id: str, encoded: list[str] | None, *, replace: bool = False
    ) -> None:
        """A write in the SDK's layout, as the SDK's ``RedisSession`` makes it: ``encoded``
        appended (``replace``: after deleting the session's keys; ``None``: only that, a
        clear). The session's keys are watched and their types checked first, so that
        one of another type is refused (``ForeignDataError``) with nothing written; then
        one ``MULTI``/``EXEC`` stamps the hash, pushes the items and refreshes the TTL of
        all three keys, again from the start if a key changed in between."""
        client = await self._ready_client()
        ttl_ms = self._checked_ttl_ms() if encoded else None
        meta, messages, counter = keys = self._sdk_keys(session_id)
        kinds: tuple[tuple[bytes, bytes], ...] = (
            (meta, b"hash"),
            (messages, b"list"),
            (counter, b"string"),
        )
        if encoded and not replace and ttl_ms is None:
            kinds = kinds[:2]  # the counter is neither deleted nor expired
        async with self._errors(write=encoded is not None):
            while True:  # a pipeline per attempt, as the SDK's
                pipe = client.pipeline()
                try:
                    await pipe.watch(*keys)
                    for key, kind in kinds:
                        found = _as_bytes(await pipe.type(key))
                        if found not in (b"none", kind):
                            raise WrongTypeError(
                                f"Redis at {self.url}: key {key!r} of this session holds a "
                                f"{found.decode('utf-8', 'replace')} (WRONGTYPE), not the "
                                f"{kind.decode()} the Agents SDK's layout keeps there "
                                "(another program's key, or another session's whose id ends "
                                "with ':messages' or ':counter'); nothing was changed"
                            )
                    pipe.multi()
                    if encoded is None or replace:
                        pipe.delete(*keys)
                    if encoded:
                        now = str(int(time.time()))
                        pipe.hset(meta, "session_id", session_id)
                        pipe.hsetnx(meta, "created_at", now)
                        pipe.rpush(messages, *encoded)
                        pipe.hset(meta, "updated_at", now)
                        if ttl_ms is not None:
                            for key in keys:
                                pipe.pexpire(key, ttl_ms)
                    await pipe.execute()
                    return
                except WatchError as exc:
                    if not _watched_key_changed(exc):
                        raise
                finally:
                    await pipe.reset()

    def _checked_ttl_ms(self) -> int | None:
        """The TTL a write sets, in ms; ``SessionConfigError`` (a ``ValueError``, as the
        SDK's) when it ends after Redis's last expiration time, 2**63 - 1 ms since 1970."""
        ttl_ms = self.ttl_ms
        if ttl_ms is not None and time.time_ns() // 1_000_000 + ttl_ms > MAX_INT64:
            raise SessionConfigError(
                f"ttl {ttl_ms / 1000:g} s is outside Redis's supported expiration range "
                "(it would end after 2**63 - 1 ms since 1970); nothing was written"
            )
        return ttl_ms

    async def _list_sessions(self, prefix: str, cursor: str | None, limit: int) -> SessionsPage:
        # Ids come in SCAN order (sorted within each scanned batch); as with SCAN itself, an
        # id may appear twice when Redis resizes its key table mid-listing.
        # On a cluster the primaries are scanned one after the other, in name order; the
        # cursor is then "<node>.<scan cursor>" (a plain store's cursor has no '.').
        client = await self._ready_client()
        nodes: list[Any] = [None]
        if self._cluster:
            async with self._errors():
                await client.initialize()  # a new loop's client knows no nodes before
            nodes = sorted(client.get_primaries(), key=lambda node: node.name)
        node, scan_cursor, after = _parse_cursor(cursor, cluster=self._cluster)
        if node >= len(nodes):
            raise ValueError(f"not a cursor of this RedisStore's nodes: {cursor!r}")
        if self._sdk:  # the SDK's sessions with items: their lists <prefix>:<id>:messages
            pattern = _glob_escape(f"{self.key_prefix}:{prefix}").encode() + b"*:messages"
            skip = len(self.key_prefix.encode()) + 1
        else:
            pattern = _glob_escape(self.key_prefix + _escape(prefix)).encode() + b"*"
            skip = len(self.key_prefix.encode())
        found: list[str] = []
        async with self._errors():
            while True:
                target = {} if nodes[node] is None else {"target_nodes": nodes[node]}
                next_cursor, keys = await client.scan(
                    scan_cursor, match=pattern, count=_SCAN_COUNT, _type="list", **target
                )
                if isinstance(next_cursor, dict):  # a cluster answers per node
                    next_cursor = next_cursor[nodes[node].name]
                batch = sorted(
                    {sid for key in keys if (sid := self._listed_id(_as_bytes(key)[skip:]))}
                )
                if after is not None:
                    batch = [sid for sid in batch if sid > after]
                room = limit - len(found)
                if len(batch) > room:
                    # Resume inside this batch next time: rescan it, skip what we returned.
                    found.extend(batch[:room])
                    return SessionsPage(
                        found, _format_cursor(node, scan_cursor, found[-1], self._cluster)
                    )
                found.extend(batch)
                after = None
                scan_cursor = int(next_cursor)
                if scan_cursor == 0:
                    node += 1
                    if node == len(nodes):
                        return SessionsPage(found, None)
                if len(found) == limit:
                    return SessionsPage(
                        found, _format_cursor(node, scan_cursor, None, self._cluster)
                    )

    async def _close(self) -> None:
        """Close every client this store created, whichever loop created it and whichever
        loop calls this (an injected client stays open)."""
        injected = self._injected

        async def close_client(client: Any) -> None:
            if client is not injected:
                await client.aclose()

        await self._clients.close_all(close_client, self.connect_timeout)

    def _drop_client(self, client: Any) -> None:
        """Shut down the sockets of a client of a closed loop (nothing can be awaited on
        it), so that the server ends those connections now; an injected client is left
        alone. The descriptors themselves go with the client, to the garbage collector."""
        if client is self._injected or not isinstance(client, aioredis.Redis):
            return
        pool = client.connection_pool
        for connection in [
            *getattr(pool, "_available_connections", ()),
            *getattr(pool, "_in_use_connections", ()),
        ]:
            writer = getattr(connection, "_writer", None)
            sock = None if writer is None else writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    async def _ready_client(self) -> Any:  # aioredis.Redis or RedisCluster
        """The running loop's client, once the key layout's version was checked."""
        self.check_open()
        client = self._clients.get(self._first_client)
        if not self._ready:
            await self._check_schema(client)
        return client

    def _where(self, key: bytes) -> str:
        return f"{self.url} key {key!r}"

    def _key(self, session_id: str) -> bytes:
        """The list of the session's items."""
        if self._sdk:
            return self._sdk_keys(session_id)[1]
        return session_key(self.key_prefix, session_id)

    def _sdk_keys(self, session_id: str) -> tuple[bytes, bytes, bytes]:
        """The SDK's hash, list and counter keys of ``session_id``."""
        meta = f"{self.key_prefix}:{session_id}".encode()
        return meta, meta + b":messages", meta + b":counter"

    def _listed_id(self, rest: bytes) -> str | None:
        """The session id of a listed key's part after the prefix (``None``: not ours)."""
        if self._sdk:
            return rest[: -len(b":messages")].decode("utf-8", "replace")
        return _session_id_of(rest)

    async def _check_schema(self, client: Any) -> None:
        """Record the key layout's version under the prefix itself (a key no session can
        have: session keys never end with ``:``), or refuse a newer one (once per store)."""
        marker = self.key_prefix.encode("utf-8")
        async with self._errors():
            if not self._cluster:
                # A cluster node answers for its own slots only: refuse it before writing.
                try:
                    info = await client.execute_command("INFO", "cluster")
                except ResponseError:  # a server without INFO (a fake) is no cluster
                    info = None
                if isinstance(info, dict) and str(info.get("cluster_enabled", 0)) == "1":
                    raise SessionConfigError(f"Redis at {self.url} {_CLUSTER_NODE}")
            if self._sdk:  # nothing of ours among the SDK's keys, no layout version
                self._ready = True
                return
            async with client.pipeline(transaction=False) as pipe:
                pipe.set(marker, SCHEMA_VERSION, nx=True)
                pipe.get(marker)
                _, raw = await pipe.execute()
        text = _as_bytes(raw).decode("utf-8", "replace") if raw is not None else ""
        if not text.isdigit():
            raise ForeignDataError(
                f"Redis at {self.url}: key {self.key_prefix!r} should hold this library's "
                f"layout version, but holds {text[:40]!r}; it was left untouched"
            )
        if int(text) > SCHEMA_VERSION:
            raise UnsupportedSchemaError(
                f"Redis at {self.url}: prefix {self.key_prefix!r} holds sessions of layout "
                f"version {text}, newer than this library's {SCHEMA_VERSION}: upgrade "
                "agent-sessions instead of using it"
            )
        self._ready = True

    def _new_client(self) -> Any:  # aioredis.Redis or RedisCluster
        if self._url is not None:
            try:
                return _client_from_url(
                    self._url, self.connect_timeout, self.socket_timeout, self._redis_kwargs
                )
            except ValueError as exc:
                raise SessionConfigError(
                    f"bad Redis URL {self.url}: {scrub(str(exc), self._secrets)}"
                ) from None
        assert self._injected is not None
        if isinstance(self._injected, RedisCluster):
            return _cluster_like(self._injected)
        pool = self._injected.connection_pool
        return aioredis.Redis(
            connection_pool=aioredis.ConnectionPool(
                connection_class=pool.connection_class, **pool.connection_kwargs
            )
        )

    def _first_client(self) -> Any:  # aioredis.Redis or RedisCluster
        """A client for a loop new to this store (called under ``PerLoop``'s lock)."""
        if self._injected_free and self._injected is not None:
            self._injected_free = False
            return self._injected
        return self._new_client()

    @asynccontextmanager
    async def _errors(self, *, write: bool = False) -> AsyncIterator[None]:
        """Turn the driver's errors into ours; ``write``: the call sends a write."""
        try:
            yield
        except (RedisError, RedisClusterException) as exc:
            # RedisClusterException (no reachable node, slots not covered) is no RedisError.
            raise self._translate(exc, write) from exc
        except OSError as exc:
            raise SessionBackendError(
                f"Redis at {self.url} failed: {scrub(str(exc), self._secrets)}",
                may_have_written=write,
            ) from exc

    def _translate(self, exc: RedisError | RedisClusterException, write: bool) -> Exception:
        text = scrub(str(exc), self._secrets)
        where = f"Redis at {self.url}"
        if isinstance(exc, RedisAuthenticationError) or text.startswith(("WRONGPASS", "NOAUTH")):
            return BackendAuthenticationError(f"{where} refused the credentials: {text}")
        if "DB index is out of range" in text or "Invalid Database" in text:
            return BackendDatabaseMissingError(f"{where} has no such database: {text}")
        if text.startswith("WRONGTYPE") or "WRONGTYPE" in text:
            return WrongTypeError(
                f"{where}: the key of this session holds something other than a list "
                "(WRONGTYPE), written by another program; it was left untouched"
            )
        connecting = "connecting to" in text or "Timeout connecting" in text
        if isinstance(exc, RedisTimeoutError):
            if connecting:
                return BackendUnreachableError(
                    f"{where} did not accept a connection within {self.connect_timeout}s"
                )
            return BackendTimeoutError(
                f"{where} did not answer within {self.socket_timeout}s: {text}",
                may_have_written=write,
            )
        if isinstance(exc, (RedisConnectionError, RedisClusterException)):
            if connecting:
                return BackendUnreachableError(f"{where} is unreachable: {text}")
            return SessionBackendError(f"{where} failed: {text}", may_have_written=write)
        if isinstance(exc, ResponseError):
            if "unknown command" in text and "eval" in text.lower():
                return SessionBackendError(
                    f"{where} does not run Lua scripts (EVAL), which a store with a ttl "
                    "needs to refresh it only on a list; nothing was written. With "
                    f"fakeredis, install fakeredis[lua]: {text}"
                )
            if text.startswith(("MOVED", "ASK")) and not self._cluster:
                return SessionConfigError(f"{where} {_CLUSTER_NODE}")
            return SessionBackendError(f"{where} refused the command: {text}")
        return SessionBackendError(f"{where} failed: {text}", may_have_written=write)


class RedisSession(BaseSession[RedisStore]):
    """One conversation in Redis.

    ``RedisSession("user_123", "redis://localhost:6379/0")`` opens its own store (closed
    with the session); ``store.session("user_123")`` borrows a shared one. Keyword
    arguments ``key_prefix``, ``ttl``, ``connect_timeout``, ``socket_timeout`` and
    ``redis_kwargs`` are those of :class:`RedisStore`.

    The Agents SDK's forms work as is: ``RedisSession(session_id, redis_client=client,
    key_prefix=..., ttl=...)`` uses your client (never closed by us: it stays usable
    after ``close()``), ``RedisSession.from_url(session_id, url=..., redis_kwargs=...)``
    opens a store of its own, and ``await session.ping()``. These two forms use the SDK's
    keys by default (``layout="sdk"``, ``key_prefix`` default ``"agents:session"``): the
    history the SDK's ``RedisSession`` wrote is there, and the SDK sees what ours adds.
    The other forms use this library's keys (``layout="native"``). With
    ``layout="native"`` in the SDK's forms, a ``key_prefix`` without the final ``:`` is
    taken the SDK's way, as if it had one (``"tenant_abc:sessions"`` keeps sessions under
    ``tenant_abc:sessions:<id>``).
    """

    def __init__(
        self,
        session_id: str,
        url: str | None = None,
        *,
        store: RedisStore | None = None,
        redis_client: aioredis.Redis | RedisCluster | None = None,
        key_prefix: str | None = None,
        ttl: float | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        redis_kwargs: Mapping[str, Any] | None = None,
        session_settings: SessionSettings | None = None,
        layout: str | None = None,
    ) -> None:
        if redis_client is not None:
            if not isinstance(redis_client, (aioredis.Redis, RedisCluster)):
                raise TypeError(
                    "redis_client must be a redis.asyncio.Redis or RedisCluster, got "
                    f"{type(redis_client).__name__}"
                )
            if url is not None or store is not None:
                raise SessionConfigError("pass one of url, store= or redis_client=, not several")
            if layout is None:
                # The SDK writes nothing on a cluster (its transactions span hash slots),
                # so there is no history of its own there to share: ours, which works there.
                layout = NATIVE if isinstance(redis_client, RedisCluster) else SDK
            if layout == NATIVE and key_prefix is not None:
                key_prefix = _sdk_key_prefix(key_prefix)

        def own_store() -> tuple[RedisStore, Release]:
            if url is None and redis_client is None:
                raise SessionConfigError("RedisSession needs a url, a store or a redis_client")
            opened = RedisStore(
                url,
                client=redis_client,
                key_prefix=key_prefix,
                ttl=ttl,
                connect_timeout=connect_timeout,
                socket_timeout=socket_timeout,
                redis_kwargs=redis_kwargs,
                layout=NATIVE if layout is None else layout,
            )
            return opened, opened.close

        if store is not None:
            self.refuse_options_with_store(
                url=url is not None,
                key_prefix=key_prefix is not None,
                layout=layout is not None,
                ttl=ttl is not None,
                connect_timeout=connect_timeout != DEFAULT_CONNECT_TIMEOUT,
                socket_timeout=socket_timeout != DEFAULT_SOCKET_TIMEOUT,
                redis_kwargs=redis_kwargs is not None,
            )
        super().__init__(
            session_id,
            store=store if store is not None else own_store,
            session_settings=session_settings,
        )

    @classmethod
    def from_url(
        cls,
        session_id: str,
        *,
        url: str,
        redis_kwargs: Mapping[str, Any] | None = None,
        session_settings: SessionSettings | None = None,
        key_prefix: str | None = None,
        ttl: float | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        socket_timeout: float = DEFAULT_SOCKET_TIMEOUT,
        layout: str = SDK,
    ) -> Self:
        """The Agents SDK's constructor: a session with a store of its own on ``url``
        (closed with the session), in the SDK's keys unless ``layout="native"``;
        ``redis_kwargs`` go to ``redis.asyncio``'s ``from_url``. Connects at the first
        call, not here."""
        if layout == NATIVE and key_prefix is not None:
            key_prefix = _sdk_key_prefix(key_prefix)
        return cls(
            session_id,
            url,
            layout=layout,
            key_prefix=key_prefix,
            ttl=ttl,
            connect_timeout=connect_timeout,
            socket_timeout=socket_timeout,
            redis_kwargs=redis_kwargs,
            session_settings=session_settings,
        )

    async def ping(self) -> bool:
        """Whether the server answers (``False`` when it cannot be reached), as the Agents
        SDK's ``ping``; ``SessionClosedError`` once the session is closed."""
        self._check_open()
        return await self.store.ping()


def _packed_in_parts(connection: Any, commands: list[tuple[Any, ...]]) -> list[bytes]:
    """``commands`` in the protocol's bytes, in parts of about ``_SEND_PART`` bytes: one
    ``send()`` of megabytes holds the loop while the kernel copies them all."""
    parts: list[bytes] = []
    pending: list[bytes] = []
    size = 0
    for piece in connection.pack_commands(commands):
        pending.append(piece)
        size += len(piece)
        if size >= _SEND_PART:
            parts.append(b"".join(pending))
            pending, size = [], 0
    if pending:
        parts.append(b"".join(pending))
    return parts


def _watched_key_changed(exc: WatchError) -> bool:
    """Whether ``EXEC`` was refused because a watched key changed (then nothing ran: try
    again), not the ``WatchError`` redis-py raises for a connection lost while watching,
    after which the transaction may have run."""
    return "changed" in str(exc)


def _scripts_missing(exc: ResponseError) -> bool:
    """Whether the server refused ``EVAL`` as unknown (plain fakeredis, without Lua)."""
    text = str(exc)
    return "unknown command" in text and "eval" in text.lower()


def _first(limit: int | None) -> int:
    """The ``LRANGE`` start of ``get_items(limit)``."""
    return 0 if limit is None else -limit


def _decode(raw_items: list[Any], where: str) -> list[Item]:
    return [item for raw in raw_items if (item := decode_item(raw, where=where)) is not None]


async def _push_packed_in_worker(
    client: aioredis.Redis, key: bytes, encoded: list[str], ttl_ms: int | None
) -> None:
    """The ``RPUSH`` of a large batch (with its TTL refresh in ``MULTI``/``EXEC``), packed
    into the protocol's bytes in a worker thread: redis-py packs a command's arguments in
    Python, 20,000 of them in 10-30 ms, which would hold the event loop. Sent on a
    connection of the client's pool, which is dropped, never reused, if anything fails
    before every reply was read (the server then discards an unfinished ``MULTI``)."""
    push = ("RPUSH", key, *encoded)
    commands: list[tuple[Any, ...]] = [push]
    if ttl_ms is not None:
        expire = ("EVAL", _EXPIRE_IF_LIST, 1, key, ttl_ms)
        commands = [("MULTI",), push, expire, ("EXEC",)]
    pool = client.connection_pool
    connection = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        try:
            packed = await asyncio.to_thread(_packed_in_parts, connection, commands)
            for number, part in enumerate(packed):
                if number:
                    await asyncio.sleep(0)
                await connection.send_packed_command(part, check_health=not number)
            replies = [await connection.read_response() for _ in commands]
        except BaseException:
            await connection.disconnect(nowait=True)
            raise
    finally:
        await pool.release(connection)
    for reply in replies[-1] if ttl_ms is not None else replies:
        if isinstance(reply, ResponseError):  # refused inside the transaction
            raise reply


def _client_from_url(
    url: str, connect_timeout: float, socket_timeout: float, redis_kwargs: Mapping[str, Any]
) -> aioredis.Redis:
    """A client of the store's own: no retries (a retried RPUSH whose reply was lost would
    duplicate items) and the store's timeouts, under the caller's ``redis_kwargs``."""
    options: dict[str, Any] = {
        "retry": Retry(NoBackoff(), 0),
        "socket_connect_timeout": connect_timeout,
        "socket_timeout": socket_timeout,
    }
    options.update(redis_kwargs)
    return aioredis.Redis.from_url(url, **options)


def _check_redis_kwargs(url: str | None, redis_kwargs: object) -> dict[str, Any]:
    """``redis_kwargs`` as a dict, once a client and a connection (unconnected) were made
    with them, so that a keyword the client does not take fails here, not at first use."""
    if redis_kwargs is None:
        return {}
    if not isinstance(redis_kwargs, Mapping) or not all(
        isinstance(key, str) for key in redis_kwargs
    ):
        raise TypeError(
            f"redis_kwargs must be a dict of keyword arguments, got {type(redis_kwargs).__name__}"
        )
    options = dict(redis_kwargs)
    assert url is not None
    try:
        probe = _client_from_url(url, DEFAULT_CONNECT_TIMEOUT, DEFAULT_SOCKET_TIMEOUT, options)
        probe.connection_pool.make_connection()  # type: ignore[no-untyped-call]  # no socket
    except (TypeError, ValueError) as exc:
        raise SessionConfigError(
            f"redis_kwargs {sorted(options)} are not all accepted by redis.asyncio: {exc}"
        ) from None
    return options


def _sdk_key_prefix(key_prefix: object) -> str:
    """A key prefix given the Agents SDK's way: the SDK joins prefix and id with ``:``, so
    ``"agents:session"`` means our ``"agents:session:"``; one ending with ``:`` is kept."""
    if isinstance(key_prefix, str) and key_prefix and not key_prefix.endswith(":"):
        return key_prefix + ":"
    return _check_key_prefix(key_prefix)


_DB_PATH = re.compile(r"/?(\d*)/?")
_UNKNOWN_KEYWORD = re.compile(r"unexpected keyword argument '([^']*)'")


@functools.lru_cache(maxsize=64)
def _check_url(url: str, masked: str) -> None:
    """Refuse, at once and with ``SessionConfigError`` naming the option, what redis-py
    would take silently or fail on only at the first call: a database number that is not
    one (``redis://host/abc`` would use database 0), a negative one, and an option no
    connection takes (``?bogus=1``, a bare ``TypeError`` at the first command). Cached:
    making the driver's connection object costs 0.3 ms, and sessions of one URL are
    made again and again (a refused URL raises again each time)."""
    check_userinfo(url)
    try:
        parts = urlsplit(url)
        kwargs = parse_url(url)
    except ValueError as exc:
        raise SessionConfigError(
            f"bad Redis URL {masked}: {scrub(str(exc), url_secrets(url))}"
        ) from None
    path = unquote(parts.path)
    if parts.scheme.lower() != "unix" and not _DB_PATH.fullmatch(path):
        raise SessionConfigError(
            f"the database number (the path) of Redis URL {masked} must be an integer "
            f">= 0, got {path.lstrip('/')!r}"
        )
    db = kwargs.get("db", 0)
    if not isinstance(db, int) or db < 0:
        raise SessionConfigError(f"option db of Redis URL {masked} must be >= 0, got {db!r}")
    try:
        # The driver's own check of its options: a connection object, not connected.
        ConnectionPool.from_url(url).make_connection()  # type: ignore[no-untyped-call]
    except TypeError as exc:
        found = _UNKNOWN_KEYWORD.search(str(exc))
        name = found.group(1) if found else str(exc)
        raise SessionConfigError(f"unknown option {name!r} in Redis URL {masked}") from None
    except ValueError as exc:
        raise SessionConfigError(
            f"bad Redis URL {masked}: {scrub(str(exc), url_secrets(url))}"
        ) from None


def _cluster_like(client: RedisCluster) -> RedisCluster:
    """A new cluster client with ``client``'s startup nodes and connection settings, for
    an event loop that ``client`` does not serve."""
    accepted = inspect.signature(RedisCluster.__init__).parameters
    settings = {
        name: value
        for name, value in client.connection_kwargs.items()
        if name in accepted and name not in _NOT_COPIED
    }
    nodes = [ClusterNode(node.host, node.port) for node in client.startup_nodes]
    return RedisCluster(startup_nodes=nodes, retry=client.retry, **settings)


# Set per client (or derived from the startup nodes), not connection settings to copy.
_NOT_COPIED = frozenset({"host", "port", "startup_nodes", "retry", "event_dispatcher"})


def _client_url(client: aioredis.Redis | RedisCluster) -> str:
    """A password-free URL describing an injected client's server, for error messages."""
    if isinstance(client, RedisCluster):
        nodes = ",".join(f"{node.host}:{node.port}" for node in client.startup_nodes)
        return f"redis://{nodes} (Redis Cluster)"
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    host, port, db = kwargs.get("host", "localhost"), kwargs.get("port", 6379), kwargs.get("db", 0)
    return f"redis://{host}:{port}/{db}"


def _session_id_of(escaped: bytes) -> str | None:
    """The session id of a key's part after the prefix; ``None`` for a key of a longer
    prefix (a bare ``:``), which belongs to another store."""
    if b":" in escaped:
        return None
    return unquote(escaped.decode("utf-8", "replace"))


def _as_bytes(key: bytes | str) -> bytes:
    """A key as bytes (a client created with ``decode_responses=True`` returns str)."""
    return key if isinstance(key, bytes) else key.encode("utf-8")


def _glob_escape(text: str) -> str:
    """``text`` with Redis glob metacharacters escaped, to match it literally."""
    return "".join("\\" + char if char in "*?[]\\^" else char for char in text)


def _format_cursor(node: int, scan_cursor: int, after: str | None, cluster: bool) -> str:
    head = f"{node}.{scan_cursor}" if cluster else f"{scan_cursor}"
    return head if after is None else f"{head}:{after}"


def _parse_cursor(cursor: str | None, *, cluster: bool) -> tuple[int, int, str | None]:
    """Split a cursor of ours into the node's index (0 but on a cluster), the SCAN cursor
    and the last id returned from its batch."""
    if cursor is None:
        return 0, 0, None
    if not isinstance(cursor, str):
        raise TypeError(f"cursor must be a str or None, got {type(cursor).__name__}")
    head, sep, after = cursor.partition(":")
    node, dot, scan = head.partition(".") if cluster else ("0", ".", head)
    if not (dot and node.isdigit() and scan.isdigit()):
        raise ValueError(f"not a RedisStore listing cursor: {cursor!r}")
    return int(node), int(scan), after if sep else None
