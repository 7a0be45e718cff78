"""What the SDK benchmarks share (``plants.py``, ``lr002_keys.py``, ``lr002_phases.py``,
``lr003_findings.py``): fetching and unpacking a pinned sdist, reading its ``Literal``
fields and Protocols for the configuration, and running the ``lint_rules`` package of
another directory.

Imported as ``_common`` (each benchmark runs as a script, with this directory first on
``sys.path``; mypy finds it through ``mypy_path``).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path

PROTOCOL = re.compile(r"^class (\w+)\((?:[^()]*\b)?Protocol\b", re.MULTILINE)
"""A top-level ``class X(Protocol)`` (or ``class X(Base, Protocol[T])``): group 1 is ``X``."""

_BOOTSTRAP = (
    "import sys\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]\n"
    "sys.path.insert(0, sys.argv.pop(1))\n"
    "from lint_rules.cli import main\n"
    "raise SystemExit(main(sys.argv[1:]))\n"
)


def lint_command(base: Path | None) -> list[str]:
    """``python -m lint_rules``, or with ``base`` the ``lint_rules`` package of that
    directory (an export of another commit) instead of the installed one."""
    if base is None:
        return [sys.executable, "-m", "lint_rules"]
    return [sys.executable, "-c", _BOOTSTRAP, str(base.resolve())]


def add_openai_tree_arguments(
    parser: argparse.ArgumentParser, *, keys: str, base_help: str
) -> None:
    """The options of the scripts that time LR002 on openai's sdist (``lr002_keys.py``,
    ``lr002_phases.py``): key counts, runs, the sdist or its download cache, and the
    ``lint_rules`` packages to time beside the installed one."""
    parser.add_argument("--keys", default=keys, help="comma-separated key counts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sdist", type=Path, help="an sdist (.tar.gz) instead of downloading")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "lr002-sdists")
    parser.add_argument("--base", type=Path, action="append", help=base_help)


def download(name: str, version: str, cache: Path) -> Path:
    """The sdist ``name==version`` in ``cache``, downloaded with pip unless it is there."""
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"{name}-{version}.tar.gz"))
    if found:
        return found[0]
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*pip, f"{name}=={version}", "-d", str(cache)], check=True)
    return next(cache.glob(f"{name}-{version}.tar.gz"))


def unpack(sdist: Path, into: Path) -> Path:
    """Unpack ``sdist`` into ``into``; the tree (its one top directory)."""
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    [tree] = [path for path in into.iterdir() if path.is_dir()]
    return tree


def src_modules(tree: Path) -> list[tuple[Path, str]]:
    """Each module of the packages under ``tree/src/`` and its name, in path order; a
    directory that is not importable (``src/mcp-types/``, a separate distribution kept
    beside the package) is left out."""
    modules = []
    for path in sorted((tree / "src").glob("*/**/*.py")):
        module = ".".join(path.relative_to(tree / "src").with_suffix("").parts)
        if "-" not in module:
            modules.append((path, module.removesuffix(".__init__")))
    return modules


def literal_fields(modules: Iterable[tuple[Path, str]]) -> dict[str, str]:
    """``{"Class.attr": "module:Class.attr"}`` for every class attribute annotated
    ``Literal[...]`` of strings in ``modules`` (each file and its module name), the first
    of each key in their order."""
    fields: dict[str, str] = {}
    for path, module in modules:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for statement in node.body:
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and _is_string_literal(statement.annotation)
                ):
                    key = f"{node.name}.{statement.target.id}"
                    fields.setdefault(key, f"{module}:{key}")
    return fields


def _is_string_literal(annotation: ast.expr) -> bool:
    if not (isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name)):
        return False
    if annotation.value.id != "Literal":
        return False
    index = annotation.slice
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in items)
