"""Stream events, handoffs and run_sync."""

from __future__ import annotations

import json
import threading
from typing import get_args

import pytest

from agent_sessions.agent import Agent
from agent_sessions.events import (
    AgentUpdatedStreamEvent,
    RunItemEventName,
    RunItemStreamEvent,
    StreamEvent,
    TextDeltaEvent,
)
from agent_sessions.items import (
    assistant_message,
    function_call,
    function_call_output,
    message_text,
    user_message,
)
from agent_sessions.models import OfflineModel
from agent_sessions.protocol import Item, Session
from agent_sessions.runner import Runner
from agent_sessions.tools import function_tool

from .conftest import OpenSession


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def collect(agent: Agent, text: str, session: Session) -> list[StreamEvent]:
    streamed = Runner.run_streamed(agent, text, session=session)
    return [event async for event in streamed.stream_events()]


def item_events(events: list[StreamEvent]) -> list[tuple[str, str]]:
    return [(e.name, e.agent_name) for e in events if isinstance(e, RunItemStreamEvent)]


def billing_handoff(billing: Agent) -> Item:
    return function_call(billing.handoff_tool_name, "{}", "handoff_1")


def test_item_event_names_are_one_declared_literal() -> None:
    assert get_args(RunItemEventName) == (
        "message_output_created",
        "tool_called",
        "tool_output",
        "handoff_requested",
        "handoff_occurred",
    )
    assert "handoff_occured" not in get_args(RunItemEventName)  # noqa: LR001 (the SDK's old name)


async def test_stream_names_a_tool_turn_then_the_message(open_session: OpenSession) -> None:
    call = function_call("add", '{"a": 2, "b": 3}', "c")
    agent = Agent("calc", "", OfflineModel([[call], "It is 5."]), tools=[add])
    events = await collect(agent, "2+3?", open_session())

    assert item_events(events) == [
        ("tool_called", "calc"),
        ("tool_output", "calc"),
        ("message_output_created", "calc"),
    ]


async def test_stream_sends_text_deltas_before_the_message(open_session: OpenSession) -> None:
    agent = Agent("a", "", OfflineModel(["Hello there friend"]))
    events = await collect(agent, "hi", open_session())

    deltas = [e.delta for e in events if isinstance(e, TextDeltaEvent)]
    assert len(deltas) == 3
    assert "".join(deltas) == "Hello there friend"
    assert isinstance(events[-1], RunItemStreamEvent)
    assert events[-1].item == assistant_message("Hello there friend")


async def test_streamed_result_is_available_after_the_stream(open_session: OpenSession) -> None:
    session = open_session()
    streamed = Runner.run_streamed(Agent("a", "", OfflineModel(["ok"])), "hi", session=session)
    with pytest.raises(RuntimeError, match="not finished"):
        _ = streamed.final_output
    async for _ in streamed.stream_events():
        pass

    assert streamed.is_complete
    assert streamed.final_output == "ok"
    assert streamed.new_items == [assistant_message("ok")]
    assert await session.get_items() == [user_message("hi"), assistant_message("ok")]


async def test_stream_events_can_be_iterated_only_once(open_session: OpenSession) -> None:
    streamed = Runner.run_streamed(Agent("a", "", OfflineModel(["ok"])), "hi")
    async for _ in streamed.stream_events():
        pass
    with pytest.raises(RuntimeError, match="only once"):
        async for _ in streamed.stream_events():
            pass


async def test_handoff_continues_with_the_target_on_the_same_session(
    open_session: OpenSession,
) -> None:
    session = open_session()
    billing = Agent("Billing", "Handle invoices.", OfflineModel(["Your invoice is paid."]))
    triage = Agent(
        "Triage", "Route.", OfflineModel([[billing_handoff(billing)]]), handoffs=[billing]
    )
    result = await Runner.run(triage, "Is my invoice paid?", session=session)

    assert result.last_agent is billing
    assert result.final_output == "Your invoice is paid."
    assert await session.get_items() == [
        user_message("Is my invoice paid?"),
        billing_handoff(billing),
        function_call_output("handoff_1", json.dumps({"assistant": "Billing"})),
        assistant_message("Your invoice is paid."),
    ]
    assert isinstance(billing.model, OfflineModel)
    assert billing.model.requests[0].instructions == "Handle invoices."
    assert message_text(billing.model.requests[0].input[0]) == "Is my invoice paid?"


