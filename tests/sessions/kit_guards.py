"""More broken backends for the kit tests that check more than one property.

``kit_mutants.MUTANTS`` gives each kit test one broken backend; a kit test that checks
several things (it raises *and* stores nothing; it returns the item *and* removes it) needs
one broken backend per property, so that weakening any single check of it fails the
self-test. ``GUARDS`` maps a kit test name to a tuple of those further backends (plain
``ListSession`` subclasses, or ``Mutant(backend, fails=...)`` as in ``kit_mutants``). The
guards of a kit test add up over every registry of ``GUARD_REGISTRIES``
(tests/sessions/test_kit.py); tests/sessions/test_kit_checks.py finds a check that none of
them guards.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import multiprocessing
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from typing_extensions import Self

from agent_sessions import (
    BackendTimeoutError,
    BackendUnreachableError,
    InvalidItemError,
    InvalidSessionIdError,
    Item,
    SessionBackendError,
    SessionSettings,
)
from agent_sessions._json import decode_items, encode_items
from agent_sessions.protocol import SessionsPage

from .kit_mutants import Mutant, _listing_by, _ListingOf, _rows
from .kit_mutants_loops import FreezableListSession
from .list_session import (
    ListKit,
    ListSession,
    ListStore,
    ProcessListKit,
    UnreachableListSession,
)

_STORES_NOTHING = frozenset(
    {
        "test_add_items_rejects_a_non_mapping_and_stores_nothing",
        "test_add_items_rejects_a_non_str_key_and_stores_nothing",
        "test_add_items_rejects_a_value_json_cannot_store_and_stores_nothing",
        "test_add_items_rejects_a_lone_surrogate_and_stores_nothing",
        "test_add_items_rejects_nesting_too_deep_to_encode_and_stores_nothing",
        "test_add_items_refuses_a_bad_item_with_invalid_item_error",
    }
)


class StoresTheItemsBeforeABadOne(ListSession):
    """Refuses a bad item with the right error, after storing the items before it."""

    async def add_items(self, items: list[Item]) -> None:
        try:
            await super().add_items(items)
        except InvalidItemError:
            if isinstance(items, list):
                for item in items:
                    if not isinstance(item, Mapping):
                        break
                    try:
                        _rows(self).extend(encode_items([item]))
                    except InvalidItemError:
                        break
            raise


class IgnoresABadBatch(ListSession):
    """Stores nothing of a batch with a bad item, and says nothing either."""

    async def add_items(self, items: list[Item]) -> None:
        try:
            await super().add_items(items)
        except InvalidItemError:
            self.check_open()


class StoresASingleItemThenRaises(ListSession):
    """Given one item instead of a list, stores it and then refuses it."""

    async def add_items(self, items: list[Item]) -> None:
        given: object = items
        if isinstance(given, dict):
            await super().add_items([given])
        await super().add_items(items)


class RaisesAPlainRuntimeErrorWhenClosed(ListSession):
    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"ListSession {self.session_id!r} is closed")


class ThirdCloseReopens(ListSession):
    """Counts its ``close()`` calls: the third one reopens the session."""

    closes = 0

    async def close(self) -> None:
        self.closes += 1
        self.closed = self.closes != 3


class ClearHidesFromPopOnly(ListSession):
    """``clear_session`` makes ``pop_item`` find nothing, but the items stay readable."""

    cleared = False

    async def clear_session(self) -> None:
        self.check_open()
        self.cleared = True

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        self.cleared = False

    async def pop_item(self) -> Item | None:
        return None if self.cleared else await super().pop_item()


class EmptyBatchLeavesAPlaceholder(ListSession):
    """An empty batch on an empty session leaves a placeholder, read as ``{}`` until real
    items arrive."""

    placeholder = False

    async def add_items(self, items: list[Item]) -> None:
        self.placeholder = items == [] and not _rows(self)
        await super().add_items(items)

    async def get_items(self, limit: int | None = None) -> list[Item]:
        items = await super().get_items(limit)
        return [{}] if self.placeholder and not items else items


class ClearOnAnEmptySessionStoresAMarker(ListSession):
    async def clear_session(self) -> None:
        was_empty = not _rows(self)
        await super().clear_session()
        if was_empty:
            _rows(self).extend(encode_items([{"cleared": True}]))


class CloseDeletesTheItems(ListSession):
    async def close(self) -> None:
        with self.store.lock:
            self.store.rows.pop(self.session_id, None)
        await super().close()


class PopOnEmptyReturnsAnEmptyItem(ListSession):
    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        return {} if popped is None else popped


class PopReturnsNoneButDeletes(ListSession):
    async def pop_item(self) -> Item | None:
        await super().pop_item()
        return None


class ExposesTheStorageKeyAsItsId(ListSession):
    """Its ``session_id`` attribute is the key it stores under, not the id it was given."""

    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__(session_id, store, session_settings)
        self.key = f"sessions:{session_id}"

    def __getattribute__(self, name: str) -> Any:
        if name == "session_id" and not _storing.get():
            return super().__getattribute__("key")
        return super().__getattribute__(name)

    async def get_items(self, limit: int | None = None) -> list[Item]:
        with _store_calls():
            return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        with _store_calls():
            await super().add_items(items)

    async def pop_item(self) -> Item | None:
        with _store_calls():
            return await super().pop_item()

    async def clear_session(self) -> None:
        with _store_calls():
            await super().clear_session()


_storing: contextvars.ContextVar[bool] = contextvars.ContextVar("_storing", default=False)


@contextlib.contextmanager
def _store_calls() -> Iterator[None]:
    token = _storing.set(True)
    try:
        yield
    finally:
        _storing.reset(token)


class HugeIntsComeBackAsFloats(ListSession):
    """Integers beyond int64 come back as floats (equal to them when they are powers of two)."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        def widen(value: Any) -> Any:
            if isinstance(value, dict):
                return {key: widen(item) for key, item in value.items()}
            if isinstance(value, list):
                return [widen(item) for item in value]
            if type(value) is int and abs(value) > 2**63 - 1:
                return float(value)
            return value

        return [widen(item) for item in await super().get_items(limit)]


