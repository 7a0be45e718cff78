"""TrimmingSession and CompactingSession over real SQLite: the conformance kit, turn
boundaries, tool-call pairs, the token estimate, and compaction's atomicity (a model
that raises, one that is cancelled, a cancellation during the write), through the runner
and its streaming too."""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import (
    BackendTimeoutError,
    Session,
    SessionConfigError,
    SessionSettings,
    SQLiteSession,
    SQLiteStore,
)
from agent_sessions import runner as runner_module
from agent_sessions.agent import Agent
from agent_sessions.bounded import (
    SUMMARY_PREFIX,
    CompactingSession,
    CompactionConflictError,
    CompactionError,
    TrimmingSession,
    estimate_tokens,
    split_turns,
)
from agent_sessions.events import RunItemStreamEvent, TextDeltaEvent
from agent_sessions.items import (
    assistant_message,
    function_call,
    function_call_output,
    user_message,
)
from agent_sessions.models import ModelRequest, ModelResponse, ModelStreamEvent, OfflineModel
from agent_sessions.protocol import Item, ReplacingSession
from agent_sessions.runner import Runner
from agent_sessions.testing import SessionConformance

from .test_sqlite_conformance import write_raw_row

NEVER = 10**9  # a bound the kit never reaches: the plain protocol's expectations hold


class TestTrimmingByItemsSQLite(SessionConformance):
    store: SQLiteStore
    not_a_database: Path

    @pytest.fixture(autouse=True)
    async def memory_store(self, tmp_path: Path) -> AsyncIterator[None]:
        self.not_a_database = tmp_path / "not-a-database.db"
        async with SQLiteStore() as store:
            self.store = store
            yield

    def wrap(self, inner: Session, session_settings: SessionSettings | None = None) -> Session:
        return TrimmingSession(inner, max_items=NEVER, session_settings=session_settings)

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return self.wrap(self.store.session(session_id), session_settings)

    def failing_store_address(self) -> tuple[str, str]:
        return str(self.not_a_database), ""

    async def create_failing_session(self, session_id: str) -> Session:
        self.not_a_database.write_bytes(b"not a SQLite database, " * 100)
        return self.wrap(SQLiteSession(session_id, self.not_a_database))

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, TrimmingSession)
        await write_raw_row(session.session, raw)


class TestTrimmingByTokensSQLite(TestTrimmingByItemsSQLite):
    def wrap(self, inner: Session, session_settings: SessionSettings | None = None) -> Session:
        return TrimmingSession(inner, max_tokens=NEVER, session_settings=session_settings)


class TestCompactingSQLite(TestTrimmingByItemsSQLite):
    def wrap(self, inner: Session, session_settings: SessionSettings | None = None) -> Session:
        return CompactingSession(
            inner, model=OfflineModel(), threshold=NEVER, session_settings=session_settings
        )

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, CompactingSession)
        await write_raw_row(session.session, raw)


# -- helpers ---------------------------------------------------------------------------------


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore() as store:
        yield store


def sid() -> str:
    return f"user-{uuid.uuid4().hex}"


def chat_turn(n: int) -> list[Item]:
    return [user_message(f"question {n}"), assistant_message(f"answer {n}")]


def tool_turn(n: int) -> list[Item]:
    call_id = f"call_{n}"
    return [
        user_message(f"weather {n}?"),
        function_call("weather", json.dumps({"day": n}), call_id),
        function_call_output(call_id, f"sunny {n}"),
        assistant_message(f"It is sunny {n}."),
    ]


def assert_whole_turns(items: list[Item]) -> None:
    """Starts at a user message, and every tool call travels with its output."""
    assert items
    assert items[0].get("role") == "user"
    calls = {i["call_id"] for i in items if i.get("type") == "function_call"}
    outputs = {i["call_id"] for i in items if i.get("type") == "function_call_output"}
    assert calls == outputs


# -- turns and trimming ----------------------------------------------------------------------


def test_a_user_message_between_a_call_and_its_output_does_not_start_a_turn() -> None:
    call = function_call("slow", "{}", "c1")
    items = [user_message("a"), call, user_message("b"), function_call_output("c1", "x")]
    items += [user_message("c")]
    assert split_turns(items) == [items[:4], items[4:]]
    assert split_turns([]) == []
    lead = [{"role": "system", "content": "s"}, user_message("a")]
    assert split_turns(lead) == [lead[:1], lead[1:]]


