"""Compaction survives a process killed in the middle of its write: a real child process,
a real SIGKILL at the worst moment (the old rows deleted, the new ones not committed),
on a SQLite file, on PostgreSQL and on MariaDB (SQLAlchemy backend); the history
afterwards is the old one, whole.

The kill comes from inside the child, at a statement it is about to run: SQLite's own
trace callback on the store's connection, psycopg's ``execute`` of the ``COMMIT``,
SQLAlchemy's ``execute`` of the ``INSERT``. Without
the ReplacingSession capability (a session of the bare protocol) the same kill, between
``clear_session`` and ``add_items``, loses the history: the documented fallback."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import SQLiteStore
from agent_sessions.bounded import SUMMARY_PREFIX, CompactingSession
from agent_sessions.models import OfflineModel
from agent_sessions.postgres import PostgresStore
from agent_sessions.sqlalchemy import SQLAlchemyStore

from .conftest import new_sa_table

HISTORY = [
    {"role": "user", "content": "q0"},
    {"role": "assistant", "content": "a0"},
    {"role": "user", "content": "q1"},
    {"role": "assistant", "content": "a1"},
    {"role": "user", "content": "q2"},
]

CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys

    import psycopg

    from agent_sessions import SQLiteStore
    from agent_sessions.bounded import CompactingSession
    from agent_sessions.models import OfflineModel
    from agent_sessions.postgres import PostgresStore

    backend, where, session_id, protocol_only = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    seen = []

    def die() -> None:
        print("killing myself after", seen, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    class ProtocolOnly:
        # The session seen through the six members of the protocol: no replace_items.
        def __init__(self, inner):
            self.inner, self.session_id = inner, inner.session_id
            self.session_settings = inner.session_settings

        async def get_items(self, limit=None):
            return await self.inner.get_items(limit)

        async def add_items(self, items):
            await self.inner.add_items(items)

        async def pop_item(self):
            return await self.inner.pop_item()

        async def clear_session(self):
            await self.inner.clear_session()

    async def main() -> None:
        if backend == "sqlite":
            store = SQLiteStore(where)

            def trace(statement: str) -> None:
                word = statement.split()[0].upper()
                seen.append(word)
                # The replacement's transaction: its DELETE ran, its INSERT is next.
                # The fallback: clear_session's DELETE committed, add_items begins.
                if "DELETE" in seen and word in ("INSERT", "BEGIN"):
                    die()

            await store._run(lambda connection: connection.set_trace_callback(trace))
        elif backend == "sqlalchemy":
            from sqlalchemy.ext.asyncio import AsyncConnection

            from agent_sessions.sqlalchemy import SQLAlchemyStore

            store = SQLAlchemyStore(where.split("#")[0], table=where.split("#")[1])
            sa_execute = AsyncConnection.execute

            async def sa_execute_then_die(self, statement, *args, **kwargs):
                text = str(statement).lstrip().upper()
                if text.startswith("DELETE"):
                    seen.append("DELETE")
                elif text.startswith("INSERT") and "DELETE" in seen:
                    die()  # replace: the DELETE is in this transaction; fallback: committed
                return await sa_execute(self, statement, *args, **kwargs)

            AsyncConnection.execute = sa_execute_then_die
        else:
            store = PostgresStore(where.split("#")[0], table=where.split("#")[1])
            execute = psycopg.AsyncConnection.execute

            async def execute_then_die(self, query, *args, **kwargs):
                text = query if isinstance(query, bytes) else str(query).encode()
                if text.strip().upper() == b"COMMIT" and "DELETE" in seen:
                    die()  # the DELETE and INSERT ran in the transaction; no COMMIT yet
                if text.startswith(b"DELETE"):
                    seen.append("DELETE")  # clear_session (the fallback), autocommitted
                return await execute(self, query, *args, **kwargs)

            psycopg.AsyncConnection.execute = execute_then_die
            cursor_execute = psycopg.AsyncClientCursor.execute

            async def note_replace(self, query, *args, **kwargs):
                if b"DELETE FROM" in bytes(query):
                    seen.append("DELETE")  # replace_items' statements, in its transaction
                return await cursor_execute(self, query, *args, **kwargs)

            psycopg.AsyncClientCursor.execute = note_replace
        inner = store.session(session_id)
        session = ProtocolOnly(inner) if protocol_only == "1" else inner
        compacting = CompactingSession(
            session, model=OfflineModel(["the summary"]), threshold=3, keep_last_turns=1
        )
        await compacting.compact()
        print("compaction finished without being killed", seen, flush=True)

    asyncio.run(main())
    """
)


def run_child(backend: str, where: str, session_id: str, *, protocol_only: bool) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CHILD, backend, where, session_id, "1" if protocol_only else "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, (child.returncode, child.stdout, child.stderr)
    assert "killing myself after" in child.stdout


async def history_after_a_kill(store: Any, where: str, backend: str, protocol_only: bool) -> Any:
    session_id = f"crash-{uuid.uuid4().hex}"
    await store.session(session_id).add_items(HISTORY)
    run_child(backend, where, session_id, protocol_only=protocol_only)
    return session_id, await store.session(session_id).get_items()


async def check_the_history_survives_and_compacts_later(store: Any, session_id: str) -> None:
    compacting = CompactingSession(
        store.session(session_id), model=OfflineModel(["later"]), threshold=3, keep_last_turns=1
    )
    assert await compacting.compact() is True
    assert await store.session(session_id).get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "later"},
        HISTORY[-1],
    ]


async def test_a_compaction_killed_mid_write_leaves_the_sqlite_history_whole(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crash.db"
    async with SQLiteStore(path) as store:
        session_id, history = await history_after_a_kill(store, str(path), "sqlite", False)
        assert history == HISTORY
        await check_the_history_survives_and_compacts_later(store, session_id)


async def test_a_compaction_killed_mid_write_leaves_the_postgres_history_whole(
    database_url: str, postgres_table: str
) -> None:
    where = f"{database_url}#{postgres_table}"
    async with PostgresStore(database_url, table=postgres_table) as store:
        session_id, history = await history_after_a_kill(store, where, "postgres", False)
        assert history == HISTORY
        await check_the_history_survives_and_compacts_later(store, session_id)


async def test_a_compaction_killed_mid_write_leaves_the_mariadb_history_whole(
    mysql_url: str, created_tables: list[tuple[str, str]]
) -> None:
    """SQLAlchemy on MariaDB (InnoDB): killed at the INSERT after the DELETE."""
    table = new_sa_table(mysql_url, created_tables)
    async with SQLAlchemyStore(mysql_url, table=table) as store:
        where = f"{mysql_url}#{table}"
        session_id, history = await history_after_a_kill(store, where, "sqlalchemy", False)
        assert history == HISTORY
        await check_the_history_survives_and_compacts_later(store, session_id)
        _, lost = await history_after_a_kill(store, where, "sqlalchemy", True)
        assert lost == []  # the fallback, killed at the same statement


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_without_replace_items_the_same_kill_loses_the_history(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The documented fallback (clear_session then add_items): why the capability exists."""
    store: Any
    if backend == "sqlite":
        where = str(tmp_path / "fallback.db")
        store = SQLiteStore(where)
    else:
        url, table = (
            request.getfixturevalue("database_url"),
            request.getfixturevalue("postgres_table"),
        )
        where, store = f"{url}#{table}", PostgresStore(url, table=table)
    async with store:
        _, history = await history_after_a_kill(store, where, backend, True)
        assert history == []  # cleared, then killed before the new history was written
