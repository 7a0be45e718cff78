"""Code written for the OpenAI Agents SDK runs on our Runner: the SDK's Agent keywords, a
model that may be left out or named, instructions functions, SDK-shaped stream events,
run_streamed starting at once and cancel(), run_config dicts, sessions without
session_settings, and the exports SDK users look for."""

from __future__ import annotations

import asyncio
import copy
import pickle
import subprocess
import sys
from typing import Any

import agents
import pytest

import agent_sessions
from agent_sessions import (
    DEFAULT_MODEL_NAME,
    Agent,
    Item,
    ModelNotConfiguredError,
    OfflineModel,
    RunCancelledError,
    RunContextWrapper,
    Runner,
    SessionSettings,
    function_tool,
)
from agent_sessions.agent import Instructions
from agent_sessions.items import function_call, function_call_output, message_text, user_message
from agent_sessions.sdk import to_agents_session_settings

from .conftest import OpenSession
from .test_openai_model import ChatCompletionsServer, server

__all__ = ["server"]  # the loopback Chat Completions server fixture


@pytest.fixture
def no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_DEFAULT_MODEL"):
        monkeypatch.delenv(name, raising=False)


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def test_agent_takes_the_sdk_keywords() -> None:
    agent = Agent(name="Assistant", instructions="Reply concisely.", model=OfflineModel(["Hi."]))
    result = await Runner.run(agent, "Hello")
    assert result.final_output == "Hi."


@pytest.mark.usefixtures("no_api_key")
@pytest.mark.parametrize("streamed", [False, True])
async def test_no_model_and_no_api_key_fails_before_anything_is_saved(
    open_session: OpenSession, streamed: bool
) -> None:
    session = open_session()
    agent = Agent(name="Assistant", instructions="Reply concisely.")

    async def run() -> None:
        if streamed:
            async for _ in Runner.run_streamed(agent, "Hello", session=session).stream_events():
                pass
        else:
            await Runner.run(agent, "Hello", session=session)

    with pytest.raises(ModelNotConfiguredError, match="OPENAI_API_KEY is not set"):
        await run()
    assert await session.get_items() == []


@pytest.mark.usefixtures("no_api_key")
async def test_a_handoff_target_without_a_model_fails_before_anything_is_saved(
    open_session: OpenSession,
) -> None:
    session = open_session()
    billing = Agent(name="Billing")
    agent = Agent(name="Front", model=OfflineModel(["hi"]), handoffs=[billing])
    with pytest.raises(ModelNotConfiguredError, match="'Billing'"):
        await Runner.run(agent, "Hello", session=session)
    assert await session.get_items() == []


