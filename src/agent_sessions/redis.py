"""Sessions in Redis: one list per session, one round trip per operation.

Each session is a Redis list under ``key_prefix + session_id`` holding one JSON document
per item, oldest first. ``add_items`` is one ``RPUSH`` of the whole batch (atomic by
itself; wrapped in ``MULTI``/``EXEC`` together with ``EXPIRE`` when the store has a TTL,
so the TTL is refreshed in the same transaction as the write). ``get_items(N)`` is
``LRANGE key -N -1``, ``pop_item`` is ``RPOP``, ``clear_session`` is ``DEL``. Listing
uses ``SCAN`` (never ``KEYS``), so it never blocks the server.

Our own clients never retry a command on a connection error: a retried ``RPUSH`` whose
first reply was lost would store the batch twice. Outages raise
:class:`~agent_sessions.SessionBackendError` naming the masked URL; the next call
reconnects.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from ._json import decode_item, encode_items
from ._servers import SessionBackendError, mask_url, missing_driver
from .protocol import (
    Item,
    SessionABC,
    SessionClosedError,
    SessionSettings,
    SessionsPage,
    coerce_session_settings,
    validate_session_id,
)

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as exc:  # pragma: no cover - exercised in a venv without redis
    raise missing_driver("Redis", "redis", "redis") from exc

__all__ = ["DEFAULT_KEY_PREFIX", "RedisSession", "RedisStore"]

DEFAULT_KEY_PREFIX = "agent_sessions:"
_INT64_MAX = 2**63 - 1
_OUTAGES = (RedisConnectionError, RedisTimeoutError, OSError)
# Fixed, so that rescanning from a cursor returns the same batch whatever the page size.
_SCAN_COUNT = 1000


class RedisStore:
    """Sessions stored in one Redis database, sharing the store's connection pool.

    Give either ``url`` (the store creates its client and closes it in :meth:`close`) or
    ``client`` (a ``redis.asyncio.Redis`` you own: never closed by us; create it with
    ``retry=Retry(NoBackoff(), 0)``, since a client that retries a write whose reply was
    lost stores that batch twice). ``ttl`` (seconds) makes every session expire that long
    after its last write. Like redis-py's client, a store belongs to the event loop that
    first uses it.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: aioredis.Redis | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: float | None = None,
    ) -> None:
        if (url is None) == (client is None):
            raise ValueError("RedisStore needs exactly one of url= or client=")
        if not isinstance(key_prefix, str):
            raise TypeError(f"key_prefix must be a str, got {type(key_prefix).__name__}")
        if ttl is not None and (isinstance(ttl, bool) or not ttl > 0):
            raise ValueError(f"ttl must be a number of seconds > 0 or None, got {ttl!r}")
        if client is None:
            assert url is not None
            # No retries: a retried RPUSH whose first reply was lost would duplicate items.
            client = aioredis.Redis.from_url(url, retry=Retry(NoBackoff(), 0))
            self._owns_client = True
            self.url = mask_url(url)
        else:
            self._owns_client = False
            self.url = _client_url(client)
        self._client = client
        self.key_prefix = key_prefix
        self.ttl_ms = None if ttl is None else max(1, round(ttl * 1000))
        self._closed = False

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> RedisSession:
        """A handle on ``session_id`` in this store; closing it leaves the store open."""
        return RedisSession(session_id, store=self, session_settings=session_settings)

    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        """Ids of non-empty sessions starting with ``prefix``, at most ``limit`` per page.

        Ids come in ``SCAN`` order (sorted within each scanned batch). As with ``SCAN``
        itself, an id may appear twice when Redis resizes its key table mid-listing.
        """
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        client = self._client_for("list_sessions")
        scan_cursor, after = _parse_cursor(cursor)
        pattern = _glob_escape(self.key_prefix + prefix).encode() + b"*"
        skip = len(self.key_prefix.encode())
        found: list[str] = []
        async with self._connection_errors():
            while True:
                next_cursor, keys = await client.scan(
                    scan_cursor, match=pattern, count=_SCAN_COUNT, _type="list"
                )
                batch = sorted({_as_bytes(key)[skip:].decode("utf-8", "replace") for key in keys})
                if after is not None:
                    batch = [sid for sid in batch if sid > after]
                room = limit - len(found)
                if len(batch) > room:
                    # Resume inside this batch next time: rescan it, skip what we returned.
                    found.extend(batch[:room])
                    return SessionsPage(found, _format_cursor(scan_cursor, found[-1]))
                found.extend(batch)
                after = None
                scan_cursor = int(next_cursor)
                if scan_cursor == 0:
                    return SessionsPage(found, None)
                if len(found) == limit:
                    return SessionsPage(found, _format_cursor(scan_cursor, None))

    async def close(self) -> None:
        """Close the client this store created (an injected client stays open)."""
        if self._closed:
            return
        self._closed = True
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> RedisStore:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _key(self, session_id: str) -> bytes:
        return (self.key_prefix + session_id).encode("utf-8")

    def _client_for(self, what: str) -> aioredis.Redis:
        if self._closed:
            raise SessionClosedError(f"{what} used after its RedisStore ({self.url}) was closed")
        return self._client

    @asynccontextmanager
    async def _connection_errors(self) -> AsyncIterator[None]:
        """Turn the driver's connection errors into ``SessionBackendError``."""
        try:
            yield
        except _OUTAGES as exc:
            raise SessionBackendError(f"Redis at {self.url} failed: {exc}") from exc


