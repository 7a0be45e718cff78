"""LR002's cost (issue 22 point 4): what a run reads, once, whatever the configuration."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis import declarations
from lint_rules.config import load_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import run
from lint_rules.rules.unknown_literal import UnknownLiteralRule

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

EVENTS = (
    "from dataclasses import dataclass\n"
    "from typing import Literal\n\n"
    "@dataclass\n"
    "class Event:\n"
    '    kind: Literal["alpha", "omega"]\n'
)
USE = "def on(event: Event) -> None:\n    if event.kind == 'omegaa':\n        pass\n"


def _configure(project: Path, *entries: str) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules]\nselect = ["LR002"]\n\n[tool.lint_rules.literals]\n' + "\n".join(entries)
    )


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each module source is parsed to read declarations (by file name)."""
    counts: Counter[str] = Counter()
    parse = declarations._parse

    def counting(text: str, path: Path) -> ast.Module:
        counts[path.name] += 1
        return parse(text, path)

    monkeypatch.setattr(declarations, "_parse", counting)
    return counts


def test_the_declarations_validated_are_not_read_again_by_the_run(
    project: Path, lint: Lint, parsed: Counter[str]
) -> None:
    (project / "events.py").write_text(EVENTS)
    (project / "use.py").write_text(USE)
    _configure(project, '"Event.kind" = "events:Event.kind"')

    outcome = lint("check", "--no-cache", "--jobs", "1")

    assert "'omegaa' is not a value of `Event.kind`; did you mean 'omega'?" in outcome.out
    # read to validate the configuration, and the run starts from what that read
    assert parsed["events.py"] == 1


def test_a_declaration_changed_after_the_configuration_was_read_is_read_again(
    project: Path, parsed: Counter[str]
) -> None:
    (project / "events.py").write_text(EVENTS)
    (project / "use.py").write_text(USE)
    _configure(project, '"Event.kind" = "events:Event.kind"')
    config = load_config(project, [UnknownLiteralRule])
    # 'omegaa' becomes a value: the validated fields no longer hold
    (project / "events.py").write_text(EVENTS.replace('"omega"]', '"omega", "omegaa"]'))

    result = run([project / "use.py"], config, [UnknownLiteralRule], RunOptions(use_cache=False))

    assert [finding.message for finding in result.files[0].findings] == []
    assert parsed["events.py"] == 2
