"""``rename_problems`` answers what ``rename_edits`` would, per target, while compiling a
file renamed by several targets once for all of them: the cases where that shortcut
would be wrong (interacting spellings, a file that does not compile as read) fall back
to compiling each target's edits alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from lint_rules.codemod.references import (
    TARGET,
    Occurrence,
    Plan,
    Position,
    RenameError,
    RenameTarget,
    rename_edits,
    rename_problems,
)


def _plan(path: Path, text: str, sites: dict[tuple[str, str], list[tuple[int, int]]]) -> Plan:
    """A plan whose targets (module ``path``, owner ``f``, old spelling) are the target's
    at the given (line, column) sites of ``path``, which holds ``text``."""
    path.write_text(text, encoding="utf-8")
    occurrences = {
        RenameTarget(path, "f", old, keyword=True): [
            Occurrence(path, Position(line, column), "keyword", TARGET) for line, column in at
        ]
        for (old, _), at in sites.items()
    }
    return Plan(occurrences, set())


def _one_by_one(plan: Plan, renames: dict[RenameTarget, str]) -> dict[RenameTarget, str]:
    problems = {}
    for target, new in renames.items():
        try:
            rename_edits(plan, target, new)
        except RenameError as error:
            problems[target] = str(error)
    return problems


CASES = {
    "independent renames in one file": (
        "def f(a=0, c=0):\n    return a, c\n\n\nf(a=1, c=2)\n",
        {("a", "b"): [(1, 6), (2, 11), (5, 2)], ("c", "d"): [(1, 11), (2, 14), (5, 7)]},
        set(),
    ),
    "a keyword repeated by one rename": (
        "def g(**k):\n    return k\n\n\ng(a=1, b=2, c=3)\n",
        {("a", "b"): [(5, 2)], ("c", "d"): [(5, 12)]},
        {"a"},
    ),
    "renames that repair each other (a new spelling is another's old one)": (
        "def g(**k):\n    return k\n\n\ng(x=1, y=2)\n",
        {("x", "y"): [(5, 2)], ("y", "z"): [(5, 7)]},
        {"x"},
    ),
    "a file that does not compile as read": (
        "g(a=1, a=2)\ng(c=3)\n",
        {("a", "e"): [(1, 2)], ("c", "d"): [(2, 2)]},
        {"c"},
    ),
    "a site that no longer holds the old spelling": (
        "g(a=1)\ng(c=3)\n",
        {("a", "b"): [(1, 2)], ("c", "d"): [(2, 4)]},
        {"c"},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_rename_problems_agree_with_renaming_each_target_alone(tmp_path: Path, case: str) -> None:
    text, sites, failing = CASES[case]
    path = tmp_path / "module.py"
    plan = _plan(path, text, sites)
    renames = {RenameTarget(path, "f", old, keyword=True): new for (old, new) in sites}
    problems = rename_problems(plan, renames)
    assert {target.old for target in problems} == failing
    assert problems == _one_by_one(plan, renames)


def test_a_withheld_target_is_not_verified(tmp_path: Path) -> None:
    path = tmp_path / "module.py"
    plan = _plan(path, "g(a=1, b=2)\n", {("a", "b"): [(1, 2)]})
    (target,) = plan.occurrences
    plan.occurrences[target].append(Occurrence(path, Position(1, 7), "keyword"))  # unknown
    assert plan.withheld == {target}
    assert rename_problems(plan, {target: "b"}) == {}
