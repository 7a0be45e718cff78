"""Cross-module consistency of a ``fix`` run: a rename lands in every module or in none.

A fix that renames a module-level name of one module (LR001 renaming a
definition, LR004 a private function) breaks every other module of the project
that imports that name and is not renamed along with it: because its fixes were
withheld, suppressed, or because it was not among the checked paths. The
reverse holds too: a module whose import was renamed needs the imported module
to define the new name after the run. ``settle`` finds such pairs before
anything is written (``engine/settle.py``) and has the offending renames withheld,
repeating until the set of changes is consistent; ``Modules.inconsistencies`` finds
them.

Only what can be seen without importing anything is followed: ``from M import
name`` (absolute or relative) and ``alias.name`` where ``alias`` is bound by
``import M``/``import M as alias``/``from P import m``, for modules ``M`` that
are files of the project.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path


def module_name(path: Path) -> str:
    """The dotted module name of a file, from the packages (``__init__.py``) around it."""
    parts = [] if path.name == "__init__.py" else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").is_file():
        parts.append(directory.name)
        directory = directory.parent
    return ".".join(reversed(parts))


class Modules:
    """The project's modules: their names and (lazily) their text on disk."""

    def __init__(self, files: Iterable[Path], root: Path) -> None:
        self.root = root
        self.files = [path.resolve() for path in files]
        self.modules = {module_name(path): path for path in self.files}
        self._disk: dict[Path, str | None] = {}
        self._uses: dict[Path, tuple[str, _Uses | None]] = {}
        """Each file's imports and attribute reads (``_Uses``), with the text they are of."""

    def disk_text(self, path: Path) -> str | None:
        if path not in self._disk:
            try:
                self._disk[path] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self._disk[path] = None
        return self._disk[path]

    def shown(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def inconsistencies(
        self, changes: Mapping[Path, tuple[str, str]]
    ) -> dict[Path, dict[str, str]]:
        """Per changed file (its text before and after, by resolved path): the names
        whose renames must be withheld, with the reason."""
        problems: dict[Path, dict[str, str]] = {}
        spelling: dict[str, list[Path]] = {}  # name -> the files whose final text spells it

        def final(path: Path) -> str | None:
            return changes[path][1] if path in changes else self.disk_text(path)

        def spelt(name: str) -> list[Path]:
            if name not in spelling:
                word = re.compile(
                    rf"(?<![\w.]){re.escape(name)}(?!\w)|\.\s*{re.escape(name)}(?!\w)"
                )
                spelling[name] = [
                    path
                    for path in self.files
                    if (text := final(path)) is not None and word.search(text) is not None
                ]
            return spelling[name]

        for path, (old_text, new_text) in changes.items():
            old_tree, new_tree = _parse(old_text), _parse(new_text)
            if old_tree is None or new_tree is None:
                continue
            module = module_name(path)
            # Names this module stops defining: no other module may still import them.
            removed = _module_names(old_tree) - _module_names(new_tree)
            for name in sorted(removed):
                for importer in self._importers(module, name, path, final, spelt(name)):
                    shown = self.shown(importer)
                    reason = f"`{name}` is imported by {shown}, which keeps that name"
                    problems.setdefault(path, {}).setdefault(name, reason)
                    break
            # Names this module now imports from another project module: it must define them.
            before_imports = set(_imported(old_tree, module, path))
            for source, name in _imported(new_tree, module, path):
                if (source, name) in before_imports:
                    continue
                source_path = self.modules.get(source)
                if source_path is None or source_path == path:
                    continue
                source_text = final(source_path)
                source_tree = _parse(source_text) if source_text is not None else None
                if source_tree is None or name in _module_names(source_tree):
                    continue
                if _is_package_name(self.modules, source, name):
                    continue
                reason = f"`{name}` would not be defined by {self.shown(source_path)}"
                for old in _renamed_away(old_tree, new_tree, module, path, source):
                    problems.setdefault(path, {}).setdefault(old, reason)
        return problems

    def _importers(
        self,
        module: str,
        name: str,
        defining: Path,
        final: Callable[[Path], str | None],
        spelt: Iterable[Path],
    ) -> Iterator[Path]:
        """The files (of ``spelt``: those whose final text spells ``name``) that import
        ``name`` from ``module`` or read it as an attribute of it."""
        for path in spelt:
            if path == defining:
                continue
            text = final(path)
            if text is None:
                continue
            uses = self._uses_of(path, text)
            if uses is not None and uses.uses(module, name):
                yield path

    def _uses_of(self, path: Path, text: str) -> _Uses | None:
        """``_Uses`` of ``path`` whose text is ``text`` (``None``: it does not parse), read
        once per text."""
        known = self._uses.get(path)
        if known is None or known[0] != text:
            tree = _parse(text)
            known = self._uses[path] = (
                text,
                None if tree is None else _Uses(tree, module_name(path), path),
            )
        return known[1]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _module_names(tree: ast.Module) -> set[str]:
    """Names bound at module level (outside functions and classes' bodies)."""
    names: set[str] = set()
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            for alias in statement.names:
                if alias.name != "*":
                    names.add(alias.asname or alias.name.split(".")[0])
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name != "*":
                        names.add(alias.asname or alias.name.split(".")[0])
    return names


def absolute_module(module: str | None, level: int, importer: str, importer_path: Path) -> str:
    """The absolute module a ``from`` import names, given the importing module."""
    if level == 0:
        return module or ""
    package = importer if importer_path.name == "__init__.py" else importer.rpartition(".")[0]
    parts = package.split(".") if package else []
    if level > 1:
        parts = parts[: len(parts) - (level - 1)]
    base = ".".join(parts)
    if module:
        return f"{base}.{module}" if base else module
    return base


def _imported(tree: ast.Module, importer: str, path: Path) -> Iterator[tuple[str, str]]:
    """``(module, name)`` for every ``from module import name`` in the file."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = absolute_module(node.module, node.level, importer, path)
            for alias in node.names:
                if alias.name != "*":
                    yield source, alias.name


def _renamed_away(
    old: ast.Module, new: ast.Module, importer: str, path: Path, source: str
) -> set[str]:
    before = {name for module, name in _imported(old, importer, path) if module == source}
    after = {name for module, name in _imported(new, importer, path) if module == source}
    return before - after


def _is_package_name(modules: Mapping[str, Path], source: str, name: str) -> bool:
    """``from package import submodule`` imports a module, not a name the package defines."""
    return f"{source}.{name}" in modules


class _Uses:
    """What one file imports and which attributes it reads, from one walk of its tree, to
    answer "does it import ``name`` from ``module`` or read it as an attribute of it?"
    for any ``module`` and ``name``."""

    def __init__(self, tree: ast.Module, importer: str, path: Path) -> None:
        self.imported: set[tuple[str, str]] = set()
        """``(module, name)`` of every ``from module import name``."""
        self.aliases: dict[str, set[str]] = {}
        """Module -> the names bound to it (``import M``, ``import M as a``,
        ``from P import m``)."""
        self.attributes: dict[str, set[str | None]] = {}
        """Attribute -> the dotted names it is read on (``None``: another receiver)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = absolute_module(node.module, node.level, importer, path)
                for alias in node.names:
                    self.imported.add((source, alias.name))
                    bound = alias.asname or alias.name
                    self.aliases.setdefault(f"{source}.{alias.name}", set()).add(bound)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases.setdefault(alias.name, set()).add(alias.asname or alias.name)
            elif isinstance(node, ast.Attribute):
                self.attributes.setdefault(node.attr, set()).add(_dotted(node.value))

    def uses(self, module: str, name: str) -> bool:
        if (module, name) in self.imported:
            return True
        aliases = self.aliases.get(module)
        return aliases is not None and not aliases.isdisjoint(self.attributes.get(name, ()))


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None
