"""What a run reads from and saves to its session."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent_sessions.agent import Agent
from agent_sessions.items import (
    assistant_message,
    function_call,
    function_call_output,
    message_text,
    user_message,
)
from agent_sessions.models import OfflineModel
from agent_sessions.protocol import Item, SessionSettings
from agent_sessions.runner import RunConfig, Runner
from agent_sessions.tools import function_tool

from .conftest import OpenSession


def offline_agent(*script: str | list[Item], name: str = "assistant") -> Agent:
    return Agent(name, "Be brief.", OfflineModel(script))


def seen_texts(agent: Agent, call: int = -1) -> list[str]:
    """The message texts (and tool outputs) the agent's model received in one call."""
    assert isinstance(agent.model, OfflineModel)
    return [
        item["output"] if item.get("type") == "function_call_output" else message_text(item)
        for item in agent.model.requests[call].input
    ]


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_second_turn_sees_the_first(open_session: OpenSession) -> None:
    session = open_session()
    agent = offline_agent("Noted.", "Tokyo, you said.")
    await Runner.run(agent, "I am planning a trip to Tokyo", session=session)
    result = await Runner.run(agent, "Where was I going?", session=session)

    assert seen_texts(agent) == ["I am planning a trip to Tokyo", "Noted.", "Where was I going?"]
    assert result.final_output == "Tokyo, you said."


async def test_run_saves_input_then_final_output(open_session: OpenSession) -> None:
    session = open_session()
    await Runner.run(offline_agent("Hi there!"), "Hello", session=session)

    assert await session.get_items() == [user_message("Hello"), assistant_message("Hi there!")]


async def test_list_input_is_appended_after_history(open_session: OpenSession) -> None:
    session = open_session()
    await session.add_items([user_message("earlier")])
    agent = offline_agent("ok")
    new_input = [user_message("one"), user_message("two")]
    await Runner.run(agent, new_input, session=session)

    assert seen_texts(agent) == ["earlier", "one", "two"]
    assert (await session.get_items())[1:3] == new_input


async def test_without_a_session_nothing_is_remembered() -> None:
    agent = offline_agent("Noted.", "What trip?")
    await Runner.run(agent, "I am planning a trip to Tokyo")
    await Runner.run(agent, "Where was I going?")

    assert seen_texts(agent) == ["Where was I going?"]


async def test_two_sessions_stay_apart(open_session: OpenSession) -> None:
    alice, bob = open_session("user_alice"), open_session("user_bob")
    agent = offline_agent()
    await Runner.run(agent, "I like pizza", session=alice)
    await Runner.run(agent, "I like sushi", session=bob)
    await Runner.run(agent, "What do I like?", session=alice)

    assert "sushi" not in " ".join(seen_texts(agent))
    bob_items = await bob.get_items()
    assert len(bob_items) == 2
    assert bob_items[0] == user_message("I like sushi")
    assert len(await alice.get_items()) == 4


async def test_concurrent_runs_on_many_sessions_keep_their_own_turns(
    open_session: OpenSession,
) -> None:
    sessions = [open_session(f"user_{i}") for i in range(20)]
    await asyncio.gather(
        *(
            Runner.run(offline_agent(f"answer {i}"), f"question {i}", session=session)
            for i, session in enumerate(sessions)
        )
    )

    for i, session in enumerate(sessions):
        assert await session.get_items() == [
            user_message(f"question {i}"),
            assistant_message(f"answer {i}"),
        ]


async def test_two_agents_share_one_session(open_session: OpenSession) -> None:
    session = open_session()
    planner, critic = offline_agent("Fly on Monday."), offline_agent("Monday is fine.")
    await Runner.run(planner, "When should I fly?", session=session)
    await Runner.run(critic, "Is that a good plan?", session=session)

    assert seen_texts(critic) == ["When should I fly?", "Fly on Monday.", "Is that a good plan?"]


