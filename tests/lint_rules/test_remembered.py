"""What validating a configuration read, kept from one ``check`` to the next
(``lint_rules/analysis/remembered.py``), and the ``[tool.lint_rules]`` table kept by the
pyproject.toml's content (``config.read_table``): a later run reads neither the
declarations nor the TOML while they hold, and anything that changes them is read again."""

from __future__ import annotations

import marshal
import subprocess
import sys
from pathlib import Path

import pytest

from lint_rules import quick
from lint_rules.analysis.declarations import Declarations
from lint_rules.analysis.literals import Field
from lint_rules.analysis.project import Project
from lint_rules.analysis.remembered import DIRECTORY, Remembered
from lint_rules.config import Configurations, read_table
from lint_rules.rules import ALL_RULES

PYPROJECT = '[tool.lint_rules.literals]\n"Event.name" = "pkg.events:EventName"\n'
EVENTS = (
    "from typing import Literal\n\n"
    'EventName = Literal["tool_called", "tool_output"]\n\n\n'
    "class Event:\n    name: EventName\n"
)
PYPROJECT_TABLE = {"literals": {"Event.name": "pkg.events:EventName"}}
HANDLER = (
    "from pkg.events import Event\n\n\n"
    "def on(event: Event) -> None:\n"
    '    if event.name == "tool_call":\n'
    "        pass\n"
)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose LR002 reads ``pkg/events.py``; ``pkg/other.py`` is only searched
    for the class's name (it does not name it)."""
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "events.py").write_text(EVENTS)
    (root / "pkg" / "other.py").write_text("x = 1\n")
    (root / "handler.py").write_text(HANDLER)
    monkeypatch.chdir(root)
    return root


def _validated(root: Path) -> Project:
    """The ``Project`` a check's validation of ``root``'s configuration ends with."""
    config = Configurations(ALL_RULES, cwd=root, remember=True).default
    project = config.validated.take()
    assert project is not None
    return project


