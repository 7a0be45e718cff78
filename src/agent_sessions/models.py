"""Models an agent runs on: the :class:`Model` protocol and two implementations.

- :class:`OfflineModel`: deterministic and offline, for examples, the terminal chat and
  tests. It plays a script of responses, then answers from the conversation it is given,
  so what a session remembers is visible.
- :class:`OpenAIChatCompletionsModel`: any OpenAI-compatible Chat Completions endpoint,
  through the ``openai`` package (``pip install "agent-sessions[openai]"``).

Every :class:`ModelResponse` carries the :class:`Usage` of the call that produced it:
the provider's token counts for :class:`OpenAIChatCompletionsModel`, a deterministic
estimate for :class:`OfflineModel`. The runner sums them into ``RunResult.usage``.

A model receives items and returns items in the shapes :mod:`agent_sessions.items`
describes; converting to and from a provider's wire format is the model's job.
"""

from __future__ import annotations

import json
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from .items import (
    assistant_message,
    function_call,
    is_function_call,
    is_function_call_output,
    message_role,
    message_text,
)
from .protocol import Item

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Model",
    "ModelBehaviorError",
    "ModelNotConfiguredError",
    "ModelRequest",
    "ModelResponse",
    "ModelStreamEvent",
    "OfflineModel",
    "OpenAIChatCompletionsModel",
    "ScriptedResponse",
    "TextDelta",
    "ToolSpec",
    "Usage",
    "resolve_model",
]

DEFAULT_MODEL_NAME = "gpt-4o-mini"
"""The model an agent without one runs on when ``OPENAI_API_KEY`` is set (the
``OPENAI_DEFAULT_MODEL`` environment variable overrides it, as in the Agents SDK)."""


class ModelBehaviorError(RuntimeError):
    """A model returned something that cannot be used (no response, an unknown item)."""


class ModelNotConfiguredError(RuntimeError):
    """An agent has no model and none can be chosen: no ``OPENAI_API_KEY`` is set."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: a name, what it does, and its JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelRequest:
    """One model call: the agent's instructions, the conversation so far, its tools."""

    instructions: str
    input: list[Item]
    tools: list[ToolSpec] = field(default_factory=list)


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call, or summed over several (``+`` adds two)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.requests + other.requests,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
        )


@dataclass(frozen=True)
class ModelResponse:
    """The model's output items (assistant messages and tool calls, in order) and the
    call's token usage; ``usage`` is ``None`` when the model reports none (the runner
    then counts the request with zero tokens)."""

    output: list[Item]
    usage: Usage | None = None


@dataclass(frozen=True)
class TextDelta:
    """A piece of assistant text while a response streams."""

    text: str


ModelStreamEvent: TypeAlias = TextDelta | ModelResponse
"""What :meth:`Model.stream` yields: text deltas, then exactly one final response."""


