"""The conversation items the runner reads, writes and stores in sessions.

Items use the OpenAI Responses input-item shapes that the Agents SDK stores, so a
history written by our runner can be replayed by the SDK's and the other way round:

- user message: ``{"role": "user", "content": "..."}``
- assistant message (what this runner writes)::

      {"type": "message", "role": "assistant",
       "content": [{"type": "output_text", "text": "..."}]}

  The easy form ``{"role": "assistant", "content": "..."}`` is read as well.
- tool call: ``{"type": "function_call", "call_id": ..., "name": ..., "arguments": "<json>"}``
- tool result: ``{"type": "function_call_output", "call_id": ..., "output": "..."}``
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .protocol import Item

__all__ = [
    "assistant_message",
    "call_key",
    "function_call",
    "function_call_output",
    "input_to_items",
    "is_function_call",
    "is_function_call_output",
    "message_role",
    "message_text",
    "user_message",
]


def user_message(text: str) -> Item:
    """A user message item."""
    return {"role": "user", "content": text}


def assistant_message(text: str) -> Item:
    """An assistant message item in the form the Agents SDK stores."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def function_call(name: str, arguments: str, call_id: str | None = None) -> Item:
    """A tool call item; ``arguments`` is the JSON text the model produced.

    Without ``call_id`` a fresh unique one is made.
    """
    return {
        "type": "function_call",
        "call_id": call_id if call_id is not None else f"call_{uuid.uuid4().hex[:24]}",
        "name": name,
        "arguments": arguments,
    }


def function_call_output(call_id: str, output: str) -> Item:
    """The result of the tool call ``call_id``."""
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def input_to_items(run_input: str | list[Item]) -> list[Item]:
    """A run's new input as items: a string becomes one user message, a list is copied.

    Raises ``TypeError`` naming what is wrong when the input is neither.
    """
    if isinstance(run_input, str):
        return [user_message(run_input)]
    if not isinstance(run_input, list):
        raise TypeError(f"input must be a str or a list of items, got {type(run_input).__name__}")
    for index, item in enumerate(run_input):
        if not isinstance(item, dict):
            raise TypeError(f"input item {index} must be a dict, got {type(item).__name__}")
    return [dict(item) for item in run_input]


def is_function_call(item: Item) -> bool:
    """Whether ``item`` is a tool call."""
    return item.get("type") == "function_call"


def call_key(item: Item) -> object:
    """The ``call_id`` of a tool item, as a set member or dict key: itself, or, for a list or
    an object (no model API writes one, but a stored history may hold anything JSON), its
    canonical JSON text, so that it pairs with an equal one instead of failing the read
    with ``TypeError: unhashable type``."""
    value = item.get("call_id")
    if isinstance(value, (list, dict)):
        return ("json", json.dumps(value, sort_keys=True, ensure_ascii=False))
    return value


def is_function_call_output(item: Item) -> bool:
    """Whether ``item`` is the result of a tool call."""
    return item.get("type") == "function_call_output"


def message_role(item: Item) -> str | None:
    """The role of a message item (``user``, ``assistant``, ``system``, ...), else ``None``."""
    if item.get("type", "message") != "message":
        return None
    role = item.get("role")
    return role if isinstance(role, str) else None


def message_text(item: Item) -> str:
    """The text of a message item: a plain string content, or its text parts joined."""
    content: Any = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""
