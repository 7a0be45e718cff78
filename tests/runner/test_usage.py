"""Token usage: each model reports it with its response, the runner sums a run's calls
into ``RunResult.usage`` (plain and streamed runs), hands the result to the session's
``after_run`` hook, and BranchingSession records it per turn and per branch. Against a
local Chat Completions server on 127.0.0.1 and a real SQLite store."""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from agent_sessions import Session, SQLiteSession, SQLiteStore
from agent_sessions.agent import Agent
from agent_sessions.bounded import CompactingSession
from agent_sessions.branches import METADATA_SUFFIX, BranchingSession
from agent_sessions.items import assistant_message, user_message
from agent_sessions.models import ModelRequest, OfflineModel, Usage
from agent_sessions.protocol import Item
from agent_sessions.runner import Runner, RunResult

from .test_openai_model import ChatCompletionsServer, add, model_on


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    running = ChatCompletionsServer()
    yield running
    running.close()


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore() as store:
        yield store


def sid() -> str:
    return f"user-{uuid.uuid4().hex}"


async def run_streamed(agent: Agent, question: str, session: object) -> RunResult:
    """A streamed run iterated to its end, after_run included."""
    result = Runner.run_streamed(agent, question, session=session)  # type: ignore[arg-type]
    async for _ in result.stream_events():
        pass
    await result.wait()
    return result.result


# -- the models ------------------------------------------------------------------------------


async def test_chat_completions_usage_of_every_call_is_summed(
    server: ChatCompletionsServer,
) -> None:
    server.replies += [
        {"tool_calls": [("call_1", "add", '{"a": 2, "b": 3}')], "usage": (40, 7)},
        {"content": "5", "usage": (55, 1)},
    ]
    agent = Agent("calc", "", model_on(server), tools=[add])
    result = await Runner.run(agent, "2+3?")
    assert result.final_output == "5"
    assert result.usage == Usage(requests=2, input_tokens=95, output_tokens=8, total_tokens=103)
    assert "stream_options" not in server.requests[0]


async def test_streamed_run_asks_for_usage_and_sums_it(server: ChatCompletionsServer) -> None:
    server.replies += [
        {"tool_calls": [("call_1", "add", '{"a": 1, "b": 1}')], "usage": (30, 9)},
        {"content": "It is 2.", "usage": (44, 3)},
    ]
    agent = Agent("calc", "", model_on(server), tools=[add])
    streamed = Runner.run_streamed(agent, "1+1?")
    async for _ in streamed.stream_events():
        pass
    assert streamed.final_output == "It is 2."
    assert streamed.usage == Usage(2, 74, 12, 86)
    assert streamed.result.usage == streamed.usage
    assert [request["stream_options"] for request in server.requests] == [
        {"include_usage": True},
        {"include_usage": True},
    ]


async def test_a_server_that_reports_no_usage_counts_requests_only(
    server: ChatCompletionsServer,
) -> None:
    server.replies += [{"content": "Hi."}, {"content": "Hi again."}]
    agent = Agent("a", "", model_on(server))
    assert (await Runner.run(agent, "hello")).usage == Usage(requests=1)
    assert (await run_streamed(agent, "hello", None)).usage == Usage(requests=1)


async def test_offline_model_estimates_four_characters_a_token() -> None:
    request = ModelRequest("Be brief.", [user_message("x" * 40)])
    plain = await OfflineModel(["y" * 80]).respond(request)
    streamed = [event async for event in OfflineModel(["y" * 80]).stream(request)][-1]
    assert plain.usage is not None
    assert streamed == plain  # the same output and the same estimate
    # the instructions (9 chars: 3 tokens) and the item's JSON (40 chars of text in it)
    assert plain.usage.requests == 1
    assert 3 + 10 < plain.usage.input_tokens <= 3 + 10 + 10
    assert 20 < plain.usage.output_tokens <= 20 + 25  # the message JSON around the text
    assert plain.usage.total_tokens == plain.usage.input_tokens + plain.usage.output_tokens
    longer = await OfflineModel(["y" * 80]).respond(
        ModelRequest("Be brief.", [user_message("x" * 40), assistant_message("z" * 400)])
    )
    assert longer.usage is not None
    assert longer.usage.input_tokens >= plain.usage.input_tokens + 100
    assert longer.usage.output_tokens == plain.usage.output_tokens


