"""The conformance kit: every guarantee of the session contract as a pytest test class.

A backend author subclasses :class:`SessionConformance` in their own test suite::

    from agent_sessions.testing import SessionConformance

    class TestMySession(SessionConformance):
        async def create_session(self, session_id, *, session_settings=None):
            return MySession(session_id, session_settings=session_settings)

and pytest runs every test of the kit against ``MySession``. Requirements and choices:

- The tests are ``async def`` and need **pytest-asyncio**; the class carries
  ``pytestmark = pytest.mark.asyncio`` so they run in its strict and auto modes alike (a
  subclass that sets its own ``pytestmark`` must keep that mark in it). Importing this module
  needs only pytest.
- Session ids are unique per test (a ``uuid4`` suffix, also on the hostile ids), so the kit
  can run against a shared server that holds other data. Every session the kit creates is
  closed (``await session.close()`` when it has one) at the end of its test.
- Capabilities are class attributes: ``supports_threads`` (sessions may be created and used
  in several threads, each with its own event loop) and ``supports_processes`` (file and
  server stores; then :meth:`~SessionConformance.child_session_factory` is required).
- :meth:`~SessionConformance.write_corrupt_item` lets the kit test corrupt rows; by default
  those tests are skipped.
- Event loops: one session object must work from any event loop, in any order
  (``asyncio.run`` per call, ``Runner.run_sync`` twice), from 4 threads at once that each
  run their own loop, and ``close()`` must work from another loop. Every wait is bounded by
  ``loop_test_bound`` seconds: a hang fails the test instead of blocking the run.
- A frozen server: :meth:`~SessionConformance.create_freezable_session` and
  :meth:`~SessionConformance.freeze_server` let the kit check that calls on a server that
  stopped answering fail with a ``SessionError`` within ``frozen_call_bound`` seconds, and
  (unless ``frozen_cancel_discards_write`` is ``False``) that an ``add_items`` cancelled
  while the server was frozen is not stored when it resumes. By default they are skipped.
- A corrupt row counts towards ``get_items(limit)`` (reads cost O(limit), never a scan for
  valid rows); ``pop_item`` discards corrupt rows at the top and returns the latest valid
  item.
- Listing: when a session has a store with ``list_sessions`` (see
  :meth:`~SessionConformance.listing_store`), the kit checks that a huge page size is
  clamped (``limit=10**30`` lists everything, never an overflow), that a bad one raises
  ``ValueError`` or ``TypeError`` naming ``limit``, and that an id with a NUL after the
  prefix is found (or, on a backend refusing NULs in ids, that such a prefix lists
  nothing).
- A failing store: :meth:`~SessionConformance.failing_store_address` and
  :meth:`~SessionConformance.create_failing_session` let the kit check that a call on a
  store that fails (a server URL where nothing listens, a file that is not a database)
  raises a ``SessionError`` whose message names the store (its path, or its URL with the
  password masked) and never the password, with the driver's error as ``__cause__``. By
  default that test is skipped.
- Errors and the order of checks: a call on a closed session raises
  ``SessionClosedError`` whatever its arguments (the closed state is checked first); bad
  items raise ``InvalidItemError`` and bad ids ``InvalidSessionIdError``, the classes of
  :mod:`agent_sessions.errors` (``agent_sessions.base.BaseSession`` does all of this).

Test names are stable: reports refer to them.

The kit tests itself (tests/sessions/ in this repository, described in tests/README.md):
every kit test fails a backend broken in the way it guards, and every single check of it
(each ``assert`` and ``pytest.raises``) is weakened in turn to show that some broken
backend then gets through, so no check of the kit is dead weight. The few that no backend
can fail alone are listed there with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import multiprocessing
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, TypeVar

import pytest

from .errors import InvalidItemError, InvalidSessionIdError, SessionError
from .protocol import Item, Session, SessionClosedError, SessionSettings

__all__ = ["HOSTILE_SESSION_IDS", "SessionConformance"]

HOSTILE_SESSION_IDS: tuple[str, ...] = (
    "it's",
    'say "hi"',
    "'; DROP TABLE sessions; --",
    "Robert'); DELETE FROM items WHERE ('1' = '1",
    "with space",
    "tab\tand\nnewline",
    "ünïcödé 会话 🧠",
    "%_*?[]{}",
    "back\\slash",
    "colon:separated:key",
    "{hash-tag}",
    "x" * 2000,
)
"""Session ids that break naive SQL, key-building or glob code; the kit adds a suffix."""

_BAD_CALLS: dict[str, tuple[str, tuple[Any, ...], dict[str, Any]]] = {
    "get_items-negative": ("get_items", (), {"limit": -1}),
    "get_items-bool": ("get_items", (), {"limit": True}),
    "get_items-str": ("get_items", (), {"limit": "3"}),
    "get_items-zero": ("get_items", (), {"limit": 0}),
    "add_items-non-mapping": ("add_items", ([{"ok": 1}, 42],), {}),
    "add_items-not-a-list": ("add_items", ("text",), {}),
    "add_items-empty": ("add_items", ([],), {}),
}
"""Calls that an open session refuses or answers without its store: a closed one raises
``SessionClosedError`` for each of them all the same."""

_Test = TypeVar("_Test", bound=Callable[..., Coroutine[Any, Any, None]])


def _closes_sessions(test: _Test) -> _Test:
    """Run the test, then close every session the kit created during it."""

    @functools.wraps(test)
    async def run(self: SessionConformance, *args: Any, **kwargs: Any) -> None:
        self._kit_sessions = []
        try:
            await test(self, *args, **kwargs)
        finally:
            sessions, self._kit_sessions = self._kit_sessions, []
            for session in sessions:
                await _close(session)

    return run  # type: ignore[return-value]


class SessionConformance:
    """Subclass in a test module (the subclass's name must start with ``Test``) and
    implement :meth:`create_session`."""

    pytestmark: ClassVar[Any] = pytest.mark.asyncio

    supports_threads: ClassVar[bool] = True
    """Sessions may be created and used from several threads, each with its own loop."""

    supports_processes: ClassVar[bool] = False
    """Sessions of one id opened in several processes share their items."""

    loop_test_bound: ClassVar[float] = 120.0
    """Seconds an event-loop or thread test may wait for its threads: a hang fails."""

    frozen_call_bound: ClassVar[float] = 60.0
    """Seconds within which a call on a frozen server must fail."""

    frozen_cancel_discards_write: ClassVar[bool] = True
    """An ``add_items`` cancelled while the server is frozen is never stored later."""

    _kit_sessions: list[Session]

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        """A session on the store under test (required)."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_session")

    def child_session_factory(self) -> Callable[[str], Session] | None:
        """A picklable module-level callable (e.g. ``functools.partial(MySession,
        db_path=path)``) that a child process (multiprocessing "spawn") calls with a session
        id to open a session on the SAME store. Required when ``supports_processes``."""
        return None

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        """Store ``raw`` as the newest item of ``session``, bypassing validation, as a
        foreign writer would. The default skips the corrupt-row tests."""
        pytest.skip(f"{type(self).__name__} cannot write raw rows")

    async def create_freezable_session(self, session_id: str) -> Session | None:
        """A session whose server :meth:`freeze_server` can freeze, or ``None`` (the
        default) to skip the frozen-server tests. Give it short timeouts: the kit waits
        ``frozen_call_bound`` seconds for a call on the frozen server to fail."""
        return None

    def freeze_server(self) -> AbstractAsyncContextManager[None]:
        """A context manager inside which the server of :meth:`create_freezable_session`
        accepts bytes but answers nothing (as under ``SIGSTOP``); leaving it resumes the
        server, which then processes what it had received."""
        raise NotImplementedError(f"{type(self).__name__} must implement freeze_server")

    def failing_store_address(self) -> tuple[str, str] | None:
        """``(shown, secret)`` for :meth:`create_failing_session`: the text every error of
        the failing store must name (its file path, or its URL as the library prints it,
        password masked) and a secret it must never print (the URL's password; ``""`` when
        there is none). ``None`` (the default) skips the failing-store test."""
        return None

    async def create_failing_session(self, session_id: str) -> Session:
        """A session on a store that fails every call: a server URL (with the password of
        :meth:`failing_store_address`) on a loopback port where nothing listens, a file
        that is not a database. It may raise its error here already. Give it short
        timeouts: the kit waits at most ``loop_test_bound`` seconds."""
        raise NotImplementedError(f"{type(self).__name__} must implement create_failing_session")

    def listing_store(self, session: Session) -> Any | None:
        """The store that lists ``session``'s id with ``list_sessions(prefix=, cursor=,
        limit=)``, or ``None`` to skip the listing tests. The default is
        ``session.store`` when it has a ``list_sessions`` (every store of this library)."""
        store = getattr(session, "store", None)
        return store if callable(getattr(store, "list_sessions", None)) else None

    # -- helpers for the tests -----------------------------------------------------------

    async def in_thread(self, work: Callable[[], None], *, threads: int = 1) -> None:
        """Run ``work`` in ``threads`` new threads at once and wait for them, at most
        ``loop_test_bound`` seconds: a thread still running then fails the test (it is a
        daemon, so a hung thread does not block the run's exit). An exception raised in a
        thread fails the test with it."""
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not support threads")
        errors: list[BaseException] = []

        def run() -> None:
            try:
                work()
            except BaseException as exc:  # reported by the test
                errors.append(exc)

        workers = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
        for worker in workers:
            worker.start()
        await asyncio.get_running_loop().run_in_executor(
            None, _join_all_within, workers, self.loop_test_bound
        )
        hung = sum(worker.is_alive() for worker in workers)
        if hung:
            pytest.fail(f"{hung} of {threads} threads still running after {self.loop_test_bound}s")
        if errors:
            raise errors[0]

    async def open_session(
        self, label: str = "session", *, session_settings: SessionSettings | None = None
    ) -> Session:
        """A session with a fresh unique id starting with ``label``, closed after the test."""
        return await self._track(
            self.create_session(_unique(label), session_settings=session_settings)
        )

    async def reopen(self, session: Session) -> Session:
        """Another session object on the same id (and store) as ``session``."""
        return await self._track(self.create_session(session.session_id))

    async def _track(self, created: Awaitable[Session]) -> Session:
        session = await created
        self._kit_sessions.append(session)
        return session

    # -- the protocol ----------------------------------------------------------------------

    @_closes_sessions
    async def test_session_satisfies_the_session_protocol(self) -> None:
        session = await self.open_session("protocol")
        assert isinstance(session, Session)
        assert session.session_id.startswith("protocol-")

    @_closes_sessions
    async def test_session_satisfies_the_agents_sdk_session_protocol(self) -> None:
        memory = pytest.importorskip("agents.memory")
        session = await self.open_session("sdk")
        assert isinstance(session, memory.Session)

    @_closes_sessions
    async def test_session_keeps_the_given_settings(self) -> None:
        settings = SessionSettings(limit=3)
        session = await self.open_session("settings", session_settings=settings)
        assert session.session_settings == settings

    @_closes_sessions
    async def test_empty_session_id_raises_value_error(self) -> None:
        async def open_and_read() -> None:
            # Refusing the id when the session is created or on its first call: both fine.
            session = await self._track(self.create_session(""))
            await session.get_items()

        with pytest.raises(ValueError, match="session_id"):
            await open_and_read()

    @pytest.mark.parametrize("bad_id", ["", "lone-\ud800"], ids=["empty", "lone-surrogate"])
    @_closes_sessions
    async def test_a_bad_session_id_raises_invalid_session_id_error(self, bad_id: str) -> None:
        async def open_and_read() -> None:
            session = await self._track(self.create_session(bad_id))
            await session.get_items()

        with pytest.raises(InvalidSessionIdError, match="session_id") as raised:
            await open_and_read()
        assert isinstance(raised.value, ValueError)

    # -- get_items and limits --------------------------------------------------------------

    @_closes_sessions
    async def test_get_items_on_a_new_session_returns_empty(self) -> None:
        session = await self.open_session()
        assert await session.get_items() == []

    @_closes_sessions
    async def test_get_items_returns_everything_oldest_first(self) -> None:
        session = await self.open_session()
        items = _numbered(5)
        await session.add_items(items)
        assert await session.get_items() == items

    @_closes_sessions
    async def test_get_items_limit_zero_returns_empty(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        assert await session.get_items(limit=0) == []

    @_closes_sessions
    async def test_get_items_limit_one_returns_the_latest_item(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        assert await session.get_items(limit=1) == [{"n": 2}]

    @_closes_sessions
    async def test_get_items_limit_n_returns_the_latest_n_oldest_first(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(10))
        assert await session.get_items(limit=4) == _numbered(10)[6:]

    @_closes_sessions
    async def test_get_items_limit_above_length_returns_everything(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        assert await session.get_items(limit=100) == _numbered(3)

    @_closes_sessions
    async def test_get_items_huge_limit_returns_everything(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        assert await session.get_items(limit=2**80) == _numbered(3)

    @_closes_sessions
    async def test_get_items_limit_is_accepted_positionally(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        assert await session.get_items(2) == _numbered(3)[1:]

    @_closes_sessions
    async def test_get_items_without_limit_uses_the_session_settings_limit(self) -> None:
        session = await self.open_session(session_settings=SessionSettings(limit=2))
        await session.add_items(_numbered(5))
        assert await session.get_items() == _numbered(5)[3:]

    @_closes_sessions
    async def test_get_items_without_limit_or_settings_limit_returns_everything(self) -> None:
        session = await self.open_session(session_settings=SessionSettings(limit=None))
        await session.add_items(_numbered(5))
        assert await session.get_items() == _numbered(5)

    @_closes_sessions
    async def test_get_items_explicit_limit_overrides_the_settings_limit(self) -> None:
        session = await self.open_session(session_settings=SessionSettings(limit=2))
        await session.add_items(_numbered(5))
        assert await session.get_items(limit=4) == _numbered(5)[1:]
        assert await session.get_items(limit=0) == []

    @pytest.mark.parametrize("limit", [-1, -100])
    @_closes_sessions
    async def test_get_items_negative_limit_raises_value_error(self, limit: int) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(2))
        with pytest.raises(ValueError, match="limit"):
            await session.get_items(limit=limit)

    @pytest.mark.parametrize("limit", [True, False, 1.0, 2.5, "3", [1]])
    @_closes_sessions
    async def test_get_items_non_int_limit_raises_type_error(self, limit: object) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(2))
        with pytest.raises(TypeError, match="limit"):
            await session.get_items(limit=limit)  # type: ignore[arg-type]

    # -- add_items: order, atomicity, validation ---------------------------------------------

    @_closes_sessions
    async def test_add_items_appends_batches_in_call_order(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        await session.add_items(_numbered(5)[3:])
        await session.add_items([{"n": 5}])
        assert await session.get_items() == _numbered(6)

    @_closes_sessions
    async def test_add_items_empty_list_is_a_no_op(self) -> None:
        session = await self.open_session()
        await session.add_items([])
        assert await session.get_items() == []
        await session.add_items(_numbered(2))
        await session.add_items([])
        assert await session.get_items() == _numbered(2)

    @_closes_sessions
    async def test_add_items_keeps_duplicate_items(self) -> None:
        session = await self.open_session()
        await session.add_items([{"same": 1}, {"same": 1}])
        await session.add_items([{"same": 1}])
        assert await session.get_items() == [{"same": 1}] * 3

    @pytest.mark.parametrize(
        "bad_item",
        ["a string", 42, None, ["a", "list"], ("a", "tuple"), b"bytes"],
        ids=["str", "int", "None", "list", "tuple", "bytes"],
    )
    @_closes_sessions
    async def test_add_items_rejects_a_non_mapping_and_stores_nothing(
        self, bad_item: object
    ) -> None:
        session = await self.open_session()
        await session.add_items([{"before": True}])
        with pytest.raises(TypeError, match=r"item 1\b.*" + type(bad_item).__name__):
            await session.add_items([{"ok": 1}, bad_item, {"ok": 2}])  # type: ignore[list-item]
        assert await session.get_items() == [{"before": True}]

    @pytest.mark.parametrize(
        "bad_item",
        [{1: "int key"}, {"nested": {"deep": {(1, 2): "tuple key"}}}, {"list": [{None: 1}]}],
        ids=["top-level", "nested", "in-list"],
    )
    @_closes_sessions
    async def test_add_items_rejects_a_non_str_key_and_stores_nothing(
        self, bad_item: dict[Any, Any]
    ) -> None:
        session = await self.open_session()
        with pytest.raises(TypeError, match=r"item 1\b"):
            await session.add_items([{"ok": 1}, bad_item])
        assert await session.get_items() == []

    @pytest.mark.parametrize(
        "bad_value",
        [{1, 2}, b"bytes", float("nan"), float("inf"), ("a", "tuple"), object()],
        ids=["set", "bytes", "nan", "inf", "tuple", "object"],
    )
    @_closes_sessions
    async def test_add_items_rejects_a_value_json_cannot_store_and_stores_nothing(
        self, bad_value: object
    ) -> None:
        session = await self.open_session()
        with pytest.raises(TypeError, match=r"item 2\b"):
            await session.add_items([{"ok": 1}, {"ok": 2}, {"nested": [{"bad": bad_value}]}])
        assert await session.get_items() == []

    @pytest.mark.parametrize(
        "bad_item",
        [{"text": "a\ud800b"}, {"key\udfff": 1}, {"list": ["ok", "\udc80"]}],
        ids=["value", "key", "in-list"],
    )
    @_closes_sessions
    async def test_add_items_rejects_a_lone_surrogate_and_stores_nothing(
        self, bad_item: Item
    ) -> None:
        session = await self.open_session()
        with pytest.raises(TypeError, match=r"item 1\b.*surrogate"):
            await session.add_items([{"ok": "é"}, bad_item])
        assert await session.get_items() == []

    @_closes_sessions
    async def test_add_items_rejects_nesting_too_deep_to_encode_and_stores_nothing(
        self,
    ) -> None:
        deep: dict[str, Any] = {}
        innermost = deep
        for _ in range(100_000):
            innermost["d"] = {}
            innermost = innermost["d"]
        session = await self.open_session()
        with pytest.raises(TypeError, match=r"item 1\b"):
            await session.add_items([{"ok": 1}, deep])
        assert await session.get_items() == []

    @_closes_sessions
    async def test_add_items_refuses_a_bad_item_with_invalid_item_error(self) -> None:
        session = await self.open_session()
        with pytest.raises(InvalidItemError, match=r"item 1\b") as raised:
            await session.add_items([{"ok": 1}, 42])  # type: ignore[list-item]
        assert isinstance(raised.value, TypeError)
        assert await session.get_items() == []

    @pytest.mark.parametrize("not_a_list", [{"role": "user"}, "text"], ids=["dict", "str"])
    @_closes_sessions
    async def test_add_items_rejects_a_single_item_instead_of_a_list(
        self, not_a_list: object
    ) -> None:
        session = await self.open_session()
        with pytest.raises(TypeError):
            await session.add_items(not_a_list)  # type: ignore[arg-type]
        assert await session.get_items() == []

    # -- round trips and aliasing ----------------------------------------------------------

    @_closes_sessions
    async def test_round_trip_keeps_unicode_as_is(self) -> None:
        items: list[Item] = [
            {"content": "héllo wörld", "emoji": "🧠👩‍👩‍👧", "cjk": "会话记忆"},
            {"rtl": "مرحبا", "zero_width": "a\u200bb", "combining": "e\u0301"},
            {"ключ": "значение", "": "empty key"},
        ]
        session = await self.open_session()
        await session.add_items(items)
        assert await session.get_items() == items

    @_closes_sessions
    async def test_round_trip_keeps_nul_and_control_characters(self) -> None:
        items: list[Item] = [{"nul": "a\x00b", "control": "\t\r\n\x1f\x7f", "k\x00": 1}]
        session = await self.open_session()
        await session.add_items(items)
        assert await session.get_items() == items

    @_closes_sessions
    async def test_round_trip_keeps_nested_values_and_json_types(self) -> None:
        item: Item = {
            "role": "assistant",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}],
            "numbers": [0, -1, 2**53 + 1, 2**64, 0.1, -2.5, 1.0, 1e-7],
            "flags": [True, False, None],
            "empty": {"dict": {}, "list": [], "str": ""},
            "deep": {"a": [{"b": [{"c": [1, [2, [3]]]}]}]},
        }
        session = await self.open_session()
        await session.add_items([item])
        stored = await session.get_items()
        assert stored == [item]
        assert type(stored[0]["numbers"][6]) is float
        assert type(stored[0]["numbers"][3]) is int

    @_closes_sessions
    async def test_round_trip_keeps_moderately_deep_nesting(self) -> None:
        deep: dict[str, Any] = {"level": 0}
        innermost = deep
        for level in range(1, 100):
            innermost["child"] = {"level": level}
            innermost = innermost["child"]
        session = await self.open_session()
        await session.add_items([deep])
        assert await session.get_items() == [deep]

    @_closes_sessions
    async def test_round_trip_keeps_a_large_item(self) -> None:
        large: Item = {"content": "é" * 1_000_000, "parts": list(range(10_000))}
        session = await self.open_session()
        await session.add_items([large, {"after": True}])
        assert await session.get_items() == [large, {"after": True}]

    @_closes_sessions
    async def test_round_trip_keeps_a_large_batch(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(5_000))
        assert await session.get_items() == _numbered(5_000)
        assert await session.get_items(limit=3) == _numbered(5_000)[-3:]

    @_closes_sessions
    async def test_items_are_visible_to_another_session_object_on_the_same_id(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(2))
        other = await self.reopen(session)
        assert await other.get_items() == _numbered(2)

    @_closes_sessions
    async def test_get_items_returns_fresh_objects(self) -> None:
        session = await self.open_session()
        await session.add_items([{"nested": {"list": [1]}}])
        first = await session.get_items()
        first[0]["nested"]["list"].append(2)
        first[0]["added"] = True
        second = await session.get_items()
        assert second == [{"nested": {"list": [1]}}]
        assert second[0] is not first[0]

    @_closes_sessions
    async def test_mutating_items_after_add_items_changes_nothing_stored(self) -> None:
        session = await self.open_session()
        item: Item = {"nested": {"list": [1]}}
        batch = [item]
        await session.add_items(batch)
        item["nested"]["list"].append(2)
        item["extra"] = True
        batch.append({"late": True})
        assert await session.get_items() == [{"nested": {"list": [1]}}]

    @_closes_sessions
    async def test_add_items_does_not_mutate_its_argument(self) -> None:
        session = await self.open_session()
        batch: list[Item] = [{"n": 1, "nested": {"x": [1, 2]}}]
        await session.add_items(batch)
        assert batch == [{"n": 1, "nested": {"x": [1, 2]}}]

    # -- pop_item and clear_session --------------------------------------------------------

    @_closes_sessions
    async def test_pop_item_on_an_empty_session_returns_none(self) -> None:
        session = await self.open_session()
        assert await session.pop_item() is None

    @_closes_sessions
    async def test_pop_item_removes_and_returns_the_latest_item(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        assert await session.pop_item() == {"n": 2}
        assert await session.get_items() == _numbered(2)

    @_closes_sessions
    async def test_pop_item_until_empty_returns_items_newest_first(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(4))
        popped = [await session.pop_item() for _ in range(5)]
        assert popped == [{"n": 3}, {"n": 2}, {"n": 1}, {"n": 0}, None]
        assert await session.get_items() == []

    @_closes_sessions
    async def test_add_items_after_pop_item_appends_after_the_rest(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        await session.pop_item()
        await session.add_items([{"n": "new"}])
        assert await session.get_items() == [{"n": 0}, {"n": 1}, {"n": "new"}]

    @_closes_sessions
    async def test_pop_item_leaves_other_sessions_alone(self) -> None:
        session, other = await self.open_session(), await self.open_session()
        await session.add_items(_numbered(2))
        await other.add_items([{"other": 1}])
        assert await session.pop_item() == {"n": 1}
        assert await session.pop_item() == {"n": 0}
        assert await session.pop_item() is None
        assert await other.get_items() == [{"other": 1}]

    @_closes_sessions
    async def test_concurrent_pop_item_returns_each_item_once(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(30))
        popped = await asyncio.gather(*(session.pop_item() for _ in range(40)))
        found = [item for item in popped if item is not None]
        assert sorted(item["n"] for item in found) == list(range(30))
        assert await session.get_items() == []

    @_closes_sessions
    async def test_clear_session_removes_every_item(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(5))
        await session.clear_session()
        assert await session.get_items() == []
        assert await session.pop_item() is None

    @_closes_sessions
    async def test_clear_session_leaves_other_sessions_alone(self) -> None:
        session, other = await self.open_session(), await self.open_session()
        await session.add_items(_numbered(2))
        await other.add_items([{"other": 1}])
        await session.clear_session()
        assert await other.get_items() == [{"other": 1}]

    @_closes_sessions
    async def test_clear_session_on_an_empty_session_is_a_no_op(self) -> None:
        session = await self.open_session()
        await session.clear_session()
        assert await session.get_items() == []

    @_closes_sessions
    async def test_session_is_usable_after_clear_session(self) -> None:
        session = await self.open_session()
        await session.add_items(_numbered(3))
        await session.clear_session()
        await session.add_items([{"fresh": True}])
        assert await session.get_items() == [{"fresh": True}]

    # -- isolation ---------------------------------------------------------------------------

    @pytest.mark.parametrize("hostile_id", HOSTILE_SESSION_IDS, ids=range(len(HOSTILE_SESSION_IDS)))
    @_closes_sessions
    async def test_hostile_session_id_is_stored_and_isolated(self, hostile_id: str) -> None:
        suffix = uuid.uuid4().hex
        session = await self._track(self.create_session(f"{hostile_id}-{suffix}"))
        neighbour = await self._track(self.create_session(f"{hostile_id}x-{suffix}"))
        await session.add_items([{"who": "hostile"}])
        await neighbour.add_items([{"who": "neighbour"}])
        assert session.session_id == f"{hostile_id}-{suffix}"
        assert await session.get_items() == [{"who": "hostile"}]
        assert await neighbour.get_items() == [{"who": "neighbour"}]
        await session.clear_session()
        assert await neighbour.get_items() == [{"who": "neighbour"}]

    @_closes_sessions
    async def test_ids_that_are_prefixes_of_each_other_are_isolated(self) -> None:
        base = _unique("prefix")
        sessions = [
            await self._track(self.create_session(session_id))
            for session_id in (base, base + "-more", base + "*", base + "%", base.upper())
        ]
        for index, session in enumerate(sessions):
            await session.add_items([{"index": index}])
        for index, session in enumerate(sessions):
            assert await session.get_items() == [{"index": index}]

    # -- concurrency -------------------------------------------------------------------------

    @_closes_sessions
    async def test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous(self) -> None:
        session = await self.open_session("tasks")
        writers, batches, batch_size = 10, 10, 5

        async def write(writer: int) -> None:
            own = await self.reopen(session)
            for batch in range(batches):
                await own.add_items(_batch(writer, batch, batch_size))

        await asyncio.gather(*(write(writer) for writer in range(writers)))
        _assert_all_batches_contiguous(await session.get_items(), writers, batches, batch_size)

    @_closes_sessions
    async def test_concurrent_threads_lose_no_items_and_keep_batches_contiguous(self) -> None:
        if not self.supports_threads:
            pytest.skip(f"{type(self).__name__} does not support threads")
        session = await self.open_session("threads")
        writers, batches, batch_size = 4, 25, 3
        errors: list[BaseException] = []

        async def write(writer: int) -> None:
            own = await self.create_session(session.session_id)
            try:
                for batch in range(batches):
                    await own.add_items(_batch(writer, batch, batch_size))
            finally:
                await _close(own)

        def run_in_thread(writer: int) -> None:
            try:
                asyncio.run(write(writer))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=run_in_thread, args=(w,)) for w in range(writers)]
        for thread in threads:
            thread.start()
        await asyncio.get_running_loop().run_in_executor(None, _join_all, threads)
        assert not errors, f"writer threads failed: {errors!r}"
        _assert_all_batches_contiguous(await session.get_items(), writers, batches, batch_size)

    @_closes_sessions
    async def test_concurrent_processes_lose_no_items_and_keep_batches_contiguous(
        self,
    ) -> None:
        if not self.supports_processes:
            pytest.skip(f"{type(self).__name__} does not support processes")
        factory = self.child_session_factory()
        if factory is None:
            pytest.fail("supports_processes is True but child_session_factory() is None")
        session = await self.open_session("processes")
        writers, batches, batch_size = 3, 30, 2
        context = multiprocessing.get_context("spawn")
        processes = [
            context.Process(
                target=_write_batches_in_child,
                args=(factory, session.session_id, writer, batches, batch_size),
            )
            for writer in range(writers)
        ]
        for process in processes:
            process.start()
        await asyncio.get_running_loop().run_in_executor(None, _join_all, processes)
        assert [process.exitcode for process in processes] == [0] * writers
        _assert_all_batches_contiguous(await session.get_items(), writers, batches, batch_size)

    # -- cancellation ------------------------------------------------------------------------

    @pytest.mark.parametrize("cancel_after", [0, 1, 2, 5, 20])
    @_closes_sessions
    async def test_cancelled_add_items_stores_all_or_nothing(self, cancel_after: int) -> None:
        session = await self.open_session("cancel")
        await session.add_items([{"before": True}])
        batch = _batch(0, 0, 500)
        task = asyncio.ensure_future(session.add_items(batch))
        for _ in range(cancel_after):
            await asyncio.sleep(0)
        task.cancel()  # it may have finished already: then it committed
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stored = await (await self.reopen(session)).get_items()
        assert stored in ([{"before": True}], [{"before": True}, *batch])

    @_closes_sessions
    async def test_session_is_usable_after_a_cancelled_add_items(self) -> None:
        session = await self.open_session("cancel")
        for cancel_after in range(4):
            task = asyncio.ensure_future(session.add_items(_batch(cancel_after, 0, 200)))
            for _ in range(cancel_after):
                await asyncio.sleep(0)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await session.clear_session()
        await session.add_items([{"after": True}])
        assert await session.get_items() == [{"after": True}]
        assert await session.pop_item() == {"after": True}

    # -- corrupt rows ------------------------------------------------------------------------

    @pytest.mark.parametrize(
        "raw",
        [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'"a string"', b""],
        ids=["broken-json", "not-utf8", "json-list", "json-string", "empty"],
    )
    @_closes_sessions
    async def test_get_items_skips_a_corrupt_row_with_a_warning(
        self, raw: bytes, caplog: pytest.LogCaptureFixture
    ) -> None:
        session = await self.open_session("corrupt")
        await session.add_items([{"n": 0}])
        await self.write_corrupt_item(session, raw)
        await session.add_items([{"n": 1}])
        with caplog.at_level(logging.WARNING):
            assert await session.get_items() == [{"n": 0}, {"n": 1}]
        assert any(record.levelno == logging.WARNING for record in caplog.records)

    @_closes_sessions
    async def test_a_corrupt_row_counts_towards_the_limit(self) -> None:
        session = await self.open_session("corrupt")
        await session.add_items(_numbered(2))
        await self.write_corrupt_item(session, b"{broken")
        assert await session.get_items(limit=2) == [{"n": 1}]
        assert await session.get_items(limit=1) == []

    @_closes_sessions
    async def test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        session = await self.open_session("corrupt")
        await session.add_items(_numbered(2))
        await self.write_corrupt_item(session, b"{broken")
        await self.write_corrupt_item(session, b"\xff")
        with caplog.at_level(logging.WARNING):
            assert await session.pop_item() == {"n": 1}
        assert any(record.levelno == logging.WARNING for record in caplog.records)
        assert await session.get_items() == [{"n": 0}]

    @_closes_sessions
    async def test_pop_item_on_a_session_of_only_corrupt_rows_returns_none(self) -> None:
        session = await self.open_session("corrupt")
        await self.write_corrupt_item(session, b"{broken")
        assert await session.pop_item() is None
        assert await session.get_items() == []

    # -- event loops and threads -------------------------------------------------------------

    @_closes_sessions
    async def test_session_works_from_sequential_event_loops(self) -> None:
        session = await self.open_session("loops")
        await session.add_items([{"n": 0}])  # first used in the test's own loop

        def one_loop_per_call() -> None:
            # A write on a new loop must neither fail nor be reported failed once stored.
            asyncio.run(session.add_items([{"n": 1}]))
            asyncio.run(session.add_items([{"n": 2}]))
            assert asyncio.run(session.get_items()) == _numbered(3)
            assert asyncio.run(session.pop_item()) == {"n": 2}
            asyncio.run(session.add_items([{"n": 2}]))

        await self.in_thread(one_loop_per_call)
        assert await session.get_items() == _numbered(3)  # and back in the first loop
        await session.clear_session()
        assert await session.get_items() == []

    @_closes_sessions
    async def test_runner_run_sync_twice_on_one_session(self) -> None:
        from .agent import Agent
        from .models import OfflineModel
        from .runner import Runner

        session = await self.open_session("run-sync")
        agent = Agent(name="kit", instructions="Repeat.", model=OfflineModel())

        def two_runs() -> None:
            Runner.run_sync(agent, "first", session=session)
            Runner.run_sync(agent, "second", session=session)

        await self.in_thread(two_runs)
        items = await session.get_items()
        said = [item.get("content") for item in items if item.get("role") == "user"]
        assert said == ["first", "second"]

    @_closes_sessions
    async def test_four_threads_with_a_loop_each_share_one_session(self) -> None:
        session = await self.open_session("loop-threads")
        writers, batches, batch_size = 4, 3, 3
        for _ in range(20):
            write = functools.partial(
                _write_from_own_loop,
                session,
                iter(range(writers)),
                threading.Lock(),
                batches,
                batch_size,
            )
            await self.in_thread(write, threads=writers)
            _assert_all_batches_contiguous(await session.get_items(), writers, batches, batch_size)
            await session.clear_session()

    @_closes_sessions
    async def test_close_from_another_event_loop(self) -> None:
        session = await self.open_session("close-loop")
        if not callable(getattr(session, "close", None)):
            pytest.skip(f"{type(session).__name__} has no close()")
        await session.add_items([{"n": 0}])

        def use_then_close_elsewhere() -> None:
            assert asyncio.run(session.get_items()) == [{"n": 0}]
            asyncio.run(_close(session))

        await self.in_thread(use_then_close_elsewhere)
        with pytest.raises(SessionClosedError):
            await session.get_items()
        await _close(session)  # and again from this loop: still idempotent

    # -- a frozen server ---------------------------------------------------------------------

    async def _freezable(self, label: str) -> Session:
        created = await self.create_freezable_session(_unique(label))
        if created is None:
            pytest.skip(f"{type(self).__name__} cannot freeze its server")
        self._kit_sessions.append(created)
        return created

    @_closes_sessions
    async def test_calls_on_a_frozen_server_fail_within_a_bound(self) -> None:
        session = await self._freezable("frozen")
        await session.add_items([{"n": 0}])
        async with self.freeze_server():
            with pytest.raises(SessionError):
                await asyncio.wait_for(session.get_items(), self.frozen_call_bound)
            with pytest.raises(SessionError):
                await asyncio.wait_for(session.add_items(_numbered(3)), self.frozen_call_bound)
        # After the server resumes: the session works, and the write was atomic.
        stored = await asyncio.wait_for(session.get_items(), self.frozen_call_bound)
        assert stored in ([{"n": 0}], [{"n": 0}, *_numbered(3)])

    @_closes_sessions
    async def test_add_items_cancelled_on_a_frozen_server_is_not_stored_later(self) -> None:
        session = await self._freezable("frozen-cancel")
        if not self.frozen_cancel_discards_write:
            pytest.skip(f"{type(self).__name__} may store a write cancelled on a frozen server")
        await session.add_items([{"n": 0}])
        async with self.freeze_server():
            task = asyncio.ensure_future(session.add_items(_numbered(3)))
            await asyncio.sleep(0.2)  # the request is on its way to the frozen server
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=self.frozen_call_bound)
            assert done, f"the cancelled add_items still runs after {self.frozen_call_bound}s"
        for _ in range(5):  # give a resumed server time to (wrongly) commit it
            await asyncio.sleep(0.2)
            assert await asyncio.wait_for(session.get_items(), self.frozen_call_bound) == [{"n": 0}]

    # -- a failing store ---------------------------------------------------------------------

    @pytest.mark.parametrize("call", ["get_items", "add_items", "pop_item", "clear_session"])
    @_closes_sessions
    async def test_a_failing_store_raises_a_session_error_naming_it(self, call: str) -> None:
        address = self.failing_store_address()
        if address is None:
            pytest.skip(f"{type(self).__name__} cannot make its store fail")
        shown, secret = address

        async def open_and_call() -> None:
            # Failing when the session is created or on its first call: both fine.
            session = await self._track(self.create_failing_session(_unique("failing")))
            await getattr(session, call)(*_DATA_CALLS[call])

        with pytest.raises(SessionError, match=re.escape(shown)) as raised:
            await asyncio.wait_for(open_and_call(), self.loop_test_bound)
        cause = raised.value.__cause__
        assert cause is not None, "the driver's error is not the __cause__"
        assert not isinstance(cause, SessionError), f"the __cause__ is no driver's error: {cause!r}"
        assert not secret or secret not in str(raised.value), "the password is printed"

    # -- listing (the store of a session, see listing_store) ---------------------------------

    async def _listed(self, session: Session) -> Any:
        store = self.listing_store(session)
        if store is None:
            pytest.skip(f"{type(session).__name__} has no store that lists sessions")
        return store

    @pytest.mark.parametrize("limit", [2**63 - 1, 2**63, 2**64, 10**30])
    @_closes_sessions
    async def test_list_sessions_clamps_a_huge_limit(self, limit: int) -> None:
        session = await self.open_session("huge-list")
        store = await self._listed(session)
        await session.add_items([{"n": 0}])
        page = await store.list_sessions(prefix=session.session_id, limit=limit)
        assert (list(page.session_ids), page.next_cursor) == ([session.session_id], None)

    @pytest.mark.parametrize(
        ("limit", "error"),
        [(0, ValueError), (-1, ValueError), (True, TypeError), ("3", TypeError), (1.5, TypeError)],
    )
    @_closes_sessions
    async def test_list_sessions_refuses_a_bad_limit(
        self, limit: object, error: type[Exception]
    ) -> None:
        session = await self.open_session("bad-list")
        store = await self._listed(session)
        await session.add_items([{"n": 0}])
        with pytest.raises(error, match="limit"):
            await store.list_sessions(prefix=session.session_id, limit=limit)

    @_closes_sessions
    async def test_list_sessions_finds_an_id_with_a_nul_after_the_prefix(self) -> None:
        base = _unique("nul-list")
        other = await self._track(self.create_session(f"{base}ab"))
        store = await self._listed(other)
        await other.add_items([{"n": 1}])
        try:
            session = await self._track(self.create_session(f"{base}a\x00b"))
        except InvalidSessionIdError:
            # A backend that cannot store a NUL refuses it in every id: then no id it
            # lists holds one, and a prefix with a NUL lists nothing (no error either),
            # not even the ids that start with the part before the NUL.
            page = await store.list_sessions(prefix=f"{base}a\x00")
            assert (list(page.session_ids), page.next_cursor) == ([], None)
            return
        await session.add_items([{"n": 0}])
        page = await store.list_sessions(prefix=f"{base}a\x00")
        assert (list(page.session_ids), page.next_cursor) == ([session.session_id], None)
        page = await store.list_sessions(prefix=f"{base}a")
        assert sorted(page.session_ids) == sorted([session.session_id, other.session_id])

    # -- lifecycle ---------------------------------------------------------------------------

    @pytest.mark.parametrize(
        "call",
        ["get_items", "add_items", "pop_item", "clear_session"],
    )
    @_closes_sessions
    async def test_calls_after_close_raise_session_closed_error(self, call: str) -> None:
        session = await self.open_session("closed")
        if not callable(getattr(session, "close", None)):
            pytest.skip(f"{type(session).__name__} has no close()")
        await session.add_items([{"n": 0}])
        await _close(session)
        with pytest.raises(SessionClosedError, match=r"\S") as raised:
            await getattr(session, call)(*_DATA_CALLS[call])
        assert isinstance(raised.value, RuntimeError)

    @pytest.mark.parametrize("call", sorted(_BAD_CALLS))
    @_closes_sessions
    async def test_a_closed_session_raises_session_closed_error_before_checking_arguments(
        self, call: str
    ) -> None:
        session = await self.open_session("closed")
        if not callable(getattr(session, "close", None)):
            pytest.skip(f"{type(session).__name__} has no close()")
        await session.add_items([{"n": 0}])
        await _close(session)
        method, arguments, keywords = _BAD_CALLS[call]
        with pytest.raises(SessionClosedError):
            await getattr(session, method)(*arguments, **keywords)

    @_closes_sessions
    async def test_close_is_idempotent(self) -> None:
        session = await self.open_session("closed")
        if not callable(getattr(session, "close", None)):
            pytest.skip(f"{type(session).__name__} has no close()")
        await session.add_items([{"n": 0}])
        await _close(session)
        await _close(session)  # raises nothing, and the session stays closed:
        for call, arguments in _DATA_CALLS.items():
            with pytest.raises(SessionClosedError):
                await getattr(session, call)(*arguments)
        await _close(session)  # nor does any later close()
        with pytest.raises(SessionClosedError):
            await session.get_items()

    @_closes_sessions
    async def test_closing_one_session_leaves_others_on_the_same_id_usable(self) -> None:
        session = await self.open_session("closed")
        other = await self.reopen(session)
        await session.add_items([{"n": 0}])
        await _close(session)
        assert await other.get_items() == [{"n": 0}]

    @_closes_sessions
    async def test_async_with_closes_the_session(self) -> None:
        session = await self.open_session("closed")
        if not hasattr(session, "__aenter__"):
            pytest.skip(f"{type(session).__name__} is not an async context manager")
        async with session as entered:  # type: ignore[attr-defined]
            assert entered is session
            await session.add_items([{"n": 0}])
        with pytest.raises(SessionClosedError):
            await session.get_items()


# -- module-level helpers (picklable for child processes) ------------------------------------


_DATA_CALLS: dict[str, tuple[Any, ...]] = {
    "get_items": (),
    "add_items": ([{"n": 1}],),
    "pop_item": (),
    "clear_session": (),
}
"""Each data call of a session, with arguments that would succeed on an open one."""


def _unique(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex}"


def _numbered(count: int) -> list[Item]:
    return [{"n": n} for n in range(count)]


def _batch(writer: int, batch: int, size: int) -> list[Item]:
    return [{"writer": writer, "batch": batch, "index": index} for index in range(size)]


def _assert_all_batches_contiguous(
    items: list[Item], writers: int, batches: int, batch_size: int
) -> None:
    """Every batch of every writer present exactly once, contiguous and in order, and each
    writer's batches in the order it wrote them."""
    assert len(items) == writers * batches * batch_size, "items lost or duplicated"
    seen_batches: dict[int, list[int]] = {writer: [] for writer in range(writers)}
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        writer, batch = chunk[0]["writer"], chunk[0]["batch"]
        assert chunk == _batch(writer, batch, batch_size), f"batch not contiguous at {start}"
        seen_batches[writer].append(batch)
    for writer, order in seen_batches.items():
        assert order == list(range(batches)), f"writer {writer}'s batches out of order"


def _join_all(workers: list[Any]) -> None:
    for worker in workers:
        worker.join()


def _write_from_own_loop(
    session: Session,
    writer_ids: Any,
    lock: threading.Lock,
    batches: int,
    batch_size: int,
) -> None:
    """One writer thread of the 4-threads test: its own loop, the shared session."""
    with lock:
        writer: int = next(writer_ids)

    async def write() -> None:
        for batch in range(batches):
            await session.add_items(_batch(writer, batch, batch_size))
        await session.get_items(limit=1)

    asyncio.run(write())


def _join_all_within(workers: list[threading.Thread], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))


async def _close(session: object) -> None:
    close = getattr(session, "close", None)
    if callable(close):
        result = close()
        if inspect.isawaitable(result):
            await result


def _write_batches_in_child(
    factory: Callable[[str], Session], session_id: str, writer: int, batches: int, size: int
) -> None:
    async def write() -> None:
        session = factory(session_id)
        try:
            for batch in range(batches):
                await session.add_items(_batch(writer, batch, size))
        finally:
            await _close(session)

    asyncio.run(write())
