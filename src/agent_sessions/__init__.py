"""Conversation memory for LLM agents.

A *session* stores one conversation's items so that an agent remembers what was said
in earlier runs. Every backend implements the small async :class:`Session` protocol.
"""

from __future__ import annotations

from .agent import Agent
from .models import Model, OfflineModel, OpenAIChatCompletionsModel
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
from .runner import RunConfig, Runner, RunResult, RunResultStreaming
from .sqlite import SQLiteSession, SQLiteStore
from .tools import FunctionTool, function_tool

__all__ = [
    "Agent",
    "FunctionTool",
    "InvalidItemError",
    "Item",
    "Model",
    "OfflineModel",
    "OpenAIChatCompletionsModel",
    "RunConfig",
    "RunResult",
    "RunResultStreaming",
    "Runner",
    "SQLiteSession",
    "SQLiteStore",
    "Session",
    "SessionABC",
    "SessionClosedError",
    "SessionError",
    "SessionSettings",
    "SessionStore",
    "SessionsPage",
    "function_tool",
]

__version__ = "0.1.0"
