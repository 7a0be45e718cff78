"""The session contract: what every backend implements and every runner relies on.

`Session` is shape-compatible with the OpenAI Agents SDK's `agents.memory.Session`:
an object of ours passes ``isinstance(obj, agents.memory.Session)`` and works with
the SDK's ``Runner``. The semantics every backend keeps are tested by
:mod:`agent_sessions.testing` (the conformance kit) and described in the docs' Sessions
page.
"""

from __future__ import annotations

import abc
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from typing_extensions import Self

from .errors import (
    InvalidItemError,
    InvalidSessionIdError,
    SessionClosedError,
    SessionError,
    UnsupportedSchemaError,
)

__all__ = [
    "EncodedAppend",
    "EncodedRead",
    "InvalidItemError",
    "InvalidSessionIdError",
    "Item",
    "ReplacingSession",
    "Session",
    "SessionABC",
    "SessionClosedError",
    "SessionError",
    "SessionSettings",
    "SessionStore",
    "SessionsPage",
    "UnsupportedSchemaError",
    "coerce_session_settings",
    "validate_limit",
    "validate_page_limit",
    "validate_session_id",
]

Item: TypeAlias = dict[str, Any]
"""One conversation item: a JSON object (a dict with str keys and JSON values)."""


@dataclass(frozen=True)
class SessionSettings:
    """Per-session defaults. ``limit`` caps how many of the latest items ``get_items()``
    returns when it is called without an explicit limit (``None``: everything)."""

    limit: int | None = None

    def __post_init__(self) -> None:
        if self.limit is not None:
            validate_limit(self.limit)

    def __eq__(self, other: object) -> bool:
        """Equal to settings of the same values: ours, or the Agents SDK's
        ``SessionSettings`` (what our sessions hand out while the SDK is loaded)."""
        if isinstance(other, SessionSettings):
            return self.limit == other.limit
        if type(other).__name__ == "SessionSettings" and type(other).__module__.startswith(
            "agents."
        ):
            return bool(self.limit == getattr(other, "limit", None))
        return NotImplemented

    @property  # type: ignore[misc]
    def __class__(self) -> type[Any]:
        """The Agents SDK's ``SessionSettings`` while the SDK is loaded (so that its
        ``isinstance`` checks, in ``RunConfig(session_settings=...)``, its ``Runner`` and
        its wrappers, take ours as is), else this class. ``type()`` is always ours; the SDK
        is never imported here."""
        module = sys.modules.get("agents.memory.session_settings")
        sdk_class = None if module is None else getattr(module, "SessionSettings", None)
        return type(self) if sdk_class is None else cast("type[Any]", sdk_class)

    def __reduce__(self) -> tuple[type[SessionSettings], tuple[int | None]]:
        # pickle and copy build the object from type(self), not from __class__
        return (type(self), (self.limit,))

    def resolve(self, override: object | None) -> SessionSettings:
        """Return these settings with every non-``None`` value of ``override`` laid on top.

        ``override`` may be a ``SessionSettings``, a mapping, or any object with the same
        attributes (the Agents SDK's own ``SessionSettings`` passes here when its Runner
        resolves a run's settings against ours).
        """
        if override is None:
            return self
        if isinstance(override, Mapping):
            unknown = sorted(str(k) for k in override if k != "limit")
            if unknown:
                raise TypeError(f"Unknown session settings: {', '.join(unknown)}")
            limit = override.get("limit")
        else:
            limit = getattr(override, "limit", None)
        if limit is None:
            return self
        return type(self)(limit=limit)  # not replace(): it builds self.__class__


def coerce_session_settings(settings: object) -> SessionSettings | None:
    """``settings`` as our ``SessionSettings``: ours as is, ``None`` as is, and the Agents
    SDK's ``SessionSettings`` (or a mapping with ``limit``) converted, so that code written
    for the SDK's sessions works unchanged with ours."""
    if settings is None or isinstance(settings, SessionSettings):
        return settings
    if isinstance(settings, Mapping) or hasattr(settings, "limit"):
        return SessionSettings().resolve(settings)
    raise TypeError(
        f"session_settings must be a SessionSettings or None, got {type(settings).__name__}"
    )


def validate_limit(limit: object) -> int | None:
    """Return ``limit`` if it is ``None`` or an int >= 0; raise otherwise.

    ``bool`` is refused although it is an ``int``: ``get_items(True)`` is a bug, not a
    request for one item.
    """
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int >= 0 or None, got {type(limit).__name__}")
    if limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    return limit


