"""Fix markers and the summary follow ruff: `[*]` only where `fix` applies the fix as run."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.output.report import Located, render, summary
from lint_rules.rule import Edit, Finding, Fix, Rule
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

STALE = "`old_name` was renamed to `new_name`"


class _RiskyNameRule(Rule):
    """Reports `risky` with an unsafe fix and `plain` with none."""

    CODE = "LR970"
    NAME = "risky-name"
    MESSAGE = "`{name}` is risky"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "risky":
            fix = self.replace(node, "careful", safe=False)
            self.report(node, self.MESSAGE.format(name=node.id), fix)
        elif node.id == "plain":
            self.report(node, self.MESSAGE.format(name=node.id))


RULES = [*ALL_RULES, _RiskyNameRule]


def _mixed(project: Path) -> Path:
    """One safe fix (LR001), one unsafe fix and one finding without a fix (LR970)."""
    path = project / "m.py"
    path.write_text("old_name()\nrisky()\nplain()\n")
    return path


def test_check_marks_safe_fixes_star_unsafe_ones_tilde_and_counts_both(
    project: Path, lint: Lint
) -> None:
    _mixed(project)

    outcome = lint("check", "--no-cache", rules=RULES)

    assert outcome.code == 1
    assert outcome.out == (
        f"m.py:1:1: LR001 [*] {STALE}\n"
        "m.py:2:1: LR970 [~] `risky` is risky\n"
        "m.py:3:1: LR970 `plain` is risky\n"
        "Found 3 errors.\n"
        "[*] 1 fixable with `lint-rules fix` "
        "(1 unsafe fix available with `lint-rules fix --unsafe-fixes`).\n"
    )


def test_only_unsafe_fixes_are_not_called_fixable(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("risky()\nrisky()\n")

    outcome = lint("check", "--no-cache", rules=RULES)

    assert outcome.out.splitlines()[0] == "m.py:1:1: LR970 [~] `risky` is risky"
    assert outcome.out.endswith(
        "Found 2 errors.\n2 unsafe fixes available with `lint-rules fix --unsafe-fixes`.\n"
    )


def test_statistics_mark_codes_the_same_way(project: Path, lint: Lint) -> None:
    (project / "m.py").write_text("old_name()\nrisky()\nrisky()\nplain()\n")
    (project / "n.py").write_text("plain()\n")

    outcome = lint("check", "--no-cache", "--statistics", "--select", "LR970", rules=RULES)
    lines = outcome.out.splitlines()

    assert lines[0].split() == ["4", "LR970", "[~]", "risky-name"]
    assert lines[1:] == [
        "Found 4 errors.",
        "2 unsafe fixes available with `lint-rules fix --unsafe-fixes`.",
    ]
    everything = lint("check", "--no-cache", "--statistics", rules=RULES).out.splitlines()
    assert everything[:2] == [
        "     4  LR970  [~]  risky-name",
        "     1  LR001  [*]  stale-name",
    ]
    (project / "m.py").write_text("plain()\n")
    unfixable = lint("check", "--no-cache", "--statistics", rules=RULES).out.splitlines()
    assert unfixable == ["     2  LR970       risky-name", "Found 2 errors."]


def test_fix_applies_the_safe_fix_and_says_how_many_unsafe_ones_wait(
    project: Path, lint: Lint
) -> None:
    path = _mixed(project)

    outcome = lint("fix", rules=RULES)

    assert path.read_text() == "new_name()\nrisky()\nplain()\n"
    assert outcome.code == 1  # findings remain: the exit code and the summary agree
    assert outcome.out == (
        "m.py:2:1: LR970 [~] `risky` is risky\n"
        "m.py:3:1: LR970 `plain` is risky\n"
        "Fixed 1 finding, 2 errors remaining.\n"
        "1 unsafe fix available with `lint-rules fix --unsafe-fixes`.\n"
    )


def test_fix_with_unsafe_fixes_applies_both_and_hints_nothing(project: Path, lint: Lint) -> None:
    path = _mixed(project)

    outcome = lint("fix", "--unsafe-fixes", rules=RULES)

    assert path.read_text() == "new_name()\ncareful()\nplain()\n"
    assert outcome.code == 1
    assert outcome.out == (
        "m.py:3:1: LR970 `plain` is risky\nFixed 2 findings, 1 error remaining.\n"
    )
    path.write_text("risky()\n")
    assert lint("fix", "--unsafe-fixes", rules=RULES).out == "Fixed 1 finding, 0 remaining.\n"
    assert path.read_text() == "careful()\n"


def test_fix_diff_counts_the_unsafe_fixes_it_would_leave(project: Path, lint: Lint) -> None:
    path = _mixed(project)

    outcome = lint("fix", "--diff", rules=RULES)

    assert path.read_text() == "old_name()\nrisky()\nplain()\n"
    assert outcome.code == 1
    assert "+new_name()" in outcome.out
    assert "+careful()" not in outcome.out
    assert outcome.out.endswith(
        "m.py:2:1: LR970 [~] `risky` is risky\n"
        "m.py:3:1: LR970 `plain` is risky\n"
        "Would fix 1 finding, 2 errors remaining.\n"
        "1 unsafe fix available with `lint-rules fix --unsafe-fixes`.\n"
    )


def test_only_unsafe_fixes_left_after_fix_still_exit_1(project: Path, lint: Lint) -> None:
    path = project / "m.py"
    path.write_text("risky()\n")

    outcome = lint("fix", rules=RULES)

    assert path.read_text() == "risky()\n"
    assert (outcome.code, outcome.out) == (
        1,
        "m.py:1:1: LR970 [~] `risky` is risky\n"
        "Fixed 0 findings, 1 error remaining.\n"
        "1 unsafe fix available with `lint-rules fix --unsafe-fixes`.\n",
    )


def test_json_keeps_the_fix_and_its_safety(project: Path, lint: Lint) -> None:
    _mixed(project)

    document = json.loads(lint("check", "--no-cache", "--format", "json", rules=RULES).out)

    assert [item["fix"] and item["fix"]["safe"] for item in document] == [True, False, None]


def _finding(line: int, safe: bool | None) -> Located:
    fix = None if safe is None else Fix((Edit(0, 1, "x"),), safe)
    return Located("a.py", Finding("LR970", "message", line, 1, line, 2, fix))


def test_render_with_unsafe_fixes_marks_every_fix_star() -> None:
    located = [_finding(1, True), _finding(2, False), _finding(3, None)]
    names = {"LR970": "risky-name"}

    assert render(located, "text", names, unsafe_fixes=True) == (
        "a.py:1:1: LR970 [*] message\na.py:2:1: LR970 [*] message\na.py:3:1: LR970 message\n"
    )
    assert render(located, "text", names).splitlines()[1] == "a.py:2:1: LR970 [~] message"
    # As ruff's --statistics: 2 of the 3 findings are fixable, so `[-]`, not `[*]`.
    assert render(located, "text", names, True, unsafe_fixes=True).split() == [
        "3",
        "LR970",
        "[-]",
        "risky-name",
    ]
    assert render(located[:2], "text", names, True, unsafe_fixes=True).split()[2] == "[*]"
    assert render(located, "text", names, True).split()[2] == "[-]"  # 1 safe of 3
    assert render(located[1:], "text", names, True).split()[2] == "[~]"  # unsafe only


def test_summary_counts_findings_by_severity() -> None:
    error = _finding(1, None).finding
    warning = Finding("LR004", "typo", 2, 1, 2, 2, Fix((Edit(0, 1, "x"),), True))
    note = Finding("LR980", "note", 3, 1, 3, 2)
    levels = {"LR970": "error", "LR004": "warning", "LR980": "note"}

    assert summary([error, warning, warning], severities=levels) == (
        "Found 1 error and 2 warnings.\n[*] 2 fixable with `lint-rules fix`.\n"
    )
    assert summary([warning], severities=levels).startswith("Found 1 warning.\n")
    assert summary([error, error, warning, note], severities=levels).startswith(
        "Found 2 errors, 1 warning and 1 note.\n"
    )
    assert summary([warning], 2, fix_mode=True, severities=levels) == (
        "Fixed 2 findings, 1 warning remaining.\n"
    )
    assert summary([warning]).startswith("Found 1 error.")  # a code without a level: error


def test_summary_wording_and_plurals() -> None:
    safe, unsafe, bare = (
        _finding(1, True).finding,
        _finding(2, False).finding,
        _finding(3, None).finding,
    )

    assert summary([]) == "All checks passed!\n"
    assert summary([bare]) == "Found 1 error.\n"
    assert summary([safe, safe, bare]) == "Found 3 errors.\n[*] 2 fixable with `lint-rules fix`.\n"
    assert summary([safe, unsafe, unsafe]) == (
        "Found 3 errors.\n[*] 1 fixable with `lint-rules fix` "
        "(2 unsafe fixes available with `lint-rules fix --unsafe-fixes`).\n"
    )
    assert summary([unsafe, bare], 3, fix_mode=True) == (
        "Fixed 3 findings, 2 errors remaining.\n"
        "1 unsafe fix available with `lint-rules fix --unsafe-fixes`.\n"
    )
    assert summary([unsafe], 0, fix_mode=True, unsafe_fixes=True) == (
        "Fixed 0 findings, 1 error remaining.\n"
    )
    assert summary([], 1, fix_mode=True, diff=True) == "Would fix 1 finding, 0 remaining.\n"


def test_a_warm_run_marks_fixes_as_the_cold_one(project: Path, lint: Lint) -> None:
    _mixed(project)

    cold = lint("check", rules=RULES).out
    warm = lint("check", rules=RULES).out

    assert warm == cold
    assert "m.py:2:1: LR970 [~] `risky` is risky\n" in warm
