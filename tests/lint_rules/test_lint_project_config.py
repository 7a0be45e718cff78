"""Configuration and discovery like ruff: the pyproject.toml nearest to each file governs it.

The command line runs in subprocesses (or in-process through ``main``) on throw-away
projects, from the project root, from inside it and from outside it, and on two projects
at once; the findings must not depend on the working directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.config import Configurations, load_config
from lint_rules.rule import Rule, RuleOptions
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

Finding = tuple[str, int, int, str]
"""A finding as (absolute path, line, column, code)."""

PROJECT_PYPROJECT = """
[tool.lint_rules]
exclude = ["generated/**"]
per-file-ignores = { "tests/**" = ["LR001"] }

[tool.lint_rules.renames]
old_name = "new_name"

[tool.lint_rules.literals]
"Event.name" = "events:Event.name"

[tool.lint_rules.protocols]
"shapes:Shape" = ["impl/*.py"]
"""

EVENTS = """
from dataclasses import dataclass
from typing import Literal


@dataclass
class Event:
    name: Literal[{values}]
"""

SHAPES = """
from typing import Protocol


class Shape(Protocol):
{members}
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


def _cli(
    *arguments: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lint_rules", *arguments],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def _json_findings(result: subprocess.CompletedProcess[str], cwd: Path) -> set[Finding]:
    assert result.returncode in (0, 1), result.stderr
    return {
        (str((cwd / item["path"]).resolve()), item["line"], item["column"], item["code"])
        for item in json.loads(result.stdout)
    }


def _src_layout_project(root: Path) -> None:
    """A src-layout project whose declaring modules (``events``, ``shapes``) are not
    installed; every configured value is relative to ``root``."""
    _write(root / "pyproject.toml", PROJECT_PYPROJECT)
    _write(root / "src/events.py", EVENTS.format(values='"started", "stopped"'))
    members = "    def area(self) -> float: ...\n    def perimeter(self) -> float: ...\n"
    _write(root / "src/shapes.py", SHAPES.format(members=members))
    _write(root / "src/app.py", 'from events import Event\n\nold_name()\nEvent(name="paused")\n')
    _write(root / "tests/test_app.py", 'from events import Event\n\nold_name()\nEvent(name="x")\n')
    _write(root / "generated/gen.py", "old_name()\n")
    _write(
        root / "impl/square.py",
        """
        import shapes


        class Square(shapes.Shape):
            def area(self) -> float:
                return 1.0
        """,
    )


def _installed_modules(site: Path) -> dict[str, str]:
    """Modules of the same names on ``PYTHONPATH`` that allow every value used and
    declare a smaller protocol: read instead of the project's, they hide every
    LR002 and LR003 finding."""
    _write(site / "events.py", EVENTS.format(values='"paused", "x"'))
    _write(site / "shapes.py", SHAPES.format(members="    def area(self) -> float: ..."))
    return {"PYTHONPATH": os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(site)]))}


def _expected(root: Path) -> set[Finding]:
    return {
        (str(root / "src/app.py"), 3, 1, "LR001"),
        (str(root / "src/app.py"), 4, 12, "LR002"),
        (str(root / "tests/test_app.py"), 4, 12, "LR002"),
        (str(root / "impl/square.py"), 4, 1, "LR003"),
    }


CHECK = ("check", "--select", "LR001,LR002,LR003", "--format", "json")


