"""Branches of a conversation and the token usage of its turns, on any backend: a wrapper
over the protocol.

::

    from agent_sessions import SQLiteStore
    from agent_sessions.branches import BranchingSession

    store = SQLiteStore("chats.db")
    session = BranchingSession(store, "user_123")
    ...  # runs on the main branch
    await session.branch_from(1, "retry")  # a copy of the history before user turn 1
    ...  # runs on "retry"; "main" is untouched
    await session.switch("main")

How it is stored, with nothing but the :class:`~agent_sessions.protocol.Session` protocol:

- **Every branch is a session of its own.** The main branch is the session ``<id>``
  itself (so an existing history becomes the main branch as it is, and the admin CLI
  reads it like any other), a branch named ``name`` is the session ``<id>@branch:<name>``.
- **One metadata session** ``<id>@branches`` holds an append-only log of JSON items:
  ``{"op": "create", "name", "parent", "turn"}``, ``{"op": "switch", "name"}``,
  ``{"op": "delete", "name"}`` and ``{"op": "usage", "branch", "turn", "requests",
  "input_tokens", "output_tokens", "total_tokens"}``. The state (branches, the current
  branch, usage) is that log replayed; each change is one ``add_items`` call, atomic on
  every backend.
- **The store capability** is one of two ways to open those sessions: a
  :class:`~agent_sessions.protocol.SessionStore` (its ``session(id)`` method, the one
  capability used; ``list_sessions`` is not needed) or any callable ``factory(id) ->
  Session``. A third-party backend needs nothing more. A factory may wrap the branch
  sessions (a ``CompactingSession`` per branch: :meth:`BranchingSession.after_run` hands
  the runner's hook on to the current branch's session), but must open the metadata
  session ``<id>@branches`` plain: a trimming or compacting view of the log loses
  branches and usage.

What a caller may rely on:

- **The wrapper is the current branch.** ``get_items``, ``add_items``, ``pop_item`` and
  ``clear_session`` act on the current branch only (it passes the conformance kit as
  such); ``session_id`` stays ``<id>``. The current branch is stored, so a new handle on
  ``<id>`` starts where the last ``switch`` left it. A handle reads the log once, on first
  use, and again on :meth:`BranchingSession.refresh`: a switch made through another handle
  is not seen before.
- **Turns** are counted by user messages (items with ``"role": "user"``), from 0:
  turn ``n`` starts at the ``n``-th user message and holds what follows it up to the next.
- **branch_from(turn, name)** copies the current branch's items *before* user turn
  ``turn`` into the new branch ``name``, makes it current (``switch=False`` to stay) and
  returns that user message, to be edited and asked again. The copy is written before the
  branch is logged: a crash in between leaves no branch (the orphan items are cleared when
  the name is used again).
- **delete_branch(name)** refuses ``main`` and the current branch; it logs the deletion,
  then clears the branch's session. Its recorded usage stays in the session's totals (the
  tokens were spent).
- **Usage of runs is recorded by itself.** :class:`~agent_sessions.runner.Runner` calls
  :meth:`BranchingSession.after_run` with each finished run's result, and it records
  ``result.usage`` (the tokens the run's models reported) against the current branch's
  latest user turn: the run's own input, once saved. A streamed run's usage is recorded
  after its stream has ended (``await result.wait()`` before reading it). The Agents
  SDK's Runner calls no hook: call ``await session.after_run(result)`` after its run
  (``result.context_wrapper.usage`` is read), or ``record_usage`` yourself.
- **Usage by hand** is recorded per turn with :meth:`BranchingSession.record_usage`, from a
  mapping or any object with ``requests``, ``input_tokens``, ``output_tokens`` and
  ``total_tokens`` (the Agents SDK's ``Usage``, e.g. ``result.context_wrapper.usage``),
  by default against the current branch's latest user turn. Every call is one more
  record: recording by hand a run our Runner has already recorded counts it twice; pass
  ``record_runs=False`` to record only by hand. :meth:`BranchingSession.usage`
  sums it for the whole session, one branch or one turn; ``usage_by_turn`` and
  ``usage_by_branch`` list it per turn and per branch. Usage recorded on a branch before
  ``branch_from`` belongs to that branch, not to the copy.
- **Concurrent branch operations** (create, switch, delete) from several handles are not
  serialized: each is atomic, and the log's order decides (a later ``create`` of a name
  replaces the earlier one).
- **replace_items** (the optional ReplacingSession capability) replaces the current
  branch's history through its session's own ``replace_items``, so a
  ``CompactingSession`` over this wrapper compacts the current branch atomically.
- **Lifecycle.** ``close()`` closes every branch session this wrapper opened (a store's
  handles; the store itself is the caller's).
"""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeAlias, cast

