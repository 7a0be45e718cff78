"""BranchingSession over the real PostgreSQL (DATABASE_URL): the conformance kit on the
current branch (in child processes too, on a failing server, with corrupt rows), and a
branch with usage in PostgreSQL rows."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
from psycopg import sql

from agent_sessions import Session, SessionSettings
from agent_sessions.branches import BranchingSession, Usage, branch_session_id
from agent_sessions.items import assistant_message, user_message
from agent_sessions.postgres import PostgresSession, PostgresStore
from agent_sessions.testing import SessionConformance

from .test_conformance import UNREACHABLE_SECRET, unreachable_url


def open_branching_postgres(session_id: str, *, url: str, table: str) -> BranchingSession:
    """A branching session on PostgreSQL (module level: child processes call it)."""
    return BranchingSession(functools.partial(PostgresSession, url=url, table=table), session_id)


class TestBranchingPostgresSession(SessionConformance):
    supports_processes = True
    url: str
    failing_url: str
    table: str
    store: PostgresStore
    failing_stores: list[PostgresStore]

    @pytest.fixture(autouse=True)
    async def postgres_store(self, database_url: str, postgres_table: str) -> AsyncIterator[None]:
        self.url, self.table = database_url, postgres_table
        self.failing_stores = []
        async with PostgresStore(database_url, table=postgres_table) as store:
            self.store = store
            yield
        for failing in self.failing_stores:
            await failing.close()

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return BranchingSession(self.store, session_id, session_settings=session_settings)

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(open_branching_postgres, url=self.url, table=self.table)

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        failing = PostgresStore(self.failing_url, table=self.table, connect_timeout=1)
        self.failing_stores.append(failing)
        return BranchingSession(failing, session_id)

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
    session = BranchingSession(store, "chat-" + store.table)
    session_id = session.session_id
    await session.add_items([user_message("a"), assistant_message("1")])
    await session.add_items([user_message("b"), assistant_message("2")])
    await session.record_usage({"input_tokens": 4, "output_tokens": 2})
    assert await session.branch_from(1, "edit") == user_message("b")
    await session.add_items([user_message("b2")])
    await session.record_usage({"requests": 1, "input_tokens": 9, "output_tokens": 3})
    branch = store.session(branch_session_id(session_id, "edit"))
    assert await branch.get_items() == [
        user_message("a"),
        assistant_message("1"),
        user_message("b2"),
    ]
    assert len(await store.session(session_id).get_items()) == 4
    again = BranchingSession(store, session_id)
    assert await again.current_branch() == "edit"
    assert await again.usage() == Usage(1, 13, 5, 18)
    assert await again.usage_by_turn("main") == {1: Usage(0, 4, 2, 6)}
    await again.switch("main")
    await again.delete_branch("edit")
    assert await branch.get_items() == []
    assert [info.name for info in await BranchingSession(store, session_id).list_branches()] == [
        "main"
    ]
