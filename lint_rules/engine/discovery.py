"""Which files to lint: walk the given paths, honouring .gitignore and ``exclude``."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

PYTHON_SUFFIXES = (".py", ".pyi")
EXPLICIT_SUFFIXES = (*PYTHON_SUFFIXES, ".pyw", "")
"""The suffixes of a file named explicitly that is linted (as ruff: a script without
one is Python); a named ``README.md`` or ``notes.txt`` is skipped, never parsed."""
ALWAYS_SKIPPED = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        "__pycache__",
        "node_modules",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".lint_rules_cache",
    }
)
"""Directory names never walked into (they can still be named explicitly)."""


class DiscoveryError(Exception):
    """A path given on the command line cannot be linted; the message names it."""


Scope = Callable[[Path], tuple[Path, Sequence[str]]]
"""For a directory: the root of the configuration that governs it and its ``exclude``."""


def discover(
    paths: Sequence[Path],
    root: Path,
    exclude: Sequence[str],
    scope: Scope | None = None,
    skipped: list[Path] | None = None,
) -> list[Path]:
    """The Python files under ``paths``, sorted, without duplicates.

    Directories are walked (following symlinks, each real directory once, so a
    symlink loop ends); files and directories matched by a .gitignore (at or
    below the root) or by ``exclude`` (gitignore syntax, relative to the root)
    are skipped. With ``scope``, the root and ``exclude`` of each directory's entries
    are those of the configuration that governs the directory (``root`` and
    ``exclude`` are then unused). A file named explicitly is linted, unless ``exclude``
    matches it, when its suffix is Python's or it has none (``EXPLICIT_SUFFIXES``); one
    with another suffix is not Python: it is appended to ``skipped`` (when given) and
    not linted. A missing path raises ``DiscoveryError``.
    """
    exclusions = _Exclusions(scope if scope is not None else lambda _: (root, exclude))
    found: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            raise DiscoveryError(f"{path}: no such file or directory")
        absolute = Path(os.path.abspath(path))
        if path.is_dir():
            for file in _walk(absolute, exclusions):
                found.setdefault(file)
        elif path.suffix.lower() not in EXPLICIT_SUFFIXES:
            if skipped is not None:
                skipped.append(path)
        elif not exclusions.excludes(str(absolute), is_dir=False):
            found.setdefault(absolute)
    return sorted(found)


def project_files(root: Path) -> list[Path]:
    """Every Python file of the project under ``root`` (its .gitignore applies, no
    ``exclude``): what a ``Project`` indexes."""
    return discover([root], root, ())


class _Exclusions:
    """``exclude`` of the configuration that governs each directory, compiled once each."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self._by_directory: dict[str, tuple[str, pathspec.GitIgnoreSpec | None]] = {}
        self._specs: dict[tuple[str, ...], pathspec.GitIgnoreSpec] = {}

    def root(self, directory: str) -> Path:
        return self.scope(Path(directory))[0]

    def rules_for(self, directory: str) -> tuple[str, pathspec.GitIgnoreSpec | None]:
        """The root prefix and the compiled ``exclude`` for entries of ``directory``."""
        found = self._by_directory.get(directory)
        if found is None:
            root, exclude = self.scope(Path(directory))
            spec = None
            if exclude:
                key = tuple(exclude)
                spec = self._specs.get(key)
                if spec is None:
                    spec = self._specs[key] = _spec(exclude)
            found = self._by_directory[directory] = (str(root) + os.sep, spec)
        return found

    def excludes(self, path: str, is_dir: bool) -> bool:
        """Whether ``exclude`` matches ``path`` (an absolute path)."""
        root_prefix, spec = self.rules_for(os.path.dirname(path))
        return (
            spec is not None
            and path.startswith(root_prefix)
            and spec.match_file(_relative(path, root_prefix, is_dir))
        )


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    import pathspec  # only when there are patterns: a one-file run may have none

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _walk(top: Path, exclusions: _Exclusions) -> Iterable[Path]:
    # Plain strings, not Path objects: this loop runs once per directory entry.
    ancestors = _ancestors(top, exclusions.root(str(top)))
    ignores = [spec for spec in map(_gitignore, ancestors) if spec is not None]
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[str, list[tuple[str, pathspec.GitIgnoreSpec]]]] = [(str(top), ignores)]
    while stack:
        directory, inherited = stack.pop()
        try:
            status = os.stat(directory)
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError:  # unreadable, vanished, or a symlink loop (ELOOP)
            continue
        if (status.st_dev, status.st_ino) in seen:
            continue
        seen.add((status.st_dev, status.st_ino))
        own = _gitignore(Path(directory))
        active = [*inherited, own] if own is not None else inherited
        root_prefix, excluded = exclusions.rules_for(directory)
        for entry in entries:
            try:
                is_dir = entry.is_dir()
                is_python_file = (
                    not is_dir and entry.name.endswith(PYTHON_SUFFIXES) and entry.is_file()
                )
            except OSError:
                continue
            if not (is_dir or is_python_file) or (is_dir and entry.name in ALWAYS_SKIPPED):
                continue
            path = entry.path
            if _ignored(active, path, is_dir):
                continue
            if (
                excluded is not None
                and path.startswith(root_prefix)
                and excluded.match_file(_relative(path, root_prefix, is_dir))
            ):
                continue
            if is_dir:
                stack.append((path, active))
            else:
                yield Path(path)


def _ancestors(top: Path, root: Path) -> list[Path]:
    """The directories from ``root`` down to ``top``'s parent, when ``top`` is inside it."""
    try:
        relative = top.relative_to(root)
    except ValueError:
        return []
    return [root.joinpath(*relative.parts[:depth]) for depth in range(len(relative.parts))]


def _gitignore(directory: Path) -> tuple[str, pathspec.GitIgnoreSpec] | None:
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    return str(directory) + os.sep, _spec(lines)


def _ignored(specs: Sequence[tuple[str, pathspec.GitIgnoreSpec]], path: str, is_dir: bool) -> bool:
    # The deepest .gitignore with an opinion wins, as in git.
    for base_prefix, spec in reversed(specs):
        verdict = spec.check_file(_relative(path, base_prefix, is_dir)).include
        if verdict is not None:
            return verdict
    return False


def _relative(path: str, base_prefix: str, is_dir: bool) -> str:
    relative = path[len(base_prefix) :].replace(os.sep, "/")
    return relative + "/" if is_dir else relative
