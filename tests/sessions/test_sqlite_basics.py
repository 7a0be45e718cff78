"""SQLite-specific behaviour that the conformance kit does not cover: stores and files."""

from __future__ import annotations

from pathlib import Path

from agent_sessions import SQLiteSession, SQLiteStore


async def test_file_session_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    async with SQLiteSession("user", path) as session:
        await session.add_items([{"role": "user", "content": "hi"}])
    async with SQLiteSession("user", path) as reopened:
        assert await reopened.get_items() == [{"role": "user", "content": "hi"}]


async def test_file_sessions_on_one_path_share_a_store(tmp_path: Path) -> None:
    first = SQLiteSession("a", tmp_path / "x.db")
    second = SQLiteSession("b", str(tmp_path / "x.db"))
    try:
        assert first.store is second.store
    finally:
        await first.close()
        await second.close()


async def test_memory_sessions_do_not_share_without_a_store() -> None:
    async with SQLiteSession("same") as first, SQLiteSession("same") as second:
        await first.add_items([{"n": 1}])
        assert await second.get_items() == []


async def test_sessions_on_a_given_memory_store_share_it() -> None:
    async with SQLiteStore() as store:
        await store.session("same").add_items([{"n": 1}])
        assert await store.session("same").get_items() == [{"n": 1}]
