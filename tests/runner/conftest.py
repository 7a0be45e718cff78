"""Every runner test runs on a real SQLiteSession, in memory and on a file."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agent_sessions import SessionSettings, SQLiteSession, SQLiteStore

OpenSession = Callable[..., SQLiteSession]


@pytest.fixture(params=["memory", "file"])
async def open_session(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[OpenSession]:
    """``open_session(session_id="s", limit=None)``: a session on this test's database
    (one in-memory store, or one file), closed after the test."""
    memory_store = SQLiteStore(":memory:") if request.param == "memory" else None
    opened: list[SQLiteSession] = []

    def open_one(session_id: str = "s", limit: int | None = None) -> SQLiteSession:
        settings = SessionSettings(limit=limit) if limit is not None else None
        if memory_store is not None:
            session = SQLiteSession(session_id, store=memory_store, session_settings=settings)
        else:
            session = SQLiteSession(
                session_id, tmp_path / "conversations.db", session_settings=settings
            )
        opened.append(session)
        return session

    yield open_one
    for session in opened:
        await session.close()
    if memory_store is not None:
        await memory_store.close()
