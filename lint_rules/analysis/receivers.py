"""What is known about the receiver of an attribute: receiver typing on the stdlib ``ast``.

``receiver_types(tree, knowledge, wanted)`` walks one module once, statement by
statement, carrying what is known about each name (and dotted name such as
``self.event``) at that point, and returns the types known for each ``wanted``
expression where it is evaluated. A type is a class's simple name
(``RunItemStreamEvent``, whatever module it is imported from); ``[]`` before a
name means a collection or iterator of it (``list[X]``, ``AsyncIterator[X]``).

What makes a name known:

- an annotation: a parameter, a variable, a class attribute or ``self.x: X``
  (seen by every method of the class), a local alias (``Event = A | B``), a name
  imported under another (``from m import ContentBlock as Block``: a ``Block`` is a
  ``ContentBlock``, in the module or in the function that imports it);
- an assignment from a call of a function of this module with a return
  annotation, of a known class, or of a producer (``Knowledge.producers``), and
  ``await`` of one; a ``for`` target (or a comprehension's) over a known
  collection; ``events[0]`` of one;
- narrowing: ``isinstance(x, X)`` and ``x.kind == "value"`` for a discriminator
  value (``Knowledge.discriminators``), in ``if``/``elif``/``while``/``assert``,
  ``and``/``or``/``not``, conditional expressions and comprehension filters,
  after an ``if`` whose branch always leaves (``continue``, ``return``...), and
  ``match`` cases (``case X(...)``, ``case "value"`` on ``x.kind``).

- with ``Members`` (``members.py``): what other modules (of the project and of the
  configured packages) declare, read lazily: the
  return annotation of an imported function, of a method of a known class (``self``
  is its class), an attribute, property or TypedDict key of one (``x.get("key")``
  too), ``with`` (``__enter__``) and iterating (``__iter__``) a known class.
  Only for names a wanted expression's type may depend on (``_relevant``: a
  flow-insensitive closure over assignments, loops and ``with``, through callees,
  never call arguments), so that nothing else is looked up.

Anything else is unknown: the analysis never guesses. It is flow-sensitive but
simple: a loop body is walked once, branches that both continue merge by union
and forget a name known in only one of them.
"""

from __future__ import annotations

import ast
from bisect import bisect_left
from collections.abc import Collection, Iterable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lint_rules.analysis.members import Members

Types = frozenset[str]
State = dict[str, Types]

EMPTY: Types = frozenset()
ELEMENT = "[]"
"""Prefix of a type: a collection or iterator of the named type."""

_UNIONS = frozenset({"Union", "Optional"})
_WRAPPERS = frozenset(
    {"Annotated", "Final", "ClassVar", "Required", "NotRequired", "ReadOnly", "Awaitable"}
)
_COLLECTIONS = frozenset(
    {"list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "AsyncIterator",
     "AsyncIterable", "Generator", "AsyncGenerator", "set", "Set", "frozenset", "FrozenSet",
     "AbstractSet", "MutableSet", "Collection", "deque", "Deque", "tuple", "Tuple",
     "Reversible"}
)  # fmt: skip
_LEAVING = (ast.Return, ast.Raise, ast.Continue, ast.Break)


@dataclass(frozen=True)
class Knowledge:
    """What the configuration and the declaring modules tell about the classes."""

    classes: frozenset[str] = frozenset()
    """Class names whose call gives an instance (``X(...)`` is an ``X``)."""
    discriminators: Mapping[tuple[str, str], Types] = field(default_factory=dict)
    """``(attribute, value)`` -> the classes an object with that attribute value is."""
    producers: Mapping[str, Types] = field(default_factory=dict)
    """A function or method name -> the types of what its call returns."""


def annotation_types(annotation: ast.expr | None, aliases: Mapping[str, ast.expr]) -> Types:
    """The types an annotation names (see the module docstring)."""
    return _annotation(annotation, aliases, frozenset())


