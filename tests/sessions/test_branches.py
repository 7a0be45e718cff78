"""BranchingSession: the conformance kit on the current branch over SQLite, and branches
(start at a turn, isolation, switch, delete, persistence) and usage after real runs."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_sessions import Session, SessionSettings, SQLiteStore
from agent_sessions.agent import Agent
from agent_sessions.branches import (
    BranchError,
    BranchingSession,
    Usage,
    branch_session_id,
    metadata_session_id,
)
from agent_sessions.items import message_role, message_text, user_message
from agent_sessions.models import OfflineModel
from agent_sessions.protocol import InvalidSessionIdError, Item
from agent_sessions.runner import Runner
from agent_sessions.testing import SessionConformance

from .test_sqlite_conformance import write_raw_row


class TestBranchingSQLite(SessionConformance):
    store: SQLiteStore
    not_a_database: Path
    failing_stores: list[SQLiteStore]

    @pytest.fixture(autouse=True)
    async def memory_store(self, tmp_path: Path) -> AsyncIterator[None]:
        self.not_a_database, self.failing_stores = tmp_path / "not-a-database.db", []
        async with SQLiteStore() as store:
            self.store = store
            yield
        for failing in self.failing_stores:
            await failing.close()

    def failing_store_address(self) -> tuple[str, str]:
        return str(self.not_a_database), ""

    async def create_failing_session(self, session_id: str) -> Session:
        self.not_a_database.write_bytes(b"not a SQLite database, " * 100)
        failing = SQLiteStore(self.not_a_database)
        self.failing_stores.append(failing)
        return BranchingSession(failing, session_id)

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return BranchingSession(self.store, session_id, session_settings=session_settings)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, BranchingSession)
        await write_raw_row(await session.current_session(), raw)


class TestBranchingOnABranchSQLite(TestBranchingSQLite):
    """The kit again, on a branch that is not main (an empty copy of a one-turn history)."""

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        session = BranchingSession(self.store, session_id, session_settings=session_settings)
        if await session.current_branch() == "main":
            main = self.store.session(session_id)
            if not await main.get_items(1):
                await main.add_items([user_message("seed")])
                await session.branch_from(0, "kit")
                await main.clear_session()
        return session


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore() as store:
        yield store


def sid() -> str:
    return f"user-{uuid.uuid4().hex}"


def user_texts(items: list[Item]) -> list[str]:
    return [message_text(item) for item in items if message_role(item) == "user"]


async def ask(session: BranchingSession, *questions: str) -> None:
    agent = Agent(name="helper", model=OfflineModel())
    for question in questions:
        await Runner.run(agent, question, session=session)


# -- branches --------------------------------------------------------------------------------


async def test_a_branch_starts_with_the_items_before_the_turn(store: SQLiteStore) -> None:
    session = BranchingSession(store, sid())
    await ask(session, "red", "green", "blue")
    main_items = await session.get_items()
    question = await session.branch_from(1, "retry")
    assert question == user_message("green")
    assert await session.current_branch() == "retry"
    branch_items = await session.get_items()
    assert branch_items == main_items[:2]  # turn 0: the user message and the reply
    await ask(session, "yellow")
    assert user_texts(await session.get_items()) == ["red", "yellow"]
    # The reply sees only the branch's history.
    assert "red" in message_text((await session.get_items())[-1])
    assert "green" not in message_text((await session.get_items())[-1])


async def test_branches_are_isolated_and_main_is_left_as_it_was(store: SQLiteStore) -> None:
    session_id = sid()
    session = BranchingSession(store, session_id)
    await ask(session, "one", "two")
    before = await store.session(session_id).get_items()
    await session.branch_from(0, "fresh")
    assert await session.get_items() == []
    await ask(session, "other")
    await session.pop_item()
    assert await store.session(session_id).get_items() == before  # main is the session itself
    await session.switch("main")
    assert await session.get_items() == before
    await session.add_items([user_message("more")])
    await session.switch("fresh")
    assert user_texts(await session.get_items()) == ["other"]
    stored = await store.session(branch_session_id(session_id, "fresh")).get_items()
    assert stored == await session.get_items()


async def test_branching_from_a_branch_and_listing(store: SQLiteStore) -> None:
    session = BranchingSession(store, sid())
    await ask(session, "a", "b", "c")
    await session.branch_from(2, "first")
    await ask(session, "d")
    await session.branch_from(1, "second", switch=False)
    assert await session.current_branch() == "first"
    listed = await session.list_branches()
    assert [(b.name, b.parent, b.turn, b.current) for b in listed] == [
        ("main", None, None, False),
        ("first", "main", 2, True),
        ("second", "first", 1, False),
    ]
    await session.switch("second")
    assert user_texts(await session.get_items()) == ["a"]


async def test_switch_and_branches_persist_for_a_new_handle(store: SQLiteStore) -> None:
    session_id = sid()
    session = BranchingSession(store, session_id)
    await ask(session, "x", "y")
    await session.branch_from(1, "alt")
    await ask(session, "z")
    again = BranchingSession(store, session_id)
    assert await again.current_branch() == "alt"
    assert user_texts(await again.get_items()) == ["x", "z"]
    await again.switch("main")
    assert await session.current_branch() == "alt"  # this handle reads the log once
    await session.refresh()
    assert await session.current_branch() == "main"


async def test_delete_removes_the_branch_and_its_items(store: SQLiteStore) -> None:
    session_id = sid()
    session = BranchingSession(store, session_id)
    await ask(session, "p", "q")
    await session.branch_from(1, "gone")
    await ask(session, "r")
    with pytest.raises(BranchError, match="current branch"):
        await session.delete_branch("gone")
    with pytest.raises(BranchError, match="main branch cannot"):
        await session.delete_branch("main")
    await session.switch("main")
    await session.delete_branch("gone")
    assert [b.name for b in await session.list_branches()] == ["main"]
    assert await store.session(branch_session_id(session_id, "gone")).get_items() == []
    with pytest.raises(BranchError, match="no branch 'gone'"):
        await session.switch("gone")
    # The name can be used again; the new branch starts from its own copy.
    await session.branch_from(0, "gone")
    assert await session.get_items() == []


async def test_bad_branch_operations_change_nothing(store: SQLiteStore) -> None:
    session_id = sid()
    session = BranchingSession(store, session_id, record_runs=False)
    await ask(session, "only")
    log = store.session(metadata_session_id(session_id))
    with pytest.raises(BranchError, match="has 1 user turns"):
        await session.branch_from(1, "late")
    with pytest.raises(BranchError, match="bad branch name"):
        await session.branch_from(0, "main")
    with pytest.raises(BranchError, match="bad branch name"):
        await session.branch_from(0, "has space")
    with pytest.raises(TypeError, match="turn must be an int"):
        await session.branch_from(True, "ok")
    await session.branch_from(0, "ok")
    with pytest.raises(BranchError, match="already exists"):
        await session.branch_from(0, "ok")
    with pytest.raises(BranchError, match="no branch 'nope'"):
        await session.switch("nope")
    assert len(await log.get_items()) == 2  # the one create and its switch
    with pytest.raises(InvalidSessionIdError, match="@branch:"):
        BranchingSession(store, "a@branch:b")
    with pytest.raises(TypeError, match="SessionStore or a callable"):
        BranchingSession(42, "x")  # type: ignore[arg-type]


async def test_a_factory_of_sessions_works_like_a_store(store: SQLiteStore) -> None:
    opened: list[str] = []

    def factory(session_id: str) -> Session:
        opened.append(session_id)
        return store.session(session_id)

    session_id = sid()
    session = BranchingSession(factory, session_id)
    await ask(session, "hi")
    await session.branch_from(0, "b")
    assert set(opened) == {
        session_id,
        metadata_session_id(session_id),
        branch_session_id(session_id, "b"),
    }
    await session.close()
    await session.close()


# -- usage -----------------------------------------------------------------------------------


@dataclass
class SdkLikeUsage:
    """The attributes of the Agents SDK's ``Usage`` (what record_usage reads)."""

    requests: int
    input_tokens: int
    output_tokens: int
    total_tokens: int