async def test_trimming_by_items_drops_whole_turns_never_a_tool_pair(store: SQLiteStore) -> None:
    inner = store.session(sid())
    history = [*chat_turn(0), *tool_turn(1), *chat_turn(2), *tool_turn(3)]
    await inner.add_items(history)
    for max_items in range(1, len(history) + 2):
        got = await TrimmingSession(inner, max_items=max_items).get_items()
        assert_whole_turns(got)
        assert got == history[len(history) - len(got) :]
        if len(got) > max_items:  # only the latest turn, whole, may exceed the bound
            assert got == tool_turn(3)
    # 5 items fit: the last tool turn (4); adding the chat turn before it makes 6
    assert await TrimmingSession(inner, max_items=5).get_items() == tool_turn(3)
    assert await TrimmingSession(inner, max_items=6).get_items() == [*chat_turn(2), *tool_turn(3)]
    assert await TrimmingSession(inner, max_items=100).get_items() == history
    assert await inner.get_items() == history  # a view: nothing was deleted


async def test_the_latest_turn_is_returned_whole_even_over_the_bound(store: SQLiteStore) -> None:
    inner = store.session(sid())
    long_turn = [user_message("plan a trip")]
    for n in range(150):  # longer than the first token window (64 items)
        long_turn += [function_call("step", "{}", f"c{n}"), function_call_output(f"c{n}", "ok")]
    await inner.add_items([*chat_turn(0), *long_turn])
    assert await TrimmingSession(inner, max_items=3).get_items() == long_turn
    assert await TrimmingSession(inner, max_tokens=10).get_items() == long_turn


async def test_an_explicit_limit_is_the_latest_items_of_the_view(store: SQLiteStore) -> None:
    inner = store.session(sid())
    await inner.add_items([*chat_turn(0), *tool_turn(1)])
    trimmed = TrimmingSession(inner, max_items=4)
    assert await trimmed.get_items(limit=2) == tool_turn(1)[-2:]
    assert await trimmed.get_items(limit=0) == []
    trimmed.session_settings = SessionSettings(limit=1)
    assert await trimmed.get_items() == tool_turn(1)[-1:]
    with pytest.raises(ValueError, match="limit must be >= 0"):
        await trimmed.get_items(limit=-1)


def test_the_token_estimate_is_a_quarter_of_the_json_length_rounded_up() -> None:
    item = {"role": "user", "content": "x" * 10}
    text = json.dumps(item, separators=(",", ":"))
    assert len(text) == 38
    assert estimate_tokens(item) == 10
    assert estimate_tokens({"role": "user", "content": "x" * 12}) == 10  # 40 characters
    assert estimate_tokens({"role": "user", "content": "x" * 13}) == 11  # 41: rounded up
    assert estimate_tokens({"role": "user", "content": "é" * 12}) == 10  # characters, not bytes


async def test_trimming_by_tokens_and_a_pluggable_estimate(store: SQLiteStore) -> None:
    inner = store.session(sid())
    turns = [chat_turn(n) for n in range(100)]  # more than one window of 64
    await inner.add_items([item for turn in turns for item in turn])
    per_turn = sum(estimate_tokens(item) for item in turns[-1])
    got = await TrimmingSession(inner, max_tokens=3 * per_turn).get_items()
    assert got == [item for turn in turns[-3:] for item in turn]
    assert sum(map(estimate_tokens, got)) <= 3 * per_turn
    # every item costs 1: 7 tokens hold three turns of two items
    by_count = TrimmingSession(inner, max_tokens=7, estimate=lambda item: 1)
    assert len(await by_count.get_items()) == 6
    everything = TrimmingSession(inner, max_tokens=NEVER)
    assert len(await everything.get_items()) == 200
    both = TrimmingSession(inner, max_items=4, max_tokens=NEVER)
    assert len(await both.get_items()) == 4
    bad = TrimmingSession(inner, max_tokens=7, estimate=lambda item: -1)
    with pytest.raises(TypeError, match="estimate must return an int >= 0"):
        await bad.get_items()


async def test_bad_trimming_configuration_is_refused(store: SQLiteStore) -> None:
    inner = store.session(sid())
    with pytest.raises(SessionConfigError, match="max_items=, max_tokens="):
        TrimmingSession(inner)
    with pytest.raises(SessionConfigError, match="max_items must be >= 1"):
        TrimmingSession(inner, max_items=0)
    with pytest.raises(TypeError, match="max_tokens must be an int"):
        TrimmingSession(inner, max_tokens=True)
    with pytest.raises(TypeError, match="wraps a Session"):
        TrimmingSession(object(), max_items=3)  # type: ignore[arg-type]


