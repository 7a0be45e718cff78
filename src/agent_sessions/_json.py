"""Item validation and the one JSON encoding every backend stores.

Items are validated in full before a backend writes anything, so a rejected batch
stores nothing. Encoding keeps unicode as is (no ``\\u`` escapes) and is compact.

Nesting is limited to :data:`MAX_DEPTH` levels of objects and arrays, checked on write,
so that every accepted item decodes wherever it is read: a read that runs out of Python
stack (a deep caller) decodes the item again in a fresh thread, whose stack is empty,
instead of taking it for corrupt.

A batch of more than :data:`ENCODE_CHUNK` items is validated and encoded by
:func:`encode_items_in_worker` in a worker thread, so that a 20,000-item write does not
hold the event loop for its whole duration (the worker gives the loop the GIL back at
every ``sys.getswitchinterval()``, 5 ms by default).
"""

from __future__ import annotations

import asyncio
import json
import json.scanner
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from .protocol import InvalidItemError, Item

__all__ = [
    "ENCODE_CHUNK",
    "MAX_DEPTH",
    "decode_item",
    "decode_items",
    "encode_items",
    "encode_items_in_worker",
]

MAX_DEPTH = 200
"""How many levels of objects and arrays an item may nest (the item itself is level 1).
Deeper items are refused by ``add_items`` with ``InvalidItemError``."""

ENCODE_CHUNK = 1_000
"""Batches of more items are validated and encoded in a worker thread (1,000 items take
about 2-3 ms: smaller ones are encoded inline, a thread hop would cost more than it saves)."""

logger = logging.getLogger("agent_sessions")

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_decoder = json.JSONDecoder()
_decode = _decoder.decode
# The C scanner behind ``decode``, without its two Python-level frames per call.
_scan_once = json.scanner.make_scanner(cast(Any, _decoder))  # typeshed's parameter type is off
_Key = TypeVar("_Key")
_SCALARS = (str, int, float, bool, type(None))


def encode_items(items: Iterable[Mapping[str, Any]], *, first_index: int = 0) -> list[str]:
    """Validate every item and return their JSON encodings, in order.

    Raises ``InvalidItemError`` (a ``TypeError``) naming the index of the first item that
    is not a JSON object: a non-mapping, a non-str key at any depth, a value JSON cannot
    encode (a set, a tuple, bytes, NaN, ...), a lone surrogate in a str (UTF-8 cannot store
    it; unicode is stored as is, not escaped), or nesting deeper than ``MAX_DEPTH``.
    Indexes count from ``first_index`` (a chunk of a larger batch names its place in it).
    """
    if isinstance(items, (str, bytes, Mapping)):
        raise InvalidItemError(f"items must be a list of dicts, got {type(items).__name__}")
    encoded: list[str] = []
    for index, item in enumerate(items, first_index):
        if not isinstance(item, Mapping):
            raise InvalidItemError(
                f"item {index} must be a dict with str keys, got {type(item).__name__}"
            )
        problem = _find_problem(item)
        if problem is not None:
            raise InvalidItemError(f"item {index} is not a JSON object: {problem}")
        try:
            try:
                text = _encoder.encode(item)
            except RecursionError:  # a deep caller: encode again on an empty stack
                text = _in_fresh_thread(_encoder.encode, item)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidItemError(f"item {index} is not a JSON object: {exc}") from None
        if not text.isascii():  # isascii is O(1); only non-ASCII text can hold a surrogate
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidItemError(
                    f"item {index} is not storable: {exc.object[exc.start]!r} is a lone "
                    "surrogate, which UTF-8 text cannot hold"
                ) from None
        encoded.append(text)
    return encoded


def decode_item(raw: str | bytes, *, where: str) -> Item | None:
    """Decode one stored row. A row that is not a JSON object (written by something
    else) yields ``None`` and a warning naming ``where``; it never raises."""
    try:
        text = raw if isinstance(raw, str) else raw.decode("utf-8")
        try:
            value = _decode(text)
        except RecursionError:  # a deep caller: decode again on an empty stack
            value = _in_fresh_thread(_decode, text)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        logger.warning("skipping corrupt session item at %s: %s", where, exc)
        return None
    if not isinstance(value, dict):
        logger.warning(
            "skipping corrupt session item at %s: a %s, not a JSON object",
            where,
            type(value).__name__,
        )
        return None
    return value


