"""Protocol implementations: the ``protocols`` table, and the classes that implement it.

Shared by the LR003 rule (which reports each implementation's departures from its
protocol) and ``python -m lint_rules protocols`` (which asks mypy about the same
implementations). ``parse_protocols`` validates ``[tool.lint_rules.protocols]`` and
reads each protocol from source; ``judge`` gives, for one parsed file, the classes that
implement the protocols configured for it, each with the protocol it is judged against
and how it departs from it (``Implementation.problems``). Nothing here imports the project.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    is_generator,
    is_protocol,
    parameters,
    read_protocol,
    typing_name,
)
from lint_rules.analysis.results import call_change, result_change, shape
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
        ABC, or every one of its distinctive method names."""
        if any(name in text for name in (self.protocol.name, *self.protocol.abcs)):
            return True
        methods = distinctive_methods(self.protocol)
        return bool(methods) and all(method.name in text for method in methods)

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
    call: str | None = None
    """The method's name, when its result cannot be used as the protocol's (sync for
    async, a coroutine for an async iterator...): the mark of a class meant as the
    protocol's twin."""


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
    source: ModuleSource | None = field(default=None, compare=False, repr=False)
    """The module that defines the class (where its annotations' names resolve)."""

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
            call, result = self._result_changes(member, definition)
            if call is not None:  # another shape of method: its parameters are beside the point
                found.append(Problem(definition, owner, call, member.signature, member.name))
                continue
            for text in parameter_changes(member.parameters, parameters(definition)):
                found.append(Problem(definition, owner, text, member.signature))
            if result is not None:
                found.append(Problem(definition, owner, result, member.signature))
        return found

    def _result_changes(
        self, member: Member, definition: FunctionNode
    ) -> tuple[str | None, str | None]:
        """What a caller of ``member`` cannot do with ``definition``'s result: await or
        iterate it as the protocol says (first), use it as the protocol's return type."""
        source = self.source
        if source is None:
            return None, None
        try:
            protocol_source = source.reader.read_module(member.module or self.protocol.module)
        except ConfigError:
            protocol_source = None
        returns = None
        if member.returns is not None and protocol_source is not None:
            returns = ast.parse(member.returns, mode="eval").body
        wanted = shape(member.is_async, member.is_generator, returns, protocol_source or source)
        given = shape(
            isinstance(definition, ast.AsyncFunctionDef),
            is_generator(definition),
            definition.returns,
            source,
        )
        change = call_change(wanted, given)
        if change is not None or protocol_source is None:
            return change, None
        return None, result_change(wanted, protocol_source, given, source)


@dataclass(frozen=True)
class Judgement:
    """A class judged against the protocol it implements, and how it departs from it."""

    implementation: Implementation
    problems: list[Problem]
    candidates: tuple[str, ...] = ()
    """When the class matched several protocols structurally and conforms to none: the
    qualified names of them all (``implementation`` is against the closest)."""


def judge(source: ModuleSource, protocols: Sequence[ProtocolSpec]) -> list[Judgement]:
    """Each class of a file that implements one of ``protocols``, judged, in source order:
    module-level classes and classes nested in classes or functions at any depth.

    A class implements a protocol when it is *meant* as one:
    - it subclasses the protocol or its ABC (directly or through classes of the file), or
      an instance of it is assigned, passed or returned in the file where the protocol
      is annotated (``x: P = C()``, ``def f() -> P: return C()``, ``f(C())`` with
      ``def f(x: P)``): it is judged against each such protocol;
    - otherwise, it defines (itself or through classes of the file) every method of the
      protocol, dunders included, and the protocol has a method other than a dunder;
      with fewer than ``NAMES_ENOUGH`` such methods, one of them must also be defined
      as the protocol declares it (names such as ``get`` or ``cancel`` tell nothing).
      When it does so for several protocols (twins such as a
      sync ``Driver`` and an ``AsyncDriver`` with the same method names), it is judged
      against those it can be called as (``_meant``), and when it can be called as none,
      against the closest (the fewest problems; the first configured on a tie).
    A class that defines only some of a protocol's methods is not an implementation.
    """
    uses = annotated_uses(source, protocols)
    judgements: list[Judgement] = []
    for node, qualname, classes in source.nested_classes:
        if is_protocol(source, node):
            continue  # a protocol extending another declares, it does not implement
        explicit: list[ProtocolSpec] = []
        structural: list[ProtocolSpec] = []
        for protocol in protocols:
            if (
                source.name == protocol.module
                and qualname == node.name
                and (node.name == protocol.name or node.name in protocol.abcs)
            ):
                continue
            if _inherited_targets(source, node, classes, protocol, seen=set()) or (
                _used_as(node, classes, uses, protocol.qualified_name, seen=set())
            ):
                explicit.append(protocol)
            elif _defines_every_method(source, node, classes, protocol):
                structural.append(protocol)
        structural = [
            protocol
            for protocol in structural
            if len(distinctive_methods(protocol)) >= NAMES_ENOUGH
            or _agrees_somewhere(_describe(source, node, classes, protocol, qualname))
        ]
        if explicit:
            for protocol in explicit:
                implementation = _describe(source, node, classes, protocol, qualname)
                judgements.append(Judgement(implementation, implementation.problems()))
            continue
        judged = []
        for protocol in structural:
            implementation = _describe(source, node, classes, protocol, qualname)
            judged.append(Judgement(implementation, implementation.problems()))
        judgements.extend(_meant(judged))
    return judgements