def _check(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lint_rules", "check", *arguments],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )


def _holds(root: Path) -> bool:
    """Whether the next validation starts from what the last one stored."""
    return Remembered(PYPROJECT_TABLE, root, ALL_RULES).loaded


def test_a_second_validation_reads_no_declaration(root: Path) -> None:
    assert not _holds(root)
    first = _validated(root)
    assert _holds(root)
    second = _validated(root)

    assert str(root / "pkg" / "events.py") in first.declarations.read
    assert second.shared_state() == first.shared_state()
    # What the run's record and result cache hold for: the same inputs as a fresh read.
    assert second.declarations.consulted == first.declarations.consulted


def test_an_edit_to_a_declaring_module_is_read_by_the_next_check(root: Path) -> None:
    assert "LR002" in _check(root, "handler.py").stdout
    events = root / "pkg" / "events.py"
    events.write_text(EVENTS.replace('"tool_output"]', '"tool_output", "tool_call"]'))

    after = _check(root, "handler.py")

    assert (after.returncode, after.stdout) == (0, "All checks passed!\n")
    (field,) = _fields(_validated(root))
    assert "tool_call" in field.values


def _fields(project: Project) -> list[Field]:
    """LR002's fields in the project's shared state."""
    return [
        field
        for key, value in project.shared_state().items()
        if isinstance(key, tuple) and key[0] == "LR002" and isinstance(value, list)
        for field in value
    ]


def test_an_edit_elsewhere_in_a_searched_file_keeps_what_was_read(root: Path) -> None:
    _validated(root)
    (root / "pkg" / "other.py").write_text("x = 2  # a longer line, no class named\n")

    refreshed = Remembered(PYPROJECT_TABLE, root, ALL_RULES)
    assert (refreshed.loaded, refreshed.refreshed) == (True, True)
    _validated(root)
    again = Remembered(PYPROJECT_TABLE, root, ALL_RULES)

    assert (again.loaded, again.refreshed) == (True, False)  # stored with the new stamp


def test_a_searched_file_that_now_names_the_class_is_read(root: Path) -> None:
    _validated(root)
    other = root / "pkg" / "other.py"
    other.write_text("from pkg.events import Event\n\nStreamEvent = Event | int\n")

    assert not _holds(root)
    project = _validated(root)

    assert str(other) in project.declarations.read
    (field,) = _fields(project)
    assert field.unions == frozenset({"StreamEvent"})


def test_scanned_says_for_each_file_searched_each_name_asked_and_whether_it_has_it(
    tmp_path: Path,
) -> None:
    """What a record holds a searched file by: built when asked for, from the names each
    directory was searched for, with what a remembered run restored."""
    (tmp_path / "a.py").write_text("class Event:\n    pass\n")
    (tmp_path / "b.py").write_text("x = 1\n")
    declarations = Declarations(tmp_path)

    assert declarations.files_naming(tmp_path, "Event") == [tmp_path / "a.py"]
    assert declarations.files_naming(tmp_path, "x") == [tmp_path / "b.py"]
    declarations.restore_scanned(str(tmp_path / "c.py"), {"Other": False})

    assert declarations.scanned == {
        str(tmp_path / "c.py"): {"Other": False},
        str(tmp_path / "a.py"): {"Event": True, "x": False},
        str(tmp_path / "b.py"): {"Event": False, "x": True},
    }


def test_a_store_of_another_shape_is_ignored(root: Path) -> None:
    first = _validated(root)
    (store,) = (root / quick.CACHE_DIRECTORY / DIRECTORY).glob("[0-9a-f]*.marshal")
    record = marshal.loads(store.read_bytes())
    # A dataclass of another package (what unpickling would build and run) is refused.
    forged = ("M", ((("T", ("LR002",)), ("D", "subprocess:CompletedProcess", ())),))
    store.write_bytes(marshal.dumps((*record[:2], forged, *record[3:])))

    assert not _holds(root)
    again = _validated(root)

    assert again.shared_state() == first.shared_state()
    store.write_bytes(b"not marshal")
    assert not _holds(root)
    assert _validated(root).shared_state() == first.shared_state()


def test_a_check_without_the_cache_keeps_nothing(root: Path) -> None:
    done = _check(root, "--no-cache", "handler.py")

    assert done.returncode == 1, done.stderr
    assert not (root / quick.CACHE_DIRECTORY).exists()


def test_the_table_follows_the_pyproject_content(root: Path) -> None:
    pyproject = root / "pyproject.toml"
    assert read_table(pyproject, remember=True) == PYPROJECT_TABLE
    stored = list((root / quick.CACHE_DIRECTORY / DIRECTORY).glob("table-*.marshal"))
    assert len(stored) == 1

    assert read_table(pyproject, remember=True) == PYPROJECT_TABLE
    pyproject.write_text(PYPROJECT + '\n[tool.lint_rules.renames]\nold = "new"\n')
    assert read_table(pyproject, remember=True) == {
        **PYPROJECT_TABLE,
        "renames": {"old": "new"},
    }


def test_a_toml_date_is_read_from_the_file_each_time(root: Path) -> None:
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[tool.lint_rules]\nselect = ["LR"]\n[tool.other]\nwhen = 1979-05-27\n')

    assert read_table(pyproject, remember=True) == {"select": ["LR"]}


def test_an_edited_file_is_checked_without_reading_the_toml_again(root: Path) -> None:
    """The run pre-commit makes after an edit: the record cannot answer, the remembered
    table and validation do (tomllib is not imported)."""
    assert _check(root, "handler.py").returncode == 1
    (root / "handler.py").write_text(HANDLER.replace("tool_call", "tool_calls"))
    command = [sys.executable, "-X", "importtime", "-m", "lint_rules", "check", "handler.py"]

    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)

    lines = done.stderr.splitlines()
    imported = {line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import ")}
    assert "lint_rules.cli" in imported
    assert "tomllib" not in imported
    assert "'tool_calls' is not a value of `Event.name`" in done.stdout


def test_only_this_packages_rules_are_remembered(root: Path) -> None:
    from lint_rules.rule import Rule

    class Local(Rule):
        CODE, NAME, MESSAGE = "LR900", "local", "local"

    Remembered(PYPROJECT_TABLE, root, [*ALL_RULES, Local]).save()

    assert not list((root / quick.CACHE_DIRECTORY / DIRECTORY).glob("[0-9a-f]*.marshal"))
