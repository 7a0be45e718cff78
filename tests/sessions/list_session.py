"""The smallest correct third-party backend, and the kit harness its mutants run in.

``ListSession`` keeps each session's items as JSON text in a plain list of a ``ListStore``.
Broken variants of it (tests/sessions/kit_mutants*.py) subclass it, take the same
constructor ``(session_id, store, session_settings=None)``, and run in ``ListKit``.
"""

from __future__ import annotations

import threading
from typing import ClassVar, NoReturn

import pytest

from agent_sessions import (
    BackendUnreachableError,
    Item,
    Session,
    SessionABC,
    SessionClosedError,
    SessionSettings,
)
from agent_sessions._json import decode_items, encode_items
from agent_sessions.protocol import SessionsPage, validate_page_limit, validate_session_id
from agent_sessions.testing import SessionConformance


class ListStore:
    """Items per session id in plain lists, as JSON text: the smallest correct store."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[str, list[str]] = {}

    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        """Ids holding items that start with ``prefix``, in code point order, after
        ``cursor``; ``limit`` (an int >= 1, clamped) per page."""
        limit = validate_page_limit(limit)
        with self.lock:
            ids = sorted(
                session_id
                for session_id, rows in self.rows.items()
                if rows
                and session_id.startswith(prefix)
                and (cursor is None or session_id > cursor)
            )
        if len(ids) > limit:
            return SessionsPage(ids[:limit], ids[limit - 1])
        return SessionsPage(ids, None)


class ListSession(SessionABC):
    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        self.session_id = validate_session_id(session_id)
        self.session_settings = session_settings
        self.store = store
        self.closed = False

    async def get_items(self, limit: int | None = None) -> list[Item]:
        self.check_open()
        limit = self._effective_limit(limit)
        with self.store.lock:
            rows = list(self.store.rows.get(self.session_id, []))
        if limit is not None:
            rows = rows[len(rows) - min(limit, len(rows)) :]
        return decode_items(enumerate(rows), where=str)

    async def add_items(self, items: list[Item]) -> None:
        self.check_open()
        encoded = encode_items(items)
        with self.store.lock:
            self.store.rows.setdefault(self.session_id, []).extend(encoded)

    async def pop_item(self) -> Item | None:
        self.check_open()
        with self.store.lock:
            rows = self.store.rows.get(self.session_id, [])
            while rows:
                popped = decode_items([(len(rows), rows.pop())], where=str)
                if popped:
                    return popped[0]
        return None

    async def clear_session(self) -> None:
        self.check_open()
        with self.store.lock:
            self.store.rows.pop(self.session_id, None)

    async def close(self) -> None:
        self.closed = True

    def check_open(self) -> None:
        if self.closed:
            raise SessionClosedError(f"ListSession {self.session_id!r} is closed")


class UnreachableListSession(ListSession):
    """A session on a list store behind a URL where nothing answers: every call fails with
    ``BackendUnreachableError`` naming the masked URL, the refusal as its ``__cause__``."""

    url: ClassVar[str] = "list://kit:pa%2Fs3cret@127.0.0.1:9/store"
    masked: ClassVar[str] = "list://kit:***@127.0.0.1:9/store"

    def refusal(self) -> OSError:
        return ConnectionRefusedError(111, f"Connection refused by {self.url}")

    async def fail(self) -> NoReturn:
        self.check_open()
        try:
            raise self.refusal()
        except OSError as exc:
            raise BackendUnreachableError(f"list store at {self.masked} is unreachable") from exc

    async def get_items(self, limit: int | None = None) -> list[Item]:
        await self.fail()

    async def add_items(self, items: list[Item]) -> None:
        await self.fail()

    async def pop_item(self) -> Item | None:
        await self.fail()

    async def clear_session(self) -> None:
        await self.fail()


class ListKit(SessionConformance):
    """The kit on a fresh ``ListStore`` per test, with sessions of ``session_class``."""

    session_class: ClassVar[type[ListSession]] = ListSession
    store: ListStore

    @pytest.fixture(autouse=True)
    def list_store(self) -> None:
        self.store = ListStore()

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.session_class(session_id, self.store, session_settings)

    failing_session_class: ClassVar[type[UnreachableListSession]] = UnreachableListSession

    def failing_store_address(self) -> tuple[str, str]:
        return self.failing_session_class.masked, "s3cret"

    async def create_failing_session(self, session_id: str) -> Session:
        return self.failing_session_class(session_id, ListStore())

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        with self.store.lock:
            self.store.rows.setdefault(session.session_id, []).append(
                raw.decode("utf-8", "replace")
            )