class CopiesTheLastReadBack(ListSession):
    """While nothing was written, a read returns a copy of what the last read returned,
    changes the caller made to it included."""

    _last: list[Item] | None = None

    async def add_items(self, items: list[Item]) -> None:
        self._last = None
        await super().add_items(items)

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if limit is None and self._last is not None:
            return copy.deepcopy(self._last)
        items = await super().get_items(limit)
        if limit is None:
            self._last = items
        return items


class RefillsTheSameObjects(ListSession):
    """Reads decode into the dicts of the previous read, reusing the objects."""

    _last: list[Item] | None = None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        items = await super().get_items(limit)
        if self._last is not None and len(self._last) == len(items):
            for old, new in zip(self._last, items, strict=True):
                old.clear()
                old.update(new)
            return self._last
        self._last = items
        return items


class AenterReturnsAnotherSession(ListSession):
    """``async with session as entered`` binds a new session object on the same id."""

    async def __aenter__(self) -> Self:
        return type(self)(self.session_id, self.store, self.session_settings)


class ZeroFallsBackToTheSettingsLimit(ListSession):
    """``limit=0`` is taken as "no limit given" when the settings have one."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if type(limit) is int and limit == 0 and self.session_settings is not None:
            limit = None
        return await super().get_items(limit)


class HugeLimitWrapsAround(ListSession):
    """The limit is bound as an unsigned 64-bit integer: 2**80 becomes 0."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if type(limit) is int and limit > 2**64 - 1:
            limit %= 2**64
        return await super().get_items(limit)


class CloseFailsOffTheMainThread(ListSession):
    async def close(self) -> None:
        await super().close()
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("close() must be called from the main thread")


class _PrefixCutAtTheNulStore(_ListingOf):
    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        # As a C string binding would: the prefix ends at its first NUL.
        return await super().list_sessions(
            prefix=prefix.split("\x00")[0], cursor=cursor, limit=limit
        )


class RefusesNulIdsListsByThePrefixBeforeTheNul(_listing_by(_PrefixCutAtTheNulStore)):  # type: ignore[misc]
    """Refuses a NUL in an id (as PostgreSQL must), but a prefix with a NUL lists the ids
    that start with the part before it."""

    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        if "\x00" in session_id:
            raise InvalidSessionIdError("session_id holds a NUL character")
        super().__init__(session_id, store, session_settings)


class _NulIdsOnlyUnderANulPrefixStore(_ListingOf):
    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        # Ids with a NUL kept apart (escaped), and only a prefix with a NUL looks there.
        page = await super().list_sessions(prefix=prefix, cursor=cursor, limit=limit)
        if "\x00" in prefix:
            return page
        return SessionsPage([i for i in page.session_ids if "\x00" not in i], page.next_cursor)


ListsNulIdsOnlyUnderANulPrefix = _listing_by(_NulIdsOnlyUnderANulPrefixStore)


class _WrapsInABuiltinConnectionError(UnreachableListSession):
    async def fail(self) -> NoReturn:
        self.check_open()
        try:
            raise self.refusal()
        except OSError as exc:
            raise ConnectionError(f"list store at {self.masked} is unreachable") from exc


class _NamesNoAddress(UnreachableListSession):
    async def fail(self) -> NoReturn:
        self.check_open()
        try:
            raise self.refusal()
        except OSError as exc:
            raise BackendUnreachableError("the list store is unreachable") from exc


