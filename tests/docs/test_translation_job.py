"""docs/scripts/translation_job.py, the steps of .github/workflows/translate-docs.yml that
cannot run here (checkout, fetch, push), simulated against a local bare repository: each
test clones it as the workflow's checkout would and runs the job there, as the workflow
does, against a loopback model server (model_server.py)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import translate_docs
from model_server import FakeChatCompletions, model_environment

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("translate_docs.py", "translation_job.py", "mkdocs_hooks.py")
LANGUAGE_FOLDERS = [f"docs/{code}" for code in translate_docs.LANGUAGES]

# A small site with the repository's language setup and hooks (no API reference: builds in
# a second or two).
MKDOCS_YML = """\
site_name: job test
strict: true
exclude_docs: |
  scripts/
validation:
  links:
    not_found: warn
    anchors: warn
    unrecognized_links: warn
nav:
  - Home: index.md
  - Guide: guide.md
theme:
  name: material
markdown_extensions:
  - attr_list  # the translations' explicit English anchors: { #usage }
  - toc
hooks:
  - docs/scripts/mkdocs_hooks.py
plugins:
  - search
  - i18n:
      docs_structure: folder
      languages:
        - locale: en
          name: English
          default: true
        - locale: ja
          name: 日本語
        - locale: ko
          name: 한국어
        - locale: zh
          name: 简体中文
"""
PAGES = {
    "index.md": "# Welcome\n\nRead the [guide](guide.md#usage).\n",
    "guide.md": "# Guide\n\n## Usage\n\nRun it.\n",
}


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"git {args}: {result.stderr}"
    return result.stdout


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def clone(origin: Path, path: Path) -> Path:
    git(origin.parent, "clone", "--quiet", str(origin), str(path))
    git(path, "config", "user.name", "test")
    git(path, "config", "user.email", "test@example.com")
    return path


def push_english_change(origin: Path, work: Path, page: str, text: str) -> str:
    """A person's push to main: ``page`` changed; returns the new commit."""
    if not work.exists():
        clone(origin, work)
    git(work, "pull", "--quiet", "origin", "main")
    write(work / "docs" / page, text)
    git(work, "commit", "--quiet", "-am", f"docs: edit {page}")
    git(work, "push", "--quiet", "origin", "HEAD:main")
    return git(work, "rev-parse", "HEAD").strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository whose main holds the small site, English only."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "--quiet", "--initial-branch=main", str(seed))
    write(seed / "mkdocs.yml", MKDOCS_YML)
    for page, text in PAGES.items():
        write(seed / "docs" / page, text)
    for script in SCRIPTS:
        (seed / "docs" / "scripts").mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / "docs" / "scripts" / script, seed / "docs" / "scripts" / script)
    git(seed, "add", "--all")
    git(seed, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "--quiet", "-m", "site")
    git(seed, "push", "--quiet", str(bare), "main")
    return bare


