"""``[tool.lint_rules]``: strict keys owned by the engine or a rule; errors name the key."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import BannedNameRule, Lint
else:
    from rule_fixtures import BannedNameRule, Lint


def _configure(project: Path, table: str) -> None:
    (project / "pyproject.toml").write_text(table)
    (project / "m.py").write_text("x = old_name\n")


def test_unknown_key_exits_2_naming_it(project: Path, lint: Lint) -> None:
    _configure(project, "[tool.lint_rules]\nselekt = ['LR']\n")

    outcome = lint("check")

    assert outcome.code == 2
    assert "unknown key 'selekt'" in outcome.err
    assert "pyproject.toml [tool.lint_rules]" in outcome.err


def test_key_owned_by_an_unregistered_rule_is_unknown(project: Path, lint: Lint) -> None:
    _configure(project, "[tool.lint_rules]\nbanned = ['eval']\n")

    assert "unknown key 'banned'" in lint("check").err
    assert lint("check", rules=[*ALL_RULES, BannedNameRule]).code == 0


def test_malformed_toml_exits_2_naming_the_file(project: Path, lint: Lint) -> None:
    _configure(project, "[tool.lint_rules\nselect = \n")

    outcome = lint("check")

    assert outcome.code == 2
    assert "pyproject.toml: cannot read:" in outcome.err


def test_unknown_code_in_select_exits_2_naming_it(project: Path, lint: Lint) -> None:
    _configure(project, "[tool.lint_rules]\nselect = ['LR001', 'XY9']\n")

    outcome = lint("check")

    assert outcome.code == 2
    assert "'select': unknown rule code or prefix 'XY9'" in outcome.err


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("select = ['LR9']", "'select': 'LR9' selects no rule, only the engine's LR999"),
        ("select = ['LR000']", "'select': 'LR000' selects no rule"),
        ("select = ['']", "'select': empty rule code or prefix"),
        ("select = ['LR100']", "'select': unknown rule code or prefix 'LR100'"),
        ("ignore = ['LR999']", "'ignore': 'LR999' selects no rule"),
        ("ignore = ['LR005']", "'ignore': unknown rule code or prefix 'LR005'"),
        ("ignore = [' ']", "'ignore': empty rule code or prefix"),
        (
            "per-file-ignores = { 'tests/**' = ['LR9'] }",
            "'per-file-ignores' 'tests/**': 'LR9' selects no rule",
        ),
        (
            "per-file-ignores = { 'tests/**' = ['LR1'] }",
            "'per-file-ignores' 'tests/**': unknown rule code or prefix 'LR1'",
        ),
        ("per-file-ignores = { 'a.py' = [''] }", "'per-file-ignores' 'a.py': empty rule code"),
    ],
)
def test_selector_in_config_matching_no_rule_exits_2_naming_it(
    project: Path, lint: Lint, table: str, message: str
) -> None:
    _configure(project, f"[tool.lint_rules]\n{table}\n")

    outcome = lint("check")

    assert (outcome.code, outcome.out) == (2, "")
    assert message in outcome.err
    assert "pyproject.toml [tool.lint_rules]" in outcome.err


def test_selectors_in_config_are_case_insensitive(project: Path, lint: Lint) -> None:
    renames = "[tool.lint_rules.renames]\nold_name = 'new_name'\n"
    _configure(project, f"[tool.lint_rules]\nselect = ['lr001']\n{renames}")
    assert lint("check", "--no-cache").code == 1
    _configure(project, f"[tool.lint_rules]\nignore = ['lr0']\n{renames}")
    assert lint("check", "--no-cache").code == 0


def test_wrong_type_exits_2_naming_the_key(project: Path, lint: Lint) -> None:
    _configure(project, "[tool.lint_rules]\nexclude = 'docs'\n")

    assert "'exclude' must be a list of strings" in lint("check").err


def test_rule_validates_its_own_options(project: Path, lint: Lint) -> None:
    _configure(project, "[tool.lint_rules.renames]\nold_name = 'not an identifier'\n")

    outcome = lint("check")

    assert outcome.code == 2
    assert "'renames' 'old_name': 'not an identifier' is not a Python identifier" in outcome.err


def test_ignore_in_config_turns_a_rule_off(project: Path, lint: Lint) -> None:
    _configure(
        project,
        "[tool.lint_rules]\nignore = ['LR001']\n[tool.lint_rules.renames]\nold_name = 'n'\n",
    )

    assert lint("check", "--no-cache").code == 0


def test_per_file_ignores_apply_to_matching_paths(project: Path, lint: Lint) -> None:
    _configure(
        project,
        "[tool.lint_rules]\nper-file-ignores = { 'tests/**' = ['LR001'] }\n"
        "[tool.lint_rules.renames]\nold_name = 'new_name'\n",
    )
    (project / "tests").mkdir()
    (project / "tests" / "t.py").write_text("old_name()\n")

    outcome = lint("check", "--no-cache")

    assert "m.py:1:5: LR001" in outcome.out
    assert "tests/t.py" not in outcome.out


def test_config_is_found_from_a_subdirectory_and_the_root_is_checked(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    _configure(project, "[tool.lint_rules.renames]\nold_name = 'new_name'\n")
    (project / "sub").mkdir()
    monkeypatch.chdir(project / "sub")

    outcome = lint("check", "--no-cache")

    assert f"{project / 'm.py'}:1:5: LR001" in outcome.out
