"""What pytest collects: test files, the test functions in them, and renaming one.

A test function pytest collects is not public API: no caller names it (pytest finds
it by its name's prefix), so a misspelling in its name is fixed like a private name's,
with every reference in its file.
"""

from __future__ import annotations

import ast
import contextlib
import keyword
import os
import re
from collections.abc import Sequence
from pathlib import Path

from lint_rules.rule import Edit, FileContext

TEST_DIRECTORIES = frozenset({"tests"})
"""Directory names whose Python files are test files."""


def is_test_file(path: Path, root: Path | None) -> bool:
    """``test_*.py``, ``*_test.py``, ``conftest.py``, or a file under a ``tests/`` directory."""
    name = path.name
    if name == "conftest.py" or _collected_file(path):
        return True
    absolute = Path(os.path.abspath(path))
    parts = absolute.parts[:-1]
    if root is not None:
        with contextlib.suppress(ValueError):  # a file outside the root: all its parts
            parts = absolute.relative_to(os.path.abspath(root)).parts[:-1]
    return any(part in TEST_DIRECTORIES for part in parts)


def _collected_file(path: Path) -> bool:
    """A file pytest collects tests from by default (``python_files``)."""
    stem, suffix = path.stem, path.suffix
    return suffix == ".py" and (stem.startswith("test_") or stem.endswith("_test"))


def collected_tests(path: Path, tree: ast.Module) -> set[int]:
    """The ``id`` of each function pytest collects from the file, by its defaults.

    Module-level functions named ``test*``, and ``test*`` methods of module-level
    classes named ``Test*`` without an ``__init__``; only in ``test_*.py`` and
    ``*_test.py`` files. A function decorated as a fixture is not a test.
    """
    if not _collected_file(path):
        return set()
    found: set[int] = set()
    for node in tree.body:
        if _is_test_function(node):
            found.add(id(node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            methods = [
                child
                for child in node.body
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            if any(method.name == "__init__" for method in methods):
                continue  # pytest does not collect a class with a constructor
            found.update(id(method) for method in methods if _is_test_function(method))
    return found


def _is_test_function(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return node.name.startswith("test") and not any(
        "fixture" in ast.unparse(decorator) for decorator in node.decorator_list
    )


CollectedTest = tuple[ast.FunctionDef | ast.AsyncFunctionDef, ast.ClassDef | None]
"""A test function pytest collects, and the ``Test*`` class it is a method of (or ``None``)."""


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
    if not new.isidentifier() or keyword.iskeyword(new):
        return [], f"`{new}` is not an identifier"
    if new in names:
        return [], f"`{new}` already exists in this file"
    word = re.compile(rf"(?<!\w){re.escape(old)}(?!\w)")
    if any(word.search(value) for value in strings):
        return [], f"`{old}` also appears in a string (e.g. an annotation or `__all__`)"
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