async def test_correction_pattern_changes_what_the_next_run_sees(
    open_session: OpenSession,
) -> None:
    session = open_session()
    agent = offline_agent("4", "5")
    await Runner.run(agent, "What's 2 + 2?", session=session)
    assert await session.pop_item() == assistant_message("4")
    assert await session.pop_item() == user_message("What's 2 + 2?")

    result = await Runner.run(agent, "What's 2 + 3?", session=session)

    assert seen_texts(agent) == ["What's 2 + 3?"]
    assert result.final_output == "5"
    assert await session.get_items() == [user_message("What's 2 + 3?"), assistant_message("5")]


async def fill(session_items: list[str], open_session: OpenSession, limit: int | None) -> Agent:
    """Run one more turn on a session holding ``session_items`` (user messages)."""
    session = open_session(limit=limit)
    await session.add_items([user_message(text) for text in session_items])
    agent = offline_agent("ok")
    await Runner.run(agent, "new", session=session)
    return agent


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, ["new"]),
        (2, ["c", "d", "new"]),
        (100, ["a", "b", "c", "d", "new"]),
    ],
)
async def test_session_limit_caps_the_history_sent(
    open_session: OpenSession, limit: int, expected: list[str]
) -> None:
    agent = await fill(["a", "b", "c", "d"], open_session, limit)

    assert seen_texts(agent) == expected


async def test_run_config_limit_overrides_the_sessions_own(open_session: OpenSession) -> None:
    session = open_session(limit=100)
    await session.add_items([user_message(text) for text in "abcd"])
    agent = offline_agent("ok")
    config = RunConfig(session_settings=SessionSettings(limit=1))
    await Runner.run(agent, "new", session=session, run_config=config)

    assert seen_texts(agent) == ["d", "new"]


async def test_limit_still_saves_everything(open_session: OpenSession) -> None:
    session = open_session(limit=0)
    await Runner.run(offline_agent("ok"), "new", session=session)

    assert len(await session.get_items(limit=None)) == 0  # the session's own limit applies
    assert await session.get_items(limit=10) == [user_message("new"), assistant_message("ok")]


async def test_tool_turn_is_saved_as_call_then_output(open_session: OpenSession) -> None:
    session = open_session()
    call = function_call("weather", '{"city": "Oslo"}', "call_1")
    agent = Agent("a", "", OfflineModel([[call], "Sunny."]), tools=[weather])
    await Runner.run(agent, "Weather in Oslo?", session=session)

    assert await session.get_items() == [
        user_message("Weather in Oslo?"),
        call,
        function_call_output("call_1", "sunny in Oslo"),
        assistant_message("Sunny."),
    ]


async def test_tool_output_cut_off_from_its_call_is_not_sent(open_session: OpenSession) -> None:
    session = open_session(limit=2)
    call = function_call("weather", '{"city": "Oslo"}', "call_1")
    await Runner.run(
        Agent("a", "", OfflineModel([[call], "Sunny."]), tools=[weather]),
        "Weather in Oslo?",
        session=session,
    )
    agent = offline_agent("ok")
    await Runner.run(agent, "Thanks", session=session)

    # the latest 2 items are the call's output and "Sunny.": the output lost its call
    assert seen_texts(agent) == ["Sunny.", "Thanks"]


async def test_tool_call_without_its_output_is_not_sent(open_session: OpenSession) -> None:
    session = open_session()
    call = function_call("weather", '{"city": "Oslo"}', "call_1")
    await session.add_items([user_message("Weather?"), call])  # the output was popped
    agent = offline_agent("ok")
    await Runner.run(agent, "Hello?", session=session)

    assert seen_texts(agent) == ["Weather?", "Hello?"]
    assert (await session.get_items())[1] == call  # not sent, yet never deleted


async def test_callback_may_reshape_the_model_input(open_session: OpenSession) -> None:
    session = open_session()
    await session.add_items([user_message("old 1"), user_message("old 2")])
    agent = offline_agent("ok")

    def latest_only(history: list[Item], new_input: list[Item]) -> list[Item]:
        return history[-1:] + new_input

    config = RunConfig(session_input_callback=latest_only)
    await Runner.run(agent, "new", session=session, run_config=config)

    assert seen_texts(agent) == ["old 2", "new"]
    assert len(await session.get_items()) == 4


