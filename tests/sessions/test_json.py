"""The one item encoding every backend stores, and its decoding of stored rows."""

from __future__ import annotations

import enum
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, ClassVar

import pytest

from agent_sessions import InvalidItemError
from agent_sessions._json import (
    ENCODE_CHUNK,
    MAX_DEPTH,
    decode_item,
    decode_items,
    encode_items,
    encode_items_in_worker,
)


def where(key: int) -> str:
    return f"row {key}"


def test_encode_items_keeps_unicode_as_is_and_compact() -> None:
    assert encode_items([{"text": "héllo 🧠", "n": [1, 2]}]) == ['{"text":"héllo 🧠","n":[1,2]}']


def test_encode_items_refuses_a_lone_surrogate_naming_the_item() -> None:
    with pytest.raises(TypeError, match=r"item 1 .*surrogate"):
        encode_items([{"ok": "é"}, {"bad": "\ud800"}])


def test_decode_items_returns_the_objects_in_order() -> None:
    rows = list(enumerate(encode_items([{"n": 0}, {"n": 1, "é": "ü"}])))
    assert decode_items(rows, where=where) == [{"n": 0}, {"n": 1, "é": "ü"}]


def test_decode_items_accepts_bytes_and_padded_json_objects() -> None:
    rows: list[tuple[int, str | bytes]] = [(0, b'{"n": 0}'), (1, ' {"n": 1}\n')]
    assert decode_items(rows, where=where) == [{"n": 0}, {"n": 1}]


@pytest.mark.parametrize(
    "raw",
    ['x{"n":1}', '{"n": 1} trailing', "[1, 2]", '"text"', "", "{", b"\xff", '{"a":1},{"b":2}'],
)
def test_decode_items_skips_a_row_that_is_not_one_json_object_with_a_warning(
    raw: str | bytes, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [(0, '{"n":0}'), (1, raw), (2, '{"n":2}')]
    with caplog.at_level(logging.WARNING, logger="agent_sessions"):
        assert decode_items(rows, where=where) == [{"n": 0}, {"n": 2}]
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1
    assert messages[0].startswith("skipping corrupt session item at row 1")


def test_a_row_nested_too_deep_to_decode_is_skipped_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    with caplog.at_level(logging.WARNING, logger="agent_sessions"):
        assert decode_item(deep, where="row 0") is None
        assert decode_items([(0, deep), (1, '{"n":1}')], where=where) == [{"n": 1}]
    assert len(caplog.records) == 2


class Role(str, enum.Enum):
    USER = "user"


def test_encode_items_accepts_str_and_int_subclasses_as_their_values() -> None:
    assert encode_items([{"role": Role.USER, "flag": True, "n": 1}]) == [
        '{"role":"user","flag":true,"n":1}'
    ]


def test_encode_items_names_the_path_of_a_bad_value_deep_inside() -> None:
    with pytest.raises(TypeError, match=r"item 0 .*content\[1\]\.parts\[0\] is a set"):
        encode_items([{"content": [{"ok": 1}, {"parts": [{1, 2}]}]}])


# -- found by mutation testing (benchmarks/mutation.py _json) ------------------------------
# Messages are checked for the facts a caller needs (which item, where in it, which type,
# the bound), not their wording: benchmarks/mutation_survivors.md, "Error messages".


@pytest.mark.parametrize(
    ("items", "kind"), [("text", "str"), (b"text", "bytes"), ({"a": 1}, "dict")]
)
def test_encode_items_refuses_a_batch_that_is_not_a_list_naming_its_type(
    items: object, kind: str
) -> None:
    with pytest.raises(InvalidItemError, match=rf"^items must be a list of dicts, got {kind}$"):
        encode_items(items)  # type: ignore[arg-type]


def test_encode_items_names_the_index_and_type_of_a_non_mapping() -> None:
    with pytest.raises(InvalidItemError, match=r"^item 2 must be a dict with str keys, got list$"):
        encode_items([{"a": 1}, {"b": 2}, [1]])  # type: ignore[list-item]


def test_indexes_count_from_first_index() -> None:
    with pytest.raises(InvalidItemError, match=r"^item 1001 is not a JSON object: value at x "):
        encode_items([{"x": 1}, {"x": (1,)}], first_index=1000)
    with pytest.raises(InvalidItemError, match=r"^item 7 must be a dict"):
        encode_items([3], first_index=7)  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("item", "where"),
    [
        ({1: "a"}, "key 1 at top level is a int, not a str"),
        ({"a": {"b": {None: 1}}}, "key None at a.b is a NoneType, not a str"),
        ({"a": [{"ok": 1}, {(1, 2): 1}]}, r"key \(1, 2\) at a\[1\] is a tuple, not a str"),
    ],
)
def test_a_non_str_key_is_named_with_its_path_and_type(
    item: dict[object, object], where: str
) -> None:
    with pytest.raises(InvalidItemError, match=rf"^item 0 is not a JSON object: {where}$"):
        encode_items([item])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("value", "where", "kind"),
    [
        ({"a": b"x"}, "a", "bytes"),
        ({"a": [1, {"b": {1, 2}}]}, r"a\[1\]\.b", "set"),
        ({"a": {"b": object()}}, r"a\.b", "object"),
    ],
)
def test_a_value_json_cannot_store_is_named_with_its_path_and_type(
    value: dict[str, object], where: str, kind: str
) -> None:
    with pytest.raises(
        InvalidItemError, match=rf"^item 0 is not a JSON object: value at {where} is a {kind}, "
    ):
        encode_items([value])


