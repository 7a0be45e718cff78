"""Where a rename's edits are computed: ``plan_renames``, the one entry point.

The detection pass (LR001's visitors, on the stdlib ``ast``) finds each
``Occurrence`` of an old spelling in a file. ``plan_renames`` decides, for each,
whether it is what a ``renames`` entry renames and may be renamed (a ``Renaming``
with its ``Edit``), or is reported with the reason it is not renamed, or is left
alone (another thing of the same spelling: a builtin, another project's
attribute). Bare names are decided by the compiler's symbol tables
(``symbols.py``); qualified targets by libcst's scopes and qualified names
(``qualified.py``), built only for files that can hold them.

A project-wide reference engine feeds this seam: it classifies the same
occurrences (and finds those no file's syntax shows), and the classification
becomes a ``Renaming`` here, so that LR001 and ``fix`` do not change.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lint_rules.analysis.consistency import module_name
from lint_rules.analysis.renames import Renames, Target
from lint_rules.codemod.symbols import BUILTINS, Symbols
from lint_rules.rule import Edit

if TYPE_CHECKING:
    from lint_rules.codemod.qualified import Resolver
    from lint_rules.rule import FileContext


@dataclass(frozen=True)
class Occurrence:
    """One spelling of an old name in a file, as the detection pass found it."""

    old: str
    start: int
    end: int
    kind: str
    """``name`` (a binding: definition, parameter, assignment, capture), ``load`` (a
    name read), ``attribute``, ``keyword`` (argument), ``import`` (a part of an imported
    module's dotted name) or ``declaration`` (``global``/``nonlocal``)."""
    anchor: int | None = None
    """Where the node that binds or reads the name starts (its scope is looked up
    there), for bare names whose scope decides; ``None`` otherwise."""
    receiver: str | None = None
    """For an attribute ``name.old``: the receiver's name."""


@dataclass(frozen=True)
class FileOccurrences:
    """What the detection pass collected in one file."""

    occurrences: Sequence[Occurrence]
    scopes: Sequence[ast.AST] = ()
    """The file's function, class, lambda and comprehension nodes, in any order."""
    module_aliases: Mapping[str, str] = field(default_factory=dict)
    """Local name -> module, for every ``import module [as name]`` of the file."""


@dataclass(frozen=True)
class Renaming:
    """What to do with one occurrence: rename it (``edit``) or report why not."""

    occurrence: Occurrence
    old: str
    """What was renamed, as the user configured it (a bare name, or a target's key)."""
    new: str
    reason: str = ""
    """Why it is not renamed; ``""`` when it is."""
    edit: Edit | None = None
    """The edit that renames it; ``None`` when it is not renamed, or when its source
    spells the name otherwise than ``old`` (non-ASCII forms that normalize to it)."""


def plan_renames(file: FileContext, renames: Renames, found: FileOccurrences) -> list[Renaming]:
    """For every occurrence of an old name in ``file``: its ``Renaming``, or nothing when
    it is not the renamed thing."""
    planned: list[Renaming] = []
    symbols: Symbols | None = None
    resolver: Resolver | None = None
    resolved = False  # whether ``resolver`` was asked for (it is None when none applies)
    for occurrence in found.occurrences:
        old, kind, anchor = occurrence.old, occurrence.kind, occurrence.anchor
        new = renames.bare.get(old)
        if new is not None:  # a bare name: the stdlib's symbol tables decide, cheaply
            reason: str | None = ""
            if kind == "attribute" and _elsewhere(file, occurrence, found.module_aliases):
                continue  # e.g. `optparse.OptionParser` when the project defines its own
            if _outside_module(file, occurrence, found.module_aliases):
                continue  # `import copy`, `copy.deepcopy`: the stdlib's module, not `Model.copy`
            # Without the new name in the file nothing can clash with it, and a name
            # that is not a builtin's cannot resolve to one: no scope analysis needed.
            simple = new not in file.text and old not in BUILTINS
            if kind in ("name", "load") and anchor is not None and not simple:
                if symbols is None:
                    symbols = Symbols(file, set(renames.bare), found.scopes)
                reason = symbols.decide(old, new, anchor, kind == "load")
            if reason is not None:  # None: e.g. the builtin of that name, not the renamed one
                planned.append(_renaming(file, occurrence, old, new, reason))
            continue
        if not resolved:
            resolver, resolved = _resolver(file, renames.targets), True
        if resolver is None:
            continue
        decisions = resolver.decide(old, occurrence.start, kind, renames.targets.get(old, ()))
        for decision in decisions:  # the first decision counts
            planned.append(_renaming(file, occurrence, decision.old, decision.new, decision.reason))
            break
    return planned


def _renaming(
    file: FileContext, occurrence: Occurrence, old: str, new: str, reason: str
) -> Renaming:
    start, end = occurrence.start, occurrence.end
    spelt = file.text[start:end] == occurrence.old  # not so when spelt with non-ASCII forms
    edit = Edit(start, end, new) if spelt and not reason else None
    return Renaming(occurrence, old, new, reason, edit)


def _elsewhere(file: FileContext, occurrence: Occurrence, imports: Mapping[str, str]) -> bool:
    """Whether ``receiver.old`` reads another project's ``old``: the receiver is a
    module imported from outside the project, and the project defines ``old`` itself
    (then the bare name means the project's own; otherwise, e.g. a renamed function
    of a library, the attribute on that library's module is exactly what moved)."""
    receiver = occurrence.receiver
    module = imports.get(receiver) if receiver is not None else None
    if module is None:
        return False
    project = file.project.index  # read once per run, and only when needed here
    return module.split(".")[0] not in project.packages and occurrence.old in project.definitions


def _outside_module(file: FileContext, occurrence: Occurrence, imports: Mapping[str, str]) -> bool:
    """Whether a bare name's occurrence is, or is part of, a module from outside the
    project while the project defines the name itself: a part of ``import copy`` or
    ``from copy import deepcopy``, or the name ``copy`` that ``import copy`` binds."""
    old, kind = occurrence.old, occurrence.kind
    if kind not in ("import", "load"):
        return False
    project = file.project.index
    if old not in project.definitions:
        return False
    if kind != "import":
        module = imports.get(old)
        return module is not None and module.split(".")[0] not in project.packages
    line = file.text.count("\n", 0, occurrence.start) + 1
    for node in ast.walk(file.ast_tree):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if not node.lineno <= line <= (node.end_lineno or node.lineno):
            continue
        if isinstance(node, ast.ImportFrom):
            return node.level == 0 and (node.module or "").split(".")[0] not in project.packages
        return any(
            alias.name.split(".")[0] not in project.packages
            and (old in alias.name.split(".") or alias.asname == old)
            for alias in node.names
        )
    return False


def _resolver(file: FileContext, targets: Mapping[str, Sequence[Target]]) -> Resolver | None:
    """libcst's scope and qualified names, for qualified targets; ``None`` when no
    target can apply to this file (it names none of their modules or owners)."""
    text = file.text
    module = module_name(file.path) if file.path.suffix == ".py" else ""
    words = {
        word
        for found in targets.values()
        for target in found
        for word in (*target.module.split("."), target.owner.split(".")[0])
        if word
    }
    own = any(target.module == module for found in targets.values() for target in found)
    if not own and not any(word in text for word in words):
        return None
    try:
        from lint_rules.codemod.qualified import Resolver  # libcst: only for qualified targets

        return Resolver(file)
    except Exception:  # libcst cannot parse what ast can: qualified targets are skipped
        return None
