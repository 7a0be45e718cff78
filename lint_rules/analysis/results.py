"""What a caller gets from calling a method, and whether one return type is another's.

LR003 judges a method the way mypy does: by what a caller can do with its result. An
``async def`` without ``yield`` returns a coroutine (``await`` it), as does a ``def``
annotated ``-> Coroutine[...]``; a ``def -> Awaitable[T]`` returns something to ``await``;
an ``async def`` with ``yield`` (an async generator) and a ``def -> AsyncIterator[T]``
return something to ``async for`` over. Return types are compared by name, and only where
the answer is certain: both sides name classes whose bases can all be read (or builtins),
and the implementation's is not the protocol's nor a subclass of it. A TypeVar, an alias,
a Protocol, a typing or ``collections.abc`` type other than the same one, or a class
with a base that cannot be read is never drift.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from lint_rules.analysis.declarations import (
    TYPING_MODULES,
    ModuleSource,
    definition,
    is_protocol,
)

_ABSTRACT_MODULES = (*TYPING_MODULES, "collections.abc")
_ASYNC_ITERATORS = frozenset({"AsyncIterator", "AsyncIterable", "AsyncGenerator"})
_ALIAS_DEPTH = 5
"""How many aliases of aliases a return annotation is read through."""
_TOP = frozenset({"builtins.object", "typing.Any", "typing_extensions.Any"})
_PROMOTIONS = {
    # mypy's promotions: an int is accepted as a float, a float as a complex; bytearray
    # and memoryview as bytes (unless --strict-bytes).
    "builtins.bool": ("builtins.float", "builtins.complex"),
    "builtins.int": ("builtins.float", "builtins.complex"),
    "builtins.float": ("builtins.complex",),
    "builtins.bytearray": ("builtins.bytes",),
    "builtins.memoryview": ("builtins.bytes",),
}


@dataclass(frozen=True)
class Shape:
    """What calling a method gives: ``coroutine``, ``awaitable``, ``async-iterator``,
    ``value`` (anything else) or ``unknown`` (a sync def without a return annotation)."""

    kind: str
    result: ast.expr | None
    """The type the caller ends with: awaited, iterated (``AsyncIterator[T]`` whole), or
    returned; None when not annotated."""
    is_async: bool = False
    """Written ``async def``."""


def shape(
    is_async: bool, is_generator: bool, returns: ast.expr | None, source: ModuleSource
) -> Shape:
    if is_async:
        return Shape("async-iterator" if is_generator else "coroutine", returns, is_async=True)
    if returns is None:
        return Shape("unknown", None)
    origin = returns.value if isinstance(returns, ast.Subscript) else returns
    name = _abstract_name(origin, source)
    arguments = _arguments(returns)
    if name == "Coroutine":
        return Shape("coroutine", arguments[2] if len(arguments) == 3 else None)
    if name == "Awaitable":
        return Shape("awaitable", arguments[0] if arguments else None)
    if name in _ASYNC_ITERATORS:
        return Shape("async-iterator", returns)
    return Shape("value", returns)


def call_change(protocol: Shape, implementation: Shape) -> str | None:
    """How a caller of the protocol's method is let down by the implementation's, or None."""
    wanted, given = protocol.kind, implementation.kind
    if wanted in ("coroutine", "awaitable"):
        if given == "coroutine" or (given == "awaitable" and wanted == "awaitable"):
            return None
        if given == "awaitable":
            return "returns an `Awaitable`, the protocol's is a coroutine (`async def`)"
        if given == "async-iterator":
            return "is an async generator, the protocol's is awaited"
        return "is not async"
    if wanted == "async-iterator":
        if given in ("async-iterator", "unknown"):
            return None
        if given == "coroutine":
            return (
                "is a coroutine (`async def` without `yield`), the protocol's returns an "
                "async iterator"
            )
        return "is not async"
    if given == "coroutine" or (given == "async-iterator" and implementation.is_async):
        return "is async, the protocol's is not"
    return None


def result_change(
    protocol: Shape, protocol_source: ModuleSource, implementation: Shape, source: ModuleSource
) -> str | None:
    """``returns `X`, not `Y``` when the implementation's result type is certainly not
    the protocol's (same call shape assumed); None when it is, or when that is unsure."""
    wanted, given = protocol.result, implementation.result
    if wanted is None or given is None:
        return None
    if protocol.kind == "async-iterator" and implementation.kind == "async-iterator":
        wanted_items, given_items = _arguments(wanted), _arguments(given)
        if not wanted_items or not given_items:
            return None
        wanted, given = wanted_items[0], given_items[0]
    if ast.dump(wanted) == ast.dump(given):
        return None
    if _certainly_not_subtype(given, source, wanted, protocol_source):
        return f"returns `{ast.unparse(given)}`, not `{ast.unparse(wanted)}`"
    return None


