"""BranchingSession over the real PostgreSQL (DATABASE_URL): the conformance kit on the
current branch (in child processes too, on a failing server, with corrupt rows), and a
branch with usage in PostgreSQL rows."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
from psycopg import sql

from agent_sessions import Session
from agent_sessions.branches import BranchingSession
from agent_sessions.postgres import PostgresSession, PostgresStore

from .branches_kit import BranchingServerKit, check_a_branch_and_its_usage


def open_branching_postgres(session_id: str, *, url: str, table: str) -> BranchingSession:
    """A branching session on PostgreSQL (module level: child processes call it)."""
    return BranchingSession(functools.partial(PostgresSession, url=url, table=table), session_id)


class TestBranchingPostgresSession(BranchingServerKit):
    table: str
    store: PostgresStore

    @pytest.fixture(autouse=True)
    async def postgres_store(self, database_url: str, postgres_table: str) -> AsyncIterator[None]:
        self.url, self.table = database_url, postgres_table
        async with PostgresStore(database_url, table=postgres_table) as store:
            self.store = store
            yield

    def open_failing_store(self) -> PostgresStore:
        return PostgresStore(self.failing_url, table=self.table, connect_timeout=1)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(open_branching_postgres, url=self.url, table=self.table)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        """Insert ``raw`` into the current branch's rows as a foreign writer would; the
        ``json`` column refuses text that is not JSON, so such a row cannot exist."""
        assert isinstance(session, BranchingSession)
        current = await session.current_session()
        insert = sql.SQL("INSERT INTO {} (session_id, payload) VALUES (%s, %s::json)").format(
            sql.Identifier(self.table)
        )
        try:
            text = raw.decode("utf-8")
            async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
                await conn.execute(insert, (current.session_id, text))
        except (UnicodeDecodeError, psycopg.DataError) as exc:
            reason = str(exc).splitlines()[0]
            pytest.skip(f"PostgreSQL's json column refuses {raw!r} ({reason}): no such row")


@pytest.fixture
async def store(database_url: str, postgres_table: str) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(database_url, table=postgres_table) as store:
        yield store


async def test_a_branch_and_its_usage_in_postgres_rows(store: PostgresStore) -> None:
    await check_a_branch_and_its_usage(store, "chat-" + store.table)
