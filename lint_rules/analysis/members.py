"""What the classes and functions a checked file uses declare, read from source lazily.

The receiver analysis (``receivers.py``) knows a value's type by a class's simple name.
``Members`` answers, for such a name, what the class declares: the type of an attribute
(a class-body annotation, a TypedDict key, a property), of what a method returns, of what
iterating it (``__iter__``/``__aiter__``) or entering it (``__enter__``/``__aenter__``)
gives, looking in its bases too; and what a function imported from another module
returns. A name is looked up where the file, or the module whose annotation gave it,
binds it (through imports and re-exports, in any module of the project or on the import
path); a name two places bind to different classes is not looked up. Modules are read
only when a receiver asks, each once per run (``Declarations``).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field

from lint_rules.analysis.declarations import (
    ModuleSource,
    definition,
    has_decorator,
    type_alias_value,
)
from lint_rules.analysis.receivers import ELEMENT, EMPTY, Types, annotation_types, elements
from lint_rules.rule import ConfigError

_Class = tuple[ModuleSource, ast.ClassDef]
_Function = ast.FunctionDef | ast.AsyncFunctionDef
_Member = ast.AnnAssign | ast.FunctionDef | ast.AsyncFunctionDef
MAX_BASES = 8
"""How many levels of base classes a member is looked for in."""


@dataclass
class Members:
    """Lazy answers about the classes and functions the file ``here`` uses."""

    here: ModuleSource
    on_read: Callable[[], None] = lambda: None
    """Called whenever an answer may depend on another module."""
    packages: frozenset[str] | None = None
    """The top-level packages whose modules are read (the project's and those of the
    configured declarations); None: any. The standard library's and other installed
    packages' classes (``TestCase``, ``BaseModel``) are never read."""
    _seen_in: dict[str, list[tuple[ModuleSource, ast.expr]]] = field(default_factory=dict)
    """Where a type name came from: the module and the expression naming it there."""
    _classes: dict[str, _Class | None] = field(default_factory=dict)
    _aliases: dict[str, dict[str, ast.expr]] = field(default_factory=dict)

    # What the receiver analysis asks ----------------------------------------------------

    def function(self, name: str) -> Types:
        """What calling ``name`` (bound by an import of the file) gives: the return type
        of a function, an instance of a class."""
        if self.here.imported(name) is None:
            return EMPTY
        if name[:1].isupper() and not name.isupper():
            # A class by its name (CapWords): an instance, its module read only if a
            # receiver asks what the class declares.
            return frozenset({name})
        self.on_read()
        found = self._definition(self.here, ast.Name(id=name))
        if found is None:
            return EMPTY
        owner, defined = found
        if defined in owner.classes:
            self._note(defined, owner, ast.Name(id=defined))
            return frozenset({defined})
        for statement in owner.statements:
            if (
                isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
                and statement.name == defined
            ):
                return self._types(owner, statement.returns)
        return EMPTY

    def attribute(self, types: Types, name: str) -> Types:
        """The type of attribute (or TypedDict key) ``name`` of a value of ``types``."""
        result: set[str] = set()
        for owner, member in self._members(types, name):
            if isinstance(member, ast.AnnAssign):
                result |= self._types(owner, member.annotation)
            elif has_decorator(member, "property") or has_decorator(member, "cached_property"):
                result |= self._types(owner, member.returns)
        return frozenset(result)

    def returned(self, types: Types, name: str) -> Types:
        """What calling method ``name`` of a value of ``types`` gives (``Self``: the type)."""
        result: set[str] = set()
        for type_name in _plain(types):
            for owner, member in self._members(frozenset({type_name}), name):
                if isinstance(member, ast.AnnAssign) or has_decorator(member, "property"):
                    continue
                given = self._types(owner, member.returns)
                result |= (given - {"Self"}) | ({type_name} if "Self" in given else set())
        return frozenset(result)

    def iterated(self, types: Types, asynchronous: bool) -> Types:
        """What iterating a value of ``types`` gives, through its ``__iter__``/``__aiter__``."""
        return elements(self.returned(types, "__aiter__" if asynchronous else "__iter__"))

    def entered(self, types: Types, asynchronous: bool) -> Types:
        """What ``with`` binds for a value of ``types``, through ``__enter__``/``__aenter__``."""
        return self.returned(types, "__aenter__" if asynchronous else "__enter__")

    # Lookups ----------------------------------------------------------------------------

    def _members(self, types: Types, name: str) -> list[tuple[ModuleSource, _Member]]:
        found: list[tuple[ModuleSource, _Member]] = []
        for type_name in _plain(types):
            located = self._class(type_name)
            if located is not None:
                member = _member(*located, name, depth=0, read=self._definition)
                if member is not None:
                    found.append(member)
        return found

    def _class(self, name: str) -> _Class | None:
        if name in self._classes:
            return self._classes[name]
        self.on_read()
        found: dict[tuple[str, str], _Class] = {}
        places: list[tuple[ModuleSource, ast.expr]] = [(self.here, ast.Name(id=name))]
        places.extend(self._seen_in.get(name, []))
        for source, expression in places:
            if isinstance(expression, ast.Name) and (
                name not in source.classes and source.imported(name) is None
            ):
                continue
            target = self._definition(source, expression)
            if target is None:
                continue
            owner, defined = target
            node = owner.classes.get(defined)
            if node is not None:
                found[(owner.name, defined)] = (owner, node)
        for places_of in (self._dotted, self._beside_imports):
            if found:
                break
            for source, expression in places_of(name):
                target = self._definition(source, expression)
                if target is not None and target[1] in target[0].classes:
                    owner, defined = target
                    found[(owner.name, defined)] = (owner, owner.classes[defined])
        located = next(iter(found.values())) if len(found) == 1 else None
        self._classes[name] = located
        return located

    def _definition(
        self, source: ModuleSource, expression: ast.expr
    ) -> tuple[ModuleSource, str] | None:
        """``definition``, for a name of a module of ``packages`` (or of ``source``)."""
        if self.packages is not None:
            qualified = source.qualified(expression)
            if qualified is None:
                return None
            defined_here = isinstance(expression, ast.Name) and (
                source.imported(expression.id) is None
            )
            if not defined_here and qualified.split(".")[0] not in self.packages:
                return None
        return definition(source, expression)

    def _dotted(self, name: str) -> list[tuple[ModuleSource, ast.expr]]:
        """``module.Name`` for each module the file imports whole (``import pkg.types as
        types``, ``from pkg import types``) that binds ``name``: what an annotation such
        as ``types.Result`` of the file names."""
        found: list[tuple[ModuleSource, ast.expr]] = []
        for local, qualified in self.here.imports.items():
            if not qualified.rpartition(".")[2][:1].islower():
                continue  # a class or a constant, not a module
            if self.packages is not None and qualified.split(".")[0] not in self.packages:
                continue
            try:
                module = self.here.reader.read_module(qualified)
            except ConfigError:
                continue
            if name in module.classes or module.imported(name) is not None:
                found.append((self.here, ast.Attribute(value=ast.Name(id=local), attr=name)))
        return found

    def _beside_imports(self, name: str) -> list[tuple[ModuleSource, ast.expr]]:
        """``name`` where a module the file imports from binds it: the member of a union
        alias imported from there (``from sdk.events import Event``), which a
        discriminator narrowed to (``event.type == "delta"``) without the file naming it."""
        found: list[tuple[ModuleSource, ast.expr]] = []
        modules = {qualified.rpartition(".")[0] for qualified in self.here.imports.values()}
        for module_name in sorted(modules - {""}):
            if self.packages is not None and module_name.split(".")[0] not in self.packages:
                continue
            try:
                module = self.here.reader.read_module(module_name)
            except ConfigError:
                continue
            if name in module.classes or module.imported(name) is not None:
                found.append((module, ast.Name(id=name)))
        return found

    def _types(self, source: ModuleSource, annotation: ast.expr | None) -> Types:
        """The types ``annotation`` of ``source`` names, each name remembered with the
        expression naming it there (to look its class up later)."""
        if annotation is None:
            return EMPTY
        aliases = self._aliases_of(source)
        types = annotation_types(annotation, aliases)
        if source is self.here:
            return types
        names = set(_plain(frozenset(name.replace(ELEMENT, "") for name in types)))
        pending, seen = [annotation], set()
        while pending and names:
            current = pending.pop()
            for node in ast.walk(current):
                last = _last(node)
                if last in names and isinstance(node, (ast.Name, ast.Attribute)):
                    self._note(last, source, node)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                    with suppress(SyntaxError):
                        pending.append(ast.parse(node.value.strip(), mode="eval").body)
                if isinstance(node, ast.Name) and node.id in aliases and node.id not in seen:
                    seen.add(node.id)
                    pending.append(aliases[node.id])
        return types

    def _note(self, name: str, source: ModuleSource, expression: ast.expr) -> None:
        places = self._seen_in.setdefault(name, [])
        if all(place is not source for place, _ in places):
            places.append((source, expression))
            self._classes.pop(name, None)

    def _aliases_of(self, source: ModuleSource) -> dict[str, ast.expr]:
        aliases = self._aliases.get(source.name)
        if aliases is None:
            aliases = self._aliases[source.name] = _union_aliases(source)
        return aliases


