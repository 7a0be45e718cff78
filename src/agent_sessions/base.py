"""The session handle every backend of this library is built on, and yours can be.

A backend is a *store* (it owns connections, schema and pooling) and *sessions*, cheap
handles of one session id on a store. :class:`BaseStore` and :class:`BaseSession` hold
everything that is not I/O, once, so that every backend checks the same things in the
same order:

1. closed state first: a call on a closed session or store raises
   :class:`~agent_sessions.SessionClosedError`, whatever its arguments;
2. then the arguments: the limit (``TypeError`` for a non-int or a ``bool``,
   ``ValueError`` below 0; a limit above :data:`MAX_INT64` means everything), the items
   (:class:`~agent_sessions.InvalidItemError` naming the index, before anything is
   sent), the ``list_sessions`` prefix, cursor and page size;
3. then the store's own operation, which does the I/O.

A backend implements only the store operations, the hooks ``_get_items``, ``_add_items``,
``_pop_item``, ``_clear_session``, ``_list_sessions`` and (when it holds anything)
``_close``; they receive validated arguments: items arrive encoded as JSON text, and
:func:`decode_item` / :func:`decode_items` turn stored text back into items (skipping,
with a warning, rows that are not JSON objects). See "Writing a backend" in the docs'
Sessions page.

``close()`` of a session or store closes it at the call: from then on every call raises
``SessionClosedError``, even before the returned object is awaited. Awaiting it (or
passing it to ``asyncio.run``) releases what it held: a session releases its store only
when it opened the store itself; a store closes the connections it created, never a
client or pool it was given.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Final, Generic, TypeVar, cast

from typing_extensions import Self

from ._json import ENCODE_CHUNK, decode_item, decode_items, encode_items, encode_items_in_worker
from .errors import SessionClosedError, SessionConfigError
from .protocol import (
    InvalidItemError,
    Item,
    SessionABC,
    SessionSettings,
    SessionsPage,
    coerce_session_settings,
    validate_limit,
    validate_page_limit,
    validate_session_id,
)

__all__ = [
    "MAX_INT64",
    "BaseSession",
    "BaseStore",
    "Closing",
    "Release",
    "decode_item",
    "decode_items",
    "default_session_settings",
    "given_sdk_settings",
    "sdk_settings_view",
]

MAX_INT64: Final = 2**63 - 1
"""The largest integer every store's server takes. No session holds more items, so a
``get_items`` limit above it means everything, and a ``list_sessions`` page size is
clamped below it."""

Release = Callable[[], Awaitable[None]]
"""What closing a session releases: its store's ``close``, or handing a shared store back."""

_StoreT = TypeVar("_StoreT", bound="BaseStore")
_SDK_SETTINGS_MODULE: Final = "agents.memory.session_settings"


def _sdk_settings() -> Any:
    """The Agents SDK's ``SessionSettings`` class if the SDK is loaded (never imported
    here: importing it takes over a second), else ``None``."""
    module = sys.modules.get(_SDK_SETTINGS_MODULE)
    return None if module is None else getattr(module, "SessionSettings", None)


def given_sdk_settings(settings: object) -> Any:
    """``settings`` if it is an instance of the Agents SDK's ``SessionSettings`` (then the
    SDK is loaded), else ``None``."""
    sdk_class = _sdk_settings() if settings is not None else None
    # type(), not isinstance(): ours pass the SDK's isinstance checks (see
    # SessionSettings.__class__), and are not the SDK's object.
    return settings if sdk_class is not None and issubclass(type(settings), sdk_class) else None


def sdk_settings_view(settings: SessionSettings) -> Any:
    """A copy of ``settings`` as the Agents SDK's ``SessionSettings`` if the SDK is loaded
    (what its ``Runner`` and wrappers accept), else ``None``; the SDK is never imported."""
    sdk_class = _sdk_settings()
    return None if sdk_class is None else sdk_class(limit=settings.limit)


