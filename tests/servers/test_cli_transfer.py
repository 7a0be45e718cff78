"""The admin CLI moves sessions between backends without changing a byte."""

from __future__ import annotations

import asyncio
import io
import sys
import uuid
from pathlib import Path

import pytest

from agent_sessions import Item
from agent_sessions.cli import main
from agent_sessions.urls import open_store

SESSIONS: dict[str, list[Item]] = {
    "user 'one'; DROP TABLE x": [
        {"role": "user", "content": "héllo 👋 \u0000 end"},
        {"zeta": 1, "alpha": {"b": [1, 2.5, None, True], "a": 1e16}},
    ],
    "ユーザー-2": [{"type": "message", "content": [{"type": "text", "text": "x" * 5000}]}],
    "3": [{"n": i} for i in range(30)],
}


def _with_option(url: str, name: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{name}={value}"


def _cli(argv: list[str], stdin: str, capsys: pytest.CaptureFixture[str]) -> str:
    original = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        status = main(argv)
    finally:
        sys.stdin = original
    out, err = capsys.readouterr()
    assert status == 0, err
    return out


def test_export_import_through_sqlite_postgres_and_redis_keeps_identical_bytes(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    redis_url: str,
    redis_prefix: str,
    database_url: str,
    fresh_postgres_table: str,
) -> None:
    sqlite_url = f"sqlite:///{tmp_path / 'source.db'}"
    postgres_url = _with_option(database_url, "table", fresh_postgres_table)
    redis_run_url = _with_option(redis_url, "key_prefix", f"{redis_prefix}cli-{uuid.uuid4().hex}:")

    async def fill() -> None:
        store = open_store(sqlite_url)
        for session_id, items in SESSIONS.items():
            await store.session(session_id).add_items(items)
        await store.close()

    asyncio.run(fill())
    from_sqlite = _cli(["export", sqlite_url], "", capsys)
    assert len(from_sqlite.splitlines()) == 33
    _cli(["import", postgres_url], from_sqlite, capsys)
    from_postgres = _cli(["export", postgres_url], "", capsys)
    _cli(["import", redis_run_url], from_postgres, capsys)
    from_redis = _cli(["export", redis_run_url], "", capsys)
    assert from_sqlite.encode() == from_postgres.encode() == from_redis.encode()
