"""Our hooks as another repository uses them: `pre-commit try-repo` against this checkout.

pre-commit builds the hooks' environment from the checkout under test (its committed HEAD
plus any uncommitted changes) into a temporary PRE_COMMIT_HOME, installing from PyPI;
no git host is involved.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which(
    "pre-commit"
)
HERE = Path(__file__).resolve().parent

pytestmark = [
    pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed"),
    pytest.mark.slow,
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


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One hook environment for the module: pre-commit installs it once."""
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def adopter(tmp_path: Path) -> Path:
    """A git repository that configures a rename and still uses the old name."""
    root = tmp_path / "adopter"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "adopter"\nversion = "0"\n\n'
        '[tool.lint_rules.renames]\nold_name = "new_name"\n'
    )
    (root / "app.py").write_text("from lib import old_name\n\nold_name()\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    return root


def test_lint_rules_hook_fails_naming_the_finding(
    adopter: Path, hooks_repository: Path, pre_commit_home: Path
) -> None:
    outcome = _try_repo(adopter, hooks_repository, "lint-rules", pre_commit_home)

    assert outcome.returncode == 1, outcome.stdout
    assert "app.py:3:1: LR001 [*] `old_name` was renamed to `new_name`" in outcome.stdout
    assert (adopter / "app.py").read_text() == "from lib import old_name\n\nold_name()\n"


def test_lint_rules_fix_hook_fixes_the_file(
    adopter: Path, hooks_repository: Path, pre_commit_home: Path
) -> None:
    outcome = _try_repo(adopter, hooks_repository, "lint-rules-fix", pre_commit_home)

    assert "files were modified by this hook" in outcome.stdout, outcome.stdout
    assert (adopter / "app.py").read_text() == "from lib import new_name\n\nnew_name()\n"


def _try_repo(
    adopter: Path, hooks_repository: Path, hook: str, pre_commit_home: Path
) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    environment = {**os.environ, "PRE_COMMIT_HOME": str(pre_commit_home), "NO_COLOR": "1"}
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(hooks_repository), hook, "--all-files", "--color", "never"],
        cwd=adopter,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def _git(root: Path, *arguments: str) -> None:
    subprocess.run(["git", *arguments], cwd=root, check=True, capture_output=True)
