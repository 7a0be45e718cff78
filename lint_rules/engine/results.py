"""What a run is asked to do and what it found: plain data, importing no other engine module.

``cache.py``, ``fixes.py``, ``engine.py`` and ``cli.py`` share these types; keeping
them here lets each of those import the others' types without a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
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


@dataclass(frozen=True)
class Change:
    """A file's fixed text, verified but not yet written (``fix`` writes after every file)."""

    before: str
    after: str
    encoding: str
    applied: int
    ignored: tuple[str, ...] = ()
    """The codes ``per-file-ignores`` turns off for the file (to fix it again)."""
    read: bytes = b""
    """The file's bytes as read: it is written only if it still holds them."""
    replaced: frozenset[str] = frozenset()
    """The texts the applied edits replace (old names): what blocking withholds them."""
    blocked: Mapping[str, str] = field(default_factory=dict)
    """The names whose renames were withheld (name -> reason), kept when fixed again."""


@dataclass
class FileResult:
    """The outcome for one file. ``findings`` are those left after any fix."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    digest: str = ""
    parsed: bool = False
    cached: bool = False
    fixed: int = 0
    """How many fixes were written (or, with ``--diff``, would be)."""
    diff: str = ""
    fixed_source: bytes | None = None
    """For stdin in fix mode: the fixed source, in the input's encoding."""
    refused: str | None = None
    """Why the fixes were withheld (the result failed verification or cannot be encoded)."""
    write_error: str | None = None
    """Why the fixed file could not be written."""
    not_written: str | None = None
    """Why a fixed file was deliberately not written (it changed while fixing)."""
    note: str | None = None
    """What the user should know about how the file was written (through a symlink)."""
    change: Change | None = None
    """In fix mode, before writing: the verified change to the file, if any."""
    reads_project: bool = False
    """Whether other files of the project decided findings (see ``note_project_read``):
    then the cached result holds only while no file of the project changes."""


@dataclass(frozen=True)
class RunResult:
    """Every file's result, sorted by path."""

    files: list[FileResult]
    skipped: list[Path] = field(default_factory=list)
    """The files named explicitly that are not Python (``README.md``): not linted."""
    dependencies: frozenset[Path] = frozenset()
    """Files besides the checked ones whose content decided findings (the rules'
    ``dependencies``: modules ``literals`` and ``protocols`` name, ...)."""
    consulted: Mapping[str, object] = field(default_factory=dict)
    """The directories the lookups of those modules searched and the sources they read,
    each with its size and modification time before (``Declarations.consulted``); what a
    record of the run in the cache holds by. Empty when the run uses no cache
    (``RunOptions.use_cache``): nothing records it then."""

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
    replaced: frozenset[str] = frozenset()
    """The texts the applied edits replaced."""
