"""What the server backends (Redis, PostgreSQL) share: clients per event loop, timeout
checks, masked URLs and the install hint for a missing driver."""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Generic, NamedTuple, TypeVar
from urllib.parse import quote, unquote

from .errors import SessionBackendError, SessionConfigError

__all__ = [
    "PerLoop",
    "SessionBackendError",
    "check_timeout",
    "check_userinfo",
    "deadline",
    "mask_url",
    "missing_driver",
    "scrub",
    "url_secrets",
]

_T = TypeVar("_T")
logger = logging.getLogger("agent_sessions")

_PASSWORD_PARAMETER = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)(.*)", re.DOTALL)
# "host:5432/db?application_name=a@b": a port then the path, not a password.
_PORT_THEN_PATH = re.compile(r"\d*[/?#]")
_NOT_IN_USERINFO = "/?#@[]"
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class _UserInfo(NamedTuple):
    scheme: str  # with "://"
    user: str
    password: str | None
    tail: str  # what follows the "@"
    suspicious: bool  # spelled so that drivers may split the URL elsewhere


def _userinfo(url: str) -> _UserInfo | None:
    """The user info of ``url``, or ``None`` when it names no user.

    As the URL grammar reads it (up to the last ``@`` of the authority) when that is
    unambiguous. When it is not (a raw ``@``, ``[``, ``]`` or stray ``%`` in it, or a
    ``:`` before a ``/``, ``?`` or ``#`` that some later ``@`` ends), it runs to the
    *last* ``@`` of the URL, as liberally as any driver might read it, and is
    ``suspicious``: a password holding ``#``, ``/``, ``?`` or ``@`` is then all of it."""
    match = _SCHEME.fullmatch(url)
    if match is None:
        return None
    scheme, rest = match.groups()
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    head, at, _ = authority.rpartition("@")
    if at:
        user, colon, password = head.partition(":")
        clean = not any(char in head for char in _NOT_IN_USERINFO)
        if (
            clean
            and not _BAD_PERCENT.search(head)
            and not _at_outside_query(rest[len(authority) :])
        ):
            return _UserInfo(
                scheme, user, password if colon else None, rest[len(head) + 1 :], False
            )
    else:
        head, at, _ = rest.rpartition("@")
        user, colon, password = head.partition(":")
        # "[::1]:5432/db?a=b@c" and "host:5432/db?a=b@c" name no user; neither does
        # "host/db?a=b@c" (nor can "us/er@host" be told from it: user names are no secret).
        # "u:12/ab@host/db": digits then "/" read as a port, but an "@" in the path (or
        # the fragment, or a query "parameter" without "=") is the user info's.
        port_like = _PORT_THEN_PATH.match(password) and not _at_outside_query(
            rest[len(authority) :]
        )
        if not at or head.startswith("[") or not colon or port_like:
            return None
    head, _, tail = rest.rpartition("@")
    user, colon, password = head.partition(":")
    return _UserInfo(scheme, user, password if colon else None, tail, True)


