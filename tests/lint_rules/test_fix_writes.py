"""``fix`` writes that never lose work: a file changed while fixing is left alone (and
so is the rest of its renames), symlinks and hard links stay what they are, and the
mode, encoding, BOM and newlines are kept. Real files throughout; the concurrent
writer runs at the engine's hook between reading a file and replacing it."""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.engine import fixes

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

APPENDED = b"print('written by someone else')\n"


def _edit_at(
    monkeypatch: pytest.MonkeyPatch, target: Path, on_call: int = 1
) -> Callable[[], list[Path]]:
    """Append to ``target`` the ``on_call``-th time the engine is about to compare it with
    what it read (1: before any file is written, 2: right before its own replace)."""
    calls: list[Path] = []

    def hook(path: Path) -> None:
        calls.append(path)
        if path == target and calls.count(target) == on_call:
            with target.open("ab") as stream:
                stream.write(APPENDED)

    monkeypatch.setattr(fixes, "between_read_and_write", hook)
    return lambda: calls


def _no_temporaries(directory: Path) -> bool:
    return not any(path.name.endswith(".tmp") for path in directory.rglob("*"))


@pytest.mark.parametrize("on_call", [1, 2], ids=["before-writing", "right-before-replace"])
def test_a_file_edited_while_fixing_keeps_the_edit_and_is_reported(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch, on_call: int
) -> None:
    target = project / "m.py"
    target.write_bytes(b"old_name()\n")
    _edit_at(monkeypatch, target, on_call)

    outcome = lint("fix")

    assert target.read_bytes() == b"old_name()\n" + APPENDED
    assert outcome.code == 1
    assert "m.py: not written: the file changed while fixing" in outcome.err
    assert "(fix withheld: the file changed while fixing)" in outcome.out
    assert outcome.out.endswith(
        "Fixed 0 findings, 1 error remaining.\n"
        "1 file changed while fixing: not written, fix again.\n"
    )
    assert _no_temporaries(project)