# -- compaction ------------------------------------------------------------------------------


class GatedModel:
    """A real model (OfflineModel) behind a gate: ``respond`` waits for ``release``."""

    def __init__(self, reply: str = "the user asked about the weather") -> None:
        self.inner = OfflineModel([reply] * 10)
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.entered.set()
        await self.release.wait()
        return await self.inner.respond(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        async for event in self.inner.stream(request):
            yield event


async def test_compact_replaces_older_turns_with_a_summary(store: SQLiteStore) -> None:
    inner = store.session(sid())
    history = [*chat_turn(0), *tool_turn(1), *chat_turn(2), *tool_turn(3)]
    await inner.add_items(history)
    model = OfflineModel(["first summary", "second summary"])
    session = CompactingSession(inner, model=model, threshold=NEVER, keep_last_turns=2)
    assert await session.compact() is True
    summary = {"role": "system", "content": SUMMARY_PREFIX + "first summary"}
    assert await session.get_items() == [summary, *chat_turn(2), *tool_turn(3)]
    request = model.requests[0]
    assert request.input[:-1] == [*chat_turn(0), *tool_turn(1)]  # the model saw the old turns
    assert request.input[-1]["role"] == "user"
    await session.add_items(chat_turn(4))
    assert await session.compact() is True  # the summary is summarised with what followed
    assert model.requests[1].input[0] == summary
    assert await session.get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "second summary"},
        *tool_turn(3),
        *chat_turn(4),
    ]
    assert await session.compact() is False  # only a summary before the kept turns
    assert len(model.requests) == 2


async def test_keep_originals_appends_them_to_the_archive(store: SQLiteStore) -> None:
    session_id = sid()
    archive = store.session(session_id + ":archive")
    session = CompactingSession(
        store.session(session_id),
        model=OfflineModel(["s1", "s2"]),
        threshold=NEVER,
        keep_last_turns=1,
        keep_originals=True,
        archive=archive,
    )
    await session.add_items([*chat_turn(0), *tool_turn(1)])
    await session.compact()
    await session.add_items(chat_turn(2))
    await session.compact()
    assert await archive.get_items() == [*chat_turn(0), *tool_turn(1)]  # no summary there
    assert (await session.get_items())[1:] == chat_turn(2)
    with pytest.raises(SessionConfigError, match="keep_originals=True needs archive="):
        CompactingSession(
            store.session(session_id), model=OfflineModel(), threshold=5, keep_originals=True
        )
    with pytest.raises(SessionConfigError, match="keep_last_turns must be >= 0"):
        CompactingSession(
            store.session(session_id), model=OfflineModel(), threshold=5, keep_last_turns=-1
        )


async def test_a_failing_model_leaves_the_history_as_it_was(store: SQLiteStore) -> None:
    inner = store.session(sid())
    history = [*chat_turn(0), *tool_turn(1), *chat_turn(2)]
    await inner.add_items(history)
    failing = CompactingSession(
        inner, model=OfflineModel([ConnectionError("model down")]), threshold=2, keep_last_turns=1
    )
    with pytest.raises(ConnectionError, match="model down"):
        await failing.compact()
    assert await inner.get_items() == history
    silent = CompactingSession(inner, model=OfflineModel([[]]), threshold=2, keep_last_turns=1)
    with pytest.raises(CompactionError, match="no summary text"):
        await silent.compact()
    assert await inner.get_items() == history


async def test_a_cancelled_model_call_leaves_the_history_as_it_was(store: SQLiteStore) -> None:
    inner = store.session(sid())
    history = [*chat_turn(0), *tool_turn(1), *chat_turn(2)]
    await inner.add_items(history)
    model = GatedModel()
    session = CompactingSession(inner, model=model, threshold=2, keep_last_turns=1)
    task = asyncio.create_task(session.compact())
    await model.entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await inner.get_items() == history


class GatedSession:
    """A real SQLite session whose ``clear_session`` waits for ``release`` (so a test can
    cancel a compaction while it writes)."""

    def __init__(self, inner: Session) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.session_settings = inner.session_settings
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def get_items(self, limit: int | None = None) -> list[Item]:
        return await self.inner.get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Item | None:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        self.entered.set()
        await self.release.wait()
        await self.inner.clear_session()


class GatedReplacingSession(GatedSession):
    """GatedSession with the ReplacingSession capability: ``replace_items`` waits for
    ``release``, then replaces in one transaction of the real store."""

    async def replace_items(self, items: list[Item]) -> None:
        self.entered.set()
        await self.release.wait()
        assert isinstance(self.inner, ReplacingSession)
        await self.inner.replace_items(items)


