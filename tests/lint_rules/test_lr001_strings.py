"""A bare rename never rewrites a string's contents as safe (issue 21, point 3): a wire-format
key, a field alias or an event name that happens to spell the old name is reported with an
unsafe fix; only the strings that are the name itself (``__all__`` entries, the attribute
argument of ``getattr`` and its kin) are renamed by ``fix``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.rules.stale_name import STRING_DATA

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

MODEL = """from pydantic import BaseModel, Field


class Result(BaseModel):
    isError: bool = Field(default=False, alias="isError")


def parse(payload):
    return Result.model_validate(payload).isError


WIRE = {"isError": True}
"""


@pytest.fixture
def wire_project(project: Path) -> Path:
    (project / "pyproject.toml").write_text('[tool.lint_rules.renames]\nisError = "is_error"\n')
    (project / "model.py").write_text(MODEL)
    return project


def test_a_wire_format_key_and_an_alias_are_not_rewritten_by_fix(
    wire_project: Path, lint: Lint
) -> None:
    outcome = lint("fix")

    fixed = (wire_project / "model.py").read_text()
    assert 'alias="isError"' in fixed
    assert '{"isError": True}' in fixed
    assert "    is_error: bool = Field(" in fixed
    assert ").is_error\n" in fixed
    assert outcome.code == 1
    assert f"`isError` was renamed to `is_error`; unsafe fix: {STRING_DATA}" in outcome.out
    assert outcome.out.endswith(
        "Fixed 2 findings, 2 errors remaining.\n"
        "2 unsafe fixes available with `lint-rules fix --unsafe-fixes`.\n"
    )


def test_the_strings_are_rewritten_only_with_unsafe_fixes(wire_project: Path, lint: Lint) -> None:
    outcome = lint("fix", "--unsafe-fixes")

    assert outcome.code == 0
    assert "isError" not in (wire_project / "model.py").read_text()


def test_check_marks_the_string_findings_as_not_safely_fixable(
    wire_project: Path, lint: Lint
) -> None:
    outcome = lint("check", "--format", "json", "--no-cache")

    findings = json.loads(outcome.out)
    safety = {(f["line"], f["column"]): f["fix"]["safe"] for f in findings}
    lines = MODEL.splitlines()
    alias = lines[4].index('"isError"') + 1
    assert safety == {
        (5, 5): True,  # the field
        (5, alias): False,  # its alias: the wire format
        (9, lines[8].index("isError") + 1): True,  # the attribute read
        (12, 9): False,  # a payload key
    }


@pytest.mark.parametrize(
    "source",
    [
        '__all__ = ["old_name", "other"]\n\n\ndef old_name():\n    pass\n\n\nother = 1\n',
        '__all__ = ["other"] + ["old_name"]\n\n\ndef old_name():\n    pass\n\n\nother = 1\n',
        "def old_name():\n    pass\n\n\n__all__ = []\n__all__.append('old_name')\n",
        "def read(box):\n    return getattr(box, 'old_name', None)\n",
        "def clear(box):\n    if hasattr(box, 'old_name'):\n        delattr(box, 'old_name')\n",
    ],
    ids=["all", "all-sum", "all-append", "getattr", "hasattr-delattr"],
)
def test_strings_that_are_the_name_are_renamed_safely(
    project: Path, lint: Lint, source: str
) -> None:
    path = project / "m.py"
    path.write_text(source)

    outcome = lint("fix")

    assert outcome.code == 0
    assert path.read_text() == source.replace("old_name", "new_name")


def test_star_import_still_works_after_a_bare_rename_of_a_name_in_dunder_all(
    project: Path, lint: Lint
) -> None:
    source = '__all__ = ["old_name"]\n\n\ndef old_name():\n    return 1\n'
    (project / "version.py").write_text(source)
    (project / "use.py").write_text("from version import *\n\nprint(new_name())\n")

    assert lint("fix").code == 0

    ran = subprocess.run(
        [sys.executable, "use.py"], cwd=project, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "1\n"
