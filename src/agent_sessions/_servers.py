"""What the server backends (Redis, PostgreSQL) share: clients per event loop, timeout
checks, masked URLs and the install hint for a missing driver."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

from .errors import SessionBackendError, SessionConfigError

__all__ = [
    "PerLoop",
    "SessionBackendError",
    "check_timeout",
    "deadline",
    "mask_url",
    "missing_driver",
]

_T = TypeVar("_T")
logger = logging.getLogger("agent_sessions")

_PASSWORD_PARAMETER = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)")
_USERINFO_PASSWORD = re.compile(r"(://[^/:@]*):[^/]*@")


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: in the user info of any
    scheme (``sqlite://u:pw@host/x.db`` too, and URLs too broken to parse), and as a
    ``password=`` parameter (libpq's ``key=value`` strings and URL query strings)."""
    url = _PASSWORD_PARAMETER.sub(r"\1***", url)
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced IPv6 bracket: mask by pattern instead
        return _USERINFO_PASSWORD.sub(r"\1:***@", url)
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.partition(":")[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{hostport}"))


def missing_driver(backend: str, extra: str, module: str) -> ImportError:
    """The error raised when a backend's optional driver is not installed."""
    return ImportError(
        f"the {backend} backend needs the {module!r} package, which is not installed: "
        f'pip install "agent-sessions[{extra}]"'
    )


class PerLoop(Generic[_T]):
    """One client (or pool) per running event loop, created on first use in that loop.

    A driver's client belongs to the loop that first used it (its connections, locks and
    futures do), so a store used from several loops (``asyncio.run`` per call, threads with
    a loop each) keeps one per loop and shares no asyncio object between them. Clients of
    loops that have closed are dropped when the next loop arrives, without awaiting
    anything on a dead loop (their sockets are closed by the garbage collector).
    """

    def __init__(self, drop: Callable[[_T], None] | None = None) -> None:
        """``drop(client)`` releases a client of a closed loop without awaiting (for
        instance by closing its sockets); by default it is left to the garbage collector."""
        self._drop = drop
        self._lock = threading.Lock()
        self._items: dict[asyncio.AbstractEventLoop, _T] = {}
        self._last: tuple[asyncio.AbstractEventLoop, _T] | None = None

    def get(self, create: Callable[[], _T]) -> _T:
        """The running loop's client, created with ``create()`` on its first call."""
        loop = asyncio.get_running_loop()
        last = self._last
        if last is not None and last[0] is loop:
            return last[1]
        with self._lock:
            item = self._items.get(loop)
            if item is None:
                for dead in [other for other in self._items if other.is_closed()]:
                    dropped = self._items.pop(dead)
                    if self._drop is not None:
                        try:
                            self._drop(dropped)
                        except Exception as exc:  # releasing is best effort
                            logger.warning("could not release a connection: %r", exc)
                item = create()
                self._items[loop] = item
            self._last = (loop, item)
        return item

    def take_all(self) -> list[tuple[asyncio.AbstractEventLoop, _T]]:
        """Remove and return every (loop, client) pair."""
        with self._lock:
            items = list(self._items.items())
            self._items.clear()
            self._last = None
        return items

    async def close_all(self, close: Callable[[_T], Awaitable[object]], timeout: float) -> None:
        """Close every client, each on its own loop, from whichever loop calls this.

        A client of the calling loop is closed here; one of another running loop (another
        thread) is closed on that loop, waited for at most ``timeout`` seconds; one whose
        loop is closed or stopped is dropped. Never raises for a client that fails to close.
        """
        current = asyncio.get_running_loop()
        for loop, item in self.take_all():
            try:
                if loop is current:
                    await asyncio.wait_for(close(item), timeout)
                elif not loop.is_closed() and loop.is_running():
                    future = asyncio.run_coroutine_threadsafe(_awaited(close, item), loop)
                    await asyncio.wait_for(asyncio.wrap_future(future), timeout)
                elif self._drop is not None:
                    self._drop(item)
            except Exception as exc:  # closing is best effort; the next client is fresh
                logger.warning("could not close a connection cleanly: %r", exc)


async def _awaited(close: Callable[[_T], Awaitable[object]], item: _T) -> None:
    await close(item)


def check_timeout(name: str, value: object) -> float:
    """``value`` as a finite number of seconds > 0, or ``SessionConfigError`` naming
    ``name``."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise SessionConfigError(f"{name} must be a finite number of seconds > 0, got {value!r}")
    return float(value)


@asynccontextmanager
async def deadline(seconds: float) -> AsyncIterator[None]:
    """Cancel the body after ``seconds`` and raise ``TimeoutError`` instead (what
    ``asyncio.timeout`` does from Python 3.11, kept here for 3.10)."""
    task = asyncio.current_task()
    assert task is not None, "deadline() needs a running task"
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    handle = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        yield
    except asyncio.CancelledError:
        if expired:
            raise TimeoutError(f"no answer within {seconds}s") from None
        raise
    finally:
        handle.cancel()