class GivenSettings:
    """The settings a session or wrapper was given (``settings``, or ``None``): handed out
    as the Agents SDK's ``SessionSettings`` while the SDK is loaded (its ``Runner`` and
    wrappers accept nothing else), the SDK's object itself if one was given, else a copy
    of ours made once; without the SDK, ours, and nothing imports the SDK."""

    __slots__ = ("_sdk_view", "settings")

    def __init__(self, settings: SessionSettings | None) -> None:
        self.settings = coerce_session_settings(settings)
        self._sdk_view: Any = given_sdk_settings(settings)

    def handed_out(self) -> SessionSettings | None:
        """What ``session_settings`` shows; ``None`` when none were given."""
        if self.settings is None:
            return None
        if self._sdk_view is None:
            self._sdk_view = sdk_settings_view(self.settings)
            if self._sdk_view is None:
                return self.settings
        return cast(SessionSettings, self._sdk_view)

    @property
    def live(self) -> SessionSettings | None:
        """The settings that count: the SDK's object once handed out (it is mutable: what
        was handed out is what counts), else ours; ``None`` when none were given."""
        return self.settings if self._sdk_view is None else cast(SessionSettings, self._sdk_view)


def default_session_settings() -> SessionSettings:
    """A fresh default ``SessionSettings()`` (``limit`` ``None``): the Agents SDK's class
    when the SDK is loaded, so that its wrappers accept it, ours otherwise. Both have
    ``limit`` and ``resolve``."""
    sdk_class = _sdk_settings()
    if sdk_class is not None:
        return cast(SessionSettings, sdk_class())
    return SessionSettings()


class Closing(Coroutine[Any, Any, None]):
    """What ``close()`` returns. The session or store is already closed when ``close()``
    returns; awaiting this (``await``, ``asyncio.run``) releases what it held. It is a
    coroutine that was never started until awaited: leaving it unawaited warns nothing.

    ``close()`` called plainly, as the Agents SDK's examples do, releases too: when this
    object is dropped unawaited (at once, in CPython, for a plain ``session.close()``),
    ``release_now`` runs if the backend has one (SQLite: its connections are closed at
    that moment), else the release is started as a task on the running event loop, or run
    to its end with ``asyncio.run`` when no loop runs in this thread."""

    __slots__ = ("_release", "_release_now", "_running")

    def __init__(
        self, release: Release | None = None, release_now: Callable[[], None] | None = None
    ) -> None:
        self._release = release
        self._release_now = release_now
        self._running: Coroutine[Any, Any, None] | None = None

    def release_now(self) -> None:
        """Release what was held without awaiting (what dropping this unawaited does); a
        no-op once awaited or released."""
        if self._running is not None or self._release is None:
            return
        release, now = self._release, self._release_now
        self._release = self._release_now = None
        if now is not None:
            now()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(_awaited(release))
            return
        task = loop.create_task(_awaited(release))
        _releasing.add(task)  # held until done: the loop keeps only weak references
        task.add_done_callback(_release_done)

    def __del__(self) -> None:
        try:
            self.release_now()
        except Exception:  # nowhere to raise from a finalizer: say it
            _logger.warning("releasing a closed session's resources failed", exc_info=True)

    def _coroutine(self) -> Coroutine[Any, Any, None]:
        if self._running is None:
            self._running = self._run()
        return self._running

    async def _run(self) -> None:
        release, self._release = self._release, None
        if release is not None:
            await release()

    def send(self, value: None) -> Any:
        return self._coroutine().send(value)

    def throw(self, *args: Any) -> Any:
        return self._coroutine().throw(*args)

    def close(self) -> None:
        if self._running is not None:
            self._running.close()

    def __await__(self) -> Generator[Any, None, None]:
        return self._coroutine().__await__()


_logger = logging.getLogger("agent_sessions")
_releasing: set[asyncio.Task[None]] = set()


async def _awaited(release: Release) -> None:
    await release()


def _release_done(task: asyncio.Task[None]) -> None:
    _releasing.discard(task)
    if not task.cancelled() and task.exception() is not None:
        _logger.warning("releasing a closed session's resources failed", exc_info=task.exception())