class _DropsTheDriversError(UnreachableListSession):
    async def fail(self) -> NoReturn:
        self.check_open()
        raise BackendUnreachableError(f"list store at {self.masked} is unreachable")


class _ChainsItsOwnError(UnreachableListSession):
    """Wraps its own error of the refusal again: the driver's error is lost."""

    async def fail(self) -> NoReturn:
        self.check_open()
        try:
            raise SessionBackendError("connection refused")
        except SessionBackendError as exc:
            raise BackendUnreachableError(f"list store at {self.masked} is unreachable") from exc


class _SaysAnyWriteMayHaveHappened(UnreachableListSession):
    async def fail(self) -> NoReturn:
        try:
            await super().fail()
        except BackendUnreachableError as exc:
            exc.may_have_written = True
            raise


class _PrintsThePassword(UnreachableListSession):
    """Names the masked URL, then repeats the driver's message, which holds the raw one."""

    async def fail(self) -> NoReturn:
        self.check_open()
        try:
            raise self.refusal()
        except OSError as exc:
            raise BackendUnreachableError(
                f"list store at {self.masked} is unreachable: {exc}"
            ) from exc


def _failing_by(session_class: type[UnreachableListSession]) -> type[ListKit]:
    name = f"FailsBy{session_class.__name__.strip('_')}"
    kit: type[ListKit] = type(name, (ListKit,), {"failing_session_class": session_class})
    return kit


FailsWithABuiltinConnectionError = _failing_by(_WrapsInABuiltinConnectionError)
FailsNamingNoAddress = _failing_by(_NamesNoAddress)
FailsWithoutTheDriversError = _failing_by(_DropsTheDriversError)
FailsPrintingThePassword = _failing_by(_PrintsThePassword)
FailsChainingItsOwnError = _failing_by(_ChainsItsOwnError)
_MAY_HAVE_WRITTEN = Mutant(
    _failing_by(_SaysAnyWriteMayHaveHappened),
    frozenset({"test_a_failing_store_raises_a_session_error_naming_it[add_items]"}),
)

_PARTIAL = Mutant(StoresTheItemsBeforeABadOne, _STORES_NOTHING)
_SILENT = Mutant(
    IgnoresABadBatch,
    frozenset(
        {
            *_STORES_NOTHING,
            "test_add_items_rejects_a_single_item_instead_of_a_list",
        }
    ),
)
_PLAIN_RUNTIME_ERROR = Mutant(
    RaisesAPlainRuntimeErrorWhenClosed,
    frozenset(
        {
            "test_calls_after_close_raise_session_closed_error",
            "test_a_closed_session_raises_session_closed_error_before_checking_arguments",
            "test_async_with_closes_the_session",
            "test_close_is_idempotent",
            "test_close_from_another_event_loop",
        }
    ),
)
_STORAGE_KEY_AS_ID = Mutant(
    ExposesTheStorageKeyAsItsId,
    frozenset(
        {
            # every kit test that reads session.session_id, or reopens a session by it
            "test_session_satisfies_the_session_protocol",
            "test_hostile_session_id_is_stored_and_isolated",
            "test_a_corrupt_row_counts_towards_the_limit",
            "test_cancelled_add_items_stores_all_or_nothing",
            "test_closing_one_session_leaves_others_on_the_same_id_usable",
            "test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous",
            "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous",
            "test_get_items_skips_a_corrupt_row_with_a_warning",
            "test_items_are_visible_to_another_session_object_on_the_same_id",
            "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item",
            "test_list_sessions_clamps_a_huge_limit",
            "test_list_sessions_finds_an_id_with_a_nul_after_the_prefix",
        }
    ),
)

