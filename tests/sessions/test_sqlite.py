"""SQLite behaviour beyond the conformance kit: files, processes, crashes, schema, stores."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from functools import partial
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import (
    BackendTimeoutError,
    Session,
    SessionBackendError,
    SessionClosedError,
    SessionConfigError,
    SessionSettings,
    SessionStore,
    SQLiteSession,
    SQLiteStore,
)
from agent_sessions import sqlite as sqlite_module
from agent_sessions.sqlite import SCHEMA_VERSION, UnsupportedSchemaError

spawn = multiprocessing.get_context("spawn")
# How long a child holds the write lock: long enough that a blocked event loop or a
# cancellation that waited for the lock shows clearly even on a loaded machine.
LOCK_SECONDS = 2.0


async def read_pragma(store: SQLiteStore, name: str) -> Any:
    def read(connection: sqlite3.Connection) -> Any:
        return connection.execute(f"PRAGMA {name}").fetchone()[0]

    return await store._run(read)


def raw_rows(path: Path, table: str = "agent_sessions_items") -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as connection:
        return connection.execute(f"SELECT session_id, item FROM {table} ORDER BY id").fetchall()


# -- files and processes -------------------------------------------------------------------


def write_single_items(path: str, writer: int, count: int) -> None:
    async def write() -> None:
        async with SQLiteSession("shared", path) as session:
            for index in range(count):
                await session.add_items([{"writer": writer, "index": index}])

    asyncio.run(write())


def write_batches_forever(path: str, started: Event) -> None:
    async def write() -> None:
        session = SQLiteSession("crash", path)
        batch = 0
        while True:
            await session.add_items([{"batch": batch, "index": i} for i in range(10_000)])
            batch += 1
            started.set()

    asyncio.run(write())


def hold_write_lock(path: str, locked: Event, released: Event, seconds: float) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    locked.set()
    time.sleep(seconds)
    released.set()
    connection.execute("ROLLBACK")
    connection.close()


@pytest.mark.slow
async def test_four_processes_writing_one_file_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    async with SQLiteSession("shared", path) as session:
        await session.add_items([{"writer": -1, "index": 0}])  # schema in place first
        writers = [spawn.Process(target=write_single_items, args=(path, w, 500)) for w in range(4)]
        for process in writers:
            process.start()
        for process in writers:
            await asyncio.to_thread(process.join)
        assert [process.exitcode for process in writers] == [0, 0, 0, 0]
        items = (await session.get_items())[1:]
    assert len(items) == 2000
    for writer in range(4):
        indexes = [item["index"] for item in items if item["writer"] == writer]
        assert indexes == list(range(500))


def kill_when_the_wal_grows(path: str, pid: int, timeout: float) -> None:
    """SIGKILL ``pid`` as soon as the WAL file grows: while a commit writes its pages."""
    wal = f"{path}-wal"
    baseline = os.path.getsize(wal)
    deadline = time.monotonic() + timeout
    while os.path.getsize(wal) <= baseline and time.monotonic() < deadline:
        pass
    os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("moment", ["while-building-the-batch", "while-writing-the-commit"])
async def test_a_batch_killed_mid_write_is_stored_whole_or_not_at_all(
    tmp_path: Path, moment: str
) -> None:
    path = str(tmp_path / "crash.db")
    started = spawn.Event()
    child = spawn.Process(target=write_batches_forever, args=(path, started))
    child.start()
    assert child.pid is not None
    try:
        assert await asyncio.to_thread(started.wait, 60), "the child never committed a batch"
        if moment == "while-building-the-batch":
            await asyncio.sleep(0.013)  # inside the next add_items: encoding or inserting
        else:
            await asyncio.to_thread(kill_when_the_wal_grows, path, child.pid, 30)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        await asyncio.to_thread(child.join)
    assert child.exitcode == -signal.SIGKILL
    async with SQLiteSession("crash", path) as reopened:
        items = await reopened.get_items()
    assert items, "at least the first batch was committed"
    assert len(items) % 10_000 == 0
    batches = len(items) // 10_000
    assert items == [{"batch": b, "index": i} for b in range(batches) for i in range(10_000)]


@pytest.mark.slow
async def test_the_event_loop_keeps_running_while_another_process_holds_the_lock(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "locked.db")
    async with SQLiteSession("waiting", path) as session:
        await session.add_items([{"n": 0}])
        locked, released = spawn.Event(), spawn.Event()
        holder = spawn.Process(target=hold_write_lock, args=(path, locked, released, LOCK_SECONDS))
        holder.start()
        assert await asyncio.to_thread(locked.wait, 60)
        beats: list[float] = []

        async def heartbeat() -> None:
            while True:
                beats.append(time.monotonic())
                await asyncio.sleep(0.01)

        beating = asyncio.create_task(heartbeat())
        await session.add_items([{"n": 1}])
        finished_after_release = released.is_set()
        beating.cancel()
        await asyncio.to_thread(holder.join)
        assert finished_after_release, "the write finished while the lock was still held"
        gaps = [later - earlier for earlier, later in itertools.pairwise(beats)]
        assert len(beats) > 10, "the event loop was blocked"
        assert max(gaps) < LOCK_SECONDS / 2, "the event loop was blocked"
        assert await session.get_items() == [{"n": 0}, {"n": 1}]


@pytest.mark.slow
async def test_a_write_cancelled_while_waiting_for_the_lock_never_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy: list[str] = []  # each time the store found the database locked

    def is_busy(exc: sqlite3.OperationalError) -> bool:
        found = original_is_busy(exc)
        if found:
            busy.append(threading.current_thread().name)
        return found

    original_is_busy = sqlite_module._is_busy
    monkeypatch.setattr(sqlite_module, "_is_busy", is_busy)
    path = str(tmp_path / "locked.db")
    async with SQLiteSession("waiting", path) as session:
        await session.add_items([{"n": 0}])
        locked, released = spawn.Event(), spawn.Event()
        holder = spawn.Process(target=hold_write_lock, args=(path, locked, released, LOCK_SECONDS))
        holder.start()
        assert await asyncio.to_thread(locked.wait, 60)
        write = asyncio.create_task(session.add_items([{"n": 1}]))
        # Observed, not slept for: a worker thread found the database locked (it waits).
        loop_thread = threading.current_thread().name
        for _ in range(1000):  # at most about 10 s
            if any(name != loop_thread for name in busy) or write.done():
                break
            await asyncio.sleep(0.01)
        assert any(name != loop_thread for name in busy), "the write never waited for the lock"
        assert not write.done()
        write.cancel()
        with pytest.raises(asyncio.CancelledError):
            await write
        assert not released.is_set(), "the cancellation waited for the lock holder"
        await asyncio.to_thread(holder.join)
        assert await session.get_items() == [{"n": 0}]


@pytest.mark.slow
async def test_a_write_waiting_longer_than_the_busy_timeout_fails_as_locked(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "locked.db")
    async with SQLiteStore(path, busy_timeout=0.2) as store:
        session = store.session("waiting")
        await session.add_items([{"n": 0}])
        locked, released = spawn.Event(), spawn.Event()
        holder = spawn.Process(target=hold_write_lock, args=(path, locked, released, 1.0))
        holder.start()
        assert await asyncio.to_thread(locked.wait, 60)
        with pytest.raises(BackendTimeoutError, match=r"locked\.db is locked") as caught:
            await session.add_items([{"n": 1}])
        assert caught.value.may_have_written is False
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
        await asyncio.to_thread(holder.join)
        await session.add_items([{"n": 2}])
        assert await session.get_items() == [{"n": 0}, {"n": 2}]


async def test_reads_do_not_wait_for_another_process_holding_the_write_lock(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "locked.db")
    async with SQLiteSession("reader", path) as session:
        await session.add_items([{"n": 0}])
        locked, released = spawn.Event(), spawn.Event()
        holder = spawn.Process(target=hold_write_lock, args=(path, locked, released, LOCK_SECONDS))
        holder.start()
        assert await asyncio.to_thread(locked.wait, 60)
        assert await session.get_items() == [{"n": 0}]
        assert not released.is_set(), "WAL readers must not wait for the writer"
        await asyncio.to_thread(holder.join)


# -- schema and pragmas --------------------------------------------------------------------


async def test_a_database_from_a_newer_schema_version_is_refused_and_left_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    async with SQLiteSession("s", path) as session:
        with pytest.raises(UnsupportedSchemaError, match=f"schema version {SCHEMA_VERSION + 1}"):
            await session.add_items([{"n": 0}])
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"


async def test_a_new_database_gets_the_current_schema_version(tmp_path: Path) -> None:
    async with SQLiteSession("s", tmp_path / "new.db") as session:
        await session.add_items([{"n": 0}])
        assert await read_pragma(session.store, "user_version") == SCHEMA_VERSION


async def test_a_file_store_uses_wal_foreign_keys_and_synchronous_normal(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "x.db") as store:
        assert await read_pragma(store, "journal_mode") == "wal"
        assert await read_pragma(store, "foreign_keys") == 1
        assert await read_pragma(store, "synchronous") == 1  # NORMAL


async def test_a_durable_store_uses_synchronous_full(tmp_path: Path) -> None:
    async with SQLiteSession("s", tmp_path / "x.db", durable=True) as session:
        assert session.store.durable
        assert await read_pragma(session.store, "synchronous") == 2  # FULL


async def test_latest_items_are_read_through_the_session_index() -> None:
    async with SQLiteStore() as store:

        def plan(connection: sqlite3.Connection) -> str:
            rows = connection.execute(
                f"EXPLAIN QUERY PLAN {store._sql.select_latest}", ("s", 10)
            ).fetchall()
            return " ".join(row[-1] for row in rows)

        query_plan = await store._run(plan)
    assert "agent_sessions_items_by_session" in query_plan
    assert "TEMP B-TREE" not in query_plan  # no sort of the whole history


async def test_unicode_is_stored_as_is_not_escaped(tmp_path: Path) -> None:
    path = tmp_path / "unicode.db"
    async with SQLiteSession("s", path) as session:
        await session.add_items([{"text": "héllo 会话 🧠"}])
    assert raw_rows(path) == [("s", '{"text":"héllo 会话 🧠"}')]


@pytest.mark.parametrize(
    "prefix",
    ["", "1abc", "a-b", "a b", "a;DROP TABLE x", 'a"b', "sqlite_mine", "é", "x" * 49],
)
def test_an_invalid_table_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(SessionConfigError, match="table_prefix"):
        SQLiteStore(table_prefix=prefix)


async def test_stores_with_different_table_prefixes_share_a_file_independently(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.db"
    async with (
        SQLiteSession("s", path, table_prefix="app_one_") as one,
        SQLiteSession("s", path, table_prefix="app_two_") as two,
    ):
        await one.add_items([{"app": 1}])
        await two.add_items([{"app": 2}])
        assert await one.get_items() == [{"app": 1}]
        assert await two.get_items() == [{"app": 2}]


async def test_a_missing_directory_fails_with_an_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "x.db"
    async with SQLiteSession("s", path) as session:
        with pytest.raises(SessionBackendError, match="missing") as caught:
            await session.add_items([{"n": 0}])
        assert isinstance(caught.value.__cause__, sqlite3.Error)


# -- writes are transactions ---------------------------------------------------------------


class InterruptedEncodings(list[str]):
    """Encoded items whose iteration is interrupted (Ctrl-C) after the first one."""

    def __iter__(self) -> Iterator[str]:
        yield from self[:1]
        raise KeyboardInterrupt


async def test_an_interrupted_write_is_rolled_back_and_leaves_no_transaction_open() -> None:
    async with SQLiteStore() as store:
        session = store.session("s")
        await session.add_items([{"n": 0}])
        encoded = InterruptedEncodings(['{"n":1}', '{"n":2}'])

        def in_transaction(connection: sqlite3.Connection) -> bool:
            return connection.in_transaction

        with pytest.raises(KeyboardInterrupt):
            await store._run(partial(store._add, "s", encoded))
        assert not await store._run(in_transaction)
        assert await session.get_items() == [{"n": 0}]
        await session.add_items([{"n": 3}])
        assert await session.get_items() == [{"n": 0}, {"n": 3}]


@pytest.fixture
def pop_without_returning(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path taken on SQLite < 3.35, which has no DELETE ... RETURNING."""
    monkeypatch.setattr(sqlite_module, "_HAS_RETURNING", False)


