"""@function_tool: JSON schema from type hints and docstring; calling with model arguments."""

from __future__ import annotations

import asyncio
import enum
import threading
from typing import Any, Literal

import pytest

from agent_sessions.tools import FunctionTool, ToolArgumentsError, function_tool


class Unit(enum.Enum):
    CELSIUS = "c"
    FAHRENHEIT = "f"


@function_tool
def forecast(city: str, days: int = 1, unit: Unit = Unit.CELSIUS) -> str:
    """Forecast the weather.

    Looks a few days ahead.

    Args:
        city: The city to look up,
            spelled in English.
        days (int): How many days ahead.
        unit: Degrees to report in.

    Returns:
        A short forecast.
    """
    return f"{city}: {days} day(s) in {unit.value}"


@function_tool
async def convert(amount: float, to: Literal["EUR", "USD"]) -> dict[str, float]:
    """Convert money.

    :param amount: How much money.
    :param to: The target currency.
    """
    return {to: amount * 2}


def test_schema_lists_each_parameter_with_its_json_type() -> None:
    assert forecast.params_json_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city to look up, spelled in English."},
            "days": {"type": "integer", "description": "How many days ahead."},
            "unit": {"type": "string", "enum": ["c", "f"], "description": "Degrees to report in."},
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_tool_is_named_after_the_function_and_described_by_its_docstring() -> None:
    assert (forecast.name, forecast.description) == (
        "forecast",
        "Forecast the weather. Looks a few days ahead.",  # the text before any section
    )


def test_sphinx_param_fields_describe_parameters() -> None:
    properties = convert.params_json_schema["properties"]
    assert convert.description == "Convert money."
    assert properties["amount"] == {"type": "number", "description": "How much money."}
    assert properties["to"] == {
        "type": "string",
        "enum": ["EUR", "USD"],
        "description": "The target currency.",
    }


def test_containers_and_optionals_have_schemas() -> None:
    @function_tool
    def tag(names: list[str], scores: dict[str, int], note: str | None = None) -> None:
        """Tag things."""

    properties = tag.params_json_schema["properties"]
    assert properties["names"] == {"type": "array", "items": {"type": "string"}}
    assert properties["scores"] == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }
    assert properties["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert tag.params_json_schema["required"] == ["names", "scores"]


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        (bytes, "has no JSON schema"),
        (dict[int, str], "dict keys must be str"),
        (Literal["a", 1], "choices must all be str"),
    ],
)
def test_unsupported_parameter_type_is_refused_at_decoration(annotation: Any, message: str) -> None:
    def tool(value: Any) -> None:
        """A tool."""

    tool.__annotations__["value"] = annotation
    with pytest.raises(TypeError, match=f"tool tool, parameter value: .*{message}"):
        function_tool(tool)


def test_parameter_without_type_hint_is_refused() -> None:
    def untyped(value) -> None:  # type: ignore[no-untyped-def]
        """A tool."""

    with pytest.raises(TypeError, match="parameter value: a type hint is needed"):
        function_tool(untyped)


def test_variadic_parameters_are_refused() -> None:
    def variadic(*values: int) -> None:
        """A tool."""

    with pytest.raises(TypeError, match="only named parameters"):
        function_tool(variadic)


async def test_sync_tool_runs_off_the_event_loop_thread() -> None:
    threads: list[int] = []

    @function_tool
    def where() -> str:
        """Report the thread."""
        threads.append(threading.get_ident())
        return "here"

    assert await where.invoke("{}") == "here"
    assert threads != [threading.get_ident()]


async def test_invoke_fills_defaults_and_converts_enums() -> None:
    assert await forecast.invoke('{"city": "Oslo"}') == "Oslo: 1 day(s) in c"
    assert await forecast.invoke('{"city": "Oslo", "days": 3, "unit": "f"}') == (
        "Oslo: 3 day(s) in f"
    )


async def test_async_tool_result_is_returned_as_json() -> None:
    assert await convert.invoke('{"amount": 2, "to": "EUR"}') == '{"EUR": 4.0}'


async def test_empty_arguments_mean_no_arguments() -> None:
    @function_tool
    async def now() -> str:
        """The time."""
        await asyncio.sleep(0)
        return "noon"

    assert await now.invoke("") == "noon"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got list"),
        ('{"days": 2}', "missing arguments for forecast: city"),
        ('{"city": "Oslo", "country": "NO"}', "unknown arguments for forecast: country"),
        ('{"city": 7}', "forecast\\(city=...\\): 7 is not a valid str"),
        ('{"city": "Oslo", "days": true}', "True is not a valid int"),
        ('{"city": "Oslo", "days": 1.5}', "1.5 is not a valid int"),
        ('{"city": "Oslo", "unit": "kelvin"}', "'kelvin' is not a valid Unit"),
    ],
)
async def test_arguments_not_matching_the_schema_are_refused(arguments: str, message: str) -> None:
    with pytest.raises(ToolArgumentsError, match=message):
        await forecast.invoke(arguments)


async def test_nested_arguments_are_checked_element_by_element() -> None:
    @function_tool
    def total(values: list[int]) -> int:
        """Sum values."""
        return sum(values)

    assert await total.invoke('{"values": [1, 2, 3]}') == "6"
    with pytest.raises(ToolArgumentsError, match=r"total\(values=...\)\[1\]"):
        await total.invoke('{"values": [1, "2"]}')


def test_decorated_function_becomes_a_function_tool() -> None:
    assert isinstance(forecast, FunctionTool)
