"""Protocol implementations: the ``protocols`` table, and the classes that implement it.

Shared by the LR003 rule (which reports each implementation's departures from its
protocol) and ``python -m lint_rules protocols`` (which asks mypy about the same
implementations). ``parse_protocols`` validates ``[tool.lint_rules.protocols]`` and
reads each protocol from source; ``implementations_in`` gives, for one parsed file,
the classes that implement each protocol configured for it; ``Implementation.problems``
lists how one departs from its protocol. Nothing here imports the project.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.analysis.declarations import (
    Declarations,
    Member,
    ModuleSource,
    Parameter,
    ProtocolSpec,
    canonical_name,
    is_protocol,
    parameters,
    read_protocol,
    typing_name,
)
from lint_rules.rule import ConfigError

if TYPE_CHECKING:
    import pathspec

OPTION = "protocols"
"""The option (``[tool.lint_rules.protocols]``) naming each protocol and its files."""

_EXPLICIT_BASES = ("abc.ABC", "builtins.object", "object")

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class ProtocolTarget:
    """A configured protocol and the files where its implementations live."""

    protocol: ProtocolSpec
    patterns: tuple[str, ...]
    """The configured globs, matched against paths relative to the project root."""
    sources: frozenset[Path]
    """The module sources the protocol was read from."""

    def admits(self, text: str) -> bool:
        """Whether ``text`` may define an implementation: it names the protocol or its
        ABC, or more than half of its distinctive method names."""
        if any(name in text for name in (self.protocol.name, *self.protocol.abcs)):
            return True
        methods = distinctive_methods(self.protocol)
        return bool(methods) and sum(method.name in text for method in methods) * 2 > len(methods)

    def matches(self, path: Path, root: Path) -> bool:
        try:
            relative = path.resolve().relative_to(root).as_posix()
        except ValueError:
            return False
        return self.spec.match_file(relative)

    @cached_property
    def spec(self) -> pathspec.GitIgnoreSpec:
        """``patterns`` compiled, on first use (pathspec is not imported before)."""
        import pathspec

        return pathspec.GitIgnoreSpec.from_lines(self.patterns)


def distinctive_methods(protocol: ProtocolSpec) -> list[Member]:
    """The methods whose names tell a class that implements ``protocol`` without
    subclassing it: the protocol's methods but its dunders (``__call__``, ``__iter__``
    or ``__len__`` are on too many classes). Empty for a protocol of dunders only: its
    implementations are the classes that subclass it (or its ABC)."""
    return [method for method in protocol.methods if not _is_dunder(method.name)]


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def configured_targets(
    options: Mapping[str, object], declarations: Declarations | None = None
) -> list[ProtocolTarget]:
    """The targets of the ``protocols`` option in ``options`` (a rule-options table),
    the protocols read through ``declarations`` (a project's; default: from the working
    directory); none when it is absent."""
    return parse_protocols(options.get(OPTION, {}), declarations or Declarations(None))


def matching_targets(
    targets: Sequence[ProtocolTarget], path: Path, root: Path
) -> list[ProtocolTarget]:
    """The targets whose globs (relative to ``root``) list ``path``, in configured order."""
    return [target for target in targets if target.matches(path, root)]


def parse_protocols(table: object, declarations: Declarations) -> list[ProtocolTarget]:
    """Validate ``[tool.lint_rules.protocols]`` and read each protocol's source."""
    if not isinstance(table, dict):
        raise ConfigError(f'{OPTION!r} must be a table of "module:Protocol" = [globs]')
    targets = []
    for key, patterns in table.items():
        module, _, name = str(key).partition(":")
        if not module or not name.isidentifier():
            raise ConfigError(f"'protocols' {key!r}: expected \"module:Protocol\"")
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ConfigError(f"'protocols' {key!r}: expected a list of glob strings")
        try:
            with declarations.recording() as sources:
                protocol = read_protocol(module, name, declarations)
        except ConfigError as error:
            raise ConfigError(f"'protocols' {key!r}: {error}") from error
        targets.append(ProtocolTarget(protocol, tuple(patterns), frozenset(sources)))
    return targets


@dataclass(frozen=True)
class Problem:
    """One way an implementation departs from its protocol, at a class or a def."""

    node: ast.ClassDef | FunctionNode
    owner: str
    text: str
    expected: str


