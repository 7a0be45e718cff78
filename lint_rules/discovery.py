"""Which files to lint: walk the given paths, honouring .gitignore and ``exclude``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

PYTHON_SUFFIXES = (".py", ".pyi")
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


def discover(paths: Sequence[Path], root: Path, exclude: Sequence[str]) -> list[Path]:
    """The Python files under ``paths``, sorted, without duplicates.

    Directories are walked (following symlinks, each real directory once, so a
    symlink loop ends); files and directories matched by a .gitignore (at or
    below ``root``) or by ``exclude`` (gitignore syntax, relative to ``root``)
    are skipped. A file named explicitly is linted whatever its suffix, unless
    ``exclude`` matches it. A missing path raises ``DiscoveryError``.
    """
    excluded = _spec(exclude) if exclude else None
    found: dict[Path, None] = {}
    for path in paths:
        if not path.exists():
            raise DiscoveryError(f"{path}: no such file or directory")
        absolute = Path(os.path.abspath(path))
        if path.is_dir():
            for file in _walk(absolute, root, excluded):
                found.setdefault(file)
        elif not _excluded_file(excluded, root, absolute):
            found.setdefault(absolute)
    return sorted(found)


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    import pathspec  # only when there are patterns: a one-file run may have none

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _walk(top: Path, root: Path, excluded: pathspec.GitIgnoreSpec | None) -> Iterable[Path]:
    # Plain strings, not Path objects: this loop runs once per directory entry.
    root_prefix = str(root) + os.sep
    ignores = [spec for spec in map(_gitignore, _ancestors(top, root)) if spec is not None]
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


def _excluded_file(spec: pathspec.GitIgnoreSpec | None, root: Path, path: Path) -> bool:
    if spec is None:
        return False
    root_prefix = str(root) + os.sep
    return str(path).startswith(root_prefix) and spec.match_file(
        _relative(str(path), root_prefix, is_dir=False)
    )


def _relative(path: str, base_prefix: str, is_dir: bool) -> str:
    relative = path[len(base_prefix) :].replace(os.sep, "/")
    return relative + "/" if is_dir else relative
