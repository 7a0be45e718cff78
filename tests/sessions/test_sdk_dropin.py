"""The Agents SDK's ``SQLiteSession`` code, run on ours with only the import line changed
(issue 23: its constructor, ``db_path``, the default ``session_settings``, plain ``close()``).

The real SDK (``openai-agents``) is imported here; where a case needs the SDK absent, it
runs in a fresh interpreter."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import agents
import pytest
from agents import Agent, Runner
from agents.extensions.memory import EncryptedSession

from agent_sessions import SessionClosedError, SessionConfigError, SessionSettings, SQLiteSession
from agent_sessions.sqlite import SQLiteStore

from .test_agents_sdk import NO_TRACING, ScriptedModel, contents


def numbered(count: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"m{n}"} for n in range(count)]


# -- the constructor, positionally and by keyword ---------------------------------------------


async def test_the_sdks_five_positional_arguments(tmp_path: Path) -> None:
    path = tmp_path / "five.db"
    sdk_settings: Any = agents.SessionSettings(limit=2)  # not our type: mypy would refuse it
    session = SQLiteSession("u", path, "agent_sessions", "agent_messages", sdk_settings)
    await session.add_items(numbered(3))
    assert await session.get_items() == numbered(3)[1:]
    assert session.session_settings.limit == 2
    await session.close()


async def test_the_sdks_keywords() -> None:
    session = SQLiteSession(
        session_id="u",
        db_path=":memory:",
        sessions_table="agent_sessions",
        messages_table="agent_messages",
        session_settings=SessionSettings(limit=1),
    )
    await session.add_items(numbered(2))
    assert await session.get_items() == numbered(2)[1:]


def test_db_path_is_what_was_given(tmp_path: Path) -> None:
    assert SQLiteSession("u").db_path == ":memory:"
    given = tmp_path / "given.db"
    assert SQLiteSession("u", given).db_path == given
    assert SQLiteSession("u", str(given)).db_path == str(given)
    store = SQLiteStore(given)
    assert SQLiteSession("u", store=store).db_path == store.db_path


async def test_custom_table_names_in_memory_are_accepted() -> None:
    session = SQLiteSession("u", ":memory:", sessions_table="s", messages_table="m")
    await session.add_items(numbered(2))
    assert await session.get_items() == numbered(2)
    assert await session.pop_item() == numbered(2)[1]


async def test_custom_table_names_on_a_file_use_the_sdks_tables(tmp_path: Path) -> None:
    path = tmp_path / "sdk.db"
    theirs = agents.SQLiteSession("u", path, "s", "m")
    items: Any = numbered(2)
    await theirs.add_items(items)
    session = SQLiteSession("u", path, sessions_table="s", messages_table="m")
    assert await session.get_items() == numbered(2)
    await session.close()
    theirs.close()


@pytest.mark.parametrize("bad", ["", "1st", "drop table x;", "sqlite_master", 3])
def test_table_names_must_be_identifiers(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="sessions_table"):
        SQLiteSession("u", sessions_table=bad)


def test_custom_table_names_with_a_store_are_refused() -> None:
    with pytest.raises(SessionConfigError, match="messages_table"):
        SQLiteSession("u", messages_table="m", store=SQLiteStore())


# -- the default session_settings ---------------------------------------------------------------


async def test_default_settings_have_a_limit_of_none() -> None:
    session = SQLiteSession("u")
    assert session.session_settings is not None
    assert session.session_settings.limit is None
    await session.add_items(numbered(3))
    assert await session.get_items() == numbered(3)


def test_default_settings_are_the_sdks_when_the_sdk_is_loaded() -> None:
    # What the SDK's wrappers check with isinstance (see test_encrypted_session_...).
    assert isinstance(SQLiteSession("u").session_settings, agents.SessionSettings)


def test_default_settings_are_ours_without_the_sdk() -> None:
    code = textwrap.dedent(
        """
        import sys
        from agent_sessions import SessionSettings, SQLiteSession
        settings = SQLiteSession("u").session_settings
        assert type(settings) is SessionSettings, type(settings)
        assert settings.limit is None
        assert "agents" not in sys.modules, "the SDK was imported"
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


