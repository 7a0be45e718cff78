"""Bounded history for any session: trimming and compaction, wrappers over the protocol.

::

    from agent_sessions import SQLiteSession
    from agent_sessions.bounded import CompactingSession, TrimmingSession

    recent = TrimmingSession(SQLiteSession("user_123", "chats.db"), max_tokens=8000)
    compact = CompactingSession(SQLiteSession("user_456", "chats.db"), model=model, threshold=200)

Both know the wrapped session only through the :class:`~agent_sessions.protocol.Session`
protocol, so they work over every backend. What a caller may rely on:

- **Turns.** A turn starts at a user message and runs to the next one; items before the
  first user message (a system message, a summary) form a turn of their own. A tool call
  (``function_call``) and its output (``function_call_output`` with the same ``call_id``)
  always stay in one turn: a user message between them does not start a new one.
- **Trimming is a view.** :class:`TrimmingSession` never deletes: ``get_items()`` returns
  the longest run of whole turns at the end of the history that fits ``max_items`` and
  ``max_tokens``; the stored history is untouched (``pop_item`` and ``clear_session``
  act on it as usual). It never starts with a tool output whose call it dropped, nor
  ends a kept turn early. The latest turn is returned whole even when it alone exceeds
  the bound (a turn is never split). An explicit ``get_items(limit=N)`` still means the
  latest ``N`` items of that view, as for every session (a limit may cut a turn; the
  runner drops tool items whose partner a limit cut off). Deleting from the front is not
  something the protocol can do atomically; use :class:`CompactingSession` to shrink
  the store.
- **Token estimate.** :func:`estimate_tokens` counts one token per four characters of
  the item's compact JSON, rounded up: a cheap, model-independent upper-side guess for
  English text. Pass ``estimate=`` (an ``Item -> int`` callable, e.g. a tokenizer) to
  count otherwise.
- **Compaction replaces the store's history.** :class:`CompactingSession` keeps the last
  ``keep_last_turns`` turns verbatim and replaces the turns before them with one summary
  item (a ``system`` message whose text starts with :data:`SUMMARY_PREFIX`) written by
  ``model``. It runs when the stored history holds more than ``threshold`` items (or
  ``threshold_tokens`` estimated tokens): after each run of our
  :class:`~agent_sessions.runner.Runner` (its ``after_run`` hook), or when called:
  ``await session.compact()``. Later compactions summarise the previous summary with
  the turns that followed it.
- **Atomic against failures, cancellation and crashes.** The model is asked before
  anything is written: a model that raises, returns no text or is cancelled leaves the
  history exactly as it was. The write is one call, ``replace_items``, when the wrapped
  session has that optional capability
  (:class:`~agent_sessions.protocol.ReplacingSession`: every backend of this library, in
  one transaction or MULTI/EXEC): a failure, or a process killed at any point, leaves
  the old history or the compacted one (``EncryptedSession`` has it too, over a session
  that has it). Without it (a third-party session) the write is ``clear_session`` then
  ``add_items``, the only way the bare protocol can replace a history; a store failing
  between them gets the history put back, but a process that dies between them loses
  it unless ``keep_originals`` saved it (below). Either way the write is shielded from
  cancellation: once started it completes, then the cancellation propagates. Items
  added through this wrapper while the model was thinking are kept after the summary;
  calls on one wrapper in one event loop are serialised by a lock. A history changed
  otherwise in the meantime (a ``pop_item`` through another handle) aborts the
  compaction with :class:`CompactionConflictError`, nothing changed; a writer on
  another handle that appends between the re-read and the write loses its batch.
- **Originals.** ``keep_originals=False`` (default) drops the summarised items.
  ``keep_originals=True`` appends them, before the store's history is replaced, to the
  ``archive`` session (required then, e.g. ``store.session(session_id + ":archive")``),
  in order: every original ends up in ``archive``, and a crash between the writes can
  duplicate items, never lose them.
- **Streaming is not delayed.** The runner calls ``after_run`` after the run's last item
  is saved and, when streaming, after ``stream_events()`` has delivered its last event
  and ended; ``await result.wait()`` waits for it. A failing compaction after a run is
  logged (logger ``agent_sessions``) and does not fail the run, whose items are saved.
- **Lifecycle.** The wrapper owns the wrapped session (and the archive): ``close()``
  closes them.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Final

from .base import MAX_INT64, GivenSettings
from .errors import SessionClosedError, SessionConfigError, SessionError
from .items import (
    call_key,
    is_function_call,
    is_function_call_output,
    message_role,
    message_text,
)
from .models import Model, ModelRequest
from .protocol import (
    Item,
    ReplacingSession,
    Session,
    SessionABC,
    SessionSettings,
    validate_session_id,
)

__all__ = [
    "DEFAULT_SUMMARY_INSTRUCTIONS",
    "SUMMARY_PREFIX",
    "CompactingSession",
    "CompactionConflictError",
    "CompactionError",
    "TrimmingSession",
    "estimate_tokens",
    "split_turns",
]

logger = logging.getLogger("agent_sessions")

SUMMARY_PREFIX: Final = "Summary of the earlier conversation:\n"
"""How the text of a summary item starts (its role is ``system``)."""

DEFAULT_SUMMARY_INSTRUCTIONS: Final = (
    "Summarise the conversation so far for your own later use: the user's goals, facts "
    "and preferences they gave, decisions made, tool results that still matter, and open "
    "questions. Be concise; write only the summary."
)

_FIRST_WINDOW: Final = 64


class CompactionError(SessionError):
    """A compaction could not produce a summary (the model returned no text); nothing
    was changed."""


class CompactionConflictError(CompactionError):
    """The history changed under a compaction other than by appending; nothing was
    changed."""


def estimate_tokens(item: Item) -> int:
    """One token per four characters of ``item``'s compact JSON, rounded up."""
    text = json.dumps(item, ensure_ascii=False, separators=(",", ":"))
    return -(-len(text) // 4)


def split_turns(items: list[Item]) -> list[list[Item]]:
    """``items`` cut into turns: a new one at each user message, unless a tool call
    before it still waits for its output (a pair is never split)."""
    turns: list[list[Item]] = []
    open_calls: set[object] = set()
    for item in items:
        if not turns or (message_role(item) == "user" and not open_calls):
            turns.append([])
        turns[-1].append(item)
        if is_function_call(item):
            open_calls.add(call_key(item))
        elif is_function_call_output(item):
            open_calls.discard(call_key(item))
    return turns


def _starts(items: list[Item], history_start: bool) -> list[int]:
    """Every index of ``items`` at which a suffix of whole turns starts, ascending: index
    0 when it is the history's start, and each user message whose suffix holds no tool
    item without its partner."""
    n = len(items)
    # calls and outputs seen in the suffix [i:], scanning backwards
    calls: set[object] = set()
    outputs: set[object] = set()
    unmatched = 0
    starts: list[int] = []
    for index in range(n - 1, -1, -1):
        item = items[index]
        if is_function_call(item):
            key = call_key(item)
            if key in outputs:
                unmatched -= 1
            else:
                unmatched += 1
            calls.add(key)
        elif is_function_call_output(item):
            key = call_key(item)
            if key in calls:
                unmatched -= 1
            else:
                unmatched += 1
            outputs.add(key)
        if unmatched == 0 and (message_role(item) == "user" or (index == 0 and history_start)):
            starts.append(index)
    starts.reverse()
    return starts


class _Wrapper(SessionABC):
    """What both wrappers share: the wrapped session, settings, delegation, lifecycle."""

    _name = "wrapper"

    def __init__(self, session: Session, session_settings: SessionSettings | None) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"{type(self).__name__} wraps a Session, got {type(session).__name__}")
        self.session_id = validate_session_id(session.session_id)
        self.session = session
        self._given = GivenSettings(session_settings)
        self._closed = False

    @property
    def session_settings(self) -> SessionSettings | None:
        """The settings given to this wrapper, else the wrapped session's (read at each
        call). Assign to change them; ``None`` goes back to the wrapped session's. Handed
        out as the Agents SDK's ``SessionSettings`` while the SDK is loaded (its Runner
        and wrappers accept only those), as every session of this library does."""
        given = self._given.handed_out()
        return self.session.session_settings if given is None else given

    @session_settings.setter
    def session_settings(self, settings: SessionSettings | None) -> None:
        self._given = GivenSettings(settings)

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The wrapped session's latest ``limit`` items (default ``session_settings.limit``,
        else all), oldest first."""
        self._check_open()
        wanted = self._effective_limit(limit)
        if wanted == 0:
            return []
        return await self.session.get_items(MAX_INT64 if wanted is None else wanted)

    async def add_items(self, items: list[Item]) -> None:
        """Append ``items`` to the wrapped session (one atomic batch)."""
        self._check_open()
        await self.session.add_items(items)

    async def pop_item(self) -> Item | None:
        """Remove and return the latest stored item."""
        self._check_open()
        return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Remove every item of the wrapped session."""
        self._check_open()
        await self.session.clear_session()

    async def close(self) -> None:
        """Close this wrapper and the sessions it wraps. Idempotent."""
        if self._closed:
            return
        self._closed = True
        for session in self._owned():
            close = getattr(session, "close", None)
            if callable(close):
                result = close()
                if inspect.isawaitable(result):
                    await result

    def _owned(self) -> list[Session]:
        return [self.session]

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"{type(self).__name__} {self.session_id!r} is closed")


