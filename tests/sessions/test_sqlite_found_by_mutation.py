"""SQLite's error translation, prefix listing and paging, checked where the whole-file
mutation run of ``sqlite.py`` found them unguarded (benchmarks/mutation.py sqlite --whole,
issue 28).

The error tests build ``sqlite3`` errors as SQLite reports them: with a result code (Python
3.11 on) and without one (Python 3.10, where only the message tells them apart), so that
each of the two ways of recognising an error is checked on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path

import pytest

from agent_sessions import (
    BackendTimeoutError,
    ForeignDataError,
    SessionBackendError,
    SessionSettings,
    SQLiteSession,
    SQLiteStore,
)
from agent_sessions.sqlite import (
    _MAX_WAITING_THREADS,
    ReadOnlyDatabaseError,
    _Abandoned,
    _DatabaseBusy,
    _GaveUpWaiting,
    _is_busy,
    _MemoryConnection,
)

# -- errors ----------------------------------------------------------------------------------


def sqlite_error(message: str, code: int | None) -> sqlite3.Error:
    """An error as SQLite reports it: ``code`` is its result code, ``None`` on Python 3.10."""
    error = sqlite3.OperationalError(message)
    if code is not None:
        error.sqlite_errorcode = code  # type: ignore[attr-defined]
    return error


# (result code (extended, as SQLite gives it), its message, the error type, the message)
KINDS = [
    (
        13,
        "database or disk is full",
        SessionBackendError,
        "SQLite database {path} cannot grow: the disk, the file size limit or max_page_count"
        " is reached ({text}); nothing was written",
    ),
    (
        10 | (4 << 8),  # SQLITE_IOERR_SHORT_READ
        "disk I/O error",
        SessionBackendError,
        "SQLite database {path} could not be written or read ({text}): is the disk full, or a"
        " file size limit reached? A write that failed was rolled back",
    ),
    (
        26,
        "file is not a database",
        ForeignDataError,
        "SQLite database {path} is not a SQLite database ({text}); it was left untouched",
    ),
    (
        11,
        "database disk image is malformed",
        SessionBackendError,
        "SQLite database {path} is corrupt ({text})",
    ),
]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(tmp_path / "s.db") as store:
        yield store


@pytest.mark.parametrize(("code", "text", "kind", "message"), KINDS, ids=lambda v: str(v)[:12])
@pytest.mark.parametrize("known_by", ["code", "message"])
def test_an_error_is_known_by_its_result_code_and_on_python_3_10_by_its_message(
    store: SQLiteStore, code: int, text: str, kind: type[Exception], message: str, known_by: str
) -> None:
    # By its code: a message in other words (SQLite words some codes several ways);
    # by its message: no code, as Python 3.10's sqlite3 raises it.
    given = "SQLite said it its own way" if known_by == "code" else text
    error = sqlite_error(given, code if known_by == "code" else None)
    translated = store._translate(error)
    assert type(translated) is kind
    assert str(translated) == message.format(path=store.db_path, text=given)


@pytest.mark.parametrize("known_by", ["code", "message"])
def test_a_read_only_error_is_known_by_its_code_and_by_its_message(
    store: SQLiteStore, known_by: str
) -> None:
    text = "attempt to write a readonly database"
    error = sqlite_error(
        "refused" if known_by == "code" else text, 8 if known_by == "code" else None
    )
    translated = store._translate(error)
    assert type(translated) is ReadOnlyDatabaseError
    assert str(translated) == (
        f"SQLite database {store.db_path} is read-only (SQLite refused to write it); "
        "nothing was written"
    )


@pytest.mark.parametrize("code", [1, None])
def test_any_other_error_names_the_database_and_what_sqlite_said(
    store: SQLiteStore, code: int | None
) -> None:
    translated = store._translate(sqlite_error("no such table: elsewhere", code))
    assert type(translated) is SessionBackendError
    assert str(translated) == f"SQLite database {store.db_path} failed: no such table: elsewhere"


@pytest.mark.parametrize(
    "text", ["cannot open SQLite database file /x/y.db", "cannot create SQLite database /x"]
)
def test_an_error_of_ours_naming_the_database_is_kept_as_it_is(
    store: SQLiteStore, text: str
) -> None:
    translated = store._translate(sqlite_error(text, 14))
    assert type(translated) is SessionBackendError
    assert str(translated) == text


def test_a_wait_that_gave_up_is_a_timeout_that_wrote_nothing(store: SQLiteStore) -> None:
    translated = store._translate(_GaveUpWaiting("locked: gave up after 0.1 s"))
    assert type(translated) is BackendTimeoutError
    assert str(translated) == "locked: gave up after 0.1 s"
    assert translated.may_have_written is False


# -- listing ---------------------------------------------------------------------------------


async def fill(store: SQLiteStore, *session_ids: str) -> None:
    for session_id in session_ids:
        await store.session(session_id).add_items([{"n": 1}])


async def test_a_prefix_lists_exactly_the_ids_that_start_with_it(store: SQLiteStore) -> None:
    # "aX" must not become "a" (a character stripped off besides U+10FFFF), and the bound
    # after U+D7FF skips the surrogates to U+E000 exactly: "\ue000" does not start with it.
    await fill(store, "aX1", "aY1", "\ud7ff-1", "\ud7ff\U0010ffff", "\ue000", "\ue001")
    assert (await store.list_sessions(prefix="aX")).session_ids == ["aX1"]
    assert (await store.list_sessions(prefix="\ud7ff")).session_ids == [
        "\ud7ff-1",
        "\ud7ff\U0010ffff",
    ]
    assert (await store.list_sessions(prefix="\ud7ff\U0010ffff")).session_ids == [
        "\ud7ff\U0010ffff"
    ]


async def test_the_first_page_starts_before_every_id(store: SQLiteStore) -> None:
    await fill(store, "A", "0", "Z")  # ids that sort before lower-case letters
    assert (await store.list_sessions()).session_ids == ["0", "A", "Z"]


async def test_a_page_holding_the_last_ids_exactly_has_no_next_cursor(store: SQLiteStore) -> None:
    await fill(store, "s1", "s2")
    page = await store.list_sessions(limit=2)
    assert (page.session_ids, page.next_cursor) == (["s1", "s2"], None)
    page = await store.list_sessions(limit=1)
    assert (page.session_ids, page.next_cursor) == (["s1"], "s1")


# -- busy ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "code", "busy"),
    [
        ("database is locked", 5, True),  # SQLITE_BUSY
        ("database table is locked", 6, True),  # SQLITE_LOCKED
        ("worded otherwise", 5 | (2 << 8), True),  # an extended code of SQLITE_BUSY
        ("is locked, it says, but the code says otherwise", 1, False),
        # Python 3.10: no code, the message decides
        ("database is locked", None, True),
        ("database table is locked", None, True),
        ("no such table: items", None, False),
    ],
)
def test_a_busy_database_is_known_by_its_code_or_without_one_by_its_message(
    message: str, code: int | None, busy: bool
) -> None:
    error = sqlite_error(message, code)
    assert isinstance(error, sqlite3.OperationalError)
    assert _is_busy(error) is busy


# -- the in-memory database's lock -------------------------------------------------------------


def in_thread(call: Callable[[], object]) -> BaseException | object:
    """``call()``'s result or error, from another thread; a call still running after 10 s
    (waiting for a lock it should not wait for) fails the test instead of hanging it."""
    outcome: list[BaseException | object] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    assert outcome, "the call waited for the lock"
    return outcome[0]


def test_the_memory_database_held_by_another_thread_is_busy_now_and_times_out_waiting() -> None:
    connection = _MemoryConnection(lambda connection: None)
    try:

        def read(connection: sqlite3.Connection) -> object:
            return connection.execute("SELECT 1").fetchone()[0]

        assert connection.run_now(read) == 1
        assert connection._lock.acquire(blocking=False)  # another thread's operation
        try:
            assert isinstance(in_thread(partial(connection.run_now, read)), _DatabaseBusy)
            waited = in_thread(
                partial(connection.run_waiting, read, time.monotonic() + 0.2, threading.Event())
            )
            assert isinstance(waited, _GaveUpWaiting)
            assert str(waited) == (
                "in-memory SQLite database is locked by another thread: gave up after "
                "waiting busy_timeout seconds; nothing was written"
            )
            abandoned = threading.Event()
            abandoned.set()
            later = time.monotonic() + 30
            assert isinstance(
                in_thread(partial(connection.run_waiting, read, later, abandoned)), _Abandoned
            )
        finally:
            connection._lock.release()
        assert connection.run_waiting(read, time.monotonic() + 1, threading.Event()) == 1
    finally:
        connection.close()


# -- get_encoded_items (the EncodedRead capability) --------------------------------------------


async def test_encoded_items_are_the_stored_texts_latest_limit_oldest_first(tmp_path: Path) -> None:
    path = tmp_path / "chat.db"
    async with SQLiteStore(path) as store:
        session = store.session("s")
        await session.add_items([{"n": n} for n in range(5)])
        await store.session("other").add_items([{"other": True}])
        assert await session.get_encoded_items() == [f'{{"n":{n}}}' for n in range(5)]
        assert await session.get_encoded_items(2) == ['{"n":3}', '{"n":4}']
        assert await session.get_encoded_items(0) == []
        assert await session.get_encoded_items(2**63) == [f'{{"n":{n}}}' for n in range(5)]
        limited = SQLiteSession("s", path, session_settings=SessionSettings(limit=1))
        async with limited:
            assert await limited.get_encoded_items() == ['{"n":4}']
            assert await limited.get_encoded_items(3) == ['{"n":2}', '{"n":3}', '{"n":4}']


async def test_a_large_encoded_read_is_whole_and_in_order(tmp_path: Path) -> None:
    # more rows than an inline read takes: the read goes to a worker thread
    async with SQLiteStore(tmp_path / "chat.db") as store:
        session = store.session("s")
        await session.add_items([{"n": n} for n in range(2_500)])
        reading = asyncio.ensure_future(session.get_encoded_items())
        assert await turns_during(reading) > 0  # the loop ran other tasks meanwhile
        texts = reading.result()
        assert texts == [f'{{"n":{n}}}' for n in range(2_500)]
        assert await session.get_encoded_items(1_500) == texts[1_000:]


async def test_an_encoded_read_gives_a_utf8_blob_as_text_and_skips_one_that_is_not(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "chat.db"
    async with SQLiteStore(path) as store:
        session = store.session("user-7")
        await session.add_items([{"n": 0}])
        with sqlite3.connect(path) as raw:
            raw.execute(
                "INSERT INTO agent_sessions_items (session_id, item) VALUES (?, ?)",
                ("user-7", '{"é":1}'.encode()),
            )
            row_id = raw.execute(
                "INSERT INTO agent_sessions_items (session_id, item) VALUES (?, ?)",
                ("user-7", b"\xff\xfe not UTF-8"),
            ).lastrowid
        raw.close()
        with caplog.at_level(logging.WARNING, logger="agent_sessions"):
            assert await session.get_encoded_items() == ['{"n":0}', '{"é":1}']
    [message] = [r.getMessage() for r in caplog.records if "user-7" in r.getMessage()]
    assert f"{path} table agent_sessions_items id {row_id} (session 'user-7')" in message


# -- a write cancelled while it waits for the lock -------------------------------------------


async def test_a_write_cancelled_twice_while_it_waits_settles_and_leaves_no_unread_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # In this process (test_sqlite_edges.py's child process checks the same once per
    # loop): the second cancellation comes while the first is being settled.
    path = tmp_path / "locked.db"
    caplog.set_level(logging.ERROR)
    async with SQLiteStore(path) as store:
        session = store.session("s")
        await session.add_items([{"n": 0}])
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")  # another connection holds the write lock
        try:
            task = asyncio.ensure_future(session.add_items([{"n": 1}]))
            await asyncio.sleep(0.3)  # in a worker thread, waiting for the lock
            task.cancel()
            await asyncio.sleep(0)  # the task settles the job now
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        del task
        gc.collect()  # a future whose error nobody read is logged when it is collected
        await asyncio.sleep(0)
        assert await session.get_items() == [{"n": 0}]
    assert [r.getMessage() for r in caplog.records] == []


# -- close() not awaited while a worker runs an operation ------------------------------------


def open_files(path: Path) -> list[str]:
    """This process's open descriptors on ``path`` or its -wal/-shm files."""
    names = {str(path), f"{path}-wal", f"{path}-shm"}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") in names:
                found.append(fd)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