async def test_settings_assigned_later_apply() -> None:
    session = SQLiteSession("u")
    await session.add_items(numbered(3))
    sdk_settings: Any = agents.SessionSettings(limit=1)
    session.session_settings = sdk_settings
    assert await session.get_items() == numbered(3)[2:]
    session.session_settings = None
    assert session.session_settings.limit is None
    assert await session.get_items() == numbered(3)


async def test_encrypted_session_over_default_settings_reads_and_writes() -> None:
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    underlying: Any = SQLiteSession("u")  # for mypy, see agent_sessions.sdk
    encrypted = EncryptedSession(session_id="u", underlying_session=underlying, encryption_key=key)
    items: Any = numbered(3)
    await encrypted.add_items(items)
    assert await encrypted.get_items() == numbered(3)
    assert await encrypted.get_items(limit=1) == numbered(3)[2:]


@pytest.mark.parametrize("kind", ["ours", "the SDK's"])
async def test_sdk_encrypted_session_accepts_explicit_settings(kind: str) -> None:
    """Issue 23: ``TypeError: session must be a SessionSettings instance or a dict``."""
    given: Any = SessionSettings(limit=5) if kind == "ours" else agents.SessionSettings(limit=5)
    underlying: Any = SQLiteSession("u", session_settings=given)
    assert isinstance(underlying.session_settings, agents.SessionSettings)
    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    encrypted = EncryptedSession(session_id="u", underlying_session=underlying, encryption_key=key)
    items: Any = numbered(8)
    await encrypted.add_items(items)
    assert await encrypted.get_items() == numbered(8)[3:]
    assert len(await underlying.get_items(limit=100)) == 8


async def test_explicit_sdk_settings_are_the_object_given_and_stay_live() -> None:
    given: Any = agents.SessionSettings(limit=2)
    session = SQLiteSession("u", session_settings=given)
    await session.add_items(numbered(4))
    assert await session.get_items() == numbered(4)[2:]
    given.limit = 1  # the SDK's settings are mutable, as on its own sessions
    assert await session.get_items() == numbered(4)[3:]
    assert session.session_settings is given


async def test_our_explicit_settings_read_as_one_sdk_object() -> None:
    session = SQLiteSession("u", session_settings=SessionSettings(limit=3))
    seen: Any = session.session_settings
    assert type(seen) is agents.SessionSettings
    assert seen.limit == 3
    assert session.session_settings is seen  # made once
    await session.add_items(numbered(5))
    seen.limit = 1
    assert await session.get_items() == numbered(5)[4:]
    session.session_settings = SessionSettings(limit=2)
    assert session.session_settings.limit == 2
    assert await session.get_items() == numbered(5)[3:]


async def test_the_sdks_runner_takes_our_explicit_settings() -> None:
    model = ScriptedModel()
    agent = Agent(name="A", instructions="Reply.", model=model)
    session: Any = SQLiteSession("u", session_settings=SessionSettings(limit=2))
    await session.add_items(numbered(4))
    await Runner.run(agent, "next", session=session, run_config=NO_TRACING)
    assert contents(model.inputs[0]) == [("user", "m2"), ("user", "m3"), ("user", "next")]


async def test_our_encrypted_session_settings_are_the_sdks_when_loaded() -> None:
    from agent_sessions.encrypted import EncryptedSession as OurEncrypted

    key = base64.urlsafe_b64encode(os.urandom(32)).decode()
    ours = OurEncrypted(SQLiteSession("u"), key=key, session_settings=SessionSettings(limit=1))
    assert isinstance(ours.session_settings, agents.SessionSettings)
    await ours.add_items(numbered(3))
    assert await ours.get_items() == numbered(3)[2:]


