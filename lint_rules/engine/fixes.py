"""Fixes: applying them to a text to a fixed point, checking the result, writing it.

``fix_text`` is what ``fix`` runs on each file (``fix_texts`` on a batch's files,
their passes in step); ``apply_fixes`` applies one
pass of non-overlapping fixes; ``write_fixed`` replaces a fixed file's content
only if it is still what was read (``write_atomic`` replaces any file's);
``unified_diff`` shows a change.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.engine.resolution import resolutions
from lint_rules.engine.results import FixOutcome
from lint_rules.rule import Edit, Finding, Fix

if TYPE_CHECKING:
    from lint_rules.engine.checker import Checker

MAX_FIX_PASSES = 10


@dataclass(frozen=True)
class FixJob:
    """One text to fix (``fix_text``'s arguments but the checker and ``unsafe_fixes``)."""

    path: Path
    text: str
    ignored: tuple[str, ...] = ()
    encoding: str = "utf-8"
    blocked: Mapping[str, str] = field(default_factory=dict)


def fix_text(
    checker: Checker,
    path: Path,
    text: str,
    unsafe_fixes: bool,
    ignored: tuple[str, ...] = (),
    encoding: str = "utf-8",
    blocked: Mapping[str, str] | None = None,
) -> FixOutcome:
    """Apply fixes to a fixed point (at most ``MAX_FIX_PASSES``), then verify the result.

    Findings whose code starts with an ``ignored`` prefix are neither reported
    nor fixed. A fix with an edit that replaces a name in ``blocked`` is not
    applied; its finding says why (the name's reason). If the result fails
    ``verify`` or cannot be written in the file's ``encoding``, nothing is
    applied: the text is returned as it was, every finding whose fix was
    withheld says why, and ``refused`` holds the reason.
    """
    job = FixJob(path, text, ignored, encoding, blocked or {})
    return fix_texts(checker, [job], unsafe_fixes)[0]


def fix_texts(checker: Checker, jobs: Sequence[FixJob], unsafe_fixes: bool) -> list[FixOutcome]:
    """``fix_text`` on each job, the passes in step: after each pass the texts it changed
    go to ``Checker.begin_texts`` together, before any is checked again (so that a rule
    running a tool, LR004's typos, starts it once a pass rather than once a text)."""
    findings = [checker.check(job.path, job.text, job.ignored)[0] for job in jobs]
    current = [job.text for job in jobs]
    applied = [0] * len(jobs)
    replaced: list[set[str]] = [set() for _ in jobs]
    active = list(range(len(jobs)))
    begun = False
    for _ in range(MAX_FIX_PASSES):
        changed = []
        for index in active:
            job = jobs[index]
            fixes = [
                finding.fix
                for finding in findings[index]
                if finding.fix is not None
                and (finding.fix.safe or unsafe_fixes)
                and _blocking(finding.fix, current[index], job.blocked) is None
            ]
            if not fixes:
                continue
            current[index], count = apply_fixes(current[index], fixes, replaced[index])
            applied[index] += count
            changed.append(index)
        if not changed:
            break
        if len(changed) > 1:
            checker.begin_texts([(jobs[index].path, current[index]) for index in changed])
            begun = True
        for index in changed:
            findings[index], _ = checker.check(
                jobs[index].path, current[index], jobs[index].ignored
            )
        active = changed
    if begun:  # a run no check read (a text that no longer parses) is stopped, not left
        checker.begin_texts([])
    return [
        _settled(checker, job, current[index], applied[index], replaced[index], findings[index],
                 unsafe_fixes)
        for index, job in enumerate(jobs)
    ]  # fmt: skip


def _settled(
    checker: Checker,
    job: FixJob,
    current: str,
    applied: int,
    replaced: set[str],
    findings: list[Finding],
    unsafe_fixes: bool,
) -> FixOutcome:
    """The outcome of a job's passes: verified, or refused with every fix withheld."""
    text, blocked = job.text, job.blocked
    findings = [_withheld_if_blocked(finding, current, blocked) for finding in findings]
    if current == text:
        return FixOutcome(text, 0, findings)
    reason = verify(text, current, str(job.path))
    if reason is None and not _encodable(current, job.encoding):
        reason = f"the result cannot be encoded as {job.encoding}"
    if reason is None:
        return FixOutcome(current, applied, findings, replaced=frozenset(replaced - {""}))
    original, _ = checker.check(job.path, text, job.ignored)
    withheld = [
        withhold(finding, reason)
        if finding.fix is not None and (finding.fix.safe or unsafe_fixes)
        else finding
        for finding in original
    ]
    return FixOutcome(text, 0, [_withheld_if_blocked(f, text, blocked) for f in withheld], reason)


def withhold(finding: Finding, reason: str) -> Finding:
    """``finding`` without its fix, its message saying why the fix is withheld."""
    return replace(finding, message=f"{finding.message} (fix withheld: {reason})", fix=None)


def _blocking(fix: Fix, text: str, blocked: Mapping[str, str]) -> str | None:
    for edit in fix.edits:
        reason = blocked.get(text[edit.start : edit.end])
        if reason is not None:
            return reason
    return None


def _withheld_if_blocked(finding: Finding, text: str, blocked: Mapping[str, str]) -> Finding:
    if finding.fix is None or not blocked:
        return finding
    reason = _blocking(finding.fix, text, blocked)
    return finding if reason is None else withhold(finding, reason)


def _encodable(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def syntax_problem(text: str) -> str | None:
    """Why ``text`` does not parse as Python, or None if it does."""
    try:
        ast.parse(text)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except (RecursionError, MemoryError, ValueError) as error:
        return str(error) or type(error).__name__
    return None


def compile_problem(text: str, filename: str = "<fixed>") -> str | None:
    """Why ``text`` does not compile (parser and symbol table), or None if it does."""
    try:
        compile(text, filename, "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except (RecursionError, MemoryError, ValueError) as error:
        return str(error) or type(error).__name__
    return None


def verify(before: str, after: str, filename: str = "<fixed>") -> str | None:
    """Why ``after`` may not replace ``before``, or ``None`` if it may.

    ``after`` must compile (which also catches what only the symbol table sees,
    such as duplicate arguments) when ``before`` does, or else at least parse.
    Then every name that resolved to a builtin or an import in ``before`` must
    resolve the same way in ``after``, one that resolved to a definition in the
    file must still do so, except that an import renamed along with its uses
    stays an import of the new name. Names are matched by token position, so
    this part applies to fixes that replace tokens in place (every fix of the
    shipped rules); other results are checked by compiling only. How names resolve
    comes from the stdlib's ``ast`` (``resolution.py``), not libcst's scope analysis,
    which took 50-200 ms a file where this takes about a millisecond.
    """
    if compile_problem(before, filename) is None:
        problem = compile_problem(after, filename)
        if problem is not None:
            return f"the result would not compile: {problem}"
    else:
        problem = syntax_problem(after)
        if problem is not None:
            return f"the result would not parse: {problem}"
    return _resolution_change(before, after)


def _resolution_change(before: str, after: str) -> str | None:
    import tokenize  # only when a fix changed something

    tokens_before, tokens_after = _tokens(before), _tokens(after)
    if tokens_before is None or tokens_after is None or len(tokens_before) != len(tokens_after):
        return None
    if any(a[0] != b[0] for a, b in zip(tokens_before, tokens_after, strict=True)):
        return None
    positions_before = {token[2]: index for index, token in enumerate(tokens_before)}
    try:
        resolved_before = resolutions(before)
        resolved_after = resolutions(after)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # `after` parses (checked above); nested too deeply to analyse
    renamed_names = {
        a[1]: b[1]
        for a, b in zip(tokens_before, tokens_after, strict=True)
        if a[0] == tokenize.NAME and a[1] != b[1]
    }
    if not renamed_names and not any(
        a[0] == tokenize.STRING and a[1] != b[1] and "f" in a[1].split("'")[0].split('"')[0].lower()
        for a, b in zip(tokens_before, tokens_after, strict=True)
    ):
        return None  # only comments and plain strings changed: no name resolves differently
    for position, (kind, detail) in sorted(resolved_before.items()):
        index = positions_before.get(position)
        if index is None or kind == "unresolved":
            continue
        _, old_name, _ = tokens_before[index]
        _, new_name, new_position = tokens_after[index]
        now = resolved_after.get(new_position)
        if now is None:
            continue
        line = position[0]
        renamed = old_name != new_name
        if kind == "builtin" and now != (kind, detail):
            return f"`{new_name}` on line {line} would no longer be the builtin"
        if (
            kind == "import"
            and now != (kind, detail)
            and not (renamed and now[0] == "import")
            and now != (kind, _renamed_components(detail, renamed_names))
        ):
            return f"`{new_name}` on line {line} would no longer be the import of `{detail}`"
        if kind == "bound" and now[0] != "bound":
            return f"`{new_name}` on line {line} would no longer name its definition in this file"
    return None


def _renamed_components(qualified: str, renamed: Mapping[str, str]) -> str:
    """Qualified names with each renamed dotted component replaced (an import renamed
    at its source, e.g. ``from m import old as alias``, is still that import)."""
    return ", ".join(
        ".".join(renamed.get(part, part) for part in name.split("."))
        for name in qualified.split(", ")
    )


def _tokens(text: str) -> list[tuple[int, str, tuple[int, int]]] | None:
    import io
    import tokenize

    try:
        return [
            (token.type, token.string, token.start)
            for token in tokenize.generate_tokens(io.StringIO(text).readline)
            if tokenize.tok_name[token.type] not in _LAYOUT_TOKENS
        ]
    except (tokenize.TokenError, SyntaxError):
        return None


_LAYOUT_TOKENS = frozenset({"NL", "NEWLINE", "INDENT", "DEDENT"})


def apply_fixes(
    text: str, fixes: Iterable[Fix], replaced: set[str] | None = None
) -> tuple[str, int]:
    """Apply every fix that overlaps no earlier-starting accepted fix.

    Fixes are taken in order of their first edit; a fix is applied whole or not
    at all. Returns the new text and how many fixes were applied, counting each
    finding's: a fix whose edits were all accepted already (the same rename, carried by
    each finding of its occurrences) counts again, as ``check`` counts it fixable once
    per finding. The skipped ones are found again on the next pass. The texts the
    applied edits replace are added to ``replaced`` (what ``blocked`` would name to
    withhold them).
    """
    accepted: list[Edit] = []
    taken: set[Edit] = set()
    applied = 0
    for fix in sorted(fixes, key=lambda fix: min((edit.start, edit.end) for edit in fix.edits)):
        if taken.issuperset(fix.edits):
            applied += 1
            continue
        if any(_overlap(edit, other) for edit in fix.edits for other in accepted):
            continue
        accepted.extend(fix.edits)
        taken.update(fix.edits)
        applied += 1
    if replaced is not None:
        replaced.update(text[edit.start : edit.end] for edit in accepted)
    for edit in sorted(accepted, key=lambda edit: edit.start, reverse=True):
        text = text[: edit.start] + edit.replacement + text[edit.end :]
    return text, applied


def _overlap(first: Edit, second: Edit) -> bool:
    if first.start == second.start:
        return True  # two insertions (or replacements) at one point conflict
    return first.start < second.end and second.start < first.end


def write_atomic(
    path: Path, data: bytes, expected: bytes | None = None, named: Path | None = None
) -> None:
    """Replace ``path``'s content with ``data``: readers see the old or the new file.

    The data goes to a temporary file beside ``path`` (same file system),
    flushed to disk, given ``path``'s mode bits, then renamed over it. With
    ``expected``, ``path`` is compared with it right before the rename, and
    ``ChangedWhileFixing`` raised if it differs (``named``: the name the
    user gave, a symlink to ``path``). On any error the temporary file is
    removed and ``path`` is untouched.
    """
    import tempfile  # not needed by a run that writes nothing

    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        if expected is not None:
            if between_read_and_write is not None:
                between_read_and_write(named or path)
            if path.read_bytes() != expected:
                raise ChangedWhileFixing(f"{named or path} changed while fixing")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class ChangedWhileFixing(Exception):
    """The file no longer holds the bytes its fix was made from: it was not written."""


between_read_and_write: Callable[[Path], None] | None = None
"""Called with a fixed file's path just before each comparison with what was read
(``still_holds`` before any file is written, ``write_fixed`` right before the replace):
tests edit the file here to play a concurrent writer deterministically."""


def still_holds(path: Path, data: bytes) -> bool:
    """Whether the file at ``path`` still holds ``data`` (an unreadable one does not)."""
    if between_read_and_write is not None:
        between_read_and_write(path)
    try:
        return path.read_bytes() == data
    except OSError:
        return False


def write_fixed(path: Path, expected: bytes, data: bytes) -> str | None:
    """Replace the file at ``path`` with ``data`` if it still holds ``expected``, byte for byte.

    The comparison is made right before the replacement; a file that differs raises
    ``ChangedWhileFixing`` and is left as it is. A symlink is written through: its
    target's content is replaced (the link stays a link) and the returned note says
    so. A file with several hard links is rewritten in place, on the same inode, so
    that every name keeps seeing one file; any other file is replaced atomically
    (``write_atomic``). Mode bits, and the bytes ``data`` holds (encoding, BOM,
    newlines), are kept either way. Returns a note for the user, or None.
    """
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    note = f"written through the symlink to {target}" if target != path else None
    if target.stat().st_nlink > 1:
        _write_in_place(target, expected, data, path)
    else:
        write_atomic(target, data, expected, path)
    return note


def _write_in_place(path: Path, expected: bytes, data: bytes, named: Path) -> None:
    """Rewrite a hard-linked file on its inode: read, compare and write through one
    descriptor (the only way to keep its other names; the write itself is not atomic)."""
    with path.open("r+b") as stream:
        if between_read_and_write is not None:
            between_read_and_write(named)
        if stream.read() != expected:
            raise ChangedWhileFixing(f"{named} changed while fixing")
        stream.seek(0)
        stream.write(data)
        stream.truncate()
        stream.flush()
        os.fsync(stream.fileno())


def unified_diff(display_path: str, old: str, new: str) -> str:
    """A unified diff of ``old`` -> ``new`` with ``a/`` and ``b/`` headers."""
    import difflib  # only for --diff

    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{display_path}",
        tofile=f"b/{display_path}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
