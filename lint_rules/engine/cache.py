"""The result cache under ``.lint_rules_cache/``.

One file per *run key* (tool version and source, selected rules, configuration,
run options that change results) under the root of the configuration that governs
the files; inside it, per path, the content digest, the findings and the fingerprint
of the file's directory (what the rules' ``cache_fingerprint`` say about it, e.g. the
typos configuration that governs it), and, for a result other files of the project
decided (``Project.note_read``), the project's ``stamp`` it holds for. A file whose
digest and fingerprints match is not read by a rule, let alone parsed.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lint_rules import quick
from lint_rules.engine.results import FileResult, RunOptions
from lint_rules.rule import Edit, Finding, Fix, Rule

if TYPE_CHECKING:
    from lint_rules.analysis.project import Project
    from lint_rules.config import Config

CACHE_DIRECTORY = ".lint_rules_cache"
_PACKAGE_DIRECTORY = Path(__file__).parent.parent
"""The lint_rules package: its sources are part of the run key."""


def content_digest(data: bytes) -> str:
    """The cache's fingerprint of a file's bytes."""
    return quick.digest(data)


class ResultCache:
    """Findings by path and content digest, for one run key."""

    def __init__(
        self,
        location: Path,
        entries: dict[str, list[Any]],
        project: Project,
        rules: Sequence[Rule] = (),
    ) -> None:
        self.location = location
        self.entries = entries
        self.project = project
        self.rules = rules
        self._fingerprints: dict[Path, str] = {}
        self._project_stamp: str | None = None

    @classmethod
    def open(
        cls, config: Config, rules: Sequence[Rule], options: RunOptions, project: Project
    ) -> ResultCache:
        """The cache for this configuration, its project and these (built, selected)
        rules, empty if missing or unreadable."""
        import json  # only when the cache is used

        location = config.root / CACHE_DIRECTORY / f"{run_key(config, rules, options)}.json"
        try:
            entries = json.loads(location.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            entries = {}
        return cls(location, entries if isinstance(entries, dict) else {}, project, rules)

    def fingerprint(self, directory: Path) -> str:
        """What the rules' ``cache_fingerprint`` say about ``directory``, once per run."""
        found = self._fingerprints.get(directory)
        if found is None:
            found = self._fingerprints[directory] = "|".join(
                rule.cache_fingerprint(directory) for rule in self.rules
            )
        return found

    def project_stamp(self) -> str:
        """The project's ``stamp``, once per run and only when an entry needs it."""
        if self._project_stamp is None:
            self._project_stamp = self.project.stamp()
        return self._project_stamp

    def lookup(self, path: Path, data: bytes | None = None) -> FileResult | None:
        """The cached result for ``path`` if its content is unchanged (or is ``data``:
        an editor's unsaved text)."""
        entry = self.entries.get(str(path))
        if not isinstance(entry, list) or len(entry) != 4:
            return None
        if entry[2] != self.fingerprint(path.parent):
            return None
        if entry[3] is not None and entry[3] != self.project_stamp():
            return None  # it read other files of the project, and one of them changed
        if data is None:
            try:
                data = path.read_bytes()
            except OSError:
                return None
        digest = content_digest(data)
        if entry[0] != digest:
            return None
        return FileResult(
            path,
            [_finding(row) for row in entry[1]],
            digest,
            cached=True,
            reads_project=entry[3] is not None,
        )

    def save(self, results: Sequence[FileResult]) -> None:
        """Store the results that have a digest; keep entries of other paths. Nothing is
        written when every result came from the cache (a warm run)."""
        changed = False
        for result in results:
            if result.digest and not result.cached:
                rows = [_row(finding) for finding in result.findings]
                fingerprint = self.fingerprint(result.path.parent)
                stamp = self.project_stamp() if result.reads_project else None
                entry = [result.digest, rows, fingerprint, stamp]
                changed = changed or self.entries.get(str(result.path)) != entry
                self.entries[str(result.path)] = entry
        if not changed:
            return
        directory = self.location.parent
        try:
            directory.mkdir(exist_ok=True)
            ignore_file = directory / ".gitignore"
            if not ignore_file.exists():
                ignore_file.write_text("# Created by lint_rules.\n*\n", encoding="utf-8")
            import json

            quick.write_file(str(self.location), json.dumps(self.entries).encode())
        except OSError:
            pass  # a cache that cannot be written only costs time


def run_key(config: Config, rules: Sequence[Rule], options: RunOptions) -> str:
    """A digest of everything besides file content that decides the findings."""
    import json

    sources = {
        _PACKAGE_DIRECTORY,
        *(Path(sys.modules[type(rule).__module__].__file__ or "") for rule in rules),
    }
    stamps = sorted(
        (str(file), file.stat().st_size, file.stat().st_mtime_ns)
        for source in sources
        for file in (source.rglob("*.py") if source.is_dir() else [source])
    )
    dependencies = sorted({path for rule in rules for path in rule.dependencies()})
    described = {
        "tool": stamps,
        "dependencies": [_stamp(path) for path in dependencies],
        "rules": sorted(rule.CODE for rule in rules),
        "config": {
            **{key: value for key, value in asdict(config).items() if key != "validated"},
            "root": str(config.root),
        },
        "include_generated": options.include_generated,
    }
    return quick.digest(json.dumps(described, sort_keys=True, default=str).encode())


def _stamp(path: Path) -> tuple[str, str] | str:
    """A dependency by content: an edit that keeps its size and modification time (a
    checkout, a restored time stamp) still changes the key."""
    try:
        return str(path), content_digest(path.read_bytes())
    except OSError:
        return f"{path}: missing"


def _row(finding: Finding) -> list[Any]:
    fix = finding.fix
    fix_row = (
        None if fix is None else [fix.safe, [[e.start, e.end, e.replacement] for e in fix.edits]]
    )
    return [
        finding.code,
        finding.message,
        finding.line,
        finding.column,
        finding.end_line,
        finding.end_column,
        fix_row,
    ]


def _finding(row: list[Any]) -> Finding:
    code, message, line, column, end_line, end_column, fix_row = row
    fix = None
    if fix_row is not None:
        fix = Fix(tuple(Edit(start, end, text) for start, end, text in fix_row[1]), fix_row[0])
    return Finding(code, message, line, column, end_line, end_column, fix)
