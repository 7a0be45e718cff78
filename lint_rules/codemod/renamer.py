"""Renames that stay inside one file, which LR004 fixes misspelt names with.

``rename_refusal`` says why a rename may change what a file means (``shadowing``: why the
new name would hide a builtin or a name a star import binds); ``rename_test`` renames
a test function pytest collects (no caller names it) with the stdlib ``ast`` alone;
``scope_renamer.ScopeRenamer`` renames a private name with every reference in its
scope, on libcst's scope analysis.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from lint_rules.analysis.collected import CollectedTest
from lint_rules.rule import Edit

if TYPE_CHECKING:
    from lint_rules.rule import FileContext


def rename_refusal(old: str, new: str, names: Collection[str], strings: Sequence[str]) -> str:
    """Why renaming ``old`` to ``new`` in a file may change what it means (``""``: it may
    not): ``names`` are the identifiers the file spells, ``strings`` its string values."""
    if not new.isidentifier() or keyword.iskeyword(new):
        return f"`{new}` is not an identifier"
    if new in names:
        return f"`{new}` already exists in this file"
    word = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)")
    if any(word.search(value) for value in strings):
        return f"`{old}` also appears in a string (e.g. an annotation or `__all__`)"
    return ""


_BUILTINS = frozenset(dir(builtins))


def shadowing(new: str, file: FileContext) -> str:
    """Why ``new`` would hide a name already in scope that the file does not spell (a
    builtin, a name one of its star imports binds), or ``""``. Names the file spells (a
    local, a parameter, a module-level name, a class attribute) are ``rename_refusal``'s."""
    if new in _BUILTINS:
        return f"`{new}` is a builtin, which the new name would shadow"
    from lint_rules.analysis.star_imports import star_import_names

    stars = star_import_names(file)
    module = stars.names.get(new)
    if module is not None:
        return f"`{new}` is bound by `from {module} import *`, which the new name would shadow"
    if stars.unknown:
        modules = ", ".join(f"`from {module} import *`" for module in stars.unknown)
        return f"cannot tell whether {modules} binds `{new}` (its source cannot be read)"
    return ""


def rename_test(
    file: FileContext,
    names: set[str],
    strings: Sequence[str],
    test: CollectedTest,
    first: int,
    new: str,
) -> tuple[list[Edit], str]:
    """The edits renaming a test function and its uses (``ast`` only: no scope analysis
    is needed, since any other binding or ambiguous use of the name refuses).

    Its uses: a module-level test's bare name wherever it is read; a test method's
    ``self.``/``cls.`` attribute inside its class. ``names``: every identifier the file
    spells; ``strings``: the values of its string literals; ``first``: where the test's
    name starts.
    """
    function, owner = test
    old = function.name
    refusal = rename_refusal(old, new, names, strings) or shadowing(new, file)
    if refusal:
        return [], refusal
    inside = file.node_range(owner) if owner is not None else None
    edits = [Edit(first, first + len(old), new)]
    for node in ast.walk(file.ast_tree):
        if node is function:
            continue
        if binds_name(node, old):
            return [], f"`{old}` is bound more than once in this file"
        if isinstance(node, ast.keyword) and node.arg == old:
            return [], f"`{old}` is also passed as a keyword argument"
        if isinstance(node, ast.Name) and node.id == old:
            if owner is not None:
                return [], f"`{old}` is also used as a bare name"
            edits.append(Edit(*file.node_range(node), new))
        elif isinstance(node, ast.Attribute) and node.attr == old:
            if inside is None:
                return [], f"`.{old}` is also used as an attribute"
            if (
                not isinstance(node.value, ast.Name)
                or node.value.id not in ("self", "cls")
                or not inside[0] <= file.node_range(node)[0] < inside[1]
            ):
                return [], f"`.{old}` is also used outside its class"
            node_end = file.node_range(node)[1]
            edits.append(Edit(node_end - len(old), node_end, new))
    if any(file.text[edit.start : edit.end] != old for edit in edits):
        return [], "the name could not be located exactly"
    return sorted(edits, key=lambda edit: edit.start), ""


def binds_name(node: ast.AST, name: str) -> bool:
    """Whether ``node`` binds ``name`` (a definition, parameter, store, import, capture)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, ast.arg):
        return node.arg == name
    if isinstance(node, ast.Name):
        return node.id == name and not isinstance(node.ctx, ast.Load)
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == name
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return name in node.names
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return node.name == name
    return False