def _annotation(annotation: ast.expr | None, aliases: Mapping[str, ast.expr], seen: Types) -> Types:
    if annotation is None:
        return EMPTY
    if isinstance(annotation, ast.Constant):
        if not isinstance(annotation.value, str):
            return EMPTY
        try:
            parsed = ast.parse(annotation.value.strip(), mode="eval").body
        except SyntaxError:
            return EMPTY
        return _annotation(parsed, aliases, seen)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _annotation(annotation.left, aliases, seen) | _annotation(
            annotation.right, aliases, seen
        )
    if isinstance(annotation, ast.Subscript):
        origin = _last_name(annotation.value)
        index = annotation.slice
        arguments = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        if origin in _UNIONS:
            return frozenset().union(*(_annotation(a, aliases, seen) for a in arguments))
        if origin in _WRAPPERS:
            return _annotation(arguments[0], aliases, seen)
        if origin in _COLLECTIONS:
            members = arguments if origin in ("tuple", "Tuple") else arguments[:1]
            inner = frozenset().union(*(_annotation(a, aliases, seen) for a in members))
            return frozenset(ELEMENT + name for name in inner)
        if (
            isinstance(annotation.value, ast.Name)
            and origin is not None
            and origin in aliases
            and origin not in seen
        ):
            # a generic alias given its parameters (`Event[int]`): what the alias names
            return _annotation(aliases[origin], aliases, seen | {origin})
        return EMPTY if origin is None or origin == "type" else frozenset({origin})
    name = _last_name(annotation)
    if name is None:
        return EMPTY
    if isinstance(annotation, ast.Name) and name in aliases and name not in seen:
        return _annotation(aliases[name], aliases, seen | {name})
    return frozenset({name})


def renamed_imports(body: Iterable[ast.stmt]) -> dict[str, str]:
    """``{"Block": "ContentBlock"}`` for each ``from m import ContentBlock as Block`` among
    ``body``'s statements (and those under its ``if``/``try``, e.g. ``TYPE_CHECKING``, not
    in nested functions or classes): a type is its class's simple name, so a name bound
    by such an import stands for the imported one. A later plain import of a name (or
    one renaming another thing to it) replaces what it stood for."""
    renamed: dict[str, str] = {}
    pending = list(body)
    pending.reverse()
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If):
            pending.extend(reversed([*node.body, *node.orelse]))
        elif isinstance(node, ast.Try):
            handlers = [child for handler in node.handlers for child in handler.body]
            pending.extend(reversed([*node.body, *handlers, *node.orelse, *node.finalbody]))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    continue
                bound = alias.asname or alias.name
                if bound != alias.name:
                    renamed[bound] = alias.name
                else:
                    renamed.pop(bound, None)
    return renamed


def _type_alias_value(value: ast.expr) -> ast.expr:
    """The value of ``TypeAliasType("Name", value, type_params=...)``, else ``value``."""
    if isinstance(value, ast.Call) and _last_name(value.func) == "TypeAliasType":
        if len(value.args) >= 2:
            return value.args[1]
        return next((k.value for k in value.keywords if k.arg == "value"), value)
    return value


def elements(types: Types) -> Types:
    """The types of what iterating over a value of ``types`` gives."""
    return frozenset(name[len(ELEMENT) :] for name in types if name.startswith(ELEMENT))


def receiver_types(
    tree: ast.Module,
    knowledge: Knowledge,
    wanted: Collection[ast.expr],
    members: Members | None = None,
) -> dict[int, Types]:
    """The types known for each ``wanted`` expression (by ``id``) where it is evaluated;
    an expression nothing is known about is left out. ``members``: what the classes and
    functions the module uses declare, wherever they are (without: only this module's)."""
    walker = _Walker(tree, knowledge, wanted, members)
    with suppress(RecursionError):  # absurdly nested code: what was found so far stands
        walker.block(tree.body, {})
    return walker.found


def key_of(node: ast.expr) -> str | None:
    """``x``, ``x.y.z`` or ``x[0].y`` for a name followed by attributes and constant
    integer indexes, else None."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append("." + node.attr)
            node = node.value
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int
        ):
            parts.append(f"[{node.slice.value}]")
            node = node.value
        else:
            break
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return "".join(reversed(parts))


def _names(node: ast.expr) -> set[str]:
    return {child.id for child in ast.walk(node) if isinstance(child, ast.Name)}


def _type_names(node: ast.expr) -> set[str]:
    """The names the type of ``node`` may depend on: of a call, its callee's (not its
    arguments'); of a comprehension, its element's and its iterables'."""
    found: set[str] = set()
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.Name):
            found.add(current.id)
        elif isinstance(
            current, (ast.Attribute, ast.Subscript, ast.Await, ast.Starred, ast.NamedExpr)
        ):
            pending.append(current.value)
        elif isinstance(current, ast.Call):
            pending.append(current.func)
        elif isinstance(current, ast.IfExp):
            pending.extend((current.body, current.orelse))
        elif isinstance(current, ast.BoolOp):
            pending.extend(current.values)
        elif isinstance(current, (ast.List, ast.Tuple, ast.Set)):
            pending.extend(current.elts)
        elif isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            pending.append(current.elt)
            for generator in current.generators:
                pending.append(generator.iter)
                found |= _names(generator.target)
    return found