class RedisSession(SessionABC):
    """One conversation in Redis.

    ``RedisSession("user_123", "redis://localhost:6379/0")`` opens its own store (closed
    with the session); ``store.session("user_123")`` borrows a shared one. Keyword
    arguments ``key_prefix`` and ``ttl`` are those of :class:`RedisStore`.
    """

    def __init__(
        self,
        session_id: str,
        url: str | None = None,
        *,
        store: RedisStore | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        ttl: float | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = validate_session_id(session_id)
        self.session_settings = coerce_session_settings(session_settings)
        if store is None:
            if url is None:
                raise ValueError("RedisSession needs a url or a store")
            store = RedisStore(url, key_prefix=key_prefix, ttl=ttl)
            self._owns_store = True
        elif url is not None or key_prefix != DEFAULT_KEY_PREFIX or ttl is not None:
            raise ValueError(
                "pass either store= or url/key_prefix/ttl, not both: "
                "a session on a given store uses the store's settings"
            )
        else:
            self._owns_store = False
        self.store = store
        self._key = store._key(self.session_id)
        self._closed = False

    async def get_items(self, limit: int | None = None) -> list[Item]:
        limit = self._effective_limit(limit)
        if limit is not None and limit > _INT64_MAX:
            limit = None  # more than any session holds; the server's integers are 64-bit
        client = self._client()
        if limit == 0:
            return []
        async with self.store._connection_errors():
            raw_items = await client.lrange(self._key, 0 if limit is None else -limit, -1)
        return [
            item for raw in raw_items if (item := decode_item(raw, where=self._where())) is not None
        ]

    async def add_items(self, items: list[Item]) -> None:
        encoded = encode_items(items)
        client = self._client()
        if not encoded:
            return
        ttl_ms = self.store.ttl_ms
        async with self.store._connection_errors():
            if ttl_ms is None:
                await client.rpush(self._key, *encoded)
            else:
                async with client.pipeline(transaction=True) as pipe:
                    pipe.rpush(self._key, *encoded)
                    pipe.pexpire(self._key, ttl_ms)
                    await pipe.execute()

    async def pop_item(self) -> Item | None:
        client = self._client()
        ttl_ms = self.store.ttl_ms
        async with self.store._connection_errors():
            while True:
                raw: Any
                if ttl_ms is None:
                    raw = await client.rpop(self._key)
                else:
                    async with client.pipeline(transaction=True) as pipe:
                        pipe.rpop(self._key)
                        pipe.pexpire(self._key, ttl_ms)
                        raw, _ = await pipe.execute()
                if raw is None:
                    return None
                item = decode_item(raw, where=self._where())
                if item is not None:
                    return item
                # A corrupt newest item is removed and skipped; the next one is the latest.

    async def clear_session(self) -> None:
        client = self._client()
        async with self.store._connection_errors():
            await client.delete(self._key)

    async def close(self) -> None:
        """Mark this handle closed; close its store only if the session created it."""
        if self._closed:
            return
        self._closed = True
        if self._owns_store:
            await self.store.close()

    def _client(self) -> aioredis.Redis:
        if self._closed:
            raise SessionClosedError(f"RedisSession {self.session_id!r} used after close()")
        return self.store._client_for(f"RedisSession {self.session_id!r}")

    def _where(self) -> str:
        return f"{self.store.url} key {self._key!r}"


def _client_url(client: aioredis.Redis) -> str:
    """A password-free URL describing an injected client's server, for error messages."""
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}?db={kwargs.get('db', 0)}"
    host, port, db = kwargs.get("host", "localhost"), kwargs.get("port", 6379), kwargs.get("db", 0)
    return f"redis://{host}:{port}/{db}"


def _as_bytes(key: bytes | str) -> bytes:
    """A key as bytes (a client created with ``decode_responses=True`` returns str)."""
    return key if isinstance(key, bytes) else key.encode("utf-8")


def _glob_escape(text: str) -> str:
    """``text`` with Redis glob metacharacters escaped, to match it literally."""
    return "".join("\\" + char if char in "*?[]\\^" else char for char in text)


def _format_cursor(scan_cursor: int, after: str | None) -> str:
    return f"{scan_cursor}" if after is None else f"{scan_cursor}:{after}"


def _parse_cursor(cursor: str | None) -> tuple[int, str | None]:
    """Split a cursor of ours into the SCAN cursor and the last id returned from its batch."""
    if cursor is None:
        return 0, None
    if not isinstance(cursor, str):
        raise TypeError(f"cursor must be a str or None, got {type(cursor).__name__}")
    head, sep, after = cursor.partition(":")
    if not head.isdigit():
        raise ValueError(f"not a RedisStore listing cursor: {cursor!r}")
    return int(head), after if sep else None
