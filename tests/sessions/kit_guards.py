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

import contextlib
import contextvars
import copy
import threading
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

from typing_extensions import Self

from agent_sessions import (
    BackendUnreachableError,
    InvalidItemError,
    InvalidSessionIdError,
    Item,
    SessionBackendError,
    SessionSettings,
)
from agent_sessions._json import encode_items
from agent_sessions.protocol import SessionsPage

from .kit_mutants import Mutant, _listing_by, _ListingOf, _rows
from .list_session import ListKit, ListSession, ListStore, UnreachableListSession

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
        "assert chunk == _batch(writer, batch, batch_size), f'batch not contiguous at {start}'",
    ): "open: no broken backend yet fails this check alone",
    (
        "_assert_all_batches_contiguous",
        "assert len(items) == writers * batches * batch_size, 'items lost or duplicated'",
    ): (
        "equivalent: a wrong count always breaks the contiguity or the order check after "
        "it (it is there for its message)"
    ),
    (
        "_assert_all_batches_contiguous",
        'assert order == list(range(batches)), f"writer {writer}\'s batches out of order"',
    ): "open: no broken backend yet fails this check alone",
    (
        "test_a_bad_session_id_raises_invalid_session_id_error",
        "assert isinstance(raised.value, ValueError)",
    ): (
        "equivalent: the pytest.raises before it demands InvalidSessionIdError, a "
        "ValueError subclass"
    ),
    (
        "test_add_items_cancelled_on_a_frozen_server_is_not_stored_later",
        "assert done, f'the cancelled add_items still runs after {self.frozen_call_bound}s'",
    ): "open: no broken backend yet fails this check alone",
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
    (
        "test_calls_on_a_frozen_server_fail_within_a_bound",
        "assert stored in ([{'n': 0}], [{'n': 0}, *_numbered(3)])",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_calls_on_a_frozen_server_fail_within_a_bound",
        "with pytest.raises(SessionError)",
    ): (
        "open: both frozen calls are checked alike; a backend bounded on one call only "
        "is not written yet"
    ),
    (
        "test_close_from_another_event_loop",
        "assert asyncio.run(session.get_items()) == [{'n': 0}]",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_concurrent_pop_item_returns_each_item_once",
        "assert await session.get_items() == []",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_concurrent_processes_lose_no_items_and_keep_batches_contiguous",
        "assert [process.exitcode for process in processes] == [0] * writers",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_hostile_session_id_is_stored_and_isolated",
        "assert await neighbour.get_items() == [{'who': 'neighbour'}]",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_hostile_session_id_is_stored_and_isolated",
        "assert await session.get_items() == [{'who': 'hostile'}]",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item",
        "assert await session.get_items() == [{'n': 0}]",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_pop_item_leaves_other_sessions_alone",
        "assert await other.get_items() == [{'other': 1}]",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_pop_item_leaves_other_sessions_alone",
        "assert await session.pop_item() == {'n': 0}",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_pop_item_leaves_other_sessions_alone",
        "assert await session.pop_item() == {'n': 1}",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_pop_item_on_a_session_of_only_corrupt_rows_returns_none",
        "assert await session.get_items() == []",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_pop_item_until_empty_returns_items_newest_first",
        "assert await session.get_items() == []",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_runner_run_sync_twice_on_one_session",
        "assert said == ['first', 'second']",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_session_works_from_sequential_event_loops",
        "assert asyncio.run(session.get_items()) == _numbered(3)",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_session_works_from_sequential_event_loops",
        "assert asyncio.run(session.pop_item()) == {'n': 2}",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_session_works_from_sequential_event_loops",
        "assert await session.get_items() == []",
    ): "open: no broken backend yet fails this check alone",
    (
        "test_session_works_from_sequential_event_loops",
        "assert await session.get_items() == _numbered(3)",
    ): "open: no broken backend yet fails this check alone",
}
"""Checks of the kit that no guard notices when weakened, by (the kit test or ``_assert*``
helper they are in, their source as ``ast.unparse`` writes it) -> why. ``equivalent``: no
backend can fail that check alone (another check of the test implies it). ``open``: a
guard is still to be written. tests/sessions/test_kit_checks.py fails on an unguarded
check missing here, and on an entry here that a guard now covers."""