def test_nan_and_infinity_are_refused_naming_the_item() -> None:
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(InvalidItemError, match=r"^item 1 is not a JSON object: "):
            encode_items([{"ok": 1.5}, {"x": [bad]}])


def nested(levels: int, kind: type = dict) -> dict[str, object]:
    """An item of exactly ``levels`` levels of objects (or of arrays below the top)."""
    value: object = 1
    for _ in range(levels - 1):
        value = {"a": value} if kind is dict else [value]
    return {"a": value}


class Tagged(dict[str, object]):
    """A dict subclass: validated by the full walk, not the fast path."""


@pytest.mark.parametrize("kind", [dict, list])
def test_max_depth_levels_are_stored_one_more_is_refused_naming_where(kind: type) -> None:
    deepest = nested(MAX_DEPTH, kind)
    (text,) = encode_items([deepest])
    assert decode_item(text, where="row 0") == deepest
    assert encode_items([Tagged(deepest)]) == [text]
    plain = nested(MAX_DEPTH + 1, kind)
    for too_deep in (plain, Tagged(plain)):
        with pytest.raises(
            InvalidItemError,
            match=rf"^item 0 is not a JSON object: it nests deeper than {MAX_DEPTH} levels",
        ):
            encode_items([too_deep])


def test_the_full_walk_names_the_path_where_nesting_goes_too_deep() -> None:
    item = Tagged(ok=[1], deep=nested(MAX_DEPTH, list))
    with pytest.raises(
        InvalidItemError, match=r"levels of objects and arrays \(at deep\.a(\[0\])+\)$"
    ):
        encode_items([item])


@pytest.mark.parametrize(
    "item",
    [
        {"a": [1, 2.5, "x", True, None, {"b": [None, False, {"c": "d"}]}]},
        {},
        {"a": []},
        {"ü": {"é": ["🧠"]}},
    ],
)
def test_plain_items_and_their_subclass_forms_encode_alike(item: dict[str, object]) -> None:
    (text,) = encode_items([item])
    assert decode_item(text, where="row 0") == item
    assert encode_items([Tagged(item)]) == [text]


@pytest.mark.parametrize(
    "item",
    [
        {"a": [1, {"b": (1,)}]},
        {"a": [{"b": [{"c": {1: 2}}]}]},
        {"a": 1, "b": [[[b"x"]]]},
        {"a": [[], [{}], [{"b": frozenset()}]]},
        {"a": (1,), "z": 1},  # a fine value walked before the bad one
        Tagged(a=(1,)),
    ],
)
def test_the_fast_path_sends_every_bad_value_to_the_full_walk(item: dict[str, object]) -> None:
    with pytest.raises(InvalidItemError, match=r"^item 0 is not a JSON object: (key|value) "):
        encode_items([item])