class TrimmingSession(_Wrapper):
    """``session`` seen through a bound: ``get_items()`` returns the latest whole turns
    that fit ``max_items`` items and ``max_tokens`` estimated tokens (``estimate``,
    default :func:`estimate_tokens`). Give at least one bound. Nothing is deleted."""

    def __init__(
        self,
        session: Session,
        *,
        max_items: int | None = None,
        max_tokens: int | None = None,
        estimate: Callable[[Item], int] = estimate_tokens,
        session_settings: SessionSettings | None = None,
    ) -> None:
        super().__init__(session, session_settings)
        self._set_bounds(max_items, max_tokens)
        if not callable(estimate):
            raise TypeError(f"estimate must be callable, got {type(estimate).__name__}")
        self._estimate = estimate
        # The hint of get_items(limit=N)'s common case: read N + _extra items (see there).
        self._extra = 1

    @property
    def max_items(self) -> int | None:
        """The bound on the view's items (``None``: none). Assignable, checked as given
        to the constructor; the next read uses it."""
        return self._max_items

    @max_items.setter
    def max_items(self, max_items: int | None) -> None:
        self._set_bounds(max_items, self._max_tokens)

    @property
    def max_tokens(self) -> int | None:
        """The bound on the view's estimated tokens (``None``: none). Assignable, checked
        as given to the constructor; the next read uses it."""
        return self._max_tokens

    @max_tokens.setter
    def max_tokens(self, max_tokens: int | None) -> None:
        self._set_bounds(self._max_items, max_tokens)

    def _set_bounds(self, max_items: object, max_tokens: object) -> None:
        """Check both bounds, then set them (nothing changed on a bad one)."""
        if max_items is None and max_tokens is None:
            raise SessionConfigError("TrimmingSession needs max_items=, max_tokens= or both")
        checked_items = _check_bound(max_items, "max_items")
        checked_tokens = _check_bound(max_tokens, "max_tokens")
        self._max_items, self._max_tokens = checked_items, checked_tokens
        # The largest window in which every start fits (no token bound): what
        # get_items(limit=N)'s common case is decided within.
        self._plain_cap = checked_items if checked_tokens is None and checked_items else 0

    def __repr__(self) -> str:
        return (
            f"TrimmingSession({self.session!r}, max_items={self.max_items!r}, "
            f"max_tokens={self.max_tokens!r})"
        )

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The latest whole turns within the bounds, then the latest ``limit`` of them
        (default ``session_settings.limit``, else all), oldest first."""
        self._check_open()
        # An int limit as validate_limit checks it, inline: this is the hot path.
        wanted = limit if type(limit) is int and limit > 0 else self._effective_limit(limit)
        if wanted == 0:
            return []
        if wanted is not None and wanted < self._plain_cap:
            # The common case, decided without the turn scan: a window of no tool items
            # (every start fits max_items) in which a user message starts a turn at or
            # before the last ``wanted`` items. The window is those items, or one more
            # when the last read's did not start with a user message (a hint: an
            # alternating chat read with an odd limit); a wrong hint costs a second read.
            extra = self._extra
            window = wanted + extra
            stored = await self.session.get_items(window)
            if len(stored) == window and _no_tool_items(stored):
                if _is_user_message(stored[extra]):
                    self._extra = 0
                    return stored[extra:]
                if extra and _is_user_message(stored[0]):
                    return stored[1:]
            if not extra:
                self._extra = 1
                stored = await self.session.get_items(wanted + 1)
            latest = await self._latest(wanted, stored)
            if latest is not None:
                return latest
        elif wanted is not None:
            latest = await self._latest(wanted, await self.session.get_items(wanted + 1))
            if latest is not None:
                return latest
        stored, start, window = await self._bounded(wanted or 0)
        items = stored[start:]
        if wanted is None or not items:
            return items
        if len(stored) < window:
            # The wrapped session returned less than asked: a short history, or corrupt
            # rows it skipped, which still count towards its window (as the kit checks):
            # ask it for its latest ``wanted`` items, cut to the view.
            latest = await self.session.get_items(wanted)
        else:
            latest = stored[-wanted:]  # a full window holds no skipped row
        return latest[-len(items) :] if len(items) < len(latest) else latest

    async def _latest(self, wanted: int, stored: list[Item]) -> list[Item] | None:
        """``get_items(limit=wanted)`` from a window little larger than ``wanted``
        (``stored``: the first one, ``wanted + 1`` items asked for), or ``None`` when the
        wrapped session returns less than asked (then the general path decides). Fitting
        is monotonic (a later start keeps fewer items and tokens), so the latest start at
        or before the window's last ``wanted`` items decides whether the view holds them
        all; only when it does not fit are later starts tried."""
        window = wanted + 1
        cap = None if self.max_items is None else self.max_items + 1
        while True:
            if len(stored) < window:
                return None
            if (
                window <= self._plain_cap
                and _no_tool_items(stored)
                and (_is_user_message(stored[0]) or _is_user_message(stored[1]))
            ):
                return stored[-wanted:]  # the common case, as in get_items
            starts = _starts(stored, history_start=False)
            edge = len(stored) - wanted
            if any(start <= edge for start in starts) or (cap is not None and window >= cap):
                break
            if window >= MAX_INT64:
                return None
            window = min(window * 2, MAX_INT64)
            stored = await self.session.get_items(window)
        if not starts:
            return stored[-wanted:]  # inside one turn longer than the window: kept whole
        costs = self._suffix_tokens(stored) if self.max_tokens is not None else None
        first = next(
            (start for start in starts if self._fits(len(stored) - start, costs, start)),
            starts[-1],  # none fits: the latest turn, whole
        )
        return stored[first:][-wanted:]

    def _fits(self, count: int, costs: list[int] | None, start: int) -> bool:
        if self.max_items is not None and count > self.max_items:
            return False
        return costs is None or self.max_tokens is None or costs[start] <= self.max_tokens

    async def _bounded(self, at_least: int) -> tuple[list[Item], int, int]:
        """The stored window read, where the view starts in it, and the window's size."""
        window = self.max_items + 1 if self.max_items is not None else _FIRST_WINDOW
        window = max(window, at_least)
        while True:
            stored = await self.session.get_items(window)
            complete = len(stored) < window or window >= MAX_INT64
            start = self._fit(stored, complete)
            if start is not None:
                return stored, start, window
            # The window ends inside one long turn, or every start in it fits: look further.
            window = min(window * 2, MAX_INT64)

    def _fit(self, stored: list[Item], complete: bool) -> int | None:
        """Where the returned suffix of ``stored`` starts, or ``None`` to read more."""
        starts = _starts(stored, complete)
        if not starts:
            return 0 if complete else None
        costs = self._suffix_tokens(stored) if self.max_tokens is not None else None
        n = len(stored)
        for start in starts:  # ascending: the first one that fits is the longest suffix
            if self.max_items is not None and n - start > self.max_items:
                continue
            if costs is not None and self.max_tokens is not None and costs[start] > self.max_tokens:
                continue
            if start == 0 and not complete:
                return None  # fits, but an earlier start outside the window may fit too
            return start
        return starts[-1]  # the latest turn alone is over the bound: whole, never split

    def _suffix_tokens(self, stored: list[Item]) -> list[int]:
        costs = [0] * (len(stored) + 1)
        for index in range(len(stored) - 1, -1, -1):
            cost = self._estimate(stored[index])
            if isinstance(cost, bool) or not isinstance(cost, int) or cost < 0:
                raise TypeError(f"estimate must return an int >= 0, got {cost!r}")
            costs[index] = costs[index + 1] + cost
        return costs


