"""Qualified renames judged on the whole project by the reference engine (``references.py``).

LR001 asks, for one file's text, "which occurrences of a qualified target's old spelling
are renamed, and which are reported with the reason they are not?". The answer comes
from one ``plan`` over the project's files, made on first use for every qualified target
defined in the project (its module is one of the project's files) and kept for the run
(``Project.shared``): the engine starts only if an old spelling occurs in the files.

A target is judged whole:

- every occurrence is the target's or provably something else's: each of the target's
  is a finding with a safe fix, and together they rename it in one step;
- some occurrence is unknown (the receiver's type is not known, a keyword forwarded
  through ``**options``, ...): the rename is *withheld*: each unknown site is a finding
  with its reason and no fix, and each of the target's occurrences a finding with an
  unsafe fix (``--unsafe-fixes`` applies the known part);
- the renamed files would not compile (``rename_problems``): withheld, with that reason.

``fix`` re-checks a file after applying its edits: its occurrences are then matched, in
order, to the occurrences the plan read minus the renamed ones, so the sites left are
still reported with their reasons. A file whose occurrences match neither (changed in
another way) gets findings without fixes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.analysis.consistency import module_name
from lint_rules.analysis.renames import Target, withheld_note
from lint_rules.codemod.references import (
    OTHER,
    PLAN_KINDS,
    TARGET,
    UNKNOWN,
    EngineError,
    Occurrence,
    Plan,
    RenameTarget,
    classify_attributes,
    occurrences_of,
    plan,
    reference_command,
    rename_problems,
)

if TYPE_CHECKING:
    from lint_rules.analysis.project import FileMap


@dataclass(frozen=True)
class Site:
    """One occurrence of a qualified target's old spelling in a file, and what LR001 does
    with it: rename it (``renamed``: a safe fix, or an unsafe one when ``safe`` is false)
    or report it; ``note`` says why it is not renamed, or why the rename is not safe."""

    line: int
    column: int
    """1-based line, 0-based character column."""
    old: str
    key: str
    """The target as configured (``pkg.fields:Field.__init__(missing)``)."""
    new: str
    renamed: bool
    safe: bool = True
    note: str = ""


@dataclass
class _Judged:
    target: Target
    reference: RenameTarget
    withheld: str = ""
    """Why the target's rename is withheld (``""``: applied whole)."""


