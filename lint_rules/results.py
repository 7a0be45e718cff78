"""What a run is asked to do and what it found: plain data, importing no other engine module.

``cache.py``, ``fixes.py``, ``engine.py`` and ``cli.py`` share these types; keeping
them here lets each of those import the others' types without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from lint_rules.rule import Finding


@dataclass(frozen=True)
class RunOptions:
    """What a run does besides checking."""

    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    include_generated: bool = False
    use_prefilter: bool = True
    use_cache: bool = True
    jobs: int = 1


@dataclass
class FileResult:
    """The outcome for one file. ``findings`` are those left after any fix."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    digest: str = ""
    parsed: bool = False
    cached: bool = False
    fixed: int = 0
    diff: str = ""
    fixed_source: bytes | None = None
    """For stdin in fix mode: the fixed source, in the input's encoding."""
    refused: str | None = None
    """Why the fixes were not applied (the result would not parse or encode)."""
    write_error: str | None = None
    """Why the fixed file could not be written."""


@dataclass(frozen=True)
class RunResult:
    """Every file's result, sorted by path."""

    files: list[FileResult]

    @property
    def parsed_count(self) -> int:
        return sum(result.parsed for result in self.files)


@dataclass(frozen=True)
class FixOutcome:
    """The result of fixing one text: the new text, how many fixes it holds, what is left."""

    text: str
    applied: int
    findings: list[Finding]
    refused: str | None = None