def _expressions(statement: ast.stmt) -> list[ast.expr]:
    """The expressions of ``statement`` itself (not of the statements in its body)."""
    return [
        child
        for name, child in ast.iter_fields(statement)
        if isinstance(child, ast.expr) and name not in ("body", "orelse", "finalbody")
    ] + [
        item.context_expr
        for item in getattr(statement, "items", ())
        if isinstance(item, ast.withitem)
    ]


def _imports_from(body: list[ast.stmt]) -> bool:
    """Whether ``body`` or a statement nested in it (nested functions and classes
    included) is a ``from ... import``: only statements are looked at, the expressions
    holding none."""
    pending = list(body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, ast.ImportFrom):
            return True
        for name in _BODIES:
            for child in getattr(statement, name, ()):
                if isinstance(child, ast.stmt):
                    pending.append(child)
                else:  # an ``except`` handler or a ``case``
                    pending.extend(child.body)
    return False


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
"""The fields of a statement that hold statements (or handlers and cases holding them)."""


def has_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str) -> bool:
    if isinstance(node, ast.Lambda):
        return False
    return any(
        _last_name(d.func if isinstance(d, ast.Call) else d) == name for d in node.decorator_list
    )


def _last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _merge(states: Iterable[State | None]) -> State | None:
    """What holds after any of ``states`` (None: a path that left)."""
    reached = [state for state in states if state is not None]
    if not reached:
        return None
    merged = dict(reached[0])
    for state in reached[1:]:
        for key in list(merged):
            if key in state:
                merged[key] = merged[key] | state[key]
            else:
                del merged[key]
    return merged


def _forget(state: State, key: str) -> None:
    """``key`` is rebound: nothing is known about it or what hangs off it any more."""
    for known in [k for k in state if k == key or k.startswith((key + ".", key + "["))]:
        del state[known]


def _bind(state: State, key: str, types: Types) -> None:
    _forget(state, key)
    if types:
        state[key] = types