GUARDS: dict[str, tuple[type | Mutant, ...]] = {
    **{test: (_PARTIAL, _SILENT) for test in sorted(_STORES_NOTHING)},
    "test_add_items_rejects_a_single_item_instead_of_a_list": (
        _SILENT,
        Mutant(
            StoresASingleItemThenRaises,
            frozenset({"test_add_items_rejects_a_single_item_instead_of_a_list[dict]"}),
        ),
    ),
    "test_calls_after_close_raise_session_closed_error": (_PLAIN_RUNTIME_ERROR,),
    "test_close_is_idempotent": (_PLAIN_RUNTIME_ERROR, ThirdCloseReopens),
    "test_close_from_another_event_loop": (_PLAIN_RUNTIME_ERROR,),
    "test_add_items_empty_list_is_a_no_op": (EmptyBatchLeavesAPlaceholder,),
    "test_clear_session_on_an_empty_session_is_a_no_op": (ClearOnAnEmptySessionStoresAMarker,),
    "test_closing_one_session_leaves_others_on_the_same_id_usable": (
        Mutant(
            CloseDeletesTheItems,
            frozenset(
                {
                    "test_closing_one_session_leaves_others_on_the_same_id_usable",
                    "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous",
                }
            ),
        ),
    ),
    "test_pop_item_on_an_empty_session_returns_none": (
        Mutant(
            PopOnEmptyReturnsAnEmptyItem,
            frozenset(
                {
                    "test_clear_session_removes_every_item",
                    "test_concurrent_pop_item_returns_each_item_once",
                    "test_pop_item_leaves_other_sessions_alone",
                    "test_pop_item_on_a_session_of_only_corrupt_rows_returns_none",
                    "test_pop_item_on_an_empty_session_returns_none",
                    "test_pop_item_until_empty_returns_items_newest_first",
                }
            ),
        ),
    ),
    "test_pop_item_removes_and_returns_the_latest_item": (
        Mutant(
            PopReturnsNoneButDeletes,
            frozenset(
                {
                    "test_concurrent_pop_item_returns_each_item_once",
                    "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item",
                    "test_pop_item_leaves_other_sessions_alone",
                    "test_pop_item_removes_and_returns_the_latest_item",
                    "test_pop_item_until_empty_returns_items_newest_first",
                    "test_session_is_usable_after_a_cancelled_add_items",
                }
            ),
        ),
    ),
    "test_list_sessions_finds_an_id_with_a_nul_after_the_prefix": (
        RefusesNulIdsListsByThePrefixBeforeTheNul,
        ListsNulIdsOnlyUnderANulPrefix,
    ),
    "test_a_failing_store_raises_a_session_error_naming_it": (
        FailsWithABuiltinConnectionError,
        FailsNamingNoAddress,
        FailsWithoutTheDriversError,
        FailsChainingItsOwnError,
        FailsPrintingThePassword,
        _MAY_HAVE_WRITTEN,
    ),
    "test_session_satisfies_the_session_protocol": (_STORAGE_KEY_AS_ID,),
    "test_hostile_session_id_is_stored_and_isolated": (_STORAGE_KEY_AS_ID,),
    "test_round_trip_keeps_nested_values_and_json_types": (HugeIntsComeBackAsFloats,),
    "test_get_items_returns_fresh_objects": (CopiesTheLastReadBack, RefillsTheSameObjects),
    "test_async_with_closes_the_session": (AenterReturnsAnotherSession,),
    "test_get_items_explicit_limit_overrides_the_settings_limit": (
        ZeroFallsBackToTheSettingsLimit,
    ),
    "test_get_items_huge_limit_returns_everything": (HugeLimitWrapsAround,),
    "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous": (
        CloseFailsOffTheMainThread,
    ),
    "test_clear_session_removes_every_item": (
        Mutant(
            ClearHidesFromPopOnly,
            frozenset(
                {
                    "test_clear_session_removes_every_item",
                    "test_session_is_usable_after_a_cancelled_add_items",
                    "test_session_is_usable_after_clear_session",
                }
            ),
        ),
    ),
}


UNGUARDED: dict[tuple[str, str], str] = {
    (
        "_assert_all_batches_contiguous",
        "assert len(items) == writers * batches * batch_size, 'items lost or duplicated'",
    ): (
        "equivalent: a wrong count always breaks a check after it (a batch cut short or "
        "repeated is not contiguous, a batch lost or repeated puts its writer's batches "
        "out of order, an unknown writer fails the lookup): it is there for its message"
    ),
    (
        "test_a_bad_session_id_raises_invalid_session_id_error",
        "assert isinstance(raised.value, ValueError)",
    ): (
        "equivalent: the pytest.raises before it demands InvalidSessionIdError, a "
        "ValueError subclass"
    ),
    (
        "test_add_items_refuses_a_bad_item_with_invalid_item_error",
        "assert isinstance(raised.value, TypeError)",
    ): "equivalent: the pytest.raises before it demands InvalidItemError, a TypeError subclass",
    (
        "test_calls_after_close_raise_session_closed_error",
        "assert isinstance(raised.value, RuntimeError)",
    ): (
        "equivalent: the pytest.raises before it demands SessionClosedError, a "
        "RuntimeError subclass"
    ),
}
"""Checks of the kit that no guard notices when weakened, by (the kit test or ``_assert*``
helper they are in, their source as ``ast.unparse`` writes it) -> why, which must be
``equivalent: ``: no backend can fail that check alone (another check of the test implies
it). Every other check has a guard. tests/sessions/test_kit_checks.py fails on an
unguarded check missing here, and on an entry here that a guard now covers."""


# -- guards of the checks that no broken backend above fails alone (issue 28) ---------------


def _off_the_first_thread() -> bool:
    """In a thread other than the main one, or in a child process."""
    return (
        threading.current_thread() is not threading.main_thread()
        or multiprocessing.parent_process() is not None
    )


