"""Whether a class's bases already define a member name, read from their source.

A private class member renamed onto a name a base class defines would override it.
``base_definition`` follows a class's bases (through imports and re-exports, with
``Declarations``: nothing is imported or run, except that the bases that are builtin
types, and those from ``typing``, are asked directly) and says which one defines the
name, or that a base cannot be read, which a rename must take as a no.
"""

from __future__ import annotations

import ast
import builtins
import importlib
from typing import TYPE_CHECKING

from lint_rules.analysis.declarations import (
    TYPING_MODULES,
    ModuleSource,
    _definition,
    file_source,
)

if TYPE_CHECKING:
    from lint_rules.rule import FileContext

MAX_CLASSES = 32
"""How many classes of the hierarchy are read before giving up (``cannot tell``)."""


def base_definition(file: FileContext, class_offset: int, name: str) -> str:
    """Why ``name`` cannot become a member of the class whose name starts at
    ``class_offset`` in ``file`` without overriding what a base class defines (``""``: no
    base defines it, and every base could be read)."""
    classes = [
        node
        for node in ast.walk(file.ast_tree)
        if isinstance(node, ast.ClassDef)
        and (spelt := file.definition_name(node)) is not None
        and spelt[0] == class_offset
    ]
    if not classes:
        return f"cannot tell whether a base class defines `{name}`"
    file.project.note_read()  # the answer depends on the modules the bases live in
    here = file_source(file.path, file.ast_tree, file.project.declarations)
    pending: list[tuple[ModuleSource, ast.ClassDef]] = [(here, classes[0])]
    seen: set[tuple[str, str]] = set()
    while pending:
        source, node = pending.pop()
        for base in node.bases:
            if len(seen) > MAX_CLASSES:
                return f"cannot tell whether a base class defines `{name}` (too many bases)"
            expression = base.value if isinstance(base, ast.Subscript) else base
            shown = ast.unparse(base)
            answer = _outside_sources(source, expression, name)
            if answer is not None:
                if answer:
                    return f"`{name}` is also defined by the base class `{shown}`"
                continue
            found = _definition(source, expression)
            if found is None or found[1] not in found[0].classes:
                return f"cannot tell whether the base class `{shown}` defines `{name}`"
            base_source, base_name = found
            if (base_source.name, base_name) in seen:
                continue
            seen.add((base_source.name, base_name))
            base_node = base_source.classes[base_name]
            if name in _members(base_node):
                return (
                    f"`{name}` is also defined by the base class `{base_source.name}.{base_name}`"
                )
            pending.append((base_source, base_node))
    return ""


def _outside_sources(source: ModuleSource, expression: ast.expr, name: str) -> bool | None:
    """For a base that is a builtin type or comes from ``typing``: whether it has ``name``
    (asked of the object itself); ``None`` for any other base."""
    if isinstance(expression, ast.Name):
        local = expression.id
        defined_here = (
            local in source.classes
            or source.imported(local) is not None
            or source.alias(local) is not None
        )
        if not defined_here:
            value = getattr(builtins, local, None)
            if isinstance(value, type):
                return hasattr(value, name)
    qualified = source.qualified(expression)
    if qualified is not None:
        module, _, attribute = qualified.rpartition(".")
        if module in TYPING_MODULES:
            try:
                value = getattr(importlib.import_module(module), attribute, None)
            except ImportError:
                return False  # typing_extensions is not installed: nothing to override
            return value is not None and hasattr(value, name)
    return None


def _members(node: ast.ClassDef) -> set[str]:
    """The names a class body binds, and the ``self.name`` its methods assign."""
    names: set[str] = set()
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            for target in targets:
                names.update(
                    element.id for element in ast.walk(target) if isinstance(element, ast.Name)
                )
    for child in ast.walk(node):
        if (
            isinstance(child, ast.Attribute)
            and not isinstance(child.ctx, ast.Load)
            and isinstance(child.value, ast.Name)
            and child.value.id in ("self", "cls")
        ):
            names.add(child.attr)
    return names