class BaseStore(abc.ABC):
    """The logic every store shares: closed state, ``list_sessions`` argument checks,
    ``close()`` once, ``async with``. Subclasses implement the hooks, which are called only
    on an open store with validated arguments, and give ``location``."""

    _closed: bool = False

    @property
    @abc.abstractmethod
    def location(self) -> str:
        """Where this store keeps its sessions, safe to print (a password is masked)."""

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        """Raise ``SessionClosedError`` if this store was closed."""
        if self._closed:
            raise SessionClosedError(f"{type(self).__name__} ({self.location}) is closed")

    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        """Ids of sessions holding at least one item and starting with ``prefix``,
        ``limit`` (an int >= 1) per page; pass ``next_cursor`` back for the next page."""
        self.check_open()
        if not isinstance(prefix, str):
            raise TypeError(f"prefix must be a str, got {type(prefix).__name__}")
        if cursor is not None and not isinstance(cursor, str):
            raise TypeError(f"cursor must be a str or None, got {type(cursor).__name__}")
        # A page can never hold more ids than a store can count; backends may ask for one more.
        limit = min(validate_page_limit(limit), MAX_INT64 - 1)
        return await self._list_sessions(prefix, cursor, limit)

    def close(self) -> Closing:
        """Close this store now: every later call on it or its sessions raises
        ``SessionClosedError``. Await the result to release its connections (only those it
        created). Idempotent."""
        if self._closed:
            return Closing()
        self._closed = True
        return Closing(self._close, self._close_now)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.location!r})"

    # -- what a backend implements ---------------------------------------------------------

    @abc.abstractmethod
    async def _get_items(self, session_id: str, limit: int | None) -> list[Item]:
        """The latest ``limit`` items of the session (``None``: all; never 0), oldest first,
        corrupt rows skipped with a warning (``agent_sessions._json.decode_items``)."""

    @abc.abstractmethod
    async def _add_items(self, session_id: str, encoded: list[str]) -> None:
        """Append one non-empty batch of items, already encoded as JSON text, atomically."""

    @abc.abstractmethod
    async def _pop_item(self, session_id: str) -> Item | None:
        """Remove and return the latest valid item (discarding corrupt rows above it)."""

    @abc.abstractmethod
    async def _clear_session(self, session_id: str) -> None:
        """Remove every item of the session."""

    async def _replace_items(self, session_id: str, encoded: list[str]) -> None:
        """Make ``encoded`` (JSON texts, maybe none) the session's whole history in one
        atomic step: a transaction, a MULTI/EXEC. A backend that cannot must leave this
        as it is: ``replace_items`` then refuses, and wrappers fall back to
        ``clear_session`` then ``add_items``."""
        raise NotImplementedError(f"{type(self).__name__} cannot replace a history atomically")

    @abc.abstractmethod
    async def _list_sessions(self, prefix: str, cursor: str | None, limit: int) -> SessionsPage:
        """One page of ``list_sessions``: ``limit`` is an int in ``[1, MAX_INT64 - 1]``,
        ``cursor`` one this store returned (or something to refuse with ``ValueError``)."""

    async def _close(self) -> None:
        """Release the connections this store created (called once, on the first
        ``close()``, when it is awaited). A store that holds nothing needs nothing here."""
        return None

    _close_now: Callable[[], None] | None = None
    """What releases this store's connections without awaiting, for a ``close()`` that is
    never awaited (``None``: ``_close`` is then run as a task, see :class:`Closing`)."""


