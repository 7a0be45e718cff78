"""The kit's child-process writer, ``_write_batches_in_child``, called in this process.

The processes kit test runs it in spawned children, where mutmut records no coverage (and a
broken writer there only shows as a lost or shuffled batch, or an exit code): here it runs
on a recording session, so that what it writes, in which calls, and that it closes its
session are checked directly (issue 28, benchmarks/mutation.py kit).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_sessions import SessionSettings
from agent_sessions.testing import _write_batches_in_child


class RecordingSession:
    """Records each ``add_items`` call; ``close`` is a coroutine (it must be awaited)."""

    session_settings: SessionSettings | None = None

    def __init__(self, session_id: str, fail_on_call: int | None = None) -> None:
        self.session_id = session_id
        self.calls: list[list[dict[str, Any]]] = []
        self.closed = 0
        self.fail_on_call = fail_on_call

    async def get_items(self, limit: int | None = None) -> list[dict[str, Any]]:
        return [item for call in self.calls for item in call]

    async def add_items(self, items: list[dict[str, Any]]) -> None:
        if self.fail_on_call == len(self.calls):
            raise ConnectionError("the store went away")
        self.calls.append(items)

    async def pop_item(self) -> dict[str, Any] | None:
        return None

    async def clear_session(self) -> None:
        self.calls.clear()

    async def close(self) -> None:
        self.closed += 1


def test_a_child_writes_each_batch_in_its_own_call_in_order_and_closes_its_session() -> None:
    opened: list[RecordingSession] = []

    def factory(session_id: str) -> RecordingSession:
        opened.append(RecordingSession(session_id))
        return opened[-1]

    _write_batches_in_child(factory, "the-session", 2, 3, 4)
    (session,) = opened
    assert session.session_id == "the-session"
    assert session.calls == [
        [{"writer": 2, "batch": batch, "index": index} for index in range(4)] for batch in range(3)
    ]
    assert session.closed == 1


def test_a_child_whose_write_fails_still_closes_its_session_and_raises() -> None:
    opened: list[RecordingSession] = []

    def factory(session_id: str) -> RecordingSession:
        opened.append(RecordingSession(session_id, fail_on_call=1))
        return opened[-1]

    with pytest.raises(ConnectionError, match="the store went away"):
        _write_batches_in_child(factory, "s", 0, 3, 2)
    (session,) = opened
    assert session.calls == [
        [{"writer": 0, "batch": 0, "index": 0}, {"writer": 0, "batch": 0, "index": 1}]
    ]
    assert session.closed == 1
