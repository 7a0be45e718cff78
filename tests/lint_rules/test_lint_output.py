"""``check`` and ``fix`` output as a user reads it (issue 26 point 5), each command run in a
process of its own on a small project: findings counted by severity, ``--statistics``
marks as ruff's, the severity in JSON, explicit non-Python files skipped with a warning,
one counting rule for ``check``'s "fixable" and ``fix``'s "Fixed", ``--no-cache`` on
every command that has a cache, defaults in ``--help`` and one program name."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.rules import ALL_RULES
from lint_rules.server import Linter

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import run_cli
else:
    from rule_fixtures import run_cli

# Built from parts, so that this repository's own typos run does not flag them.
RECEIVE, SEPARATE = "reci" + "eve", "sepe" + "rate"
PYPROJECT = '[tool.lint_rules.renames]\nold_name = "new_name"\n'
# LR004 (a warning) on a local, fixed safely, and on a public name, not fixed (its users
# would break); LR001 (an error) on a name, fixed safely, and on a string, fixed unsafely.
MIXED = f"""
    def f():
        {RECEIVE} = 1
        return {RECEIVE}


    {RECEIVE} = 2
    x = old_name
    y = "old_name"
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "mod.py").write_text(textwrap.dedent(MIXED).lstrip("\n"))
    return root


