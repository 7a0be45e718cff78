"""What ``Runner.run_streamed`` yields while a run progresses.

Every event carries the Agents SDK's ``type`` discriminator, so a stream loop written for
the SDK (``if event.type == "run_item_stream_event": ...``) runs unchanged:

==========================  ===============================  ===========================
our class                   ``event.type``                   what it carries
==========================  ===============================  ===========================
:class:`TextDeltaEvent`     ``"raw_response_event"``         ``delta`` (and ``data``)
:class:`RunItemStreamEvent` ``"run_item_stream_event"``      ``name``, ``item``
:class:`AgentUpdatedStreamEvent`  ``"agent_updated_stream_event"``  ``new_agent``
==========================  ===============================  ===========================

Every item event's name comes from :data:`RunItemEventName`, the one declared list of
names; the lint suite reads it so that code comparing ``event.name`` with a stale or
misspelt name (the SDK's ``"handoff_occured"``) is caught and fixed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

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

    ``item`` is the item as it is stored in the session (a dict, where the SDK has a
    ``RunItem`` object: its ``raw_item``).
    """

    name: RunItemEventName
    item: Item
    agent_name: str
    type: Literal["run_item_stream_event"] = field(default="run_item_stream_event", init=False)


@dataclass(frozen=True)
class TextDeltaEvent:
    """A piece of assistant text as the model streams it (before the whole message)."""

    delta: str
    agent_name: str
    type: Literal["raw_response_event"] = field(default="raw_response_event", init=False)

    @property
    def data(self) -> Any:
        """The delta as the SDK streams it: an ``openai.types.responses.
        ResponseTextDeltaEvent`` (so ``isinstance(event.data, ResponseTextDeltaEvent)`` and
        ``event.data.delta`` work). Needs the ``openai`` package, as the SDK does."""
        try:
            from openai.types.responses import ResponseTextDeltaEvent
        except ImportError as exc:
            raise ImportError(
                'TextDeltaEvent.data needs the openai package: pip install "agent-sessions[openai]"'
                " (or read event.delta)"
            ) from exc
        fields = {
            "content_index": 0,
            "delta": self.delta,
            "item_id": "",
            "logprobs": [],
            "output_index": 0,
            "sequence_number": 0,
            "type": "response.output_text.delta",
        }
        known = ResponseTextDeltaEvent.model_fields
        return ResponseTextDeltaEvent.model_validate(
            {key: value for key, value in fields.items() if key in known}
        )


@dataclass(frozen=True)
class AgentUpdatedStreamEvent:
    """The agent answering from now on: the starting agent, then each handoff target."""

    new_agent: Agent
    type: Literal["agent_updated_stream_event"] = field(
        default="agent_updated_stream_event", init=False
    )


StreamEvent: TypeAlias = RunItemStreamEvent | TextDeltaEvent | AgentUpdatedStreamEvent