@pytest.mark.parametrize(
    "gated_class",
    [GatedSession, GatedReplacingSession],
    ids=["clear-then-add", "replace_items"],
)
async def test_a_cancellation_during_the_write_completes_the_write(
    store: SQLiteStore, gated_class: type[GatedSession]
) -> None:
    """Cancelled while its write waits for the store (``clear_session`` of the bare
    protocol, or ``replace_items``): the write is shielded, it completes, then the
    cancellation propagates."""
    inner = store.session(sid())
    await inner.add_items([*chat_turn(0), *chat_turn(1)])
    gated = gated_class(inner)
    session = CompactingSession(gated, model=OfflineModel(["sum"]), threshold=2, keep_last_turns=1)
    task = asyncio.create_task(session.compact())
    await gated.entered.wait()
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done()  # the write is shielded: it waits for the store
    gated.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await inner.get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "sum"},
        *chat_turn(1),
    ]


async def test_a_store_failing_in_replace_items_leaves_the_history_as_it_was(
    tmp_path: Path,
) -> None:
    """The replacement's transaction cannot start (another connection holds the write
    lock past busy_timeout): the compaction fails, nothing changed."""
    path = tmp_path / "locked.db"
    async with SQLiteStore(path, busy_timeout=0.2) as locked_store:
        inner = locked_store.session(sid())
        history = [*chat_turn(0), *tool_turn(1), *chat_turn(2)]
        await inner.add_items(history)
        session = CompactingSession(
            inner, model=OfflineModel(["sum"]), threshold=2, keep_last_turns=1
        )
        blocker = sqlite3.connect(path)
        try:
            blocker.execute("BEGIN IMMEDIATE")
            with pytest.raises(BackendTimeoutError):
                await session.compact()
            blocker.execute("ROLLBACK")
        finally:
            blocker.close()
        assert await inner.get_items() == history
        assert await session.compact() is True  # and works once the lock is gone


async def test_items_added_while_the_model_thinks_are_kept(store: SQLiteStore) -> None:
    inner = store.session(sid())
    await inner.add_items([*chat_turn(0), *chat_turn(1)])
    model = GatedModel("sum")
    session = CompactingSession(inner, model=model, threshold=2, keep_last_turns=1)
    task = asyncio.create_task(session.compact())
    await model.entered.wait()
    await session.add_items(chat_turn(2))
    model.release.set()
    assert await task is True
    assert await inner.get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "sum"},
        *chat_turn(1),
        *chat_turn(2),
    ]


async def test_a_history_changed_under_a_compaction_is_left_alone(store: SQLiteStore) -> None:
    inner = store.session(sid())
    await inner.add_items([*chat_turn(0), *chat_turn(1)])
    model = GatedModel("sum")
    session = CompactingSession(inner, model=model, threshold=2, keep_last_turns=1)
    task = asyncio.create_task(session.compact())
    await model.entered.wait()
    await store.session(inner.session_id).pop_item()  # another handle
    model.release.set()
    with pytest.raises(CompactionConflictError, match="nothing was changed"):
        await task
    assert await inner.get_items() == [*chat_turn(0), user_message("question 1")]


# -- through the runner ----------------------------------------------------------------------


async def test_the_runner_compacts_after_a_run_over_the_threshold(store: SQLiteStore) -> None:
    inner = store.session(sid())
    session = CompactingSession(
        inner,
        model=OfflineModel([f"summary {n}" for n in range(5)]),
        threshold=5,
        keep_last_turns=1,
    )
    agent = Agent("a", "Be brief.", OfflineModel())
    await Runner.run(agent, "my name is Ada", session=session)
    await Runner.run(agent, "I like tea", session=session)
    assert len(await inner.get_items()) == 4  # under the threshold: not compacted
    result = await Runner.run(agent, "what do I like?", session=session)
    assert "I like tea" in result.final_output  # the answer saw the whole history
    stored = await inner.get_items()
    assert stored[0] == {"role": "system", "content": SUMMARY_PREFIX + "summary 0"}
    assert stored[1:] == [user_message("what do I like?"), *result.new_items]