@pytest.mark.usefixtures("pop_without_returning")
async def test_pop_item_without_returning_removes_the_latest_item() -> None:
    async with SQLiteSession("s") as session:
        await session.add_items([{"n": 0}, {"n": 1}])
        assert await session.pop_item() == {"n": 1}
        assert await session.get_items() == [{"n": 0}]
        assert await session.pop_item() == {"n": 0}
        assert await session.pop_item() is None


# -- stores, sharing and lifecycle ---------------------------------------------------------


async def test_file_session_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    async with SQLiteSession("user", path) as session:
        await session.add_items([{"role": "user", "content": "hi"}])
    async with SQLiteSession("user", path) as reopened:
        assert await reopened.get_items() == [{"role": "user", "content": "hi"}]


async def test_file_sessions_on_one_path_share_a_store(tmp_path: Path) -> None:
    async with (
        SQLiteSession("a", tmp_path / "x.db") as first,
        SQLiteSession("b", str(tmp_path / "sub" / ".." / "x.db")) as second,
    ):
        assert first.store is second.store


async def test_the_shared_store_closes_with_its_last_session(tmp_path: Path) -> None:
    first = SQLiteSession("a", tmp_path / "x.db")
    second = SQLiteSession("b", tmp_path / "x.db")
    await first.close()
    assert not second.store.closed
    await second.add_items([{"n": 0}])
    await second.close()
    assert second.store.closed


