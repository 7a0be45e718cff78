"""Fixtures for the lint_rules tests: a throw-away project and an in-process CLI."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.cli import main
from lint_rules.rule import Rule
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint, Outcome
else:
    from rule_fixtures import Lint, Outcome

PYPROJECT = '[tool.lint_rules.renames]\nold_name = "new_name"\n'


@pytest.fixture(autouse=True)
def _quiet_protocols_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """``protocols`` says on stderr that mypy is still checking after a few seconds, which
    a loaded machine reaches: tests that read stderr see it only when they ask for it."""
    monkeypatch.setattr("lint_rules.protocols.PROGRESS_AFTER", 3600.0)


@pytest.fixture(scope="session", autouse=True)
def _no_mypy_daemon_outlives_the_tests(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """Stop the mypy daemons that ``protocols`` runs started in the tests' projects (those
    tests that start one on purpose stop it themselves)."""
    yield
    from lint_rules.mypy_daemon import stop

    for status_file in tmp_path_factory.getbasetemp().glob("**/protocols/dmypy-*.json"):
        stop(status_file)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory (the working directory) whose pyproject renames old_name."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def lint(capsys: pytest.CaptureFixture[str]) -> Lint:
    """Run ``lint-rules`` in-process with the given arguments (and rules)."""

    def run(*arguments: str, rules: Sequence[type[Rule]] = ALL_RULES) -> Outcome:
        code = main(list(arguments), rules)
        captured = capsys.readouterr()
        return Outcome(code, captured.out, captured.err)

    return run
