"""The command line: output formats, selection, exit codes, stdin, rules and explain."""

from __future__ import annotations

import codecs
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.config import load_config
from lint_rules.output.docs import rules_markdown
from lint_rules.output.report import Located, render
from lint_rules.rule import Finding
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import DyingRule, Lint
    from tests.lint_rules.rule_fixtures import run_cli as _cli
else:
    from rule_fixtures import DyingRule, Lint
    from rule_fixtures import run_cli as _cli

REPOSITORY = Path(__file__).resolve().parents[2]
MESSAGE = "`old_name` was renamed to `new_name`"


def _two_files(project: Path) -> None:
    (project / "b.py").write_text("x = old_name\n\n\ny = old_name\n")
    (project / "a.py").write_text("old_name()\n")


def test_text_output_is_sorted_with_fix_markers_and_a_summary(project: Path, lint: Lint) -> None:
    _two_files(project)

    outcome = lint("check")

    assert outcome.code == 1
    assert outcome.out == (
        f"a.py:1:1: LR001 [*] {MESSAGE}\n"
        f"b.py:1:5: LR001 [*] {MESSAGE}\n"
        f"b.py:4:5: LR001 [*] {MESSAGE}\n"
        "Found 3 errors.\n"
        "[*] 3 fixable with `lint-rules fix`.\n"
    )


def test_clean_project_exits_0(project: Path, lint: Lint) -> None:
    (project / "a.py").write_text("new_name()\n")

    outcome = lint("check")

    assert (outcome.code, outcome.out) == (0, "All checks passed!\n")


def test_exit_zero_keeps_the_report(project: Path, lint: Lint) -> None:
    _two_files(project)

    outcome = lint("check", "--exit-zero")

    assert outcome.code == 0
    assert "Found 3 errors" in outcome.out


def test_json_output_is_a_stable_list_of_objects(project: Path, lint: Lint) -> None:
    (project / "a.py").write_text("old_name()\n")

    outcome = lint("check", "--format", "json")

    assert json.loads(outcome.out) == [
        {
            "path": "a.py",
            "line": 1,
            "column": 1,
            "end_line": 1,
            "end_column": 9,
            "code": "LR001",
            "name": "stale-name",
            "severity": "error",
            "message": MESSAGE,
            "fix": {"safe": True, "edits": [{"start": 0, "end": 8, "content": "new_name"}]},
        }
    ]


def test_github_output_is_workflow_commands(project: Path, lint: Lint) -> None:
    (project / "a.py").write_text("old_name()\n")

    outcome = lint("check", "--format", "github")

    assert outcome.out == (
        f"::error file=a.py,line=1,col=1,endLine=1,endColumn=9,title=LR001::{MESSAGE}\n"
    )


def test_sarif_output_is_sarif_2_1_0(project: Path, lint: Lint) -> None:
    (project / "a.py").write_text("old_name()\n")

    document = json.loads(lint("check", "--format", "sarif").out)

    assert document["version"] == "2.1.0"
    run = document["runs"][0]
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    [result] = run["results"]
    assert rule_ids[result["ruleIndex"]] == result["ruleId"] == "LR001"
    assert result["message"]["text"] == MESSAGE
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "a.py"
    assert location["region"] == {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 9}


def test_statistics_count_findings_per_code(project: Path, lint: Lint) -> None:
    _two_files(project)

    outcome = lint("check", "--statistics")

    assert outcome.out.splitlines()[0].split() == ["3", "LR001", "[*]", "stale-name"]


def test_ignore_on_the_command_line_drops_the_rule(project: Path, lint: Lint) -> None:
    _two_files(project)

    assert lint("check", "--ignore", "LR001").code == 0
    assert lint("check", "--select", "LR001").code == 1


def test_unknown_selector_on_the_command_line_exits_2(project: Path, lint: Lint) -> None:
    outcome = lint("check", "--select", "LR7")

    assert outcome.code == 2
    assert "--select: unknown rule code or prefix 'LR7'" in outcome.err