async def test_a_failing_compaction_after_a_run_is_logged_not_raised(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    inner = store.session(sid())
    session = CompactingSession(
        inner, model=OfflineModel([RuntimeError("summariser down")]), threshold=1, keep_last_turns=0
    )
    agent = Agent("a", "", OfflineModel(["hi"]))
    with caplog.at_level(logging.ERROR, logger="agent_sessions"):
        result = await Runner.run(agent, "hello", session=session)
    assert result.final_output == "hi"
    assert await inner.get_items() == [user_message("hello"), assistant_message("hi")]
    assert any("after_run" in record.getMessage() for record in caplog.records)


async def test_streaming_ends_before_the_compaction_runs(store: SQLiteStore) -> None:
    inner = store.session(sid())
    await inner.add_items([*chat_turn(0), *chat_turn(1)])
    summariser = GatedModel("sum")
    session = CompactingSession(inner, model=summariser, threshold=3, keep_last_turns=1)
    agent = Agent("a", "", OfflineModel(["It is sunny today."]))
    result = Runner.run_streamed(agent, "weather?", session=session)
    deltas: list[str] = []
    messages: list[Any] = []
    async for event in result.stream_events():
        if isinstance(event, TextDeltaEvent):
            deltas.append(event.delta)
        elif isinstance(event, RunItemStreamEvent):
            messages.append(event.item)
    # every event was delivered and the stream ended while the summariser is still held
    assert "".join(deltas) == "It is sunny today."
    assert messages == [assistant_message("It is sunny today.")]
    assert result.final_output == "It is sunny today."
    await asyncio.wait_for(summariser.entered.wait(), 5)
    assert not summariser.release.is_set()
    assert len(await inner.get_items()) == 6  # not compacted yet
    summariser.release.set()
    await result.wait()
    assert await inner.get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "sum"},
        user_message("weather?"),
        assistant_message("It is sunny today."),
    ]


async def test_close_closes_the_wrapped_sessions(store: SQLiteStore) -> None:
    session_id = sid()
    session = CompactingSession(
        store.session(session_id),
        model=OfflineModel(),
        threshold=3,
        keep_originals=True,
        archive=store.session(session_id + ":a"),
    )
    async with session:
        await session.add_items(chat_turn(0))
    await session.close()
    with pytest.raises(RuntimeError, match="is closed"):
        await session.get_items()
    assert session.archive is not None
    with pytest.raises(RuntimeError, match="closed"):
        await session.archive.get_items()


async def test_explicit_settings_read_as_the_sdks_when_it_is_loaded(store: SQLiteStore) -> None:
    import agents

    inner = store.session(sid())
    await inner.add_items([*chat_turn(0), *chat_turn(1)])
    for session in (
        TrimmingSession(inner, max_items=10, session_settings=SessionSettings(limit=1)),
        CompactingSession(
            inner, model=OfflineModel(), threshold=10, session_settings=SessionSettings(limit=1)
        ),
    ):
        assert isinstance(session.session_settings, agents.SessionSettings)
        assert await session.get_items() == chat_turn(1)[1:]
        session.session_settings = None  # back to the wrapped session's
        assert await session.get_items() == [*chat_turn(0), *chat_turn(1)]


async def test_a_limit_gives_the_latest_items_of_the_view_on_any_history(
    store: SQLiteStore,
) -> None:
    """``get_items(limit=N)`` reads a small window; it must equal the view's last N items
    (computed by ``get_items()``) on histories of every shape, one session reading every
    limit in turn (its window's size is a hint the previous read left)."""
    import random

    rng = random.Random(24)
    for case in range(60):
        inner = store.session(sid())
        history: list[Item] = [{"role": "system", "content": "be brief"}] if case % 3 else []
        for n in range(rng.randint(1, 12)):
            shape = rng.random()
            if shape < 0.3:
                history += chat_turn(n)
            elif shape < 0.6:
                history += tool_turn(n)
            elif shape < 0.8:  # a long answer in several messages: no tool items
                history.append(user_message(f"tell me {n}"))
                history += [assistant_message(f"part {k}") for k in range(rng.randint(2, 9))]
            else:  # a long turn of several tool calls
                history.append(user_message(f"plan {n}"))
                for k in range(rng.randint(2, 8)):
                    call_id = f"c{n}-{k}"
                    history += [function_call("step", "{}", call_id)]
                    history += [function_call_output(call_id, "ok" * rng.randint(1, 30))]
        if case % 4 == 0:
            history.append(user_message("a question not answered yet"))
        await inner.add_items(history)
        for _ in range(6):
            max_items = rng.choice([None, 1, 3, 5, 8, 13, 40])
            max_tokens = rng.choice([20, 60, 200]) if max_items is None or case % 2 else None
            session = TrimmingSession(inner, max_items=max_items, max_tokens=max_tokens)
            view = await session.get_items()
            assert view == history[len(history) - len(view) :]
            for limit in (1, 2, 3, 5, 10, 4, 7, 2, 50):
                assert await session.get_items(limit=limit) == view[-limit:], (case, limit)