def _at_outside_query(after: str) -> bool:
    """Whether ``after`` (what follows a URL's authority) holds an ``@`` that no query
    parameter's value holds: in the path, the fragment, or a query "parameter" without
    ``=`` (``u:pa@ss/w0rd@host``: the password went on past its ``@``)."""
    path, _, query = after.partition("#")[0].partition("?")
    if "@" in path or "@" in after.partition("#")[2]:
        return True
    return any("@" in pair.partition("=")[0] for pair in query.split("&"))


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: in the user info of any
    scheme (``sqlite://u:pw@host/x.db`` too, and URLs too broken to parse), whatever it
    holds (``#``, ``/``, ``?``, ``@``, ``%``: when its spelling is ambiguous, everything
    up to the URL's last ``@`` is masked), and as a ``password=`` parameter (libpq's
    ``key=value`` strings and query strings)."""
    url = _PASSWORD_PARAMETER.sub(r"\1***", url)
    parts = _userinfo(url)
    if parts is None or parts.password is None:
        return url
    return f"{parts.scheme}{parts.user}:***@{parts.tail}"


def url_secrets(url: str) -> list[str]:
    """The password of ``url`` in every spelling a message might quote it in (as written,
    percent-decoded, and the ``password=`` parameter's), longest first, for
    :func:`scrub`."""
    found: set[str] = set()
    parts = _userinfo(url)
    if parts is not None and parts.password:
        found.update({parts.password, unquote(parts.password)})
    for match in _PASSWORD_PARAMETER.finditer(url):
        value = match.group(2)
        found.update({value, value.strip("'"), unquote(value)})
    return sorted((secret for secret in found if secret), key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` (see :func:`url_secrets`) replaced by
    ``***``: for messages that quote what a driver made of a URL."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def check_userinfo(url: str) -> None:
    """Refuse, with ``SessionConfigError`` and without showing it, a user name or password
    that holds a character the URL grammar ends it at (``/ ? # @ [ ]``) or a ``%`` that
    starts no escape: drivers split such a URL in different places (so a password would
    reach the server cut, or as a host name), and it must be percent-encoded instead.
    A password of digits then ``/``, ``?`` or ``#`` (``u:12/ab@host``) is caught by the
    ``@`` after it."""
    parts = _userinfo(url)
    if parts is None or not parts.suspicious:
        return
    for what, text in (("user name", parts.user), ("password", parts.password or "")):
        bad = next((char for char in text if char in _NOT_IN_USERINFO), None)
        if bad is None and _BAD_PERCENT.search(text):
            bad = "%"
        if bad is not None:
            raise SessionConfigError(
                f"the {what} in {mask_url(url)!r} holds a raw {bad!r}: percent-encode it "
                f"as {quote(bad, safe='')} (urllib.parse.quote(text, safe=''))"
            )
    raise SessionConfigError(f"ambiguous user info in {mask_url(url)!r}: percent-encode it")


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

    def __init__(
        self,
        drop: Callable[[_T], None] | None = None,
        *,
        at_loop_end: Callable[[_T], Awaitable[object]] | None = None,
    ) -> None:
        """``drop(client)`` releases a client of a closed loop without awaiting (for
        instance by closing its sockets); by default it is left to the garbage collector.

        ``at_loop_end(client)``, if given, closes a client on its own loop as that loop
        ends: when ``asyncio.run`` (``Runner.run_sync``, ``asyncio.Runner``) or anyone
        else calls the loop's ``shutdown_asyncgens()``, the last moment it can await
        (the hook is an async generator started in that loop, which the loop finalizes
        there). A loop closed without it still gets ``drop`` when the next loop arrives."""
        self._drop = drop
        self._at_loop_end = at_loop_end
        self._lock = threading.Lock()
        self._items: dict[asyncio.AbstractEventLoop, _T] = {}
        self._last: tuple[asyncio.AbstractEventLoop, _T] | None = None
        # The loop-end hook of each loop's client (the loop holds it weakly only).
        self._hooks: dict[asyncio.AbstractEventLoop, _LoopEnd] = {}

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
                    self._disarm(dead)
                    if self._drop is not None:
                        try:
                            self._drop(dropped)
                        except Exception as exc:  # releasing is best effort
                            logger.warning("could not release a connection: %r", exc)
                item = create()
                self._items[loop] = item
                if self._at_loop_end is not None:
                    self._hooks[loop] = _LoopEnd(self, loop, item)
            self._last = (loop, item)
        return item

    def take_all(self) -> list[tuple[asyncio.AbstractEventLoop, _T]]:
        """Remove and return every (loop, client) pair."""
        with self._lock:
            items = list(self._items.items())
            self._items.clear()
            self._last = None
            for loop in list(self._hooks):
                self._disarm(loop)
        return items

    def _disarm(self, loop: asyncio.AbstractEventLoop) -> None:
        """Forget ``loop``'s loop-end hook (under the lock)."""
        hook = self._hooks.pop(loop, None)
        if hook is not None:
            hook.disarm()

    def _ended(self, loop: asyncio.AbstractEventLoop, item: _T) -> bool:
        """Called by ``loop``'s hook as the loop ends: whether ``item`` is still its
        client (then removed, for the hook to close)."""
        with self._lock:
            if self._items.get(loop) is not item:
                return False
            del self._items[loop]
            self._hooks.pop(loop, None)
            if self._last is not None and self._last[0] is loop:
                self._last = None
        return True

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


class _LoopEnd:
    """The hook that closes a :class:`PerLoop` client as its loop ends: an async generator
    started (to its ``yield``, without suspending) in that loop, which registers it; the
    loop's ``shutdown_asyncgens()`` closes it there, running its ``finally``, which may
    still await. Disarmed, it finishes without awaiting (closed at once, so that the
    loop's finalizer never schedules it)."""

    def __init__(self, owner: PerLoop[Any], loop: asyncio.AbstractEventLoop, item: Any) -> None:
        self._armed = True
        self._generator = self._run(owner, loop, item)
        # The first step registers the generator with the running loop.
        step = self._generator.__anext__()
        try:
            step.send(None)
        except StopIteration:
            pass
        else:  # pragma: no cover - the generator yields before any await
            raise AssertionError("the loop-end hook suspended before its yield")

    async def _run(
        self, owner: PerLoop[Any], loop: asyncio.AbstractEventLoop, item: Any
    ) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            if self._armed and owner._ended(loop, item):
                close = owner._at_loop_end
                assert close is not None
                try:
                    await close(item)
                except Exception as exc:  # closing is best effort, as in close_all
                    logger.warning("could not close a connection as its loop ended: %r", exc)

    def disarm(self) -> None:
        """Finish the generator here, closing nothing."""
        self._armed = False
        step = self._generator.aclose()
        try:
            step.send(None)
        except StopIteration:
            pass
        except RuntimeError:  # already running (it is this loop's shutdown): let it end
            pass


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
