"""Running the `typos` spell checker: found once, run per configuration, read as JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from lint_rules.rule import ConfigError

TYPOS_CONFIG_NAMES = ("typos.toml", "_typos.toml", ".typos.toml")
"""typos' own configuration files, besides ``[tool.typos]`` in pyproject.toml."""


@dataclass(frozen=True)
class Misspelling:
    """One typos finding: 1-based line, UTF-8 byte offset in that line, the word."""

    line: int
    byte_offset: int
    typo: str
    corrections: tuple[str, ...]


def find_typos() -> Path | None:
    """The typos executable beside the running Python (its venv), else on PATH."""
    name = "typos.exe" if os.name == "nt" else "typos"
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return beside
    found = shutil.which("typos")
    return Path(found) if found is not None else None


def run_typos_on_files(paths: Sequence[Path]) -> dict[Path, list[Misspelling]]:
    """typos' findings for ``paths``, one typos run per typos configuration directory.

    typos runs in the directory of the configuration that governs the files with
    paths relative to it, so that its excludes apply (``--force-exclude``); files
    no configuration governs are checked together, from their common directory.
    """
    roots: dict[Path, Path | None] = {}  # directory -> its typos root, looked up once
    groups: dict[Path | None, list[Path]] = {}
    for path in paths:
        if path.parent not in roots:
            roots[path.parent] = typos_root(path.parent)
        groups.setdefault(roots[path.parent], []).append(path)
    found: dict[Path, list[Misspelling]] = {}
    for root, group in groups.items():
        if root is None:
            root = Path(os.path.commonpath([os.path.abspath(path.parent) for path in group]))
        by_name = {_relative_to(path, root): path for path in group}
        listing = "".join(name + "\n" for name in by_name)
        for name, misspelling in _run_typos(["--file-list", "-"], root, listing):
            if name in by_name:
                found.setdefault(by_name[name], []).append(misspelling)
    return found


def run_typos_on_text(path: Path, text: str) -> list[Misspelling]:
    """typos' findings for ``text`` as if it were the file ``path``, with its configuration."""
    directory = Path(os.path.abspath(path)).parent
    root = typos_root(directory)
    config = typos_config(root) if root is not None else None
    with tempfile.TemporaryDirectory(prefix="lint_rules-typos-") as scratch:
        copy = Path(scratch) / (path.name if path.suffix in (".py", ".pyi") else "stdin.py")
        copy.write_bytes(text.encode("utf-8", errors="surrogateescape"))
        arguments = [copy.name] if config is None else ["--config", str(config), copy.name]
        return [found for _, found in _run_typos(arguments, Path(scratch), "")]


def _run_typos(arguments: list[str], cwd: Path, stdin: str) -> Iterator[tuple[str, Misspelling]]:
    executable = find_typos()
    if executable is None:
        raise ConfigError(
            "LR004 needs the `typos` executable (PyPI package `typos`): not found beside"
            f" {sys.executable} nor on PATH; install it or deselect LR004"
        )
    command = [str(executable), "--format", "json", "--force-exclude", "--no-check-filenames"]
    try:
        completed = subprocess.run(
            [*command, *arguments], cwd=cwd, input=stdin.encode(), capture_output=True, check=False
        )
    except OSError as error:
        raise ConfigError(f"LR004 cannot run typos ({executable}): {error}") from error
    if completed.returncode not in (0, 2):  # 2: misspellings found
        problem = completed.stderr.decode(errors="replace").strip() or "no message"
        raise ConfigError(f"typos failed in {cwd} (exit {completed.returncode}): {problem}")
    for raw in completed.stdout.decode(errors="replace").splitlines():
        try:
            entry = json.loads(raw)
        except ValueError as error:
            raise ConfigError(f"typos printed something that is not JSON: {raw!r}") from error
        if entry.get("type") == "typo" and "line_num" in entry:  # not a file name
            corrections = tuple(str(word) for word in entry.get("corrections") or ())
            yield (
                str(entry["path"]),
                Misspelling(
                    int(entry["line_num"]), int(entry["byte_offset"]), entry["typo"], corrections
                ),
            )


def typos_root(directory: Path) -> Path | None:
    """The nearest directory at or above ``directory`` holding a typos configuration."""
    start = Path(os.path.abspath(directory))
    for candidate in (start, *start.parents):
        if typos_config(candidate) is not None:
            return candidate
    return None


def typos_config(directory: Path) -> Path | None:
    for name in TYPOS_CONFIG_NAMES:
        if (directory / name).is_file():
            return directory / name
    pyproject = directory / "pyproject.toml"
    try:
        if "[tool.typos" in pyproject.read_text(encoding="utf-8", errors="replace"):
            return pyproject
    except OSError:
        pass
    return None


def _relative_to(path: Path, root: Path) -> str:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, root)
    return absolute if relative.startswith("..") else Path(relative).as_posix()