def decode_items(
    rows: Iterable[tuple[_Key, str | bytes]], *, where: Callable[[_Key], str]
) -> list[Item]:
    """Decode stored rows ``(key, raw)`` in order, as :func:`decode_item` does one by one:
    rows that are not JSON objects are skipped with a warning naming ``where(key)``.

    Faster than calling ``decode_item`` per row on the common path (compact JSON text, as
    ``encode_items`` writes it); anything else takes ``decode_item``'s path.
    """
    items: list[Item] = []
    for key, raw in rows:
        if type(raw) is str:
            try:
                value, end = _scan_once(raw, 0)
            except (StopIteration, ValueError, RecursionError):
                value, end = None, -1
            if end == len(raw) and type(value) is dict:
                items.append(value)
                continue
        item = decode_item(raw, where=where(key))
        if item is not None:
            items.append(item)
    return items


async def encode_items_in_worker(items: Iterable[Mapping[str, Any]]) -> list[str]:
    """:func:`encode_items` of a list of more than ``ENCODE_CHUNK`` items in a worker
    thread (the event loop's default executor), inline otherwise. The whole batch is
    validated before anything is returned, so a rejected batch still stores nothing. The
    list is copied first; the items themselves are read in the worker, so they must not be
    changed until the write returns (as with the Agents SDK's sessions)."""
    if type(items) is not list or len(items) <= ENCODE_CHUNK:
        return encode_items(items)
    return await asyncio.to_thread(encode_items, list(items))


_T = TypeVar("_T")


def _in_fresh_thread(function: Callable[[Any], _T], argument: Any) -> _T:
    """``function(argument)`` in a new thread (an empty Python stack); its exception is
    re-raised here."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, function(argument)))
        except BaseException as exc:  # handed to the calling thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="agent_sessions-json")
    thread.start()
    thread.join()
    ok, result = outcome[0]
    if not ok:
        raise result
    return cast(_T, result)


def _find_problem(root: Mapping[str, Any]) -> str | None:
    """Describe the first value under ``root`` that would not round-trip through JSON."""
    if _is_plain_json(root):
        return None
    return _describe_problem(root)


_SCALAR_TYPES = frozenset((str, int, float, bool))
"""The exact types of JSON's scalars besides ``None`` (no subclasses: they take the full walk)."""


def _is_plain_json(root: object) -> bool:
    """True when ``root`` holds only dicts with str keys, lists and JSON scalars, all of
    exactly those types, nested at most ``MAX_DEPTH`` levels. The common case, checked
    level by level without building the paths an error message needs; anything else
    (subclasses, other mappings, too deep) takes the full walk."""
    level: list[Any] = [root]
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return False
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                for key in value:
                    if type(key) is not str:
                        return False
                children = value.values()
            elif kind is list:
                children = value
            else:
                return False
            for child in children:
                child_kind = type(child)
                if child_kind is dict or child_kind is list:
                    below.append(child)
                elif child_kind not in _SCALAR_TYPES and child is not None:
                    return False
        level = below
    return True


def _describe_problem(root: Mapping[str, Any]) -> str | None:
    """The full walk: the first offending key or value, with its path."""
    stack: list[tuple[str, int, Any]] = [("", 1, root)]
    while stack:
        path, depth, value = stack.pop()
        if isinstance(value, _SCALARS):
            continue
        if isinstance(value, (Mapping, list)) and depth > MAX_DEPTH:
            return (
                f"it nests deeper than {MAX_DEPTH} levels of objects and arrays "
                f"(at {path or 'top level'})"
            )
        if isinstance(value, Mapping):
            for key, child in value.items():
                if not isinstance(key, str):
                    where = path or "top level"
                    return f"key {key!r} at {where} is a {type(key).__name__}, not a str"
                stack.append((f"{path}.{key}" if path else key, depth + 1, child))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", depth + 1, child) for i, child in enumerate(value))
        else:
            return f"value at {path} is a {type(value).__name__}, which JSON cannot store"
    return None
