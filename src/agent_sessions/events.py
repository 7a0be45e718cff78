"""What ``Runner.run_streamed`` yields while a run progresses.

Every item event's name comes from :data:`RunItemEventName`, the one declared list of
names; the lint suite reads it so that code comparing ``event.name`` with a stale or
misspelt name is caught.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from .protocol import Item

if TYPE_CHECKING:
    from .agent import Agent

__all__ = [
    "AgentUpdatedStreamEvent",
    "RunItemEventName",
    "RunItemStreamEvent",
    "StreamEvent",
    "TextDeltaEvent",
]

RunItemEventName = Literal[
    "message_output_created",
    "tool_called",
    "tool_output",
    "handoff_requested",
    "handoff_occurred",
]
"""The names a :class:`RunItemStreamEvent` may carry."""


@dataclass(frozen=True)
class RunItemStreamEvent:
    """A new item of the run: an assistant message, a tool call or its output, a handoff.

    ``item`` is the item as it is stored in the session.
    """

    name: RunItemEventName
    item: Item
    agent_name: str


@dataclass(frozen=True)
class TextDeltaEvent:
    """A piece of assistant text as the model streams it (before the whole message)."""

    delta: str
    agent_name: str


@dataclass(frozen=True)
class AgentUpdatedStreamEvent:
    """The agent answering from now on: the starting agent, then each handoff target."""

    new_agent: Agent


StreamEvent: TypeAlias = RunItemStreamEvent | TextDeltaEvent | AgentUpdatedStreamEvent
