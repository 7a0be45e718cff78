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


async def write_corrupt_row(path: Path, session_id: str) -> int:
    with sqlite3.connect(path) as raw:
        cursor = raw.execute(
            "INSERT INTO agent_sessions_items (session_id, item) VALUES (?, 'not json')",
            (session_id,),
        )
        row_id = cursor.lastrowid
    raw.close()
    assert row_id is not None
    return row_id


@pytest.mark.parametrize("call", ["get_items", "pop_item"])
async def test_a_corrupt_rows_warning_names_the_file_table_row_and_session(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, call: str
) -> None:
    path = tmp_path / "chat.db"
    async with SQLiteStore(path) as store:
        session = store.session("user-7")
        await session.add_items([{"n": 0}])
        row_id = await write_corrupt_row(path, "user-7")
        with caplog.at_level(logging.WARNING, logger="agent_sessions"):
            result = await getattr(session, call)()
        assert result == ([{"n": 0}] if call == "get_items" else {"n": 0})
    [message] = [r.getMessage() for r in caplog.records if "corrupt" in r.getMessage()]
    assert f"{path} table agent_sessions_items id {row_id} (session 'user-7')" in message
