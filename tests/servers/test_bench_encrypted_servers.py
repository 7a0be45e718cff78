"""``benchmarks/sessions.py``'s encrypted server rows (``--encrypted-servers``): each
``EncryptedSession`` over its own plain session on Redis, PostgreSQL and MariaDB, ours beside
the Agents SDK's. A run at tiny sizes fills every cell of the table and leaves no table or
key behind; each encrypted target wraps the plain session it is compared with, and what it
stores there is not the plaintext."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import redis.asyncio as aioredis
import sqlalchemy as sa
from agents.extensions.memory import EncryptedSession as SDKEncryptedSession
from sqlalchemy.ext.asyncio import create_async_engine

from agent_sessions.encrypted import EncryptedSession, generate_key

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sessions.py"


def _load_script() -> ModuleType:
    name = "benchmarks_sessions_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up while created
    spec.loader.exec_module(module)
    return module


bench = _load_script()


@pytest.fixture
def servers(
    redis_url: str, database_url: str, mysql_url: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str, str]:
    """The three servers, named to the script as its own environment names them."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("MYSQL_URL", mysql_url)
    return redis_url, database_url, mysql_url


TINY = bench.ServerSizes(
    single_adds=3, history=25, limited_reads=3, pops=3, writers=2, adds_per_writer=2
)


async def test_every_cell_of_the_encrypted_server_table_is_measured(
    servers: tuple[str, str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    await bench.run_encrypted_servers(TINY, 1, bench.SERVERS)
    out = capsys.readouterr().out
    assert "skipping" not in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " | " in line]
    header, body = rows[0], rows[1:]
    assert "SDK encrypted" in header
    assert "overhead over plain: SDK's / ours" in header
    expected = {
        (workload, label)
        for workload in bench.ENCRYPTED_SERVER_WORKLOADS
        for _, label in bench.ENCRYPTED_SERVERS.values()
    }
    seen = set()
    for row in body:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 9, row
        assert "-" not in cells, row  # every time, ratio and overhead there
        assert all(part != "-" for part in cells[-1].split(" / ")), row
        seen.add((cells[0], cells[1]))
    assert seen == expected
    for server in bench.SERVERS:
        for role in bench.ENCRYPTED_ROLES:
            assert f"round trips per call, {role} on {server}: add_items " in out
    await _assert_nothing_left(*servers)


async def _assert_nothing_left(redis_url: str, database_url: str, mysql_url: str) -> None:
    """No key or table of this process's runs (the script names them after its pid)."""
    marker = f"{os.getpid()}_"
    async with aioredis.Redis.from_url(redis_url) as client:
        keys = [key async for key in client.scan_iter(match=f"bench*{marker}*", count=1000)]
    assert keys == []
    postgres = "postgresql+psycopg://" + database_url.split("://", 1)[1]
    for url in (postgres, mysql_url):
        engine = create_async_engine(url)
        try:
            async with engine.connect() as conn:
                names = await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names())
        finally:
            await engine.dispose()
        assert [name for name in names if name.startswith("bench") and marker in name] == []


async def test_each_encrypted_target_wraps_its_own_plain_session(
    servers: tuple[str, str, str],
) -> None:
    plain_targets = bench.server_targets(*servers)
    targets = bench.encrypted_server_targets(plain_targets, generate_key())
    assert [(t.server, t.implementation) for t in targets] == [
        (server, role) for server in bench.ENCRYPTED_SERVERS for role in bench.ENCRYPTED_ROLES
    ]
    for plain, wrapped in zip(targets[::2], targets[1::2], strict=True):
        assert wrapped.implementation == f"{plain.implementation} encrypted"
        async with plain.connect(plain.url) as plain_sessions:
            plain_type = type(plain_sessions("type"))
        async with wrapped.connect(wrapped.url) as sessions:
            session: Any = sessions(f"wrapped-{os.getpid()}")
            underlying: Any
            if plain.implementation == "sdk":
                assert isinstance(session, SDKEncryptedSession)
                underlying = session.underlying_session
            else:
                assert isinstance(session, EncryptedSession)
                underlying = session.session
            assert type(underlying) is plain_type, wrapped
            await session.add_items([{"role": "user", "content": "a secret"}])
            assert await session.get_items(limit=10) == [{"role": "user", "content": "a secret"}]
            stored = await underlying.get_items()
            assert len(stored) == 1
            assert "secret" not in json.dumps(stored), wrapped
            assert await session.pop_item() == {"role": "user", "content": "a secret"}
            assert await underlying.get_items() == []