async def _contended(session: ListSession) -> bool:
    """Yield once, counting this write as in flight on its event loop: whether another
    write of the same loop was in flight meanwhile."""
    counts: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
        session.store.__dict__.setdefault("in_flight", weakref.WeakKeyDictionary())
    )
    loop = asyncio.get_running_loop()
    counts[loop] = counts.get(loop, 0) + 1
    try:
        await asyncio.sleep(0)
        return counts[loop] > 1
    finally:
        counts[loop] -= 1


class ReversesContendedBatches(ListSession):
    """A batch written while another write of its loop is in flight, from another thread,
    or from a child process is stored in reverse (as a writer that retries by pushing its
    rows on a stack would): each batch stays whole and in its place, its items do not."""

    async def add_items(self, items: list[Item]) -> None:
        contended = await _contended(self)
        if contended or _off_the_first_thread():
            self.check_open()
            encoded = encode_items(items)
            with self.store.lock:
                self.store.rows.setdefault(self.session_id, []).extend(reversed(encoded))
            return
        await super().add_items(items)


class DefersContendedBatches(ListSession):
    """A write-behind buffer: a batch written under contention, from another thread or
    from a child process is held back (per session object and thread) and stored after
    that writer's next batch, or when the writer reads or closes: nothing is lost, every
    batch stays whole, but a writer's batches come out of order."""

    def _pending(self) -> dict[tuple[int, int], list[str]]:
        pending: dict[tuple[int, int], list[str]] = self.store.__dict__.setdefault("pending", {})
        return pending

    def _flush(self) -> None:
        held = self._pending().pop((id(self), threading.get_ident()), None)
        if held is not None:
            with self.store.lock:
                self.store.rows.setdefault(self.session_id, []).extend(held)

    async def add_items(self, items: list[Item]) -> None:
        contended = await _contended(self)
        key = (id(self), threading.get_ident())
        if key not in self._pending() and (contended or _off_the_first_thread()):
            self.check_open()
            self._pending()[key] = encode_items(items)
            return
        await super().add_items(items)
        self._flush()

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if threading.current_thread() is threading.main_thread():
            for held in [self._pending().pop(key) for key in list(self._pending())]:
                with self.store.lock:
                    self.store.rows.setdefault(self.session_id, []).extend(held)
        self._flush()
        return await super().get_items(limit)

    async def close(self) -> None:
        self._flush()
        await super().close()


class FailsToCloseInAChildProcess(ListSession):
    """Writes everything, but ``close()`` fails in a child process: the child exits 1."""

    async def close(self) -> None:
        await super().close()
        if multiprocessing.parent_process() is not None:
            raise RuntimeError("the child's connection did not close cleanly")


def _on_the_journal(session_class: type[ListSession]) -> type[ProcessListKit]:
    name = f"OnTheJournal{session_class.__name__}"
    kit: type[ProcessListKit] = type(name, (ProcessListKit,), {"session_class": session_class})
    return kit


_BATCHES_TESTS = frozenset(
    {
        "test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous",
        "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous",
        "test_four_threads_with_a_loop_each_share_one_session",
        "test_concurrent_processes_lose_no_items_and_keep_batches_contiguous",
    }
)
_REVERSED = Mutant(_on_the_journal(ReversesContendedBatches), _BATCHES_TESTS)
_DEFERRED = Mutant(_on_the_journal(DefersContendedBatches), _BATCHES_TESTS)


class _OnItsFirstLoop(ListSession):
    """Remembers the first event loop that used it."""

    first_loop: asyncio.AbstractEventLoop | None = None

    def on_a_new_loop(self) -> bool:
        loop = asyncio.get_running_loop()
        if self.first_loop is None:
            self.first_loop = loop
        return loop is not self.first_loop

    async def add_items(self, items: list[Item]) -> None:
        self.on_a_new_loop()
        await super().add_items(items)


