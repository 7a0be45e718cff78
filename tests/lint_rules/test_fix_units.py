"""The fix engine's functions called directly: ``verify``'s name checks, ``apply_fixes``'s
overlaps, the writes (``write_atomic``, ``write_fixed``, ``still_holds``) and
``fix_text``'s refusals.

Found by mutation testing (benchmarks/mutation.py fixes): the fix tests run these through
the CLI on rename fixes, which never reach several of their branches.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.engine import fixes
from lint_rules.engine.checker import Checker
from lint_rules.engine.fixes import (
    ChangedWhileFixing,
    apply_fixes,
    compile_problem,
    fix_text,
    still_holds,
    syntax_problem,
    verify,
    write_atomic,
    write_fixed,
)
from lint_rules.rule import Edit, Fix, Rule
from lint_rules.rules.stale_name import StaleNameRule

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import BannedNameRule
else:
    from rule_fixtures import BannedNameRule

# -- verify ----------------------------------------------------------------------------------


def test_verify_refuses_a_builtin_turned_into_another_name() -> None:
    assert (
        verify("x = len(a)\n", "x = lem(a)\n") == "`lem` on line 1 would no longer be the builtin"
    )


def test_verify_accepts_a_change_of_token_count_or_an_unreadable_before() -> None:
    assert verify("x = 1\n", "x = (1)\n") is None
    assert verify('x = """open\n', "x = 1\n") is None


def test_verify_checks_a_changed_f_string_and_skips_a_changed_plain_string() -> None:
    before = 'x = 1\nprint(f"{x}")\nlen(a)\n'
    walrus = 'x = 1\nprint(f"{(len := x)}")\nlen(a)\n'  # binds len for the line after
    assert verify(before, walrus) == "`len` on line 3 would no longer be the builtin"
    assert verify(before, 'x = 1\nprint(f"{x}!")\nlen(a)\n') is None
    assert verify('x = "if"\n', 'x = "of"\n') is None  # a plain string: no name in it


def test_verify_keeps_an_import_renamed_at_its_source_in_every_branch() -> None:
    before = (
        "try:\n    from m import old as f\nexcept ImportError:\n    from n import old as f\nf()\n"
    )
    after = before.replace("import old", "import new")
    assert verify(before, after) is None
    moved = before.replace("from n import old", "from n import other")
    assert verify(before, moved) == "`f` on line 5 would no longer be the import of `m.old, n.old`"


# -- apply_fixes -----------------------------------------------------------------------------


def test_two_insertions_at_one_point_conflict_the_later_waits() -> None:
    first, second = Fix((Edit(1, 1, "A"),)), Fix((Edit(1, 1, "B"),))
    assert apply_fixes("xy", [first, second]) == ("xAy", 1)


def test_edits_that_touch_without_overlapping_are_all_applied() -> None:
    left = Fix((Edit(0, 1, "A"), Edit(4, 5, "E")))
    middle = Fix((Edit(3, 4, "D"),))  # ends where an accepted edit starts
    right = Fix((Edit(1, 2, "B"),))  # starts where an accepted edit ends
    assert apply_fixes("abcdef", [middle, left, right]) == ("ABcDEf", 3)


# -- the writes ------------------------------------------------------------------------------


def test_write_atomic_creates_a_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "new.py"
    write_atomic(path, b"x = 1\n")
    assert path.read_bytes() == b"x = 1\n"


def test_write_atomic_writes_a_hidden_temporary_file_beside_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"old\n")
    seen: list[list[str]] = []
    monkeypatch.setattr(
        fixes, "between_read_and_write", lambda _: seen.append(sorted(os.listdir(tmp_path)))
    )
    write_atomic(path, b"new\n", expected=b"old\n")
    (listing,) = seen
    (temporary,) = [name for name in listing if name != "m.py"]
    assert temporary.startswith(".m.py.")
    assert sorted(os.listdir(tmp_path)) == ["m.py"]
    assert path.read_bytes() == b"new\n"


def test_a_changed_file_is_not_written_and_the_error_names_the_users_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.py"
    link = tmp_path / "link.py"
    for named in (None, link):
        path.write_bytes(b"old\n")
        monkeypatch.setattr(
            fixes, "between_read_and_write", lambda _: path.write_bytes(b"edited\n")
        )
        with pytest.raises(ChangedWhileFixing, match=rf"^{named or path} changed while fixing$"):
            write_atomic(path, b"new\n", expected=b"old\n", named=named)
        assert path.read_bytes() == b"edited\n"
        assert sorted(os.listdir(tmp_path)) == ["m.py"]


def test_write_fixed_replaces_a_single_file_and_rewrites_a_hard_linked_one_in_place(
    tmp_path: Path,
) -> None:
    single = tmp_path / "single.py"
    single.write_bytes(b"old\n")
    inode = single.stat().st_ino
    assert write_fixed(single, b"old\n", b"new\n") is None
    assert single.read_bytes() == b"new\n"
    assert single.stat().st_ino != inode  # replaced, not rewritten

    linked = tmp_path / "linked.py"
    linked.write_bytes(b"old\n")
    os.link(linked, tmp_path / "other-name.py")
    inode = linked.stat().st_ino
    assert write_fixed(linked, b"old\n", b"new\n") is None
    assert linked.stat().st_ino == inode
    assert (tmp_path / "other-name.py").read_bytes() == b"new\n"