async def test_a_plain_close_during_a_workers_operation_closes_the_files_once_it_is_done(
    tmp_path: Path,
) -> None:
    path = (tmp_path / "chat.db").resolve()
    store = SQLiteStore(path)
    session = store.session("s")
    await session.add_items([{"n": 0}])
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write below waits in a worker thread
    try:
        task = asyncio.ensure_future(session.add_items([{"n": 1}]))
        await asyncio.sleep(0.3)
        store.close()  # not awaited, as the SDK's examples close
        assert store.closed
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await task  # the operation under way completes
    for _ in range(200):  # then a thread closes the connections
        if not open_files(path):
            break
        await asyncio.sleep(0.05)
    assert open_files(path) == []
    async with SQLiteStore(path) as again:
        assert await again.session("s").get_items() == [{"n": 0}, {"n": 1}]


async def test_a_plain_close_counts_every_running_job_not_only_the_last_submitted(
    tmp_path: Path,
) -> None:
    # Two jobs in the workers at once: a write waiting for the lock, then a large read
    # that ends first. The write still runs, so close() must not wait for it on the loop
    # (it would wait until the write gives up: busy_timeout, while the holder waits for
    # close() to return); it leaves the closing to a thread and the write completes.
    path = (tmp_path / "chat.db").resolve()
    store = SQLiteStore(path, busy_timeout=10.0)
    session = store.session("s")
    await session.add_items([{"n": n} for n in range(1_001)])
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write below waits in a worker thread
    try:
        write = asyncio.ensure_future(store.session("w").add_items([{"w": 1}]))
        await asyncio.sleep(0.3)
        assert len(await session.get_items()) == 1_001  # a worker's read, done
        store.close()  # not awaited: the write is still waiting
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    await write  # it did not give up: close() did not hold the loop until busy_timeout
    async with SQLiteStore(path) as again:
        assert await again.session("w").get_items() == [{"w": 1}]


