"""The translation job of .github/workflows/translate-docs.yml: translate the latest main,
build the site, commit and push, without ever losing a run's work.

Usage (from the root of a clone whose ``origin`` is the repository)::

    python docs/scripts/translation_job.py

Each attempt:

1. fetches ``origin/main`` and resets the checkout to it, so that the job translates the
   latest English pages, not the commit that triggered it;
2. carries over the translations of the previous attempt (a local commit) that are still
   current, page by page: a translation whose English source is unchanged is never paid
   for twice, whoever pushed in between;
3. runs translate_docs.py (new and changed pages only; a page that fails keeps its old
   translation and is reported);
4. builds the site with ``mkdocs build --strict`` and stops without committing when the
   build breaks;
5. commits the language folders and pushes to ``main``. When the push is refused because
   main moved on (another run, or a person, pushed), the next attempt starts over from the
   new main.

Exit codes: 0 pushed or nothing to do; 1 the site does not build, main kept moving, or
nothing could be translated (what could be, such as deletions, is pushed); 2 usage or
configuration error (from translate_docs.py).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

import translate_docs

DEFAULT_ATTEMPTS: Final = 5
COMMIT_MESSAGE: Final = "docs: update translations"


class JobError(Exception):
    """A git or build step failed; the message says which."""


def main(argv: list[str] | None = None) -> int:
    """Run the job in the current directory (a clone); return the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--remote", default="origin", help="the remote to push to")
    parser.add_argument("--branch", default="main", help="the branch to translate and push")
    parser.add_argument(
        "--attempts",
        type=int,
        default=DEFAULT_ATTEMPTS,
        help=f"how many times to start over when the push is refused (default {DEFAULT_ATTEMPTS})",
    )
    args = parser.parse_args(argv)
    if args.attempts < 1:
        parser.error("--attempts must be at least 1")
    try:
        return run(Path.cwd(), remote=args.remote, branch=args.branch, attempts=args.attempts)
    except JobError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


def run(repo: Path, *, remote: str, branch: str, attempts: int) -> int:
    """The job's attempts; see the module docstring."""
    folders = [f"docs/{code}" for code in translate_docs.LANGUAGES]
    previous: str | None = None
    for attempt in range(1, attempts + 1):
        git(
            repo, "fetch", "--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}"
        )
        git(repo, "reset", "--quiet", "--hard", f"{remote}/{branch}")
        git(repo, "clean", "--quiet", "-d", "--force", "--", *folders)
        if previous is not None:
            carried = carry_over(repo, previous)
            print(f"carried over {carried} translations of the previous attempt")
        code = translate_docs.main(["--docs-dir", str(repo / "docs")])
        if code == 2:
            return 2
        git(repo, "add", "--all", "--", *folders)
        if not git(repo, "status", "--porcelain", "--", *folders).strip():
            print("Translations are up to date.")
            return code
        build_site(repo)
        git(repo, "commit", "--quiet", "-m", COMMIT_MESSAGE)
        previous = git(repo, "rev-parse", "HEAD").strip()
        push = subprocess.run(
            ["git", "push", "--quiet", remote, f"HEAD:refs/heads/{branch}"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )
        if push.returncode == 0:
            print(f"pushed {previous[:12]} to {remote}/{branch}")
            return code
        print(
            f"attempt {attempt}: the push was refused ({push.stderr.strip()}); "
            f"starting over from the new {branch}",
            file=sys.stderr,
        )
    print(f"error: {branch} kept moving: gave up after {attempts} attempts", file=sys.stderr)
    return 1


def carry_over(repo: Path, commit: str) -> int:
    """Copy, from ``commit``, every translation whose English page is unchanged in the
    checkout and which the checkout lacks or has from another source; return how many."""
    carried = 0
    for code in translate_docs.LANGUAGES:
        manifest_path = repo / "docs" / code / translate_docs.MANIFEST_NAME
        theirs = translate_docs.Manifest.load(manifest_path)
        ours = read_manifest(repo, commit, f"docs/{code}/{translate_docs.MANIFEST_NAME}")
        changed = False
        for page, source_hash in ours.pages.items():
            english = repo / "docs" / page
            if not english.is_file() or theirs.pages.get(page) == source_hash:
                continue
            if hashlib.sha256(english.read_bytes()).hexdigest() != source_hash:
                continue  # translated from an English page that has changed since
            translation = show(repo, commit, f"docs/{code}/{page}")
            translate_docs.write_atomically(repo / "docs" / code / page, translation)
            theirs.pages[page] = source_hash
            changed = True
            carried += 1
        for title, translated in ours.nav.items():
            if title not in theirs.nav:
                theirs.nav[title] = translated
                changed = True
        if changed:
            theirs.save(manifest_path)
    return carried


def read_manifest(repo: Path, commit: str, path: str) -> translate_docs.Manifest:
    """The manifest at ``path`` in ``commit`` (empty when the commit has none)."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / translate_docs.MANIFEST_NAME
        exists = subprocess.run(
            ["git", "cat-file", "-e", f"{commit}:{path}"], cwd=repo, capture_output=True
        )
        if exists.returncode == 0:
            copy.write_bytes(show(repo, commit, path))
        return translate_docs.Manifest.load(copy)


def show(repo: Path, commit: str, path: str) -> bytes:
    """The bytes of ``path`` in ``commit``."""
    result = subprocess.run(
        ["git", "show", f"{commit}:{path}"], cwd=repo, capture_output=True, check=False
    )
    if result.returncode != 0:
        raise JobError(f"git show {commit}:{path}: {result.stderr.decode().strip()}")
    return result.stdout


def build_site(repo: Path) -> None:
    """``mkdocs build --strict`` of the checkout into a temporary folder; raise JobError
    (nothing is committed) when it fails."""
    with tempfile.TemporaryDirectory() as site_dir:
        result = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", site_dir],
            cwd=repo,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode != 0:
        raise JobError(
            "the site does not build with the new translations; nothing was committed:\n"
            + result.stderr.strip()
        )


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its output, or JobError naming the command."""
    result = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise JobError(f"git {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


if __name__ == "__main__":
    sys.exit(main())