def test_a_changed_hard_linked_file_is_not_written_naming_the_users_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = tmp_path / "linked.py"
    linked.write_bytes(b"old\n")
    os.link(linked, tmp_path / "other-name.py")
    monkeypatch.setattr(fixes, "between_read_and_write", lambda p: p.write_bytes(b"edited\n"))
    with pytest.raises(ChangedWhileFixing, match=rf"^{linked} changed while fixing$"):
        write_fixed(linked, b"old\n", b"new\n")
    assert linked.read_bytes() == b"edited\n"


def test_write_fixed_notes_only_a_symlink_written_through(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "dir-link").symlink_to(real)
    through_directory = tmp_path / "dir-link" / "m.py"  # not itself a symlink
    through_directory.write_bytes(b"old\n")
    assert write_fixed(through_directory, b"old\n", b"new\n") is None
    link = tmp_path / "m-link.py"
    link.symlink_to(real / "m.py")
    assert write_fixed(link, b"new\n", b"newer\n") == (
        f"written through the symlink to {real / 'm.py'}"
    )
    assert link.is_symlink()
    assert (real / "m.py").read_bytes() == b"newer\n"


def test_still_holds(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_bytes(b"x\n")
    assert still_holds(path, b"x\n") is True
    assert still_holds(path, b"y\n") is False
    assert still_holds(tmp_path / "missing.py", b"x\n") is False


# -- fix_text ---------------------------------------------------------------------------------


def checker() -> Checker:
    return Checker([StaleNameRule({"renames": {"old_name": "new_é"}})])


def test_fix_text_refuses_a_result_the_files_encoding_cannot_hold() -> None:
    text = "x = old_name\n"
    outcome = fix_text(checker(), Path("m.py"), text, unsafe_fixes=True, encoding="ascii")
    assert outcome.text == text
    assert outcome.refused == "the result cannot be encoded as ascii"
    (finding,) = outcome.findings
    assert finding.fix is None
    assert finding.message.endswith("(fix withheld: the result cannot be encoded as ascii)")
    fixed = fix_text(checker(), Path("m.py"), text, unsafe_fixes=True, encoding="utf-8")
    assert fixed.text == "x = new_é\n"


def test_fix_text_withholds_only_the_blocked_fixes() -> None:
    text = "x = old_name\ny = 1  # noqa-free line without a finding\n"
    outcome = fix_text(
        checker(), Path("m.py"), text, unsafe_fixes=True, blocked={"old_name": "it is exported"}
    )
    assert outcome.text == text
    (finding,) = outcome.findings
    assert finding.fix is None
    assert finding.message.endswith("(fix withheld: it is exported)")
    unblocked = fix_text(
        checker(), Path("m.py"), text, unsafe_fixes=True, blocked={"other": "not this one"}
    )
    assert unblocked.text == "x = new_é\ny = 1  # noqa-free line without a finding\n"


class UnsafeRenameRule(Rule):
    """Reports `bad`, with an unsafe fix to `good`."""

    CODE = "LR993"
    NAME = "unsafe-rename"
    MESSAGE = "`bad` is bad"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "bad":
            start, end = self.file.node_range(node)
            self.report(node, self.MESSAGE, Fix((Edit(start, end, "good"),), safe=False))


def test_blocked_names_leave_other_findings_as_they_are() -> None:
    # A fix left unapplied (unsafe) and a finding without a fix keep their messages when
    # `blocked` names something else.
    both = Checker([UnsafeRenameRule({}), BannedNameRule({"banned": ["x"]})])
    outcome = fix_text(both, Path("m.py"), "x = bad\n", unsafe_fixes=False, blocked={"z": "r"})
    assert outcome.text == "x = bad\n"
    assert sorted((f.message, f.fix is not None) for f in outcome.findings) == [
        ("`bad` is bad", True),
        ("`x` is banned", False),
    ]


def test_verify_refuses_a_result_that_does_not_parse_after_a_text_that_did_not_compile() -> None:
    reason = verify("def f(:\n    pass\n", "def g(:\n    pass\n")
    assert reason is not None
    assert reason.startswith("the result would not parse: line 1: ")


def test_a_fix_carried_by_several_findings_counts_once_per_finding() -> None:
    # The same rename reported at each occurrence: applied once, counted per finding;
    # the fixes after it are still applied.
    same = [Fix((Edit(0, 1, "A"),)) for _ in range(3)]
    assert apply_fixes("abc", [*same, Fix((Edit(2, 3, "C"),))]) == ("AbC", 4)


def test_an_overlapping_fix_waits_and_the_later_ones_are_applied() -> None:
    first, overlapping, later = (
        Fix((Edit(0, 2, "AB"),)),
        Fix((Edit(1, 3, "xx"),)),
        Fix((Edit(4, 5, "E"),)),
    )
    assert apply_fixes("abcdef", [first, overlapping, later]) == ("ABcdEf", 2)


def test_a_text_nested_too_deeply_to_parse_is_a_problem_named_by_its_error() -> None:
    # CPython's parser gives up with an error that has no message (a MemoryError on 3.11),
    # or a SyntaxError on versions that check the depth first: either way a reason that
    # says what happened, never an empty or "None" one.
    deep = "x = " + "-" * 200_000 + "1\n"
    for problem in (syntax_problem(deep), compile_problem(deep)):
        assert problem is not None
        assert problem in {"MemoryError", "RecursionError"} or problem.startswith("line ")
