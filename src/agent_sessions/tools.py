"""Function tools: Python functions an agent's model may call.

``@function_tool`` turns a sync or async function into a :class:`FunctionTool` whose JSON
schema comes from the type hints, and whose descriptions come from the docstring (its
summary, and each parameter's line in a Google-style ``Args:`` section or a Sphinx
``:param name:`` field).
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import json
import re
import types
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

__all__ = ["FunctionTool", "ToolArgumentsError", "function_tool"]

_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ToolArgumentsError(ValueError):
    """The model's arguments for a tool do not match its schema."""


@dataclass(frozen=True)
class FunctionTool:
    """A tool the model sees as ``name`` with ``description`` and ``params_json_schema``."""

    name: str
    description: str
    params_json_schema: dict[str, Any]
    function: Callable[..., Any]

    async def invoke(self, arguments: str) -> str:
        """Call the function with the model's JSON ``arguments`` and return its output text.

        Raises :class:`ToolArgumentsError` when the arguments are not a JSON object that
        matches the schema (the function is not called), and whatever the function raises.
        A ``str`` result is returned as is; any other result as JSON (or ``str()`` when JSON
        cannot encode it). Sync functions run in a worker thread so they never block the
        event loop.
        """
        kwargs = self._parse_arguments(arguments)
        if inspect.iscoroutinefunction(self.function):
            result = await self.function(**kwargs)
        else:
            result = await asyncio.to_thread(self.function, **kwargs)
        return _output_text(result)

    def _parse_arguments(self, arguments: str) -> dict[str, Any]:
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(
                f"arguments for {self.name} are not valid JSON: {exc}"
            ) from None
        if not isinstance(parsed, dict):
            raise ToolArgumentsError(
                f"arguments for {self.name} must be a JSON object, got {type(parsed).__name__}"
            )
        properties: dict[str, Any] = self.params_json_schema["properties"]
        unknown = sorted(set(parsed) - set(properties))
        if unknown:
            raise ToolArgumentsError(f"unknown arguments for {self.name}: {', '.join(unknown)}")
        missing = [name for name in self.params_json_schema["required"] if name not in parsed]
        if missing:
            raise ToolArgumentsError(f"missing arguments for {self.name}: {', '.join(missing)}")
        hints = get_type_hints(self.function)
        return {
            name: _checked(value, hints[name], f"{self.name}({name}=...)")
            for name, value in parsed.items()
        }


def function_tool(function: Callable[..., Any] | Callable[..., Awaitable[Any]]) -> FunctionTool:
    """Make a tool of ``function``, named after it.

    Every parameter needs a type hint among ``str``, ``int``, ``float``, ``bool``,
    ``None``, ``Literal[...]``, an ``Enum`` of str or int values, ``list[X]``,
    ``dict[str, X]`` and unions of these (``X | None``); parameters with a default are
    optional. Anything else raises ``TypeError`` naming the parameter, at decoration time.
    """
    name = function.__name__
    summary, param_docs = _parse_docstring(inspect.getdoc(function) or "")
    hints = get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(function).parameters.values():
        where = f"tool {name}, parameter {param.name}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(f"{where}: only named parameters can be tool arguments")
        if param.name not in hints:
            raise TypeError(f"{where}: a type hint is needed to build the JSON schema")
        schema = _schema_for(hints[param.name], where)
        if param.name in param_docs:
            schema["description"] = param_docs[param.name]
        properties[param.name] = schema
        if param.default is param.empty:
            required.append(param.name)
    params_schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return FunctionTool(name, summary, params_schema, function)


def _schema_for(annotation: Any, where: str) -> dict[str, Any]:
    """The JSON schema of one parameter type, or ``TypeError`` naming ``where``."""
    if annotation is type(None) or annotation is None:
        return {"type": "null"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([member.value for member in annotation], where)
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Literal:
        return _enum_schema(list(args), where)
    if origin is list:
        return (
            {"type": "array", "items": _schema_for(args[0], where)} if args else {"type": "array"}
        )
    if origin is dict:
        if args and args[0] is not str:
            raise TypeError(f"{where}: dict keys must be str for JSON, got {args[0]!r}")
        return (
            {"type": "object", "additionalProperties": _schema_for(args[1], where)}
            if args
            else {"type": "object"}
        )
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_for(arg, where) for arg in args]}
    raise TypeError(f"{where}: {annotation!r} has no JSON schema (see function_tool)")


def _enum_schema(values: list[Any], where: str) -> dict[str, Any]:
    kinds = {type(value) for value in values}
    if len(kinds) != 1 or next(iter(kinds)) not in _JSON_TYPES:
        raise TypeError(f"{where}: choices must all be str, or all int, got {values!r}")
    return {"type": _JSON_TYPES[next(iter(kinds))], "enum": values}


def _checked(value: Any, annotation: Any, where: str) -> Any:
    """``value`` if it matches ``annotation`` (an int widened for ``float``, a value made
    an ``Enum`` member), else ``ToolArgumentsError`` naming ``where``."""
    if annotation is type(None) or annotation is None:
        if value is None:
            return None
    elif annotation is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif annotation in _JSON_TYPES:
        # bool is an int in Python, never in JSON
        if isinstance(value, annotation) and (annotation is bool or not isinstance(value, bool)):
            return value
    elif isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        for member in annotation:
            if member.value == value and type(member.value) is type(value):
                return member
    else:
        origin, args = get_origin(annotation), get_args(annotation)
        if origin is Literal:
            if any(value == arg and type(value) is type(arg) for arg in args):
                return value
        elif origin is list:
            if isinstance(value, list):
                if not args:
                    return value
                return [
                    _checked(element, args[0], f"{where}[{i}]") for i, element in enumerate(value)
                ]
        elif origin is dict:
            if isinstance(value, dict):
                if not args:
                    return value
                return {key: _checked(v, args[1], f"{where}[{key!r}]") for key, v in value.items()}
        elif origin in (Union, types.UnionType):
            for arg in args:
                try:
                    return _checked(value, arg, where)
                except ToolArgumentsError:
                    continue
    raise ToolArgumentsError(f"{where}: {value!r} is not a valid {_type_name(annotation)}")


def _type_name(annotation: Any) -> str:
    return annotation.__name__ if isinstance(annotation, type) else repr(annotation)


def _output_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?):\s*$")
_GOOGLE_PARAM = re.compile(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The docstring's description (text before any section) and each parameter's line."""
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        sphinx = _SPHINX_PARAM.match(stripped)
        header = _SECTION.match(stripped)
        if sphinx:
            section, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif stripped.startswith(":"):
            section, current = "sphinx", None
        elif header:
            section, current = header.group(1), None
        elif section is None:
            description.append(stripped)
        elif section in ("Args", "Arguments", "Parameters") and stripped:
            google = _GOOGLE_PARAM.match(stripped)
            if google and not line.startswith(" " * 8):
                current = google.group(1)
                params[current] = google.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {stripped}".strip()
        elif section == "sphinx" and current is not None and stripped:
            params[current] = f"{params[current]} {stripped}".strip()
    return " ".join(" ".join(description).split()), params
