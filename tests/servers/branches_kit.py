"""What the BranchingSession tests over a server share: the conformance kit on the
current branch of a real store (in child processes too, on a failing server), and one
branch with usage checked through the store's own sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agent_sessions import Session, SessionSettings
from agent_sessions.branches import BranchingSession, Usage, branch_session_id
from agent_sessions.items import assistant_message, user_message
from agent_sessions.testing import SessionConformance

from .test_conformance import UNREACHABLE_SECRET, unreachable_url


class BranchingServerKit(SessionConformance):
    """The kit on ``BranchingSession(self.store, ...)``. A subclass opens ``store`` (and
    sets ``url``) in an autouse fixture of its own, and opens a store on ``failing_url``
    in :meth:`open_failing_store`; the failing stores are closed after each test."""

    supports_processes = True
    url: str
    failing_url: str
    store: Any
    failing_stores: list[Any]

    @pytest.fixture(autouse=True)
    async def close_failing_stores(self) -> AsyncIterator[None]:
        self.failing_stores = []
        yield
        for failing in self.failing_stores:
            await failing.close()

    def open_failing_store(self) -> Any:
        """A store of this backend on ``self.failing_url`` (a short connect timeout)."""
        raise NotImplementedError

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return BranchingSession(self.store, session_id, session_settings=session_settings)

    def failing_store_address(self) -> tuple[str, str]:
        self.failing_url, shown = unreachable_url(self.url)
        return shown, UNREACHABLE_SECRET

    async def create_failing_session(self, session_id: str) -> Session:
        failing = self.open_failing_store()
        self.failing_stores.append(failing)
        return BranchingSession(failing, session_id)


async def check_a_branch_and_its_usage(store: Any, session_id: str) -> None:
    """A branch from the second user turn, usage on both branches, then switching back
    and deleting the branch, each checked in the store's own sessions."""
    session = BranchingSession(store, session_id)
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
    branches = await BranchingSession(store, session_id).list_branches()
    assert [info.name for info in branches] == ["main"]
