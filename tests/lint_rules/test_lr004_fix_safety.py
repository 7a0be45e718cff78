"""LR004 fixes never break code: prose that names code stays, private renames stay consistent.

The misspellings are built from parts so that this repository's own typos run does not
flag this file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import NEAR_MISS, TAKE_MISS, Lint, needs_typos
else:
    from rule_fixtures import NEAR_MISS, TAKE_MISS, Lint, needs_typos


pytestmark = needs_typos


def test_docstring_words_that_name_a_definition_of_the_file_stay(project: Path, lint: Lint) -> None:
    source = (
        f"async def {NEAR_MISS}(message):\n"
        f'    """Await ``{NEAR_MISS}()`` or :func:`{NEAR_MISS}`; see {NEAR_MISS} in the guide."""\n'
        f"    # {NEAR_MISS} writes the message\n"
    )
    path = project / "logs.py"
    path.write_text(source)

    outcome = lint("fix", "--select", "LR004")

    assert path.read_text() == source
    assert "it is inline code" in outcome.out
    assert f"`{NEAR_MISS}` names code in this project" in outcome.out


def test_a_word_naming_a_function_of_another_module_stays(project: Path, lint: Lint) -> None:
    (project / "logs.py").write_text(f"def {NEAR_MISS}():\n    pass\n")
    source = f"# call {NEAR_MISS} first\nx = 1\n"
    (project / "app.py").write_text(source)

    lint("fix", "--select", "LR004")

    assert (project / "app.py").read_text() == source


def test_a_prose_word_that_names_nothing_is_still_fixed(project: Path, lint: Lint) -> None:
    path = project / "app.py"
    path.write_text(f"# walk {NEAR_MISS} the path\nx = 1\n")

    lint("fix", "--select", "LR004")

    assert path.read_text() == "# walk along the path\nx = 1\n"


def test_a_private_function_imported_by_another_module_is_not_renamed(
    project: Path, lint: Lint
) -> None:
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    a_source = f"def _{TAKE_MISS}(message):\n    return message\n\n_{TAKE_MISS}(1)\n"
    b_source = f"from pkg.a import _{TAKE_MISS}\n\n_{TAKE_MISS}(2)\n"
    (project / "pkg" / "a.py").write_text(a_source)
    (project / "pkg" / "b.py").write_text(b_source)

    outcome = lint("fix", "--select", "LR004")

    assert (project / "pkg" / "a.py").read_text() == a_source
    assert (project / "pkg" / "b.py").read_text() == b_source
    assert f"fix withheld: `_{TAKE_MISS}` is imported by pkg/b.py, which keeps that name" in (
        outcome.out
    )
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", "import pkg.b"], cwd=project, capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr
