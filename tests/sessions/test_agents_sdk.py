"""Our SQLiteSession under the real OpenAI Agents SDK Runner (a local model, no network)."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import agents
import pytest
from agents import Agent, Model, ModelResponse, ModelSettings, RunConfig, Runner, Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from agent_sessions import Item, Session, SessionSettings, SQLiteSession
from agent_sessions.sdk import as_agents_session

# Tracing would try to export to the network.
NO_TRACING = RunConfig(tracing_disabled=True)


class ScriptedModel(Model):
    """Answers every turn with a numbered text message and records the input it saw."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        seen = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.inputs.append(copy.deepcopy(list(seen)))
        turn = len(self.inputs)
        reply = ResponseOutputMessage(
            id=f"msg_{turn}",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=f"reply {turn}", annotations=[])],
        )
        return ModelResponse(output=[reply], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("these tests run the model without streaming")


class RecordingSQLiteSession(SQLiteSession):
    """Keeps a copy of every batch the Runner writes, to compare with what is stored."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.written: list[Item] = []

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        self.written.extend(copy.deepcopy(items))


def contents(items: list[Any]) -> list[tuple[str, str]]:
    """(role, text) of each message item, whichever content shape the SDK used."""
    result = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        result.append((item.get("role"), content))
    return result


@pytest.fixture
def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
def agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="assistant", instructions="Be brief.", model=model)


def test_our_session_is_an_agents_session() -> None:
    session = SQLiteSession("sdk")
    assert isinstance(session, agents.memory.Session)
    assert as_agents_session(session) is session


def test_as_agents_session_refuses_an_object_that_is_not_a_session() -> None:
    with pytest.raises(TypeError, match=r"not an agents\.memory\.Session"):
        as_agents_session(object())  # type: ignore[arg-type]


async def test_second_run_sees_the_first_turn(
    tmp_path: Path, agent: Agent[Any], model: ScriptedModel
) -> None:
    async with SQLiteSession("user-1", tmp_path / "chat.db") as session:
        await Runner.run(
            agent, "My name is Ada.", session=as_agents_session(session), run_config=NO_TRACING
        )
        await Runner.run(
            agent, "What is my name?", session=as_agents_session(session), run_config=NO_TRACING
        )
    assert contents(model.inputs[1]) == [
        ("user", "My name is Ada."),
        ("assistant", "reply 1"),
        ("user", "What is my name?"),
    ]


async def test_stored_items_are_what_the_runner_wrote(tmp_path: Path, agent: Agent[Any]) -> None:
    async with RecordingSQLiteSession("user-1", tmp_path / "chat.db") as session:
        await Runner.run(agent, "Hello", session=as_agents_session(session), run_config=NO_TRACING)
        await Runner.run(agent, "Again", session=as_agents_session(session), run_config=NO_TRACING)
        stored = await session.get_items()
    assert stored == session.written
    assert contents(stored) == [
        ("user", "Hello"),
        ("assistant", "reply 1"),
        ("user", "Again"),
        ("assistant", "reply 2"),
    ]


async def test_history_survives_reopening_the_file(
    tmp_path: Path, agent: Agent[Any], model: ScriptedModel
) -> None:
    async with SQLiteSession("user-1", tmp_path / "chat.db") as session:
        await Runner.run(
            agent, "Remember 42.", session=as_agents_session(session), run_config=NO_TRACING
        )
    async with SQLiteSession("user-1", tmp_path / "chat.db") as reopened:
        await Runner.run(
            agent, "What number?", session=as_agents_session(reopened), run_config=NO_TRACING
        )
    assert contents(model.inputs[1])[:2] == [("user", "Remember 42."), ("assistant", "reply 1")]


async def test_run_config_session_settings_limit_the_history(
    agent: Agent[Any], model: ScriptedModel
) -> None:
    limited = RunConfig(tracing_disabled=True, session_settings=agents.SessionSettings(limit=2))
    async with SQLiteSession("user-1") as session:
        for text in ("one", "two", "three"):
            await Runner.run(agent, text, session=as_agents_session(session), run_config=limited)
    assert contents(model.inputs[2]) == [
        ("user", "two"),
        ("assistant", "reply 2"),
        ("user", "three"),
    ]


async def test_run_config_takes_our_session_settings(
    agent: Agent[Any], model: ScriptedModel
) -> None:
    ours: Any = SessionSettings(limit=2)  # the SDK's annotation names its own class
    limited = RunConfig(tracing_disabled=True, session_settings=ours)
    assert limited.session_settings is ours
    async with SQLiteSession("user-1", session_settings=SessionSettings(limit=1)) as session:
        for text in ("one", "two", "three"):
            await Runner.run(agent, text, session=as_agents_session(session), run_config=limited)
    assert contents(model.inputs[2]) == [
        ("user", "two"),
        ("assistant", "reply 2"),
        ("user", "three"),
    ]


async def test_session_settings_limit_the_history(agent: Agent[Any], model: ScriptedModel) -> None:
    async with SQLiteSession("user-1", session_settings=SessionSettings(limit=1)) as session:
        for text in ("one", "two"):
            await Runner.run(agent, text, session=as_agents_session(session), run_config=NO_TRACING)
    assert contents(model.inputs[1]) == [("assistant", "reply 1"), ("user", "two")]


async def test_run_config_settings_override_the_session_settings(
    agent: Agent[Any], model: ScriptedModel
) -> None:
    override = RunConfig(tracing_disabled=True, session_settings=agents.SessionSettings(limit=2))
    async with SQLiteSession("user-1", session_settings=SessionSettings(limit=1)) as session:
        for text in ("one", "two"):
            await Runner.run(agent, text, session=as_agents_session(session), run_config=override)
    assert contents(model.inputs[1]) == [
        ("user", "one"),
        ("assistant", "reply 1"),
        ("user", "two"),
    ]


def test_sdk_session_settings_are_accepted_by_the_constructor() -> None:
    sdk_settings: Any = agents.SessionSettings(limit=3)  # not our type: mypy would refuse it
    session = SQLiteSession("sdk", session_settings=sdk_settings)
    assert session.session_settings.limit == 3
    assert session.session_settings is sdk_settings  # kept, for the SDK's wrappers


def accepts_our_session(session: Session) -> agents.memory.Session:
    """The typed path (checked by mypy): our Session where the SDK's is expected."""
    return as_agents_session(session)
