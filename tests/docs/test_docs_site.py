"""The documentation site builds with `mkdocs build --strict`, and every internal link and
anchor of its output lands, in every language present: English as the repository has it,
and English, Japanese, Korean and Chinese with translations made by a loopback model
server (model_server.py) running the real translation script."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import translate_docs
from model_server import FakeChatCompletions, model_environment, reverse_every_word
from site_check import REPO_ROOT, broken_links, build_site

TRANSLATED = tuple(translate_docs.LANGUAGES)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as the repository has it, built once for this module's tests."""
    site_dir = tmp_path_factory.mktemp("site")
    result = build_site(REPO_ROOT / "mkdocs.yml", site_dir)
    assert result.returncode == 0, result.stderr
    return site_dir


@pytest.fixture(scope="module")
def translated_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site with every language of the translation table, translated by the script from
    a loopback server (which reverses every word, so that headings' own anchors change)."""
    root = tmp_path_factory.mktemp("translated")
    docs = root / "docs"
    shutil.copytree(REPO_ROOT / "docs", docs, ignore=shutil.ignore_patterns(*TRANSLATED))
    # An image beside a page: its relative link must work from every language's copy.
    (docs / "img").mkdir()
    (docs / "img" / "flow.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"/>\n')
    getting_started = docs / "getting_started.md"
    getting_started.write_text(getting_started.read_text() + "\n![The flow](img/flow.svg)\n")
    config = root / "mkdocs.yml"
    config.write_text(f"INHERIT: {REPO_ROOT / 'mkdocs.yml'}\ndocs_dir: {docs}\n")
    server = FakeChatCompletions()
    server.respond = reverse_every_word
    server.start()
    try:
        with pytest.MonkeyPatch.context() as patch:
            for name, value in model_environment(server).items():
                patch.setenv(name, value)
            code = translate_docs.main(["--docs-dir", str(docs), "--config-file", str(config)])
    finally:
        server.stop()
    assert code == 0
    site_dir = root / "site"
    result = build_site(config, site_dir)
    assert result.returncode == 0, result.stderr
    return site_dir


# --- the site as the repository has it --------------------------------------------------------


def test_site_builds_strictly(site: Path) -> None:
    assert (site / "sessions" / "index.html").is_file()


def test_every_internal_link_and_anchor_lands(site: Path) -> None:
    assert broken_links(site) == []


def test_no_language_is_offered_without_translations(site: Path) -> None:
    page = (site / "sessions" / "index.html").read_text(encoding="utf-8")

    assert not [code for code in TRANSLATED if (site / code).exists()]
    assert "md-select" not in page  # Material's language switcher
    assert 'hreflang="ja"' not in page


def test_tables_show_code_with_pipes_and_no_backslash(site: Path) -> None:
    for page in ("sessions", "lint"):
        html = (site / page / "index.html").read_text(encoding="utf-8")
        cells = re.findall(r"<td><code>(.*?)</code>", html)
        assert any("|" in cell for cell in cells), page
        assert not [cell for cell in cells if "\\|" in cell], page


def test_translation_script_is_not_published(site: Path) -> None:
    assert not (site / "scripts").exists()


def test_api_reference_is_generated_from_docstrings(site: Path) -> None:
    page = (site / "ref" / "protocol" / "index.html").read_text(encoding="utf-8")

    assert "Return the latest" in page  # from Session.get_items' docstring


def test_sphinx_roles_in_docstrings_become_links(site: Path) -> None:
    page = (site / "ref" / "runner" / "index.html").read_text(encoding="utf-8")

    assert ":class:" not in page
    assert 'href="../protocol/#agent_sessions.protocol.Session"><code>Session</code></a>' in page


def test_no_page_shows_a_rest_literal_marker(site: Path) -> None:
    """Docstrings introduce code blocks with reST's ``::``; no page prints it as text."""
    shown = {
        str(page.relative_to(site)): marker
        for page in site.rglob("*.html")
        for marker in re.findall(r"[^>]{0,60}::</p>", page.read_text(encoding="utf-8"))
    }

    assert shown == {}


def test_a_rest_literal_marker_reads_as_a_colon_before_its_code_block(site: Path) -> None:
    page = (site / "ref" / "runner" / "index.html").read_text(encoding="utf-8")

    assert re.search(
        r"no longer threads history between runs:</p>\s*<div class=\"highlight\"><pre>", page
    )


# --- every language -------------------------------------------------------------------------


def test_every_link_and_anchor_lands_in_every_language(translated_site: Path) -> None:
    assert [code for code in TRANSLATED if (translated_site / code / "index.html").is_file()] == [
        *TRANSLATED
    ]
    assert broken_links(translated_site) == []


@pytest.mark.parametrize("code", TRANSLATED)
def test_translated_pages_have_their_language_and_navigation(
    translated_site: Path, code: str
) -> None:
    page = (translated_site / code / "getting_started" / "index.html").read_text()

    assert f'<html lang="{code}"' in page
    assert "gnitteG detrats" in page  # the page, translated
    assert "tniL etius" in page  # the navigation section "Lint suite", translated
    assert "Lint suite" not in page


@pytest.mark.parametrize("code", TRANSLATED)
def test_switcher_links_each_page_to_its_own_translation(translated_site: Path, code: str) -> None:
    english = (translated_site / "sessions" / "index.html").read_text()
    translated = (translated_site / code / "sessions" / "index.html").read_text()

    assert f'href="../{code}/sessions/" hreflang="{code}"' in english
    assert 'href="../../sessions/" hreflang="en"' in translated


def test_relative_images_resolve_in_every_language(translated_site: Path) -> None:
    # The links of every page are checked above; here, that the image is among them.
    for code in TRANSLATED:
        page = (translated_site / code / "getting_started" / "index.html").read_text()
        assert '<img alt="ehT wolf" src="../../img/flow.svg"' in page


def test_untranslated_reference_is_served_in_english_in_every_language(
    translated_site: Path,
) -> None:
    for code in TRANSLATED:
        page = (translated_site / code / "ref" / "protocol" / "index.html").read_text()
        assert "Return the latest" in page


def test_translated_pages_stay_out_of_search(translated_site: Path) -> None:
    index = json.loads((translated_site / "search" / "search_index.json").read_text())

    locations = [doc["location"] for doc in index["docs"]]
    assert locations
    assert not [loc for loc in locations if loc.split("/", 1)[0] in TRANSLATED]


# --- the checker itself -----------------------------------------------------------------------


def test_link_checker_reports_missing_files_and_anchors(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "index.html").write_text(
        '<h2 id="here">Here</h2><a href="#here">ok</a><a href="#gone">anchor</a>'
        '<a href="../b/">file</a><a href="../">root</a><img src="/abs.png">'
        '<a href="https://example.com/x">external</a>'
    )
    (tmp_path / "index.html").write_text('<a href="a/#here">ok</a><a href="a/#nope">bad</a>')

    assert broken_links(tmp_path) == [
        "a/index.html: #gone (no anchor #gone)",
        "a/index.html: ../b/ (no such file)",
        "a/index.html: /abs.png (absolute path: breaks when the site is not served from the root)",
        "index.html: a/#nope (no anchor #nope)",
    ]