class ReadsNothingOnANewLoop(_OnItsFirstLoop):
    """A read on any loop but the first finds nothing (its connection's cache is empty)."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if self.on_a_new_loop():
            self.check_open()
            return []
        return await super().get_items(limit)


class PopOnANewLoopReturnsNone(_OnItsFirstLoop):
    """On any loop but the first, ``pop_item`` deletes the item and loses the answer."""

    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        return None if self.on_a_new_loop() else popped


class _RowsKnowTheirLoop(ListSession):
    """Remembers, for each row it writes, the event loop that wrote it and when (a
    sequence number of the store); rows written otherwise (corrupt ones) have neither."""

    def _written(self) -> dict[int, tuple[str, asyncio.AbstractEventLoop, int]]:
        written: dict[int, tuple[str, asyncio.AbstractEventLoop, int]] = (
            self.store.__dict__.setdefault("written", {})
        )
        return written

    def _sequence(self) -> int:
        self.store.__dict__["sequence"] = self.store.__dict__.get("sequence", 0) + 1
        return int(self.store.__dict__["sequence"])

    def writer(self, row: str) -> tuple[asyncio.AbstractEventLoop, int] | None:
        known = self._written().get(id(row))
        return (known[1], known[2]) if known is not None and known[0] is row else None

    async def add_items(self, items: list[Item]) -> None:
        self.check_open()
        encoded = encode_items(items)
        loop = asyncio.get_running_loop()
        with self.store.lock:
            for row in encoded:
                self._written()[id(row)] = (row, loop, self._sequence())
            self.store.rows.setdefault(self.session_id, []).extend(encoded)


class EachLoopReadsItsOwnSnapshot(_RowsKnowTheirLoop):
    """Each event loop has its own connection, in a repeatable-read transaction begun at
    its first call and renewed by its own writes only: rows that sessions wrote on other
    loops since then are not seen."""

    def _horizons(self) -> weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int]:
        horizons: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = (
            self.__dict__.setdefault("horizons", weakref.WeakKeyDictionary())
        )
        return horizons

    def _renew(self) -> None:
        self._horizons()[asyncio.get_running_loop()] = int(self.store.__dict__.get("sequence", 0))

    async def get_items(self, limit: int | None = None) -> list[Item]:
        loop = asyncio.get_running_loop()
        if loop not in self._horizons():
            self._renew()
        self.check_open()
        horizon = self._horizons()[loop]
        with self.store.lock:
            rows = [
                row
                for row in self.store.rows.get(self.session_id, [])
                if (writer := self.writer(row)) is None or writer[0] is loop or writer[1] <= horizon
            ]
        limit = self._effective_limit(limit)
        if limit is not None:
            rows = rows[len(rows) - min(limit, len(rows)) :]
        return decode_items(enumerate(rows), where=str)

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        self._renew()

    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        self._renew()
        return popped

    async def clear_session(self) -> None:
        await super().clear_session()
        self._renew()


class ClearKeepsRowsWrittenOnOtherLoops(_RowsKnowTheirLoop):
    """``clear_session`` leaves the rows that sessions wrote on other event loops: each
    loop's connection clears only what it wrote itself (and foreign rows)."""

    async def clear_session(self) -> None:
        self.check_open()
        loop = asyncio.get_running_loop()
        with self.store.lock:
            rows = self.store.rows.get(self.session_id, [])
            rows[:] = [
                row for row in rows if (w := self.writer(row)) is not None and w[0] is not loop
            ]


class DropsWritesOnANewLoop(_OnItsFirstLoop):
    """A write on any loop but the first is acknowledged and never stored."""

    async def add_items(self, items: list[Item]) -> None:
        if self.on_a_new_loop():
            self.check_open()
            encode_items(items)
            return
        await super().add_items(items)


class ContendedPopsLeaveTombstones(ListSession):
    """A pop while another is in flight on its loop hides the item from later pops but
    never deletes it (the tombstone's cleanup is lost): each item is popped once, and
    they stay readable."""

    def _hidden(self) -> dict[str, int]:
        hidden: dict[str, int] = self.store.__dict__.setdefault("tombstones", {})
        return hidden

    async def pop_item(self) -> Item | None:
        contended = await _contended(self)
        self.check_open()
        with self.store.lock:
            rows, hidden = _rows(self), self._hidden()
            while hidden.get(self.session_id, 0) < len(rows):
                index = len(rows) - 1 - hidden.get(self.session_id, 0)
                row = rows[index]
                if contended:
                    hidden[self.session_id] = hidden.get(self.session_id, 0) + 1
                else:
                    del rows[index]
                popped = decode_items([(index, row)], where=str)
                if popped:
                    return popped[0]
        return None

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        self._hidden().pop(self.session_id, None)

    async def clear_session(self) -> None:
        await super().clear_session()
        self._hidden().pop(self.session_id, None)


_CACHE_KEY_BYTES = 250
"""memcached's limit on the length of a key."""


class _CachedUnderACutId(ListSession):
    """Caches reads under the session id cut to memcached's 250-byte key limit, in the
    store (every session object shares it); an entry holding as many rows as the session
    has is taken as fresh."""

    def _cache(self) -> dict[str, list[str]]:
        cache: dict[str, list[str]] = self.store.__dict__.setdefault("read_cache", {})
        return cache

    def _count(self) -> int:
        with self.store.lock:
            return len(self.store.rows.get(self.session_id, []))

    @property
    def cache_key(self) -> str:
        return self.session_id[:_CACHE_KEY_BYTES]

    async def get_items(self, limit: int | None = None) -> list[Item]:
        self.check_open()
        rows = self._cache().get(self.cache_key)
        if rows is None or len(rows) != self._count():  # the cache's freshness check
            with self.store.lock:
                rows = list(self.store.rows.get(self.session_id, []))
            self._cache()[self.cache_key] = rows
        limit = self._effective_limit(limit)
        if limit is not None:
            rows = rows[len(rows) - min(limit, len(rows)) :]
        return decode_items(enumerate(rows), where=str)

    async def pop_item(self) -> Item | None:
        self._cache().pop(self.cache_key, None)
        return await super().pop_item()

    async def clear_session(self) -> None:
        await super().clear_session()
        self._cache().pop(self.cache_key, None)