def test_explicit_settings_are_ours_without_the_sdk() -> None:
    code = textwrap.dedent(
        """
        import asyncio, sys
        from agent_sessions import SessionSettings, SQLiteSession
        from agent_sessions.encrypted import EncryptedSession
        session = SQLiteSession("u", session_settings=SessionSettings(limit=2))
        assert type(session.session_settings) is SessionSettings
        asyncio.run(session.add_items([{"n": n} for n in range(4)]))
        assert asyncio.run(session.get_items()) == [{"n": 2}, {"n": 3}]
        one = SessionSettings(limit=1)
        wrapped = EncryptedSession(session, key=b"k" * 32, session_settings=one)
        assert type(wrapped.session_settings) is SessionSettings
        assert "agents" not in sys.modules, "the SDK was imported"
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- close() as the SDK's examples call it ------------------------------------------------------


def test_plain_close_closes_a_memory_session() -> None:
    session = SQLiteSession("u")
    asyncio.run(session.add_items(numbered(1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        session.close()
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())


def open_files(path: Path) -> list[str]:
    """This process's open descriptors on ``path`` or its -wal/-shm files."""
    names = {str(path), f"{path}-wal", f"{path}-shm"}
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") in names:
                found.append(fd)
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc (Linux)")
@pytest.mark.parametrize("large", [False, True], ids=["inline", "after-a-worker-call"])
def test_plain_close_releases_the_shared_file_store(tmp_path: Path, large: bool) -> None:
    path = (tmp_path / "chat.db").resolve()
    session = SQLiteSession("u", path)
    other = SQLiteSession("v", path)  # the same shared store
    asyncio.run(session.add_items(numbered(3_000 if large else 2)))
    asyncio.run(other.get_items())
    assert open_files(path)
    session.close()  # as the SDK's examples do, without await
    assert open_files(path), "the other session still holds the store"
    assert asyncio.run(other.get_items()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "never awaited"
        other.close()
    assert open_files(path) == []  # the last one closed the store's connections at once
    assert other.store.closed
    again = SQLiteSession("u", path)  # a new store, the history there
    assert len(asyncio.run(again.get_items())) == (3_000 if large else 2)
    again.close()
    assert open_files(path) == []


async def test_plain_close_inside_a_running_loop_releases_the_file(tmp_path: Path) -> None:
    path = (tmp_path / "chat.db").resolve()
    session = SQLiteSession("u", path)
    await session.add_items(numbered(2))
    session.close()
    assert open_files(path) == []
    assert session.store.closed


def test_plain_close_of_a_store_closes_it(tmp_path: Path) -> None:
    path = (tmp_path / "chat.db").resolve()
    store = SQLiteStore(path)
    asyncio.run(store.session("u").add_items(numbered(2)))
    store.close()
    assert open_files(path) == []
    with pytest.raises(SessionClosedError):
        asyncio.run(store.session("u").get_items())


async def test_the_sdks_sqlite_example_runs_as_written(tmp_path: Path) -> None:
    """examples/memory/sqlite_session_example.py's shape, on a file, with a local model."""
    model = ScriptedModel()
    agent = Agent(name="Assistant", instructions="Reply very concisely.", model=model)
    # Any: mypy sees our Session and the SDK's as two types (see agent_sessions.sdk).
    session: Any = SQLiteSession("conversation_123", tmp_path / "conversation_history.db")
    await Runner.run(
        agent, "What city is the Golden Gate Bridge in?", session=session, run_config=NO_TRACING
    )
    await Runner.run(agent, "What state is it in?", session=session, run_config=NO_TRACING)
    assert contents(model.inputs[1]) == [
        ("user", "What city is the Golden Gate Bridge in?"),
        ("assistant", "reply 1"),
        ("user", "What state is it in?"),
    ]
    assert len(await session.get_items(limit=2)) == 2
    session.close()  # as the example does, without await
    with pytest.raises(SessionClosedError):
        await session.get_items()
