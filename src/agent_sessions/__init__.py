"""Conversation memory for LLM agents.

A *session* stores one conversation's items so that an agent remembers what was said
in earlier runs. Every backend implements the small async :class:`Session` protocol.
"""

from __future__ import annotations

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
from .sqlite import SQLiteSession, SQLiteStore

__all__ = [
    "InvalidItemError",
    "Item",
    "SQLiteSession",
    "SQLiteStore",
    "Session",
    "SessionABC",
    "SessionClosedError",
    "SessionError",
    "SessionSettings",
    "SessionStore",
    "SessionsPage",
]

__version__ = "0.1.0"