SELECTORS_MATCHING_NO_RULE = [
    ("LR9", "'LR9' selects no rule, only the engine's LR999"),
    ("LR000", "'LR000' selects no rule, only the engine's LR000"),
    ("LR999", "'LR999' selects no rule, only the engine's LR999"),
    ("LR100", "unknown rule code or prefix 'LR100'"),  # the `protocols` command's code
    ("LR005", "unknown rule code or prefix 'LR005'"),
    ("LR0011", "unknown rule code or prefix 'LR0011'"),
    ("X", "unknown rule code or prefix 'X'"),
    ("lr9", "'lr9' selects no rule, only the engine's LR999"),
    ("", "empty rule code or prefix"),
    (",", "empty rule code or prefix"),
    (" ", "empty rule code or prefix"),
    ("LR001,", "empty rule code or prefix"),
    ("LR001,,LR002", "empty rule code or prefix"),
    ("LR001,LR9", "'LR9' selects no rule"),
]


@pytest.mark.parametrize("option", ["--select", "--ignore"])
@pytest.mark.parametrize(("selector", "message"), SELECTORS_MATCHING_NO_RULE)
def test_selector_matching_no_rule_exits_2_naming_it(
    project: Path, lint: Lint, option: str, selector: str, message: str
) -> None:
    _two_files(project)

    for command in ("check", "fix"):
        outcome = lint(command, option, selector)

        assert (outcome.code, outcome.out) == (2, "")
        assert outcome.err.startswith(f"lint-rules: error: {option}: ")
        assert message in outcome.err
    assert (project / "a.py").read_text() == "old_name()\n"


def test_selector_matching_no_rule_exits_2_in_a_real_process(project: Path) -> None:
    result = _cli("check", "--select", "LR9", cwd=project)

    assert (result.returncode, result.stdout) == (2, "")
    assert "--select: 'LR9' selects no rule" in result.stderr


def test_selectors_are_case_insensitive_and_trimmed(project: Path, lint: Lint) -> None:
    _two_files(project)

    assert lint("check", "--select", " lr001").out == lint("check", "--select", "LR001").out
    assert lint("check", "--select", "lr").code == 1
    assert lint("check", "--ignore", "lr00").code == 0


def test_missing_path_exits_2_naming_it(project: Path, lint: Lint) -> None:
    outcome = lint("check", "missing.py")

    assert outcome.code == 2
    assert "missing.py: no such file or directory" in outcome.err


def test_checking_named_paths_only(project: Path, lint: Lint) -> None:
    _two_files(project)

    outcome = lint("check", "a.py")

    assert "b.py" not in outcome.out
    assert "a.py:1:1" in outcome.out


def test_jobs_below_one_is_a_usage_error_naming_the_option(project: Path) -> None:
    for value, why in (("0", "must be at least 1, not 0"), ("two", "not a whole number: 'two'")):
        result = _cli("fix", "--jobs", value, cwd=project)

        assert result.returncode == 2
        assert result.stderr.startswith("usage: lint-rules fix ")
        assert f"lint-rules fix: error: argument --jobs: {why}\n" in result.stderr


def test_rules_lists_code_name_severity_fix_and_summary(lint: Lint) -> None:
    outcome = lint("rules")

    lines = outcome.out.splitlines()
    assert lines[0].split()[:4] == ["LR001", "stale-name", "error", "safe"]
    assert lines[3].split()[:4] == ["LR004", "typo", "warning", "safe"]


def test_rules_json_and_markdown(lint: Lint) -> None:
    listed = json.loads(lint("rules", "--format", "json").out)
    markdown = lint("rules", "--format", "markdown").out

    assert [entry["code"] for entry in listed] == [rule.CODE for rule in ALL_RULES]
    assert {entry["code"]: entry["severity"] for entry in listed} == {
        rule.CODE: rule.SEVERITY for rule in ALL_RULES
    }
    assert markdown == rules_markdown(ALL_RULES)
    assert "| LR004 | typo | warning | safe |" in markdown


def test_explain_prints_the_rule_documentation(lint: Lint) -> None:
    outcome = lint("explain", "LR001")

    assert outcome.out.startswith("# LR001 stale-name\n")
    assert "## Why is this bad?" in outcome.out
    assert "## Fix safety\nSafe:" in outcome.out


def test_explain_unknown_code_exits_2(lint: Lint) -> None:
    outcome = lint("explain", "LR404")

    assert outcome.code == 2
    assert "unknown rule code 'LR404'" in outcome.err


