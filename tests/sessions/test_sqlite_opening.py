"""How SQLite sessions and stores open: a session's options reaching the store it opens,
the shared file stores, the schema and the layouts. Checked where the mutation run of the
functions of ``sqlite.py`` that its whole-file run never reached (opening, the schema,
the statements) found them unguarded (benchmarks/mutation.py sqlite --only, issue 28).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import agents
import pytest

from agent_sessions import SQLiteSession, SQLiteStore
from agent_sessions.sqlite import _MemoryConnection


def memory_connection(store: SQLiteStore) -> sqlite3.Connection:
    connections = store._connections
    assert isinstance(connections, _MemoryConnection)
    return connections._connection


def tables(connection: sqlite3.Connection) -> set[str]:
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {name for (name,) in rows} - {"sqlite_sequence"}


# -- a session's own in-memory store takes the session's options ----------------------------


OURS = {"agent_sessions_sessions", "agent_sessions_items"}
THE_SDKS = {"agent_sessions", "agent_messages"}


@pytest.mark.parametrize(
    ("options", "synchronous", "expected_tables"),
    [
        ({}, 1, OURS),
        ({"durable": True}, 2, OURS),  # synchronous FULL (2), not NORMAL (1)
        ({"table_prefix": "p_"}, 1, {"p_sessions", "p_items"}),
        ({"layout": "sdk"}, 1, THE_SDKS),
        ({"sessions_table": "chats"}, 1, {"chats", "agent_messages"}),
        ({"messages_table": "lines"}, 1, {"agent_sessions", "lines"}),
    ],
    ids=["defaults", "durable", "table_prefix", "layout", "sessions_table", "messages_table"],
)
async def test_a_memory_sessions_own_store_has_the_sessions_options(
    options: dict[str, Any], synchronous: int, expected_tables: set[str]
) -> None:
    async with SQLiteSession("s", **options) as session:
        await session.add_items([{"n": 1}])
        connection = memory_connection(session.store)
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == synchronous
        assert tables(connection) == expected_tables
        assert await session.get_items() == [{"n": 1}]


async def test_a_plain_close_of_a_memory_session_closes_its_store_at_once() -> None:
    # Inside a running loop, as the SDK's examples close: not left to a task for later.
    session = SQLiteSession("s")
    await session.add_items([{"n": 1}])
    store = session.store
    session.close()
    assert store.closed
    with pytest.raises(sqlite3.ProgrammingError):  # its connection is closed too
        memory_connection(store).execute("SELECT 1")


# -- file sessions share one store per (path, options) ----------------------------------------


async def test_a_table_prefix_with_or_without_layout_native_is_one_store(tmp_path: Path) -> None:
    # A table_prefix means this library's tables: layout="native" says the same again.
    path = tmp_path / "x.db"
    async with (
        SQLiteSession("a", path, table_prefix="p_") as implied,
        SQLiteSession("b", path, table_prefix="p_", layout="native") as said,
    ):
        assert implied.store is said.store
        assert implied.store.layout == "native"


# -- the layouts -------------------------------------------------------------------------------


def schema(path: Path) -> set[tuple[str, str, str, tuple[tuple[object, ...], ...]]]:
    """Every table and index of ``path``: its kind, name and table, and its columns (a
    table's: name, declared type, not null, primary key; an index's: their names)."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        objects = connection.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        return {
            (
                kind,
                name,
                table,
                tuple(
                    (row[1], row[2], row[3], row[5]) if kind == "table" else (row[2],)
                    for row in connection.execute(
                        f"PRAGMA {'table_info' if kind == 'table' else 'index_info'}({name})"
                    )
                ),
            )
            for kind, name, table in objects
        }


async def test_the_sdk_layout_creates_on_a_new_file_the_schema_the_sdk_creates(
    tmp_path: Path,
) -> None:
    # The same tables, columns and index (its name too): the SDK's SQLiteSession opening
    # the file later finds what it would have created, and adds nothing.
    agents.SQLiteSession("creator", tmp_path / "theirs.db").close()
    async with SQLiteSession("u", tmp_path / "ours.db", layout="sdk") as ours:
        await ours.add_items([{"role": "user", "content": "hi"}])
    assert schema(tmp_path / "ours.db") == schema(tmp_path / "theirs.db")
    assert (
        "index",
        "idx_agent_messages_session_id",
        "agent_messages",
        (("session_id",), ("id",)),
    ) in schema(tmp_path / "ours.db")


async def test_a_file_holding_our_tables_at_version_0_and_the_sdks_is_ours(tmp_path: Path) -> None:
    # "auto" takes the SDK's tables only when none of ours are there: ours, found without
    # a schema version (written before one was recorded, or reset), are ours, and adopted.
    path = tmp_path / "both.db"
    async with SQLiteSession("u", path, layout="native") as first:
        await first.add_items([{"ours": 1}])
    agents.SQLiteSession("creator", path).close()  # the SDK's tables beside ours
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA user_version = 0")
    async with SQLiteSession("u", path) as again:
        assert await again.get_items() == [{"ours": 1}]
        assert again.store.layout == "native"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 1