def _meant(judged: list[Judgement]) -> list[Judgement]:
    """Of the protocols a class fits by its methods, those it is meant as: a protocol
    whose methods it can be called as (no sync-for-async change) is; one it cannot be
    called as is not, when another it can shares a method name with it (the twin it
    matches). When it can be called as none, only the closest is kept (the fewest
    problems), naming them all."""
    if len(judged) <= 1:
        return judged
    callable_as = [j for j in judged if not any(p.call for p in j.problems)]
    if not callable_as:
        closest = min(judged, key=lambda judgement: len(judgement.problems))
        names = tuple(judgement.implementation.protocol.qualified_name for judgement in judged)
        return [Judgement(closest.implementation, closest.problems, names)]
    matched = {name for j in callable_as for name in j.implementation.protocol.members}
    return [
        judgement
        for judgement in judged
        if judgement in callable_as or not {p.call for p in judgement.problems if p.call} & matched
    ]


NAMES_ENOUGH = 3
"""How many methods (dunders aside) a protocol needs for a class that defines them all to
be taken for an implementation by their names alone; with fewer (a `get`, a `cancel`, an
`iter_bytes` and an `aiter_bytes`), one of them must also agree with the protocol's."""


def _agrees_somewhere(implementation: Implementation) -> bool:
    """Whether one of the protocol's methods is defined as the protocol declares it."""
    problems = {problem.owner for problem in implementation.problems()}
    name = implementation.qualname or implementation.node.name
    return any(
        f"{name}.{member.name}" not in problems
        and len(implementation.methods.get(member.name, [])) == 1
        for member in implementation.protocol.methods
    )


def _defines_every_method(
    source: ModuleSource,
    node: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    protocol: ProtocolSpec,
) -> bool:
    if not distinctive_methods(protocol):
        return False  # dunders only: every class has a `__call__` or an `__iter__`
    names = _body_names(node, classes, seen=set())
    return all(method.name in names for method in protocol.methods)


def _body_names(node: ast.ClassDef, classes: dict[str, ast.ClassDef], seen: set[str]) -> set[str]:
    """What the bodies of ``node`` and its bases of the same file bind (cheap: no method
    body is read)."""
    seen.add(node.name)
    names: set[str] = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(statement.name)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
        elif isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(target, ast.Name) and target.id in classes and target.id not in seen:
            names |= _body_names(classes[target.id], classes, seen)
    return names