async def test_a_failed_call_adds_nothing_and_a_retry_counts_its_own() -> None:
    agent = Agent("a", "", OfflineModel([RuntimeError("down"), "fine"]))
    with pytest.raises(RuntimeError, match="down"):
        await Runner.run(agent, "hello")
    result = await Runner.run(agent, "hello")
    assert result.usage.requests == 1


# -- the after_run protocol ------------------------------------------------------------------


class HookedSession(SQLiteSession):
    """A real session whose hook takes the result."""

    results: list[RunResult | None]

    async def after_run(self, result: RunResult | None) -> None:
        self.results.append(result)


class OldHookSession(SQLiteSession):
    """A real session whose hook takes no argument (the protocol before usage)."""

    calls: int

    async def after_run(self) -> None:
        self.calls += 1


async def test_the_hook_gets_the_result_when_it_takes_one(store: SQLiteStore) -> None:
    agent = Agent("a", "", OfflineModel())
    session = HookedSession("s", store=store)
    session.results = []
    result = await Runner.run(agent, "hello", session=session)
    streamed = await run_streamed(agent, "again", session)
    assert session.results == [result, streamed]
    assert streamed.usage.requests == 1
    assert streamed.usage.total_tokens > 0


async def test_a_run_stopped_after_a_turn_hands_the_hook_no_result(store: SQLiteStore) -> None:
    tool_call = [{"type": "function_call", "name": "add", "arguments": "{}", "call_id": "c1"}]
    agent = Agent("a", "", OfflineModel([tool_call, "never asked"]), tools=[add])
    session = HookedSession("s", store=store)
    session.results = []
    streamed = Runner.run_streamed(agent, "go", session=session)
    streamed.cancel("after_turn")
    async for _ in streamed.stream_events():
        pass
    await streamed.wait()
    assert session.results == [None]
    branching = BranchingSession(store, sid())
    await branching.add_items([user_message("hi")])
    await branching.after_run(None)  # what such a run hands a BranchingSession
    assert await branching.usage() == Usage()


async def test_a_hook_without_arguments_is_still_called(store: SQLiteStore) -> None:
    agent = Agent("a", "", OfflineModel())
    session = OldHookSession("s", store=store)
    session.calls = 0
    await Runner.run(agent, "hello", session=session)
    await run_streamed(agent, "again", session)
    assert session.calls == 2


async def test_compaction_still_runs_after_a_run(store: SQLiteStore) -> None:
    inner = SQLiteSession("c", store=store)
    session = CompactingSession(
        inner, model=OfflineModel(["a summary"]), threshold=4, keep_last_turns=1
    )
    agent = Agent("a", "", OfflineModel())
    for question in ("one", "two", "three"):
        await Runner.run(agent, question, session=session)
    items = await inner.get_items()
    assert len(items) < 6  # three turns of two items were compacted
    assert "a summary" in str(items)


# -- BranchingSession records runs by itself -------------------------------------------------


