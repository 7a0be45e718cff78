"""Failures in the model, a tool and the session, in run and run_streamed alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from agent_sessions.agent import Agent
from agent_sessions.items import (
    function_call,
    function_call_output,
    message_text,
    user_message,
)
from agent_sessions.models import OfflineModel, ScriptedResponse
from agent_sessions.protocol import Item, Session, SessionClosedError
from agent_sessions.runner import (
    MaxTurnsExceeded,
    ModelBehaviorError,
    RunCancelledError,
    Runner,
    RunResult,
)
from agent_sessions.tools import function_tool

from .conftest import OpenSession

RunMode = Callable[[Agent, str | list[Item], Session], Coroutine[Any, Any, RunResult]]


async def run_plain(agent: Agent, run_input: str | list[Item], session: Session) -> RunResult:
    return await Runner.run(agent, run_input, session=session)


async def run_streaming(agent: Agent, run_input: str | list[Item], session: Session) -> RunResult:
    streamed = Runner.run_streamed(agent, run_input, session=session)

    async def consume() -> None:
        async for _ in streamed.stream_events():
            pass

    # a hang would be a bug: the guard turns it into a failure instead of a stuck suite
    await asyncio.wait_for(consume(), timeout=30)
    return streamed.result


@pytest.fixture(params=[run_plain, run_streaming], ids=["run", "run_streamed"])
def run_mode(request: pytest.FixtureRequest) -> RunMode:
    mode: RunMode = request.param
    return mode


def scripted(*script: ScriptedResponse, tools: list[Any] | None = None) -> Agent:
    return Agent("assistant", "", OfflineModel(script), tools=tools or [])


@function_tool
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


async def test_model_failure_propagates_and_keeps_the_input(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    with pytest.raises(ConnectionError, match="model down"):
        await run_mode(scripted(ConnectionError("model down")), "hello", session)

    assert await session.get_items() == [user_message("hello")]


async def test_model_failure_after_a_tool_turn_keeps_whole_turns(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    call = function_call("divide", '{"a": 1, "b": 4}', "call_1")
    agent = scripted([call], TimeoutError("model timed out"), tools=[divide])
    with pytest.raises(TimeoutError):
        await run_mode(agent, "1/4?", session)

    assert await session.get_items() == [
        user_message("1/4?"),
        call,
        function_call_output("call_1", "0.25"),
    ]


async def test_raising_tool_gives_the_model_an_error_output(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    call = function_call("divide", '{"a": 1, "b": 0}', "call_1")
    agent = scripted([call], tools=[divide])
    result = await run_mode(agent, "1/0?", session)

    output = (await session.get_items())[2]
    assert output["type"] == "function_call_output"
    assert output["output"] == "Error: tool divide raised ZeroDivisionError: float division by zero"
    assert result.final_output == f"The tool answered: {output['output']}"


async def test_bad_tool_arguments_give_the_model_an_error_output(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    agent = scripted([function_call("divide", '{"a": "one", "b": 2}', "c")], tools=[divide])
    await run_mode(agent, "?", session)

    output = (await session.get_items())[2]["output"]
    assert output == "Error: divide(a=...): 'one' is not a valid float"


async def test_unknown_tool_gives_the_model_an_error_output(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    await run_mode(scripted([function_call("launch", "{}", "c")]), "?", session)

    assert (await session.get_items())[2] == function_call_output(
        "c", "Error: there is no tool named 'launch'"
    )


async def test_failing_get_items_propagates_before_the_model_is_called(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    await session.close()
    agent = scripted("never asked")
    with pytest.raises(SessionClosedError, match="closed"):
        await run_mode(agent, "hello", session)

    assert isinstance(agent.model, OfflineModel)
    assert agent.model.requests == []


async def test_failing_add_items_of_the_input_propagates(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    agent = scripted("never asked")
    not_json = [{"role": "user", "content": {"a set", "is not JSON"}}]
    with pytest.raises(TypeError, match="item 0"):
        await run_mode(agent, not_json, session)

    assert isinstance(agent.model, OfflineModel)
    assert agent.model.requests == []
    assert await session.get_items() == []


async def test_failing_add_items_after_a_tool_turn_propagates(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()

    @function_tool
    async def hang_up() -> str:
        """End the call."""
        await session.close()  # the next save of this run fails
        return "bye"

    agent = scripted([function_call("hang_up", "{}", "c")], "unreachable", tools=[hang_up])
    with pytest.raises(SessionClosedError):
        await run_mode(agent, "hello", session)

    reopened = open_session()
    assert await reopened.get_items() == [user_message("hello")]


async def test_failing_add_items_of_the_final_output_propagates(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    unstorable = {"type": "message", "role": "assistant", "content": b"bytes"}
    with pytest.raises(TypeError, match="bytes"):
        await run_mode(scripted([unstorable]), "hello", session)

    assert await session.get_items() == [user_message("hello")]


async def test_model_output_the_runner_cannot_handle_is_an_error(
    open_session: OpenSession, run_mode: RunMode
) -> None:
    session = open_session()
    with pytest.raises(ModelBehaviorError, match="cannot handle"):
        await run_mode(scripted([{"type": "reasoning", "summary": []}]), "hello", session)


async def test_max_turns_stops_a_run_that_keeps_calling_tools(
    open_session: OpenSession,
) -> None:
    session = open_session()
    calls = [[function_call("divide", '{"a": 1, "b": 1}')] for _ in range(5)]
    with pytest.raises(MaxTurnsExceeded, match="max_turns=3"):
        await Runner.run(scripted(*calls, tools=[divide]), "loop", session=session, max_turns=3)

    assert len(await session.get_items()) == 1 + 3 * 2


@pytest.mark.parametrize("max_turns", [0, -1, True, 2.5])
async def test_max_turns_must_be_a_positive_int(max_turns: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="max_turns"):
        await Runner.run(scripted("hi"), "hello", max_turns=max_turns)


@pytest.mark.parametrize("bad_input", [None, 42, {"role": "user", "content": "hi"}, ["hi"]])
async def test_input_must_be_a_string_or_a_list_of_items(
    open_session: OpenSession, bad_input: Any
) -> None:
    session = open_session()
    with pytest.raises(TypeError, match="input"):
        await Runner.run(scripted("hi"), bad_input, session=session)
    assert await session.get_items() == []


async def test_cancelling_a_streamed_run_leaves_whole_turns_in_the_session(
    open_session: OpenSession,
) -> None:
    session = open_session()
    tool_started = asyncio.Event()

    @function_tool
    async def slow_search(query: str) -> str:
        """Search slowly."""
        tool_started.set()
        await asyncio.Event().wait()
        return "never"

    agent = scripted([function_call("slow_search", '{"query": "q"}', "c")], tools=[slow_search])

    async def consume() -> None:
        async for _ in Runner.run_streamed(agent, "find q", session=session).stream_events():
            pass

    task = asyncio.create_task(consume())
    await tool_started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await session.get_items() == [user_message("find q")]
    result = await Runner.run(scripted("Found nothing."), "any luck?", session=session)
    assert result.final_output == "Found nothing."
    assert [message_text(item) for item in await session.get_items()] == [
        "find q",
        "any luck?",
        "Found nothing.",
    ]


async def test_leaving_a_stream_early_cancels_the_run_before_the_turn_is_saved(
    open_session: OpenSession,
) -> None:
    session = open_session()
    release = asyncio.Event()

    @function_tool
    async def wait_for_release() -> str:
        """Wait until released."""
        await release.wait()
        return "released"

    agent = scripted(
        [function_call("wait_for_release", "{}", "c")], "done", tools=[wait_for_release]
    )
    streamed = Runner.run_streamed(agent, "go", session=session)
    events = streamed.stream_events()
    async for event in events:
        if event.type == "run_item_stream_event" and event.name == "tool_called":
            break
    await events.aclose()
    release.set()

    assert await session.get_items() == [user_message("go")]
    assert streamed.is_complete
    with pytest.raises(RunCancelledError, match="cancelled"):
        _ = streamed.final_output
