"""Build the documentation site and check every internal link and anchor in its output."""

from __future__ import annotations

import os
import posixpath
import re
import subprocess
import sys
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

REPO_ROOT = Path(__file__).resolve().parents[2]
# The attributes that point at another file of the site.
LINK_ATTRIBUTES = {"a": "href", "link": "href", "img": "src", "script": "src", "source": "src"}


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


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("id", "name"):
            if value := values.get(name):
                self.ids.add(value)
        attribute = LINK_ATTRIBUTES.get(tag)
        if attribute and (target := values.get(attribute)) is not None:
            self.links.append(target)


@cache
def _parse(page: Path) -> _Page:
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def broken_links(site_dir: Path) -> list[str]:
    """``page: link (why)`` for every internal link, image, script or stylesheet of every
    HTML page of ``site_dir`` whose file or ``#anchor`` does not exist."""
    _parse.cache_clear()
    problems = []
    for page in sorted(site_dir.rglob("*.html")):
        page_path = page.relative_to(site_dir).as_posix()
        if page_path == "404.html":
            continue  # served at any depth, so its links are absolute to the site's URL
        for link in _parse(page).links:
            if why := _why_broken(site_dir, page, page_path, link):
                problems.append(f"{page_path}: {link} ({why})")
    return problems


def _why_broken(site_dir: Path, page: Path, page_path: str, link: str) -> str | None:
    parts = urlsplit(link)
    if parts.scheme or parts.netloc or re.match(r"^[a-z][a-z0-9+.-]*:", link):
        return None  # another site, mailto:, data:...
    if not parts.path:
        target = page
    else:
        if parts.path.startswith("/"):
            return "absolute path: breaks when the site is not served from the root"
        resolved = posixpath.normpath(
            posixpath.join(posixpath.dirname(page_path), unquote(parts.path))
        )
        if resolved == ".." or resolved.startswith("../"):
            return "outside the site"
        target = site_dir / resolved
        if target.is_dir():
            target = target / "index.html"
        if not target.is_file():
            return "no such file"
    fragment = unquote(parts.fragment)
    if fragment and target.suffix == ".html" and fragment not in _parse(target).ids:
        return f"no anchor #{fragment}"
    return None