async def test_branching_session_records_each_run_per_turn_and_branch(
    server: ChatCompletionsServer, store: SQLiteStore
) -> None:
    session = BranchingSession(store, sid())
    agent = Agent("a", "Be brief.", model_on(server))
    server.replies += [
        {"content": "Red.", "usage": (10, 2)},
        {"content": "Green.", "usage": (20, 4)},
        {"content": "Blue.", "usage": (30, 6)},
    ]
    await Runner.run(agent, "first colour?", session=session)
    await run_streamed(agent, "second colour?", session)
    question = await session.branch_from(1, "retry")
    await Runner.run(agent, message_of(question) + " (again)", session=session)

    assert await session.usage_by_turn("main") == {0: Usage(1, 10, 2, 12), 1: Usage(1, 20, 4, 24)}
    assert await session.usage_by_turn("retry") == {1: Usage(1, 30, 6, 36)}
    assert await session.usage_by_branch() == {
        "main": Usage(2, 30, 6, 36),
        "retry": Usage(1, 30, 6, 36),
    }
    assert await session.usage() == Usage(3, 60, 12, 72)
    # a new handle reads the same from the store
    again = BranchingSession(store, session.session_id)
    assert await again.usage() == Usage(3, 60, 12, 72)


async def test_tool_turns_of_one_run_count_against_its_user_turn(
    server: ChatCompletionsServer, store: SQLiteStore
) -> None:
    session = BranchingSession(store, sid())
    server.replies += [
        {"tool_calls": [("call_1", "add", '{"a": 2, "b": 3}')], "usage": (40, 7)},
        {"content": "5", "usage": (55, 1)},
    ]
    await run_streamed(Agent("calc", "", model_on(server), tools=[add]), "2+3?", session)
    assert await session.usage_by_turn() == {0: Usage(2, 95, 8, 103)}


async def test_record_runs_false_leaves_usage_to_the_caller(store: SQLiteStore) -> None:
    session = BranchingSession(store, sid(), record_runs=False)
    result = await Runner.run(Agent("a", "", OfflineModel()), "hello", session=session)
    assert await session.usage() == Usage()
    await session.record_usage(result.usage)
    assert await session.usage() == result.usage
    automatic = BranchingSession(store, sid())
    other = await Runner.run(Agent("a", "", OfflineModel()), "hello", session=automatic)
    await automatic.record_usage(other.usage)  # recorded by hand as well: counted twice
    assert await automatic.usage() == other.usage + other.usage


async def test_after_run_reads_the_sdk_result_shape(store: SQLiteStore) -> None:
    class Wrapper:
        usage = Usage(1, 5, 2, 7)

    class SdkLikeResult:
        context_wrapper = Wrapper()

    session = BranchingSession(store, sid())
    await session.add_items([user_message("hi")])
    await session.after_run(SdkLikeResult())
    await session.after_run(None)  # no result: nothing
    assert await session.usage() == Usage(1, 5, 2, 7)
    with pytest.raises(TypeError, match="usage"):
        await session.after_run(object())
    assert await session.usage() == Usage(1, 5, 2, 7)


async def test_a_run_without_a_user_turn_is_logged_not_recorded(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    session = BranchingSession(store, sid())
    agent = Agent("a", "", OfflineModel(["noted"]))
    with caplog.at_level(logging.WARNING, logger="agent_sessions"):
        result = await Runner.run(agent, [assistant_message("a note")], session=session)
    assert result.final_output == "noted"
    assert await session.usage() == Usage()
    assert any("not recorded" in record.getMessage() for record in caplog.records)


def message_of(item: Item) -> str:
    content = item["content"]
    assert isinstance(content, str)
    return content


async def test_branch_sessions_hook_is_handed_on_compaction_and_usage_both_work(
    store: SQLiteStore,
) -> None:
    def open_branch(session_id: str) -> Session:
        plain = store.session(session_id)
        if session_id.endswith(METADATA_SUFFIX):
            return plain  # the log must stay whole
        return CompactingSession(
            plain, model=OfflineModel(["a summary"]), threshold=4, keep_last_turns=1
        )

    session = BranchingSession(open_branch, sid())
    agent = Agent("a", "", OfflineModel())
    results = [await Runner.run(agent, q, session=session) for q in ("one", "two", "three")]
    stored = await store.session(session.session_id).get_items()
    assert len(stored) < 6
    assert "a summary" in str(stored)
    assert await session.usage() == results[0].usage + results[1].usage + results[2].usage
