"""An agent: a named set of instructions, the model it runs on, its tools and handoffs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .models import Model, ToolSpec
from .tools import FunctionTool

__all__ = ["Agent"]

_NO_PARAMETERS = {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


@dataclass
class Agent:
    """An agent the :class:`~agent_sessions.runner.Runner` runs.

    ``handoffs`` are agents this one may hand the conversation to; the model sees each as
    a tool named :attr:`handoff_tool_name` and the run continues with the chosen agent,
    on the same session.
    """

    name: str
    instructions: str
    model: Model
    tools: list[FunctionTool] = field(default_factory=list)
    handoffs: list[Agent] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError("an agent needs a non-empty name")

    @property
    def handoff_tool_name(self) -> str:
        """The tool name under which other agents' models hand off to this agent."""
        return "transfer_to_" + re.sub(r"[^a-z0-9_-]+", "_", self.name.lower())

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