def test_connections_of_finished_threads_are_closed(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "x.db")

    def write_in_a_new_thread(n: int) -> None:
        asyncio.run(store.session("s").add_items([{"n": n}]))

    for n in range(5):
        thread = threading.Thread(target=write_in_a_new_thread, args=(n,))
        thread.start()
        thread.join()
    opened = store._connections._opened  # type: ignore[attr-defined]
    assert len(opened) == 1, "only the last finished thread's connection is left"
    asyncio.run(store.close())


async def test_a_store_closed_early_is_replaced_and_its_old_sessions_leave_the_new_alone(
    tmp_path: Path,
) -> None:
    early = SQLiteSession("a", tmp_path / "x.db")
    await early.store.close()
    async with SQLiteSession("b", tmp_path / "x.db") as later:
        assert later.store is not early.store
        await early.close()
        await later.add_items([{"n": 0}])
        assert await later.get_items() == [{"n": 0}]


async def test_memory_sessions_do_not_share_without_a_store() -> None:
    async with SQLiteSession("same") as first, SQLiteSession("same") as second:
        await first.add_items([{"n": 1}])
        assert await second.get_items() == []


async def test_a_session_never_closes_a_store_passed_in() -> None:
    async with SQLiteStore() as store:
        session = SQLiteSession("s", store=store)
        await session.add_items([{"n": 0}])
        await session.close()
        assert not store.closed
        assert await store.session("s").get_items() == [{"n": 0}]