def test_stdin_is_checked_under_its_stdin_filename(project: Path) -> None:
    result = _cli("check", "-", "--stdin-filename", "pkg/mod.py", cwd=project, stdin="old_name\n")

    assert result.returncode == 1
    assert f"pkg/mod.py:1:1: LR001 [*] {MESSAGE}" in result.stdout


def test_fix_from_stdin_prints_the_fixed_code_byte_for_byte(project: Path) -> None:
    command = [sys.executable, "-m", "lint_rules", "fix", "-"]
    source = codecs.BOM_UTF8 + b"x = old_name\r\n"

    result = subprocess.run(command, cwd=project, input=source, capture_output=True, check=False)

    assert result.returncode == 0
    assert result.stdout == codecs.BOM_UTF8 + b"x = new_name\r\n"
    assert b"Fixed 1 finding, 0 remaining." in result.stderr


def test_console_script_runs_the_same_command_line(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    script = Path(sys.executable).with_name("lint-rules")

    result = subprocess.run([str(script), "check"], cwd=project, capture_output=True, text=True)

    assert result.returncode == 1
    assert f"a.py:1:1: LR001 [*] {MESSAGE}" in result.stdout


def test_worker_that_dies_is_an_internal_error_exit_2(project: Path, lint: Lint) -> None:
    for number in range(40):  # enough files for two worker processes
        (project / f"m{number:02}.py").write_text("die_here()\n")

    outcome = lint("check", "--no-cache", "--jobs", "2", rules=[*ALL_RULES, DyingRule])

    assert outcome.code == 2
    assert "lint-rules: internal error: BrokenProcessPool" in outcome.err


def test_usage_error_exits_2(project: Path) -> None:
    assert _cli("check", "--no-such-option", cwd=project).returncode == 2


def test_this_repository_passes_its_own_lint() -> None:
    result = _cli("check", "--no-cache", cwd=REPOSITORY)

    assert result.returncode == 0, result.stdout + result.stderr


def test_github_output_escapes_data_and_properties() -> None:
    finding = Finding("LR001", "50% done\nnext", 1, 2, 1, 3)

    line = render([Located("dir,x/a:b.py", finding)], "github", {"LR001": "stale-name"})

    assert line == (
        "::error file=dir%2Cx/a%3Ab.py,line=1,col=2,endLine=1,endColumn=3,"
        "title=LR001::50%25 done%0Anext\n"
    )


def test_this_repository_configures_its_legacy_rename() -> None:
    config = load_config(REPOSITORY, ALL_RULES)

    assert config.rule_options["renames"] == {"handoff_occured": "handoff_occurred"}


def test_phase_times_add_up_the_workers_phases(project: Path, tmp_path: Path) -> None:
    for index in range(20):
        (project / f"module_{index:02}.py").write_text("old_name()\n" * 50)
    times_file = tmp_path / "phases.json"
    options = ["--no-cache", "--select", "LR001", "--jobs", "2", "--phase-times", str(times_file)]

    done = subprocess.run(
        [sys.executable, "-m", "lint_rules", "check", *options],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 1, done.stderr
    assert done.stdout.count("LR001") == 1000
    times = json.loads(times_file.read_text())
    assert list(times) == ["discovery", "typos", "parse", "rules", "report"]
    assert times["typos"] == 0.0, "LR004 was not selected"
    assert all(times[phase] > 0 for phase in ("discovery", "parse", "rules", "report"))


# Imported by a one-file check before (issue 27 point 3) and needed by none of its
# steps when the cache answers: the distribution metadata is read for --version only,
# subprocess when typos or a reference engine actually runs.
NOT_ON_THE_CACHED_PATH = ("importlib.metadata", "subprocess")
ANSWERED_IMPORTS = {"__future__", "_blake2", "lint_rules", "lint_rules.quick"}
"""What a check its record answers imports beyond what ``python -m`` itself does."""


def _imported(command: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    lines = done.stderr.splitlines()
    return done, {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import ")}


def test_a_one_file_check_the_cache_answers_imports_no_heavy_module(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    (project / "b.py").write_text("x = 1\n")
    first = _cli("check", "a.py", "b.py", cwd=project)
    assert first.returncode == 1, first.stderr
    # Another argument list: no record answers it, the result cache does.
    command = [sys.executable, "-X", "importtime", "-m", "lint_rules", "check", "b.py", "a.py"]

    warm, imported = _imported(command, project)

    assert (warm.returncode, warm.stdout) == (first.returncode, first.stdout)
    assert "lint_rules.cli" in imported  # the profile was read: the run imported the CLI
    assert [name for name in NOT_ON_THE_CACHED_PATH if name in imported] == []


# Nor needed by a one-file check of an edited file (issue 27): a plain `check FILE...` is
# read without argparse, the table and what validating it read are remembered (tomllib),
# the cache writes through os (tempfile, shutil) and
# hashes with _blake2 (hashlib), and the rename planner, the reference engine, LR004's
# placer and fix's settling are imported for a file that needs them only.
NOT_FOR_AN_EDITED_FILE = (
    *NOT_ON_THE_CACHED_PATH[:1],
    "argparse",
    "tomllib",
    "hashlib",
    "tempfile",
    "shutil",
    "lint_rules.codemod.references",
    "lint_rules.codemod.rename",
    "lint_rules.codemod.misspellings",
    "lint_rules.engine.settle",
)


def test_a_one_file_check_of_an_edited_file_imports_what_it_needs_only(project: Path) -> None:
    (project / "a.py").write_text("x = 1\n")
    assert _cli("check", "a.py", cwd=project).returncode == 0
    (project / "a.py").write_text("x = 2\n")
    command = [sys.executable, "-X", "importtime", "-m", "lint_rules", "check", "a.py"]

    done, imported = _imported(command, project)

    assert (done.returncode, done.stdout) == (0, "All checks passed!\n"), done.stderr
    assert {"lint_rules.cli", "lint_rules.rules.typo", "subprocess"} <= imported
    assert [name for name in NOT_FOR_AN_EDITED_FILE if name in imported] == []


def test_a_recorded_check_imports_only_the_fast_path(project: Path) -> None:
    (project / "a.py").write_text("old_name()\n")
    first = _cli("check", "a.py", cwd=project)
    assert first.returncode == 1, first.stderr
    command = [sys.executable, "-X", "importtime", "-m", "lint_rules", "check", "a.py"]
    _, bare = _imported([sys.executable, "-X", "importtime", "-c", "import runpy"], project)

    answered, imported = _imported(command, project)

    assert (answered.returncode, answered.stdout) == (first.returncode, first.stdout)
    # Neither argparse nor tomllib, dataclasses, inspect, pathlib, json, hashlib, the rules
    # or the engine: the record is found, checked and replayed with os, sys and marshal.
    assert imported - bare == ANSWERED_IMPORTS


def test_version_is_printed_on_stdout_and_exits_0(project: Path) -> None:
    result = _cli("--version", cwd=project)

    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("lint-rules ")
    assert result.stdout.strip() != "lint-rules"


@pytest.mark.parametrize("columns", [None, "77"])
def test_the_help_is_argparses_own(monkeypatch: pytest.MonkeyPatch, columns: str | None) -> None:
    import argparse

    from lint_rules import arguments

    def helps() -> list[str]:
        parser = arguments.parser()
        (commands,) = [
            action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
        ]
        return [parser.format_help(), *(sub.format_help() for sub in commands.choices.values())]

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    ours = helps()
    monkeypatch.setattr(arguments, "Formatter", argparse.HelpFormatter)

    assert helps() == ours
    assert len(ours) == 7


@pytest.mark.parametrize(
    "given",
    [["check", "a.py"], ["check", "a.py", "b/c.pyi", ""], ["check", "dir", "a b.py"]],
)
def test_a_plain_check_is_read_as_argparse_reads_it(given: list[str]) -> None:
    from lint_rules.arguments import parse
    from lint_rules.cli import plain_check

    read = plain_check(given)

    assert read is not None
    assert vars(read) == vars(parse(given))


@pytest.mark.parametrize(
    "given", [["check"], ["check", "-"], ["check", "--no-cache", "a.py"], ["fix", "a.py"], []]
)
def test_anything_else_goes_to_argparse(given: list[str]) -> None:
    from lint_rules.cli import plain_check

    assert plain_check(given) is None
