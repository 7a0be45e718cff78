"""Where a string literal is the value of a field, for string renames (LR001).

A string rename (``[tool.lint_rules.renames.strings]``) is safe only where the string is
the value the renamed thing carries: compared with a field (``event.type == "x"``,
``event["type"] in ("x", "y")``, a ``case "x":`` of ``match event.type``), or passed to a
field whose ``Literal`` declares the new value (``Event(type="x")``, ``case Event(type="x")``,
the positions LR002 checks). ``value_positions`` finds those positions in one walk of a
file's tree; every other string is data as far as it can tell.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

COMPARED = "compared"
"""Compared with a field: ``==``/``!=``, ``in`` a literal tuple, list or set, a ``case``."""
LITERAL = "literal"
"""A value listed in a ``Literal[...]`` declaration."""


@dataclass
class ValuePositions:
    """The string constants of a file in a value position, by ``id`` of the node."""

    kinds: dict[int, str] = field(default_factory=dict)
    """``COMPARED`` or ``LITERAL``."""
    passed: dict[int, frozenset[str]] = field(default_factory=dict)
    """Passed to a configured field: the values its ``Literal`` declares."""


def value_positions(
    tree: ast.Module, declared: Mapping[str, Mapping[str, frozenset[str]]]
) -> ValuePositions:
    """The value positions of ``tree``; ``declared``: class name -> attribute -> the values
    its ``Literal`` declares (``[tool.lint_rules.literals]``, read by LR002's analysis)."""
    found = ValuePositions()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            left = node.left
            for operator, right in zip(node.ops, node.comparators, strict=True):
                if isinstance(operator, (ast.Eq, ast.NotEq)):
                    if _is_field(left):
                        found.kinds[id(right)] = COMPARED
                    if _is_field(right):
                        found.kinds[id(left)] = COMPARED
                elif (
                    isinstance(operator, (ast.In, ast.NotIn))
                    and isinstance(right, (ast.Tuple, ast.List, ast.Set))
                    and _is_field(left)
                ):
                    found.kinds.update((id(element), COMPARED) for element in right.elts)
                left = right
        elif isinstance(node, ast.Match) and _is_field(node.subject):
            for case in node.cases:
                found.kinds.update((id(value), COMPARED) for value in matched_values(case.pattern))
        elif isinstance(node, ast.Call):
            owned = declared.get(_callee_name(node.func) or "")
            for keyword in node.keywords if owned else ():
                values = owned.get(keyword.arg or "") if owned else None
                if values is not None:
                    found.passed[id(keyword.value)] = values
        elif isinstance(node, ast.MatchClass):
            owned = declared.get(_callee_name(node.cls) or "")
            for attribute, pattern in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
                values = owned.get(attribute) if owned else None
                if values is not None:
                    found.passed.update((id(value), values) for value in matched_values(pattern))
        elif isinstance(node, ast.Subscript) and _callee_name(node.value) == "Literal":
            found.kinds.update(
                (id(part), LITERAL)
                for part in ast.walk(node.slice)
                if isinstance(part, ast.Constant) and isinstance(part.value, str)
            )
    return found


def _is_field(node: ast.expr) -> bool:
    """``receiver.attr`` or ``receiver["key"]``: a field of something."""
    if isinstance(node, ast.Attribute):
        return True
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    )


def _callee_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def matched_values(pattern: ast.pattern) -> list[ast.expr]:
    """The values a pattern compares with, through ``|`` and ``as``."""
    values = []
    pending = [pattern]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.MatchValue):
            values.append(current.value)
        elif isinstance(current, ast.MatchOr):
            pending.extend(current.patterns)
        elif isinstance(current, ast.MatchAs) and current.pattern is not None:
            pending.append(current.pattern)
    return values
