"""The smallest correct third-party backend, and the kit harness its mutants run in.

``ListSession`` keeps each session's items as JSON text in a plain list of a ``ListStore``.
Broken variants of it (tests/sessions/kit_mutants*.py) subclass it, take the same
constructor ``(session_id, store, session_settings=None)``, and run in ``ListKit``.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
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


class JournalListStore(ListStore):
    """A ``ListStore`` that processes share: each process keeps the rows in memory, and
    every change made under ``lock`` is appended to a journal file (which the lock holds
    with ``flock``) and replayed by the others when they next take the lock."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.lock = _JournalLock(self)  # type: ignore[assignment]
        self.offset = 0


class _JournalLock:
    def __init__(self, store: JournalListStore) -> None:
        self.store = store
        self.threads = threading.Lock()
        self.file: int | None = None
        self.before: dict[str, list[str]] = {}

    def __enter__(self) -> None:
        self.threads.acquire()
        try:
            self.file = os.open(self.store.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
            fcntl.flock(self.file, fcntl.LOCK_EX)
            self._replay()
        except BaseException:
            self._release()
            raise
        self.before = {key: list(rows) for key, rows in self.store.rows.items()}

    def _replay(self) -> None:
        assert self.file is not None
        size = os.fstat(self.file).st_size
        if size > self.store.offset:
            written = os.pread(self.file, size - self.store.offset, self.store.offset)
            for line in written.decode("utf-8").splitlines():
                change = json.loads(line)
                rows = self.store.rows.get(change["id"], [])
                self.store.rows[change["id"]] = rows[: change["keep"]] + change["tail"]
            self.store.offset = size

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        try:
            assert self.file is not None
            for key in sorted({*self.before, *self.store.rows}):
                old, new = self.before.get(key, []), self.store.rows.get(key, [])
                if old != new:
                    keep = 0
                    while keep < min(len(old), len(new)) and old[keep] == new[keep]:
                        keep += 1
                    change = {"id": key, "keep": keep, "tail": new[keep:]}
                    os.write(self.file, (json.dumps(change) + "\n").encode("utf-8"))
            self.store.offset = os.fstat(self.file).st_size
        finally:
            self._release()

    def _release(self) -> None:
        if self.file is not None:
            os.close(self.file)  # and with it the flock
            self.file = None
        self.threads.release()


def _session_on_the_journal(
    session_class: type[ListSession], path: Path, session_id: str
) -> ListSession:
    return session_class(session_id, JournalListStore(path))


class ProcessListKit(ListKit):
    """``ListKit`` on a :class:`JournalListStore`: it claims processes, and a child process
    opens its sessions (of ``session_class``) on the same journal."""

    supports_processes: ClassVar[bool] = True

    @pytest.fixture(autouse=True)
    def list_store(self, tmp_path: Path) -> None:
        self.store = JournalListStore(tmp_path / "journal")

    def child_session_factory(self) -> Callable[[str], ListSession]:
        assert isinstance(self.store, JournalListStore)
        return functools.partial(_session_on_the_journal, self.session_class, self.store.path)
