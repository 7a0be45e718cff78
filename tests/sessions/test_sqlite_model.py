"""SQLiteSession against a plain Python list: random operation sequences agree with it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from agent_sessions import Item, SQLiteSession, SQLiteStore

_T = TypeVar("_T")

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(), json_values, max_size=4)
limits = st.none() | st.integers(min_value=0, max_value=12)


def latest(items: list[Item], limit: int | None) -> list[Item]:
    if limit is None:
        return items
    return items[max(0, len(items) - limit) :]


@settings(max_examples=60, deadline=None)
@given(batches=st.lists(st.lists(json_objects, max_size=4), max_size=4), limit=limits)
def test_any_json_objects_round_trip_in_order(batches: list[list[Item]], limit: int | None) -> None:
    async def store_and_read() -> list[Item]:
        async with SQLiteSession("round-trip") as session:
            for batch in batches:
                await session.add_items(batch)
            return await session.get_items(limit)

    expected = [item for batch in batches for item in batch]
    assert asyncio.run(store_and_read()) == latest(expected, limit)


class SessionMatchesAList(RuleBasedStateMachine):
    """Two handles on one file session, and the list they must both agree with."""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.store = SQLiteStore(self.directory / "model.db")
        self.sessions = [self.store.session("model"), self.store.session("model")]
        self.model: list[Item] = []

    directory: Path  # set by the test below, once per run

    def run(self, call: Coroutine[Any, Any, _T]) -> _T:
        return self.loop.run_until_complete(call)

    @rule(which=st.integers(0, 1), batch=st.lists(json_objects, max_size=3))
    def add_items(self, which: int, batch: list[Item]) -> None:
        self.run(self.sessions[which].add_items(batch))
        self.model.extend(batch)

    @rule(which=st.integers(0, 1))
    def pop_item(self, which: int) -> None:
        popped = self.run(self.sessions[which].pop_item())
        assert popped == (self.model.pop() if self.model else None)

    @rule(which=st.integers(0, 1))
    def clear_session(self, which: int) -> None:
        self.run(self.sessions[which].clear_session())
        self.model.clear()

    @rule(which=st.integers(0, 1), limit=limits)
    def get_items(self, which: int, limit: int | None) -> None:
        assert self.run(self.sessions[which].get_items(limit)) == latest(self.model, limit)

    @invariant()
    def listed_only_when_not_empty(self) -> None:
        listed = self.run(self.store.list_sessions()).session_ids
        assert listed == (["model"] if self.model else [])

    def teardown(self) -> None:
        self.run(self.store.close())
        self.loop.close()
        for leftover in self.directory.glob("model.db*"):
            leftover.unlink()


def test_session_matches_a_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(SessionMatchesAList, "directory", tmp_path, raising=False)
    state_machine_test = SessionMatchesAList.TestCase
    state_machine_test.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
    state_machine_test().runTest()