def annotated_uses(source: ModuleSource, protocols: Sequence[ProtocolSpec]) -> dict[str, set[str]]:
    """Class name -> the protocols (qualified names) an instance of it (``C(...)``) or the
    class itself is assigned, passed or returned as, where the protocol is annotated in
    this file: ``x: P = C()``, ``x: P`` then ``x = C()``, ``return C()`` in a function
    annotated ``-> P``, ``f(C())`` or ``f(x=C())`` for a ``def f(x: P)`` of the file."""
    names = {protocol.name for protocol in protocols}
    uses: dict[str, set[str]] = {}
    if not _may_name(source, protocols):
        return uses

    def protocol_of(annotation: ast.expr | None) -> str | None:
        if annotation is None:
            return None
        for member in _annotation_members(annotation):
            if not isinstance(member, (ast.Name, ast.Attribute)):
                continue
            name = member.id if isinstance(member, ast.Name) else member.attr
            if name not in names:
                continue
            qualified = source.qualified(member)
            if qualified is None:
                continue
            for protocol in protocols:
                if name == protocol.name and (
                    qualified == protocol.qualified_name
                    or canonical_name(qualified, source.reader) == protocol.qualified_name
                ):
                    return protocol.qualified_name
        return None

    def record(value: ast.expr | None, protocol: str | None) -> None:
        if value is None or protocol is None:
            return
        target = value.func if isinstance(value, ast.Call) else value
        if isinstance(target, ast.Name):
            uses.setdefault(target.id, set()).add(protocol)

    annotated: dict[str, str] = {}
    functions: dict[str, FunctionNode] = {}
    for child in ast.walk(source.tree):
        if isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
            protocol = protocol_of(child.annotation)
            if protocol is not None:
                annotated[child.target.id] = protocol
                record(child.value, protocol)
        elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(child.name, child)
            returned = protocol_of(child.returns)
            if returned is not None:
                for statement in _own_returns(child):
                    record(statement.value, returned)
            for argument in (*child.args.posonlyargs, *child.args.args, *child.args.kwonlyargs):
                protocol = protocol_of(argument.annotation)
                if protocol is not None:
                    annotated.setdefault(argument.arg, protocol)
    if not annotated and not functions:
        return uses
    for child in ast.walk(source.tree):
        if isinstance(child, ast.Assign):
            for target in child.targets:
                if isinstance(target, ast.Name) and target.id in annotated:
                    record(child.value, annotated[target.id])
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            function = functions.get(child.func.id)
            if function is None:
                continue
            positional = [*function.args.posonlyargs, *function.args.args]
            for index, value in enumerate(child.args):
                if index < len(positional):
                    record(value, protocol_of(positional[index].annotation))
            by_name = {a.arg: a for a in (*positional, *function.args.kwonlyargs)}
            for keyword in child.keywords:
                parameter = by_name.get(keyword.arg or "")
                if parameter is not None:
                    record(keyword.value, protocol_of(parameter.annotation))
    return uses


def _may_name(source: ModuleSource, protocols: Sequence[ProtocolSpec]) -> bool:
    """Whether ``source`` can name one of ``protocols``: it defines one, or imports one,
    a module or package on its way, or a name of the same spelling (a re-export)."""
    imported = source.imports
    for protocol in protocols:
        if source.name == protocol.module or protocol.name in imported:
            return True
        for qualified in imported.values():
            if protocol.module == qualified or protocol.module.startswith(f"{qualified}."):
                return True
    return False


def _annotation_members(annotation: ast.expr) -> list[ast.expr]:
    """``P``, and ``P`` in ``P | None``, ``Optional[P]``, ``Union[P, Q]``, ``"P"``."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return _annotation_members(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return []
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return [*_annotation_members(annotation.left), *_annotation_members(annotation.right)]
    if isinstance(annotation, ast.Subscript):
        origin = annotation.value
        name = origin.id if isinstance(origin, ast.Name) else getattr(origin, "attr", "")
        if name in ("Optional", "Union"):
            index = annotation.slice
            items = index.elts if isinstance(index, ast.Tuple) else [index]
            return [member for item in items for member in _annotation_members(item)]
        return []
    return [annotation]


def _own_returns(function: FunctionNode) -> list[ast.Return]:
    """The ``return`` statements of ``function`` itself (not of functions nested in it)."""
    found: list[ast.Return] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        child = pending.pop()
        if isinstance(child, ast.Return):
            found.append(child)
        elif not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            pending.extend(ast.iter_child_nodes(child))
    return found


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
            if "*args" in kinds:  # mypy: `*args` takes what a caller passes by position
                continue
            moved = by_name.get(wanted.name)
            if moved is not None and moved.kind == "keyword-only":
                matched.add(moved.name)
                changes.append(f"makes parameter `{wanted.name}` keyword-only")
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
            if given_or_none is not None and given_or_none.kind == "positional-only":
                matched.add(wanted.name)
                changes.append(f"makes keyword-only parameter `{wanted.name}` positional-only")
                continue
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
        if given.default is None and given.name not in matched:
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
    return Implementation(node, protocol, methods, frozenset(available), complete, qualname, source)


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


def _used_as(
    node: ast.ClassDef,
    classes: dict[str, ast.ClassDef],
    uses: dict[str, set[str]],
    protocol: str,
    seen: set[str],
) -> bool:
    """Whether ``node``, or a class of the same file it subclasses, is used where
    ``protocol`` is annotated: a subclass of an implementation is one (mypy checks its
    overrides against its base)."""
    if protocol in uses.get(node.name, ()):
        return True
    seen.add(node.name)
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if (
            isinstance(target, ast.Name)
            and target.id in classes
            and target.id not in seen
            and _used_as(classes[target.id], classes, uses, protocol, seen)
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
