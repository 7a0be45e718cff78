"""The layout of ``lint_rules``: which package may import which, and where state lives.

Rules, analysis and the codemod never import the engine (the engine calls them, and
a language server or another driver must be able to do so without it); project
state lives in the run's ``Project``, never in a module-level registry.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lint_rules

PACKAGE = Path(lint_rules.__file__).parent

# Module-level names that a module mutates and that are not project state, each with why.
PROCESS_STATE = {
    ("engine/run.py", "_worker"): "a worker process's own Worker (and Project)",
    ("timing.py", "_totals"): "this process's phase times, reset by each command",
    ("rule.py", "_frozen_blocks"): (
        "how many trees_kept_frozen blocks (runs) this process has open: the collector's"
        " frozen generation is the process's too"
    ),
    ("analysis/typos.py", "_EARLY"): (
        "typos runs started before the command line was read (start_early), for its check"
    ),
}


def _modules(*packages: str) -> list[Path]:
    return sorted(path for package in packages for path in (PACKAGE / package).rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement of ``path`` names (top level, in functions and
    under ``TYPE_CHECKING`` alike), relative imports made absolute."""
    package = _module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            # `from lint_rules import engine` names the package too.
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _violations(packages: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{_module_name(path)} imports {imported} (line {line})"
        for path in _modules(*packages)
        for line, imported in _imports(path)
        if any(imported == name or imported.startswith(name + ".") for name in forbidden)
    ]


def test_rules_analysis_and_codemod_never_import_the_engine() -> None:
    assert _violations(("rules", "analysis", "codemod"), ("lint_rules.engine",)) == []


def test_analysis_and_codemod_never_import_the_rules_or_the_output() -> None:
    forbidden = ("lint_rules.rules", "lint_rules.output", "lint_rules.cli")
    assert _violations(("analysis", "codemod"), forbidden) == []


def test_the_import_walk_sees_imports_inside_functions() -> None:
    module = PACKAGE / "codemod" / "misspellings.py"  # a real module: not a vacuous walk
    names = {name for _, name in _imports(module)}

    assert "lint_rules.rule" in names
    assert "lint_rules.codemod.scope_renamer" in names  # imported inside a method


_MUTATORS = frozenset(
    {"append", "add", "update", "setdefault", "pop", "clear", "extend", "insert", "remove"}
)


def _mutated_module_names(tree: ast.Module) -> set[str]:
    """Module-level names the module rebinds with ``global`` or mutates in place."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            names.update(node.names)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                    names.add(target.value.id)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in _MUTATORS
            and isinstance(node.func.value, ast.Name)
        ):
            names.add(node.func.value.id)
    return names


def _module_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
    return names


def _cached_functions(tree: ast.Module) -> set[str]:
    """Module-level functions memoized for the life of the process."""
    found = set()
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef):
            for decorator in statement.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                spelt = ast.unparse(target)
                if spelt in ("cache", "lru_cache", "functools.cache", "functools.lru_cache"):
                    found.add(statement.name)
    return found


def test_no_module_level_state_outside_the_project() -> None:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        relative = path.relative_to(PACKAGE).as_posix()
        mutated = _module_level_names(tree) & _mutated_module_names(tree)
        for name in sorted(mutated | _cached_functions(tree)):
            if (relative, name) not in PROCESS_STATE:
                found.append(f"{relative}: {name}")

    assert found == []
