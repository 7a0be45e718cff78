"""What pytest collects: test files and the test functions in them.

A test function pytest collects is not public API: no caller names it (pytest finds
it by its name's prefix), so a misspelling in its name is fixed like a private name's,
with every reference in its file (``codemod.renamer.rename_test``).
"""

from __future__ import annotations

import ast
import contextlib
import os
from pathlib import Path

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
