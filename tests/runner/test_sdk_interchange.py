"""Histories are interchangeable with the real OpenAI Agents SDK's Runner: each runner
continues a conversation the other wrote, on one SQLiteSession (a local SDK model, no
network)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

import agents
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from agent_sessions.agent import Agent
from agent_sessions.items import function_call, message_text, user_message
from agent_sessions.models import OfflineModel, to_chat_messages
from agent_sessions.runner import Runner
from agent_sessions.sdk import as_agents_session
from agent_sessions.tools import function_tool

from .conftest import OpenSession

NO_TRACING = agents.RunConfig(tracing_disabled=True)  # tracing would export to the network


class SDKReplyModel(agents.Model):
    """An SDK model that answers ``text`` and keeps the input items it was given."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.inputs: list[list[Any]] = []

    async def get_response(
        self, system_instructions: str | None, input: str | list[Any], *args: Any, **kwargs: Any
    ) -> agents.ModelResponse:
        self.inputs.append(
            copy.deepcopy([user_message(input)] if isinstance(input, str) else input)
        )
        reply = ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=self.text, annotations=[])],
        )
        return agents.ModelResponse(output=[reply], usage=agents.Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("these tests do not stream the SDK model")


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_sdk_runner_continues_a_history_our_runner_wrote(
    open_session: OpenSession,
) -> None:
    session = open_session()
    call = function_call("weather", '{"city": "Oslo"}', "call_1")
    ours = Agent("a", "", OfflineModel([[call], "Sunny in Oslo."]), tools=[weather])
    await Runner.run(ours, "Weather in Oslo?", session=session)

    sdk_model = SDKReplyModel("Tomorrow too.")
    sdk_agent = agents.Agent(name="sdk", instructions="Be brief.", model=sdk_model)
    await agents.Runner.run(
        sdk_agent, "And tomorrow?", session=as_agents_session(session), run_config=NO_TRACING
    )

    seen = sdk_model.inputs[0]
    assert [item.get("type", "message") for item in seen] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
    ]
    assert seen[1]["call_id"] == seen[2]["call_id"] == "call_1"
    assert [message_text(item) for item in (seen[0], seen[3], seen[4])] == [
        "Weather in Oslo?",
        "Sunny in Oslo.",
        "And tomorrow?",
    ]


async def test_our_runner_continues_a_history_the_sdk_runner_wrote(
    open_session: OpenSession,
) -> None:
    session = open_session()
    sdk_agent = agents.Agent(name="sdk", instructions="", model=SDKReplyModel("Hi Ada."))
    await agents.Runner.run(
        sdk_agent, "I am Ada", session=as_agents_session(session), run_config=NO_TRACING
    )

    ours = Agent("a", "", OfflineModel())
    result = await Runner.run(ours, "Who am I?", session=session)

    assert result.final_output == 'You said: "Who am I?". Before that you said: "I am Ada".'
    assert isinstance(ours.model, OfflineModel)
    assert to_chat_messages("", ours.model.requests[0].input) == [
        {"role": "user", "content": "I am Ada"},
        {"role": "assistant", "content": "Hi Ada."},
        {"role": "user", "content": "Who am I?"},
    ]
    assert (await session.get_items())[-1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": result.final_output}],
    }