class Model(Protocol):
    """What the runner needs from a model."""

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The whole response to ``request``."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        """The response to ``request`` as it is produced; the last event is the
        :class:`ModelResponse`."""
        ...


def resolve_model(model: Model | str | None, *, agent_name: str = "agent") -> Model:
    """The model to run: ``model`` itself, an :class:`OpenAIChatCompletionsModel` of that
    name for a str, and for ``None`` the default one: :data:`DEFAULT_MODEL_NAME` (or
    ``OPENAI_DEFAULT_MODEL``) on ``OPENAI_BASE_URL`` when ``OPENAI_API_KEY`` is set,
    else :class:`ModelNotConfiguredError`.

    The runner calls it when a run starts, for every agent the run may reach, before it
    saves anything: a run that has no model fails without touching the session.
    """
    if model is None:
        if not os.environ.get("OPENAI_API_KEY"):
            raise ModelNotConfiguredError(
                f"agent {agent_name!r} has no model and OPENAI_API_KEY is not set: pass "
                "Agent(model=...) (a Model such as OfflineModel(), or the name of an "
                f"OpenAI-compatible model), or set OPENAI_API_KEY to run {DEFAULT_MODEL_NAME!r} "
                "(OPENAI_DEFAULT_MODEL and OPENAI_BASE_URL are honoured)"
            )
        name = os.environ.get("OPENAI_DEFAULT_MODEL") or DEFAULT_MODEL_NAME
        return OpenAIChatCompletionsModel(name)
    if isinstance(model, str):
        return OpenAIChatCompletionsModel(model)
    return model


ScriptedResponse: TypeAlias = str | list[Item] | BaseException
"""One scripted turn of :class:`OfflineModel`: a reply text, the output items, or an
exception to raise."""


class OfflineModel:
    """A deterministic model that needs no network.

    It plays ``script`` first, one entry per call: a ``str`` is an assistant reply, a list
    is the output items as given (tool calls, handoffs, messages), an exception is raised.
    After the script it answers from the conversation: it reports the output of its own
    tool when that came last, else repeats the latest user message and lists what the
    user said before it. Every
    request it receives is kept in :attr:`requests`.

    Its usage is a deterministic estimate, the same for :meth:`respond` and
    :meth:`stream`: one token per four characters (rounded up) of the instructions plus
    each input item's compact JSON for ``input_tokens``, of each output item's compact
    JSON for ``output_tokens``; ``requests`` is 1 and ``total_tokens`` their sum. A
    scripted exception reports nothing.
    """

    def __init__(self, script: Iterable[ScriptedResponse] = ()) -> None:
        self._script: deque[ScriptedResponse] = deque(script)
        self.requests: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        output = self._next_output(request)
        return ModelResponse(output, estimate_usage(request, output))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        self.requests.append(request)
        output = self._next_output(request)
        for item in output:
            if message_role(item) == "assistant":
                for word in re.findall(r"\s*\S+\s*|\s+", message_text(item)):
                    yield TextDelta(word)
        yield ModelResponse(output, estimate_usage(request, output))

    def _next_output(self, request: ModelRequest) -> list[Item]:
        if not self._script:
            return [assistant_message(recall_reply(request))]
        entry = self._script.popleft()
        if isinstance(entry, BaseException):
            raise entry
        if isinstance(entry, str):
            return [assistant_message(entry)]
        return [dict(item) for item in entry]


def estimate_usage(request: ModelRequest, output: list[Item]) -> Usage:
    """:class:`OfflineModel`'s usage of one call: one token per four characters (rounded
    up) of the instructions and each input item's compact JSON, and of each output item's."""
    input_tokens = _estimate(request.instructions) + sum(
        _estimate(_compact(item)) for item in request.input
    )
    output_tokens = sum(_estimate(_compact(item)) for item in output)
    return Usage(1, input_tokens, output_tokens, input_tokens + output_tokens)


def _compact(item: Item) -> str:
    return json.dumps(item, ensure_ascii=False, separators=(",", ":"))


def _estimate(text: str) -> int:
    return -(-len(text) // 4)


def recall_reply(request: ModelRequest) -> str:
    """The offline model's answer to ``request``: the output of its own tool if that was
    the last thing in the conversation, else a recap of what the user said."""
    conversation = request.input
    if conversation and is_function_call_output(conversation[-1]):
        call_id = conversation[-1].get("call_id")
        own_tools = {tool.name for tool in request.tools}
        if any(
            is_function_call(item)
            and item.get("call_id") == call_id
            and item.get("name") in own_tools
            for item in conversation
        ):
            return f"The tool answered: {conversation[-1].get('output')}"
    said = [message_text(item) for item in conversation if message_role(item) == "user"]
    if not said:
        return "Hello! Tell me something and I will remember it."
    latest, earlier = said[-1], said[:-1]
    if not earlier:
        return f'You said: "{latest}". That is the first thing you told me.'
    quoted = ", ".join(f'"{text}"' for text in earlier)
    return f'You said: "{latest}". Before that you said: {quoted}.'


class OpenAIChatCompletionsModel:
    """A model behind an OpenAI-compatible Chat Completions endpoint.

    ``base_url`` and ``api_key`` default to the ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``
    environment variables (the ``openai`` package's own defaults). Items are converted to
    chat messages (consecutive tool calls join one assistant message) and the reply back
    to items. Items that Chat Completions cannot carry raise ``ValueError`` naming them.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None):
        try:
            from openai import AsyncOpenAI
        except ImportError as exc:  # the optional extra is not installed
            hint = 'pip install "agent-sessions[openai]"'
            raise ImportError(
                f"OpenAIChatCompletionsModel needs the openai package: {hint}"
            ) from exc
        self.model = model
        self._client: AsyncOpenAI = AsyncOpenAI(base_url=base_url, api_key=api_key)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        completion = await self._client.chat.completions.create(**self._arguments(request))
        if not completion.choices:
            raise ModelBehaviorError(f"{self.model} returned a completion without choices")
        message = completion.choices[0].message
        output: list[Item] = []
        if message.content:
            output.append(assistant_message(message.content))
        for call in message.tool_calls or []:
            if call.type == "function":
                output.append(function_call(call.function.name, call.function.arguments, call.id))
        return ModelResponse(output, _chat_usage(completion.usage))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamEvent]:
        chunks = await self._client.chat.completions.create(
            **self._arguments(request), stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        calls: dict[int, dict[str, str]] = {}
        usage: Usage | None = None
        try:
            async for chunk in chunks:
                if chunk.usage is not None:  # the last chunk, without choices
                    usage = _chat_usage(chunk.usage)
                if not chunk.choices:
                    continue
                delta = chunk.choices[0].delta
                if delta.content:
                    text.append(delta.content)
                    yield TextDelta(delta.content)
                for call_delta in delta.tool_calls or []:
                    call = calls.setdefault(call_delta.index, {"id": "", "name": "", "args": ""})
                    call["id"] = call_delta.id or call["id"]
                    if call_delta.function is not None:
                        call["name"] += call_delta.function.name or ""
                        call["args"] += call_delta.function.arguments or ""
        finally:
            await chunks.close()
        output: list[Item] = [assistant_message("".join(text))] if text else []
        for _, call in sorted(calls.items()):
            output.append(function_call(call["name"], call["args"], call["id"] or None))
        yield ModelResponse(output, usage)

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.model,
            "messages": to_chat_messages(request.instructions, request.input),
        }
        if request.tools:
            arguments["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    },
                }
                for tool in request.tools
            ]
        return arguments


