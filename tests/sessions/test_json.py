"""The one item encoding every backend stores, and its decoding of stored rows."""

from __future__ import annotations

import enum
import logging

import pytest

from agent_sessions._json import decode_item, decode_items, encode_items


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
    ['{"n": 1} trailing', "[1, 2]", '"text"', "", "{", b"\xff", '{"a":1},{"b":2}'],
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
