"""Broken backends for the kit's event-loop, thread and frozen-server tests.

``LOOP_MUTANTS`` maps the name of each of those kit tests to a session class broken in
exactly the way that test guards against, built like ``ListSession`` (constructor
``(session_id, store, session_settings=None)``). The frozen-server mutants need a
:class:`FreezableListStore` and the kit hooks of :class:`LoopKit`; the others work on a
plain ``ListStore``. ``FreezableListSession`` is the correct backend they are broken from.

The tests at the bottom show that the correct backend passes each of those kit tests and
each mutant fails its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar

import pytest

from agent_sessions import BackendTimeoutError, Item, Session, SessionSettings
from agent_sessions.testing import SessionConformance

from .test_kit import ListSession, ListStore

FROZEN_WAIT = 0.3
"""Seconds a correct session waits on a frozen store before it gives up."""


class FreezableListStore(ListStore):
    """A ``ListStore`` that can be frozen: calls find the server not answering."""

    def __init__(self) -> None:
        super().__init__()
        self.thawed = threading.Event()
        self.thawed.set()


async def _frozen_wait(store: ListStore, bound: float | None) -> None:
    """Wait while ``store`` is frozen: at most ``bound`` seconds (then time out), or
    forever when ``bound`` is ``None``."""
    thawed = getattr(store, "thawed", None)
    if thawed is None:
        return
    start = time.monotonic()
    while not thawed.is_set():
        if bound is not None and time.monotonic() - start > bound:
            raise BackendTimeoutError("the list store did not answer", may_have_written=False)
        await asyncio.sleep(0.01)


class FreezableListSession(ListSession):
    """The correct backend: a call on a frozen store fails after ``FROZEN_WAIT``."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        await _frozen_wait(self.store, FROZEN_WAIT)
        return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        await _frozen_wait(self.store, FROZEN_WAIT)
        await super().add_items(items)


class WriteThenFailOnNewLoop(ListSession):
    """Bound to the first loop that used it: on another loop a write is stored and then
    reported failed (what redis-py's client did on a second ``asyncio.run``)."""

    first_loop: asyncio.AbstractEventLoop | None = None

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        loop = asyncio.get_running_loop()
        if self.first_loop is None:
            self.first_loop = loop
        elif loop is not self.first_loop:
            raise RuntimeError("Event loop is closed")


class ReadsOnFirstLoopOnly(ListSession):
    """Reads fail on any loop but the first one that read."""

    first_loop: asyncio.AbstractEventLoop | None = None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        loop = asyncio.get_running_loop()
        if self.first_loop is None:
            self.first_loop = loop
        elif loop is not self.first_loop:
            raise RuntimeError("got Future attached to a different loop")
        return await super().get_items(limit)


class OneLoopAtATime(ListSession):
    """Fine on one loop after another, broken when two loops use it at once (state of
    one loop shared with the others, like an ``asyncio.Lock`` bound to one loop)."""

    current_loop: asyncio.AbstractEventLoop | None = None

    async def add_items(self, items: list[Item]) -> None:
        loop = asyncio.get_running_loop()
        self.current_loop = loop
        await asyncio.sleep(0.002)
        if self.current_loop is not loop:
            raise RuntimeError("a Lock is bound to a different event loop")
        await super().add_items(items)


class CloseOnFirstLoopOnly(ListSession):
    """``close()`` from any loop but the first one that used the session fails."""

    first_loop: asyncio.AbstractEventLoop | None = None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if self.first_loop is None:
            self.first_loop = asyncio.get_running_loop()
        return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        if self.first_loop is None:
            self.first_loop = asyncio.get_running_loop()
        await super().add_items(items)

    async def close(self) -> None:
        if self.first_loop is not None and asyncio.get_running_loop() is not self.first_loop:
            raise RuntimeError("Task got Future attached to a different loop")
        await super().close()


class WaitsForeverWhenFrozen(ListSession):
    """No timeout: a call on a frozen store waits until it thaws."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        await _frozen_wait(self.store, None)
        return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        await _frozen_wait(self.store, None)
        await super().add_items(items)


class StoresCancelledWriteAfterThaw(FreezableListSession):
    """A write cancelled while the store was frozen is applied when it thaws, as a server
    runs a request it received from a client that has gone."""

    async def add_items(self, items: list[Item]) -> None:
        thawed = getattr(self.store, "thawed", None)
        if thawed is None or thawed.is_set():
            await super().add_items(items)
            return
        copied = list(items)

        def deliver_on_thaw() -> None:
            thawed.wait()
            asyncio.run(ListSession.add_items(self, copied))

        threading.Thread(target=deliver_on_thaw, daemon=True).start()
        await _frozen_wait(self.store, FROZEN_WAIT)


LOOP_MUTANTS: dict[str, type] = {
    "test_session_works_from_sequential_event_loops": WriteThenFailOnNewLoop,
    "test_runner_run_sync_twice_on_one_session": ReadsOnFirstLoopOnly,
    "test_four_threads_with_a_loop_each_share_one_session": OneLoopAtATime,
    "test_close_from_another_event_loop": CloseOnFirstLoopOnly,
    "test_calls_on_a_frozen_server_fail_within_a_bound": WaitsForeverWhenFrozen,
    "test_add_items_cancelled_on_a_frozen_server_is_not_stored_later": (
        StoresCancelledWriteAfterThaw
    ),
}


class LoopKit(SessionConformance):
    """The kit on ``session_class`` over a :class:`FreezableListStore`, with the
    frozen-server hooks and short bounds (a hang fails within seconds)."""

    session_class: type = FreezableListSession
    loop_test_bound: ClassVar[float] = 10.0
    frozen_call_bound: ClassVar[float] = 2.0
    store: FreezableListStore

    def __init__(self, session_class: type | None = None) -> None:
        if session_class is not None:
            self.session_class = session_class
        self.store = FreezableListStore()

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        session: Session = self.session_class(session_id, self.store, session_settings)
        return session

    async def create_freezable_session(self, session_id: str) -> Session:
        return await self.create_session(session_id)

    def freeze_server(self) -> AbstractAsyncContextManager[None]:
        return _frozen(self.store)


@contextlib.asynccontextmanager
async def _frozen(store: FreezableListStore) -> AsyncIterator[None]:
    store.thawed.clear()
    try:
        yield
    finally:
        store.thawed.set()


async def _outcome(kit: LoopKit, test_name: str) -> str:
    """Run one kit test directly: "passed", "skipped" or "failed: <why>"."""
    test: Any = getattr(kit, test_name)
    try:
        await test()
    except pytest.skip.Exception as skipped:
        return f"skipped: {skipped}"
    except (Exception, pytest.fail.Exception) as exc:
        return f"failed: {type(exc).__name__}: {exc}"
    return "passed"


@pytest.mark.parametrize("test_name", sorted(LOOP_MUTANTS))
async def test_the_correct_backend_passes_the_kit_test(test_name: str) -> None:
    assert await _outcome(LoopKit(), test_name) == "passed"


@pytest.mark.parametrize("test_name", sorted(LOOP_MUTANTS))
async def test_the_mutant_fails_its_kit_test(test_name: str) -> None:
    outcome = await _outcome(LoopKit(LOOP_MUTANTS[test_name]), test_name)
    assert outcome.startswith("failed: "), outcome