def _count(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match is not None, f"{pattern!r} not in {text!r}"
    return int(match[1])


def test_summary_counts_errors_and_warnings_by_severity(tree: Path) -> None:
    checked = run_cli("check", "--no-cache", cwd=tree)

    assert checked.returncode == 1
    assert "Found 2 errors and 3 warnings.\n" in checked.stdout

    fixed = run_cli("fix", cwd=tree)

    # What is left: the public name (a warning) and the string (an unsafe fix).
    assert "Fixed 3 findings, 1 error and 1 warning remaining.\n" in fixed.stdout
    assert run_cli("check", cwd=tree).stdout.startswith("mod.py:6:1: LR004 ")


def test_check_counts_as_fixable_what_fix_then_fixes(tree: Path) -> None:
    other = f"def g():\n    {SEPARATE} = 1\n    return {SEPARATE}, old_name\n"
    (tree / "other.py").write_text(other)

    checked = run_cli("check", "--no-cache", cwd=tree).stdout
    fixable = _count(r"\[\*\] (\d+) fixable with `lint-rules fix`", checked)
    unsafe = _count(r"(\d+) unsafe fix(?:es)? available", checked)
    would = run_cli("fix", "--diff", cwd=tree).stdout
    would_unsafe = run_cli("fix", "--diff", "--unsafe-fixes", cwd=tree).stdout
    fixed = run_cli("fix", cwd=tree).stdout

    # One rename of a local carries both of its findings: both are counted, by both.
    assert (fixable, unsafe) == (6, 1)
    assert _count(r"Would fix (\d+) finding", would) == fixable
    assert _count(r"Would fix (\d+) finding", would_unsafe) == fixable + unsafe
    assert _count(r"Fixed (\d+) finding", fixed) == fixable
    assert "1 unsafe fix available" in fixed


def test_statistics_mark_a_code_only_some_of_whose_findings_are_fixable(tree: Path) -> None:
    lines = run_cli("check", "--no-cache", "--statistics", cwd=tree).stdout.splitlines()

    # As ruff's `[-]`: LR004 fixes 2 of its 3 findings, LR001 1 of 2 (the other is unsafe).
    assert lines[:2] == ["     3  LR004  [-]  typo", "     2  LR001  [-]  stale-name"]
    unsafe = run_cli("check", "--no-cache", "--statistics", "--unsafe-fixes", cwd=tree)
    assert unsafe.returncode == 2  # `check` has no --unsafe-fixes: a usage error
    (tree / "mod.py").write_text("x = old_name\ny = old_name\n")
    lines = run_cli("check", "--no-cache", "--statistics", cwd=tree).stdout.splitlines()
    assert lines[0] == "     2  LR001  [*]  stale-name"


def test_statistics_in_json_count_the_fixable_findings_per_code(tree: Path) -> None:
    result = run_cli("check", "--no-cache", "--statistics", "--format", "json", cwd=tree)

    assert json.loads(result.stdout) == [  # ruff's keys
        {"code": "LR004", "name": "typo", "count": 3, "fixable": False, "fixable_count": 2},
        {"code": "LR001", "name": "stale-name", "count": 2, "fixable": False, "fixable_count": 1},
    ]


def test_json_findings_carry_their_rules_severity(tree: Path) -> None:
    result = run_cli("check", "--no-cache", "--format", "json", cwd=tree)

    document = json.loads(result.stdout)
    assert {(item["code"], item["severity"]) for item in document} == {
        ("LR001", "error"),
        ("LR004", "warning"),
    }
    assert sorted(document[0]) == sorted(
        [
            "path",
            "line",
            "column",
            "end_line",
            "end_column",
            "code",
            "name",
            "severity",
            "message",
            "fix",
        ]
    )


def test_explicit_non_python_files_are_skipped_with_a_warning(tree: Path) -> None:
    (tree / "README.md").write_text("Call old_name() [broken\n")
    (tree / "notes.txt").write_text("old_name(\n")

    alone = run_cli("check", "--no-cache", "README.md", cwd=tree)

    assert (alone.returncode, alone.stdout) == (0, "All checks passed!\n")
    assert alone.stderr == (
        "lint-rules: warning: README.md: not a Python file (.md), skipped\n"
        "lint-rules: warning: no Python files found under the given paths\n"
    )
    mixed = run_cli("check", "--no-cache", "README.md", "notes.txt", "mod.py", cwd=tree)
    assert mixed.returncode == 1  # the exit code is the findings'
    assert "LR000" not in mixed.stdout
    assert {line.split(":")[0] for line in mixed.stdout.splitlines() if ":" in line} == {"mod.py"}
    assert "notes.txt: not a Python file (.txt), skipped" in mixed.stderr
    fixed = run_cli("fix", "README.md", cwd=tree)
    assert fixed.returncode == 0
    assert (tree / "README.md").read_text() == "Call old_name() [broken\n"


def test_a_script_without_a_suffix_is_still_linted(tree: Path) -> None:
    (tree / "tool").write_text("#!/usr/bin/env python\nold_name()\n")

    result = run_cli("check", "--no-cache", "tool", cwd=tree)

    assert result.returncode == 1
    assert result.stdout.startswith("tool:2:1: LR001 [*] ")


def test_no_cache_is_accepted_by_check_fix_and_the_server(tree: Path) -> None:
    assert run_cli("check", "--no-cache", cwd=tree).returncode == 1
    assert not (tree / ".lint_rules_cache").exists()
    fixed = run_cli("fix", "--no-cache", cwd=tree)
    assert "Fixed 3 findings" in fixed.stdout, fixed.stderr
    assert not (tree / ".lint_rules_cache").exists()
    assert "--no-cache" in run_cli("server", "--help", cwd=tree).stdout

    # A saved file the server checks is shared with the cache, unless --no-cache.
    path = tree / "mod.py"
    text = path.read_text()
    assert Linter(ALL_RULES, tree, use_cache=False).check(path, text, 1, saved=True).findings
    assert not (tree / ".lint_rules_cache").exists()
    assert Linter(ALL_RULES, tree).check(path, text, 1, saved=True).findings
    assert list((tree / ".lint_rules_cache").glob("*.json"))


def test_help_shows_defaults_and_one_program_name_however_started(tree: Path) -> None:
    script = Path(sys.executable).with_name("lint-rules")
    for command in ("check", "fix", "rules", "protocols"):
        as_module = run_cli(command, "--help", cwd=tree)
        as_script = subprocess.run(
            [str(script), command, "--help"], cwd=tree, capture_output=True, text=True
        )
        assert as_module.stdout == as_script.stdout
        assert as_module.stdout.startswith(f"usage: lint-rules {command} ")
        assert "(default: text)" in " ".join(as_module.stdout.split())
    check = " ".join(run_cli("check", "--help", cwd=tree).stdout.split())
    assert "(default: the project root)" in check
    assert "the number of CPUs)" in check
    error = run_cli("check", "--jobs", "many", cwd=tree)
    assert error.returncode == 2
    assert "lint-rules check: error: argument --jobs: not a whole number: 'many'" in error.stderr
    assert "python -m" not in error.stderr + as_module.stdout
