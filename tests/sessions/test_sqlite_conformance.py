"""The conformance kit on SQLite: a shared in-memory store and a file."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from agent_sessions import Session, SessionSettings, SQLiteSession, SQLiteStore
from agent_sessions.testing import SessionConformance


async def write_raw_row(session: Session, raw: bytes) -> None:
    """Insert ``raw`` as the newest item of ``session``, as a foreign writer would."""
    assert isinstance(session, SQLiteSession)
    store, session_id = session.store, session.session_id
    prefix = store.table_prefix

    def write(connection: object) -> None:
        import sqlite3

        assert isinstance(connection, sqlite3.Connection)
        connection.execute(f"INSERT OR IGNORE INTO {prefix}sessions VALUES (?, 0)", (session_id,))
        connection.execute(
            f"INSERT INTO {prefix}items (session_id, item) VALUES (?, ?)", (session_id, raw)
        )

    await store._run(write)


class TestSQLiteMemorySession(SessionConformance):
    """Sessions on one in-memory store, shared by the kit's threads."""

    store: SQLiteStore

    @pytest.fixture(autouse=True)
    async def memory_store(self) -> AsyncIterator[None]:
        async with SQLiteStore() as store:
            self.store = store
            yield

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.store.session(session_id, session_settings=session_settings)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        await write_raw_row(session, raw)


class TestSQLiteFileSession(SessionConformance):
    """Sessions opened by path, as applications do: one shared store per file."""

    supports_processes = True
    db_path: Path

    @pytest.fixture(autouse=True)
    def database_file(self, tmp_path: Path) -> None:
        self.db_path = tmp_path / "conformance.db"

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return SQLiteSession(session_id, self.db_path, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(SQLiteSession, db_path=self.db_path)

    def failing_store_address(self) -> tuple[str, str]:
        return str(self.db_path.with_name("not-a-database.db")), ""

    async def create_failing_session(self, session_id: str) -> Session:
        path = self.db_path.with_name("not-a-database.db")
        path.write_bytes(b"not a SQLite database, " * 100)
        return SQLiteSession(session_id, path)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        await write_raw_row(session, raw)