async def test_async_callback_is_awaited(open_session: OpenSession) -> None:
    session = open_session()
    agent = offline_agent("ok")

    async def shout(history: list[Item], new_input: list[Item]) -> list[Item]:
        return history + [user_message(message_text(item).upper()) for item in new_input]

    config = RunConfig(session_input_callback=shout)
    await Runner.run(agent, "hello", session=session, run_config=config)

    assert seen_texts(agent) == ["HELLO"]
    assert (await session.get_items())[0] == user_message("HELLO")


async def test_callback_repeating_history_does_not_grow_the_store(
    open_session: OpenSession,
) -> None:
    session = open_session()
    await session.add_items([user_message("a"), assistant_message("b")])
    agent = offline_agent("ok")

    def twice(history: list[Item], new_input: list[Item]) -> list[Item]:
        return history + [dict(item) for item in history] + new_input + new_input

    config = RunConfig(session_input_callback=twice)
    await Runner.run(agent, "c", session=session, run_config=config)

    assert seen_texts(agent) == ["a", "b", "a", "b", "c", "c"]
    assert [message_text(item) for item in await session.get_items()] == ["a", "b", "c", "ok"]


@pytest.mark.parametrize("returned", [None, "text", (user_message("x"),), [user_message("x"), 3]])
async def test_callback_not_returning_a_list_of_items_is_a_clear_error(
    open_session: OpenSession, returned: object
) -> None:
    session = open_session()

    def broken(history: list[Item], new_input: list[Item]) -> list[Item]:
        return returned  # type: ignore[return-value]

    config = RunConfig(session_input_callback=broken)
    with pytest.raises(TypeError, match="session_input_callback"):
        await Runner.run(offline_agent("ok"), "hello", session=session, run_config=config)
    assert await session.get_items() == []


async def test_callback_receives_copies_it_may_mutate(open_session: OpenSession) -> None:
    session = open_session()
    await session.add_items([user_message("kept")])

    def vandal(history: list[Item], new_input: list[Item]) -> list[Item]:
        history[0]["content"] = "changed"
        return new_input

    config = RunConfig(session_input_callback=vandal)
    await Runner.run(offline_agent("ok"), "new", session=session, run_config=config)

    assert (await session.get_items())[0] == user_message("kept")


async def test_input_is_saved_once_however_many_turns(open_session: OpenSession) -> None:
    session = open_session()
    calls = [[function_call("weather", json.dumps({"city": c}), f"call_{c}")] for c in "xyz"]
    agent = Agent("a", "", OfflineModel([*calls, "done"]), tools=[weather])
    await Runner.run(agent, "go", session=session)

    texts = [message_text(item) for item in await session.get_items()]
    assert texts.count("go") == 1
    assert len(texts) == 1 + 3 * 2 + 1


async def test_retry_after_a_failed_model_call_saves_and_sends_the_input_once(
    open_session: OpenSession,
) -> None:
    session = open_session()
    await Runner.run(offline_agent("hi"), "hello", session=session)
    agent = offline_agent()
    agent.model = OfflineModel([ConnectionError("model down"), "Paris."])
    with pytest.raises(ConnectionError):
        await Runner.run(agent, "Capital of France?", session=session)

    await Runner.run(agent, "Capital of France?", session=session)

    assert seen_texts(agent) == ["hello", "hi", "Capital of France?"]
    assert [message_text(item) for item in await session.get_items()] == [
        "hello",
        "hi",
        "Capital of France?",
        "Paris.",
    ]


async def test_run_result_lists_the_runs_own_items(open_session: OpenSession) -> None:
    session = open_session()
    await session.add_items([user_message("old")])
    result = await Runner.run(offline_agent("ok"), "new", session=session)

    assert result.input == [user_message("new")]
    assert result.new_items == [assistant_message("ok")]
    assert result.to_input_list() == [user_message("new"), assistant_message("ok")]