from .base import GivenSettings
from .errors import SessionClosedError, SessionError
from .items import message_role
from .models import Usage
from .protocol import (
    InvalidSessionIdError,
    Item,
    ReplacingSession,
    Session,
    SessionABC,
    SessionSettings,
    SessionStore,
    validate_session_id,
)
from .runner import call_after_run

__all__ = [
    "BRANCH_SEPARATOR",
    "MAIN",
    "METADATA_SUFFIX",
    "BranchError",
    "BranchInfo",
    "BranchingSession",
    "Usage",
    "branch_session_id",
    "metadata_session_id",
]

MAIN: Final = "main"
"""The name of the branch stored as the session ``<id>`` itself."""

BRANCH_SEPARATOR: Final = "@branch:"
METADATA_SUFFIX: Final = "@branches"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_USAGE_FIELDS: Final = ("requests", "input_tokens", "output_tokens", "total_tokens")

logger = logging.getLogger("agent_sessions")

SessionFactory: TypeAlias = Callable[[str], Session]


class BranchError(SessionError):
    """A branch operation that cannot be done (unknown or existing name, the current or
    main branch deleted, a turn that does not exist). Nothing was changed."""


@dataclass(frozen=True)
class BranchInfo:
    """One branch: its name, the session id holding its items, and where it came from
    (``parent`` and the user ``turn`` it was started before; ``None`` for main)."""

    name: str
    session_id: str
    parent: str | None
    turn: int | None
    current: bool


def branch_session_id(session_id: str, name: str) -> str:
    """The session id holding branch ``name`` of ``session_id``."""
    return session_id if name == MAIN else f"{session_id}{BRANCH_SEPARATOR}{name}"


def metadata_session_id(session_id: str) -> str:
    """The session id holding the branch and usage log of ``session_id``."""
    return f"{session_id}{METADATA_SUFFIX}"


@dataclass
class _State:
    branches: dict[str, tuple[str | None, int | None]]
    current: str
    usage: list[tuple[str, int, Usage]]


