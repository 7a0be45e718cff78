"""Conversation memory for LLM agents.

A *session* stores one conversation's items so that an agent remembers what was said
in earlier runs. Every backend implements the small async :class:`Session` protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._servers import SessionBackendError
from .agent import Agent, RunContextWrapper
from .events import AgentUpdatedStreamEvent, RunItemStreamEvent, StreamEvent, TextDeltaEvent
from .models import (
    DEFAULT_MODEL_NAME,
    Model,
    ModelBehaviorError,
    ModelNotConfiguredError,
    OfflineModel,
    OpenAIChatCompletionsModel,
)
from .protocol import (
    InvalidItemError,
    Item,
    Session,
    SessionABC,
    SessionClosedError,
    SessionError,
    SessionSettings,
    SessionsPage,
    SessionStore,
)
from .runner import (
    MaxTurnsExceeded,
    RunCancelledError,
    RunConfig,
    Runner,
    RunResult,
    RunResultStreaming,
)
from .sqlite import SQLiteSession, SQLiteStore
from .tools import FunctionTool, ToolArgumentsError, function_tool
from .urls import open_session, open_store

__all__ = [
    "DEFAULT_MODEL_NAME",
    "Agent",
    "AgentUpdatedStreamEvent",
    "FunctionTool",
    "InvalidItemError",
    "Item",
    "MaxTurnsExceeded",
    "Model",
    "ModelBehaviorError",
    "ModelNotConfiguredError",
    "OfflineModel",
    "OpenAIChatCompletionsModel",
    "PostgresSession",
    "PostgresStore",
    "RedisSession",
    "RedisStore",
    "RunCancelledError",
    "RunConfig",
    "RunContextWrapper",
    "RunItemStreamEvent",
    "RunResult",
    "RunResultStreaming",
    "Runner",
    "SQLiteSession",
    "SQLiteStore",
    "Session",
    "SessionABC",
    "SessionBackendError",
    "SessionClosedError",
    "SessionError",
    "SessionSettings",
    "SessionStore",
    "SessionsPage",
    "StreamEvent",
    "TextDeltaEvent",
    "ToolArgumentsError",
    "function_tool",
    "open_session",
    "open_store",
]

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .postgres import PostgresSession, PostgresStore
    from .redis import RedisSession, RedisStore

# Optional backends load on first use, so their drivers are only needed by those who use them.
_LAZY_EXPORTS = {
    "PostgresSession": "postgres",
    "PostgresStore": "postgres",
    "RedisSession": "redis",
    "RedisStore": "redis",
}


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agent_sessions' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
