"""Migration from the OpenAI Agents SDK's stores: databases and keys written by the real
SDK (its SQLiteSession and RedisSession) in each test, migrated with
``agent-sessions migrate-sdk`` into our SQLite, Redis and PostgreSQL backends."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import agents
import pytest
from agents.extensions.memory import RedisSession as SDKRedisSession

from agent_sessions import Item, open_store
from agent_sessions.cli import main
from agent_sessions.migrate import MigrationError, read_sdk_sqlite

BIG = "long " * 20_000
SESSIONS: dict[str, list[Item]] = {
    "user_123": [
        {"role": "user", "content": "Hi, I'm planning a trip to Japan 🗾"},
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "桜の季節は最高です", "annotations": []}],
        },
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "…"}]},
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "weather",
            "arguments": '{"city": "Kyōto"}',
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "晴れ ☀"},
    ],
    "émoji 🎉 id with spaces": [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "مرحبا שלום e\u0301"},
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,AAAA",
                    "detail": "auto",
                },
            ],
        },
        {"role": "assistant", "content": BIG},
        {"role": "user", "content": "numbers", "meta": {"n": [1, -2.5, 1e100, 2**62, None, True]}},
    ],
    "quote' \" ; DROP TABLE x; --": [{"role": "user", "content": ""}],
    "a:b:c": [{"role": "user", "content": "colons in the id"}],
}


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty store of ours, as a session URL."""
    unique = uuid.uuid4().hex[:12]
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ours.db'}"
    elif request.param == "redis":
        prefix = f"agent_sessions_test:{unique}:"
        yield f"{request.getfixturevalue('redis_url')}?key_prefix={prefix}"
        asyncio.run(_delete_redis_keys(request.getfixturevalue("redis_url"), prefix))
    else:
        table = f"test_migrated_{unique}"
        request.getfixturevalue("postgres_tables").append(table)
        yield f"{request.getfixturevalue('database_url')}?table={table}"


@pytest.fixture
def sdk_prefix(redis_url: str) -> Iterator[str]:
    """A key prefix for the SDK's RedisSession, deleted afterwards."""
    prefix = f"agent_sessions_test:{uuid.uuid4().hex[:12]}:sdk"
    yield prefix
    asyncio.run(_delete_redis_keys(redis_url, prefix))


async def _delete_redis_keys(url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        async for key in client.scan_iter(match=prefix.replace(":", "\\:") + "*"):
            await client.delete(key)
    finally:
        await client.aclose()


def write_sdk_sqlite(
    path: Path,
    sessions: dict[str, list[Item]],
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
) -> None:
    """``sessions`` written by the SDK's own SQLiteSession."""

    async def write() -> None:
        for session_id, items in sessions.items():
            session = agents.SQLiteSession(session_id, path, sessions_table, messages_table)
            await session.add_items(items)  # type: ignore[arg-type]
            session.close()

    asyncio.run(write())


def read_sdk_sqlite_sessions(
    path: Path,
    session_ids: list[str],
    sessions_table: str = "agent_sessions",
    messages_table: str = "agent_messages",
) -> Any:
    """What the SDK itself reads back: the reference a migration must reproduce."""

    async def read() -> dict[str, list[Any]]:
        found = {}
        for session_id in session_ids:
            session = agents.SQLiteSession(session_id, path, sessions_table, messages_table)
            found[session_id] = await session.get_items()
            session.close()
        return found

    return asyncio.run(read())


def read_ours(url: str, session_ids: list[str]) -> dict[str, list[Item]]:
    async def read() -> dict[str, list[Item]]:
        store = open_store(url)
        try:
            return {sid: await store.session(sid).get_items() for sid in session_ids}
        finally:
            await store.close()

    return asyncio.run(read())


def add_ours(url: str, session_id: str, items: list[Item]) -> None:
    async def add() -> None:
        store = open_store(url)
        try:
            await store.session(session_id).add_items(items)
        finally:
            await store.close()

    asyncio.run(add())


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["migrate-sdk", *argv])
    out, err = capsys.readouterr()
    return status, out, err


IDS = list(SESSIONS)