def _certainly_not_subtype(
    given: ast.expr, source: ModuleSource, wanted: ast.expr, wanted_source: ModuleSource
) -> bool:
    wanted_names: set[str] = set()
    structural = False
    for member in _union(wanted, wanted_source):
        reference = _class(member, wanted_source)
        if reference is None or reference in _TOP or reference.startswith("typing."):
            return False  # not a class, or one whose subtypes are not known by name
        wanted_names.add(reference)
        structural = structural or _is_typed_dict(member, wanted_source)
    for member in _union(given, source):
        reference = _class(member, source)
        if reference is None:
            continue
        if reference in wanted_names:
            continue
        if structural and not reference.startswith("builtins."):
            continue  # a TypedDict accepts another of the same keys: not known by name
        ancestors = _ancestors(member, source, set())
        if ancestors is None or ancestors & wanted_names:
            continue
        return True
    return False


def _is_typed_dict(expression: ast.expr, source: ModuleSource) -> bool:
    found = definition(
        source, expression.value if isinstance(expression, ast.Subscript) else expression
    )
    if found is None:
        return False
    owner, name = found
    node = owner.classes.get(name)
    return node is not None and any(
        isinstance(base, (ast.Name, ast.Attribute)) and _abstract_name(base, owner) == "TypedDict"
        for base in node.bases
    )


def _union(expression: ast.expr, source: ModuleSource, depth: int = 0) -> list[ast.expr]:
    """The members of ``A | B``, ``Optional[A]``, ``Union[A, B]``, a string annotation,
    and of a type alias of the module (``Screenshot: TypeAlias = ScreenshotParam``)."""
    if (
        depth < _ALIAS_DEPTH
        and isinstance(expression, ast.Name)
        and expression.id not in source.classes
        and source.imported(expression.id) is None
    ):
        value = source.alias(expression.id)
        if isinstance(value, (ast.Name, ast.Attribute, ast.Subscript, ast.BinOp)):
            return _union(value, source, depth + 1)
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        try:
            parsed = ast.parse(expression.value, mode="eval").body
        except SyntaxError:
            return [expression]
        return _union(parsed, source, depth)
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.BitOr):
        return [*_union(expression.left, source, depth), *_union(expression.right, source, depth)]
    if isinstance(expression, ast.Subscript):
        name = _abstract_name(expression.value, source)
        if name == "Optional":
            return [*_union(expression.slice, source, depth), ast.Constant(None)]
        if name == "Union":
            items = _arguments(expression)
            return [member for item in items for member in _union(item, source, depth)]
    return [expression]


def _class(expression: ast.expr, source: ModuleSource) -> str | None:
    """``None``, ``builtins.X``, ``typing.X``/``collections.abc.X``, or the qualified name
    of a class (not a Protocol) read from source; None when it is no class known here."""
    if isinstance(expression, ast.Constant) and expression.value is None:
        return "None"
    if isinstance(expression, ast.Subscript):
        expression = expression.value
    if not isinstance(expression, (ast.Name, ast.Attribute)):
        return None
    abstract = _abstract_name(expression, source)
    if abstract is not None:
        return f"typing.{abstract}"
    if isinstance(expression, ast.Name) and not _binds(source, expression.id):
        builtin = getattr(builtins, expression.id, None)
        if isinstance(builtin, type):
            return f"builtins.{expression.id}"
    found = definition(source, expression)
    if found is None:
        return None
    owner, name = found
    node = owner.classes.get(name)
    if node is None or is_protocol(owner, node):
        return None
    return f"{owner.name}.{name}"


def _ancestors(expression: ast.expr, source: ModuleSource, seen: set[str]) -> set[str] | None:
    """Every class ``expression`` is (itself, its bases', mypy's promotions), or None
    when one of them cannot be read."""
    reference = _class(expression, source)
    if reference is None or reference.startswith("typing.") or reference in seen:
        return None
    if reference == "None":
        return {"None"}
    seen.add(reference)
    if reference.startswith("builtins."):
        cls = getattr(builtins, reference.removeprefix("builtins."))
        names = {
            f"builtins.{base.__name__}" for base in cls.__mro__ if base.__module__ == "builtins"
        }
        return names | set(_PROMOTIONS.get(reference, ()))
    found = definition(
        source, expression.value if isinstance(expression, ast.Subscript) else expression
    )
    if found is None:
        return None
    owner, name = found
    node = owner.classes[name]
    names = {reference, "builtins.object"}
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if _abstract_name(target, owner) == "Generic":
            continue
        inherited = _ancestors(target, owner, seen)
        if inherited is None:
            return None
        names |= inherited
    if node.keywords:  # a metaclass or class arguments: not read here
        return None
    return names


def _binds(source: ModuleSource, name: str) -> bool:
    """Whether the module's top level binds ``name`` (an import, class, def or assignment)."""
    if source.imported(name) is not None or name in source.classes:
        return True
    if source.alias(name) is not None:
        return True
    return any(
        isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
        for node in source.tree.body
    )


def _abstract_name(expression: ast.expr, source: ModuleSource) -> str | None:
    """``X`` when ``expression`` names ``typing.X`` or ``collections.abc.X``."""
    qualified = (
        source.qualified(expression) if isinstance(expression, (ast.Name, ast.Attribute)) else None
    )
    if qualified is None:
        return None
    module, _, name = qualified.rpartition(".")
    return name if module in _ABSTRACT_MODULES else None


def _arguments(expression: ast.expr) -> list[ast.expr]:
    if not isinstance(expression, ast.Subscript):
        return []
    index = expression.slice
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]