class BranchingSession(SessionABC):
    """The current branch of ``session_id``, with branches and per-turn usage; see the
    module's documentation. ``store_or_factory`` opens the branch sessions: a
    ``SessionStore`` or a callable ``factory(session_id) -> Session``. With
    ``record_runs=False`` :meth:`after_run` records nothing (usage only by hand)."""

    def __init__(
        self,
        store_or_factory: SessionStore | SessionFactory,
        session_id: str,
        *,
        session_settings: SessionSettings | None = None,
        record_runs: bool = True,
    ) -> None:
        self.session_id = validate_session_id(session_id)
        if not isinstance(record_runs, bool):
            raise TypeError(f"record_runs must be a bool, got {type(record_runs).__name__}")
        self.record_runs = record_runs
        if BRANCH_SEPARATOR in session_id or session_id.endswith(METADATA_SUFFIX):
            raise InvalidSessionIdError(
                f"session_id {session_id!r} holds {BRANCH_SEPARATOR!r} or ends with "
                f"{METADATA_SUFFIX!r}: those name a branch or the branch log"
            )
        if isinstance(store_or_factory, SessionStore):
            self._factory: SessionFactory = store_or_factory.session
        elif callable(store_or_factory):
            self._factory = store_or_factory
        else:
            raise TypeError(
                "BranchingSession takes a SessionStore or a callable factory(session_id), "
                f"got {type(store_or_factory).__name__}"
            )
        self._given = GivenSettings(session_settings)
        self._opened: dict[str, Session] = {}
        self._state: _State | None = None
        self._closed = False

    # -- the protocol, on the current branch -------------------------------------------------

    @property
    def session_settings(self) -> SessionSettings | None:
        """The settings given to this wrapper, else the main branch session's."""
        given = self._given.handed_out()
        return self._open_id(self.session_id).session_settings if given is None else given

    @session_settings.setter
    def session_settings(self, settings: SessionSettings | None) -> None:
        self._given = GivenSettings(settings)

    def __repr__(self) -> str:
        return f"BranchingSession({self.session_id!r})"

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The latest ``limit`` items of the current branch, oldest first."""
        session = await self.current_session()
        if limit is None and self._given.live is not None:
            limit = self._given.live.limit
        return await session.get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        """Append ``items`` to the current branch, as one atomic batch."""
        await (await self.current_session()).add_items(items)

    async def pop_item(self) -> Item | None:
        """Remove and return the latest item of the current branch."""
        return await (await self.current_session()).pop_item()

    async def clear_session(self) -> None:
        """Remove every item of the current branch (other branches and usage stay)."""
        await (await self.current_session()).clear_session()

    async def replace_items(self, items: list[Item]) -> None:
        """Make ``items`` the current branch's whole history in one atomic step, through
        its session's ``replace_items`` (the ReplacingSession capability a
        ``CompactingSession`` above writes through); ``NotImplementedError``, nothing
        written, when that session lacks it."""
        current = await self.current_session()
        if not isinstance(current, ReplacingSession):
            raise NotImplementedError(
                f"{type(current).__name__} cannot replace a history atomically"
            )
        await current.replace_items(items)

    async def close(self) -> None:
        """Close this wrapper and every branch session it opened. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for session in self._opened.values():
            close = getattr(session, "close", None)
            if callable(close):
                result = close()
                if inspect.isawaitable(result):
                    await result

    # -- branches ---------------------------------------------------------------------------

    async def current_branch(self) -> str:
        """The name of the current branch."""
        return (await self._load()).current

    async def current_session(self) -> Session:
        """The session holding the current branch's items."""
        state = await self._load()
        return self._open_id(branch_session_id(self.session_id, state.current))

    async def refresh(self) -> None:
        """Read the branch log again (changes made through other handles)."""
        self._check_open()
        self._state = None
        await self._load()

    async def list_branches(self) -> list[BranchInfo]:
        """Every branch, main first, then by name."""
        state = await self._load()
        return [
            BranchInfo(
                name, branch_session_id(self.session_id, name), parent, turn, name == state.current
            )
            for name, (parent, turn) in sorted(
                state.branches.items(), key=lambda entry: (entry[0] != MAIN, entry[0])
            )
        ]

    async def branch_from(self, turn: int, name: str, *, switch: bool = True) -> Item:
        """Start branch ``name`` with the current branch's items before user turn ``turn``
        (0 is the first user message) and return that user message. The new branch becomes
        current unless ``switch=False``."""
        state = await self._load()
        _check_name(name)
        if name in state.branches:
            raise BranchError(f"branch {name!r} of session {self.session_id!r} already exists")
        items = await (await self.current_session()).get_items(None)
        starts = _turn_starts(items)
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise TypeError(f"turn must be an int, got {type(turn).__name__}")
        if not 0 <= turn < len(starts):
            raise BranchError(
                f"branch {state.current!r} of session {self.session_id!r} has "
                f"{len(starts)} user turns (0 to {len(starts) - 1}); there is no turn {turn}"
            )
        target = self._open_id(branch_session_id(self.session_id, name))
        await target.clear_session()  # leftovers of a creation that crashed before its log
        await target.add_items(items[: starts[turn]])
        parent = state.current
        events: list[Item] = [{"op": "create", "name": name, "parent": parent, "turn": turn}]
        if switch:
            events.append({"op": "switch", "name": name})
        await self._log(events)
        return dict(items[starts[turn]])

    async def switch(self, name: str) -> None:
        """Make branch ``name`` current (stored: new handles start there)."""
        state = await self._load()
        if name not in state.branches:
            raise BranchError(self._unknown(name, state))
        if name != state.current:
            await self._log([{"op": "switch", "name": name}])

    async def delete_branch(self, name: str) -> None:
        """Delete branch ``name`` and its items; not ``main``, not the current branch."""
        state = await self._load()
        if name == MAIN:
            raise BranchError("the main branch cannot be deleted")
        if name not in state.branches:
            raise BranchError(self._unknown(name, state))
        if name == state.current:
            raise BranchError(f"branch {name!r} is the current branch: switch away first")
        await self._log([{"op": "delete", "name": name}])
        await self._open_id(branch_session_id(self.session_id, name)).clear_session()

    # -- usage ------------------------------------------------------------------------------

    async def record_usage(self, usage: object, *, turn: int | None = None) -> None:
        """Record one run's token usage against user ``turn`` of the current branch
        (default: its latest user turn). ``usage`` is a mapping or an object with
        ``requests``, ``input_tokens``, ``output_tokens``, ``total_tokens`` (missing ones
        count 0; ``total_tokens`` missing is their sum)."""
        state = await self._load()
        counts = _usage_counts(usage)
        if turn is None:
            items = await (await self.current_session()).get_items(None)
            starts = _turn_starts(items)
            if not starts:
                raise BranchError(
                    f"branch {state.current!r} of session {self.session_id!r} has no user "
                    "turn to record usage against: pass turn="
                )
            turn = len(starts) - 1
        elif isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
            raise ValueError(f"turn must be an int >= 0, got {turn!r}")
        await self._log([{"op": "usage", "branch": state.current, "turn": turn, **counts}])

    async def after_run(self, result: object = None) -> None:
        """The runner's hook: record a finished run's usage (``result.usage``, else the
        Agents SDK's ``result.context_wrapper.usage``) against the current branch's latest
        user turn, then call the current branch session's own ``after_run`` (a
        ``CompactingSession`` from the factory compacts), with the result if it takes
        one. Nothing is recorded with ``record_runs=False``, without a result, or for a
        run that made no model call; a branch without a user turn logs a warning."""
        await self._record_run(result)
        await call_after_run(await self.current_session(), cast(Any, result))

    async def _record_run(self, result: object) -> None:
        if not self.record_runs or result is None:
            return
        usage = getattr(result, "usage", None)
        if usage is None:
            usage = getattr(getattr(result, "context_wrapper", None), "usage", None)
        if usage is None:
            raise TypeError(f"after_run needs a run result with usage, got {type(result).__name__}")
        counts = _usage_counts(usage)
        if not any(counts.values()):
            return
        try:
            await self.record_usage(counts)
        except BranchError as exc:
            logger.warning("the run's usage was not recorded: %s", exc)

    async def usage(self, *, branch: str | None = None, turn: int | None = None) -> Usage:
        """Usage summed over the whole session (every branch, deleted ones included), or
        one ``branch``, or one ``turn`` (of ``branch``, default the current one)."""
        state = await self._load()
        if turn is not None and branch is None:
            branch = state.current
        total = Usage()
        for name, at, counts in state.usage:
            if (branch is None or name == branch) and (turn is None or at == turn):
                total += counts
        return total

    async def usage_by_branch(self) -> dict[str, Usage]:
        """Usage per branch that has any recorded (deleted branches included), by name."""
        state = await self._load()
        branches: dict[str, Usage] = {}
        for name, _, counts in state.usage:
            branches[name] = branches.get(name, Usage()) + counts
        return dict(sorted(branches.items()))

    async def usage_by_turn(self, branch: str | None = None) -> dict[int, Usage]:
        """Usage per user turn of ``branch`` (default the current one), by turn."""
        state = await self._load()
        branch = state.current if branch is None else branch
        turns: dict[int, Usage] = {}
        for name, at, counts in state.usage:
            if name == branch:
                turns[at] = turns.get(at, Usage()) + counts
        return dict(sorted(turns.items()))

    # -- helpers ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"BranchingSession {self.session_id!r} is closed")

    def _open_id(self, session_id: str) -> Session:
        session = self._opened.get(session_id)
        if session is None:
            session = self._opened[session_id] = self._factory(session_id)
        return session

    async def _load(self) -> _State:
        self._check_open()
        if self._state is None:
            log = await self._open_id(metadata_session_id(self.session_id)).get_items(None)
            state = _State({MAIN: (None, None)}, MAIN, [])
            for event in log:
                _apply(state, event)
            self._state = state
        return self._state

    async def _log(self, events: list[Item]) -> None:
        state = await self._load()
        await self._open_id(metadata_session_id(self.session_id)).add_items(events)
        for event in events:
            _apply(state, event)

    def _unknown(self, name: str, state: _State) -> str:
        return (
            f"session {self.session_id!r} has no branch {name!r} (branches: "
            f"{', '.join(sorted(state.branches))})"
        )