def test_sdk_sqlite_database_migrates_losslessly_and_idempotently(
    target_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "conversations.db"
    write_sdk_sqlite(db, SESSIONS)
    expected = read_sdk_sqlite_sessions(db, IDS)

    status, out, err = run_cli(capsys, str(db), target_url)
    assert (status, err) == (0, "")
    assert read_ours(target_url, IDS) == expected
    assert expected == SESSIONS  # every field, in order
    assert "4 sessions (4 copied, 0 appended, 0 unchanged): wrote 10 items" in out

    status, out, _ = run_cli(capsys, str(db), target_url)
    assert status == 0
    assert "4 sessions (0 copied, 0 appended, 4 unchanged): wrote 0 items" in out
    assert read_ours(target_url, IDS) == expected


def test_custom_table_names_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "conversations.db"
    tables = ("chat_sessions", "chat_messages")
    write_sdk_sqlite(db, {"u": SESSIONS["user_123"]}, *tables)
    target = f"sqlite:///{tmp_path / 'ours.db'}"

    status, _, err = run_cli(capsys, str(db), target)
    assert status == 1
    assert "has no table 'agent_sessions'" in err
    assert "--messages-table" in err

    argv = ["--sessions-table", "chat_sessions", "--messages-table", "chat_messages"]
    status, _, _ = run_cli(capsys, str(db), target, *argv)
    assert status == 0
    assert read_ours(target, ["u"]) == read_sdk_sqlite_sessions(db, ["u"], *tables)


def test_migrating_into_the_same_file_leaves_the_sdk_data_readable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "conversations.db"
    write_sdk_sqlite(db, {"user_123": SESSIONS["user_123"]})
    before = read_sdk_sqlite_sessions(db, ["user_123"])

    status, _, _ = run_cli(capsys, str(db), f"sqlite:///{db}")

    assert status == 0
    assert read_ours(f"sqlite:///{db}", ["user_123"]) == before
    assert read_sdk_sqlite_sessions(db, ["user_123"]) == before


def test_a_session_the_sdk_grew_since_gets_only_its_new_items(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, target = tmp_path / "conversations.db", f"sqlite:///{tmp_path / 'ours.db'}"
    write_sdk_sqlite(db, {"u": SESSIONS["user_123"][:2]})
    assert run_cli(capsys, str(db), target)[0] == 0
    write_sdk_sqlite(db, {"u": SESSIONS["user_123"][2:]})  # the SDK app kept running

    status, out, _ = run_cli(capsys, str(db), target)

    assert status == 0
    assert "appended  u: 3 of 5 items" in out
    assert read_ours(target, ["u"])["u"] == SESSIONS["user_123"]


def test_a_conflicting_target_session_refuses_the_whole_migration(
    target_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "conversations.db"
    write_sdk_sqlite(db, SESSIONS)
    add_ours(target_url, "user_123", [{"role": "user", "content": "something else"}])

    status, _, err = run_cli(capsys, str(db), target_url)

    assert status == 1
    assert "nothing was migrated" in err
    assert "'user_123'" in err
    found = read_ours(target_url, IDS)
    assert found.pop("user_123") == [{"role": "user", "content": "something else"}]
    assert all(items == [] for items in found.values())  # no other session was written


def test_rows_that_are_not_items_are_refused_or_skipped_and_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, target = tmp_path / "conversations.db", f"sqlite:///{tmp_path / 'ours.db'}"
    write_sdk_sqlite(db, {"u": SESSIONS["user_123"][:1]})
    with sqlite3.connect(db) as connection:  # what a crashed or foreign writer leaves
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('u', '{')"
        )
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('u', '[1]')"
        )
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('u', ?)",
            ('{"role": "user", "content": "after"}',),
        )
    connection.close()

    status, _, err = run_cli(capsys, str(db), target)
    assert status == 1
    assert "2 stored rows" in err
    assert "row id 2: not JSON" in err
    assert "row id 3" in err
    assert "--skip-invalid" in err
    assert read_ours(target, ["u"]) == {"u": []}

    write_sdk_sqlite(db, {"clean": [{"role": "user", "content": "fine"}]})
    status, _, _ = run_cli(capsys, str(db), target, "--session", "clean")
    assert status == 0  # the invalid rows belong to another session
    assert read_ours(target, ["clean", "u"]) == {
        "clean": [{"role": "user", "content": "fine"}],
        "u": [],
    }

    status, out, err = run_cli(capsys, str(db), target, "--skip-invalid")
    assert status == 0
    assert "skipped   u: row id 2: not JSON" in err
    assert "skipped   u: row id 3" in err
    assert "skipped 2 invalid rows" in out
    assert read_ours(target, ["u"])["u"] == [
        SESSIONS["user_123"][0],
        {"role": "user", "content": "after"},
    ]


def test_dry_run_and_session_filter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, target = tmp_path / "conversations.db", f"sqlite:///{tmp_path / 'ours.db'}"
    write_sdk_sqlite(db, SESSIONS)

    status, out, _ = run_cli(capsys, str(db), target, "--dry-run")
    assert status == 0
    assert "would write 10 items" in out
    assert all(items == [] for items in read_ours(target, IDS).values())

    status, out, _ = run_cli(capsys, str(db), target, "--session", "a:b:c")
    assert status == 0
    assert "1 sessions (1 copied" in out
    assert read_ours(target, ["a:b:c", "user_123"]) == {
        "a:b:c": SESSIONS["a:b:c"],
        "user_123": [],
    }

    status, _, err = run_cli(capsys, str(db), target, "--session", "nobody")
    assert status == 1
    assert "no such session in" in err
    assert err.rstrip().endswith("agent_messages: nobody")


