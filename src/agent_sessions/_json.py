"""Item validation and the one JSON encoding every backend stores.

Items are validated in full before a backend writes anything, so a rejected batch
stores nothing. Encoding keeps unicode as is (no ``\\u`` escapes) and is compact.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from .protocol import InvalidItemError, Item

__all__ = ["decode_item", "encode_items"]

logger = logging.getLogger("agent_sessions")

_encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_decode = json.JSONDecoder().decode
_SCALARS = (str, int, float, bool, type(None))


def encode_items(items: Iterable[Mapping[str, Any]]) -> list[str]:
    """Validate every item and return their JSON encodings, in order.

    Raises ``InvalidItemError`` (a ``TypeError``) naming the index of the first item that
    is not a JSON object: a non-mapping, a non-str key at any depth, a value JSON cannot
    encode (a set, a tuple, bytes, NaN, ...), or nesting too deep to encode.
    """
    if isinstance(items, (str, bytes, Mapping)):
        raise InvalidItemError(f"items must be a list of dicts, got {type(items).__name__}")
    encoded: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidItemError(
                f"item {index} must be a dict with str keys, got {type(item).__name__}"
            )
        problem = _find_problem(item)
        if problem is not None:
            raise InvalidItemError(f"item {index} is not a JSON object: {problem}")
        try:
            encoded.append(_encoder.encode(item))
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidItemError(f"item {index} is not a JSON object: {exc}") from None
    return encoded


def decode_item(raw: str | bytes, *, where: str) -> Item | None:
    """Decode one stored row. A row that is not a JSON object (written by something
    else) yields ``None`` and a warning naming ``where``; it never raises."""
    try:
        value = _decode(raw if isinstance(raw, str) else raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
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


def _find_problem(root: Mapping[str, Any]) -> str | None:
    """Describe the first value under ``root`` that would not round-trip through JSON."""
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _SCALARS):
            continue
        if isinstance(value, Mapping):
            for key, child in value.items():
                if not isinstance(key, str):
                    where = path or "top level"
                    return f"key {key!r} at {where} is a {type(key).__name__}, not a str"
                stack.append((f"{path}.{key}" if path else key, child))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", child) for i, child in enumerate(value))
        else:
            return f"value at {path} is a {type(value).__name__}, which JSON cannot store"
    return None