def _chat_usage(usage: Any) -> Usage | None:
    """A Chat Completions ``usage`` (``prompt_tokens``, ``completion_tokens``,
    ``total_tokens``) as a :class:`Usage` of one request; ``None`` when the server sent
    none. A missing ``total_tokens`` is the sum of the other two."""
    if usage is None:
        return None
    prompt = getattr(usage, "prompt_tokens", None) or 0
    completion = getattr(usage, "completion_tokens", None) or 0
    total = getattr(usage, "total_tokens", None)
    return Usage(1, prompt, completion, total if total is not None else prompt + completion)


def to_chat_messages(instructions: str, items: list[Item]) -> list[dict[str, Any]]:
    """``items`` as Chat Completions messages, after a system message of ``instructions``."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for index, item in enumerate(items):
        if is_function_call(item):
            tool_call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": item["name"], "arguments": item["arguments"]},
            }
            if messages and messages[-1]["role"] == "assistant":
                messages[-1].setdefault("tool_calls", []).append(tool_call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call]})
        elif is_function_call_output(item):
            output = item["output"]
            content = output if isinstance(output, str) else json.dumps(output)
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": content})
        else:
            role = message_role(item)
            if role not in ("user", "assistant", "system", "developer"):
                kind = item.get("type", item.get("role"))
                raise ValueError(
                    f"item {index} ({kind!r}) cannot be sent to a Chat Completions model"
                )
            # "developer" is the newer name of "system"; compatible servers know only the latter
            chat_role = "system" if role == "developer" else role
            messages.append({"role": chat_role, "content": message_text(item)})
    return messages
