"""LR002 on a union whose members inherit the discriminator (issue 22, openai's
``ParsedResponseOutputItem``): ``class Parsed(Message, Generic[T])`` declares no ``type``
of its own, its base does; the union's allowed values hold the inherited one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import check_literals as _check
    from tests.lint_rules.project_fixtures import write_files
else:
    from project_fixtures import check_literals as _check
    from project_fixtures import write_files

SDK = {
    "sdk/__init__.py": "",
    "sdk/message.py": """
        from dataclasses import dataclass
        from typing import Literal

        @dataclass
        class Message:
            text: str
            type: Literal["message"] = "message"
    """,
    "sdk/call.py": """
        from dataclasses import dataclass
        from typing import Literal

        @dataclass
        class Call:
            name: str
            type: Literal["function_call"] = "function_call"

        @dataclass
        class CallOutput:
            output: str
            type: Literal["function_call_output"] = "function_call_output"
    """,
    "sdk/parsed.py": """
        from dataclasses import dataclass
        from typing import Generic, Literal, TypeVar, Union

        from .call import Call, CallOutput
        from .message import Message

        T = TypeVar("T")

        class Model:
            pass

        @dataclass
        class ParsedMessage(Message, Model, Generic[T]):
            parsed: T | None = None

        @dataclass
        class ParsedCall(Call):
            arguments: object = None

        @dataclass
        class Narrowed(CallOutput):
            type: Literal["narrowed"] = "narrowed"  # an override narrows

        @dataclass
        class Delta(Generic[T]):
            value: T
            type: Literal["delta"] = "delta"

        @dataclass
        class ParsedDelta(Delta[T]):  # a subscripted generic base
            pass

        @dataclass
        class TextDelta:
            text: str
            type: Literal["text_delta"] = "text_delta"

        @dataclass
        class Search:
            query: str
            type: Literal["file_search_call"] = "file_search_call"

        @dataclass
        class Several:
            type: Literal["file_search_calls", "web_search_call"]

        @dataclass
        class Loose:
            type: str

        WithSeveral = Union[Search, Several]
        WithLoose = Union[Search, Loose]

        Output = Union[ParsedMessage[T], ParsedCall, Narrowed, ParsedDelta[T], TextDelta, Search]
    """,
}

ALL = {
    "Message.type": "sdk.message:Message.type",
    "Call.type": "sdk.call:Call.type",
    "CallOutput.type": "sdk.call:CallOutput.type",
    "Narrowed.type": "sdk.parsed:Narrowed.type",
    "TextDelta.type": "sdk.parsed:TextDelta.type",
    "Search.type": "sdk.parsed:Search.type",
}
SEARCH = {"Search.type": "sdk.parsed:Search.type"}
TEXT_DELTA = {"TextDelta.type": "sdk.parsed:TextDelta.type"}


@pytest.fixture
def sdk(project: Path) -> Path:
    return write_files(project, SDK)


def _on(alias: str, value: str) -> str:
    return f"def on(item: {alias}) -> bool:\n    return item.type == {value!r}\n"


CONFIGURATIONS = [
    pytest.param(ALL, id="every-class"),
    pytest.param(SEARCH, id="one-member"),
    pytest.param(TEXT_DELTA, id="a-member-like-the-inherited-value"),
]
ALIASES = ["Output", "Output[int]"]


@pytest.mark.parametrize("literals", CONFIGURATIONS)
@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize(
    "value", ["message", "function_call", "narrowed", "delta", "text_delta", "file_search_call"]
)
def test_inherited_and_own_values_are_correct(
    sdk: Path, literals: Mapping[str, object], alias: str, value: str
) -> None:
    assert _check(_on(alias, value), literals) == []


@pytest.mark.parametrize("literals", CONFIGURATIONS)
@pytest.mark.parametrize("alias", ALIASES)
@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("output_message", "message"),
        ("function_cal", "function_call"),
        ("file_search", "file_search_call"),
        ("deltaa", "delta"),
    ],
)
def test_misspelt_value_suggests_the_member_value(
    sdk: Path, literals: Mapping[str, object], alias: str, value: str, meant: str
) -> None:
    (finding,) = _check(_on(alias, value), literals)

    assert finding[0] == 2
    assert finding[1].startswith(f"{value!r} is not a value of `")
    assert finding[1].endswith(f"did you mean {meant!r}?")


@pytest.mark.parametrize("literals", CONFIGURATIONS)
def test_overridden_base_value_is_not_a_value_of_the_union(
    sdk: Path, literals: Mapping[str, object]
) -> None:
    # Narrowed overrides CallOutput's "function_call_output": the union does not have it,
    # so a near miss of it is not suggested from the base.
    (finding,) = _check(_on("Output", "narowed"), literals)

    assert finding[1].endswith("did you mean 'narrowed'?")


@pytest.mark.parametrize("literals", CONFIGURATIONS)
@pytest.mark.parametrize("value", ["output_message", "function_cal", "message"])
def test_unknown_receiver_is_silent(sdk: Path, literals: Mapping[str, object], value: str) -> None:
    assert _check(_on("Outputs", value), literals) == []
    assert _check(_on("Outputs[int]", value), literals) == []


def test_key_of_a_subclass_reads_the_field_from_its_generic_base(sdk: Path) -> None:
    literals = {"ParsedDelta.type": "sdk.parsed:ParsedDelta.type"}

    assert _check(_on("ParsedDelta[int]", "delta"), literals) == []
    assert _check(_on("ParsedDelta[int]", "deltaa"), literals) == [
        (2, "'deltaa' is not a value of `ParsedDelta.type`; did you mean 'delta'?")
    ]


@pytest.mark.parametrize("value", ["file_search_calls", "web_search_call"])
def test_value_of_a_member_with_several_values_is_correct(sdk: Path, value: str) -> None:
    assert _check(_on("WithSeveral", value), SEARCH) == []


def test_misspelt_value_of_a_member_with_several_values_is_found(sdk: Path) -> None:
    assert _check(_on("WithSeveral", "web_search_cal"), SEARCH) == [
        (
            2,
            "'web_search_cal' is not a value of `WithSeveral.type` (configured: `Search.type`);"
            " did you mean 'web_search_call'?",
        )
    ]


def test_union_with_a_member_taking_any_string_is_not_checked(sdk: Path) -> None:
    assert _check(_on("WithLoose", "file_search_calls"), SEARCH) == []
    # the member itself still is
    assert _check(_on("Search", "file_search_calls"), SEARCH) == [
        (2, "'file_search_calls' is not a value of `Search.type`; did you mean 'file_search_call'?")
    ]