def validate_page_limit(limit: object) -> int:
    """Return ``limit`` if it is an int >= 1 (the page size of ``list_sessions``, the same
    check in every backend): ``TypeError`` for a non-int (``bool`` included),
    ``ValueError`` for an int below 1."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int >= 1, got {type(limit).__name__}")
    if limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}")
    return limit


def validate_session_id(session_id: object) -> str:
    """Return ``session_id`` if it is a non-empty ``str`` that UTF-8 can encode; raise
    ``TypeError`` for a non-str, ``InvalidSessionIdError`` (a ``ValueError``) otherwise."""
    if not isinstance(session_id, str):
        raise TypeError(f"session_id must be a str, got {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionIdError("session_id must be a non-empty str")
    if not session_id.isascii():
        try:
            session_id.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidSessionIdError(
                f"session_id holds {exc.object[exc.start]!r} at index {exc.start}, a lone "
                "surrogate, which UTF-8 cannot store"
            ) from None
    return session_id


@runtime_checkable
class Session(Protocol):
    """Conversation history for one session id.

    Any object with these six members is a session; nothing needs to inherit from here.
    """

    session_id: str
    session_settings: SessionSettings | None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """Return the latest ``limit`` items, oldest first.

        ``None`` falls back to ``session_settings.limit``, then to every item.
        """
        ...

    async def add_items(self, items: list[Item]) -> None:
        """Append ``items`` as one atomic batch (all stored, in order, or none)."""
        ...

    async def pop_item(self) -> Item | None:
        """Remove and return the latest item, or ``None`` when the session is empty."""
        ...

    async def clear_session(self) -> None:
        """Remove every item of this session (and only of this session)."""
        ...


@runtime_checkable
class ReplacingSession(Protocol):
    """An optional capability of a session, for wrappers that rewrite a history
    (:class:`~agent_sessions.bounded.CompactingSession`): ``replace_items(items)`` makes
    ``items`` the whole history of the session in one atomic step. A failure, a
    cancellation or a process killed at any point leaves either the old history or the
    new one, never a mix, never nothing. ``items`` are validated first, as ``add_items``
    does (a rejected list changes nothing); ``[]`` empties the session.

    Every backend of this library has it (SQLite and PostgreSQL: one transaction; Redis:
    one MULTI/EXEC; SQLAlchemy: one transaction). A session without it is rewritten with
    ``clear_session`` then ``add_items``, which is not atomic across a crash."""

    async def replace_items(self, items: list[Item]) -> None:
        """Make ``items`` the session's whole history, atomically."""
        ...


@runtime_checkable
class EncodedAppend(Protocol):
    """An optional capability of a session, for wrappers that write JSON text of their
    own making (:class:`~agent_sessions.encrypted.EncryptedSession`'s envelopes):
    ``add_encoded_items(encoded)`` appends items given as their JSON text, exactly as
    ``add_items`` would have encoded them (compact, unicode as is), as one atomic batch,
    without decoding and encoding them again. Only the shape is checked (a list of str,
    each one's text an object's braces); the JSON itself is the caller's responsibility.
    Every backend of this library has it."""

    async def add_encoded_items(self, encoded: list[str]) -> None:
        """Append the items whose JSON text ``encoded`` holds, as one atomic batch."""
        ...


@runtime_checkable
class EncodedRead(Protocol):
    """An optional capability of a session, for wrappers that decode what they stored
    themselves (:class:`~agent_sessions.encrypted.EncryptedSession`'s envelopes):
    ``get_encoded_items(limit)`` returns the latest ``limit`` items as the text stored for
    them, oldest first, exactly as ``get_items`` would have read them but not decoded.
    ``limit`` means what it means for ``get_items`` (``None``: ``session_settings.limit``,
    then every item). A row that is not UTF-8 is skipped with a warning; the text of a row
    written by something else may be anything, so the caller checks each text and skips
    what is not a JSON object as ``get_items`` does, counting it towards the limit.
    :class:`~agent_sessions.SQLiteSession` has it; a wrapper must work without it."""

    async def get_encoded_items(self, limit: int | None = None) -> list[str]:
        """The latest ``limit`` items' stored text, oldest first, not decoded."""
        ...


@dataclass(frozen=True)
class SessionsPage:
    """One page of session ids from ``SessionStore.list_sessions``.

    ``next_cursor`` is opaque (pass it back to get the next page); ``None`` on the last page.
    """

    session_ids: list[str]
    next_cursor: str | None


@runtime_checkable
class SessionStore(Protocol):
    """Owns connections, schema and pooling for many sessions of one database.

    Sessions are cheap handles that borrow the store's connections; closing a session
    never closes its store, closing the store makes its sessions unusable.
    """

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        """A handle on ``session_id`` in this store (created lazily on first write)."""
        ...

    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        """Ids of sessions holding at least one item, whose id starts with ``prefix``."""
        ...

    async def close(self) -> None:
        """Release every connection. Later calls raise ``SessionClosedError``."""
        ...


class SessionABC(abc.ABC):
    """Abstract base for implementers who prefer inheritance to the structural protocol.

    It adds the lifecycle every backend of this library shares: ``close()`` and
    ``async with``.
    """

    session_id: str
    session_settings: SessionSettings | None = None

    @abc.abstractmethod
    async def get_items(self, limit: int | None = None) -> list[Item]: ...

    @abc.abstractmethod
    async def add_items(self, items: list[Item]) -> None: ...

    @abc.abstractmethod
    async def pop_item(self) -> Item | None: ...

    @abc.abstractmethod
    async def clear_session(self) -> None: ...

    async def close(self) -> None:
        """Release what this session holds. Later calls raise ``SessionClosedError``."""
        return None  # a session that holds nothing has nothing to release

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def _effective_limit(self, limit: int | None) -> int | None:
        """``limit`` validated, falling back to ``session_settings.limit``."""
        if limit is None and self.session_settings is not None:
            return self.session_settings.limit
        return validate_limit(limit)
