"""A backend broken in exactly the way each conformance-kit test guards.

``MUTANTS`` maps the name of a test of ``SessionConformance`` to its broken backend: a
``ListSession`` subclass (constructor ``(session_id, store, session_settings=None)``), or a
``SessionConformance`` subclass when the break needs a capability the ``ListKit`` harness
does not claim. A plain class is expected to fail exactly its test (every parametrization
of it); wrap it in ``Mutant(backend, fails=...)`` when it fails more (the other tests
that necessarily see the same break) or only some parametrizations (``"name[param]"``).
tests/sessions/test_kit.py runs the whole kit on every mutant and checks exactly that.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import json
import math
import threading
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from agent_sessions import (
    InvalidItemError,
    InvalidSessionIdError,
    Item,
    Session,
    SessionClosedError,
    SessionSettings,
    SessionsPage,
)
from agent_sessions._json import decode_items, encode_items
from agent_sessions.protocol import validate_limit

from .list_session import ListKit, ListSession, ListStore


@dataclass(frozen=True)
class Mutant:
    """A broken backend and the kit tests it fails: a test name stands for all its
    parametrizations, ``"name[param]"`` for one. ``None``: exactly the test it is for."""

    backend: type
    fails: frozenset[str] | None = None


def _rows(session: ListSession) -> list[str]:
    return session.store.rows.setdefault(session.session_id, [])


def _depth(value: object) -> int:
    """How deeply dicts and lists nest in ``value`` (iteratively: no recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        current, level = stack.pop()
        deepest = max(deepest, level)
        if isinstance(current, Mapping):
            stack.extend((child, level + 1) for child in current.values())
        elif isinstance(current, list):
            stack.extend((child, level + 1) for child in current)
    return deepest


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` with ``change`` applied to every str in it (keys too); ``value`` itself
    when it nests too deeply to walk (encoding refuses it then)."""

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return change(value)
        if isinstance(value, Mapping):
            return {
                change(key) if isinstance(key, str) else key: walk(item)
                for key, item in value.items()
            }
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    try:
        return walk(value)
    except RecursionError:
        return value


def _map_items(items: list[Item], change: Callable[[Any], Any]) -> list[Item]:
    """Each mapping of ``items`` changed (leaving the caller's objects alone), unless it
    nests too deeply to walk; anything else as it is, for encoding to refuse."""
    changed: list[Item] = []
    for item in items:
        try:
            changed.append(change(item) if isinstance(item, Mapping) else item)
        except RecursionError:
            changed.append(item)
    return changed


# -- the protocol ---------------------------------------------------------------------------


class SettingsKeptPrivately(ListSession):
    """Has no ``session_settings`` member: neither protocol recognises it."""

    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__(session_id, store, session_settings)
        self._settings = self.__dict__.pop("session_settings")

    def __getattribute__(self, name: str) -> Any:
        if name == "session_settings":
            raise AttributeError(name)
        return super().__getattribute__(name)

    def _effective_limit(self, limit: int | None) -> int | None:
        if limit is None:
            settings: SessionSettings | None = self._settings
            return settings.limit if settings is not None else None
        return validate_limit(limit)


class IgnoresSettings(ListSession):
    """Drops the settings it is given."""

    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__(session_id, store, None)


class AcceptsAnEmptyId(ListSession):
    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__("placeholder", store, session_settings)
        self.session_id = session_id


class RefusesBadIdsWithAPlainValueError(ListSession):
    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        try:
            super().__init__(session_id, store, session_settings)
        except InvalidSessionIdError as exc:
            raise ValueError(str(exc)) from None


# -- get_items and limits -------------------------------------------------------------------


class GreetsOnFirstRead(ListSession):
    """When its first call is a read of an empty session, returns a greeting item."""

    greeted = False

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if not self.greeted and not self.store.rows.get(self.session_id):
            self.greeted = True
            return [{"role": "system", "content": "welcome"}]
        self.greeted = True
        return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        self.greeted = True
        await super().add_items(items)

    async def pop_item(self) -> Item | None:
        self.greeted = True
        return await super().pop_item()

    async def clear_session(self) -> None:
        self.greeted = True
        await super().clear_session()


class NewestFirstWhenUnlimited(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        items = await super().get_items(limit)
        return items[::-1] if self._effective_limit(limit) is None else items


class ZeroMeansNoLimit(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        if type(limit) is int and limit == 0 and self.session_settings is None:
            limit = None
        return await super().get_items(limit)


class LimitOneReturnsTheOldest(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        if type(limit) is int and limit == 1:
            return (await super().get_items())[:1]
        return await super().get_items(limit)


class OldestFirstLimit(ListSession):
    """``items[:limit]`` instead of the latest ``limit`` (for limits above one)."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if type(limit) is int and limit > 1:
            return (await super().get_items())[:limit]
        return await super().get_items(limit)


class EmptyWhenTheLimitExceedsTheLength(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        if isinstance(limit, int) and len(_rows(self)) < limit <= 2**31:
            return []
        return await super().get_items(limit)


class HugeLimitOverflows(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        if isinstance(limit, int) and limit > 2**63 - 1:
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return await super().get_items(limit)


class KeywordOnlyLimit(ListSession):
    async def get_items(self, *, limit: int | None = None) -> list[Item]:  # type: ignore[override]
        return await super().get_items(limit)


class IgnoresTheSettingsLimit(ListSession):
    def _effective_limit(self, limit: int | None) -> int | None:
        return validate_limit(limit)


class NoneSettingsLimitMeansZero(ListSession):
    def _effective_limit(self, limit: int | None) -> int | None:
        if limit is None and self.session_settings is not None:
            return self.session_settings.limit or 0
        return super()._effective_limit(limit)


class SettingsLimitWins(ListSession):
    def _effective_limit(self, limit: int | None) -> int | None:
        if self.session_settings is not None and self.session_settings.limit is not None:
            return self.session_settings.limit
        return super()._effective_limit(limit)


class NegativeLimitMeansNone(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        if isinstance(limit, int) and not isinstance(limit, bool) and limit < 0:
            return []
        return await super().get_items(limit)


class LimitCoercedToInt(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        if isinstance(limit, (bool, float)):
            limit = int(limit)
        return await super().get_items(limit)


# -- add_items: order, atomicity, validation -----------------------------------------------


class SingleItemsGoFirst(ListSession):
    """A batch of one is inserted before what is stored."""

    async def add_items(self, items: list[Item]) -> None:
        if len(items) == 1 and _rows(self):
            self.check_open()
            _rows(self).insert(0, encode_items(items)[0])
            return
        await super().add_items(items)


class EmptyBatchStoresAnEmptyItem(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items or [{}])


class DropsRepeatedItems(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        self.check_open()
        encoded = encode_items(items)
        rows = _rows(self)
        for row in encoded:
            if not rows or rows[-1] != row:
                rows.append(row)


class SkipsNonMappings(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        if isinstance(items, list):
            items = [item for item in items if isinstance(item, Mapping)]
        await super().add_items(items)


class RefusesBadItemsWithAPlainTypeError(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        try:
            await super().add_items(items)
        except InvalidItemError as exc:
            raise TypeError(str(exc)) from None


class StringifiesKeys(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        def stringify(value: Any) -> Any:
            if isinstance(value, Mapping):
                return {str(key): stringify(item) for key, item in value.items()}
            if isinstance(value, list):
                return [stringify(item) for item in value]
            return value

        await super().add_items(_map_items(items, stringify))


class StringifiesUnknownValues(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        def storable(value: Any) -> Any:
            if isinstance(value, Mapping):
                return {key: storable(item) for key, item in value.items()}
            if isinstance(value, list):
                return [storable(item) for item in value]
            if isinstance(value, float) and not math.isfinite(value):
                return None
            if value is None or isinstance(value, (str, int, float)):
                return value
            return repr(value)

        await super().add_items(_map_items(items, storable))


class ReplacesLoneSurrogates(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        def replace(text: str) -> str:
            return text.encode("utf-8", "replace").decode("utf-8")

        await super().add_items([_map_strings(item, replace) for item in items])


class TruncatesDeepNesting(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        shallow = [item if _depth(item) < 500 else {"truncated": True} for item in items]
        await super().add_items(shallow)


class AcceptsASingleItem(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        given: object = items
        if isinstance(given, dict):
            items = [given]
        elif isinstance(given, str):
            items = [{"content": given}]
        await super().add_items(items)


# -- round trips and aliasing -------------------------------------------------------------


class NormalisesUnicode(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        await super().add_items([_map_strings(item, _nfc) for item in items])


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


class DropsNulCharacters(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        await super().add_items([_map_strings(item, _no_nul) for item in items])


def _no_nul(text: str) -> str:
    return text.replace("\x00", "")


class IntegralFloatsComeBackAsInts(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        def narrow(value: Any) -> Any:
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, dict):
                return {key: narrow(item) for key, item in value.items()}
            if isinstance(value, list):
                return [narrow(item) for item in value]
            return value

        return [narrow(item) for item in await super().get_items(limit)]


class RefusesNestingDeeperThan64(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        for index, item in enumerate(items):
            if _depth(item) > 64:
                raise TypeError(f"item {index} nests deeper than 64")
        await super().add_items(items)


class TruncatesLongText(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        await super().add_items([_map_strings(item, _first_64k) for item in items])


def _first_64k(text: str) -> str:
    return text[:65_535]


class KeepsTheFirstThousandOfABatch(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items[:1000])


class OpeningRecreatesTheSession(ListSession):
    """Opening a session object empties what its id holds."""

    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__(session_id, store, session_settings)
        with store.lock:
            store.rows[self.session_id] = []


class ReturnsTheSameObjectsWhileUnchanged(ListSession):
    _cache: tuple[list[str], list[Item]] | None = None

    async def get_items(self, limit: int | None = None) -> list[Item]:
        rows = list(_rows(self))
        if limit is None and self._cache is not None and self._cache[0] == rows:
            return self._cache[1]
        items = await super().get_items(limit)
        if limit is None:
            self._cache = (rows, items)
        return items


class _Live(str):
    """A stored row that still holds the caller's object."""

    item: Item


class KeepsReferencesToTheCallersItems(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        self.check_open()
        for item, text in zip(items, encode_items(items), strict=True):
            row = _Live(text)
            row.item = item
            _rows(self).append(row)

    async def get_items(self, limit: int | None = None) -> list[Item]:
        items = await super().get_items(limit)
        live = [row for row in _rows(self) if isinstance(row, _Live)]
        return copy.deepcopy([row.item for row in live]) if len(live) == len(items) else items


class ConsumesItsArgument(ListSession):
    """Once stored, replaces the nested objects of the caller's items by their JSON text."""

    async def add_items(self, items: list[Item]) -> None:
        await super().add_items(items)
        for item in items:
            for key, value in item.items():
                if isinstance(value, dict):
                    item[key] = json.dumps(value)


# -- pop_item and clear_session -------------------------------------------------------------


class PopOnANewSessionRaises(ListSession):
    async def pop_item(self) -> Item | None:
        if self.session_id not in self.store.rows:
            raise IndexError("pop from an empty session")
        return await super().pop_item()

    async def clear_session(self) -> None:
        self.check_open()
        self.store.rows[self.session_id] = []


class PopKeepsTheItem(ListSession):
    """Returns the latest item without removing it (the hang of issue 17)."""

    async def pop_item(self) -> Item | None:
        self.check_open()
        rows = _rows(self)
        return decode_items([(0, rows[-1])], where=str)[0] if rows else None


class PopTakesTheOldest(ListSession):
    async def pop_item(self) -> Item | None:
        self.check_open()
        rows = _rows(self)
        return decode_items([(0, rows.pop(0))], where=str)[0] if rows else None


class PopHidesInsteadOfDeleting(ListSession):
    """Pops by counting hidden rows at the end; a later add lands under the count."""

    def _hidden(self) -> dict[str, int]:
        return self.store.__dict__.setdefault("hidden", {})  # type: ignore[no-any-return]

    async def get_items(self, limit: int | None = None) -> list[Item]:
        self.check_open()
        rows = _rows(self)
        visible = rows[: len(rows) - self._hidden().get(self.session_id, 0)]
        limit = self._effective_limit(limit)
        if limit is not None:
            visible = visible[len(visible) - min(limit, len(visible)) :]
        return decode_items(enumerate(visible), where=str)

    async def pop_item(self) -> Item | None:
        self.check_open()
        rows, hidden = _rows(self), self._hidden()
        while hidden.get(self.session_id, 0) < len(rows):
            hidden[self.session_id] = hidden.get(self.session_id, 0) + 1
            decoded = decode_items([(0, rows[-hidden[self.session_id]])], where=str)
            if decoded:
                return decoded[0]
        return None

    async def clear_session(self) -> None:
        await super().clear_session()
        self._hidden().pop(self.session_id, None)


class PopTakesFromAnotherSession(ListSession):
    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        if popped is None:
            for rows in self.store.rows.values():
                if rows:
                    return decode_items([(0, rows.pop())], where=str)[0]
        return popped


class PopReadsThenDeletesLater(ListSession):
    async def pop_item(self) -> Item | None:
        self.check_open()
        rows = _rows(self)
        while rows:
            latest = rows[-1]
            await asyncio.sleep(0)
            if latest in rows:
                rows.remove(latest)
            decoded = decode_items([(0, latest)], where=str)
            if decoded:
                return decoded[0]
        return None


class ClearLeavesPopAStaleItem(ListSession):
    _cleared: str | None = None

    async def clear_session(self) -> None:
        rows = _rows(self)
        self._cleared = rows[-1] if rows else None
        await super().clear_session()

    async def pop_item(self) -> Item | None:
        popped = await super().pop_item()
        if popped is None and self._cleared is not None:
            return decode_items([(0, self._cleared)], where=str)[0]
        return popped


class ClearEmptiesTheWholeStore(ListSession):
    async def clear_session(self) -> None:
        self.check_open()
        self.store.rows.clear()


class ClearOnAnEmptySessionRaises(ListSession):
    async def clear_session(self) -> None:
        self.check_open()
        del self.store.rows[self.session_id]


class AddsAfterClearAreIgnored(ListSession):
    cleared = False

    async def clear_session(self) -> None:
        await super().clear_session()
        self.cleared = True

    async def add_items(self, items: list[Item]) -> None:
        if not self.cleared:
            await super().add_items(items)


# -- isolation ------------------------------------------------------------------------------


class KeyTruncatedTo1024(ListSession):
    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__(session_id, store, session_settings)
        self.key = session_id[:1024]

    async def get_items(self, limit: int | None = None) -> list[Item]:
        items: list[Item] = await _as(self, self.key, ListSession.get_items, limit)
        return items

    async def add_items(self, items: list[Item]) -> None:
        await _as(self, self.key, ListSession.add_items, items)

    async def clear_session(self) -> None:
        await _as(self, self.key, ListSession.clear_session)


class CaseInsensitiveIds(KeyTruncatedTo1024):
    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        super().__init__(session_id, store, session_settings)
        self.key = session_id.lower()


async def _as(session: ListSession, key: str, method: Any, *arguments: Any) -> Any:
    """Run ``method`` with ``session.session_id`` swapped for the storage ``key``."""
    real, session.session_id = session.session_id, key
    try:
        return await method(session, *arguments)
    finally:
        session.session_id = real


# -- concurrency ----------------------------------------------------------------------------


class ReadModifyWriteAcrossTasks(ListSession):
    """Copies the list, yields to the other tasks of its loop, writes the copy back."""

    async def add_items(self, items: list[Item]) -> None:
        self.check_open()
        encoded = encode_items(items)
        if len(asyncio.all_tasks()) == 1:
            _rows(self).extend(encoded)
            return
        snapshot = list(_rows(self))
        await asyncio.sleep(0)
        self.store.rows[self.session_id] = snapshot + encoded


class OneStorePerThread(ListSession):
    """Each thread sees its own store."""

    def __init__(
        self, session_id: str, store: ListStore, session_settings: SessionSettings | None = None
    ) -> None:
        per_thread: dict[int, ListStore] = store.__dict__.setdefault("per_thread", {})
        if threading.current_thread() is not threading.main_thread():
            store = per_thread.setdefault(threading.get_ident(), ListStore())
        super().__init__(session_id, store, session_settings)


class OneStorePerProcess(ListKit):
    """Claims processes, but a child opens a store of its own."""

    supports_processes: ClassVar[bool] = True

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(_session_on_a_new_store)


def _session_on_a_new_store(session_id: str) -> Session:
    return ListSession(session_id, ListStore())


# -- cancellation ---------------------------------------------------------------------------


class LargeBatchesItemByItem(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        if len(items) < 100 or len(items) > 1000:
            await super().add_items(items)
            return
        self.check_open()
        for row in encode_items(items):
            _rows(self).append(row)
            await asyncio.sleep(0)


class CancellationBreaksTheSession(ListSession):
    broken = False

    async def add_items(self, items: list[Item]) -> None:
        if self.broken:
            raise RuntimeError("the session broke on a cancelled write")
        try:
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.broken = True
            raise
        await super().add_items(items)

    async def clear_session(self) -> None:
        if self.broken:
            raise RuntimeError("the session broke on a cancelled write")
        await super().clear_session()


# -- corrupt rows ---------------------------------------------------------------------------


def _decode_quietly(rows: list[str]) -> list[Item]:
    items = []
    for row in rows:
        try:
            value = json.loads(row)
        except ValueError:
            continue
        if isinstance(value, dict):
            items.append(value)
    return items


class SkipsCorruptRowsSilently(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        self.check_open()
        limit = self._effective_limit(limit)
        rows = list(_rows(self))
        if limit is not None:
            rows = rows[len(rows) - min(limit, len(rows)) :]
        return _decode_quietly(rows)


class LimitCountsValidItemsOnly(ListSession):
    async def get_items(self, limit: int | None = None) -> list[Item]:
        self.check_open()
        limit = self._effective_limit(limit)
        items = decode_items(enumerate(_rows(self)), where=str)
        return items if limit is None else items[len(items) - min(limit, len(items)) :]


class PopStopsAtACorruptRow(ListSession):
    async def pop_item(self) -> Item | None:
        self.check_open()
        rows = _rows(self)
        if not rows:
            return None
        decoded = decode_items([(0, rows.pop())], where=str)
        return decoded[0] if decoded else None


class PopRaisesOnOnlyCorruptRows(ListSession):
    async def pop_item(self) -> Item | None:
        had_rows = bool(_rows(self))
        popped = await super().pop_item()
        if popped is None and had_rows:
            raise ValueError("no valid item left to pop")
        return popped


# -- lifecycle ------------------------------------------------------------------------------


class ClosedSessionStillWrites(ListSession):
    async def add_items(self, items: list[Item]) -> None:
        self.store.rows.setdefault(self.session_id, []).extend(encode_items(items))

    async def pop_item(self) -> Item | None:
        closed, self.closed = self.closed, False
        try:
            return await super().pop_item()
        finally:
            self.closed = closed

    async def clear_session(self) -> None:
        self.store.rows.pop(self.session_id, None)


class ChecksArgumentsBeforeTheClosedState(ListSession):
    """Validates a call's arguments (and answers the calls that need no store) before it
    looks at whether the session is closed."""

    async def get_items(self, limit: int | None = None) -> list[Item]:
        if self._effective_limit(limit) == 0:
            return []
        return await super().get_items(limit)

    async def add_items(self, items: list[Item]) -> None:
        if encode_items(items):
            await super().add_items(items)


class SecondCloseReopens(ListSession):
    async def close(self) -> None:
        self.closed = not self.closed


class CloseClosesTheId(ListSession):
    def check_open(self) -> None:
        super().check_open()
        if self.session_id in self.store.__dict__.get("closed_ids", ()):
            raise SessionClosedError(f"{self.session_id!r} was closed")

    async def close(self) -> None:
        await super().close()
        self.store.__dict__.setdefault("closed_ids", set()).add(self.session_id)


class AsyncWithLeavesItOpen(ListSession):
    async def __aexit__(self, *exc_info: object) -> None:
        return None


# -----------------------------------------------------------------------------------------


class _ListingOf(ListStore):
    """A view of a ``ListStore``: the same rows, another ``list_sessions``."""

    def __init__(self, store: ListStore) -> None:
        self.lock, self.rows = store.lock, store.rows


class _HugeListLimitOverflowsStore(_ListingOf):
    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        # As SQLite did: it asked for limit + 1 rows, an int64 parameter.
        if isinstance(limit, int) and limit + 1 > 2**63 - 1:
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        return await super().list_sessions(prefix=prefix, cursor=cursor, limit=limit)


class _AnyListLimitStore(_ListingOf):
    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: Any = 100
    ) -> SessionsPage:
        return await super().list_sessions(prefix=prefix, cursor=cursor, limit=max(1, int(limit)))


class _NulPrefixListsNothingStore(_ListingOf):
    async def list_sessions(
        self, *, prefix: str = "", cursor: str | None = None, limit: int = 100
    ) -> SessionsPage:
        if "\x00" in prefix:  # as SQLite's length(:prefix) did: it stops at the NUL
            return SessionsPage([], None)
        return await super().list_sessions(prefix=prefix, cursor=cursor, limit=limit)


def _listing_by(view: type[_ListingOf]) -> type[ListSession]:
    class ListedBy(ListSession):
        def __init__(
            self,
            session_id: str,
            store: ListStore,
            session_settings: SessionSettings | None = None,
        ) -> None:
            super().__init__(session_id, view(store), session_settings)

    ListedBy.__name__ = ListedBy.__qualname__ = f"ListedBy{view.__name__.strip('_')}"
    return ListedBy


MUTANTS: dict[str, type | Mutant] = {
    "test_list_sessions_clamps_a_huge_limit": _listing_by(_HugeListLimitOverflowsStore),
    "test_list_sessions_refuses_a_bad_limit": _listing_by(_AnyListLimitStore),
    "test_list_sessions_finds_an_id_with_a_nul_after_the_prefix": _listing_by(
        _NulPrefixListsNothingStore
    ),
    "test_session_satisfies_the_session_protocol": Mutant(
        SettingsKeptPrivately,
        frozenset(
            {
                "test_session_satisfies_the_session_protocol",
                "test_session_satisfies_the_agents_sdk_session_protocol",
                "test_session_keeps_the_given_settings",
            }
        ),
    ),
    "test_session_satisfies_the_agents_sdk_session_protocol": Mutant(
        SettingsKeptPrivately,
        frozenset(
            {
                "test_session_satisfies_the_session_protocol",
                "test_session_satisfies_the_agents_sdk_session_protocol",
                "test_session_keeps_the_given_settings",
            }
        ),
    ),
    "test_session_keeps_the_given_settings": Mutant(
        IgnoresSettings,
        frozenset(
            {
                "test_get_items_without_limit_uses_the_session_settings_limit",
                "test_session_keeps_the_given_settings",
            }
        ),
    ),
    "test_empty_session_id_raises_value_error": Mutant(
        AcceptsAnEmptyId,
        frozenset(
            {
                "test_empty_session_id_raises_value_error",
                "test_a_bad_session_id_raises_invalid_session_id_error",
            }
        ),
    ),
    "test_a_bad_session_id_raises_invalid_session_id_error": RefusesBadIdsWithAPlainValueError,
    "test_get_items_on_a_new_session_returns_empty": GreetsOnFirstRead,
    "test_get_items_returns_everything_oldest_first": Mutant(
        NewestFirstWhenUnlimited,
        frozenset(
            {
                "test_add_items_after_pop_item_appends_after_the_rest",
                "test_add_items_appends_batches_in_call_order",
                "test_add_items_empty_list_is_a_no_op",
                "test_cancelled_add_items_stores_all_or_nothing[1]",
                "test_cancelled_add_items_stores_all_or_nothing[20]",
                "test_cancelled_add_items_stores_all_or_nothing[2]",
                "test_cancelled_add_items_stores_all_or_nothing[5]",
                "test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous",
                "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous",
                "test_get_items_returns_everything_oldest_first",
                "test_get_items_skips_a_corrupt_row_with_a_warning",
                "test_get_items_without_limit_or_settings_limit_returns_everything",
                "test_items_are_visible_to_another_session_object_on_the_same_id",
                "test_pop_item_removes_and_returns_the_latest_item",
                "test_round_trip_keeps_a_large_batch",
                "test_round_trip_keeps_a_large_item",
                "test_round_trip_keeps_unicode_as_is",
            }
        ),
    ),
    "test_get_items_limit_zero_returns_empty": ZeroMeansNoLimit,
    "test_get_items_limit_one_returns_the_latest_item": Mutant(
        LimitOneReturnsTheOldest,
        frozenset(
            {
                "test_a_corrupt_row_counts_towards_the_limit",
                "test_get_items_limit_one_returns_the_latest_item",
            }
        ),
    ),
    "test_get_items_limit_n_returns_the_latest_n_oldest_first": Mutant(
        OldestFirstLimit,
        frozenset(
            {
                "test_a_corrupt_row_counts_towards_the_limit",
                "test_get_items_explicit_limit_overrides_the_settings_limit",
                "test_get_items_limit_is_accepted_positionally",
                "test_get_items_limit_n_returns_the_latest_n_oldest_first",
                "test_round_trip_keeps_a_large_batch",
            }
        ),
    ),
    "test_get_items_limit_above_length_returns_everything": EmptyWhenTheLimitExceedsTheLength,
    "test_get_items_huge_limit_returns_everything": HugeLimitOverflows,
    "test_get_items_limit_is_accepted_positionally": KeywordOnlyLimit,
    "test_get_items_without_limit_uses_the_session_settings_limit": IgnoresTheSettingsLimit,
    "test_get_items_without_limit_or_settings_limit_returns_everything": (
        NoneSettingsLimitMeansZero
    ),
    "test_get_items_explicit_limit_overrides_the_settings_limit": SettingsLimitWins,
    "test_get_items_negative_limit_raises_value_error": Mutant(
        NegativeLimitMeansNone,
        frozenset(
            {
                "test_get_items_negative_limit_raises_value_error",
                "test_a_closed_session_raises_session_closed_error_before_checking_arguments"
                "[get_items-negative]",
            }
        ),
    ),
    "test_get_items_non_int_limit_raises_type_error": Mutant(
        LimitCoercedToInt,
        frozenset(
            {
                "test_get_items_non_int_limit_raises_type_error[1.0]",
                "test_get_items_non_int_limit_raises_type_error[2.5]",
                "test_get_items_non_int_limit_raises_type_error[False]",
                "test_get_items_non_int_limit_raises_type_error[True]",
            }
        ),
    ),
    "test_add_items_appends_batches_in_call_order": Mutant(
        SingleItemsGoFirst,
        frozenset(
            {
                "test_add_items_after_pop_item_appends_after_the_rest",
                "test_add_items_appends_batches_in_call_order",
                "test_get_items_skips_a_corrupt_row_with_a_warning",
            }
        ),
    ),
    "test_add_items_empty_list_is_a_no_op": EmptyBatchStoresAnEmptyItem,
    "test_add_items_keeps_duplicate_items": DropsRepeatedItems,
    "test_add_items_rejects_a_non_mapping_and_stores_nothing": Mutant(
        SkipsNonMappings,
        frozenset(
            {
                "test_add_items_rejects_a_non_mapping_and_stores_nothing",
                "test_add_items_refuses_a_bad_item_with_invalid_item_error",
            }
        ),
    ),
    "test_add_items_refuses_a_bad_item_with_invalid_item_error": (
        RefusesBadItemsWithAPlainTypeError
    ),
    "test_add_items_rejects_a_non_str_key_and_stores_nothing": StringifiesKeys,
    "test_add_items_rejects_a_value_json_cannot_store_and_stores_nothing": (
        StringifiesUnknownValues
    ),
    "test_add_items_rejects_a_lone_surrogate_and_stores_nothing": ReplacesLoneSurrogates,
    "test_add_items_rejects_nesting_too_deep_to_encode_and_stores_nothing": (TruncatesDeepNesting),
    "test_add_items_rejects_a_single_item_instead_of_a_list": AcceptsASingleItem,
    "test_round_trip_keeps_unicode_as_is": NormalisesUnicode,
    "test_round_trip_keeps_nul_and_control_characters": DropsNulCharacters,
    "test_round_trip_keeps_nested_values_and_json_types": IntegralFloatsComeBackAsInts,
    "test_round_trip_keeps_moderately_deep_nesting": RefusesNestingDeeperThan64,
    "test_round_trip_keeps_a_large_item": TruncatesLongText,
    "test_round_trip_keeps_a_large_batch": KeepsTheFirstThousandOfABatch,
    "test_items_are_visible_to_another_session_object_on_the_same_id": Mutant(
        OpeningRecreatesTheSession,
        frozenset(
            {
                "test_cancelled_add_items_stores_all_or_nothing",
                "test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous",
                "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous",
                "test_items_are_visible_to_another_session_object_on_the_same_id",
            }
        ),
    ),
    "test_get_items_returns_fresh_objects": ReturnsTheSameObjectsWhileUnchanged,
    "test_mutating_items_after_add_items_changes_nothing_stored": (
        KeepsReferencesToTheCallersItems
    ),
    "test_add_items_does_not_mutate_its_argument": Mutant(
        ConsumesItsArgument,
        frozenset(
            {
                "test_add_items_does_not_mutate_its_argument",
                "test_mutating_items_after_add_items_changes_nothing_stored",
                "test_round_trip_keeps_moderately_deep_nesting",
                "test_round_trip_keeps_nested_values_and_json_types",
            }
        ),
    ),
    "test_pop_item_on_an_empty_session_returns_none": PopOnANewSessionRaises,
    "test_pop_item_removes_and_returns_the_latest_item": Mutant(
        PopKeepsTheItem,
        frozenset(
            {
                "test_add_items_after_pop_item_appends_after_the_rest",
                "test_concurrent_pop_item_returns_each_item_once",
                "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item",
                "test_pop_item_leaves_other_sessions_alone",
                "test_pop_item_on_a_session_of_only_corrupt_rows_returns_none",
                "test_pop_item_removes_and_returns_the_latest_item",
                "test_pop_item_until_empty_returns_items_newest_first",
            }
        ),
    ),
    "test_pop_item_until_empty_returns_items_newest_first": Mutant(
        PopTakesTheOldest,
        frozenset(
            {
                "test_add_items_after_pop_item_appends_after_the_rest",
                "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item",
                "test_pop_item_leaves_other_sessions_alone",
                "test_pop_item_on_a_session_of_only_corrupt_rows_returns_none",
                "test_pop_item_removes_and_returns_the_latest_item",
                "test_pop_item_until_empty_returns_items_newest_first",
            }
        ),
    ),
    "test_add_items_after_pop_item_appends_after_the_rest": PopHidesInsteadOfDeleting,
    "test_pop_item_leaves_other_sessions_alone": PopTakesFromAnotherSession,
    "test_concurrent_pop_item_returns_each_item_once": PopReadsThenDeletesLater,
    "test_clear_session_removes_every_item": ClearLeavesPopAStaleItem,
    "test_clear_session_leaves_other_sessions_alone": Mutant(
        ClearEmptiesTheWholeStore,
        frozenset(
            {
                "test_clear_session_leaves_other_sessions_alone",
                "test_hostile_session_id_is_stored_and_isolated",
            }
        ),
    ),
    "test_clear_session_on_an_empty_session_is_a_no_op": ClearOnAnEmptySessionRaises,
    "test_session_is_usable_after_clear_session": Mutant(
        AddsAfterClearAreIgnored,
        frozenset(
            {
                "test_session_is_usable_after_a_cancelled_add_items",
                "test_session_is_usable_after_clear_session",
            }
        ),
    ),
    "test_hostile_session_id_is_stored_and_isolated": Mutant(
        KeyTruncatedTo1024,
        frozenset(
            {
                "test_hostile_session_id_is_stored_and_isolated[11]",
            }
        ),
    ),
    "test_ids_that_are_prefixes_of_each_other_are_isolated": CaseInsensitiveIds,
    "test_concurrent_tasks_lose_no_items_and_keep_batches_contiguous": (ReadModifyWriteAcrossTasks),
    "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous": OneStorePerThread,
    "test_concurrent_processes_lose_no_items_and_keep_batches_contiguous": OneStorePerProcess,
    "test_cancelled_add_items_stores_all_or_nothing": Mutant(
        LargeBatchesItemByItem,
        frozenset(
            {
                "test_cancelled_add_items_stores_all_or_nothing[1]",
                "test_cancelled_add_items_stores_all_or_nothing[20]",
                "test_cancelled_add_items_stores_all_or_nothing[2]",
                "test_cancelled_add_items_stores_all_or_nothing[5]",
            }
        ),
    ),
    "test_session_is_usable_after_a_cancelled_add_items": CancellationBreaksTheSession,
    "test_get_items_skips_a_corrupt_row_with_a_warning": SkipsCorruptRowsSilently,
    "test_a_corrupt_row_counts_towards_the_limit": LimitCountsValidItemsOnly,
    "test_pop_item_discards_corrupt_newest_rows_and_returns_the_latest_valid_item": (
        PopStopsAtACorruptRow
    ),
    "test_pop_item_on_a_session_of_only_corrupt_rows_returns_none": PopRaisesOnOnlyCorruptRows,
    "test_calls_after_close_raise_session_closed_error": Mutant(
        ClosedSessionStillWrites,
        frozenset(
            {
                "test_calls_after_close_raise_session_closed_error[add_items]",
                "test_calls_after_close_raise_session_closed_error[clear_session]",
                "test_calls_after_close_raise_session_closed_error[pop_item]",
                "test_close_is_idempotent",
                "test_a_closed_session_raises_session_closed_error_before_checking_arguments"
                "[add_items-empty]",
                "test_a_closed_session_raises_session_closed_error_before_checking_arguments"
                "[add_items-non-mapping]",
                "test_a_closed_session_raises_session_closed_error_before_checking_arguments"
                "[add_items-not-a-list]",
            }
        ),
    ),
    "test_a_closed_session_raises_session_closed_error_before_checking_arguments": (
        ChecksArgumentsBeforeTheClosedState
    ),
    "test_close_is_idempotent": SecondCloseReopens,
    "test_closing_one_session_leaves_others_on_the_same_id_usable": Mutant(
        CloseClosesTheId,
        frozenset(
            {
                "test_closing_one_session_leaves_others_on_the_same_id_usable",
                "test_concurrent_threads_lose_no_items_and_keep_batches_contiguous",
            }
        ),
    ),
    "test_async_with_closes_the_session": AsyncWithLeavesItOpen,
}
