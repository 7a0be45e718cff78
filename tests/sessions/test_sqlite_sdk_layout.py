"""The Agents SDK's SQLite layout, read and written in place (issue 23, point 3).

A file holding the SDK's ``agent_sessions``/``agent_messages`` tables (or the names given by
``sessions_table``/``messages_table``) is used as it is: the SDK's history is visible to
ours, what ours adds is visible to the SDK's ``SQLiteSession``, with both running at once.
The real SDK (``openai-agents``) writes and reads here; nothing is mocked."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import agents
import pytest

from agent_sessions import (
    BackendDatabaseMissingError,
    ForeignDataError,
    Session,
    SessionConfigError,
    SessionSettings,
    SQLiteSession,
    SQLiteStore,
)
from agent_sessions.testing import SessionConformance


def numbered(count: int, tag: str = "m") -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"{tag}{n}"} for n in range(count)]


def sdk_file(path: Path) -> Path:
    """A database file created by the SDK's own ``SQLiteSession`` (tables only)."""
    agents.SQLiteSession("creator", path).close()
    return path


def table_names(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {row[0] for row in rows} - {"sqlite_sequence"}


# -- reading and writing the SDK's tables ------------------------------------------------------


async def test_the_sdks_history_is_read_and_extended_in_place(tmp_path: Path) -> None:
    path = tmp_path / "sdk.db"
    theirs = agents.SQLiteSession("u", path)
    sdk_items: Any = [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": "1"}]
    await theirs.add_items(sdk_items)
    ours = SQLiteSession("u", path)
    assert await ours.get_items() == sdk_items
    assert ours.store.layout == "sdk"
    await ours.add_items([{"role": "user", "content": "ours ✓"}])
    assert await theirs.get_items() == [*sdk_items, {"role": "user", "content": "ours ✓"}]
    assert await ours.get_items(limit=2) == [*sdk_items[1:], {"role": "user", "content": "ours ✓"}]
    assert table_names(path) == {"agent_sessions", "agent_messages"}  # none of ours added
    await ours.close()
    theirs.close()


async def test_pop_clear_and_listing_act_on_the_sdks_rows(tmp_path: Path) -> None:
    path = sdk_file(tmp_path / "sdk.db")
    theirs, other = agents.SQLiteSession("u", path), agents.SQLiteSession("other", path)
    items: Any = numbered(3)
    await theirs.add_items(items)
    other_items: Any = numbered(1, "o")
    await other.add_items(other_items)
    ours = SQLiteSession("u", path)
    assert await ours.pop_item() == numbered(3)[2]
    assert await theirs.get_items() == numbered(3)[:2]
    page = await ours.store.list_sessions()
    assert page.session_ids == ["other", "u"]
    await ours.clear_session()
    assert await theirs.get_items() == []
    assert await other.get_items() == numbered(1, "o")
    with sqlite3.connect(path) as connection:  # the session row went too, as the SDK does
        rows = connection.execute("SELECT session_id FROM agent_sessions ORDER BY 1").fetchall()
    assert rows == [("other",)]
    await ours.close()
    theirs.close()
    other.close()


async def test_custom_sdk_table_names_on_a_file_are_used(tmp_path: Path) -> None:
    path = tmp_path / "custom.db"
    theirs = agents.SQLiteSession("u", path, "chat_sessions", "chat_messages")
    items: Any = numbered(2)
    await theirs.add_items(items)
    ours = SQLiteSession("u", path, "chat_sessions", "chat_messages")
    assert await ours.get_items() == numbered(2)
    await ours.add_items(numbered(1, "x"))
    assert await theirs.get_items() == [*numbered(2), *numbered(1, "x")]
    assert table_names(path) == {"chat_sessions", "chat_messages"}
    await ours.close()
    theirs.close()


async def test_layout_sdk_creates_the_sdks_tables_on_a_new_file(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    ours = SQLiteSession("u", path, layout="sdk")
    await ours.add_items(numbered(2))
    assert table_names(path) == {"agent_sessions", "agent_messages"}
    theirs = agents.SQLiteSession("u", path)
    assert await theirs.get_items() == numbered(2)
    await ours.close()
    theirs.close()


async def test_a_new_file_and_a_file_of_ours_keep_our_layout(tmp_path: Path) -> None:
    path = tmp_path / "ours.db"
    first = SQLiteSession("u", path)
    await first.add_items(numbered(1))
    assert first.store.layout == "native"
    await first.close()
    sdk_file(path)  # the SDK's tables beside ours: ours stay in use
    again = SQLiteSession("u", path)
    assert await again.get_items() == numbered(1)
    assert again.store.layout == "native"
    await again.close()


async def test_layout_native_ignores_the_sdks_tables(tmp_path: Path) -> None:
    path = tmp_path / "sdk.db"
    theirs = agents.SQLiteSession("u", path)
    items: Any = numbered(1)
    await theirs.add_items(items)
    ours = SQLiteSession("u", path, layout="native")
    assert await ours.get_items() == []
    assert "agent_sessions_items" in table_names(path)
    await ours.close()
    theirs.close()


async def test_a_store_in_sdk_layout_with_create_false(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "empty.db", layout="sdk", create=False)
    with pytest.raises(BackendDatabaseMissingError, match="no SQLite database"):
        await store.session("u").get_items()
    sqlite3.connect(tmp_path / "plain.db").close()
    store = SQLiteStore(tmp_path / "plain.db", layout="sdk", create=False)
    with pytest.raises(BackendDatabaseMissingError, match="agent_sessions, agent_messages"):
        await store.session("u").get_items()
    assert table_names(tmp_path / "plain.db") == set()


async def test_a_foreign_table_of_the_sdks_names_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "foreign.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE agent_messages (a, b)")
    ours = SQLiteSession("u", path, layout="sdk")
    with pytest.raises(ForeignDataError, match="agent_messages"):
        await ours.add_items(numbered(1))
    assert table_names(path) == {"agent_messages"}  # left untouched


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"layout": "sdk", "table_prefix": "mine_"}, "table_prefix"),
        ({"layout": "native", "sessions_table": "s"}, "sessions_table"),
        ({"table_prefix": "mine_", "messages_table": "m"}, "messages_table"),
        ({"layout": "theirs"}, "layout must be one of"),
    ],
)
def test_contradictory_layout_arguments_are_refused(
    tmp_path: Path, arguments: dict[str, Any], message: str
) -> None:
    path = tmp_path / "x.db"
    with pytest.raises(SessionConfigError, match=message):
        SQLiteSession("u", path, **arguments)
    with pytest.raises(SessionConfigError, match=message):
        SQLiteStore(path, **arguments)
    assert not path.exists()