class BaseSession(SessionABC, Generic[_StoreT]):
    """A session that is a handle on a :class:`BaseStore`: the id, the settings, the
    checks, and ``close()``; the store does the I/O.

    ``store`` is either a store the caller owns (closing the session leaves it open) or a
    function opening one for this session, returning the store and what closing the
    session releases (``store.close`` for a store of the session's own). It is called
    only once the id and the settings passed their checks.
    """

    store: _StoreT

    def __init__(
        self,
        session_id: str,
        *,
        store: _StoreT | Callable[[], tuple[_StoreT, Release | None]],
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = self.check_session_id(session_id)
        self._given = GivenSettings(session_settings)
        self._default_settings: Any = None
        self._closed = False
        self._release: Release | None = None
        if isinstance(store, BaseStore):
            self.store = store
        else:
            self.store, self._release = store()

    @classmethod
    def check_session_id(cls, session_id: object) -> str:
        """``session_id`` if the backend can keep it: by default any non-empty str that
        UTF-8 can encode (else ``TypeError`` or ``InvalidSessionIdError``). A backend whose
        server refuses more ids extends this (calling it first)."""
        return validate_session_id(session_id)

    @staticmethod
    def refuse_options_with_store(**given: bool) -> None:
        """Raise ``SessionConfigError`` naming the options given (``True``) alongside
        ``store=``: a session on a given store uses the store's settings."""
        names = [name for name, was_given in given.items() if was_given]
        if names:
            raise SessionConfigError(
                f"pass either store= or {', '.join(names)}, not both: a session on a given "
                "store uses the store's settings"
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.session_id!r}, {self.store.location!r})"

    @property
    def session_settings(self) -> SessionSettings:
        """The settings given, else a default ``SessionSettings()`` (``limit`` ``None``)
        made on first read. When the Agents SDK is loaded at the moment of reading, this is
        an instance of the SDK's own class (its ``Runner`` and wrappers, such as
        ``EncryptedSession``, accept nothing else): the SDK's object if one was given, else
        a copy of ours made once; without the SDK it is ours and nothing imports the SDK.
        Assign to change them; ``None`` restores the default."""
        given = self._given.handed_out()
        if given is None:
            default = self._default_settings
            if default is None or (
                type(default) is SessionSettings and _sdk_settings() is not None
            ):
                # Made on first read, remade once if the SDK was loaded since (ours is
                # frozen: nothing set on it is lost).
                default = self._default_settings = default_session_settings()
            return cast(SessionSettings, default)
        return given

    @session_settings.setter
    def session_settings(self, settings: SessionSettings | None) -> None:
        self._given = GivenSettings(settings)
        self._default_settings = None

    def _effective_limit(self, limit: int | None) -> int | None:
        if limit is not None:
            return validate_limit(limit)
        settings = self._given.live
        if settings is None:
            settings = self._default_settings
        return None if settings is None else validate_limit(settings.limit)

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The latest ``limit`` items (default ``session_settings.limit``, else all),
        oldest first."""
        self._check_open()
        limit = self._effective_limit(limit)
        if limit is None or limit > MAX_INT64:
            return await self.store._get_items(self.session_id, None)
        if limit == 0:
            return []
        return await self.store._get_items(self.session_id, limit)

    async def add_items(self, items: list[Item]) -> None:
        """Store ``items`` as one atomic batch, after validating all of them."""
        self._check_open()
        if type(items) is list and len(items) > ENCODE_CHUNK:
            encoded = await encode_items_in_worker(items)  # the loop runs meanwhile
        else:
            encoded = encode_items(items)
        if encoded:
            await self.store._add_items(self.session_id, encoded)

    async def add_encoded_items(self, encoded: list[str]) -> None:
        """Store items given as the JSON text ``add_items`` would have written for them,
        as one atomic batch (the :class:`~agent_sessions.protocol.EncodedAppend`
        capability, for wrappers that build their own JSON). Only the shape is checked:
        a list of str, each ``{...}``; a wrong one raises ``InvalidItemError``, nothing
        stored."""
        self._check_open()
        if type(encoded) is not list:
            raise InvalidItemError(
                f"encoded must be a list of JSON texts, got {type(encoded).__name__}"
            )
        for index, text in enumerate(encoded):
            if type(text) is not str or not (text.startswith("{") and text.endswith("}")):
                raise InvalidItemError(
                    f"encoded item {index} is not the JSON text of an object: {text!r:.60}"
                )
        if encoded:
            await self.store._add_items(self.session_id, encoded)

    async def replace_items(self, items: list[Item]) -> None:
        """Make ``items`` this session's whole history in one atomic step (the
        :class:`~agent_sessions.protocol.ReplacingSession` capability): after a failure,
        a cancellation or a crash the history is either the old one or ``items``. The
        items are validated first (a rejected list changes nothing); ``[]`` empties it."""
        self._check_open()
        if type(items) is list and len(items) > ENCODE_CHUNK:
            encoded = await encode_items_in_worker(items)  # the loop runs meanwhile
        else:
            encoded = encode_items(items)
        await self.store._replace_items(self.session_id, encoded)

    async def _atomic_replace_items(self, items: list[Item]) -> bool:
        """The hook through which the Agents SDK's ``OpenAIResponsesCompactionSession``
        replaces a compacted history (it looks it up on the session's type): one atomic
        :meth:`replace_items`, so that a crash or a cancellation leaves the old history or
        the new one, never the SDK's clear-then-add gap. ``False`` (nothing changed) when
        the store cannot replace atomically: the SDK then clears and adds."""
        try:
            await self.replace_items(items)
        except NotImplementedError:
            return False
        return True

    async def pop_item(self) -> Item | None:
        """Remove and return the latest item (``None`` when there is none)."""
        self._check_open()
        return await self.store._pop_item(self.session_id)

    async def clear_session(self) -> None:
        """Remove every item of this session."""
        self._check_open()
        await self.store._clear_session(self.session_id)

    def close(self) -> Closing:
        """Close this handle now: later calls raise ``SessionClosedError``. Await the
        result to release the store when the session opened it (a store given with
        ``store=`` stays open). Idempotent."""
        if self._closed:
            return Closing()
        self._closed = True
        release, self._release = self._release, None
        return Closing(release, getattr(release, "now", None))

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                # "<Class> is closed" first: the Agents SDK's wording, which its users match.
                f"{type(self).__name__} is closed: {self.session_id!r} ({self.store.location})"
            )
        self.store.check_open()