def run_job(checkout: Path, server: FakeChatCompletions) -> subprocess.CompletedProcess[str]:
    """The workflow's job step in ``checkout``: `python docs/scripts/translation_job.py`."""
    return subprocess.run(
        [sys.executable, "docs/scripts/translation_job.py"],
        cwd=checkout,
        env={**os.environ, **model_environment(server), "GITHUB_ACTIONS": "true"},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def main_files(origin: Path, tmp_path: Path) -> Path:
    """A fresh clone of origin's main, to read what was pushed."""
    path = tmp_path / f"reader{len(list(tmp_path.glob('reader*')))}"
    return clone(origin, path)


def manifest(checkout: Path, code: str) -> dict[str, str]:
    path = checkout / "docs" / code / translate_docs.MANIFEST_NAME
    pages: dict[str, str] = json.loads(path.read_text())["pages"]
    return pages


def current_hashes(checkout: Path) -> dict[str, str]:
    return {
        page: hashlib.sha256((checkout / "docs" / page).read_bytes()).hexdigest() for page in PAGES
    }


def requests_for(server: FakeChatCompletions, heading: str) -> int:
    """How many pages sent have ``heading`` as their first line (without its token)."""
    first_lines = (page.splitlines()[0] for page in server.pages_sent())
    return sum(translate_docs.PLACEHOLDER.sub("", line).strip() == heading for line in first_lines)


@pytest.fixture
def second_server() -> Iterator[FakeChatCompletions]:
    fake = FakeChatCompletions()
    fake.start()
    yield fake
    fake.stop()


def on_first_request(server: FakeChatCompletions, action: Callable[[], object]) -> None:
    """Run ``action`` while the job waits for the model's first reply, then reply."""
    done: list[bool] = []

    def respond(text: str) -> str:
        if not done:
            done.append(True)
            action()
        return text.upper()

    server.respond = respond


# --- the job ----------------------------------------------------------------------------------


def test_job_translates_builds_commits_and_pushes(
    origin: Path, tmp_path: Path, server: FakeChatCompletions
) -> None:
    checkout = clone(origin, tmp_path / "runner")

    result = run_job(checkout, server)

    assert result.returncode == 0, result.stderr
    pushed = main_files(origin, tmp_path)
    for code in translate_docs.LANGUAGES:
        assert manifest(pushed, code) == current_hashes(pushed)
        assert "# WELCOME" in (pushed / "docs" / code / "index.md").read_text()
    assert git(pushed, "log", "-1", "--format=%s").strip() == "docs: update translations"


def test_job_translates_the_latest_main_not_the_commit_that_triggered_it(
    origin: Path, tmp_path: Path, server: FakeChatCompletions
) -> None:
    checkout = clone(origin, tmp_path / "runner")  # the checkout of the triggering push
    push_english_change(origin, tmp_path / "person", "guide.md", "# Guide v2\n\n## Usage\n")

    result = run_job(checkout, server)

    assert result.returncode == 0, result.stderr
    pushed = main_files(origin, tmp_path)
    assert "# GUIDE V2" in (pushed / "docs" / "ja" / "guide.md").read_text()
    assert manifest(pushed, "ja") == current_hashes(pushed)
    assert requests_for(server, "# Guide v2") == len(translate_docs.LANGUAGES)
    assert requests_for(server, "# Guide") == 0  # the stale version was never sent


def test_two_runs_close_together_lose_nothing_and_pay_nothing_twice(
    origin: Path, tmp_path: Path, server: FakeChatCompletions, second_server: FakeChatCompletions
) -> None:
    # Run A starts on the first push; while it waits for the model, a second push lands and
    # run B translates and pushes. A's push is then refused: it starts over from B's main.
    first = clone(origin, tmp_path / "runner-a")
    second = tmp_path / "runner-b"
    results: list[subprocess.CompletedProcess[str]] = []

    def second_push_and_run() -> None:
        push_english_change(origin, tmp_path / "person", "guide.md", "# Guide v2\n\n## Usage\n")
        clone(origin, second)
        results.append(run_job(second, second_server))

    on_first_request(server, second_push_and_run)

    result = run_job(first, server)

    assert results[0].returncode == 0, results[0].stderr
    assert result.returncode == 0, result.stderr
    assert "the push was refused" in result.stderr
    pushed = main_files(origin, tmp_path)
    for code in translate_docs.LANGUAGES:
        assert manifest(pushed, code) == current_hashes(pushed)
        assert "# GUIDE V2" in (pushed / "docs" / code / "guide.md").read_text()
    assert "<<<<<<<" not in "".join(p.read_text() for p in (pushed / "docs").rglob("*.md"))
    log = git(pushed, "log", "--format=%s").splitlines()
    assert log.count("docs: update translations") == 1  # B's; A had nothing left to add
    # A sent each page and the navigation once per language, and nothing after starting over.
    languages = len(translate_docs.LANGUAGES)
    assert requests_for(server, "# Welcome") == languages
    assert requests_for(server, "# Guide") == languages
    assert len(server.requests) == 3 * languages


def test_refused_push_keeps_the_runs_translations_and_sends_only_what_changed(
    origin: Path, tmp_path: Path, server: FakeChatCompletions
) -> None:
    # A person pushes an English change while the run translates: the run starts over from
    # the new main, carries its own translations over and sends only the changed page.
    checkout = clone(origin, tmp_path / "runner")
    on_first_request(
        server,
        lambda: push_english_change(
            origin, tmp_path / "person", "guide.md", "# Guide v2\n\n## Usage\n"
        ),
    )

    result = run_job(checkout, server)

    assert result.returncode == 0, result.stderr
    assert "carried over" in result.stdout
    pushed = main_files(origin, tmp_path)
    for code in translate_docs.LANGUAGES:
        assert manifest(pushed, code) == current_hashes(pushed)
        assert "# GUIDE V2" in (pushed / "docs" / code / "guide.md").read_text()
    languages = len(translate_docs.LANGUAGES)
    assert requests_for(server, "# Welcome") == languages  # once each, never again
    assert requests_for(server, "# Guide v2") == languages


def test_failed_page_is_reported_and_the_others_are_pushed(
    origin: Path, tmp_path: Path, server: FakeChatCompletions
) -> None:
    checkout = clone(origin, tmp_path / "runner")
    server.respond = lambda text: 400 if "# Guide" in text else text.upper()

    result = run_job(checkout, server)

    assert result.returncode == 0, result.stderr
    assert "::error file=docs/guide.md,title=translation failed (ja)::" in result.stdout
    pushed = main_files(origin, tmp_path)
    assert set(manifest(pushed, "ja")) == {"index.md"}
    assert not (pushed / "docs" / "ja" / "guide.md").exists()
    # The site builds with the missing translation: the English page stands in for it.


def test_job_fails_without_committing_when_the_site_does_not_build(
    origin: Path, tmp_path: Path, server: FakeChatCompletions
) -> None:
    checkout = clone(origin, tmp_path / "runner")
    before = git(origin, "rev-parse", "main")
    # A reply with a link the model made up: the strict build refuses it.
    server.respond = lambda text: text.upper() + "\n[MORE](nowhere.md)\n"

    result = run_job(checkout, server)

    assert result.returncode == 1
    assert "the site does not build" in result.stderr
    assert "nowhere.md" in result.stderr
    assert git(origin, "rev-parse", "main") == before
    assert git(checkout, "log", "-1", "--format=%s").strip() != "docs: update translations"


def test_nothing_to_translate_pushes_nothing(
    origin: Path, tmp_path: Path, server: FakeChatCompletions
) -> None:
    assert run_job(clone(origin, tmp_path / "first"), server).returncode == 0
    head = git(origin, "rev-parse", "main")
    server.requests.clear()

    result = run_job(clone(origin, tmp_path / "second"), server)

    assert result.returncode == 0, result.stderr
    assert "Translations are up to date." in result.stdout
    assert server.requests == []
    assert git(origin, "rev-parse", "main") == head