def test_the_fix_is_made_once_the_file_holds_still(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = project / "m.py"
    target.write_bytes(b"old_name()\n")
    _edit_at(monkeypatch, target)
    lint("fix")
    monkeypatch.setattr(fixes, "between_read_and_write", None)

    outcome = lint("fix")

    assert outcome.code == 0
    assert target.read_bytes() == b"new_name()\n" + APPENDED


def test_exit_zero_does_not_hide_a_file_left_unwritten(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = project / "m.py"
    target.write_bytes(b"old_name()\n")
    _edit_at(monkeypatch, target)

    assert lint("fix", "--exit-zero").code == 1


def test_a_rename_is_withheld_everywhere_when_one_of_its_files_changed(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "pyproject.toml").write_text(
        "[tool.lint_rules.renames]\nold_name = 'new_name'\nold_other = 'new_other'\n"
    )
    defining = project / "a.py"
    defining.write_bytes(b"def old_name():\n    pass\n")
    using = project / "b.py"
    using.write_bytes(b"from a import old_name\n\nold_name()\n")
    also = project / "c.py"
    also.write_bytes(b"old_name = 3\nold_other = 4\n")
    unrelated = project / "d.py"
    unrelated.write_bytes(b"old_other()\n")
    _edit_at(monkeypatch, using)

    outcome = lint("fix")

    assert using.read_bytes() == b"from a import old_name\n\nold_name()\n" + APPENDED
    assert defining.read_bytes() == b"def old_name():\n    pass\n"
    # c.py keeps old_name (withheld, b.py changed) but gets the other rename.
    assert also.read_bytes() == b"old_name = 3\nnew_other = 4\n"
    assert unrelated.read_bytes() == b"new_other()\n"
    assert outcome.code == 1
    assert "b.py: not written: the file changed while fixing" in outcome.err
    assert (
        "a.py:1:5: LR001 `old_name` was renamed to `new_name` (fix withheld: `old_name` "
        "is also replaced in b.py, which changed while fixing)" in outcome.out
    )
    assert "c.py:1:1: LR001" in outcome.out
    assert "c.py:2:1" not in outcome.out


def test_a_symlinked_file_is_written_through_to_its_target(
    project: Path, tmp_path: Path, lint: Lint
) -> None:
    outside = tmp_path / "shared"
    outside.mkdir()
    target = outside / "real.py"
    target.write_bytes(b"old_name()\n")
    target.chmod(0o755)
    link = project / "m.py"
    link.symlink_to(target)

    outcome = lint("fix")

    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert target.read_bytes() == b"new_name()\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert f"m.py: written through the symlink to {target}" in outcome.err
    assert outcome.code == 0
    assert _no_temporaries(outside)
    assert _no_temporaries(project)


def test_a_symlink_and_its_target_in_one_run_are_one_file_fixed_once(
    project: Path, lint: Lint
) -> None:
    target = project / "real.py"
    target.write_bytes(b"old_name()\n")
    link = project / "alias.py"
    link.symlink_to("real.py")

    outcome = lint("fix")

    assert link.is_symlink()
    assert target.read_bytes() == b"new_name()\n"
    assert "alias.py: the same file as real.py: fixed there" in outcome.err
    assert "changed while fixing" not in outcome.err + outcome.out
    assert outcome.code == 0


def test_a_hard_linked_file_stays_linked(project: Path, tmp_path: Path, lint: Lint) -> None:
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_bytes(b"old_name()\n")
    elsewhere.chmod(0o755)
    inside = project / "m.py"
    os.link(elsewhere, inside)
    inode = inside.stat().st_ino

    outcome = lint("fix")

    assert outcome.code == 0
    assert inside.stat().st_ino == elsewhere.stat().st_ino == inode
    assert inside.stat().st_nlink == 2
    assert elsewhere.read_bytes() == b"new_name()\n"
    assert stat.S_IMODE(inside.stat().st_mode) == 0o755


def test_two_hard_links_in_one_run_are_one_file_fixed_once(project: Path, lint: Lint) -> None:
    first = project / "a.py"
    first.write_bytes(b"old_name()\n")
    second = project / "b.py"
    os.link(first, second)

    outcome = lint("fix")

    assert first.read_bytes() == second.read_bytes() == b"new_name()\n"
    assert first.stat().st_ino == second.stat().st_ino
    assert "b.py: the same file as a.py: fixed there" in outcome.err
    assert outcome.code == 0


def test_a_hard_linked_file_edited_right_before_the_write_keeps_the_edit(
    project: Path, tmp_path: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere.py"
    elsewhere.write_bytes(b"old_name()\n")
    inside = project / "m.py"
    os.link(elsewhere, inside)
    _edit_at(monkeypatch, inside, on_call=2)

    outcome = lint("fix")

    assert elsewhere.read_bytes() == b"old_name()\n" + APPENDED
    assert inside.stat().st_nlink == 2
    assert "m.py: not written: the file changed while fixing" in outcome.err


def test_a_file_replaced_by_a_symlink_target_edit_is_not_written(
    project: Path, tmp_path: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "real.py"
    target.write_bytes(b"old_name()\n")
    link = project / "m.py"
    link.symlink_to(target)
    _edit_at(monkeypatch, link, on_call=2)

    outcome = lint("fix")

    assert link.is_symlink()
    assert target.read_bytes() == b"old_name()\n" + APPENDED
    assert "m.py: not written: the file changed while fixing" in outcome.err


def test_mode_bits_are_kept(project: Path, lint: Lint) -> None:
    target = project / "tool.py"
    target.write_bytes(b"#!/usr/bin/env python\nold_name()\n")
    target.chmod(0o755)

    lint("fix")

    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert target.read_bytes() == b"#!/usr/bin/env python\nnew_name()\n"


def test_crlf_and_a_bom_are_kept(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_bytes(codecs.BOM_UTF8 + "x = old_name  # café\r\ny = 2\r\n".encode())

    lint("fix")

    assert target.read_bytes() == codecs.BOM_UTF8 + "x = new_name  # café\r\ny = 2\r\n".encode()


def test_crlf_and_a_latin_1_coding_cookie_are_kept(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    source = "# -*- coding: latin-1 -*-\r\nx = old_name  # café\r\n"
    target.write_bytes(source.encode("latin-1"))

    lint("fix")

    assert target.read_bytes() == source.replace("old_name", "new_name").encode("latin-1")
