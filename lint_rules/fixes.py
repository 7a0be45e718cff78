"""Fixes: applying them to a text to a fixed point, checking the result, writing it.

``fix_text`` is what ``fix`` runs on each file; ``apply_fixes`` applies one
pass of non-overlapping fixes; ``write_atomic`` replaces a file's content;
``unified_diff`` shows a change.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.results import FixOutcome
from lint_rules.rule import Edit, Fix

if TYPE_CHECKING:
    from lint_rules.checker import Checker

MAX_FIX_PASSES = 10


def fix_text(
    checker: Checker,
    path: Path,
    text: str,
    unsafe_fixes: bool,
    ignored: tuple[str, ...] = (),
    encoding: str = "utf-8",
) -> FixOutcome:
    """Apply fixes to a fixed point (at most ``MAX_FIX_PASSES``), never breaking syntax.

    Findings whose code starts with an ``ignored`` prefix are neither reported
    nor fixed. If the fixed text does not parse, or cannot be written in the
    file's ``encoding``, nothing is applied and ``refused`` says why.
    """
    findings, _ = checker.check(path, text, ignored)
    current, applied = text, 0
    for _ in range(MAX_FIX_PASSES):
        fixes = [f.fix for f in findings if f.fix is not None and (f.fix.safe or unsafe_fixes)]
        if not fixes:
            break
        current, count = apply_fixes(current, fixes)
        applied += count
        findings, _ = checker.check(path, current, ignored)
    if current != text:
        problem = syntax_problem(current)
        reason = None if problem is None else f"the result would not parse: {problem}"
        if reason is None and not _encodable(current, encoding):
            reason = f"the result cannot be encoded as {encoding}"
        if reason is not None:
            original, _ = checker.check(path, text, ignored)
            return FixOutcome(text, 0, original, f"fix refused, {reason}")
    return FixOutcome(current, applied, findings)


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


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """Apply every fix that overlaps no earlier-starting accepted fix.

    Fixes are taken in order of their first edit; a fix is applied whole or not
    at all. Returns the new text and how many fixes were applied; the skipped
    ones are found again on the next pass.
    """
    accepted: list[Edit] = []
    applied = 0
    for fix in sorted(fixes, key=lambda fix: min((edit.start, edit.end) for edit in fix.edits)):
        if any(_overlap(edit, other) for edit in fix.edits for other in accepted):
            continue
        accepted.extend(fix.edits)
        applied += 1
    for edit in sorted(accepted, key=lambda edit: edit.start, reverse=True):
        text = text[: edit.start] + edit.replacement + text[edit.end :]
    return text, applied


def _overlap(first: Edit, second: Edit) -> bool:
    if first.start == second.start:
        return True  # two insertions (or replacements) at one point conflict
    return first.start < second.end and second.start < first.end


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path``'s content with ``data``: readers see the old or the new file.

    The data goes to a temporary file beside ``path`` (same file system),
    flushed to disk, given ``path``'s mode bits, then renamed over it. On any
    error the temporary file is removed and ``path`` is untouched.
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
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
