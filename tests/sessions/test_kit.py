"""The conformance kit itself: a correct third-party backend passes it, broken ones fail."""

from __future__ import annotations

import textwrap
import threading

import pytest

from agent_sessions import Item, Session, SessionABC, SessionClosedError, SessionSettings
from agent_sessions._json import decode_items, encode_items
from agent_sessions.protocol import validate_session_id
from agent_sessions.testing import SessionConformance


class ListStore:
    """Items per session id in plain lists, as JSON text: the smallest correct store."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[str, list[str]] = {}


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


class TestListSession(SessionConformance):
    """A backend outside this library runs the kit as its authors would."""

    store: ListStore

    @pytest.fixture(autouse=True)
    def list_store(self) -> None:
        self.store = ListStore()

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return ListSession(session_id, self.store, session_settings)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        with self.store.lock:
            self.store.rows.setdefault(session.session_id, []).append(
                raw.decode("utf-8", "replace")
            )


BROKEN_BACKENDS = textwrap.dedent(
    """
    import asyncio
    import copy

    from agent_sessions.testing import SessionConformance

    STORE = {}

    class DictSession:
        def __init__(self, session_id, session_settings=None):
            if not session_id:
                raise ValueError("session_id must not be empty")
            self.session_id = session_id
            self.session_settings = session_settings

        async def get_items(self, limit=None):
            items = STORE.get(self.session_id, [])
            return copy.deepcopy(items if limit is None else items[len(items) - limit:])

        async def add_items(self, items):
            STORE.setdefault(self.session_id, []).extend(copy.deepcopy(items))

        async def pop_item(self):
            items = STORE.get(self.session_id, [])
            return items.pop() if items else None

        async def clear_session(self):
            STORE.pop(self.session_id, None)

    class OldestFirstLimit(DictSession):
        async def get_items(self, limit=None):
            items = STORE.get(self.session_id, [])
            return copy.deepcopy(items if limit is None else items[:limit])

    class Aliasing(DictSession):
        async def add_items(self, items):
            STORE.setdefault(self.session_id, []).extend(items)

    class OneByOne(DictSession):
        async def add_items(self, items):
            for item in items:
                await asyncio.sleep(0)
                STORE.setdefault(self.session_id, []).append(copy.deepcopy(item))

    def kit_for(session_class):
        class Kit(SessionConformance):
            async def create_session(self, session_id, *, session_settings=None):
                return session_class(session_id, session_settings)
        return Kit

    TestOldestFirstLimit = kit_for(OldestFirstLimit)
    TestAliasing = kit_for(Aliasing)
    TestOneByOne = kit_for(OneByOne)
    """
)


def test_the_kit_fails_broken_backends_in_strict_asyncio_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_broken=BROKEN_BACKENDS)
    result = pytester.runpytest_subprocess(
        "-p",
        "asyncio",
        "-o",
        "asyncio_mode=strict",
        "-k",
        "limit_n_returns or mutating_items_after or concurrent_tasks",
    )
    result.stdout.fnmatch_lines(
        [
            "FAILED *TestOldestFirstLimit::test_get_items_limit_n_returns_the_latest_n_*",
            "FAILED *TestAliasing::test_mutating_items_after_add_items_changes_nothing_stored*",
            "FAILED *TestOneByOne::test_concurrent_tasks_lose_no_items_and_keep_batches_*",
        ],
        consecutive=False,
    )
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 3
