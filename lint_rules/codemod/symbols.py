"""Bare-name renames decided by the compiler's own scope analysis (``symtable``).

For a bare ``renames`` entry, whether an occurrence is the renamed binding (not a
builtin of that name) and whether renaming it would clash with another binding of
its scope is read from the stdlib's symbol tables: far cheaper than libcst's scope
analysis, and exact for names.
"""

from __future__ import annotations

import ast
import bisect
import builtins
import symtable
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lint_rules.rule import FileContext

_COMPREHENSIONS = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}


class Symbols:
    """The stdlib's symbol tables of one file (``symtable``: the compiler's own scope
    analysis, far cheaper than libcst's), and which table each occurrence is in."""

    def __init__(self, file: FileContext, names: set[str], scopes: Sequence[ast.AST]) -> None:
        self.file = file
        self.module = symtable.symtable(file.text, str(file.path), "exec")
        self.parent: dict[int, symtable.SymbolTable] = {}
        self._regions: list[tuple[int, int, list[tuple[int, int]], symtable.SymbolTable]] = []
        self._starts: list[int] = []
        self.aliases: set[tuple[str, str]] = set()
        """``old = new`` assignments at module or class level."""
        self._place(scopes)
        self._note_aliases(file.ast_tree.body, names)
        for node in scopes:
            if isinstance(node, ast.ClassDef):
                self._note_aliases(node.body, names)

    def decide(self, old: str, new: str, anchor: int, load: bool) -> str | None:
        """``None``: not the renamed binding (a builtin); ``""``: rename; else why not."""
        table = self.table_at(anchor)
        try:
            symbol = table.lookup(old)
        except KeyError:
            return ""
        bound = table
        if symbol.is_declared_global() or (load and symbol.is_global() and not symbol.is_local()):
            bound = self.module
            try:
                at_module = self.module.lookup(old)
            except KeyError:
                at_module = None
            if at_module is None or not at_module.is_local():
                return None if old in BUILTINS else ""  # a builtin, or unresolved
        elif symbol.is_free():
            current = self.parent.get(id(table))
            while current is not None and current is not self.module:
                found = _symbol(current, old)
                if found is not None and found.is_local() and current.get_type() != "class":
                    bound = current
                    break
                current = self.parent.get(id(current))
        return self._clash(bound, old, new, load)

    def _clash(self, bound: symtable.SymbolTable, old: str, new: str, load: bool) -> str:
        existing = _symbol(bound, new)
        if existing is not None and existing.is_local():
            if load and (old, new) in self.aliases:
                return ""  # `old = new`: the old name already means the new one
            return f"`{new}` is already {_describe(bound, existing)}"
        for table in self._within(bound):
            used = _symbol(table, new)
            if used is not None and used.is_referenced() and not used.is_local():
                at_module = _symbol(self.module, new)
                if at_module is not None and at_module.is_imported():
                    return f"`{new}` already names an import here"
                if (at_module is None or not at_module.is_local()) and new in BUILTINS:
                    return f"the builtin `{new}` is used here"
                return f"`{new}` already names an outer definition here"
        return ""

    def _within(self, bound: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
        pending = [bound]
        while pending:
            table = pending.pop()
            yield table
            pending.extend(table.get_children())

    def _place(self, scopes: Sequence[ast.AST]) -> None:
        """Give each scope node (from the rule's traversal) its symbol table and the
        character ranges its own names live in (a function's parameters and body, not
        its decorators and defaults; a comprehension without its first iterable)."""
        children: dict[int, dict[tuple[str, int], list[symtable.SymbolTable]]] = {}

        def child(table: symtable.SymbolTable, name: str, line: int) -> symtable.SymbolTable:
            index = children.get(id(table))
            if index is None:
                index = children[id(table)] = {}
                for sub in table.get_children():
                    self.parent[id(sub)] = table
                    index.setdefault((sub.get_name(), sub.get_lineno()), []).append(sub)
            found = index.get((name, line))
            return found.pop(0) if found else table

        span = self.file.node_range
        placed: list[tuple[int, int, list[tuple[int, int]], ast.AST]] = []
        for node in scopes:
            start, end = span(node)
            regions: list[tuple[int, int]]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                body = node.body if isinstance(node, ast.Lambda) else node.body[0]
                regions = [span(argument) for argument in _arguments(node.args)]
                regions.append((span(body)[0], end))
            elif isinstance(node, ast.ClassDef):
                regions = [(span(node.body[0])[0], end)]
            else:
                assert isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                first, last = span(node.generators[0].iter)
                regions = [(start, first), (last, end)]
            placed.append((start, end, regions, node))
        placed.sort(key=lambda item: (item[0], -item[1]))
        stack: list[tuple[int, list[tuple[int, int]], symtable.SymbolTable]] = []
        for start, end, regions, node in placed:
            while stack and stack[-1][0] <= start:
                stack.pop()
            outer = self._enclosing(stack, start)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                table = child(outer, node.name, node.lineno)
            elif isinstance(node, ast.Lambda):
                table = child(outer, "lambda", node.lineno)
            else:
                line = node.lineno  # type: ignore[attr-defined]
                table = child(outer, _COMPREHENSIONS[type(node)], line)
            if table is not outer:
                stack.append((end, regions, table))
            self._regions.append((start, end, regions, table))
        self._regions.sort(key=lambda item: (item[0], -item[1]))
        self._starts = [item[0] for item in self._regions]

    def _enclosing(
        self, stack: Sequence[tuple[int, list[tuple[int, int]], symtable.SymbolTable]], at: int
    ) -> symtable.SymbolTable:
        for _, regions, table in reversed(stack):
            if any(first <= at < last for first, last in regions):
                return table
        return self.module

    def table_at(self, offset: int) -> symtable.SymbolTable:
        """The innermost symbol table whose own names include the one at ``offset``."""
        index = bisect.bisect_right(self._starts, offset)
        best = self.module
        best_size = -1
        for start, end, regions, table in self._regions[:index]:
            if end <= offset or not any(first <= offset < last for first, last in regions):
                continue
            if best_size < 0 or end - start < best_size:
                best, best_size = table, end - start
        return best

    def _note_aliases(self, body: list[ast.stmt], names: set[str]) -> None:
        for statement in body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id in names
                and isinstance(statement.value, ast.Name)
            ):
                self.aliases.add((statement.targets[0].id, statement.value.id))


BUILTINS = frozenset(dir(builtins))


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    found = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    found += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return found


def _symbol(table: symtable.SymbolTable, name: str) -> symtable.Symbol | None:
    try:
        return table.lookup(name)
    except KeyError:
        return None


def _describe(table: symtable.SymbolTable, symbol: symtable.Symbol) -> str:
    kind, name = table.get_type(), table.get_name()
    if symbol.is_parameter():
        return f"a parameter of `{name}`"
    if symbol.is_imported():
        return "an import in this scope"
    if kind == "function":
        return f"a local of `{name}`"
    if kind == "class":
        return f"a member of class `{name}`"
    return "defined in this module"
