"""The names a file's ``from module import *`` statements bind, read from the modules'
source without importing them.

A module's star-import names are its ``__all__`` when that is a literal list or tuple
of strings (extended with literal ``+=``, ``.extend`` and ``.append``), otherwise
every public name its top level binds, the names of its own star imports included.
A module whose source cannot be read (a C extension, not installed) or whose
``__all__`` is computed cannot be known: it is named instead, so that a caller who
needs certainty (a rename must not shadow what a star import binds) can refuse.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lint_rules.analysis.declarations import Declarations, file_source
from lint_rules.rule import ConfigError

if TYPE_CHECKING:
    from lint_rules.rule import FileContext

MAX_DEPTH = 8
"""How many star imports deep a module's own star imports are followed."""


@dataclass(frozen=True)
class StarNames:
    """What a file's star imports bind: the names known (each with the module it comes
    from, as the import spells it), and the modules whose names cannot be known (empty
    when every star-imported module was read)."""

    names: Mapping[str, str]
    unknown: tuple[str, ...]


def star_import_names(file: FileContext) -> StarNames:
    """The names the star imports of ``file`` bind (none: an empty ``StarNames``)."""
    stars = [
        node
        for node in file.ast_tree.body
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)
    ]
    if not stars:
        return StarNames({}, ())
    file.project.note_read()  # what the file binds depends on other modules
    declarations = file.project.declarations
    here = file_source(file.path, file.ast_tree, declarations)
    names: dict[str, str] = {}
    unknown: list[str] = []
    for node in stars:
        spelt = "." * node.level + (node.module or "")
        module = here.resolve_relative(node.module, node.level)
        exported = _exported(module, declarations, {here.name}, 0)
        if exported is None:
            unknown.append(spelt)
        else:
            names.update(dict.fromkeys(sorted(exported - names.keys()), spelt))
    return StarNames(names, tuple(unknown))


def _exported(
    module: str, declarations: Declarations, seen: set[str], depth: int
) -> frozenset[str] | None:
    """The names ``from module import *`` binds, or None if they cannot be known."""
    if module in seen:
        return frozenset()  # an import cycle: the names come from the other modules
    if depth > MAX_DEPTH or not module:
        return None
    try:
        source = declarations.read_module(module)
    except ConfigError:
        return None
    statements = source.statements
    declared, listed = _dunder_all(statements)
    if declared:
        return listed
    names: set[str] = set()
    for statement in statements:
        if isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names):
            inner = source.resolve_relative(statement.module, statement.level)
            found = _exported(inner, declarations, seen | {module}, depth + 1)
            if found is None:
                return None
            names |= found
            continue
        names.update(_bound_names(statement))
    return frozenset(name for name in names if not name.startswith("_"))


def _dunder_all(statements: list[ast.stmt]) -> tuple[bool, frozenset[str] | None]:
    """Whether the module declares ``__all__``, and its names if they are literal."""
    listed: set[str] | None = None
    for statement in statements:
        value: ast.expr | None = None
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                continue
            if not isinstance(statement, ast.AugAssign):
                listed = set()
            value = statement.value
        elif (method := _all_method(statement)) is not None:
            call, name = method
            if name == "append" and len(call.args) == 1:
                value = ast.List(elts=[call.args[0]])
            elif name == "extend" and len(call.args) == 1:
                value = call.args[0]
            else:
                return True, None
        else:
            continue
        strings = _literal_strings(value)
        if strings is None or listed is None:
            return True, None
        listed |= strings
    return listed is not None, None if listed is None else frozenset(listed)


def _all_method(statement: ast.stmt) -> tuple[ast.Call, str] | None:
    """``(call, method)`` for a statement ``__all__.method(...)``."""
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return None
    function = statement.value.func
    if (
        isinstance(function, ast.Attribute)
        and isinstance(function.value, ast.Name)
        and function.value.id == "__all__"
    ):
        return statement.value, function.attr
    return None


def _literal_strings(value: ast.expr | None) -> set[str] | None:
    if not isinstance(value, (ast.List, ast.Tuple)):
        return None
    strings = set()
    for element in value.elts:
        if not isinstance(element, ast.Constant) or not isinstance(element.value, str):
            return None
        strings.add(element.value)
    return strings


def _bound_names(statement: ast.stmt) -> set[str]:
    """The names a top-level statement binds in its module."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, ast.Import):
        return {alias.asname or alias.name.split(".")[0] for alias in statement.names}
    if isinstance(statement, ast.ImportFrom):
        return {alias.asname or alias.name for alias in statement.names}
    targets: list[ast.AST] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in statement.items if item.optional_vars]
    names = set()
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                names.add(node.id)
    for node in ast.walk(statement):  # walrus and the like at module level
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names
