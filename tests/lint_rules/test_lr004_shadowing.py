"""LR004 never renames a name onto one already in scope: a builtin, a name a star import
binds, or a local, parameter, module-level name or class attribute of the file. Such a
finding is reported without a fix and says why. Run with the real ``typos``.

The misspellings are built from parts so that this repository's own typos run does not
flag this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import TAKE_MISS, Lint, needs_typos
else:
    from rule_fixtures import TAKE_MISS, Lint, needs_typos

SET_MISS = "se" + "r"  # typos suggests "set"
TUPLE_MISS = "tup" + "el"  # typos suggests "tuple"
LIST_MISS = "li" + "ts"  # typos suggests "list"
JOIN_MISS = "ji" + "on"  # typos suggests "join"
EXISTS_MISS = "exs" + "its"  # typos suggests "exists"

pytestmark = needs_typos


@pytest.mark.parametrize(
    ("typo", "builtin"), [(SET_MISS, "set"), (TUPLE_MISS, "tuple"), (LIST_MISS, "list")]
)
def test_a_local_is_never_renamed_onto_a_builtin(
    project: Path, lint: Lint, typo: str, builtin: str
) -> None:
    source = f"def pick(items):\n    {typo} = sorted(items)\n    return {typo}\n"
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert outcome.code == 1
    assert (
        f"app.py:2:5: LR004 `{typo}` should be `{builtin}` in local `{typo}`; not fixed: "
        f"`{builtin}` is a builtin, which the new name would shadow" in outcome.out
    )


def test_a_parameter_of_a_private_function_is_never_renamed_onto_a_builtin(
    project: Path, lint: Lint
) -> None:
    source = f"def _pick({SET_MISS}):\n    return {SET_MISS}\n"
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "`set` is a builtin, which the new name would shadow" in outcome.out


def test_a_local_is_renamed_when_nothing_is_shadowed(project: Path, lint: Lint) -> None:
    path = project / "app.py"
    path.write_text(f"def glue(path):\n    {JOIN_MISS} = path\n    return {JOIN_MISS}\n")

    outcome = lint("fix", "--select", "LR004")

    assert outcome.code == 0
    assert path.read_text() == "def glue(path):\n    join = path\n    return join\n"


def test_a_local_is_never_renamed_onto_a_name_a_stdlib_star_import_binds(
    project: Path, lint: Lint
) -> None:
    source = (
        f"from posixpath import *\n\n\ndef glue(path):\n    {JOIN_MISS} = path\n"
        f"    return {JOIN_MISS}\n"
    )
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert (
        "not fixed: `join` is bound by `from posixpath import *`, which the new name would"
        " shadow" in outcome.out
    )


@pytest.mark.parametrize(
    ("helpers", "shadowed"),
    [
        ('__all__ = ["exists"]\n\n\ndef exists():\n    pass\n', True),
        ('__all__ = ["other"]\n\n\ndef exists():\n    pass\n\n\ndef other():\n    pass\n', False),
        ("def exists():\n    pass\n", True),  # no __all__: every public top-level name
        ("from .deeper import *\n", True),  # through the module's own star import
    ],
    ids=["in-all", "not-in-all", "public-name", "nested-star"],
)
def test_a_project_modules_star_import_is_read_from_its_source(
    project: Path, lint: Lint, helpers: str, shadowed: bool
) -> None:
    package = project / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helpers.py").write_text(helpers)
    (package / "deeper.py").write_text("def exists():\n    pass\n")
    source = (
        f"from .helpers import *\n\n\ndef check(path):\n    {EXISTS_MISS} = path\n"
        f"    return {EXISTS_MISS}\n"
    )
    path = package / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    if shadowed:
        assert path.read_text() == source
        assert "`exists` is bound by `from .helpers import *`" in outcome.out
    else:
        assert path.read_text() == source.replace(EXISTS_MISS, "exists")


def test_a_star_import_whose_names_cannot_be_known_withholds_the_rename(
    project: Path, lint: Lint
) -> None:
    source = (
        f"from nowhere_to_be_found import *\n\n\ndef glue(path):\n    {JOIN_MISS} = path\n"
        f"    return {JOIN_MISS}\n"
    )
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert (
        "not fixed: cannot tell whether `from nowhere_to_be_found import *` binds `join`"
        " (its source cannot be read)" in outcome.out
    )


def test_a_computed_dunder_all_cannot_be_known(project: Path, lint: Lint) -> None:
    (project / "helpers.py").write_text("__all__ = [name for name in ('a', 'b')]\n")
    source = (
        f"from helpers import *\n\n\ndef glue(path):\n    {JOIN_MISS} = path\n"
        f"    return {JOIN_MISS}\n"
    )
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "cannot tell whether `from helpers import *` binds `join`" in outcome.out


@pytest.mark.parametrize(
    "source",
    [
        f"def _take(receive):\n    {TAKE_MISS} = receive + 1\n    return {TAKE_MISS}\n",
        f"receive = 1\n\n\ndef take():\n    {TAKE_MISS} = 2\n    return {TAKE_MISS}\n",
        f"def take():\n    receive = 1\n    {TAKE_MISS} = 2\n    return receive + {TAKE_MISS}\n",
        f"class Box:\n    _receive = 1\n    _{TAKE_MISS} = 2\n\n    def take(self):\n"
        f"        return self._{TAKE_MISS}\n",
    ],
    ids=["parameter", "module-level-name", "local", "class-attribute"],
)
def test_a_name_is_never_renamed_onto_one_in_scope(project: Path, lint: Lint, source: str) -> None:
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "receive` already exists in this file" in outcome.out


STARTED_MISS = "stra" + "ted"  # typos suggests "started"


def _child(base_import: str, base: str) -> str:
    return (
        f"{base_import}class Child({base}):\n    def _{TAKE_MISS}(self):\n        return 1\n\n"
        f"    def run(self):\n        return self._{TAKE_MISS}()\n"
    )


def test_a_class_member_is_never_renamed_onto_one_a_base_class_in_the_project_defines(
    project: Path, lint: Lint
) -> None:
    (project / "base.py").write_text("class Base:\n    def _receive(self):\n        return 0\n")
    source = _child("from base import Base\n\n\n", "Base")
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "not fixed: `_receive` is also defined by the base class `base.Base`" in outcome.out


def test_a_class_member_is_never_renamed_onto_one_a_stdlib_base_class_sets(
    project: Path, lint: Lint
) -> None:
    source = (
        "import threading\n\n\nclass Worker(threading.Thread):\n"
        f"    def _{STARTED_MISS}(self):\n        return 1\n\n"
        f"    def go(self):\n        return self._{STARTED_MISS}()\n"
    )
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "`_started` is also defined by the base class `threading.Thread`" in outcome.out


def test_a_class_member_is_never_renamed_onto_one_another_file_binds(
    project: Path, lint: Lint
) -> None:
    source = (
        f"class Base:\n    def _{TAKE_MISS}(self):\n        return 1\n\n"
        f"    def run(self):\n        return self._{TAKE_MISS}()\n"
    )
    path = project / "app.py"
    path.write_text(source)
    (project / "sub.py").write_text(
        "from app import Base\n\n\nclass Sub(Base):\n    def _receive(self):\n        return 2\n"
    )

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "`_receive` is also bound in another file of the project" in outcome.out


def test_a_class_member_whose_base_cannot_be_read_is_not_renamed(project: Path, lint: Lint) -> None:
    source = _child("from nowhere_to_be_found import Thing\n\n\n", "Thing")
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "cannot tell whether the base class `Thing` defines `_receive`" in outcome.out


@pytest.mark.parametrize(
    ("base_import", "base"),
    [
        ("", "dict"),
        ("from typing import Generic, TypeVar\n\nT = TypeVar('T')\n\n\n", "Generic[T]"),
        ("import threading\n\n\n", "threading.Thread"),
        ("from base import Base\n\n\n", "Base"),
    ],
    ids=["builtin", "typing", "stdlib", "project"],
)
def test_a_class_member_is_renamed_when_no_base_defines_the_new_name(
    project: Path, lint: Lint, base_import: str, base: str
) -> None:
    (project / "base.py").write_text("class Base:\n    def _other(self):\n        return 0\n")
    source = _child(base_import, base)
    path = project / "app.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert outcome.code == 0, outcome.out
    assert path.read_text() == source.replace(TAKE_MISS, "receive")