class CompactingSession(_Wrapper):
    """``session`` whose older turns ``model`` replaces with a summary once the stored
    history holds more than ``threshold`` items (or ``threshold_tokens`` estimated
    tokens); the last ``keep_last_turns`` turns stay verbatim. See the module's
    documentation for atomicity and ``keep_originals``/``archive``."""

    def __init__(
        self,
        session: Session,
        *,
        model: Model,
        threshold: int,
        threshold_tokens: int | None = None,
        keep_last_turns: int = 2,
        keep_originals: bool = False,
        archive: Session | None = None,
        instructions: str = DEFAULT_SUMMARY_INSTRUCTIONS,
        estimate: Callable[[Item], int] = estimate_tokens,
        session_settings: SessionSettings | None = None,
    ) -> None:
        super().__init__(session, session_settings)
        if not callable(getattr(model, "respond", None)):
            raise TypeError(f"model must be a Model (with respond), got {type(model).__name__}")
        self.model = model
        checked = _check_bound(threshold, "threshold")
        if checked is None:
            raise TypeError("threshold must be an int >= 1 (items stored before compacting)")
        self.threshold = checked
        self.threshold_tokens = _check_bound(threshold_tokens, "threshold_tokens")
        if isinstance(keep_last_turns, bool) or not isinstance(keep_last_turns, int):
            raise TypeError(
                f"keep_last_turns must be an int >= 0, got {type(keep_last_turns).__name__}"
            )
        if keep_last_turns < 0:
            raise SessionConfigError(f"keep_last_turns must be >= 0, got {keep_last_turns}")
        self.keep_last_turns = keep_last_turns
        if keep_originals and archive is None:
            raise SessionConfigError(
                "keep_originals=True needs archive=, the session the summarised items go to "
                "(e.g. store.session(session_id + ':archive'))"
            )
        if archive is not None and not keep_originals:
            raise SessionConfigError("archive= is used only with keep_originals=True")
        if archive is not None and not isinstance(archive, Session):
            raise TypeError(f"archive must be a Session, got {type(archive).__name__}")
        self.keep_originals = keep_originals
        self.archive = archive
        self.instructions = instructions
        self._estimate = estimate
        # Per event loop (a wrapper may be used from threads, each with its loop):
        # the write lock is held while the history is read back and replaced, the other
        # lets one compaction run at a time.
        self._locks: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[asyncio.Lock, asyncio.Lock]
        ] = weakref.WeakKeyDictionary()
        self._locks_guard = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"CompactingSession({self.session!r}, threshold={self.threshold!r}, "
            f"keep_last_turns={self.keep_last_turns!r}, keep_originals={self.keep_originals!r})"
        )

    async def add_items(self, items: list[Item]) -> None:
        """Append ``items`` (waits while a compaction writes)."""
        self._check_open()
        async with self._loop_locks()[0]:
            await self.session.add_items(items)

    async def pop_item(self) -> Item | None:
        """Remove and return the latest stored item (waits while a compaction writes)."""
        self._check_open()
        async with self._loop_locks()[0]:
            return await self.session.pop_item()

    async def clear_session(self) -> None:
        """Remove every item of the wrapped session (not of the archive)."""
        self._check_open()
        async with self._loop_locks()[0]:
            await self.session.clear_session()

    async def after_run(self) -> None:
        """Called by the runner after a run: compact if the threshold is passed."""
        if await self.needs_compaction():
            await self.compact()

    async def needs_compaction(self) -> bool:
        """Whether the stored history is over ``threshold`` (or ``threshold_tokens``)."""
        self._check_open()
        stored = await self.session.get_items(self.threshold + 1)
        if len(stored) > self.threshold:
            return True
        if self.threshold_tokens is None:
            return False
        return sum(self._estimate(item) for item in stored) > self.threshold_tokens

    async def compact(self) -> bool:
        """Replace every turn but the last ``keep_last_turns`` with a summary, whatever the
        threshold. Returns whether anything changed (``False``: nothing to summarise)."""
        self._check_open()
        async with self._loop_locks()[1]:
            return await self._compact()

    async def _compact(self) -> bool:
        snapshot = await self.session.get_items(MAX_INT64)
        turns = split_turns(snapshot)
        cut = len(turns) - self.keep_last_turns
        if cut <= 0:
            return False
        older = [item for turn in turns[:cut] for item in turn]
        if len(older) == 1 and _is_summary(older[0]):
            return False  # only the previous summary: nothing new to summarise
        kept = snapshot[len(older) :]
        summary = await self._summarise(older)  # nothing written yet: failure changes nothing
        write = asyncio.ensure_future(self._replace(snapshot, older, [summary, *kept]))
        cancelled = False
        while True:
            try:
                await asyncio.shield(write)
                break
            except asyncio.CancelledError:
                if write.done():
                    raise
                cancelled = True  # the write completes first, then the cancellation goes on
        if cancelled:
            raise asyncio.CancelledError
        return True

    async def _summarise(self, older: list[Item]) -> Item:
        request = ModelRequest(
            self.instructions,
            [*older, {"role": "user", "content": "Summarise the conversation above."}],
        )
        response = await self.model.respond(request)
        texts = [
            message_text(item) for item in response.output if message_role(item) == "assistant"
        ]
        text = "\n".join(part for part in texts if part.strip()).strip()
        if not text:
            raise CompactionError(
                f"compaction of session {self.session_id!r}: the model returned no summary "
                "text; the history was left as it was"
            )
        return {"role": "system", "content": SUMMARY_PREFIX + text}

    async def _replace(self, snapshot: list[Item], older: list[Item], new: list[Item]) -> None:
        async with self._loop_locks()[0]:
            current = await self.session.get_items(MAX_INT64)
            if current[: len(snapshot)] != snapshot:
                raise CompactionConflictError(
                    f"compaction of session {self.session_id!r}: the history changed while "
                    "the summary was written (not only appended to); nothing was changed"
                )
            appended = current[len(snapshot) :]
            originals = [item for item in older if not _is_summary(item)]
            if self.archive is not None and originals:
                await self.archive.add_items(originals)
            if isinstance(self.session, ReplacingSession):
                try:
                    await self.session.replace_items([*new, *appended])
                    return
                except NotImplementedError:
                    pass  # a third-party store without the capability: the two calls below
            # The protocol's only way, not atomic across a crash (see the module's docs).
            await self.session.clear_session()
            try:
                await self.session.add_items([*new, *appended])
            except BaseException:
                logger.exception(
                    "compaction of session %r failed after clearing it; putting back the "
                    "%d items it held",
                    self.session_id,
                    len(current),
                )
                await self.session.add_items(current)
                raise

    def _loop_locks(self) -> tuple[asyncio.Lock, asyncio.Lock]:
        loop = asyncio.get_running_loop()
        with self._locks_guard:
            locks = self._locks.get(loop)
            if locks is None:
                locks = self._locks[loop] = (asyncio.Lock(), asyncio.Lock())
            return locks

    def _owned(self) -> list[Session]:
        return [self.session] if self.archive is None else [self.session, self.archive]


def _is_summary(item: Item) -> bool:
    return message_role(item) == "system" and message_text(item).startswith(SUMMARY_PREFIX)


_TOOL_ITEMS: Final = frozenset({"function_call", "function_call_output"})


def _no_tool_items(items: list[Item]) -> bool:
    """Whether ``items`` holds no tool call and no tool output (the hot path of a trimmed
    ``get_items(limit=N)``)."""
    try:
        for item in items:  # a loop: all() of a generator is slower
            if item.get("type") in _TOOL_ITEMS:
                return False
    except TypeError:  # a type that is a list or an object (any JSON value is allowed)
        return not any(is_function_call(item) or is_function_call_output(item) for item in items)
    return True


def _is_user_message(item: Item) -> bool:
    """``message_role(item) == "user"``, inline."""
    return item.get("role") == "user" and item.get("type", "message") == "message"


def _check_bound(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int >= 1 or None, got {type(value).__name__}")
    if value < 1:
        raise SessionConfigError(f"{name} must be >= 1, got {value}")
    return value
