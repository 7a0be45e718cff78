"""``fix``: to a fixed point, never breaking code, atomic, keeping bytes it does not fix."""

from __future__ import annotations

import codecs
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.engine.fixes import MAX_FIX_PASSES, apply_fixes
from lint_rules.rule import Edit, Fix
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import (
        BreakingFixRule,
        Lint,
        NeverConvergingRule,
        UnsafeFixRule,
    )
else:
    from rule_fixtures import BreakingFixRule, Lint, NeverConvergingRule, UnsafeFixRule


def test_fix_rewrites_every_use_and_reports_nothing_left(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_text("import old_name\nold_name.run(old_name=getattr(old_name, 'old_name'))\n")

    outcome = lint("fix")

    assert outcome.code == 0
    assert target.read_text() == (
        "import new_name\nnew_name.run(new_name=getattr(new_name, 'new_name'))\n"
    )
    assert outcome.out == "Fixed 5 findings, 0 remaining.\n"


def test_fix_leaves_files_whose_findings_per_file_ignores_turn_off(
    project: Path, lint: Lint
) -> None:
    (project / "pyproject.toml").write_text(
        "[tool.lint_rules]\nper-file-ignores = { 'legacy/**' = ['LR001'] }\n"
        "[tool.lint_rules.renames]\nold_name = 'new_name'\n"
    )
    (project / "legacy").mkdir()
    (project / "legacy" / "m.py").write_text("old_name()\n")

    assert lint("fix").code == 0
    assert (project / "legacy" / "m.py").read_text() == "old_name()\n"


def test_second_fix_changes_nothing(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_text("old_name = 1\nprint(old_name)\n")
    lint("fix")
    fixed = target.read_bytes()

    outcome = lint("fix")

    assert target.read_bytes() == fixed
    assert outcome.out == "Fixed 0 findings, 0 remaining.\n"


def test_compatibility_alias_with_noqa_is_kept(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_text("def new_name():\n    pass\n\n\nold_name = new_name  # noqa: LR001\n")

    lint("fix")

    assert target.read_text().endswith("old_name = new_name  # noqa: LR001\n")


def test_fix_keeps_crlf_line_endings(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_bytes(b"x = old_name\r\ny = 2\r\n")

    lint("fix")

    assert target.read_bytes() == b"x = new_name\r\ny = 2\r\n"


def test_fix_keeps_the_bom(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_bytes(codecs.BOM_UTF8 + b"x = old_name\n")

    lint("fix")

    assert target.read_bytes() == codecs.BOM_UTF8 + b"x = new_name\n"


def test_fix_keeps_a_declared_legacy_encoding(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_bytes(b"# -*- coding: latin-1 -*-\ns = '\xe9'\nx = old_name\n")

    lint("fix")

    assert target.read_bytes() == b"# -*- coding: latin-1 -*-\ns = '\xe9'\nx = new_name\n"


def test_fix_keeps_mode_bits(project: Path, lint: Lint) -> None:
    target = project / "script.py"
    target.write_text("#!/usr/bin/env python\nold_name()\n")
    target.chmod(0o751)

    lint("fix")

    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert "new_name()" in target.read_text()


def test_diff_writes_nothing_and_exits_one(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_text("x = old_name\n")

    outcome = lint("fix", "--diff")

    assert outcome.code == 1
    assert target.read_text() == "x = old_name\n"
    assert "-x = old_name\n+x = new_name\n" in outcome.out
    assert "--- a/m.py\n+++ b/m.py\n" in outcome.out
    assert outcome.out.endswith("Would fix 1 finding, 0 remaining.\n")


def test_diff_with_nothing_to_change_exits_zero(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("x = new_name\n")

    assert lint("fix", "--diff").code == 0


def test_fix_whose_result_does_not_parse_is_refused_and_file_untouched(
    project: Path, lint: Lint
) -> None:
    target = project / "m.py"
    target.write_text("x = breakme\ny = old_name\n")

    outcome = lint("fix", rules=[*ALL_RULES, BreakingFixRule])

    assert target.read_text() == "x = breakme\ny = old_name\n"
    assert outcome.code == 1
    assert "m.py: fix withheld: the result would not compile: line 1:" in outcome.err
    withheld = "(fix withheld: the result would not compile: line 1: invalid syntax)"
    assert f"m.py:1:5: LR991 breakme {withheld}" in outcome.out
    assert "Fixed 0 findings, 2 errors remaining." in outcome.out


def test_fix_that_the_file_encoding_cannot_hold_is_refused(project: Path, lint: Lint) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules.renames]\nold_name = "nouveau_nom_\u00e9t\u00e9"\n'
    )
    target = project / "m.py"
    target.write_bytes(b"# -*- coding: ascii -*-\nx = old_name\n")

    outcome = lint("fix")

    assert outcome.code == 1
    assert "fix withheld: the result cannot be encoded as ascii" in outcome.err
    assert target.read_bytes() == b"# -*- coding: ascii -*-\nx = old_name\n"


def test_interrupted_write_leaves_the_old_file_and_no_temporary(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = project / "m.py"
    target.write_text("x = old_name\n")

    def interrupted(source: str, destination: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", interrupted)
    outcome = lint("fix", "--jobs", "1")

    assert outcome.code == 2
    assert "m.py: cannot write the fixed file: disk full" in outcome.err
    assert target.read_text() == "x = old_name\n"
    assert sorted(path.name for path in project.iterdir()) == ["m.py", "pyproject.toml"]


def test_unsafe_fix_needs_unsafe_fixes(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_text("risky()\n")
    rules = [*ALL_RULES, UnsafeFixRule]

    assert lint("fix", rules=rules).code == 1
    assert target.read_text() == "risky()\n"
    assert lint("fix", "--unsafe-fixes", rules=rules).code == 0
    assert target.read_text() == "careful()\n"


def test_fix_stops_after_the_bounded_number_of_passes(project: Path, lint: Lint) -> None:
    target = project / "m.py"
    target.write_text("again\n")

    outcome = lint("fix", rules=[*ALL_RULES, NeverConvergingRule])

    assert outcome.code == 1
    assert target.read_text() == "(" * MAX_FIX_PASSES + "again" + ")" * MAX_FIX_PASSES + "\n"


def test_chained_renames_are_followed_to_a_fixed_point(project: Path, lint: Lint) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules.renames]\nold_name = "new_name"\nnew_name = "newest_name"\n'
    )
    target = project / "m.py"
    target.write_text("old_name()\n")

    lint("fix")

    assert target.read_text() == "newest_name()\n"


def test_fix_runs_in_parallel_processes(project: Path, lint: Lint) -> None:
    for number in range(40):
        (project / f"m{number:02}.py").write_text("old_name()\n")

    outcome = lint("fix", "--jobs", "2")

    assert outcome.out == "Fixed 40 findings, 0 remaining.\n"
    assert all(path.read_text() == "new_name()\n" for path in project.glob("m*.py"))


def test_overlapping_fix_waits_for_the_next_pass() -> None:
    first = Fix((Edit(0, 5, "AAAAA"),))
    overlapping = Fix((Edit(3, 8, "BBBBB"),))
    apart = Fix((Edit(9, 10, "C"),))

    text, applied = apply_fixes("0123456789", [overlapping, apart, first])

    assert (text, applied) == ("AAAAA5678C", 2)


def test_fix_killed_midway_leaves_every_file_old_or_new_and_no_worker(project: Path) -> None:
    old = "".join(f"value_{n} = old_name({n})\n" for n in range(5_000)).encode()
    new = old.replace(b"old_name", b"new_name")
    for number in range(30):
        (project / f"m{number:02}.py").write_bytes(old)
    command = [sys.executable, "-m", "lint_rules", "fix", "--jobs", "2"]

    for delay in (0.0, 0.3, 0.6):
        process = subprocess.Popen(command, cwd=project, stdout=subprocess.DEVNULL)
        workers = _wait_for_children(process, count=2)
        time.sleep(delay)
        process.kill()  # SIGKILL: no cleanup runs
        process.wait()
        contents = {path.read_bytes() for path in project.glob("m*.py")}
        assert contents <= {old, new}
        assert _all_exit(workers, within=5.0)


def _wait_for_children(process: subprocess.Popen[bytes], count: int) -> list[int]:
    while process.poll() is None:
        children = _children(process.pid)
        if len(children) >= count:
            return children
        time.sleep(0.01)
    raise AssertionError("the run ended before its workers started")


def _children(pid: int) -> list[int]:
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in listed.split()]


def _all_exit(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_running(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"