async def test_items_whose_type_is_not_a_string_are_read_through_a_limit(
    store: SQLiteStore,
) -> None:
    """Any JSON object is an item: one whose ``type`` is a list or an object (a caller's
    own item) is neither a tool item nor a message, on the limit's window as on the
    whole view (the window's tool check once raised ``TypeError: unhashable type``)."""
    inner = store.session(sid())
    odd: list[Item] = [{"type": ["note"], "v": 1}, {"type": {"kind": "note"}, "v": 2}]
    history = [*chat_turn(0), user_message("next"), *odd, assistant_message("done")]
    await inner.add_items(history)
    for max_items, max_tokens in ((10, None), (4, None), (None, 200), (10, 200)):
        trimmed = TrimmingSession(inner, max_items=max_items, max_tokens=max_tokens)
        view = await trimmed.get_items()
        assert view == history[len(history) - len(view) :]
        for limit in (1, 2, 3, 4, 5, 3):
            assert await trimmed.get_items(limit=limit) == view[-limit:], (max_items, limit)


async def test_tool_items_whose_call_id_is_a_list_or_an_object_are_paired_not_fatal(
    store: SQLiteStore,
) -> None:
    """A stored history may hold any JSON: a tool call whose ``call_id`` is a list or an
    object pairs with the output of an equal one (turns, trimming, limits, the runner's
    orphan filter), where each of them raised ``TypeError: unhashable type``."""
    inner = store.session(sid())
    history: list[Item] = [*chat_turn(0)]
    for n, call_id in enumerate([["c", 1], {"id": "c2"}], start=1):
        history += [
            user_message(f"weather {n}?"),
            {"type": "function_call", "call_id": call_id, "name": "weather", "arguments": "{}"},
            user_message("still there?"),  # never starts a turn while the call is open
            {"type": "function_call_output", "call_id": call_id, "output": "sunny"},
            assistant_message(f"It is sunny {n}."),
        ]
    await inner.add_items(history)
    assert split_turns(history) == [history[:2], history[2:7], history[7:]]
    for max_items, max_tokens in ((6, None), (11, None), (None, 60)):
        trimmed = TrimmingSession(inner, max_items=max_items, max_tokens=max_tokens)
        view = await trimmed.get_items()
        assert view == history[len(history) - len(view) :]
        assert view[0]["role"] == "user"
        assert len(view) in (5, 10, 12)
        for limit in (1, 3, 5, 8):
            assert await trimmed.get_items(limit=limit) == view[-limit:]
    orphan = {"type": "function_call", "call_id": ["lost"], "name": "w", "arguments": "{}"}
    assert runner_module._without_orphan_tool_items([*history[2:7], orphan]) == history[2:7]


async def test_bounds_assigned_after_construction_apply_to_every_read(store: SQLiteStore) -> None:
    """``max_items`` and ``max_tokens`` may be assigned (checked as the constructor checks
    them, nothing changed on a bad value); the next read, a limited one too, uses them
    (the limit's fast path once kept the bounds it was built with)."""
    inner = store.session(sid())
    history = [item for n in range(20) for item in chat_turn(n)]
    await inner.add_items(history)
    trimmed = TrimmingSession(inner, max_items=40)
    assert await trimmed.get_items(limit=10) == history[-10:]
    trimmed.max_items = 3
    assert await trimmed.get_items() == history[-2:]
    assert await trimmed.get_items(limit=10) == history[-2:]
    trimmed.max_items = 40
    trimmed.max_tokens = 1  # the latest turn alone is over it: kept whole
    assert await trimmed.get_items(limit=10) == history[-2:]
    trimmed.max_tokens = None
    assert await trimmed.get_items(limit=10) == history[-10:]
    with pytest.raises(SessionConfigError, match="max_items must be >= 1"):
        trimmed.max_items = 0
    with pytest.raises(TypeError, match="max_tokens must be an int"):
        trimmed.max_tokens = 2.5  # type: ignore[assignment]
    with pytest.raises(SessionConfigError, match="needs max_items=, max_tokens= or both"):
        trimmed.max_items = None
    assert (trimmed.max_items, trimmed.max_tokens) == (40, None)
    assert await trimmed.get_items(limit=10) == history[-10:]