def call_at_depth(depth: int, function: Callable[[], object]) -> object:
    """``function()`` called ``depth`` frames deep: a caller near the recursion limit."""
    if depth == 0:
        return function()
    return call_at_depth(depth - 1, function)


def deep_caller_depth() -> int:
    """How many more frames leave a caller 40 frames short of the recursion limit: too
    few for the encoder and decoder to walk ``MAX_DEPTH`` levels."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return sys.getrecursionlimit() - depth - 40


def test_a_deep_caller_still_encodes_and_decodes_a_max_depth_item() -> None:
    deepest = nested(MAX_DEPTH, list)
    (text,) = encode_items([deepest])
    depth = deep_caller_depth()
    assert call_at_depth(depth, lambda: encode_items([deepest])) == [text]
    assert call_at_depth(depth, lambda: decode_item(text, where="row 0")) == deepest
    assert call_at_depth(depth, lambda: decode_items([(0, text)], where=where)) == [deepest]


def test_a_deep_caller_gets_the_encoders_error_not_a_crash() -> None:
    bad = nested(MAX_DEPTH - 1, list)
    assert isinstance(bad, dict)
    bad["nan"] = float("nan")
    with pytest.raises(InvalidItemError, match=r"^item 0 is not a JSON object: "):
        call_at_depth(deep_caller_depth(), lambda: encode_items([bad]))


@pytest.mark.parametrize(
    ("raw", "found"),
    [("[1]", "a list, not a JSON object"), ("3", "a int, not a JSON object"), (b"\xff", "utf-8")],
)
def test_decode_item_warns_naming_where_and_what_it_found(
    raw: str | bytes, found: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="agent_sessions"):
        assert decode_item(raw, where="session s, row 4") is None
        assert decode_items([(4, raw)], where=lambda key: f"session s, row {key}") == []
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    for message in messages:
        assert message.startswith("skipping corrupt session item at session s, row 4: ")
        assert found in message
    assert {record.levelno for record in caplog.records} == {logging.WARNING}


def test_decode_item_accepts_bytes_and_str() -> None:
    assert decode_item('{"é":1}'.encode(), where="row 0") == {"é": 1}
    assert decode_item('{"é":1}', where="row 0") == {"é": 1}


def test_decode_items_takes_the_slow_path_only_for_rows_it_must() -> None:
    rows: list[tuple[int, str | bytes]] = [
        (0, '{"n":0}'),
        (1, b'{"n":1}'),
        (2, '{"n":2} '),
        (3, '{"n":3}{"n":4}'),
        (4, "{}"),
    ]
    assert decode_items(rows, where=where) == [{"n": 0}, {"n": 1}, {"n": 2}, {}]


class Recording(dict[str, object]):
    """A dict subclass that records the thread validating it (the full walk reads it)."""

    threads: ClassVar[set[str]] = set()

    def items(self) -> Any:
        Recording.threads.add(threading.current_thread().name)
        return super().items()


@pytest.mark.parametrize("size", [ENCODE_CHUNK, ENCODE_CHUNK + 1])
async def test_a_batch_over_encode_chunk_is_encoded_off_the_loops_thread(size: int) -> None:
    Recording.threads = set()
    items = [Recording(n=n) for n in range(size)]
    encoded = await encode_items_in_worker(items)
    assert encoded == [f'{{"n":{n}}}' for n in range(size)]
    off_the_loop = threading.current_thread().name not in Recording.threads
    assert off_the_loop is (size > ENCODE_CHUNK)
    assert len(Recording.threads) == 1


async def test_a_large_batch_that_is_not_a_list_is_encoded_inline() -> None:
    Recording.threads = set()
    encoded = await encode_items_in_worker(Recording(n=n) for n in range(ENCODE_CHUNK + 1))
    assert len(encoded) == ENCODE_CHUNK + 1
    assert Recording.threads == {threading.current_thread().name}


async def test_a_rejected_large_batch_names_its_item() -> None:
    items: list[dict[str, object]] = [{"n": n} for n in range(ENCODE_CHUNK + 5)]
    items[ENCODE_CHUNK + 2] = {"bad": {1, 2}}
    with pytest.raises(InvalidItemError, match=rf"^item {ENCODE_CHUNK + 2} is not a JSON object"):
        await encode_items_in_worker(items)