class WriteThroughCacheUnderACutId(_CachedUnderACutId):
    """A write puts the session's rows in the cache (under the cut id, which two long ids
    share); a pop or clear drops the entry."""

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        with self.store.lock:
            self._cache()[self.cache_key] = list(self.store.rows.get(self.session_id, []))


class ReadCacheUnderACutId(_CachedUnderACutId):
    """A read fills the cache (under the cut id, which two long ids share); any change of
    the session drops the entry."""

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        self._cache().pop(self.cache_key, None)


class PopAfterCorruptRowsKeepsTheItem(ListSession):
    """Pops the newest rows; when it had to discard corrupt ones, it returns the valid row
    under them without deleting it."""

    async def pop_item(self) -> Item | None:
        self.check_open()
        with self.store.lock:
            rows = self.store.rows.get(self.session_id, [])
            skipped = False
            while rows:
                popped = decode_items([(len(rows), rows[-1])], where=str)
                if popped:
                    if not skipped:
                        rows.pop()
                    return popped[0]
                rows.pop()
                skipped = True
        return None


class PopOfOnlyCorruptRowsQuarantinesThem(ListSession):
    """Finding no valid item to pop, it keeps the corrupt rows it discarded as items
    ``{"corrupt": <the row>}`` rather than lose them."""

    async def pop_item(self) -> Item | None:
        with self.store.lock:
            before = list(self.store.rows.get(self.session_id, []))
        popped = await super().pop_item()
        if popped is None and before:
            self.store.rows[self.session_id] = encode_items([{"corrupt": row} for row in before])
        return popped


class PopFindingNothingRollsBackThePreviousPop(ListSession):
    """A pop's delete is committed by the session's next call; a pop that finds nothing
    rolls back instead, and the item the pop before it returned is back."""

    _uncommitted: str | None = None

    async def pop_item(self) -> Item | None:
        self.check_open()
        with self.store.lock:
            rows = self.store.rows.setdefault(self.session_id, [])
            while rows:
                row = rows.pop()
                popped = decode_items([(len(rows), row)], where=str)
                if popped:
                    self._uncommitted = row
                    return popped[0]
            if self._uncommitted is not None:
                rows.append(self._uncommitted)
            self._uncommitted = None
        return None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        self._uncommitted = None
        return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        self._uncommitted = None
        await super().add_items(items)

    async def clear_session(self) -> None:
        self._uncommitted = None
        await super().clear_session()


class PopReturnsTheOldestDeletesTheNewest(ListSession):
    async def pop_item(self) -> Item | None:
        with self.store.lock:
            oldest = decode_items(
                enumerate(self.store.rows.get(self.session_id, [])[:1]), where=str
            )
        popped = await super().pop_item()
        return oldest[0] if popped is not None and oldest else popped


class PopOfTheLastItemReturnsNone(ListSession):
    """Reads the popped row back after the delete, from a session that the delete left
    empty (and so no longer exists): ``None``."""

    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        with self.store.lock:
            emptied = not self.store.rows.get(self.session_id)
        return None if emptied else popped


class PopOnAnEmptySessionDeletesTheStoresNewest(ListSession):
    """With nothing of its own to pop, ``DELETE ... WHERE rowid = (SELECT max(rowid) ...)``
    lost its session filter: the newest row of another session goes (and ``None`` is
    returned all the same)."""

    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        if popped is None:
            with self.store.lock:
                for rows in self.store.rows.values():
                    if rows:
                        rows.pop()
                        break
        return popped


# -- the frozen-server kit tests (run on LoopKit, tests/sessions/test_kit_checks.py) ------


class ReadsTimeOutWithABuiltinError(FreezableListSession):
    """A read on a frozen store times out with the driver's ``TimeoutError``, unwrapped."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        try:
            return await super().get_items(limit)
        except BackendTimeoutError as exc:
            raise TimeoutError("read timed out") from exc


class WritesTimeOutWithABuiltinError(FreezableListSession):
    """A write on a frozen store times out with the driver's ``TimeoutError``, unwrapped."""

    async def add_items(self, items: list[Item]) -> None:
        try:
            await super().add_items(items)
        except BackendTimeoutError as exc:
            raise TimeoutError("write timed out") from exc


class FrozenWriteKeepsItsFirstRow(FreezableListSession):
    """Writes row by row without a transaction: the server froze after the first row,
    the write times out as it should, and that row stays."""

    async def add_items(self, items: list[Item]) -> None:
        thawed = getattr(self.store, "thawed", None)
        if thawed is not None and not thawed.is_set() and items:
            encoded = encode_items(items)
            with self.store.lock:
                self.store.rows.setdefault(self.session_id, []).append(encoded[0])
        await super().add_items(items)