@pytest.mark.usefixtures("no_api_key")
async def test_no_model_runs_the_default_openai_compatible_model(
    server: ChatCompletionsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.replies = [{"content": "Hi."}, {"content": "Hello again."}]
    agent = Agent(name="Assistant", instructions="Reply concisely.")

    assert (await Runner.run(agent, "Hello")).final_output == "Hi."
    monkeypatch.setenv("OPENAI_DEFAULT_MODEL", "local-model")
    assert (await Runner.run(agent, "Hello")).final_output == "Hello again."

    assert [request["model"] for request in server.requests] == [DEFAULT_MODEL_NAME, "local-model"]
    assert server.headers[0]["authorization"] == "Bearer sk-test"


@pytest.mark.usefixtures("no_api_key")
async def test_a_model_name_is_an_openai_compatible_model(
    server: ChatCompletionsServer, monkeypatch: pytest.MonkeyPatch, open_session: OpenSession
) -> None:
    session = open_session()
    agent = Agent(name="Assistant", instructions="Reply concisely.", model="gpt-4o-mini")
    with pytest.raises(agents_openai_error()):  # no key: refused before anything is saved
        await Runner.run(agent, "Hello", session=session)
    assert await session.get_items() == []

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.replies = [{"content": "Hi."}]
    result = await Runner.run(agent, "Hello", session=session)
    assert result.final_output == "Hi."
    assert server.requests[0]["model"] == "gpt-4o-mini"
    assert server.requests[0]["messages"][0] == {"role": "system", "content": "Reply concisely."}


def agents_openai_error() -> type[Exception]:
    import openai

    return openai.OpenAIError


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": 42}, "model must be a Model"),
        ({"model": ""}, "model name must not be empty"),
        ({"instructions": 42}, "instructions must be a str, a function"),
        ({"instructions": lambda context: "x"}, "must take two arguments"),
        ({"tools": weather}, "tools must be a list of FunctionTool"),
        ({"tools": [print]}, r"tools\[0\] is a builtin_function_or_method.*@function_tool"),
        ({"handoffs": ["Billing"]}, r"handoffs\[0\] is a str, not a Agent"),
        ({"handoffs": Agent(name="Billing")}, "handoffs must be a list of Agent"),
    ],
)
def test_bad_types_are_refused_when_the_agent_is_made(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        Agent(name="Assistant", **kwargs)


async def test_instructions_functions_get_the_context_and_the_agent() -> None:
    def sync_instructions(context: RunContextWrapper[dict[str, str]], agent: Agent) -> str:
        return f"You are {agent.name}; the user is {context.context['user']}."

    async def async_instructions(context: RunContextWrapper[dict[str, str]], agent: Agent) -> str:
        await asyncio.sleep(0)
        return f"Async {agent.name} for {context.context['user']}."

    cases: list[tuple[Instructions, str]] = [
        (sync_instructions, "You are Guide; the user is Ada."),
        (async_instructions, "Async Guide for Ada."),
    ]
    for instructions, expected in cases:
        model = OfflineModel(["ok"])
        agent = Agent(name="Guide", instructions=instructions, model=model)
        await Runner.run(agent, "Hello", context={"user": "Ada"})
        assert model.requests[0].instructions == expected


async def test_instructions_are_computed_for_every_model_call() -> None:
    calls: list[int] = []

    def counting(context: RunContextWrapper[None], agent: Agent) -> str:
        calls.append(len(calls))
        return f"call {len(calls)}"

    model = OfflineModel([[function_call("weather", '{"city": "Oslo"}', "c")], "Sunny."])
    agent = Agent(name="Guide", instructions=counting, model=model, tools=[weather])
    await Runner.run(agent, "Weather?")
    assert [request.instructions for request in model.requests] == ["call 1", "call 2"]


async def test_instructions_returning_a_non_str_fail_before_anything_is_saved(
    open_session: OpenSession,
) -> None:
    session = open_session()

    def not_text(context: RunContextWrapper[None], agent: Agent) -> Any:
        return 42

    agent = Agent(name="Guide", instructions=not_text, model=OfflineModel())
    with pytest.raises(TypeError, match="returned a int, not a str"):
        await Runner.run(agent, "Hello", session=session)
    assert await session.get_items() == []


class ListSession:
    """A session written for the SDK's protocol: no session_settings attribute."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.items: list[Item] = []

    async def get_items(self, limit: int | None = None) -> list[Item]:
        return list(self.items if limit is None else self.items[-limit:])

    async def add_items(self, items: list[Item]) -> None:
        self.items += items

    async def pop_item(self) -> Item | None:
        return self.items.pop() if self.items else None

    async def clear_session(self) -> None:
        self.items.clear()


async def test_a_session_without_session_settings_is_accepted_and_limited_by_run_config() -> None:
    session = ListSession("s")
    agent = Agent(name="Echo", model=OfflineModel())
    await Runner.run(agent, "one", session=session)
    await Runner.run(agent, "two", session=session)
    result = await Runner.run(
        agent, "three", session=session, run_config={"session_settings": {"limit": 2}}
    )
    assert result.final_output == 'You said: "three". Before that you said: "two".'
    assert len(session.items) == 6


async def test_a_session_missing_a_method_is_named() -> None:
    class NoPop:
        session_id = "s"

        async def get_items(self, limit: int | None = None) -> list[Item]:
            return []

        async def add_items(self, items: list[Item]) -> None:
            return None

    agent = Agent(name="Echo", model=OfflineModel())
    with pytest.raises(TypeError, match="NoPop lacks pop_item, clear_session"):
        await Runner.run(agent, "hi", session=NoPop())  # type: ignore[arg-type]


async def test_get_items_returning_a_non_list_is_a_clear_error() -> None:
    session = ListSession("s")

    async def broken(limit: int | None = None) -> Any:
        return "not a list"

    session.get_items = broken  # type: ignore[method-assign]
    with pytest.raises(TypeError, match=r"ListSession.get_items\(\) must return a list"):
        await Runner.run(Agent(name="Echo", model=OfflineModel()), "hi", session=session)
    assert session.items == []


async def test_run_config_as_a_dict_and_unknown_keys(open_session: OpenSession) -> None:
    session = open_session()
    agent = Agent(name="Echo", model=OfflineModel())
    await Runner.run(agent, "one", session=session)
    result = await Runner.run(
        agent, "two", session=session, run_config={"session_settings": SessionSettings(limit=0)}
    )
    assert result.final_output.startswith('You said: "two". That is the first')
    with pytest.raises(TypeError, match="unknown run_config keys: tracing_disabled"):
        await Runner.run(agent, "x", session=session, run_config={"tracing_disabled": True})
    with pytest.raises(TypeError, match="session_settings must be a SessionSettings"):
        await Runner.run(agent, "x", session=session, run_config={"session_settings": 5})
    assert len(await session.get_items()) == 4


async def test_stream_events_carry_the_sdks_type_discriminators() -> None:
    call = function_call("weather", '{"city": "Oslo"}', "c")
    agent = Agent(name="Guide", model=OfflineModel([[call], "Sunny there."]), tools=[weather])
    seen: list[str] = []
    result = Runner.run_streamed(agent, input="Weather in Oslo?")
    async for event in result.stream_events():
        if event.type == "raw_response_event":
            seen.append(f"delta:{event.delta}")
        elif event.type == "agent_updated_stream_event":
            seen.append(f"agent:{event.new_agent.name}")
        elif event.type == "run_item_stream_event":
            seen.append(event.name)
    assert seen == [
        "agent:Guide",
        "tool_called",
        "tool_output",
        "delta:Sunny ",
        "delta:there.",
        "message_output_created",
    ]


async def test_the_sdks_raw_response_loop_runs_unchanged(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # From the Agents SDK's streaming guide; the import line changed and model= added.
    from openai.types.responses import ResponseTextDeltaEvent

    from agent_sessions import Agent, Runner

    async def main() -> None:
        agent = Agent(
            name="Joker",
            instructions="You are a helpful assistant.",
            model=OfflineModel(["Why did the session stay? It had memory."]),
        )

        result = Runner.run_streamed(agent, input="Please tell me 5 jokes.")
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(
                event.data, ResponseTextDeltaEvent
            ):
                print(event.data.delta, end="", flush=True)

    await main()
    assert capsys.readouterr().out == "Why did the session stay? It had memory."


class AnsweredSession(ListSession):
    """Sets ``answered`` once an assistant message is stored."""

    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.answered = asyncio.Event()

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        if any(item.get("role") == "assistant" for item in items):
            self.answered.set()


async def test_run_streamed_starts_the_run_without_iteration() -> None:
    session = AnsweredSession("s")
    agent = Agent(name="Echo", model=OfflineModel(["Hi."]))
    streamed = Runner.run_streamed(agent, "Hello", session=session)

    await asyncio.wait_for(session.answered.wait(), timeout=30)  # nobody iterates

    assert [message_text(item) for item in session.items] == ["Hello", "Hi."]
    names = [getattr(event, "name", event.type) async for event in streamed.stream_events()]
    assert names == ["agent_updated_stream_event", "raw_response_event", "message_output_created"]
    assert streamed.is_complete
    assert streamed.final_output == "Hi."


def test_run_streamed_outside_an_event_loop_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="inside a running event loop"):
        Runner.run_streamed(Agent(name="Echo", model=OfflineModel()), "Hello")


def blocking_agent(release: asyncio.Event, started: asyncio.Event) -> tuple[Agent, OfflineModel]:
    @function_tool
    async def wait_for_release() -> str:
        """Wait until released."""
        started.set()
        await release.wait()
        return "released"

    model = OfflineModel([[function_call("wait_for_release", "{}", "c")], "never reached"])
    return Agent(name="Slow", model=model, tools=[wait_for_release]), model


async def test_cancel_immediately_keeps_only_whole_turns(open_session: OpenSession) -> None:
    session = open_session()
    release, started = asyncio.Event(), asyncio.Event()
    agent, model = blocking_agent(release, started)
    streamed = Runner.run_streamed(agent, "go", session=session)
    await asyncio.wait_for(started.wait(), timeout=30)

    streamed.cancel()
    events = [event async for event in streamed.stream_events()]  # ends without an error

    assert streamed.is_complete
    assert [getattr(event, "name", None) for event in events][-1] == "tool_called"
    assert await session.get_items() == [user_message("go")]
    assert len(model.requests) == 1
    with pytest.raises(RunCancelledError):
        _ = streamed.final_output


async def test_cancel_after_turn_saves_the_turn_then_stops(open_session: OpenSession) -> None:
    session = open_session()
    release, started = asyncio.Event(), asyncio.Event()
    agent, model = blocking_agent(release, started)
    streamed = Runner.run_streamed(agent, "go", session=session)
    await asyncio.wait_for(started.wait(), timeout=30)

    streamed.cancel(mode="after_turn")
    release.set()
    names = [getattr(event, "name", None) async for event in streamed.stream_events()]

    assert names[-1] == "tool_output"
    assert await session.get_items() == [
        user_message("go"),
        function_call("wait_for_release", "{}", "c"),
        function_call_output("c", "released"),
    ]
    assert len(model.requests) == 1  # stopped before the next model call
    with pytest.raises(RunCancelledError):
        _ = streamed.result


async def test_cancel_before_the_run_began_ends_the_stream(open_session: OpenSession) -> None:
    session = open_session()
    streamed = Runner.run_streamed(Agent(name="Echo", model=OfflineModel()), "Hi", session=session)
    streamed.cancel()

    async def drain() -> list[Any]:
        return [event async for event in streamed.stream_events()]

    assert await asyncio.wait_for(drain(), timeout=30) == []
    assert await session.get_items() == []
    with pytest.raises(RunCancelledError):
        _ = streamed.final_output


async def test_cancel_mode_is_checked() -> None:
    streamed = Runner.run_streamed(Agent(name="Echo", model=OfflineModel()), "Hello")
    with pytest.raises(ValueError, match="cancel mode"):
        streamed.cancel(mode="later")  # type: ignore[arg-type]
    async for _ in streamed.stream_events():
        pass


def test_what_sdk_users_import_is_at_the_top_of_the_package() -> None:
    from agent_sessions import runner, urls

    assert agent_sessions.MaxTurnsExceeded is runner.MaxTurnsExceeded
    assert agent_sessions.ModelBehaviorError is runner.ModelBehaviorError
    assert agent_sessions.open_session is urls.open_session
    assert agent_sessions.open_store is urls.open_store


def test_the_sdks_run_config_takes_our_session_settings_as_they_are() -> None:
    settings = SessionSettings(limit=3)
    ours: Any = settings  # mypy wants the SDK's type; at run time ours pass
    config = agents.RunConfig(session_settings=ours)
    assert config.session_settings is ours  # not converted
    # what the SDK's Runner does with it: the session's settings resolved against it
    assert agents.SessionSettings(limit=10).resolve(ours) == agents.SessionSettings(limit=3)
    unset: Any = SessionSettings()
    assert agents.SessionSettings(limit=10).resolve(unset).limit == 10
    # still our class for everything else: type(), equality, pickling, resolve()
    assert type(settings) is SessionSettings
    assert settings == SessionSettings(limit=3)
    assert type(pickle.loads(pickle.dumps(settings))) is SessionSettings
    assert type(copy.deepcopy(settings)) is SessionSettings
    assert type(settings.resolve({"limit": 4})) is SessionSettings
    # the explicit conversion stays for code that wants the SDK's own object
    config = agents.RunConfig(session_settings=to_agents_session_settings(SessionSettings(limit=3)))
    assert config.session_settings is not None
    assert config.session_settings.limit == 3
    with pytest.raises(TypeError, match=r"expected an agent_sessions\.SessionSettings"):
        to_agents_session_settings({"limit": 3})  # type: ignore[arg-type]


def test_our_session_settings_without_the_sdk_loaded_are_ours_alone() -> None:
    code = (
        "import sys, pickle\n"
        "from agent_sessions import SQLiteSession, SessionSettings\n"
        "ours = SessionSettings(limit=3)\n"
        "assert ours.__class__ is SessionSettings, ours.__class__\n"
        "assert isinstance(ours, SessionSettings)\n"
        "assert type(pickle.loads(pickle.dumps(ours))) is SessionSettings\n"
        "assert type(SQLiteSession('u').session_settings) is SessionSettings\n"
        "assert not [name for name in sys.modules if name.split('.')[0] == 'agents']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