async def test_usage_per_turn_branch_and_session_after_real_runs(store: SQLiteStore) -> None:
    session = BranchingSession(store, sid(), record_runs=False)  # usage by hand only
    await ask(session, "first")
    await session.record_usage({"requests": 1, "input_tokens": 10, "output_tokens": 5})
    await ask(session, "second")
    await session.record_usage(SdkLikeUsage(1, 20, 7, 27))
    await session.record_usage({"input_tokens": 3, "output_tokens": 1}, turn=0)
    await session.branch_from(1, "alt")
    await ask(session, "again")
    await session.record_usage({"requests": 2, "input_tokens": 100, "output_tokens": 50})

    assert await session.usage_by_turn("main") == {
        0: Usage(1, 13, 6, 19),
        1: Usage(1, 20, 7, 27),
    }
    assert await session.usage_by_turn() == {1: Usage(2, 100, 50, 150)}
    assert await session.usage(branch="main") == Usage(2, 33, 13, 46)
    assert await session.usage(turn=1) == Usage(2, 100, 50, 150)  # the current branch's
    assert await session.usage(branch="main", turn=0) == Usage(1, 13, 6, 19)
    assert await session.usage() == Usage(4, 133, 63, 196)
    await session.switch("main")
    await session.delete_branch("alt")
    assert await session.usage() == Usage(4, 133, 63, 196)  # spent tokens stay counted
    assert await session.usage(branch="alt") == Usage(2, 100, 50, 150)


