"""How each name read in a text resolves, from the stdlib's ``ast``: what ``fixes.verify``
compares before and after a fix (a builtin stays the builtin, an import the import, a
name bound in the file stays bound).

Python's own scoping rules, applied to one parse of the file (about a millisecond for a
module of a few hundred lines, where libcst's scope analysis took 50-200 ms): module,
class, function and lambda scopes, and comprehensions, whose first iterable is read in
the enclosing scope; a class body's names are not seen from the functions and
comprehensions inside it; ``global`` and ``nonlocal`` declarations; an assignment
expression binds in the nearest scope that is not a comprehension. Bindings are
counted whatever their order (flow-insensitive): a name bound anywhere in a scope is
that scope's. Each resolution is keyed by the name's (1-based line, 0-based column in
characters).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field

Resolution = tuple[str, str]
"""``("builtin", name)``, ``("import", qualified names)``, ``("bound", "")`` or
``("unresolved", "")``. An import's qualified names (``", "``-joined, sorted) are those
of every binding of the name in its scope: ``pkg.mod.name`` for ``from pkg.mod import
name``, ``.mod.name`` for a relative import, ``pkg`` for ``import pkg.mod``; a binding that
is not an import counts by its scope's qualified name (``f.<locals>.name``)."""


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(eq=False)
class _Scope:
    kind: str
    """``module``, ``class``, ``function`` or ``comprehension``."""
    parent: _Scope | None
    prefix: str
    """The qualified name of what this scope binds, up to the name (``f.<locals>.``)."""
    bindings: dict[str, set[tuple[str, bool]]] = field(default_factory=dict)
    """Name -> its bindings here: (qualified name, whether an import)."""
    declared_global: set[str] = field(default_factory=set)
    declared_nonlocal: set[str] = field(default_factory=set)

    def bind(self, name: str, qualified: str | None = None) -> None:
        entry = self.bindings.setdefault(name, set())
        entry.add((qualified, True) if qualified is not None else (self.prefix + name, False))


def resolutions(text: str) -> dict[tuple[int, int], Resolution]:
    """How each name read in ``text`` resolves, by its (line, column); raises
    ``SyntaxError`` (or ``RecursionError`` for code nested too deeply) when it does not
    parse."""
    tree = ast.parse(text)
    module = _Scope("module", None, "")
    reads: list[tuple[ast.Name, _Scope]] = []
    _Binder(module, reads).visit(tree)
    lines = text.splitlines()
    found: dict[tuple[int, int], Resolution] = {}
    for node, scope in reads:
        line = lines[node.lineno - 1] if 0 < node.lineno <= len(lines) else ""
        column = node.col_offset
        if not line.isascii():
            column = len(line.encode()[:column].decode(errors="replace"))
        found[(node.lineno, column)] = _resolve(node.id, scope, module)
    return found


def _resolve(name: str, scope: _Scope, module: _Scope) -> Resolution:
    target = _binding_scope(name, scope, module)
    entries = target.bindings.get(name) if target is not None else None
    if not entries:
        return ("builtin", name) if hasattr(builtins, name) else ("unresolved", "")
    if any(is_import for _, is_import in entries):
        return ("import", ", ".join(sorted(qualified for qualified, _ in entries)))
    return ("bound", "")


def _binding_scope(name: str, scope: _Scope, module: _Scope) -> _Scope | None:
    """The scope whose binding of ``name`` a read in ``scope`` sees (``None``: none does)."""
    current: _Scope | None = scope
    first = True
    while current is not None:
        if name in current.declared_global:
            return module
        if current.kind == "class" and not first:
            current = current.parent  # a class body is not seen from inside its functions
            continue
        if name in current.declared_nonlocal:
            current = current.parent
            first = False
            continue
        if name in current.bindings:
            return current
        current = current.parent
        first = False
    return None


class _Binder(ast.NodeVisitor):
    """Records every scope's bindings and declarations, and each name read with the scope
    it is read in."""

    def __init__(self, scope: _Scope, reads: list[tuple[ast.Name, _Scope]]) -> None:
        self.module = self.scope = scope
        self.reads = reads

    def _bind(self, name: str, qualified: str | None = None) -> None:
        """Bind ``name`` where a binding here lands: the module's under ``global``."""
        scope = self.module if name in self.scope.declared_global else self.scope
        scope.bind(name, qualified)

    def _within(self, scope: _Scope, nodes: list[ast.AST]) -> None:
        outer, self.scope = self.scope, scope
        try:
            for node in nodes:
                self.visit(node)
        finally:
            self.scope = outer

    def _enclosed(self, kind: str, name: str) -> _Scope:
        suffix = "." if kind == "class" else ".<locals>."
        return _Scope(kind, self.scope, f"{self.scope.prefix}{name}{suffix}")

    # -- scopes ------------------------------------------------------------------------------

    def _function(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str
    ) -> None:
        arguments = node.args
        for default in [*arguments.defaults, *arguments.kw_defaults]:
            if default is not None:
                self.visit(default)
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            for argument in every:
                if argument.annotation is not None:
                    self.visit(argument.annotation)
            if node.returns is not None:
                self.visit(node.returns)
        inner = self._enclosed("function", name)
        for parameter in getattr(node, "type_params", ()):
            inner.bind(parameter.name)
        for argument in every:
            inner.bind(argument.arg)
        body: list[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        self._within(inner, body)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._bind(node.name)
        self._function(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._bind(node.name)
        self._function(node, node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._function(node, "<lambda>")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expression in [*node.decorator_list, *node.bases, *node.keywords]:
            self.visit(expression)
        self._bind(node.name)
        inner = self._enclosed("class", node.name)
        for parameter in getattr(node, "type_params", ()):
            inner.bind(parameter.name)
        self._within(inner, list(node.body))

    def _comprehension(self, node: ast.AST, generators: list[ast.comprehension]) -> None:
        self.visit(generators[0].iter)  # read in the enclosing scope
        inner = self._enclosed("comprehension", f"<{type(node).__name__.lower()}>")
        parts: list[ast.AST] = []
        for index, generator in enumerate(generators):
            parts.append(generator.target)
            if index:
                parts.append(generator.iter)
            parts.extend(generator.ifs)
        if isinstance(node, ast.DictComp):
            parts += [node.key, node.value]
        else:
            parts.append(node.elt)  # type: ignore[attr-defined]
        self._within(inner, parts)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._comprehension(node, node.generators)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._comprehension(node, node.generators)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._comprehension(node, node.generators)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, node.generators)

    # -- bindings and reads -------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.reads.append((node, self.scope))
            return
        if isinstance(node.ctx, ast.Del):
            self.reads.append((node, self.scope))  # an access (as libcst counts it), no binding
            return
        self._bind(node.id)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self._bind(node.target.id)  # read and written in its own scope
        else:
            self.visit(node.target)
        self.visit(node.value)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        scope = self.scope
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        scope.bind(node.target.id)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self._bind(alias.asname, alias.name)
            else:
                top = alias.name.split(".")[0]
                self._bind(top, top)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue
            joined = f"{module}{alias.name}" if module.endswith(".") else f"{module}.{alias.name}"
            self._bind(alias.asname or alias.name, joined if module else alias.name)

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.declared_global.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope.declared_nonlocal.update(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None:
            self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name is not None:
            self._bind(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name is not None:
            self._bind(node.name)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest is not None:
            self._bind(node.rest)
        self.generic_visit(node)