def test_findings_do_not_depend_on_the_working_directory(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _src_layout_project(root)
    env = _installed_modules(tmp_path / "site")
    (tmp_path / "elsewhere").mkdir()

    runs = {
        "root": (root, ()),
        "tests/": (root / "tests", ()),
        "src/": (root / "src", ()),
        "outside": (tmp_path / "elsewhere", (str(root),)),
        "outside, relative": (tmp_path / "elsewhere", ("../project",)),
    }
    found = {
        name: _json_findings(_cli(*CHECK, "--no-cache", *paths, cwd=cwd, env=env), cwd)
        for name, (cwd, paths) in runs.items()
    }

    for name, findings in found.items():
        assert findings == _expected(root), name


def test_cached_run_from_outside_matches_the_run_from_the_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _src_layout_project(root)
    env = _installed_modules(tmp_path / "site")

    cold = _json_findings(_cli(*CHECK, cwd=root, env=env), root)
    warm = _json_findings(_cli(*CHECK, str(root), cwd=tmp_path, env=env), tmp_path)

    assert cold == warm == _expected(root)
    assert [path.name for path in (root / ".lint_rules_cache").glob("*.json")], "no cache"
    assert not (tmp_path / ".lint_rules_cache").exists()


@pytest.mark.parametrize("layout", ["flat", "src"])
@pytest.mark.parametrize("where", ["outside", "tests/"])
def test_declaring_module_of_the_project_shadows_an_installed_one(
    tmp_path: Path, layout: str, where: str
) -> None:
    root = tmp_path / "project"
    package = root / "src" if layout == "src" else root
    _write(
        root / "pyproject.toml", '[tool.lint_rules.literals]\n"Event.name" = "events:Event.name"\n'
    )
    _write(package / "events.py", EVENTS.format(values='"started"'))
    _write(root / "tests/use.py", 'from events import Event\n\nEvent(name="paused")\n')
    env = _installed_modules(tmp_path / "site")  # its `events` allows "paused"
    cwd = root / "tests" if where == "tests/" else tmp_path

    result = _cli(*CHECK, "--no-cache", str(root), cwd=cwd, env=env)

    assert _json_findings(result, cwd) == {(str(root / "tests/use.py"), 3, 12, "LR002")}
    assert "started" in json.loads(result.stdout)[0]["message"]


def test_protocols_command_reads_the_protocol_from_the_project_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _src_layout_project(root)
    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write('\n[tool.mypy]\nmypy_path = "src"\n')  # for mypy's own lookup
    _write(
        root / "impl/circle.py",
        """
        class Circle:  # not a Shape for mypy: `area` returns a str
            def area(self) -> str:
                return "1"

            def perimeter(self) -> float:
                return 1.0
        """,
    )

    result = _cli("protocols", "--format", "json", cwd=root / "tests")

    assert result.returncode == 1, result.stderr
    assert [item["path"] for item in json.loads(result.stdout)] == [str(root / "impl/circle.py")]


def _renaming_project(root: Path, new: str, table: str = "") -> None:
    _write(
        root / "pyproject.toml",
        f'[tool.lint_rules]\n{table}\n[tool.lint_rules.renames]\nold_name = "{new}"\n',
    )
    for name in ("m.py", "skip/s.py", "t/x.py"):
        _write(root / name, "old_name()\n")


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if " LR001 " in line]


def test_two_projects_in_one_run_are_each_checked_with_their_own_config(
    tmp_path: Path,
) -> None:
    _renaming_project(
        tmp_path / "a", "new_a", "exclude = ['skip/']\nper-file-ignores = { 't/**' = ['LR001'] }"
    )
    _renaming_project(tmp_path / "b", "new_b")

    first = _cli("check", "b", "a", cwd=tmp_path)
    second = _cli("check", "a", "b", cwd=tmp_path)  # warm, the other order

    expected = [
        "a/m.py:1:1: LR001 [*] `old_name` was renamed to `new_a`",
        "b/m.py:1:1: LR001 [*] `old_name` was renamed to `new_b`",
        "b/skip/s.py:1:1: LR001 [*] `old_name` was renamed to `new_b`",
        "b/t/x.py:1:1: LR001 [*] `old_name` was renamed to `new_b`",
    ]
    assert first.returncode == 1, first.stderr
    assert _lines(first.stdout) == expected
    assert second.stdout == first.stdout
    for project in ("a", "b"):  # each project's cache under its own root
        assert list((tmp_path / project / ".lint_rules_cache").glob("*.json"))
    assert not (tmp_path / ".lint_rules_cache").exists()


def test_fix_in_two_projects_applies_each_projects_renames(tmp_path: Path) -> None:
    _renaming_project(tmp_path / "a", "new_a")
    _renaming_project(tmp_path / "b", "new_b")

    result = _cli("fix", "a", "b", cwd=tmp_path)

    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "a/m.py").read_text() == "new_a()\n"
    assert (tmp_path / "b/t/x.py").read_text() == "new_b()\n"


class _CountingRule(Rule):
    """Counts how often it is built."""

    CODE = "LR001"
    NAME = "counting"
    MESSAGE = "never reported"
    built = 0

    def __init__(self, options: RuleOptions) -> None:
        super().__init__(options)
        type(self).built += 1


