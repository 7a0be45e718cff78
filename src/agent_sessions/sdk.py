"""Passing our sessions where the OpenAI Agents SDK's ``Session`` type is expected.

At run time every session of this library already is an ``agents.memory.Session``
(``isinstance`` holds; the SDK's ``Runner`` uses it as is). Only a static type checker
objects: the SDK types ``session_settings`` with its own ``SessionSettings`` class and items
as a union of TypedDicts, so mypy will not accept our ``Session`` for the SDK's without a
cast. :func:`as_agents_session` is that cast, checked at run time::

    from agent_sessions import SQLiteSession
    from agent_sessions.sdk import as_agents_session

    session = SQLiteSession("user_123", "conversations.db")
    await Runner.run(agent, "Hello", session=as_agents_session(session))

The SDK (``openai-agents``) is imported only when this function is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from .protocol import Session

if TYPE_CHECKING:
    import agents.memory

__all__ = ["as_agents_session"]


def as_agents_session(session: Session) -> agents.memory.Session:
    """``session`` itself, typed as the Agents SDK's ``Session``.

    Raises ``TypeError`` when ``session`` lacks a member the SDK's protocol requires, and
    ``ImportError`` (with an install hint) when the SDK is not installed.
    """
    try:
        import agents.memory
    except ImportError as exc:
        raise ImportError(
            "as_agents_session needs the OpenAI Agents SDK: pip install openai-agents"
        ) from exc
    if not isinstance(session, agents.memory.Session):
        raise TypeError(
            f"{type(session).__name__} is not an agents.memory.Session: it needs session_id, "
            "session_settings, get_items, add_items, pop_item and clear_session"
        )
    return cast("agents.memory.Session", session)
