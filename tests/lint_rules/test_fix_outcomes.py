"""``fix_text``'s and ``fix_texts``'s outcomes and ``unified_diff``, called in-process.

Found by mutation testing (benchmarks/mutation.py fixes, issue 28): the CLI tests reach
these only through the rename rules, on files that end with a newline, one text per batch.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from lint_rules.engine.checker import Checker
from lint_rules.engine.fixes import (
    MAX_FIX_PASSES,
    FixJob,
    fix_text,
    fix_texts,
    unified_diff,
    verify,
)
from lint_rules.rule import Edit, Fix, Rule

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import BannedNameRule, UnsafeFixRule
else:
    from rule_fixtures import BannedNameRule, UnsafeFixRule

# -- unified_diff ----------------------------------------------------------------------------


def test_a_diff_of_files_ending_with_a_newline_is_difflibs_with_a_and_b_headers() -> None:
    assert unified_diff("pkg/m.py", "a\nb\nc\n", "a\nB\nc\n") == (
        "--- a/pkg/m.py\n+++ b/pkg/m.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    )
    assert unified_diff("m.py", "same\n", "same\n") == ""


def test_a_last_line_without_a_newline_is_marked_as_diff_and_patch_mark_it() -> None:
    marker = "\\ No newline at end of file\n"
    assert unified_diff("m.py", "a\nb", "a\nc") == (
        f"--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n{marker}+c\n{marker}"
    )
    # only the side that lacks it is marked
    assert unified_diff("m.py", "a\nb\n", "a\nc") == (
        f"--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n{marker}"
    )


# -- fix_text --------------------------------------------------------------------------------


class FileNameRule(Rule):
    """Reports each file once, naming it: what a rule may read of the path it is given."""

    CODE = "LR981"
    NAME = "file-name"
    MESSAGE = "checked {name}"

    def check_file(self) -> None:
        self.report((0, 0), self.MESSAGE.format(name=self.file.path.as_posix()))


def test_fix_text_checks_the_text_as_the_path_it_was_given() -> None:
    outcome = fix_text(Checker([FileNameRule({})]), Path("pkg/m.py"), "x = 1\n", False)
    assert [finding.message for finding in outcome.findings] == ["checked pkg/m.py"]


def test_fix_text_neither_reports_nor_fixes_an_ignored_code() -> None:
    text = "x = risky\n"
    ignored = fix_text(Checker([UnsafeFixRule({})]), Path("m.py"), text, True, ignored=("LR99",))
    assert (ignored.text, ignored.applied, ignored.findings) == (text, 0, [])
    fixed = fix_text(Checker([UnsafeFixRule({})]), Path("m.py"), text, True)
    assert (fixed.text, fixed.applied, fixed.findings) == ("x = careful\n", 1, [])


def test_fix_text_applies_an_unsafe_fix_only_when_asked() -> None:
    text = "x = risky\n"
    kept = fix_text(Checker([UnsafeFixRule({})]), Path("m.py"), text, unsafe_fixes=False)
    assert (kept.text, kept.applied) == (text, 0)
    (finding,) = kept.findings
    assert finding.fix is not None  # still offered, for --unsafe-fixes
    fixed = fix_text(Checker([UnsafeFixRule({})]), Path("m.py"), text, unsafe_fixes=True)
    assert (fixed.text, fixed.applied, fixed.replaced) == ("x = careful\n", 1, frozenset({"risky"}))


def test_git_applies_the_diff_of_a_file_without_a_last_newline(tmp_path: Path) -> None:
    old, new = "a\nb", "a\nc\nd"
    (tmp_path / "m.py").write_text(old, encoding="utf-8")
    patch = tmp_path / "fix.patch"
    patch.write_text(unified_diff("m.py", old, new), encoding="utf-8")
    subprocess.run(["git", "apply", str(patch)], cwd=tmp_path, check=True, capture_output=True)
    assert (tmp_path / "m.py").read_text(encoding="utf-8") == new


# -- verify's name checks --------------------------------------------------------------------


def test_a_name_that_is_no_longer_read_is_skipped_and_the_later_ones_still_checked() -> None:
    # `id` becomes `True`, which is read as a constant, not a name: nothing to compare
    # there, but the `len` after it still must stay the builtin.
    assert verify("print(id)\nlen(y)\n", "print(True)\nlem(y)\n") == (
        "`lem` on line 2 would no longer be the builtin"
    )
    assert verify("print(id)\nlen(y)\n", "print(True)\nlen(y)\n") is None


def test_a_renamed_use_of_an_import_may_become_a_use_of_another_import() -> None:
    # An import's uses renamed to other imported names (as LR004 renames a module alias):
    # each is still an import, whatever the other renames of the same old name.
    before = "import a, b, c\na.f()\na.g()\n"
    assert verify(before, "import a, b, c\nb.f()\nc.g()\n") is None
    # ...but not to a name bound in the file
    assert verify("import a\nb = 1\na.f()\n", "import a\nb = 1\nb.f()\n") == (
        "`b` on line 3 would no longer be the import of `a`"
    )


def test_a_name_bound_in_the_file_must_stay_bound() -> None:
    assert verify("x = 1\nprint(x)\n", "x = 1\nprint(len)\n") == (
        "`len` on line 2 would no longer name its definition in this file"
    )


# -- fix_texts: the passes ---------------------------------------------------------------------


class RenameRule(Rule):
    """Renames by its class's ``RENAMES`` (safe fixes unless listed in ``UNSAFE``) and
    records every ``begin_texts`` call of its class."""

    CODE = "LR982"
    NAME = "rename"
    MESSAGE = "rename {old}"
    RENAMES: ClassVar[dict[str, str]] = {}
    UNSAFE: ClassVar[frozenset[str]] = frozenset()
    begun: ClassVar[list[list[tuple[Path, str]]]]

    def begin_texts(self, items: Sequence[tuple[Path, str]]) -> None:
        type(self).begun.append(list(items))

    def visit_Name(self, node: ast.Name) -> None:
        new = self.RENAMES.get(node.id)
        if new is not None:
            fix = self.replace(node, new, safe=node.id not in self.UNSAFE)
            self.report(node, self.MESSAGE.format(old=node.id), fix)


def rename_rule(renames: dict[str, str], unsafe: frozenset[str] = frozenset()) -> RenameRule:
    rule: type[RenameRule] = type(
        "Renames", (RenameRule,), {"RENAMES": renames, "UNSAFE": unsafe, "begun": []}
    )
    return rule({})


def rename_checker(renames: dict[str, str], unsafe: frozenset[str] = frozenset()) -> Checker:
    return Checker([rename_rule(renames, unsafe)])


def begun(checker: Checker) -> list[list[tuple[Path, str]]]:
    return type(checker.rules[0]).begun  # type: ignore[attr-defined, no-any-return]


def test_texts_changed_together_begin_together_and_the_run_is_ended() -> None:
    checker = rename_checker({"a": "b"})
    jobs = [FixJob(Path("one.py"), "a = 1\n"), FixJob(Path("two.py"), "x = a\n")]
    outcomes = fix_texts(checker, jobs, unsafe_fixes=False)
    assert [(o.text, o.applied) for o in outcomes] == [("b = 1\n", 1), ("x = b\n", 1)]
    assert begun(checker) == [[(Path("one.py"), "b = 1\n"), (Path("two.py"), "x = b\n")], []]


def test_a_single_changed_text_begins_nothing() -> None:
    checker = rename_checker({"a": "b"})
    (outcome,) = fix_texts(checker, [FixJob(Path("one.py"), "a = 1\n")], unsafe_fixes=False)
    assert outcome.text == "b = 1\n"
    assert begun(checker) == []


def test_fixes_applied_over_several_passes_are_all_counted() -> None:
    outcome = fix_text(rename_checker({"a": "b", "b": "c"}), Path("m.py"), "a = 1\n", False)
    assert (outcome.text, outcome.applied) == ("c = 1\n", 2)


def test_a_fix_that_comes_back_to_the_text_it_started_from_counts_nothing() -> None:
    # `a` -> `b` -> `a` ... for MAX_FIX_PASSES (even) passes: the text as it was
    assert MAX_FIX_PASSES % 2 == 0
    outcome = fix_text(rename_checker({"a": "b", "b": "a"}), Path("m.py"), "a = 1\n", False)
    assert (outcome.text, outcome.applied, outcome.refused) == ("a = 1\n", 0, None)
    assert [finding.message for finding in outcome.findings] == ["rename a"]


def test_an_ignored_code_stays_ignored_in_every_pass() -> None:
    # the second pass checks the fixed text again: the ignored code must not come back
    both = Checker([StaleRename({}), UnsafeFixRule({})])
    outcome = fix_text(both, Path("m.py"), "x = a\ny = risky\n", True, ignored=("LR995",))
    assert (outcome.text, outcome.applied, outcome.findings) == ("x = b\ny = risky\n", 1, [])


class StaleRename(RenameRule):
    RENAMES: ClassVar[dict[str, str]] = {"a": "b"}
    begun: ClassVar[list[list[tuple[Path, str]]]] = []


def test_a_refused_result_withholds_the_unsafe_fixes_it_was_asked_to_apply() -> None:
    # `risky` -> `1 +` (unsafe) breaks the file: refused, its finding says why
    checker = rename_checker({"risky": "1 +"}, unsafe=frozenset({"risky"}))
    outcome = fix_text(checker, Path("m.py"), "x = risky\n", unsafe_fixes=True)
    assert outcome.text == "x = risky\n"
    assert outcome.refused is not None
    assert outcome.refused.startswith("the result would not compile: ")
    (finding,) = outcome.findings
    assert finding.fix is None
    assert finding.message == f"rename risky (fix withheld: {outcome.refused})"


def test_a_refused_result_reports_the_original_findings_as_checked_with_every_fix_withheld() -> (
    None
):
    # `a` -> `1 +` (safe) breaks the file; `risky`'s unsafe fix was not asked for, and
    # `blocked` names it; the banned `x` is an ignored code; the file-name finding has no
    # fix. The findings are those of the original text, checked as its path and without
    # the ignored code: the safe fix withheld for the refusal, the unsafe one for its
    # block, the one without a fix as it was.
    checker = Checker(
        [
            FileNameRule({}),
            rename_rule({"a": "1 +"}),
            UnsafeFixRule({}),
            BannedNameRule({"banned": ["x"]}),
        ]
    )
    text = "x = a\ny = risky\n"
    outcome = fix_text(
        checker,
        Path("pkg/m.py"),
        text,
        unsafe_fixes=False,
        ignored=("LR992",),
        blocked={"risky": "it is exported"},
    )
    assert (outcome.text, outcome.applied) == (text, 0)
    assert outcome.refused is not None
    assert sorted((f.message, f.fix is None) for f in outcome.findings) == [
        ("checked pkg/m.py", True),
        (f"rename a (fix withheld: {outcome.refused})", True),
        ("risky (fix withheld: it is exported)", True),
    ]


def test_what_an_insertion_replaced_is_not_counted_as_a_replaced_text() -> None:
    # an insertion replaces "": only real texts are what `blocked` could name
    checker = Checker([InsertionRule({})])
    outcome = fix_text(checker, Path("m.py"), "a = 1\n", unsafe_fixes=False)
    assert (outcome.text, outcome.applied, outcome.replaced) == ("a_1 = 1\n", 1, frozenset())


class InsertionRule(Rule):
    """Inserts `_1` after a name `a`."""

    CODE = "LR983"
    NAME = "insertion"
    MESSAGE = "insert after a"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "a":
            _, end = self.file.node_range(node)
            self.report(node, self.MESSAGE, Fix((Edit(end, end, "_1"),)))
