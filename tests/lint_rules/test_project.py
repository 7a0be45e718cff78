"""The ``Project`` of a run: what one run reads of a project, no other run sees.

A long-lived process (a language server, the test suite, an editor integration)
runs many times: on several projects, and on one project whose files change in
between. Each run must see the files as they are, as a fresh process would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lint_rules.analysis.project import Project
from lint_rules.config import load_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import open_project, run
from lint_rules.rule import ConfigError, FileContext
from lint_rules.rules import ALL_RULES

MISSPELT = "tool_cal" + "ed"  # built from parts: this repository's typos run checks this file
LITERALS = (
    '[tool.lint_rules]\nselect = ["LR002"]\n\n'
    '[tool.lint_rules.literals]\n"Event.name" = "events:Name"\n'
)
USE = (
    "from events import Event\n\n\n"
    "def show(event: Event) -> bool:\n"
    f'    return event.name == "{MISSPELT}"\n'
)


def _declaring(root: Path, values: str, where: str = "events.py") -> Path:
    """A project whose ``Event.name`` allows ``values``, declared in ``where``."""
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(LITERALS)
    (root / where).parent.mkdir(exist_ok=True)
    (root / where).write_text(
        f"from typing import Literal\n\nName = Literal[{values}]\n\n\n"
        "class Event:\n    name: Name\n"
    )
    (root / "use.py").write_text(USE)
    return root


def _codes(root: Path) -> list[str]:
    config = load_config(root, ALL_RULES)
    result = run([root], config, config.selected(ALL_RULES), RunOptions(use_cache=False))
    return [f"{r.path.name}:{f.line}:{f.code}" for r in result.files for f in r.findings]


def test_two_runs_on_two_projects_in_one_process_see_nothing_of_each_other(
    tmp_path: Path,
) -> None:
    one = _declaring(tmp_path / "one", '"tool_called", "tool_output"')
    two = _declaring(tmp_path / "two", f'"{MISSPELT}"')

    first = _codes(one)
    other = _codes(two)
    again = _codes(one)

    assert first == again == ["use.py:5:LR002"]
    assert other == []


def test_a_run_sees_a_declaring_module_that_moved_since_the_last_run(tmp_path: Path) -> None:
    root = _declaring(tmp_path / "project", '"tool_called"')
    assert _codes(root) == ["use.py:5:LR002"]

    (root / "events.py").unlink()  # moved to a src layout, with the value allowed now
    _declaring(root, f'"tool_called", "{MISSPELT}"', where="src/events.py")

    assert _codes(root) == []


def test_a_run_sees_definitions_added_to_the_project_since_the_last_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[tool.lint_rules]\nselect = ["LR001"]\n\n'
        '[tool.lint_rules.renames]\nold_name = "new_name"\n'
    )
    (root / "use.py").write_text("import optparse\n\noptparse.old_name()\n")
    monkeypatch.chdir(root)
    # A library's renamed function: its attribute on the library module is what moved.
    assert _codes(root) == ["use.py:3:LR001"]

    (root / "lib.py").write_text("def old_name():\n    pass\n")

    # Now the project defines `old_name` itself: `optparse.old_name` is another's.
    assert _codes(root) == ["lib.py:1:LR001"]


def test_each_project_indexes_its_own_files(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / f"{name}_module.py").write_text(f"def defined_in_{name}():\n    pass\n")

    one, two = open_project(tmp_path / "one"), open_project(tmp_path / "two")

    assert one.index.definitions == {"defined_in_one"}
    assert two.index.definitions == {"defined_in_two"}
    assert one.index.packages == {"one_module"}


def test_a_file_checked_outside_a_project_reads_no_project() -> None:
    context = FileContext(Path("sample.py"), "x = 1\n")

    assert context.root is None
    assert context.project.index.files == ()
    assert context.project.files() == ()


def test_declarations_are_read_from_the_project_root_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _declaring(tmp_path / "project", '"tool_called"')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    assert Project(root).declarations.read_module("events").path == root / "events.py"
    with pytest.raises(ConfigError, match="module 'events' not found"):
        Project(None).declarations.read_module("events")