class CancelledFrozenWriteWaitsForTheThaw(FreezableListSession):
    """Cancelled while the store is frozen, ``add_items`` swallows the cancellation and
    waits for the store to answer, then gives up without storing: it is not stored, but
    the caller waits as long as the freeze lasts."""

    async def add_items(self, items: list[Item]) -> None:
        thawed = getattr(self.store, "thawed", None)
        if thawed is None or thawed.is_set():
            await super().add_items(items)
            return
        cancelled = False
        while not thawed.is_set():
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        await super().add_items(items)


_FROZEN = "test_calls_on_a_frozen_server_fail_within_a_bound"
_FROZEN_CANCEL = "test_add_items_cancelled_on_a_frozen_server_is_not_stored_later"

_SEQUENTIAL = "test_session_works_from_sequential_event_loops"
_CHECK_GUARDS: dict[str, tuple[type | Mutant, ...]] = {
    "test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous": (_REVERSED, _DEFERRED),
    "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous": (_REVERSED, _DEFERRED),
    "test_four_threads_with_a_loop_each_share_one_session": (_REVERSED, _DEFERRED),
    "test_concurrent_processes_lose_no_items_and_keep_batches_contiguous": (
        _REVERSED,
        _DEFERRED,
        _on_the_journal(FailsToCloseInAChildProcess),
    ),
    "test_close_from_another_event_loop": (
        Mutant(
            ReadsNothingOnANewLoop, frozenset({"test_close_from_another_event_loop", _SEQUENTIAL})
        ),
    ),
    _SEQUENTIAL: (
        Mutant(
            ReadsNothingOnANewLoop, frozenset({"test_close_from_another_event_loop", _SEQUENTIAL})
        ),
        PopOnANewLoopReturnsNone,
        EachLoopReadsItsOwnSnapshot,
        ClearKeepsRowsWrittenOnOtherLoops,
    ),
    "test_runner_run_sync_twice_on_one_session": (
        Mutant(DropsWritesOnANewLoop, frozenset({"test_runner_run_sync_twice_on_one_session"})),
    ),
    "test_concurrent_pop_item_returns_each_item_once": (ContendedPopsLeaveTombstones,),
    "test_hostile_session_id_is_stored_and_isolated": (
        Mutant(
            WriteThroughCacheUnderACutId,
            frozenset({"test_hostile_session_id_is_stored_and_isolated[11]"}),
        ),
        Mutant(
            ReadCacheUnderACutId, frozenset({"test_hostile_session_id_is_stored_and_isolated[11]"})
        ),
    ),
    "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item": (
        PopAfterCorruptRowsKeepsTheItem,
    ),
    "test_pop_item_on_a_session_of_only_corrupt_rows_returns_none": (
        PopOfOnlyCorruptRowsQuarantinesThem,
    ),
    "test_pop_item_until_empty_returns_items_newest_first": (
        Mutant(
            PopFindingNothingRollsBackThePreviousPop,
            frozenset(
                {
                    "test_pop_item_until_empty_returns_items_newest_first",
                    "test_concurrent_pop_item_returns_each_item_once",
                }
            ),
        ),
    ),
    "test_pop_item_leaves_other_sessions_alone": (
        Mutant(
            PopReturnsTheOldestDeletesTheNewest,
            frozenset(
                {
                    "test_concurrent_pop_item_returns_each_item_once",
                    "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item",
                    "test_pop_item_leaves_other_sessions_alone",
                    "test_pop_item_removes_and_returns_the_latest_item",
                    "test_pop_item_until_empty_returns_items_newest_first",
                }
            ),
        ),
        Mutant(
            PopOfTheLastItemReturnsNone,
            frozenset(
                {
                    "test_concurrent_pop_item_returns_each_item_once",
                    "test_pop_item_leaves_other_sessions_alone",
                    "test_pop_item_until_empty_returns_items_newest_first",
                    "test_session_is_usable_after_a_cancelled_add_items",
                }
            ),
        ),
        PopOnAnEmptySessionDeletesTheStoresNewest,
    ),
    _FROZEN: (
        ReadsTimeOutWithABuiltinError,
        WritesTimeOutWithABuiltinError,
        FrozenWriteKeepsItsFirstRow,
    ),
    _FROZEN_CANCEL: (CancelledFrozenWriteWaitsForTheThaw,),
}
"""The guards of single checks that the guards above leave open (each fails its kit test
through that one check alone), added to ``GUARDS``."""

for _test, _entries in _CHECK_GUARDS.items():
    GUARDS[_test] = GUARDS.get(_test, ()) + _entries
