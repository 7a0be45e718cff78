"""A ``fix`` run's renames made consistent across modules before anything is written.

A rename that lands in one module but not in another that imports the name breaks
the project (``analysis/consistency.py`` tells which); ``settle`` has such renames
withheld, file by file, until the set of changes is consistent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from lint_rules.analysis.consistency import Modules
from lint_rules.engine.discovery import discover
from lint_rules.engine.results import FileResult

MAX_ROUNDS = 5
"""How many times withheld renames may uncover further inconsistencies."""

Refix = Callable[[FileResult, Mapping[str, str]], None]
"""Fix one file again, withholding fixes that replace the given names (name -> reason)."""


def settle(results: Sequence[FileResult], root: Path, exclude: Sequence[str], refix: Refix) -> None:
    """Withhold renames until no module imports a name another module no longer defines."""
    if not any(result.change is not None for result in results):
        return
    modules = Modules(discover([root], root, exclude), root)
    by_path = {result.path.resolve(): result for result in results}
    blocked: dict[Path, dict[str, str]] = {}
    for _ in range(MAX_ROUNDS):
        changes = {
            path: (result.change.before, result.change.after)
            for path, result in by_path.items()
            if result.change is not None
        }
        problems = modules.inconsistencies(changes)
        grown = False
        for path, names in problems.items():
            entry = blocked.setdefault(path, {})
            for name, reason in names.items():
                if name not in entry:
                    entry[name] = reason
                    grown = True
        if not grown:
            return
        for path in problems:
            refix(by_path[path], blocked[path])
