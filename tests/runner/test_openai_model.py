"""OpenAIChatCompletionsModel against a local server speaking the Chat Completions wire
format (JSON and SSE streaming, tool calls), on 127.0.0.1 only."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agent_sessions.agent import Agent
from agent_sessions.events import TextDeltaEvent
from agent_sessions.items import (
    assistant_message,
    function_call,
    function_call_output,
    user_message,
)
from agent_sessions.models import OpenAIChatCompletionsModel, to_chat_messages
from agent_sessions.runner import Runner
from agent_sessions.tools import function_tool

from .conftest import OpenSession


class ChatCompletionsServer:
    """Answers each POST /v1/chat/completions with the next scripted reply: a dict with
    ``content`` and/or ``tool_calls`` ([(id, name, arguments)]), and optionally ``usage``
    ((prompt_tokens, completion_tokens)): sent in the completion, and for a stream in a
    last chunk without choices when the request asks for it (``stream_options``).
    Keeps every request."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path != "/v1/chat/completions" or not server.replies:
                    self.send_error(400, "no reply scripted")  # 4xx: the client does not retry
                    return
                reply = server.replies.pop(0)
                if body.get("stream"):
                    wants_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    self._send_stream(body["model"], reply, wants_usage)
                else:
                    self._send_json(body["model"], reply)

            def _send_json(self, model: str, reply: dict[str, Any]) -> None:
                message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
                if reply.get("tool_calls"):
                    message["tool_calls"] = [
                        {"id": id_, "type": "function", "function": {"name": n, "arguments": a}}
                        for id_, n, a in reply["tool_calls"]
                    ]
                payload = json.dumps(
                    {
                        "id": "chatcmpl-1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                        **usage_field(reply),
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_stream(self, model: str, reply: dict[str, Any], wants_usage: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                deltas: list[dict[str, Any]] = [{"role": "assistant"}]
                text = reply.get("content") or ""
                deltas += [{"content": text[i : i + 4]} for i in range(0, len(text), 4)]
                for index, (id_, name, arguments) in enumerate(reply.get("tool_calls", [])):
                    first = {"id": id_, "type": "function", "function": {"name": name}}
                    deltas.append({"tool_calls": [{"index": index, **first}]})
                    half = len(arguments) // 2
                    for part in (arguments[:half], arguments[half:]):
                        call_part = {"index": index, "function": {"arguments": part}}
                        deltas.append({"tool_calls": [call_part]})
                for delta in deltas:
                    chunk = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                if wants_usage and "usage" in reply:
                    last = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "created": 0,
                        "model": model,
                        "choices": [],
                        **usage_field(reply),
                    }
                    self.wfile.write(f"data: {json.dumps(last)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, format: str, *args: Any) -> None:
                return None  # keep test output clean

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def usage_field(reply: dict[str, Any]) -> dict[str, Any]:
    """The completion's ``usage`` member for a reply that scripts one, else nothing."""
    if "usage" not in reply:
        return {}
    prompt, completion = reply["usage"]
    return {
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    }


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    running = ChatCompletionsServer()
    yield running
    running.close()


@function_tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def model_on(server: ChatCompletionsServer) -> OpenAIChatCompletionsModel:
    return OpenAIChatCompletionsModel("test-model", base_url=server.base_url, api_key="sk-test")


async def test_plain_reply_is_saved_and_history_is_sent(
    server: ChatCompletionsServer, open_session: OpenSession
) -> None:
    session = open_session()
    server.replies += [{"content": "Hi Ada."}, {"content": "You are Ada."}]
    agent = Agent("a", "Be brief.", model_on(server))
    await Runner.run(agent, "I am Ada", session=session)
    result = await Runner.run(agent, "Who am I?", session=session)

    assert result.final_output == "You are Ada."
    assert server.requests[1]["model"] == "test-model"
    assert server.requests[1]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "I am Ada"},
        {"role": "assistant", "content": "Hi Ada."},
        {"role": "user", "content": "Who am I?"},
    ]
    assert server.headers[0]["authorization"] == "Bearer sk-test"


async def test_tool_call_round_trip(
    server: ChatCompletionsServer, open_session: OpenSession
) -> None:
    session = open_session()
    server.replies += [{"tool_calls": [("call_1", "add", '{"a": 2, "b": 3}')]}, {"content": "5"}]
    agent = Agent("calc", "", model_on(server), tools=[add])
    result = await Runner.run(agent, "2+3?", session=session)

    assert result.final_output == "5"
    assert server.requests[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": add.params_json_schema,
            },
        }
    ]
    assert server.requests[1]["messages"] == [
        {"role": "user", "content": "2+3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    assert await session.get_items() == [
        user_message("2+3?"),
        function_call("add", '{"a": 2, "b": 3}', "call_1"),
        function_call_output("call_1", "5"),
        assistant_message("5"),
    ]


async def test_streamed_reply_arrives_in_deltas(
    server: ChatCompletionsServer, open_session: OpenSession
) -> None:
    session = open_session()
    server.replies.append({"content": "Streaming works fine."})
    streamed = Runner.run_streamed(Agent("a", "", model_on(server)), "go", session=session)
    deltas = [e.delta async for e in streamed.stream_events() if isinstance(e, TextDeltaEvent)]

    assert len(deltas) > 1
    assert "".join(deltas) == "Streaming works fine."
    assert server.requests[0]["stream"] is True
    assert await session.get_items() == [
        user_message("go"),
        assistant_message("Streaming works fine."),
    ]


async def test_streamed_tool_calls_are_assembled_from_deltas(
    server: ChatCompletionsServer, open_session: OpenSession
) -> None:
    session = open_session()
    server.replies += [
        {
            "content": "Adding.",
            "tool_calls": [("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", '{"a": 3, "b": 4}')],
        },
        {"content": "3 and 7"},
    ]
    streamed = Runner.run_streamed(
        Agent("calc", "", model_on(server), tools=[add]), "sums?", session=session
    )
    async for _ in streamed.stream_events():
        pass

    assert streamed.final_output == "3 and 7"
    assert (await session.get_items())[1:6] == [
        assistant_message("Adding."),
        function_call("add", '{"a": 1, "b": 2}', "c1"),
        function_call("add", '{"a": 3, "b": 4}', "c2"),
        function_call_output("c1", "3"),
        function_call_output("c2", "7"),
    ]
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["3", "7"]


async def test_endpoint_and_key_default_to_the_environment(
    server: ChatCompletionsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.replies.append({"content": "hello"})
    result = await Runner.run(Agent("a", "", OpenAIChatCompletionsModel("m")), "hi")

    assert result.final_output == "hello"
    assert server.headers[0]["authorization"] == "Bearer sk-from-env"


async def test_server_error_propagates_and_keeps_the_input(
    server: ChatCompletionsServer, open_session: OpenSession
) -> None:
    import openai

    session = open_session()
    agent = Agent("a", "", model_on(server))
    with pytest.raises(openai.APIStatusError):
        await Runner.run(agent, "hello", session=session, max_turns=1)
    assert await session.get_items() == [user_message("hello")]


def test_sdk_style_history_converts_to_chat_messages() -> None:
    sdk_assistant = {
        "id": "__fake_id__",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
    }
    items: list[dict[str, Any]] = [
        {"role": "developer", "content": "Rules."},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hey"}]},
        sdk_assistant,
        {"role": "assistant", "content": "easy form"},
    ]

    assert to_chat_messages("", items) == [
        {"role": "system", "content": "Rules."},
        {"role": "user", "content": "Hey"},
        {"role": "assistant", "content": "Hi"},
        {"role": "assistant", "content": "easy form"},
    ]


def test_item_chat_completions_cannot_carry_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"item 1 \('reasoning'\) cannot be sent"):
        to_chat_messages("", [user_message("hi"), {"type": "reasoning", "summary": []}])