def test_a_missing_source_is_an_error_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.db"
    status, _, err = run_cli(capsys, str(missing), f"sqlite:///{tmp_path / 'ours.db'}")
    assert status == 1
    assert "no SQLite database at" in err
    assert not missing.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["x.db", "sqlite://", "--key-prefix", "p"], "--key-prefix is for a Redis source"),
        (["http://x", "sqlite://"], "SOURCE must be a SQLite file or a redis:// URL"),
        (["x.db", "sqlite://", "--messages-table", "bad name"], "must be an SQL identifier"),
    ],
)
def test_bad_arguments_are_clear_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, _, err = run_cli(capsys, *argv)
    assert status == 1
    assert message in err


async def test_read_sdk_sqlite_refuses_a_database_without_the_sdk_tables(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    sqlite3.connect(db).close()
    with pytest.raises(MigrationError, match="no table 'agent_sessions'"):
        await read_sdk_sqlite(db)


def write_sdk_redis(url: str, prefix: str, sessions: dict[str, list[Item]]) -> None:
    async def write() -> None:
        for session_id, items in sessions.items():
            session = SDKRedisSession.from_url(session_id, url=url, key_prefix=prefix)
            await session.add_items(items)  # type: ignore[arg-type]
            await session.close()

    asyncio.run(write())


def read_sdk_redis_sessions(url: str, prefix: str, session_ids: list[str]) -> Any:
    async def read() -> dict[str, list[Any]]:
        found = {}
        for session_id in session_ids:
            session = SDKRedisSession.from_url(session_id, url=url, key_prefix=prefix)
            found[session_id] = await session.get_items()
            await session.close()
        return found

    return asyncio.run(read())


def test_sdk_redis_keys_migrate_losslessly_and_idempotently(
    target_url: str, redis_url: str, sdk_prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write_sdk_redis(redis_url, sdk_prefix, SESSIONS)
    expected = read_sdk_redis_sessions(redis_url, sdk_prefix, list(SESSIONS))
    assert expected == SESSIONS

    status, out, err = run_cli(capsys, redis_url, target_url, "--key-prefix", sdk_prefix)
    assert (status, err) == (0, "")
    assert "4 sessions (4 copied, 0 appended, 0 unchanged): wrote 10 items" in out
    assert read_ours(target_url, list(SESSIONS)) == SESSIONS

    status, out, _ = run_cli(capsys, redis_url, target_url, "--key-prefix", sdk_prefix)
    assert status == 0
    assert "wrote 0 items" in out
    assert read_ours(target_url, list(SESSIONS)) == SESSIONS
    assert read_sdk_redis_sessions(redis_url, sdk_prefix, list(SESSIONS)) == SESSIONS


def test_invalid_redis_entries_are_refused_with_their_place(
    redis_url: str, sdk_prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import redis

    write_sdk_redis(redis_url, sdk_prefix, {"u": [{"role": "user", "content": "ok"}]})
    client = redis.Redis.from_url(redis_url)
    client.rpush(f"{sdk_prefix}:u:messages", b"\xff not utf-8")
    client.close()
    target = f"sqlite:///{tmp_path / 'ours.db'}"

    status, _, err = run_cli(capsys, redis_url, target, "--key-prefix", sdk_prefix)

    assert status == 1
    assert "session 'u' list index 1: not JSON" in err
    assert read_ours(target, ["u"]) == {"u": []}


async def test_our_runner_continues_a_migrated_conversation(tmp_path: Path) -> None:
    from agent_sessions import Agent, OfflineModel, Runner, SQLiteSession
    from agent_sessions.migrate import migrate

    db = tmp_path / "conversations.db"
    sdk_session = agents.SQLiteSession("user_123", db)
    await sdk_session.add_items(SESSIONS["user_123"][:2])  # type: ignore[arg-type]
    await sdk_session.add_items([{"role": "user", "content": "My name is Ada."}])
    sdk_session.close()
    # Opened as it is, the file's SDK tables are used in place: nothing to migrate.
    store = open_store(f"sqlite:///{db}")
    try:
        report = await migrate(await read_sdk_sqlite(db), store)
    finally:
        await store.close()
    assert [(o.session_id, o.action, o.written) for o in report.sessions] == [
        ("user_123", "unchanged", 0)
    ]
    # Into this library's own tables in the same file (what migrate-sdk does).
    store = open_store(f"sqlite:///{db}?layout=native")
    try:
        report = await migrate(await read_sdk_sqlite(db), store)
    finally:
        await store.close()
    assert [(o.session_id, o.action, o.written) for o in report.sessions] == [
        ("user_123", "copied", 3)
    ]

    async with SQLiteSession("user_123", db) as session:
        agent = Agent(name="Assistant", model=OfflineModel())
        result = await Runner.run(agent, "What is my name?", session=session)
        assert "My name is Ada." in result.final_output
        assert "Hi, I'm planning a trip to Japan 🗾" in result.final_output
        assert len(await session.get_items()) == 5

    store = open_store(f"sqlite:///{db}")
    try:  # the conversation went on in our store: migrating again leaves it alone
        again = await migrate(await read_sdk_sqlite(db), store)
        assert len(await store.session("user_123").get_items()) == 5
    finally:
        await store.close()
    assert [(o.action, o.written) for o in again.sessions] == [("unchanged", 0)]