OBJECT_MEMBERS = frozenset(dir(object))
"""What every class has from ``object`` (``__eq__``, ``__hash__``, ``__repr__``...): never
missing, though a class's own definition of one is still checked."""


@dataclass(frozen=True)
class Implementation:
    """A class that implements a protocol, with what it defines and inherits."""

    node: ast.ClassDef
    protocol: ProtocolSpec
    methods: dict[str, list[FunctionNode]]
    """Methods the class defines itself, by name (several for overloads)."""
    available: frozenset[str]
    """Every member the class has: its own, its same-file bases', inherited ones."""
    complete: bool
    """Whether every base class was read, so that a member not found is missing."""
    qualname: str = ""
    """The class's qualified name in its module, as Python spells ``__qualname__``:
    ``Name``, ``Outer.Inner``, ``factory.<locals>.Local``."""

    @property
    def importable(self) -> bool:
        """Whether another module can name the class (it is not defined in a function)."""
        return "<locals>" not in self.qualname

    def problems(self) -> list[Problem]:
        """Missing members first (at the class), then each def's departures."""
        found: list[Problem] = []
        name = self.qualname or self.node.name
        for member in self.protocol.members.values():
            if (
                member.name not in self.available
                and member.name not in OBJECT_MEMBERS
                and self.complete
            ):
                found.append(Problem(self.node, name, f"misses `{member.name}`", member.signature))
        for member in self.protocol.methods:
            definitions = self.methods.get(member.name, [])
            if len(definitions) != 1:  # absent, or overloaded: mypy's business
                continue
            definition = definitions[0]
            owner = f"{name}.{member.name}"
            is_async = isinstance(definition, ast.AsyncFunctionDef)
            if is_async != member.is_async:
                text = "is not async" if member.is_async else "is async, the protocol's is not"
                found.append(Problem(definition, owner, text, member.signature))
                continue
            for text in parameter_changes(member.parameters, parameters(definition)):
                found.append(Problem(definition, owner, text, member.signature))
        return found