@pytest.mark.parametrize("awaited", [True, False], ids=["awaited", "plain"])
async def test_a_session_of_a_replaced_store_closes_after_the_new_store_is_gone_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, awaited: bool
) -> None:
    # The early store was replaced, and the store that took its place was released by its
    # last session: the path has no store registered when the early session closes.
    early = SQLiteSession("a", tmp_path / "x.db")
    await early.store.close()
    later = SQLiteSession("b", tmp_path / "x.db")
    assert later.store is not early.store
    await later.add_items([{"n": 0}])
    await later.close()
    assert later.store.closed
    caplog.set_level(logging.WARNING)
    if awaited:
        await early.close()
    else:
        early.close()  # released at once, as the SDK's examples close
    assert [r.getMessage() for r in caplog.records] == []
    async with SQLiteSession("b", tmp_path / "x.db") as again:
        assert await again.get_items() == [{"n": 0}]


# -- the SDK's layout: WAL as the SDK sets it, and a database opened read-only ---------------


def journal_mode(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as raw:
        mode: str = raw.execute("PRAGMA journal_mode").fetchone()[0]
    return mode


async def test_the_sdk_layout_puts_a_new_and_an_existing_database_in_wal_mode(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sdk.db"
    async with SQLiteStore(path, layout="sdk") as store:
        await store.session("s").add_items([{"n": 1}])
    assert journal_mode(path) == "wal"
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA journal_mode = DELETE")  # as another program may leave it
    assert journal_mode(path) == "delete"
    async with SQLiteStore(path, layout="sdk") as store:
        assert await store.session("s").get_items() == [{"n": 1}]
    assert journal_mode(path) == "wal"


def not_writable(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process may not write files (as a user without write permission; root, which
    this may run as, ignores the mode bits): the store opens databases read-only."""
    real = os.access

    def access(path: object, mode: int, **kwargs: object) -> bool:
        return False if mode & os.W_OK else real(path, mode, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "access", access)


async def test_an_sdk_database_opened_read_only_is_read_as_it_is_and_refuses_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sdk.db"
    async with SQLiteStore(path, layout="sdk") as store:
        await store.session("s").add_items([{"n": 1}])
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("PRAGMA journal_mode = DELETE")  # a read-only reader cannot change it
    before = path.read_bytes()
    not_writable(monkeypatch)
    async with SQLiteStore(path, layout="sdk") as store:
        session = store.session("s")
        assert await session.get_items() == [{"n": 1}]
        with pytest.raises(ReadOnlyDatabaseError) as caught:
            await session.add_items([{"n": 2}])
    assert str(caught.value) == (
        f"SQLite database {store.db_path} is read-only (opened read-only: the file or its "
        "directory is not writable by this process); nothing was written"
    )
    assert path.read_bytes() == before


async def test_a_read_only_database_without_the_sdks_tables_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(path)) as raw:
        raw.execute("CREATE TABLE unrelated (x)")
        raw.commit()
    not_writable(monkeypatch)
    async with SQLiteStore(path, layout="sdk") as store:
        with pytest.raises(ReadOnlyDatabaseError) as caught:
            await store.session("s").get_items()
    assert str(caught.value) == (
        f"SQLite database {store.db_path} is read-only (the file or its directory is not "
        "writable by this process) and holds no Agents SDK session tables "
        f"({store.sessions_table}, {store.messages_table}); nothing was written"
    )


# -- replace_items: inline up to 1,000 items, in a worker thread above -----------------------


async def turns_during(call: Awaitable[object]) -> int:
    """How many turns other tasks got while ``call`` ran (0: it never yielded)."""
    turns = 0

    async def tick() -> None:
        nonlocal turns
        while True:
            await asyncio.sleep(0)
            turns += 1

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    turns = 0
    try:
        await call
        return turns
    finally:
        ticker.cancel()


async def test_a_replacement_of_up_to_1000_items_stays_inline_a_larger_one_does_not(
    store: SQLiteStore,
) -> None:
    session = store.session("s")
    await session.add_items([{"old": True}])
    for count, inline in ((10, True), (1_000, True), (1_001, False)):
        items = [{"n": n} for n in range(count)]
        turns = await turns_during(session.replace_items(items))
        assert (turns == 0) is inline, (count, turns)
        assert await session.get_items() == items


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
async def test_a_worker_thread_keeps_its_connection_for_its_next_operations(
    tmp_path: Path,
) -> None:
    # Each thread opens one connection and keeps it: however many large reads, at most
    # one per worker thread and the event loop's (each holds the file, its -wal and -shm).
    path = (tmp_path / "chat.db").resolve()
    async with SQLiteStore(path) as store:
        session = store.session("s")
        await session.add_items([{"n": n} for n in range(1_500)])  # a worker's write
        for _ in range(20):
            assert len(await session.get_items()) == 1_500  # a worker's read
        assert 0 < len(open_files(path)) <= 3 * (_MAX_WAITING_THREADS + 1)


# -- waiting for another connection's lock ---------------------------------------------------


async def test_a_write_that_waited_out_busy_timeout_says_so_and_wrote_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    async with SQLiteStore(path, busy_timeout=0.2) as store:
        session = store.session("s")
        await session.add_items([{"n": 0}])
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(BackendTimeoutError) as caught:
                await session.add_items([{"n": 1}])
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert str(caught.value) == (
            f"SQLite database {store.db_path} is locked by another connection: gave up after "
            "waiting busy_timeout seconds; nothing was written"
        )
        assert await session.get_items() == [{"n": 0}]


async def test_writes_waiting_for_the_lock_wait_in_at_most_four_named_threads(
    tmp_path: Path,
) -> None:
    path = tmp_path / "locked.db"
    async with SQLiteStore(path) as store:
        await store.session("s").add_items([{"n": 0}])
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        try:
            writes = [
                asyncio.ensure_future(store.session(f"w{n}").add_items([{"n": n}]))
                for n in range(8)
            ]
            await asyncio.sleep(0.3)  # every write is waiting: 4 in threads, 4 queued
            waiting = [
                thread.name
                for thread in threading.enumerate()
                if thread.name.startswith("agent-sessions-sqlite_")
            ]
            assert len(waiting) == _MAX_WAITING_THREADS == 4
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        await asyncio.gather(*writes)
        assert (await store.list_sessions()).session_ids == ["s", *(f"w{n}" for n in range(8))]
