"""A corrupt row's warning says where the row is: the database file, the table, the row's
id and the session's id, on a read and on a pop (what an operator needs to find it).

Found by mutation testing (benchmarks/mutation.py sqlite): the kit checks that a corrupt
row is skipped, not what the warning names.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest

from agent_sessions import SQLiteStore

# (layout, its items table, the column holding an item's JSON)
LAYOUTS = [("native", "agent_sessions_items", "item"), ("sdk", "agent_messages", "message_data")]


async def write_corrupt_row(
    path: Path, session_id: str, table: str = "agent_sessions_items", column: str = "item"
) -> int:
    with sqlite3.connect(path) as raw:
        cursor = raw.execute(
            f"INSERT INTO {table} (session_id, {column}) VALUES (?, 'not json')", (session_id,)
        )
        row_id = cursor.lastrowid
    raw.close()
    assert row_id is not None
    return row_id


@pytest.mark.parametrize(("layout", "table", "column"), LAYOUTS, ids=["native", "sdk"])
@pytest.mark.parametrize("call", ["get_items", "pop_item"])
async def test_a_corrupt_rows_warning_names_the_file_table_row_and_session(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    call: str,
    layout: str,
    table: str,
    column: str,
) -> None:
    path = tmp_path / "chat.db"
    async with SQLiteStore(path, layout=layout) as store:
        session = store.session("user-7")
        await session.add_items([{"n": 0}])
        row_id = await write_corrupt_row(path, "user-7", table, column)
        with caplog.at_level(logging.WARNING, logger="agent_sessions"):
            result = await getattr(session, call)()
        assert result == ([{"n": 0}] if call == "get_items" else {"n": 0})
    [message] = [r.getMessage() for r in caplog.records if "corrupt" in r.getMessage()]
    assert f"{path} table {table} id {row_id} (session 'user-7')" in message