async def test_sessions_of_a_closed_store_raise_an_error_naming_the_database(
    tmp_path: Path,
) -> None:
    store = SQLiteStore(tmp_path / "x.db")
    session = store.session("s")
    await store.close()
    with pytest.raises(SessionClosedError, match=r"x\.db"):
        await session.get_items()


def test_store_and_db_path_together_are_refused(tmp_path: Path) -> None:
    store = SQLiteStore()
    with pytest.raises(ValueError, match="store="):
        SQLiteSession("s", tmp_path / "x.db", store=store)


@pytest.mark.parametrize("session_id", [None, 42, b"bytes"])
def test_a_non_str_session_id_is_refused(session_id: Any) -> None:
    with pytest.raises(TypeError, match="session_id"):
        SQLiteSession(session_id)


def test_session_settings_of_another_type_are_refused() -> None:
    with pytest.raises(TypeError, match="session_settings"):
        SQLiteSession("s", session_settings=10)  # type: ignore[arg-type]


def test_session_settings_given_as_a_mapping_are_accepted() -> None:
    settings: Any = {"limit": 3}
    assert SQLiteSession("s", session_settings=settings).session_settings == SessionSettings(3)


def test_an_empty_db_path_is_refused() -> None:
    with pytest.raises(ValueError, match="db_path"):
        SQLiteSession("s", "")


@pytest.mark.parametrize("timeout", [-1, "5", True])
def test_an_invalid_busy_timeout_is_refused(timeout: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="busy_timeout"):
        SQLiteStore(busy_timeout=timeout)


def test_sqlite_store_is_a_session_store() -> None:
    store: SessionStore = SQLiteStore()  # and mypy agrees
    assert isinstance(store, SessionStore)
    assert isinstance(store.session("s"), Session)


# -- listing sessions ----------------------------------------------------------------------


async def test_list_sessions_pages_through_ids_in_order() -> None:
    async with SQLiteStore() as store:
        ids = [f"user-{n:02}" for n in range(7)]
        for session_id in reversed(ids):
            await store.session(session_id).add_items([{"n": 0}])
        pages, cursor = [], None
        while True:
            page = await store.list_sessions(limit=3, cursor=cursor)
            pages.append(page.session_ids)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
    assert pages == [ids[0:3], ids[3:6], ids[6:7]]


async def test_list_sessions_filters_by_prefix() -> None:
    async with SQLiteStore() as store:
        for session_id in ("a", "ab", "abc", "b", "a\U0010ffff", "a\U0010ffffz", "ac"):
            await store.session(session_id).add_items([{"n": 0}])
        page = await store.list_sessions(prefix="ab")
        assert page.session_ids == ["ab", "abc"]
        page = await store.list_sessions(prefix="a\U0010ffff")
        assert page.session_ids == ["a\U0010ffff", "a\U0010ffffz"]
        assert (await store.list_sessions(prefix="")).session_ids == [
            "a",
            "ab",
            "abc",
            "ac",
            "a\U0010ffff",
            "a\U0010ffffz",
            "b",
        ]


async def test_list_sessions_omits_sessions_without_items() -> None:
    async with SQLiteStore() as store:
        await store.session("emptied").add_items([{"n": 0}])
        await store.session("emptied").pop_item()
        await store.session("cleared").add_items([{"n": 0}])
        await store.session("cleared").clear_session()
        await store.session("kept").add_items([{"n": 0}])
        assert (await store.list_sessions()).session_ids == ["kept"]


@pytest.mark.parametrize("limit", [0, -1, True, 1.5])
async def test_list_sessions_refuses_a_bad_limit(limit: Any) -> None:
    async with SQLiteStore() as store:
        with pytest.raises((TypeError, ValueError), match="limit"):
            await store.list_sessions(limit=limit)
