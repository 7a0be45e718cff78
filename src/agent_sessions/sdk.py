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

Our :class:`~agent_sessions.protocol.SessionSettings` is a class of its own, which the
SDK's ``isinstance`` checks take while the SDK is loaded (its ``__class__`` is then the
SDK's): ``RunConfig(session_settings=SessionSettings(limit=10))`` works at run time; mypy
wants the SDK's type there, which :func:`to_agents_session_settings` gives (a converted
copy; our sessions' own ``session_settings`` need nothing: read while the SDK is loaded,
they are instances of the SDK's class, see ``BaseSession.session_settings``)::

    RunConfig(session_settings=to_agents_session_settings(SessionSettings(limit=10)))

The SDK (``openai-agents``) is imported only when these functions are called.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, cast

from .protocol import Session, SessionSettings

if TYPE_CHECKING:
    import agents.memory

__all__ = ["as_agents_session", "to_agents_session_settings"]


def as_agents_session(session: Session) -> agents.memory.Session:
    """``session`` itself, typed as the Agents SDK's ``Session``.

    Raises ``TypeError`` when ``session`` lacks a member the SDK's protocol requires, and
    ``ImportError`` (with an install hint) when the SDK is not installed.
    """
    memory = _import_sdk("as_agents_session")
    if not isinstance(session, memory.Session):
        raise TypeError(
            f"{type(session).__name__} is not an agents.memory.Session: it needs session_id, "
            "session_settings, get_items, add_items, pop_item and clear_session"
        )
    return cast("agents.memory.Session", session)


def to_agents_session_settings(settings: SessionSettings) -> agents.memory.SessionSettings:
    """``settings`` as the Agents SDK's own ``SessionSettings`` (a copy), typed as the SDK's
    ``RunConfig`` wants it.

    Raises ``TypeError`` for anything but our ``SessionSettings``, and ``ImportError``
    (with an install hint) when the SDK is not installed.
    """
    memory = _import_sdk("to_agents_session_settings")
    if not isinstance(settings, SessionSettings):
        raise TypeError(
            f"expected an agent_sessions.SessionSettings, got {type(settings).__name__}"
        )
    converted: agents.memory.SessionSettings = memory.SessionSettings(limit=settings.limit)
    return converted


def _import_sdk(caller: str) -> ModuleType:
    """The SDK's ``agents.memory`` module, or ``ImportError`` naming ``caller``."""
    try:
        return importlib.import_module("agents.memory")
    except ImportError as exc:
        hint = "pip install openai-agents"
        raise ImportError(f"{caller} needs the OpenAI Agents SDK: {hint}") from exc