def _last(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _plain(types: Types) -> list[str]:
    return sorted(name for name in types if not name.startswith(ELEMENT))


def _member(
    source: ModuleSource,
    node: ast.ClassDef,
    name: str,
    depth: int,
    read: Callable[[ModuleSource, ast.expr], tuple[ModuleSource, str] | None] = definition,
) -> tuple[ModuleSource, _Member] | None:
    """Where class ``node`` (or a base) declares ``name``: an annotation or a def."""
    for statement in node.body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == name
        ):
            return source, statement
        if (
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name == name
            and not has_decorator(statement, "overload")
            and not (name.startswith("__") and _returns_nothing(statement))
        ):
            return source, statement
    if depth >= MAX_BASES:
        return None
    for base in node.bases:
        target = read(source, base.value if isinstance(base, ast.Subscript) else base)
        if target is None:
            continue
        owner, defined = target
        base_node = owner.classes.get(defined)
        if base_node is not None and base_node is not node:
            found = _member(owner, base_node, name, depth + 1, read)
            if found is not None:
                return found
    return None


def _returns_nothing(function: _Function) -> bool:
    return function.returns is None


def _union_aliases(source: ModuleSource) -> dict[str, ast.expr]:
    """The module-level aliases of ``source`` that name types (unions, ``TypeAlias``,
    ``TypeAliasType``, PEP 695 ``type``)."""
    aliases: dict[str, ast.expr] = {}
    for statement in source.statements:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            if not (
                isinstance(statement.annotation, (ast.Name, ast.Attribute))
                and getattr(statement.annotation, "id", getattr(statement.annotation, "attr", ""))
                == "TypeAlias"
            ):
                continue
            target, value = statement.target, statement.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        value = type_alias_value(source, value) or value
        if (isinstance(value, ast.BinOp) and isinstance(value.op, ast.BitOr)) or (
            isinstance(value, ast.Subscript)
            and isinstance(value.value, (ast.Name, ast.Attribute))
            and getattr(value.value, "id", getattr(value.value, "attr", ""))
            in ("Union", "Optional", "Annotated")
        ):
            aliases[target.id] = value
    return aliases
