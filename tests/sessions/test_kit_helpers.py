"""The conformance kit's helpers, called directly: what a backend's kit run relies on
without any kit test failing when it breaks (a listing test that skips instead of running,
a thread's error that is lost, a hung thread that is not reported, a session left open).

Found by mutation testing (benchmarks/mutation.py kit): each test here fails on a mutant of
``agent_sessions.testing`` that the kit's own tests let through.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pytest

from agent_sessions import Session, SessionSettings
from agent_sessions.testing import SessionConformance

from .kit_mutants_loops import LoopKit
from .list_session import ListKit, ListSession, ListStore


class BareSession:
    """A session with no store and no ``close``: the kit must still run on it."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.items: list[dict[str, Any]] = []

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        return list(self.items)

    async def add_items(self, items: list[dict[str, Any]]) -> None:
        self.items.extend(items)

    async def pop_item(self) -> dict[str, Any] | None:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


class BareKit(SessionConformance):
    supports_threads: ClassVar[bool] = False
    opened: list[BareSession]

    def __init__(self) -> None:
        self.opened = []

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        session = BareSession(session_id)
        self.opened.append(session)
        return session


class StoreWithoutListing:
    list_sessions = "not callable"


def list_kit() -> ListKit:
    kit = ListKit()
    kit.store = ListStore()
    return kit


def test_listing_store_is_the_sessions_store_when_it_lists_sessions() -> None:
    kit = list_kit()
    session = ListSession("s", kit.store)
    assert kit.listing_store(session) is kit.store


def test_listing_store_is_none_without_a_store_or_a_callable_list_sessions() -> None:
    kit = list_kit()
    assert kit.listing_store(BareSession("s")) is None
    session = ListSession("s", kit.store)
    session.store = StoreWithoutListing()  # type: ignore[assignment]
    assert kit.listing_store(session) is None


async def test_the_listing_tests_get_the_store_or_skip_naming_the_session_type() -> None:
    kit = list_kit()
    session = ListSession("s", kit.store)
    try:
        listed = await kit._listed(session)
    except pytest.skip.Exception as skipped:  # a skip here must fail this test, not skip it
        pytest.fail(f"the listing tests skip on a store that lists sessions: {skipped}")
    assert listed is kit.store
    with pytest.raises(pytest.skip.Exception, match=r"^BareSession has no store that lists"):
        await kit._listed(BareSession("s"))


async def test_in_thread_raises_the_error_of_a_failing_thread() -> None:
    def work() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        await list_kit().in_thread(work)


async def test_in_thread_runs_daemon_threads_and_all_of_them() -> None:
    seen: list[bool] = []
    lock = threading.Lock()

    def work() -> None:
        with lock:
            seen.append(threading.current_thread().daemon)

    await list_kit().in_thread(work, threads=3)
    assert seen == [True, True, True]


class ShortBoundKit(ListKit):
    loop_test_bound: ClassVar[float] = 0.2


async def test_in_thread_fails_naming_the_threads_still_running_after_the_bound() -> None:
    kit = ShortBoundKit()
    kit.store = ListStore()
    release = threading.Event()
    started = iter(range(2))
    lock = threading.Lock()

    def work() -> None:
        with lock:
            first = next(started) == 0
        if not first:  # frees itself after 30 s: a kit that waits it out sees no hang
            release.wait(30)

    try:
        with pytest.raises(
            pytest.fail.Exception, match=r"^1 of 2 threads still running after 0\.2s"
        ):
            await kit.in_thread(work, threads=2)
    finally:
        release.set()


async def test_a_kit_without_threads_or_a_frozen_server_skips_naming_its_class() -> None:
    kit = BareKit()
    with pytest.raises(pytest.skip.Exception, match=r"^BareKit does not support threads$"):
        await kit.in_thread(lambda: None)
    kit._kit_sessions = []
    with pytest.raises(pytest.skip.Exception, match=r"^BareKit cannot freeze its server$"):
        await kit._freezable("frozen")


async def test_a_kit_test_runs_on_a_session_without_close() -> None:
    kit = BareKit()
    await kit.test_session_satisfies_the_session_protocol()
    assert [session.session_id.split("-")[0] for session in kit.opened] == ["protocol"]


async def test_a_kit_test_closes_every_session_it_opened_frozen_ones_too() -> None:
    kit = LoopKit()
    opened: list[Session] = []
    create = kit.create_session

    async def recording(session_id: str, **settings: Any) -> Session:
        session = await create(session_id, **settings)
        opened.append(session)
        return session

    kit.create_session = recording  # type: ignore[method-assign]
    await kit.test_session_satisfies_the_session_protocol()
    await kit.test_calls_on_a_frozen_server_fail_within_a_bound()
    assert len(opened) == 2
    assert [getattr(session, "closed", None) for session in opened] == [True, True]


async def test_the_default_hooks_name_the_kit_that_lacks_them() -> None:
    with pytest.raises(NotImplementedError, match=r"^SessionConformance must implement create_"):
        await SessionConformance().create_session("s")
    kit = BareKit()
    with pytest.raises(NotImplementedError, match=r"^BareKit must implement freeze_server$"):
        kit.freeze_server()
    with pytest.raises(NotImplementedError, match=r"^BareKit must implement create_failing_"):
        await kit.create_failing_session("s")
    with pytest.raises(pytest.skip.Exception, match=r"^BareKit cannot write raw rows$"):
        await kit.write_corrupt_item(BareSession("s"), b"x")
