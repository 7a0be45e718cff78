"""Applying fixes to text, writing files atomically, and showing diffs."""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from lint_rules.rule import Edit, Fix


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
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{display_path}",
        tofile=f"b/{display_path}",
    )
    return "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