@dataclass
class ProjectRenames:
    """The engine's verdicts on the qualified targets defined in one project.

    ``targets`` are the configured qualified entries; those whose module is not one of
    ``files`` (a library's, renamed in its users) are left to the per-file resolver
    (``handles`` tells which are judged here).
    """

    root: Path
    files: Sequence[Path]
    targets: Sequence[Target]
    command: Sequence[str] | None = None
    _judged: dict[Target, _Judged] = field(default_factory=dict)
    _plan: Plan | None = None
    _error: str | None = None
    _loud: set[Path] | None = None
    _every: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        modules: dict[str, Path] = {}
        lasts = {target.module.rpartition(".")[2] for target in self.targets}
        for path in self.files:
            # Only a file named like a module's last part can be that module.
            last = path.parent.name if path.name == "__init__.py" else path.stem
            if last in lasts:
                modules.setdefault(module_name(path), path)
        for target in self.targets:
            module = modules.get(target.module)
            if module is None:
                continue
            reference = RenameTarget(
                module.resolve(),
                target.owner,
                target.old,
                keyword=target.kind == "keyword",
                member=target.kind == "member",
            )
            self._judged[target] = _Judged(target, reference)
        spellings = {target.old for target in self.targets}
        self._every = frozenset(
            old for old in spellings if all(t in self._judged for t in self.targets if t.old == old)
        )

    def prepare(self, map_files: FileMap | None = None) -> None:
        """Make the plan now (before worker processes start, which then share it); its
        files are scanned by ``map_files`` (``plan``: in this process by default)."""
        self._make_plan(map_files)

    def handles(self, target: Target) -> bool:
        return target in self._judged

    @property
    def spellings(self) -> frozenset[str]:
        return frozenset(target.old for target in self._judged)

    def sites(self, path: Path, text: str, tree: ast.Module | None = None) -> list[Site]:
        """What LR001 reports in ``path`` (whose text is ``text``, whose syntax tree is
        ``tree`` when the caller has it) for the judged targets: the file is walked once for
        every spelling it holds."""
        resolved = self._plan.resolve(path) if self._plan is not None else path.resolve()
        now = self._plan.read_occurrences(resolved, text) if self._plan is not None else None
        if now is None:
            now = _occurrences_of(resolved, text, self.spellings, tree)
        forwarded = self._forwarded_sites(resolved, text, now)
        if not any(now.values()):
            return forwarded
        self._make_plan()
        found: list[Site] = list(forwarded)
        for spelling, current in now.items():
            if current:
                found.extend(self._sites_of(resolved, spelling, current))
        return sorted(found, key=lambda site: (site.line, site.column, site.key))

    def quiet(self, path: Path, text: str) -> bool:
        """Whether ``sites`` would report nothing in ``path`` (whose text is ``text``),
        known from the plan alone, without parsing the file: the plan is made, read this
        very text, and decided every occurrence there (of every target) another thing's.
        ``False`` when that is not known."""
        if self._plan is None or self._error is not None:
            return False
        resolved = self._plan.resolve(path)
        if self._plan.read_occurrences(resolved, text) is None:
            return False
        if self._loud is None:  # the files with an occurrence of some target not another's
            self._loud = {
                o.path
                for judged in self._judged.values()
                for o in self._plan.occurrences.get(judged.reference, ())
                if o.verdict != OTHER
            }
        return resolved not in self._loud

    def handles_every(self, spelling: str) -> bool:
        """Whether every configured target of ``spelling`` is judged here."""
        return spelling in self._every

    # -- the plan -----------------------------------------------------------------------------

    def _make_plan(self, map_files: FileMap | None = None) -> None:
        if self._plan is not None or self._error is not None:
            return
        references = [judged.reference for judged in self._judged.values()]
        try:
            self._plan = plan(self.root, self.files, references, self.command, map_files)
        except EngineError as error:
            self._error = f"the reference engine could not run: {error}"
            return
        for judged in self._judged.values():
            unknown = self._plan.unknown(judged.reference)
            if unknown:
                places = sorted({o.path for o in unknown})
                judged.withheld = (
                    f"{_count(len(unknown), 'occurrence')} not known to be the target's"
                    f" ({_count(len(places), 'file')})"
                )
        # One call for every target (each file read and compiled once for all of them);
        # a target configured twice (two spellings, two new names) is verified on its own.
        first: dict[RenameTarget, _Judged] = {}
        again: list[_Judged] = []
        for judged in self._judged.values():
            if judged.withheld:
                continue
            if judged.reference in first:
                again.append(judged)
            else:
                first[judged.reference] = judged
        news = {r: j.target.new for r, j in first.items()}
        problems = rename_problems(self._plan, news, map_files)
        for reference, judged in first.items():
            judged.withheld = problems.get(reference, "")
        for judged in again:
            alone = rename_problems(self._plan, {judged.reference: judged.target.new})
            judged.withheld = alone.get(judged.reference, "")

    def _forwarded_sites(
        self, path: Path, text: str, now: Mapping[str, list[Occurrence]]
    ) -> list[Site]:
        """The keys of keyword targets read in ``path`` from a ``**kwargs`` dictionary that
        another function hands on (``forwarded`` occurrences), or written in a dictionary
        unpacked into a call (``unpacked``): the plan finds them, the file's own syntax
        does not say they are the target's; each is reported."""
        keyword = [
            j
            for j in self._judged.values()
            if j.reference.keyword and (f'"{j.target.old}"' in text or f"'{j.target.old}'" in text)
        ]
        if not keyword:
            return []
        self._make_plan()
        if self._plan is None:
            return []
        sites = []
        for judged in keyword:
            here = {o.start for o in now.get(judged.target.old, [])}
            for o in self._plan.in_file(judged.reference, path):
                if o.kind in PLAN_KINDS and o.start not in here:
                    why = judged.withheld
                    note = f"{o.reason}; {withheld_note(why)}" if why else o.reason
                    sites.append(_site(o, judged.target, False, note=note))
        return sites

    def _sites_of(self, path: Path, spelling: str, current: list[Occurrence]) -> list[Site]:
        judged = [j for j in self._judged.values() if j.target.old == spelling]
        if self._error is not None or self._plan is None:
            why = self._error or "the reference engine gave no answer"
            return [_site(o, judged[0].target, False, note=why) for o in current]
        planned = {j.target: self._plan.in_file(j.reference, path) for j in judged}
        read = next((found for found in planned.values() if found), [])
        read = [o for o in read if o.kind not in PLAN_KINDS]  # reported by `_forwarded_sites`
        renamed_safe = {
            o.start
            for j in judged
            if not j.withheld
            for o in planned[j.target]
            if o.verdict == TARGET
        }
        renamed_any = {o.start for j in judged for o in planned[j.target] if o.verdict == TARGET}
        for renamed in (set[object](), renamed_safe, renamed_any):
            kept = [o for o in read if o.start not in renamed]
            if [o.kind for o in kept] == [o.kind for o in current]:
                break
        else:
            reason = "the file changed since its references were read: run `check` again"
            return [_site(o, judged[0].target, False, note=reason) for o in current]
        sites: list[Site] = []
        for now, before in zip(current, kept, strict=True):
            verdicts = {
                j.target: next(o for o in planned[j.target] if o.start == before.start)
                for j in judged
                if planned[j.target]
            }
            site = self._decide(now, verdicts)
            if site is not None:
                sites.append(site)
        return sites

    def _decide(self, now: Occurrence, verdicts: Mapping[Target, Occurrence]) -> Site | None:
        for target, verdict in verdicts.items():
            if verdict.verdict == TARGET:
                why = self._judged[target].withheld
                note = withheld_note(why) if why else ""
                return _site(now, target, True, safe=not why, note=note)
        for target, verdict in verdicts.items():
            if verdict.verdict == UNKNOWN:
                why = self._judged[target].withheld
                note = f"{verdict.reason}; {withheld_note(why)}" if why else verdict.reason
                return _site(now, target, False, note=note)
        return None  # another thing's (or a target no longer defined): not reported


