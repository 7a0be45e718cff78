"""The documentation site builds with `mkdocs build --strict`: a broken link, a page
missing from the navigation or a reference to a module that does not exist fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def build_site(config: Path, site_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run `mkdocs build --strict` on ``config`` into ``site_dir``."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(config),
            "--site-dir",
            str(site_dir),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once for this module's tests (a build takes seconds)."""
    site_dir = tmp_path_factory.mktemp("site")
    result = build_site(REPO_ROOT / "mkdocs.yml", site_dir)
    assert result.returncode == 0, result.stderr
    return site_dir


def test_site_builds_strictly(site: Path) -> None:
    assert (site / "sessions" / "index.html").is_file()


def test_translation_script_is_not_published(site: Path) -> None:
    assert not (site / "scripts").exists()


def test_api_reference_is_generated_from_docstrings(site: Path) -> None:
    page = (site / "ref" / "protocol" / "index.html").read_text(encoding="utf-8")

    assert "Return the latest" in page  # from Session.get_items' docstring


def test_sphinx_roles_in_docstrings_become_links(site: Path) -> None:
    page = (site / "ref" / "runner" / "index.html").read_text(encoding="utf-8")

    assert ":class:" not in page
    assert 'href="../protocol/#agent_sessions.protocol.Session"><code>Session</code></a>' in page