def find_implementations(source: ModuleSource, protocol: ProtocolSpec) -> list[Implementation]:
    """The classes of a file that implement ``protocol`` (subclass it or its ABC, or
    define more than half of its ``distinctive_methods``), in source order: module-level classes and
    classes nested in classes or functions at any depth."""
    methods = distinctive_methods(protocol)
    implementations = []
    for node, qualname, classes in source.nested_classes:
        if (
            source.name == protocol.module
            and qualname == node.name
            and (node.name == protocol.name or node.name in protocol.abcs)
        ):
            continue
        if is_protocol(source, node):
            continue  # a protocol extending this one declares, it does not implement
        defined = {
            s.name for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        own_methods = sum(member.name in defined for member in methods)
        if (methods and own_methods * 2 > len(methods)) or _inherited_targets(
            source, node, classes, protocol, seen=set()
        ):
            implementations.append(_describe(source, node, classes, protocol, qualname))
    return implementations


def parameter_changes(expected: Sequence[Parameter], actual: Sequence[Parameter]) -> list[str]:
    """How ``actual`` parameters depart from ``expected`` (the bound first one excluded)."""
    changes: list[str] = []
    kinds = {parameter.kind for parameter in actual}
    positional = [p for p in actual if p.kind in ("positional-only", "positional or keyword")]
    by_name = {parameter.name: parameter for parameter in actual}
    expected_positional = [
        p for p in expected if p.kind in ("positional-only", "positional or keyword")
    ]
    matched: set[str] = set()
    for index, wanted in enumerate(expected_positional):
        if index >= len(positional):
            if "*args" in kinds and (wanted.kind == "positional-only" or "**kwargs" in kinds):
                continue
            changes.append(f"misses parameter `{wanted.name}`")
            continue
        given = positional[index]
        matched.add(given.name)
        if wanted.kind == "positional or keyword" and given.name != wanted.name:
            changes.append(f"renames parameter `{wanted.name}` to `{given.name}`")
        elif wanted.kind == "positional or keyword" and given.kind == "positional-only":
            changes.append(f"makes parameter `{wanted.name}` positional-only")
        changes.extend(_default_change(wanted, given))
    for wanted in expected:
        if wanted.kind == "keyword-only":
            given_or_none = by_name.get(wanted.name)
            if given_or_none is None or given_or_none.kind not in (
                "keyword-only",
                "positional or keyword",
            ):
                if "**kwargs" not in kinds:
                    changes.append(f"misses keyword-only parameter `{wanted.name}`")
                continue
            matched.add(wanted.name)
            changes.extend(_default_change(wanted, given_or_none))
        elif wanted.kind in ("*args", "**kwargs") and wanted.kind not in kinds:
            changes.append(f"misses `{'*' if wanted.kind == '*args' else '**'}{wanted.name}`")
    for given in positional[len(expected_positional) :]:
        if given.default is None:
            changes.append(f"adds required parameter `{given.name}`")
    for given in actual:
        if given.kind == "keyword-only" and given.default is None and given.name not in matched:
            changes.append(f"adds required parameter `{given.name}`")
    return changes


def _default_change(wanted: Parameter, given: Parameter) -> list[str]:
    if wanted.default is None:
        return []
    if given.default is None:
        return [f"drops the default of parameter `{wanted.name}`"]
    if given.default != wanted.default:
        return [f"changes the default of parameter `{wanted.name}` to `{given.default}`"]
    return []


def _describe(
    source: ModuleSource,
    node: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    protocol: ProtocolSpec,
    qualname: str,
) -> Implementation:
    methods: dict[str, list[FunctionNode]] = {}
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods.setdefault(statement.name, []).append(statement)
    available: set[str] = set()
    complete = _collect_members(source, node, classes, protocol, available, seen=set())
    return Implementation(node, protocol, methods, frozenset(available), complete, qualname)


def _collect_members(
    source: ModuleSource,
    node: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    protocol: ProtocolSpec,
    available: set[str],
    seen: set[str],
) -> bool:
    """Add the members of ``node`` and its bases; False if some base could not be read."""
    seen.add(node.name)
    available.update(_own_members(node))
    complete = True
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        qualified = source.qualified(target)
        provided = _provided_by(source, qualified, protocol)
        if provided is not None:
            available.update(provided)
        elif isinstance(target, ast.Name) and target.id in classes and target.id not in seen:
            complete &= _collect_members(
                source, classes[target.id], classes, protocol, available, seen
            )
        elif qualified not in _EXPLICIT_BASES and typing_name(source, target) != "Generic":
            complete = False
    return complete


def _inherited_targets(
    source: ModuleSource,
    node: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    protocol: ProtocolSpec,
    seen: set[str],
) -> bool:
    """Whether ``node`` subclasses the protocol or its ABC, directly or through a
    class of the same file."""
    seen.add(node.name)
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if _provided_by(source, source.qualified(target), protocol) is not None:
            return True
        if (
            isinstance(target, ast.Name)
            and target.id in classes
            and target.id not in seen
            and _inherited_targets(source, classes[target.id], classes, protocol, seen)
        ):
            return True
    return False


def _provided_by(
    source: ModuleSource, qualified: str | None, protocol: ProtocolSpec
) -> frozenset[str] | None:
    """What subclassing ``qualified`` (a base named in ``source``) provides, if it names
    the protocol or its ABC."""
    if qualified is None:
        return None
    for name, provided in protocol.provided.items():
        target = f"{protocol.module}.{name}"
        if qualified == target or (
            qualified.endswith(f".{name}") and canonical_name(qualified, source.reader) == target
        ):
            return provided
    return None


def _own_members(node: ast.ClassDef) -> set[str]:
    """Names a class body binds, and ``self.<name>`` attributes its methods assign."""
    names: set[str] = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(statement.name)
            first = statement.args.posonlyargs or statement.args.args
            if first:
                names.update(_assigned_attributes(statement, first[0].arg))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    return names


def _assigned_attributes(function: FunctionNode, receiver: str) -> set[str]:
    names = set()
    for child in ast.walk(function):
        targets: list[ast.expr] = []
        if isinstance(child, ast.Assign):
            targets = child.targets
        elif isinstance(child, (ast.AnnAssign, ast.AugAssign)):
            targets = [child.target]
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == receiver
            ):
                names.add(target.attr)
    return names