def _apply(state: _State, event: Item) -> None:
    """Lay one log event on ``state``; an event this version does not know is ignored."""
    op, name = event.get("op"), event.get("name")
    if op == "create" and isinstance(name, str):
        parent, turn = event.get("parent"), event.get("turn")
        state.branches[name] = (
            parent if isinstance(parent, str) else None,
            turn if isinstance(turn, int) else None,
        )
    elif op == "switch" and isinstance(name, str) and name in state.branches:
        state.current = name
    elif op == "delete" and isinstance(name, str) and name != MAIN:
        state.branches.pop(name, None)
        if state.current == name:
            state.current = MAIN
    elif op == "usage":
        branch, turn = event.get("branch"), event.get("turn")
        if isinstance(branch, str) and isinstance(turn, int):
            counts = [event.get(field) for field in _USAGE_FIELDS]
            state.usage.append(
                (branch, turn, Usage(*(c if isinstance(c, int) else 0 for c in counts)))
            )


def _turn_starts(items: list[Item]) -> list[int]:
    return [index for index, item in enumerate(items) if message_role(item) == "user"]


def _check_name(name: object) -> None:
    if not isinstance(name, str):
        raise TypeError(f"a branch name must be a str, got {type(name).__name__}")
    if name == MAIN or not _NAME.fullmatch(name):
        raise BranchError(
            f"bad branch name {name!r}: 1 to 64 letters, digits, '_', '.', '-' (starting "
            f"with a letter or digit), and not {MAIN!r}"
        )


def _usage_counts(usage: object) -> dict[str, int]:
    counts: dict[str, int] = {}
    for field in _USAGE_FIELDS:
        value = usage.get(field) if isinstance(usage, Mapping) else getattr(usage, field, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"usage {field} must be an int >= 0, got {value!r}")
        counts[field] = value
    if not counts:
        raise TypeError(
            f"usage must hold some of {', '.join(_USAGE_FIELDS)}, got {type(usage).__name__}"
        )
    counts.setdefault(
        "total_tokens", counts.get("input_tokens", 0) + counts.get("output_tokens", 0)
    )
    for field in _USAGE_FIELDS:
        counts.setdefault(field, 0)
    return counts
