"""PostgreSQL specifics the conformance kit does not cover: schema, migrations, exact
JSON text, ownership, cancellation while waiting for the session's write lock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from agent_sessions import SessionClosedError, SessionConfigError, SessionError
from agent_sessions.postgres import (
    MIGRATIONS_TABLE,
    SCHEMA_VERSION,
    PostgresSession,
    PostgresStore,
)

UNUSED_URL = "postgresql://postgres@127.0.0.1:1/none"  # for checks that fail before connecting


@pytest.fixture
async def store(database_url: str, postgres_table: str) -> AsyncIterator[PostgresStore]:
    async with PostgresStore(database_url, table=postgres_table) as opened:
        yield opened


def _new_id() -> str:
    return f"pg-{uuid.uuid4().hex}"


async def test_first_use_creates_the_table_and_records_its_version(
    database_url: str, fresh_postgres_table: str
) -> None:
    async with PostgresStore(database_url, table=fresh_postgres_table) as store:
        await store.session(_new_id()).get_items()
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        cursor = await conn.execute(
            f"SELECT version FROM {MIGRATIONS_TABLE} WHERE table_name = %s",
            (fresh_postgres_table,),
        )
        assert await cursor.fetchall() == [(SCHEMA_VERSION,)]
        cursor = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (fresh_postgres_table,)
        )
        index_definitions = [row[0] for row in await cursor.fetchall()]
    assert any("(session_id, id)" in definition for definition in index_definitions)


async def test_table_of_a_newer_schema_version_is_refused(
    database_url: str, fresh_postgres_table: str
) -> None:
    async with PostgresStore(database_url, table=fresh_postgres_table) as store:
        await store.session(_new_id()).add_items([{"n": 1}])
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            f"INSERT INTO {MIGRATIONS_TABLE} (table_name, version) VALUES (%s, %s)",
            (fresh_postgres_table, SCHEMA_VERSION + 1),
        )
    async with PostgresStore(database_url, table=fresh_postgres_table) as store:
        with pytest.raises(SessionError, match=f"schema version {SCHEMA_VERSION + 1}"):
            await store.session(_new_id()).get_items()


@pytest.mark.parametrize("table", ["items; DROP TABLE x", "1items", "", "a" * 64, "x.y"])
def test_table_name_must_be_a_plain_identifier(table: str) -> None:
    with pytest.raises(ValueError, match="table must be a plain SQL identifier"):
        PostgresStore(UNUSED_URL, table=table)


async def test_items_come_back_with_their_exact_json_text(store: PostgresStore) -> None:
    # jsonb would reorder these keys, turn 1e16 into an int and refuse the NUL.
    item = {"zeta": 1, "alpha": {"b": 2, "a": 1}, "big": 1e16, "nul": "a\u0000b"}
    session = store.session(_new_id())
    await session.add_items([item])
    [stored] = await session.get_items()
    assert list(stored) == ["zeta", "alpha", "big", "nul"]
    assert list(stored["alpha"]) == ["b", "a"]
    assert stored["big"] == 1e16
    assert isinstance(stored["big"], float)
    assert stored["nul"] == "a\u0000b"


async def test_pop_item_discards_newest_rows_that_are_not_objects(
    store: PostgresStore, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    # The kit's corrupt-row tests write text that is not JSON, which a json column refuses;
    # JSON that is not an object is the corruption a foreign writer can still store.
    session = store.session(_new_id())
    await session.add_items([{"n": 1}, {"n": 2}])
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for raw in ("[1, 2]", '"a string"'):
            await conn.execute(
                f"INSERT INTO {store.table} (session_id, payload) VALUES (%s, %s::json)",
                (session.session_id, raw),
            )
    assert await session.get_items() == [{"n": 1}, {"n": 2}]
    assert await session.pop_item() == {"n": 2}
    assert await session.get_items() == [{"n": 1}]
    assert "skipping corrupt session item" in caplog.text


async def test_add_items_waits_for_a_writer_holding_the_session_lock_and_cancels_cleanly(
    store: PostgresStore, database_url: str
) -> None:
    session = store.session(_new_id())
    await session.add_items([{"n": 0}])
    async with await psycopg.AsyncConnection.connect(database_url) as other_writer:
        await other_writer.execute(
            "SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
            (store._queries.lock_class, session.session_id),
        )
        waiting = asyncio.create_task(session.add_items([{"n": 1}, {"n": 2}]))
        # Observed, not slept for: PostgreSQL shows the write waiting for that very lock.
        for _ in range(500):  # at most about 10 s
            cursor = await other_writer.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                " AND classid = %s::int4::oid AND objid = hashtext(%s)::oid AND objsubid = 2",
                (store._queries.lock_class, session.session_id),
            )
            row = await cursor.fetchone()
            if (row is not None and row[0] == 1) or waiting.done():
                break
            await asyncio.sleep(0.02)
        assert row == (1,), "the write never waited for the session lock"
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await other_writer.rollback()
    await session.add_items([{"n": 3}])
    assert await session.get_items() == [{"n": 0}, {"n": 3}]


async def test_closing_the_store_leaves_an_injected_pool_open(
    database_url: str, postgres_table: str
) -> None:
    async with AsyncConnectionPool(
        database_url, min_size=1, kwargs={"autocommit": True}, open=False
    ) as pool:
        store = PostgresStore(pool=pool, table=postgres_table)
        await store.session(_new_id()).add_items([{"n": 1}])
        await store.close()
        async with pool.connection() as conn:
            await conn.execute("SELECT 1")


async def test_injected_pool_without_autocommit_is_refused_clearly(
    database_url: str, postgres_table: str
) -> None:
    async with AsyncConnectionPool(database_url, min_size=1, open=False) as pool:
        store = PostgresStore(pool=pool, table=postgres_table)
        with pytest.raises(SessionError, match="must be in autocommit mode"):
            await store.session(_new_id()).add_items([{"n": 1}])


async def test_sessions_of_a_closed_store_raise_session_closed_error(
    store: PostgresStore,
) -> None:
    session = store.session(_new_id())
    await store.close()
    with pytest.raises(SessionClosedError, match="PostgresStore"):
        await session.get_items()


async def test_session_with_its_own_url_closes_its_store(
    database_url: str, postgres_table: str
) -> None:
    session = PostgresSession(_new_id(), database_url, table=postgres_table)
    await session.add_items([{"n": 1}])
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.store.session("other").get_items()


def test_missing_driver_raises_import_error_with_install_hint() -> None:
    code = "import sys; sys.modules['psycopg'] = None; import agent_sessions.postgres"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0
    assert 'pip install "agent-sessions[postgres]"' in result.stderr


def test_session_on_a_store_refuses_settings_of_its_own() -> None:
    store = PostgresStore(UNUSED_URL)
    with pytest.raises(SessionConfigError, match="pass either store= or table, not both"):
        PostgresSession("s", store=store, table="other")


def test_plain_close_releases_the_connections_of_a_session_of_its_own(
    database_url: str, postgres_table: str
) -> None:
    """``close()`` without ``await``, as the Agents SDK's examples call it, in a sync
    program (``asyncio.run`` per call): the server sees the session's connections go."""
    name = f"plain-close-{uuid.uuid4().hex[:8]}"
    separator = "&" if "?" in database_url else "?"
    session = PostgresSession(
        f"u-{name}", url=f"{database_url}{separator}application_name={name}", table=postgres_table
    )
    asyncio.run(session.add_items([{"n": 1}]))
    assert asyncio.run(session.get_items()) == [{"n": 1}]

    def connected() -> int:
        with psycopg.connect(database_url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
            ).fetchone()
            return int(row[0]) if row else 0

    assert connected() >= 1
    session.close()
    for _ in range(100):  # the server notices a closed socket at once; bounded: 5 s
        if connected() == 0:
            break
        time.sleep(0.05)
    assert connected() == 0
