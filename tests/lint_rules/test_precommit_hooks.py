"""Our hooks as another repository uses them: `pre-commit try-repo` against this checkout.

pre-commit builds the hooks' environment from the checkout under test (its committed HEAD
plus any uncommitted changes), installing from PyPI; no git host is involved.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
    "pre-commit"
)
HERE = Path(__file__).resolve().parent

pytestmark = [
    pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed"),
    pytest.mark.slow,
    # try-repo pip-installs the hooks' environment (a minute or more on a loaded machine).
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="module")
def hooks_repository() -> Path:
    """The root of the git checkout these tests belong to."""
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"],
        cwd=HERE,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(top.stdout.strip())


CONTRACT = """\
from typing import Protocol


class Store(Protocol):
    def get(self, key: str) -> bytes: ...
    def put(self, key: str, value: bytes) -> None: ...
"""
# The right names and parameters (LR003 is content), the wrong return type (mypy is not).
STORE = """\
class MemoryStore:
    def get(self, key: str) -> str:
        return key

    def put(self, key: str, value: bytes) -> None:
        pass
"""


@dataclass(frozen=True)
class TryRepo:
    """The adopter's file before and after ``pre-commit try-repo``, and each hook's output."""

    before: str
    after: str
    returncode: int
    hook_output: dict[str, str]


@pytest.fixture(scope="module")
def try_repo(hooks_repository: Path, tmp_path_factory: pytest.TempPathFactory) -> TryRepo:
    """Every hook of this repository run once, in manifest order, on a violating adopter.

    One run, because try-repo builds the hooks' environment afresh each time (about a
    minute: it pip-installs this project with its lint extra).
    """
    adopter = tmp_path_factory.mktemp("adopter")
    (adopter / "pyproject.toml").write_text(
        '[project]\nname = "adopter"\nversion = "0"\n\n'
        '[tool.lint_rules.renames]\nold_name = "new_name"\n\n'
        '[tool.lint_rules.protocols]\n"contract:Store" = ["store.py"]\n'
    )
    (adopter / "contract.py").write_text(CONTRACT)
    (adopter / "store.py").write_text(STORE)
    source = "from lib import old_name\n\nold_name()\n"
    (adopter / "app.py").write_text(source)
    _git(adopter, "init", "-q")
    _git(adopter, "add", ".")
    assert PRE_COMMIT is not None
    completed = subprocess.run(
        [PRE_COMMIT, "try-repo", str(hooks_repository), "--all-files", "--color", "never"],
        cwd=adopter,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    sections = completed.stdout.split("- hook id: ")[1:]
    hook_output = {section.split("\n", 1)[0]: section for section in sections}
    return TryRepo(source, (adopter / "app.py").read_text(), completed.returncode, hook_output)


def test_lint_rules_hook_fails_naming_the_finding(try_repo: TryRepo) -> None:
    output = try_repo.hook_output.get("lint-rules", "")

    assert "- exit code: 1" in output, try_repo.hook_output
    assert "app.py:3:1: LR001 [*] `old_name` was renamed to `new_name`" in output


def test_lint_rules_fix_hook_fixes_the_file(try_repo: TryRepo) -> None:
    output = try_repo.hook_output.get("lint-rules-fix", "")

    assert "files were modified by this hook" in output, try_repo.hook_output
    assert try_repo.after == "from lib import new_name\n\nnew_name()\n"
    assert try_repo.returncode == 1


def test_lint_rules_protocols_hook_fails_naming_the_class(try_repo: TryRepo) -> None:
    output = try_repo.hook_output.get("lint-rules-protocols", "")

    assert "- exit code: 1" in output, try_repo.hook_output
    assert "store.py:1:1: LR100 `MemoryStore` is not a `contract.Store` for mypy" in output
    assert "Got: def get(self, key: str) -> str" in output


def _git(root: Path, *arguments: str) -> None:
    subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True)