def _site(
    occurrence: Occurrence, target: Target, renamed: bool, *, safe: bool = True, note: str = ""
) -> Site:
    line, column = occurrence.start
    return Site(line, column, target.old, target.key, target.new, renamed, safe, note)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _occurrences(path: Path, text: str, spelling: str) -> list[Occurrence]:
    return _occurrences_of(path, text, (spelling,)).get(spelling, [])


def _occurrences_of(
    path: Path, text: str, spellings: Iterable[str], tree: ast.Module | None = None
) -> dict[str, list[Occurrence]]:
    try:
        return occurrences_of(path.resolve(), text, spellings, tree)
    except (SyntaxError, ValueError):
        return {}


@dataclass
class BareAttributes:
    """The engine's verdicts on attributes spelt like a bare rename of a name the project
    defines (``split = "split_statements"``): ``text.split(...)`` on a ``str`` is not the
    project's ``split``. Made on first use, for every such spelling at once."""

    root: Path
    files: Sequence[Path]
    spellings: frozenset[str]
    command: Sequence[str] | None = None
    _found: dict[str, list[Occurrence]] | None = None
    _error: str | None = None

    def prepare(self) -> None:
        """Ask the engine now (first use, or before worker processes start)."""
        if self._found is None and self._error is None:
            try:
                self._found = classify_attributes(
                    self.root, self.files, set(self.spellings), self.command
                )
            except EngineError as error:
                self._error = f"the reference engine could not run: {error}"

    def verdicts(self, path: Path, text: str, spelling: str) -> dict[tuple[int, int], Occurrence]:
        """The verdict on each attribute ``.spelling`` of ``path``'s current ``text``, by
        (1-based line, 0-based column); an attribute the plan did not read (the file
        changed otherwise) is unknown."""
        current = [o for o in _occurrences(path, text, spelling) if o.kind == "attribute"]
        if not current:
            return {}
        self.prepare()
        if self._found is None:
            reason = self._error or "the reference engine gave no answer"
            return {o.start: _unknown(o, reason) for o in current}
        resolved = path.resolve()
        read = [o for o in self._found.get(spelling, []) if o.path == resolved]
        for kept in (read, [o for o in read if o.verdict != TARGET]):
            if len(kept) == len(current):
                return {now.start: before for now, before in zip(current, kept, strict=True)}
        reason = "the file changed since its references were read: run `check` again"
        return {o.start: _unknown(o, reason) for o in current}


def _unknown(occurrence: Occurrence, reason: str) -> Occurrence:
    from dataclasses import replace

    return replace(occurrence, verdict=UNKNOWN, reason=reason)


def bare_attributes(root: Path, files: Sequence[Path], spellings: frozenset[str]) -> BareAttributes:
    """The judge of attributes spelt like the bare renames ``spellings``."""
    return BareAttributes(root, files, spellings, reference_command())


def project_renames(root: Path, files: Sequence[Path], targets: Sequence[Target]) -> ProjectRenames:
    """The judge of ``targets`` for the project under ``root`` (``files``: its files)."""
    return ProjectRenames(root, files, targets, reference_command())