def test_the_sdks_settings_work_in_its_layout(tmp_path: Path) -> None:
    path = sdk_file(tmp_path / "sdk.db")
    settings: Any = agents.SessionSettings(limit=1)
    ours = SQLiteSession("u", path, session_settings=settings)
    asyncio.run(ours.add_items(numbered(3)))
    assert asyncio.run(ours.get_items()) == numbered(3)[2:]
    assert ours.session_settings == SessionSettings(limit=1)
    ours.close()


# -- both at once ------------------------------------------------------------------------------


def test_the_sdk_and_ours_writing_alternately_from_two_threads(tmp_path: Path) -> None:
    """Turn by turn, as an agent and a tool process sharing one conversation would."""
    path = sdk_file(tmp_path / "sdk.db")
    turns = 40
    turn = [0]
    changed = threading.Condition()
    errors: list[BaseException] = []

    def writer(make: Callable[[], Any], parity: int) -> None:
        session = make()
        try:
            for n in range(turns):
                with changed:
                    changed.wait_for(lambda: turn[0] % 2 == parity, timeout=30)
                seen = asyncio.run(session.get_items(limit=1))
                expected_before = 2 * n + parity
                if expected_before:
                    assert seen == [{"turn": expected_before - 1}], (parity, n, seen)
                asyncio.run(session.add_items([{"turn": expected_before}]))
                with changed:
                    turn[0] += 1
                    changed.notify_all()
        except BaseException as exc:
            errors.append(exc)
            with changed:
                turn[0] = -(10**6)  # wake the other one up to fail fast
                changed.notify_all()
        finally:
            session.close()

    threads = [
        threading.Thread(target=writer, args=(lambda: agents.SQLiteSession("u", path), 0)),
        threading.Thread(target=writer, args=(lambda: SQLiteSession("u", path), 1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    expected: Any = [{"turn": n} for n in range(2 * turns)]
    theirs = agents.SQLiteSession("u", path)
    assert asyncio.run(theirs.get_items()) == expected
    theirs.close()
    ours = SQLiteSession("u", path)
    assert asyncio.run(ours.get_items()) == expected
    ours.close()


def _write_in_child(kind: str, path: str, writer: int, batches: int) -> None:
    async def write() -> None:
        session: Any = (
            agents.SQLiteSession("u", path) if kind == "sdk" else SQLiteSession("u", path)
        )
        for batch in range(batches):
            await session.add_items([{"writer": writer, "batch": batch, "i": i} for i in range(3)])
        result = session.close()
        if result is not None:
            await result

    asyncio.run(write())


def test_the_sdk_and_ours_writing_at_once_from_processes(tmp_path: Path) -> None:
    path = sdk_file(tmp_path / "sdk.db")
    batches = 40
    context = multiprocessing.get_context("spawn")
    processes = [
        context.Process(target=_write_in_child, args=(kind, str(path), writer, batches))
        for writer, kind in enumerate(["sdk", "ours", "sdk", "ours"])
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    ours = SQLiteSession("u", path)
    items = asyncio.run(ours.get_items())
    ours.close()
    assert len(items) == 4 * batches * 3
    for start in range(0, len(items), 3):  # every batch whole and in order
        batch = items[start : start + 3]
        assert [item["i"] for item in batch] == [0, 1, 2]
        assert len({(item["writer"], item["batch"]) for item in batch}) == 1
    for writer in range(4):  # each writer's batches in the order written
        order = [item["batch"] for item in items[::3] if item["writer"] == writer]
        assert order == list(range(batches))


# -- the conformance kit on a file the SDK created ----------------------------------------------


async def write_raw_sdk_row(session: Session, raw: bytes) -> None:
    """Insert ``raw`` as the newest item, in the SDK's tables, as a foreign writer would."""
    assert isinstance(session, SQLiteSession)
    session_id = session.session_id

    def write(connection: sqlite3.Connection) -> None:
        connection.execute(
            "INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", (session_id,)
        )
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)", (session_id, raw)
        )

    await session.store._run(write)


class TestSQLiteSDKLayoutSession(SessionConformance):
    """Our sessions on a file the SDK created, in its layout; the kit's child processes
    write with the SDK's own ``SQLiteSession`` at the same time as ours reads and writes."""

    supports_processes = True
    db_path: Path

    @pytest.fixture(autouse=True)
    def database_file(self, tmp_path: Path) -> None:
        self.db_path = sdk_file(tmp_path / "sdk-layout.db")

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        session = SQLiteSession(session_id, self.db_path, session_settings=session_settings)
        return session

    def child_session_factory(self) -> Callable[[str], Session]:
        # The SDK's own session, in the children: mypy sees another Session type.
        return cast(
            "Callable[[str], Session]",
            functools.partial(agents.SQLiteSession, db_path=self.db_path),
        )

    def failing_store_address(self) -> tuple[str, str]:
        return str(self.db_path.with_name("not-a-database.db")), ""

    async def create_failing_session(self, session_id: str) -> Session:
        path = self.db_path.with_name("not-a-database.db")
        path.write_bytes(b"not a SQLite database, " * 100)
        return SQLiteSession(session_id, path, layout="sdk")

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        await write_raw_sdk_row(session, raw)


# -- URLs and migrate-sdk -----------------------------------------------------------------------


async def test_a_url_chooses_the_layout(tmp_path: Path) -> None:
    from agent_sessions.urls import open_store

    path = tmp_path / "url.db"
    store = open_store(f"sqlite:///{path}?layout=sdk")
    assert isinstance(store, SQLiteStore)
    await store.session("u").add_items(numbered(1))
    assert store.layout == "sdk"
    await store.close()
    theirs = agents.SQLiteSession("u", path)
    assert await theirs.get_items() == numbered(1)
    theirs.close()
    detected = open_store(f"sqlite:///{path}")
    assert isinstance(detected, SQLiteStore)
    assert await detected.session("u").get_items() == numbered(1)
    await detected.close()


def test_migrate_sdk_in_place_still_writes_our_tables(tmp_path: Path) -> None:
    path = tmp_path / "conversations.db"
    theirs = agents.SQLiteSession("u", path)
    items: Any = numbered(2)
    asyncio.run(theirs.add_items(items))
    theirs.close()
    done = subprocess.run(
        [sys.executable, "-m", "agent_sessions", "migrate-sdk", str(path), f"sqlite:///{path}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "agent_sessions_items" in table_names(path)
    ours = SQLiteSession("u", path)  # both layouts there: ours is used, holding the copy
    assert asyncio.run(ours.get_items()) == numbered(2)
    assert ours.store.layout == "native"
    ours.close()
    theirs = agents.SQLiteSession("u", path)  # the SDK's rows were only read
    assert asyncio.run(theirs.get_items()) == numbered(2)
    theirs.close()