def test_rules_are_built_once_per_configuration_not_per_file(
    tmp_path: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    for project in ("a", "b"):
        _write(tmp_path / project / "pyproject.toml", "[tool.lint_rules]\n")
        for index in range(12):
            _write(tmp_path / project / f"m{index}.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    _CountingRule.built = 0

    outcome = lint("check", "--jobs", "1", "a", "b", rules=[_CountingRule])

    assert outcome.code == 0, outcome.err
    # Per configuration: once to validate it, once for the run (cache key and checks).
    assert _CountingRule.built == 4


def test_nearest_pyproject_with_a_table_governs_and_others_are_skipped(
    tmp_path: Path,
) -> None:
    outer = tmp_path / "outer"
    _renaming_project(outer, "new_outer")
    _renaming_project(outer / "inner", "new_inner")  # its own table: its own config
    _write(outer / "plain/pyproject.toml", "[project]\nname = 'plain'\n")  # no table
    _write(outer / "plain/m.py", "old_name()\n")

    result = _cli("check", "--no-cache", str(outer), cwd=tmp_path)
    renamed = {line.split(":")[0]: line.rsplit("`", 2)[1] for line in _lines(result.stdout)}
    assert renamed == {
        "outer/m.py": "new_outer",
        "outer/skip/s.py": "new_outer",
        "outer/t/x.py": "new_outer",
        "outer/inner/m.py": "new_inner",
        "outer/inner/skip/s.py": "new_inner",
        "outer/inner/t/x.py": "new_inner",
        "outer/plain/m.py": "new_outer",
    }


def test_exclude_of_a_nested_project_is_relative_to_its_root(tmp_path: Path) -> None:
    outer = tmp_path / "outer"
    _renaming_project(outer, "new_outer", "exclude = ['vendor/']")
    _renaming_project(outer / "inner", "new_inner", "exclude = ['skip/']")
    _write(outer / "vendor/v.py", "old_name()\n")

    result = _cli("check", "--no-cache", cwd=outer)

    shown = [line.split(":")[0] for line in _lines(result.stdout)]
    assert shown == ["inner/m.py", "inner/t/x.py", "m.py", "skip/s.py", "t/x.py"]


def test_project_without_a_table_is_rooted_at_its_own_pyproject(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _write(root / "pyproject.toml", "[project]\nname = 'p'\n")
    _write(root / "sub/m.py", "x = 1\n")

    config = Configurations(ALL_RULES, cwd=tmp_path).for_path(root / "sub/m.py")

    assert config.root == root
    assert config.select == ("LR",)
    assert load_config(root / "sub", ALL_RULES).root == root


def test_file_under_no_project_gets_the_config_of_the_working_directory(
    project: Path, tmp_path: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    loose = tmp_path / "loose" / "script.py"
    _write(loose, "old_name()\n")

    assert _lines(lint("check", "--no-cache", str(loose)).out) == [
        f"{loose}:1:1: LR001 [*] `old_name` was renamed to `new_name`"
    ]
    monkeypatch.chdir(loose.parent)  # no pyproject.toml here or above: the defaults
    assert lint("check", "--no-cache", str(loose)).code == 0


def test_stdin_filename_in_another_project_uses_that_projects_config(tmp_path: Path) -> None:
    _renaming_project(tmp_path / "a", "new_a")
    _renaming_project(tmp_path / "b", "new_b")

    result = _cli(
        "check", "-", "--stdin-filename", "../b/new.py", cwd=tmp_path / "a", stdin="old_name\n"
    )

    assert _lines(result.stdout) == [
        f"{tmp_path / 'b/new.py'}:1:1: LR001 [*] `old_name` was renamed to `new_b`"
    ]


def test_module_found_only_in_the_working_directory_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _write(
        root / "pyproject.toml", '[tool.lint_rules.literals]\n"Event.name" = "events:Event.name"\n'
    )
    _write(root / "tests/events.py", EVENTS.format(values='"started"'))  # not importable

    for cwd in (root, root / "tests"):
        result = _cli("check", "--no-cache", cwd=cwd)

        assert result.returncode == 2, cwd
        assert "module 'events' not found" in result.stderr
        assert f"looked in {root}, its src/, the nested projects" in result.stderr


def _first_party_layout(root: Path, events_dir: str, shapes_dir: str) -> None:
    """The project of ``_src_layout_project`` with ``events`` kept in ``events_dir``
    and ``shapes`` in ``shapes_dir`` (each a package now: ``events/__init__.py``)."""
    _write(root / "pyproject.toml", PROJECT_PYPROJECT)
    _write(root / events_dir / "events/__init__.py", EVENTS.format(values='"started"'))
    members = "    def area(self) -> float: ...\n    def perimeter(self) -> float: ...\n"
    _write(root / shapes_dir / "shapes/__init__.py", SHAPES.format(members=members))
    _write(root / "src/app/__init__.py", 'from events import Event\n\nEvent(name="paused")\n')
    _write(root / "impl/square.py", "import shapes\n\n\nclass Square(shapes.Shape):\n    pass\n")


FIRST_PARTY_EXPECTED = {("src/app/__init__.py", 3, 12, "LR002"), ("impl/square.py", 4, 1, "LR003")}


@pytest.mark.parametrize(
    ("events_dir", "shapes_dir", "project_files"),
    [
        # src/<name>-types/ with its own pyproject.toml, packages directly in it
        ("src/events-types", "src/shapes-types", ["src/events-types/pyproject.toml"]),
        # a directory of src/ that is not a package, without a pyproject.toml
        ("src/events-types", "src/shapes-types", []),
        # nested projects, each src-layout, one with setup.cfg
        (
            "packages/events/src",
            "libs/deep/shapes-lib/src",
            ["packages/events/pyproject.toml", "libs/deep/shapes-lib/setup.cfg"],
        ),
        # a nested project with its packages at its top
        ("packages/events", "src/shapes-types/src", ["packages/events/pyproject.toml"]),
    ],
)
def test_first_party_packages_are_found_without_pythonpath(
    tmp_path: Path, events_dir: str, shapes_dir: str, project_files: list[str]
) -> None:
    root = tmp_path / "project"
    _first_party_layout(root, events_dir, shapes_dir)
    for name in project_files:
        _write(root / name, "")
    env = {"PYTHONPATH": ""}

    result = _cli(*CHECK, "--no-cache", cwd=tmp_path, env=env)
    inside = _cli(*CHECK, "--no-cache", cwd=root / "impl", env=env)

    assert result.returncode == 1, result.stderr
    expected = {
        (str(root / path), line, column, code) for path, line, column, code in FIRST_PARTY_EXPECTED
    }
    assert _json_findings(result, tmp_path) == expected
    assert _json_findings(inside, root / "impl") == expected


def test_packages_under_hidden_and_environment_directories_are_not_first_party(
    tmp_path: Path,
) -> None:
    root = tmp_path / "project"
    _first_party_layout(root, ".hidden/events", "src/shapes-types")
    _write(root / ".hidden/events/pyproject.toml", "")
    _write(root / "env/pyvenv.cfg", "")
    _write(root / "env/lib/events/__init__.py", EVENTS.format(values='"paused"'))
    _write(root / "env/lib/pyproject.toml", "")

    result = _cli(*CHECK, "--no-cache", cwd=root, env={"PYTHONPATH": ""})

    assert result.returncode == 2
    assert "module 'events' not found" in result.stderr


def test_the_project_root_wins_over_a_nested_project(tmp_path: Path) -> None:
    root = tmp_path / "project"
    _first_party_layout(root, "src", "src")
    # a nested copy allowing "paused": read instead, it would hide the LR002 finding
    _write(root / "vendor/old/pyproject.toml", "")
    _write(root / "vendor/old/events/__init__.py", EVENTS.format(values='"paused"'))

    result = _cli(*CHECK, "--no-cache", cwd=root, env={"PYTHONPATH": ""})

    assert ("src/app/__init__.py", 3, 12, "LR002") in {
        (str(Path(path).relative_to(root)), line, column, code)
        for path, line, column, code in _json_findings(result, root)
    }


def test_command_line_selection_applies_to_each_projects_own(tmp_path: Path) -> None:
    _renaming_project(tmp_path / "a", "new_a", "ignore = ['LR001']")
    _renaming_project(tmp_path / "b", "new_b", "select = ['LR002']")

    assert _lines(_cli("check", "--no-cache", "a", "b", cwd=tmp_path).stdout) == []
    selected = _cli("check", "--no-cache", "--select", "LR001", "a", "b", cwd=tmp_path)
    # --select replaces b's select; a's ignore still applies (--ignore adds to it).
    assert [line.split(":")[0] for line in _lines(selected.stdout)] == [
        "b/m.py",
        "b/skip/s.py",
        "b/t/x.py",
    ]
    ignored = _cli("check", "--no-cache", "--ignore", "LR002", "b", cwd=tmp_path)
    assert (ignored.returncode, _lines(ignored.stdout)) == (0, [])


def test_bad_configuration_of_one_project_exits_2_naming_its_file(tmp_path: Path) -> None:
    _renaming_project(tmp_path / "a", "new_a")
    _renaming_project(tmp_path / "b", "new_b", "selekt = ['LR']")

    result = _cli("check", "a", "b", cwd=tmp_path)

    assert (result.returncode, result.stdout) == (2, "")
    assert f"{tmp_path / 'b' / 'pyproject.toml'} [tool.lint_rules]: unknown key 'selekt'" in (
        result.stderr
    )