def _string(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Walker:
    def __init__(
        self,
        tree: ast.Module,
        knowledge: Knowledge,
        wanted: Collection[ast.expr],
        members: Members | None = None,
    ) -> None:
        self.knowledge = knowledge
        self.members = members
        self.wanted = {id(node) for node in wanted}
        self.wanted_nodes = list(wanted)
        self.lines = sorted({node.lineno for node in wanted})
        """The lines of the wanted expressions: code spanning none of them is only walked
        for what it binds (a function or class body not at all)."""
        self.found: dict[int, Types] = {}
        self.comprehensions: dict[int, Types] = {}
        self.aliases: dict[str, ast.expr] = {}
        self.functions: dict[str, Types] = {}
        self.class_stack: list[tuple[dict[str, Types], dict[str, Types], str | None]] = []
        for statement in tree.body:
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target = statement.targets[0]
                value = _type_alias_value(statement.value)
                if isinstance(target, ast.Name) and self._is_type_expression(value):
                    self.aliases[target.id] = value
            elif (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and statement.value is not None
                and _last_name(statement.annotation) == "TypeAlias"
            ):
                self.aliases[statement.target.id] = statement.value
            elif type(statement).__name__ == "TypeAlias":  # Python 3.12+ `type X = ...`
                self.aliases[statement.name.id] = statement.value  # type: ignore[attr-defined]
        for bound, name in renamed_imports(tree.body).items():
            self.aliases.setdefault(bound, ast.Name(id=name, ctx=ast.Load()))
        self.relevant = self._relevant(tree)
        """Names whose value may reach a wanted expression: the others' types are never
        computed (nor what other modules declare looked up for them)."""
        self.top_classes: list[ast.ClassDef] = []
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[statement.name] = self.annotation(statement.returns)
            elif isinstance(statement, ast.ClassDef):
                self.top_classes.append(statement)

    def _relevant(self, tree: ast.Module) -> set[str]:
        """The names a wanted expression's type depends on, and (flow-insensitively) those
        the types of what binds one of them depend on (``_type_names``: a call's callee,
        not its arguments). Statements are visited, not expressions, except on the lines
        of wanted expressions (their comprehensions and ``:=``)."""
        relevant: set[str] = set()
        for wanted in self.wanted_nodes:
            relevant |= _type_names(wanted)
        edges: list[tuple[set[str], set[str]]] = []
        pending: list[ast.stmt] = list(tree.body)
        while pending:
            statement = pending.pop()
            if isinstance(
                statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ) and not self.spans_wanted(statement):
                continue
            pairs: list[tuple[ast.expr, ast.expr]] = []
            if isinstance(statement, ast.Assign):
                pairs = [(target, statement.value) for target in statement.targets]
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                pairs = [(statement.target, statement.value)]
            elif isinstance(statement, (ast.For, ast.AsyncFor)):
                pairs = [(statement.target, statement.iter)]
            elif isinstance(statement, (ast.With, ast.AsyncWith)):
                pairs = [
                    (item.optional_vars, item.context_expr)
                    for item in statement.items
                    if item.optional_vars is not None
                ]
            for target, value in pairs:
                edges.append((_names(target), _type_names(value)))
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                for child in getattr(statement, name, ()):
                    pending.extend(child.body if not isinstance(child, ast.stmt) else [child])
            if self._on_wanted_line(statement):
                for node in _expressions(statement):
                    for inner in ast.walk(node):
                        if isinstance(inner, ast.comprehension):
                            edges.append((_names(inner.target), _type_names(inner.iter)))
                        elif isinstance(inner, ast.NamedExpr):
                            edges.append((_names(inner.target), _type_names(inner.value)))
        changed = True
        while changed:
            changed = False
            for targets, values in edges:
                if not targets.isdisjoint(relevant) and not values <= relevant:
                    relevant |= values
                    changed = True
        return relevant

    def _on_wanted_line(self, statement: ast.stmt) -> bool:
        """Whether a wanted expression starts on one of the lines of ``statement`` that
        are not in its body (the test or header of a compound statement)."""
        body = getattr(statement, "body", None)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        end = body[0].lineno - 1 if isinstance(body, list) and body else statement.end_lineno
        first = bisect_left(self.lines, statement.lineno)
        return first < len(self.lines) and self.lines[first] <= (end or statement.lineno)

    def matters(self, target: ast.expr) -> bool:
        """Whether what ``target`` is bound to may reach a wanted expression."""
        return not _names(target).isdisjoint(self.relevant)

    def spans_wanted(self, node: ast.AST) -> bool:
        """Whether ``node``'s lines hold the start of a wanted expression."""
        first = bisect_left(self.lines, node.lineno)  # type: ignore[attr-defined]
        end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return first < len(self.lines) and self.lines[first] <= end

    @staticmethod
    def _is_type_expression(value: ast.expr) -> bool:
        if isinstance(value, ast.BinOp):
            return isinstance(value.op, ast.BitOr)
        return isinstance(value, ast.Subscript) and _last_name(value.value) in _UNIONS

    def annotation(self, annotation: ast.expr | None) -> Types:
        return annotation_types(annotation, self.aliases)

    # Statements -------------------------------------------------------------------

    def block(self, body: list[ast.stmt], state: State) -> State | None:
        """Walk ``body`` from ``state``; what holds after it, None if it always leaves."""
        current: State | None = state
        for statement in body:
            if current is None:
                current = dict(state)  # unreachable code: walked with what held before
            current = self.statement(statement, current)
        return current

    def statement(self, node: ast.stmt, state: State) -> State | None:
        if isinstance(node, ast.If):
            self.expression(node.test, state)
            body = self.block(node.body, self.narrow(node.test, state, positive=True))
            orelse = self.block(node.orelse, self.narrow(node.test, state, positive=False))
            return _merge([body, orelse])
        if isinstance(node, (ast.For, ast.AsyncFor)):
            self.expression(node.iter, state)
            inner = dict(state)
            self.bind_target(
                node.target,
                self.iterated(node.iter, state, isinstance(node, ast.AsyncFor))
                if self.matters(node.target)
                else EMPTY,
                inner,
            )
            body = self.block(node.body, inner)
            after = dict(state)
            self.bind_target(node.target, EMPTY, after)
            entered = _merge([after, body])
            orelse = self.block(node.orelse, entered if entered is not None else after)
            return _merge([after, body, orelse]) if orelse is not None else None
        if isinstance(node, ast.While):
            self.expression(node.test, state)
            body = self.block(node.body, self.narrow(node.test, state, positive=True))
            leaving = self.narrow(node.test, state, positive=False)
            self.block(node.orelse, leaving)
            return _merge([leaving, body])
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(node, state)
            after = dict(state)
            _forget(after, node.name)
            return after
        if isinstance(node, ast.ClassDef):
            self.class_definition(node, state)
            after = dict(state)
            _forget(after, node.name)
            return after
        if isinstance(node, ast.Assign):
            self.expression(node.value, state)
            types = (
                self.type_of(node.value, state)
                if any(self.matters(target) for target in node.targets)
                else EMPTY
            )
            after = dict(state)
            for target in node.targets:
                self.expression(target, state)
                self.bind_target(target, types, after)
            return after
        if isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.expression(node.value, state)
            self.expression(node.target, state)
            after = dict(state)
            key = key_of(node.target)
            if key is not None:
                _bind(after, key, self.annotation(node.annotation))
            return after
        if isinstance(node, ast.AugAssign):
            self.expression(node.value, state)
            self.expression(node.target, state)
            after = dict(state)
            self.bind_target(node.target, EMPTY, after)
            return after
        if isinstance(node, (ast.With, ast.AsyncWith)):
            after = dict(state)
            for item in node.items:
                self.expression(item.context_expr, state)
                if item.optional_vars is not None:
                    given: Types = EMPTY
                    if self.members is not None and self.matters(item.optional_vars):
                        given = self.members.entered(
                            self.type_of(item.context_expr, state),
                            isinstance(node, ast.AsyncWith),
                        )
                    self.bind_target(item.optional_vars, given, after)
            return self.block(node.body, after)
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            return self.try_statement(node, state)  # type: ignore[arg-type]
        if isinstance(node, ast.Match):
            return self.match(node, state)
        if isinstance(node, ast.Assert):
            self.expression(node.test, state)
            if node.msg is not None:
                self.expression(node.msg, state)
            return self.narrow(node.test, state, positive=True)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expression(child, state)
        if isinstance(node, _LEAVING):
            return None
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Delete)):
            after = dict(state)
            for name in self._bound_by(node):
                _forget(after, name)
            return after
        return state

    @staticmethod
    def _bound_by(node: ast.stmt) -> list[str]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return list(node.names)
        if isinstance(node, ast.Delete):
            return [key for target in node.targets if (key := key_of(target)) is not None]
        return []

    def try_statement(self, node: ast.Try, state: State) -> State | None:
        body = self.block(node.body, dict(state))
        ends = [self.block(node.orelse, body) if body is not None else None]
        for handler in node.handlers:
            if handler.type is not None:
                self.expression(handler.type, state)
            inner = dict(state)
            if handler.name:
                _forget(inner, handler.name)
            ends.append(self.block(handler.body, inner))
        after = _merge(ends)
        if node.finalbody:
            final = self.block(node.finalbody, after if after is not None else dict(state))
            return final if after is not None else None
        return after

    def match(self, node: ast.Match, state: State) -> State | None:
        self.expression(node.subject, state)
        ends: list[State | None] = [state]
        for case in node.cases:
            inner = self.narrow_case(node.subject, case.pattern, state)
            if case.guard is not None:
                self.expression(case.guard, inner)
                inner = self.narrow(case.guard, inner, positive=True)
            ends.append(self.block(case.body, inner))
        return _merge(ends)

    def function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, state: State
    ) -> None:
        if not self.spans_wanted(node):
            return  # nothing wanted inside, and what it binds stays inside
        arguments = node.args
        for default in [*arguments.defaults, *arguments.kw_defaults]:
            if default is not None:
                self.expression(default, state)
        inner = dict(state)
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        for argument in every:
            _bind(inner, argument.arg, self.annotation(argument.annotation))
        for rest in (arguments.vararg, arguments.kwarg):
            if rest is not None:
                _forget(inner, rest.arg)
        if isinstance(node, ast.Lambda):
            self.expression(node.body, inner)
            return
        for decorator in node.decorator_list:
            self.expression(decorator, state)
        positional = [*arguments.posonlyargs, *arguments.args]
        if self.class_stack and positional:
            attributes, methods, class_name = self.class_stack[-1]
            receiver = positional[0].arg
            if (
                class_name is not None
                and self.members is not None
                and not has_decorator(node, "staticmethod")
                and not has_decorator(node, "classmethod")
            ):
                inner[receiver] = frozenset({class_name})  # what its bases declare, too
            for name, types in attributes.items():
                inner[f"{receiver}.{name}"] = types
            for name, types in methods.items():
                inner[f"{receiver}.{name}()"] = types
        saved, self.class_stack = self.class_stack, []
        saved_aliases = self.aliases
        if _imports_from(node.body):
            self.aliases = {**self.aliases, **self._imported_here(node)}
        try:
            self.block(node.body, inner)
        finally:
            self.class_stack = saved
            self.aliases = saved_aliases

    def _imported_here(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
        """The aliases a function's own imports make (``renamed_imports``), and the module's
        aliases its plain imports rebind to what they import."""
        here: dict[str, ast.expr] = {}
        renamed = renamed_imports(node.body)
        for statement in ast.walk(node):
            if isinstance(statement, ast.ImportFrom):
                for alias in statement.names:
                    bound = alias.asname or alias.name
                    if bound in self.aliases and bound not in renamed:
                        here[bound] = ast.Name(id=alias.name, ctx=ast.Load())
        for bound, name in renamed.items():
            here[bound] = ast.Name(id=name, ctx=ast.Load())
        return here

    def class_definition(self, node: ast.ClassDef, state: State) -> None:
        if not self.spans_wanted(node):
            return
        for expression in [*node.decorator_list, *node.bases]:
            self.expression(expression, state)
        attributes: dict[str, Types] = {}
        methods: dict[str, Types] = {}
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                attributes[statement.target.id] = self.annotation(statement.annotation)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                methods[statement.name] = self.annotation(statement.returns)
                receiver = [*statement.args.posonlyargs, *statement.args.args][:1]
                if receiver:
                    self._self_annotations(statement, receiver[0].arg, attributes)
        self.class_stack.append(
            (
                {k: v for k, v in attributes.items() if v},
                {k: v for k, v in methods.items() if v},
                node.name if not self.class_stack and self._top_level(node) else None,
            )
        )
        try:
            self.block(node.body, dict(state))
        finally:
            self.class_stack.pop()

    def _self_annotations(
        self, method: ast.FunctionDef | ast.AsyncFunctionDef, receiver: str, into: dict[str, Types]
    ) -> None:
        """``self.x: X`` anywhere in a method's body (not in nested functions)."""
        pending: list[ast.AST] = list(method.body)
        while pending:
            current = pending.pop()
            if isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
            ):
                continue
            if (
                isinstance(current, ast.AnnAssign)
                and isinstance(current.target, ast.Attribute)
                and isinstance(current.target.value, ast.Name)
                and current.target.value.id == receiver
            ):
                into[current.target.attr] = self.annotation(current.annotation)
            elif isinstance(current, ast.stmt):
                pending.extend(ast.iter_child_nodes(current))

    def bind_target(self, target: ast.expr, types: Types, state: State) -> None:
        key = key_of(target)
        if key is not None:
            _bind(state, key, types)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self.bind_target(element, EMPTY, state)
        elif isinstance(target, ast.Starred):
            self.bind_target(target.value, EMPTY, state)

    # Expressions ------------------------------------------------------------------

    def expression(self, root: ast.expr, state: State) -> None:
        """Visit an expression, recording the wanted ones; iterative (deep chains)."""
        if not self.spans_wanted(root) and not isinstance(
            root, (ast.ListComp, ast.SetComp, ast.GeneratorExp)
        ):
            return
        pending: list[tuple[ast.AST, State]] = [(root, state)]
        while pending:
            node, current = pending.pop()
            if id(node) in self.wanted:
                types = self.type_of(node, current)  # type: ignore[arg-type]
                if types:
                    self.found[id(node)] = types
            if isinstance(node, ast.BoolOp):
                narrowed = current
                for value in node.values:
                    pending.append((value, narrowed))
                    narrowed = self.narrow(value, narrowed, positive=isinstance(node.op, ast.And))
            elif isinstance(node, ast.IfExp):
                pending.append((node.test, current))
                pending.append((node.body, self.narrow(node.test, current, positive=True)))
                pending.append((node.orelse, self.narrow(node.test, current, positive=False)))
            elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                self.comprehension(node, current)
            elif isinstance(node, ast.Lambda):
                self.function(node, current)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.expr, ast.keyword, ast.comprehension, ast.arg)):
                        pending.append((child, current))

    def comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, state: State
    ) -> None:
        inner = dict(state)
        for generator in node.generators:
            self.expression(generator.iter, inner)
            iterated = (
                self.iterated(generator.iter, inner, bool(generator.is_async))
                if self.matters(generator.target)
                else EMPTY
            )
            inner = dict(inner)
            self.bind_target(generator.target, iterated, inner)
            for condition in generator.ifs:
                self.expression(condition, inner)
                inner = self.narrow(condition, inner, positive=True)
        if isinstance(node, ast.DictComp):
            self.expression(node.key, inner)
            self.expression(node.value, inner)
            return
        self.expression(node.elt, inner)
        produced = self.type_of(node.elt, inner)
        if produced:
            self.comprehensions[id(node)] = frozenset(ELEMENT + name for name in produced)

    def type_of(self, node: ast.expr, state: State) -> Types:
        """What is known about the value of ``node`` in ``state``."""
        if isinstance(node, ast.Await):
            return self.type_of(node.value, state)
        if isinstance(node, ast.NamedExpr):
            return self.type_of(node.value, state)
        key = key_of(node)
        if key is not None and key in state:
            return state[key]
        if isinstance(node, ast.Call):
            return self.call_type(node, state)
        if isinstance(node, ast.Subscript) and _string(node.slice) is None:
            if isinstance(node.slice, ast.Slice):
                return self.type_of(node.value, state)
            return elements(self.type_of(node.value, state))
        if self.members is not None:
            if isinstance(node, ast.Attribute):
                return self.members.attribute(self.type_of(node.value, state), node.attr)
            key = _string(node.slice) if isinstance(node, ast.Subscript) else None
            if key is not None:  # a TypedDict's key
                return self.members.attribute(self.type_of(node.value, state), key)  # type: ignore[attr-defined]
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.comprehensions.get(id(node), EMPTY)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            inner = [self.type_of(element, state) for element in node.elts]
            if inner and all(inner):
                return frozenset(ELEMENT + name for types in inner for name in types)
        return EMPTY

    def call_type(self, node: ast.Call, state: State) -> Types:
        callee = node.func
        knowledge = self.knowledge
        if isinstance(callee, ast.Name):
            if callee.id in state:
                return EMPTY  # a local callable: unknown
            if callee.id in knowledge.classes:
                return frozenset({callee.id})
            if callee.id in self.functions:
                return self.functions[callee.id]
            if self.members is not None:
                given = self.members.function(callee.id)
                if given:
                    return given
            return knowledge.producers.get(callee.id, EMPTY)
        if isinstance(callee, ast.Attribute):
            owner = key_of(callee.value)
            if owner is not None and f"{owner}.{callee.attr}()" in state:
                return state[f"{owner}.{callee.attr}()"]
            if callee.attr in knowledge.classes:
                return frozenset({callee.attr})
            if self.members is not None:
                given = self._member_call(node, callee, state)
                if given:
                    return given
            return knowledge.producers.get(callee.attr, EMPTY)
        return EMPTY

    def _member_call(self, node: ast.Call, callee: ast.Attribute, state: State) -> Types:
        """What a method of a known class returns; ``get("key")`` of a TypedDict: the key's type."""
        assert self.members is not None
        owner = self.type_of(callee.value, state)
        if not owner:
            return EMPTY
        if (
            callee.attr == "get"
            and 1 <= len(node.args) <= 2
            and not node.keywords
            and (key := _string(node.args[0])) is not None
        ):
            given = self.members.attribute(owner, key)
            if given:
                return given
        return self.members.returned(owner, callee.attr)

    def iterated(self, iterable: ast.expr, state: State, asynchronous: bool) -> Types:
        """What iterating over ``iterable`` gives."""
        types = self.type_of(iterable, state)
        found = elements(types)
        if not found and types and self.members is not None:
            found = self.members.iterated(types, asynchronous)
        return found

    def _top_level(self, node: ast.ClassDef) -> bool:
        return node in self.top_classes

    # Narrowing --------------------------------------------------------------------

    def narrow(self, test: ast.expr, state: State, positive: bool) -> State:
        """What holds where ``test`` is true (``positive``) or false."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.narrow(test.operand, state, not positive)
        if isinstance(test, ast.BoolOp):
            if isinstance(test.op, ast.And) == positive:  # all of them hold
                for value in test.values:
                    state = self.narrow(value, state, positive)
            return state
        if isinstance(test, ast.NamedExpr):
            return self.narrow(test.value, state, positive)
        if isinstance(test, ast.Call) and positive:
            return self._isinstance(test, state)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            return self._discriminated(test, state, positive)
        return state

    def _isinstance(self, test: ast.Call, state: State) -> State:
        if not (
            isinstance(test.func, ast.Name)
            and test.func.id == "isinstance"
            and len(test.args) == 2
            and not test.keywords
        ):
            return state
        key = key_of(test.args[0])
        classes = test.args[1]
        members = classes.elts if isinstance(classes, ast.Tuple) else [classes]
        names = [self.annotation(member) for member in members]
        if key is None or not all(names):
            return state
        narrowed = dict(state)
        _bind(narrowed, key, frozenset().union(*names))
        return narrowed

    def _discriminated(self, test: ast.Compare, state: State, positive: bool) -> State:
        operator, left, right = test.ops[0], test.left, test.comparators[0]
        if isinstance(operator, (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            if positive != isinstance(operator, (ast.Eq, ast.Is)):
                return state
            if _string(left) is not None:
                left, right = right, left
            values = [right]
        elif isinstance(operator, (ast.In, ast.NotIn)):
            if positive != isinstance(operator, ast.In):
                return state
            if not isinstance(right, (ast.Tuple, ast.List, ast.Set)) or not right.elts:
                return state
            values = list(right.elts)
        else:
            return state
        return self._select(left, [_string(value) for value in values], state)

    def _select(self, field_side: ast.expr, values: list[str | None], state: State) -> State:
        """``field_side`` (``x.kind`` or ``x["kind"]``) is one of ``values``: narrow ``x``."""
        if isinstance(field_side, ast.Attribute):
            attribute: str | None = field_side.attr
        elif isinstance(field_side, ast.Subscript):
            attribute = _string(field_side.slice)
        elif (
            isinstance(field_side, ast.Call)
            and isinstance(field_side.func, ast.Attribute)
            and field_side.func.attr == "get"
            and 1 <= len(field_side.args) <= 2
            and not field_side.keywords
        ):  # a TypedDict's `.get("kind")`
            attribute = _string(field_side.args[0])
            field_side = field_side.func
        else:
            return state
        key = key_of(field_side.value)
        if key is None or attribute is None:
            return state
        selected: set[str] = set()
        for value in values:
            classes = (
                self.knowledge.discriminators.get((attribute, value)) if value is not None else None
            )
            if not classes:
                return state
            selected |= classes
        narrowed = dict(state)
        _bind(narrowed, key, frozenset(selected))
        return narrowed

    def narrow_case(self, subject: ast.expr, pattern: ast.pattern, state: State) -> State:
        """What holds in a case whose ``pattern`` matched ``subject``."""
        inner = dict(state)
        names: list[str] = []
        core = pattern
        while isinstance(core, ast.MatchAs) and core.pattern is not None:
            if core.name:
                names.append(core.name)
            core = core.pattern
        if isinstance(core, ast.MatchAs) and core.name:
            names.append(core.name)
        alternatives = core.patterns if isinstance(core, ast.MatchOr) else [core]
        types: Types = EMPTY
        if all(isinstance(option, ast.MatchClass) for option in alternatives):
            types = frozenset().union(
                *(self.annotation(option.cls) for option in alternatives)  # type: ignore[attr-defined]
            )
            key = key_of(subject)
            if key is not None and types:
                _bind(inner, key, types)
        elif all(isinstance(option, ast.MatchValue) for option in alternatives):
            values = [_string(option.value) for option in alternatives]  # type: ignore[attr-defined]
            inner = self._select(subject, values, inner)
        elif isinstance(core, ast.MatchAs) and core.pattern is None:
            types = self.type_of(subject, state)
        for name in names:
            _bind(inner, name, types or self.type_of(subject, state))
        return inner
