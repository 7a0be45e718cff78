"""An agent: a named set of instructions, the model it runs on, its tools and handoffs."""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar

from .models import Model, ToolSpec, resolve_model
from .tools import FunctionTool

__all__ = ["Agent", "Instructions", "RunContextWrapper"]

_NO_PARAMETERS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}

TContext = TypeVar("TContext")


@dataclass
class RunContextWrapper(Generic[TContext]):
    """What dynamic instructions receive first: ``context`` is the object passed as
    ``Runner.run(..., context=...)`` (``None`` without one), as in the Agents SDK."""

    context: TContext


Instructions: TypeAlias = (
    "str | Callable[[RunContextWrapper[Any], Agent], str | Awaitable[str]] | None"
)
"""An agent's instructions: a text, or a function ``(context, agent) -> str`` (sync or
async) called before each model call, or ``None`` for none."""


@dataclass
class Agent:
    """An agent the :class:`~agent_sessions.runner.Runner` runs.

    The keywords are the Agents SDK's: ``Agent(name=..., instructions=..., model=...,
    tools=[...], handoffs=[...])``.

    ``model`` is a :class:`~agent_sessions.models.Model`, the name of a model behind an
    OpenAI-compatible Chat Completions endpoint (``"gpt-4o-mini"``), or ``None``: then the
    model is chosen when a run starts (see :func:`~agent_sessions.models.resolve_model`),
    and a run that cannot get one fails before anything is saved.

    ``handoffs`` are agents this one may hand the conversation to; the model sees each as
    a tool named :attr:`handoff_tool_name` and the run continues with the chosen agent,
    on the same session.

    Wrong types are refused here, with a ``TypeError`` naming the field, not in the
    middle of a run.
    """

    name: str
    instructions: Instructions = None
    model: Model | str | None = None
    tools: list[FunctionTool] = field(default_factory=list)
    handoffs: list[Agent] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("an agent needs a non-empty name")
        _check_instructions(self.name, self.instructions)
        _check_model(self.name, self.model)
        _check_list(self.name, "tools", self.tools, FunctionTool, "decorate it with @function_tool")
        _check_list(self.name, "handoffs", self.handoffs, Agent, "pass the Agent itself")

    @property
    def handoff_tool_name(self) -> str:
        """The tool name under which other agents' models hand off to this agent."""
        return "transfer_to_" + re.sub(r"[^a-z0-9_-]+", "_", self.name.lower())

    async def get_instructions(self, context: RunContextWrapper[Any]) -> str:
        """The instructions for the next model call: the text, or what the function
        returns for ``context`` (awaited when it is async). ``TypeError`` when a function
        returns something other than a str."""
        if self.instructions is None:
            return ""
        if isinstance(self.instructions, str):
            return self.instructions
        text = self.instructions(context, self)
        if inspect.isawaitable(text):
            text = await text
        if not isinstance(text, str):
            raise TypeError(
                f"the instructions function of agent {self.name!r} returned a "
                f"{type(text).__name__}, not a str"
            )
        return text

    def get_model(self) -> Model:
        """The model this agent runs on now (see :func:`~agent_sessions.models.resolve_model`)."""
        return resolve_model(self.model, agent_name=self.name)

    def tool_specs(self) -> list[ToolSpec]:
        """Every tool the model of this agent may call: function tools, then handoffs.

        Raises ``ValueError`` when two of them share a name.
        """
        specs = [ToolSpec(t.name, t.description, t.params_json_schema) for t in self.tools]
        specs += [
            ToolSpec(
                target.handoff_tool_name,
                f"Hand the conversation off to {target.name}.",
                _NO_PARAMETERS,
            )
            for target in self.handoffs
        ]
        names = [spec.name for spec in specs]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"agent {self.name!r} has several tools named {', '.join(duplicates)}")
        return specs


def _check_instructions(agent: str, instructions: object) -> None:
    if instructions is None or isinstance(instructions, str):
        return
    if not callable(instructions):
        raise TypeError(
            f"agent {agent!r}: instructions must be a str, a function (context, agent) -> str "
            f"or None, got {type(instructions).__name__}"
        )
    try:
        inspect.signature(instructions).bind(None, None)
    except TypeError:
        raise TypeError(
            f"agent {agent!r}: an instructions function must take two arguments (context, agent)"
        ) from None
    except ValueError:
        pass  # a builtin without a signature: it is called as is


def _check_model(agent: str, model: object) -> None:
    if model is None:
        return
    if isinstance(model, str):
        if not model.strip():
            raise ValueError(f"agent {agent!r}: a model name must not be empty")
        return
    if not all(callable(getattr(model, method, None)) for method in ("respond", "stream")):
        raise TypeError(
            f"agent {agent!r}: model must be a Model (with respond() and stream()), the name "
            f"of an OpenAI-compatible model, or None, got {type(model).__name__}"
        )


def _check_list(agent: str, name: str, value: object, kind: type, hint: str) -> None:
    if not isinstance(value, list):
        raise TypeError(
            f"agent {agent!r}: {name} must be a list of {kind.__name__}, got {type(value).__name__}"
        )
    for index, element in enumerate(value):
        if not isinstance(element, kind):
            raise TypeError(
                f"agent {agent!r}: {name}[{index}] is a {type(element).__name__}, "
                f"not a {kind.__name__} ({hint})"
            )
