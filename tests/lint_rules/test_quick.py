"""The recorded ``check`` (``lint_rules/quick.py``): the same bytes and exit code as the full
run, and never once an input it depends on changed. Every run is a real process
(``python -m lint_rules``); whether the record answered is read from ``-X importtime``
(the full run imports ``lint_rules.cli``, the answered one never does)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import lint_rules
from lint_rules import quick
from lint_rules.analysis.typos import find_typos
from lint_rules.engine.cache import CACHE_DIRECTORY, content_digest
from lint_rules.rules.typo import TypoRule

MESSAGE = "`old_name` was renamed to `new_name`"
MISSPELT = "Sup" + "resses"  # built from parts: this repository's typos run must not flag it
CLOSE = "ship" + "ed"  # a value close to "shipped"


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str
    answered: bool
    """Whether the record answered (the CLI was never imported)."""


def _check(*arguments: str, cwd: Path, env: dict[str, str] | None = None) -> Ran:
    command = [sys.executable, "-X", "importtime", "-m", "lint_rules", "check", *arguments]
    done = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, check=False, timeout=300, env=env
    )
    lines = done.stderr.splitlines(keepends=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import ")}
    err = "".join(line for line in lines if not line.startswith("import time:"))
    return Ran(done.returncode, done.stdout, err, "lint_rules.cli" not in imported)


def _twice(*arguments: str, cwd: Path) -> tuple[Ran, Ran]:
    """A full run that records, then the same run (answered, when the record holds)."""
    first = _check(*arguments, cwd=cwd)
    assert not first.answered
    return first, _check(*arguments, cwd=cwd)


def _same(one: Ran, other: Ran) -> None:
    assert (one.code, one.out, one.err) == (other.code, other.out, other.err)


@pytest.mark.parametrize(
    "arguments",
    [
        ("a.py", "b.py"),
        ("b.py",),
        ("a.py", "--format", "json"),
        ("a.py", "b.py", "--format", "github"),
        ("a.py", "b.py", "--statistics"),
        ("a.py", "--exit-zero"),
        ("a.py", "--ignore", "LR001"),
        ("a.py", "notes.md", "b.py"),
    ],
)
def test_a_repeated_check_is_answered_with_the_full_runs_bytes_and_exit_code(
    project: Path, arguments: tuple[str, ...]
) -> None:
    (project / "a.py").write_text("old_name()\nx = old_name\n")
    (project / "b.py").write_text("new_name()\n")
    (project / "notes.md").write_text("# not Python\n")

    first, second = _twice(*arguments, cwd=project)
    third = _check(*arguments, cwd=project)

    assert second.answered
    assert third.answered
    _same(first, second)
    _same(first, third)
    uncached = _check(*arguments, "--no-cache", cwd=project)
    assert (uncached.code, uncached.out, uncached.err) == (first.code, first.out, first.err)
    assert not uncached.answered  # --no-cache never reads a record


def test_the_answer_keeps_stderr_warnings_and_the_summary(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    (project / "notes.md").write_text("# not Python\n")

    first, second = _twice("notes.md", "a.py", cwd=project)

    assert second.answered
    assert second.out == f"a.py:1:1: LR001 [*] {MESSAGE}\nFound 1 error.\n" + (
        "[*] 1 fixable with `lint-rules fix`.\n"
    )
    assert second.err == "lint-rules: warning: notes.md: not a Python file (.md), skipped\n"
    assert second.code == 1
    _same(first, second)


def test_the_console_script_entry_point_is_answered_too(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    script = (  # what the `lint-rules` script installed for `lint_rules.__main__:main` runs
        "import sys\nfrom lint_rules.__main__ import main\n"
        "sys.argv = ['lint-rules', 'check', 'a.py']\nsys.exit(main())\n"
    )
    command = [sys.executable, "-X", "importtime", "-c", script]
    full = _check("a.py", cwd=project)

    done = subprocess.run(command, cwd=project, capture_output=True, text=True, check=False)

    assert (done.returncode, done.stdout) == (full.code, full.out)
    assert "lint_rules.cli" not in done.stderr
    assert "lint_rules.quick" in done.stderr


def test_editing_the_checked_file_is_seen_even_with_the_same_size_and_time(
    project: Path,
) -> None:
    path = project / "a.py"
    path.write_text("old_name()\n")
    _, answered = _twice("a.py", cwd=project)
    assert answered.answered
    assert answered.code == 1
    status = path.stat()

    path.write_text("new_name()\n")  # as long as before
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    after = _check("a.py", cwd=project)

    assert not after.answered
    assert (after.code, after.out) == (0, "All checks passed!\n")
    assert _check("a.py", cwd=project).answered


def test_editing_the_configuration_is_seen(project: Path) -> None:
    (project / "a.py").write_text("old_name()\nother()\n")
    _, answered = _twice("a.py", cwd=project)
    assert answered.answered
    assert "old_name" in answered.out

    (project / "pyproject.toml").write_text('[tool.lint_rules.renames]\nother = "another"\n')
    after = _check("a.py", cwd=project)

    assert not after.answered
    assert "a.py:2:1: LR001 [*] `other` was renamed to `another`" in after.out
    assert "old_name" not in after.out


def test_a_nearer_pyproject_appearing_is_seen(project: Path) -> None:
    package = project / "package"
    package.mkdir()
    (package / "a.py").write_text("old_name()\n")
    _, answered = _twice("package/a.py", cwd=project)
    assert answered.answered
    assert answered.code == 1

    (package / "pyproject.toml").write_text("[tool.lint_rules]\n")  # no renames there
    after = _check("package/a.py", cwd=project)

    assert not after.answered
    assert (after.code, after.out) == (0, "All checks passed!\n")


def test_a_missing_file_is_the_full_runs_error(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    _, answered = _twice("a.py", cwd=project)
    assert answered.answered

    (project / "a.py").unlink()
    after = _check("a.py", cwd=project)

    assert not after.answered
    assert (after.code, after.out) == (2, "")
    assert "a.py: no such file or directory" in after.err


def test_another_working_directory_or_argument_order_is_another_record(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "a.py").write_text("old_name()\n")
    (project / "b.py").write_text("old_name()\n")
    _twice("sub/a.py", "b.py", cwd=project)

    reordered = _check("b.py", "sub/a.py", cwd=project)
    elsewhere = _check("a.py", "../b.py", cwd=project / "sub")

    assert not reordered.answered
    assert not elsewhere.answered
    assert "sub/a.py:1:1" in reordered.out
    assert "\na.py:1:1" in elsewhere.out
    assert "/project/b.py:1:1" in elsewhere.out
    assert _check("a.py", "../b.py", cwd=project / "sub").answered


def test_directories_and_stdin_are_never_recorded(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")

    for arguments in [(".",), (), ("-",), ("--stdin-filename", "a.py", "-")]:
        _check(*arguments, cwd=project)
        assert not _check(*arguments, cwd=project).answered, arguments


@pytest.mark.skipif(find_typos() is None, reason="the typos executable is missing")
def test_a_typos_configuration_appearing_is_seen(project: Path) -> None:
    (project / "a.py").write_text("# frobnicate the widgets\n")
    _, answered = _twice("a.py", cwd=project)
    assert answered.answered
    assert answered.code == 0

    (project / "_typos.toml").write_text('[default.extend-words]\nfrobnicate = ""\n')
    after = _check("a.py", cwd=project)

    assert not after.answered
    assert "a.py:1:3: LR004" in after.out


LITERALS_PYPROJECT = (  # LR004 would flag the misspelt value too (and read the project)
    '[tool.lint_rules]\nselect = ["LR002", "LR003"]\n'
    "[tool.lint_rules.literals]\n"
    '"name" = "shop.events:EventName"\n'
    "[tool.lint_rules.protocols]\n"
    '"shop.events:Store" = ["src/**/*.py"]\n'
)
EVENTS = (
    "from typing import Literal, Protocol\n\n"
    'EventName = Literal["paid", "shipped"]\n\n\n'
    "class Store(Protocol):\n    def get(self, key: str) -> str: ...\n"
)
USES = (
    "def on(event):\n"
    f'    if event.name == "{CLOSE}":\n'
    "        pass\n\n\n"
    "class MemoryStore:\n    def get(self, key: str) -> str:\n        return key\n"
)


def _literals_project(project: Path) -> Path:
    (project / "pyproject.toml").write_text(LITERALS_PYPROJECT)
    package = project / "src" / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "events.py").write_text(EVENTS)
    (package / "uses.py").write_text(USES)
    return package


def test_an_edit_to_a_module_the_rules_read_is_seen(project: Path) -> None:
    package = _literals_project(project)
    first, answered = _twice("src/shop/uses.py", cwd=project)
    assert answered.answered
    assert "LR002" in answered.out
    _same(first, answered)

    (package / "events.py").write_text(EVENTS.replace('"shipped"', f'"shipped", "{CLOSE}"'))
    after = _check("src/shop/uses.py", cwd=project)

    assert not after.answered
    assert (after.code, after.out) == (0, "All checks passed!\n")


def test_an_edit_to_a_module_the_rules_read_keeping_its_size_and_time_is_seen(
    project: Path,
) -> None:
    events = _literals_project(project) / "events.py"
    _, answered = _twice("src/shop/uses.py", cwd=project)
    assert answered.answered
    assert "LR002" in answered.out
    status = events.stat()

    edited = EVENTS.replace('"paid", "shipped"', f'"{CLOSE}", "paidX"')
    assert len(edited) == len(EVENTS)
    events.write_text(edited)
    os.utime(events, ns=(status.st_atime_ns, status.st_mtime_ns))
    after = _check("src/shop/uses.py", cwd=project)

    assert not after.answered
    assert (after.code, after.out) == (0, "All checks passed!\n")


def test_a_module_the_lookup_would_now_find_first_is_seen(project: Path) -> None:
    _literals_project(project)
    _, answered = _twice("src/shop/uses.py", cwd=project)
    assert answered.answered
    assert "LR002" in answered.out

    shadow = project / "shop"  # the project root is looked in before src/
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")
    (shadow / "events.py").write_text(EVENTS.replace('"shipped"', f'"shipped", "{CLOSE}"'))
    after = _check("src/shop/uses.py", cwd=project)

    assert not after.answered
    assert (after.code, after.out) == (0, "All checks passed!\n")


@pytest.mark.skipif(find_typos() is None, reason="the typos executable is missing")
def test_a_result_that_read_other_files_of_the_project_holds_while_they_do(
    project: Path,
) -> None:
    # Whether a typo's fix is safe depends on the other modules (who else uses the name):
    # the record holds the project's files and their directories, so it is replayed only
    # while none of them changed and none was added.
    (project / "a.py").write_text(f"# {MISSPELT} warnings\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "b.py").write_text("value = 1\n")

    first, second = _twice("a.py", cwd=project)
    assert second.answered
    _same(first, second)

    (project / "pkg" / "b.py").write_text("value = 22\n")  # another module edited
    edited = _check("a.py", cwd=project)
    assert not edited.answered
    _same(first, edited)
    assert _check("a.py", cwd=project).answered

    (project / "pkg" / "c.py").write_text("other = 3\n")  # a module added
    added = _check("a.py", cwd=project)
    assert not added.answered
    _same(first, added)
    assert _check("a.py", cwd=project).answered


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    """A copy of the lint_rules package, run instead of the installed one (PYTHONPATH)."""
    where = tmp_path / "tool"
    shutil.copytree(
        Path(lint_rules.__file__).parent,
        where / "lint_rules",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return where


def test_an_edit_to_a_rules_code_is_seen(project: Path, package_copy: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    env = {**os.environ, "PYTHONPATH": str(package_copy)}
    first = _check("a.py", cwd=project, env=env)
    answered = _check("a.py", cwd=project, env=env)
    assert (answered.answered, answered.out) == (True, first.out)
    assert MESSAGE in first.out

    rule = package_copy / "lint_rules" / "rules" / "stale_name.py"
    text = rule.read_text()
    assert "was renamed to" in text
    rule.write_text(text.replace("was renamed to", "is now"))
    after = _check("a.py", cwd=project, env=env)

    assert not after.answered
    assert "`old_name` is now `new_name`" in after.out


def test_records_are_kept_under_the_project_root_and_bounded(project: Path) -> None:
    (project / "sub").mkdir()
    for index in range(quick.KEEP_RUNS + 3):
        (project / f"m{index}.py").write_text("x = 1\n")
        if index % 2:
            _check(f"../m{index}.py", cwd=project / "sub")
        else:
            _check(f"m{index}.py", cwd=project)

    runs = project / CACHE_DIRECTORY / quick.RUNS_DIRECTORY
    assert len(list(runs.iterdir())) == quick.KEEP_RUNS
    assert not (project / "sub" / CACHE_DIRECTORY).exists()
    assert (project / CACHE_DIRECTORY / ".gitignore").read_text().endswith("*\n")


def test_a_corrupt_record_falls_back_to_the_full_run(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    first, _ = _twice("a.py", cwd=project)
    (record,) = (project / CACHE_DIRECTORY / quick.RUNS_DIRECTORY).iterdir()

    for garbage in (b"", b"\x00garbage", record.read_bytes()[:-7]):
        record.write_bytes(garbage)
        after = _check("a.py", cwd=project)
        assert not after.answered
        _same(first, after)


def test_the_fast_path_agrees_with_the_engine_on_names_and_digests() -> None:
    assert quick.CACHE_DIRECTORY == CACHE_DIRECTORY
    for data in (b"", b"x = 1\n", bytes(range(256)) * 50):
        assert quick.digest(data) == content_digest(data)


def test_the_typos_inputs_cover_what_its_fingerprint_reads(project: Path) -> None:
    (project / "sub").mkdir()
    (project / "typos.toml").write_text("[default]\n")
    inputs = TypoRule.cache_inputs(project / "sub")

    executable = find_typos()
    if executable is not None:  # the one that runs, by status
        assert ("status", executable) in inputs
    assert ("content", project / "typos.toml") in inputs  # the governing configuration
    for directory in (project / "sub", project, project.parent, Path("/")):
        for name in ("typos.toml", "_typos.toml", ".typos.toml", "pyproject.toml"):
            assert ("content", directory / name) in inputs


# An edited file: typos starts on it before the command line is imported ----------------


@pytest.mark.skipif(find_typos() is None, reason="the typos executable is missing")
def test_an_edited_files_typos_run_is_started_early_and_taken_by_its_check(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lint_rules.analysis import typos
    from lint_rules.cli import main

    (project / "a.py").write_text("x = 1\n")
    assert _check("a.py", cwd=project).code == 0
    (project / "a.py").write_text(f"# {MISSPELT} warnings\nx = 1\n")
    monkeypatch.chdir(project)

    answered, edited = quick.answer_or_edited(["check", "a.py"])
    assert (answered, edited) == (None, [str(project / "a.py")])
    typos.start_early([Path(path) for path in edited])
    (early,) = typos._EARLY.values()
    code = main(["check", "a.py"])

    assert typos._EARLY == {}  # the check took the run started early
    assert early.returncode is not None
    assert code == 1
    assert f"a.py:1:3: LR004 [*] `{MISSPELT}`" in capsys.readouterr().out


@pytest.mark.skipif(find_typos() is None, reason="the typos executable is missing")
def test_an_early_typos_run_no_check_takes_is_stopped(project: Path) -> None:
    from lint_rules.analysis import typos

    (project / "a.py").write_text("x = 1\n")
    typos.start_early([project / "a.py"])
    (early,) = typos._EARLY.values()

    typos.discard_early()

    assert typos._EARLY == {}
    assert early.returncode is not None


def test_no_typos_run_starts_early_when_more_than_the_files_changed(project: Path) -> None:
    (project / "a.py").write_text("x = 1\n")
    assert _check("a.py", cwd=project).code == 0
    (project / "a.py").write_text("x = 2\n")
    arguments = ["check", "a.py"]
    assert quick.answer_or_edited(arguments) == (None, [str(project / "a.py")])

    (project / "pyproject.toml").write_text('[tool.lint_rules.renames]\nold_name = "other"\n')

    assert quick.answer_or_edited(arguments) == (None, [])  # the configuration changed too
    assert quick.answer_or_edited(["check", "--select", "LR004", "a.py"]) == (None, [])