async def test_bad_usage_is_refused_and_not_recorded(store: SQLiteStore) -> None:
    session = BranchingSession(store, sid(), record_runs=False)
    with pytest.raises(BranchError, match="no user turn"):
        await session.record_usage({"input_tokens": 1})
    await ask(session, "q")
    with pytest.raises(ValueError, match="input_tokens must be an int >= 0"):
        await session.record_usage({"input_tokens": -1})
    with pytest.raises(TypeError, match="must hold some of"):
        await session.record_usage(object())
    with pytest.raises(ValueError, match="turn must be an int >= 0"):
        await session.record_usage({"input_tokens": 1}, turn=-2)
    assert await session.usage() == Usage()


async def test_unknown_or_malformed_log_entries_are_ignored(store: SQLiteStore) -> None:
    session_id = sid()
    session = BranchingSession(store, session_id, record_runs=False)
    await ask(session, "q")
    await session.branch_from(0, "b")
    await store.session(metadata_session_id(session_id)).add_items(
        [
            {"op": "rename", "name": "b"},  # from a later version
            {"op": "switch", "name": "never-created"},
            {"op": "usage", "branch": "b", "turn": "zero", "input_tokens": 5},
            {"op": "delete", "name": "main"},
            {"op": "create"},
        ]
    )
    again = BranchingSession(store, session_id)
    assert await again.current_branch() == "b"
    assert [b.name for b in await again.list_branches()] == ["main", "b"]
    assert await again.usage() == Usage()


async def test_compaction_over_a_branch_replaces_only_that_branch(store: SQLiteStore) -> None:
    from agent_sessions.bounded import SUMMARY_PREFIX, CompactingSession
    from agent_sessions.protocol import ReplacingSession

    session = BranchingSession(store, "compact-" + uuid.uuid4().hex)
    history = [user_message("a"), {"role": "assistant", "content": "1"}, user_message("b")]
    await session.add_items(history)
    await session.branch_from(1, "retry")
    await session.add_items([user_message("b2"), {"role": "assistant", "content": "2"}])
    assert isinstance(session, ReplacingSession)
    compacting = CompactingSession(
        session, model=OfflineModel(["sum"]), threshold=2, keep_last_turns=1
    )
    assert await compacting.compact() is True
    assert await session.get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "sum"},
        user_message("b2"),
        {"role": "assistant", "content": "2"},
    ]
    await session.switch("main")
    assert await session.get_items() == history  # the other branch is untouched