async def test_handoff_target_sees_earlier_runs(open_session: OpenSession) -> None:
    session = open_session()
    billing = Agent("Billing", "", OfflineModel())
    triage = Agent(
        "Triage", "", OfflineModel(["Hello Ada.", [billing_handoff(billing)]]), handoffs=[billing]
    )
    await Runner.run(triage, "I am Ada", session=session)
    result = await Runner.run(triage, "Billing please", session=session)

    assert result.final_output == 'You said: "Billing please". Before that you said: "I am Ada".'


async def test_handoff_is_streamed_as_requested_then_occurred(open_session: OpenSession) -> None:
    billing = Agent("Billing", "", OfflineModel(["Paid."]))
    triage = Agent("Triage", "", OfflineModel([[billing_handoff(billing)]]), handoffs=[billing])
    events = await collect(triage, "invoice?", open_session())

    assert item_events(events) == [
        ("handoff_requested", "Triage"),
        ("handoff_occurred", "Triage"),
        ("message_output_created", "Billing"),
    ]
    updates = [e.new_agent.name for e in events if isinstance(e, AgentUpdatedStreamEvent)]
    assert updates == ["Triage", "Billing"]


async def test_second_handoff_in_one_turn_is_refused(open_session: OpenSession) -> None:
    session = open_session()
    billing, support = Agent("Billing", "", OfflineModel()), Agent("Support", "", OfflineModel())
    both = [
        function_call(billing.handoff_tool_name, "{}", "h1"),
        function_call(support.handoff_tool_name, "{}", "h2"),
    ]
    triage = Agent("Triage", "", OfflineModel([both]), handoffs=[billing, support])
    result = await Runner.run(triage, "help", session=session)

    assert result.last_agent is billing
    assert (await session.get_items())[4] == function_call_output(
        "h2", "Error: only one handoff per turn"
    )


async def test_handoffs_are_offered_to_the_model_as_tools() -> None:
    billing = Agent("Billing Team", "", OfflineModel())
    triage = Agent("Triage", "", OfflineModel(["hi"]), tools=[add], handoffs=[billing])
    await Runner.run(triage, "hello")

    assert isinstance(triage.model, OfflineModel)
    assert [tool.name for tool in triage.model.requests[0].tools] == [
        "add",
        "transfer_to_billing_team",
    ]


async def test_agent_with_two_tools_of_one_name_fails_before_saving(
    open_session: OpenSession,
) -> None:
    session = open_session()
    agent = Agent("a", "", OfflineModel(["hi"]), tools=[add, add])
    with pytest.raises(ValueError, match="several tools named add"):
        await Runner.run(agent, "hello", session=session)
    assert await session.get_items() == []


def test_agent_needs_a_name() -> None:
    with pytest.raises(ValueError, match="name"):
        Agent("  ", "", OfflineModel())


async def test_run_sync_inside_an_event_loop_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match=r"await Runner\.run\(\)"):
        Runner.run_sync(Agent("a", "", OfflineModel(["hi"])), "hello")


def test_run_sync_remembers_across_calls(open_session: OpenSession) -> None:
    session = open_session()
    agent = Agent("a", "", OfflineModel())
    outputs: list[str] = []

    def in_a_thread_without_a_loop() -> None:
        Runner.run_sync(agent, "I am Ada", session=session)
        outputs.append(Runner.run_sync(agent, "Who am I?", session=session).final_output)

    worker = threading.Thread(target=in_a_thread_without_a_loop)
    worker.start()
    worker.join()

    assert outputs == ['You said: "Who am I?". Before that you said: "I am Ada".']
