"""MkDocs hooks for this site (``hooks:`` in mkdocs.yml).

Languages: the i18n plugin (mkdocs-static-i18n) lists every language of the translation
job, but a language is built, and offered by the language switcher, only when its folder
(``docs/<locale>/``) holds translated pages; its navigation titles come from the manifest
the translation job keeps there (``.translation-manifest.json``, key ``nav``). The
switcher's links are made relative, so that the site works below any path (a GitHub Pages
project site is served from ``/<repository>/``), and only the English pages are indexed
for search (another language's build serves English pages where it has no translation).

Cross-references: the library's docstrings cross-reference with Sphinx roles
(``:class:`~agent_sessions.Runner```), which the API reference, rendering docstrings as
Markdown, would show as literal text. Each role becomes a cross-reference that
mkdocs-autorefs resolves to the object's entry in the reference, or plain code when the
object has none.

Literal blocks: a docstring introduces a code block with reST's ``::`` (``Example::``),
which Markdown keeps as text before the (indented) code block. As reST shows it, a
paragraph ending ``text::`` reads ``text:``, ``text ::`` reads ``text`` and a lone ``::``
disappears; elsewhere ``::`` is left alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Final

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.plugins import event_priority
from mkdocs.structure.pages import Page

MANIFEST_NAME: Final = ".translation-manifest.json"

_ROLE: Final = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):<code>(?P<tilde>~?)(?P<target>[\w.]+)</code>"
)


@event_priority(100)  # before the i18n plugin (-100) reads its languages
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Build only the languages that have translations, with their translated navigation."""
    i18n = config.plugins.get("i18n")
    if i18n is None:
        return config
    docs_dir = Path(config.docs_dir)
    for language in getattr(i18n, "config").languages:  # noqa: B009 (untyped plugin)
        if language.default:
            continue
        folder = docs_dir / language.locale
        language.build = folder.is_dir() and any(folder.rglob("*.md"))
        manifest = folder / MANIFEST_NAME
        if language.build and manifest.is_file():
            nav = json.loads(manifest.read_text(encoding="utf-8")).get("nav", {})
            language.nav_translations = {**(language.nav_translations or {}), **nav}
    return config


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, **_: object) -> str:
    """Keep the pages of every language but the default out of the search index."""
    i18n = config.plugins.get("i18n")
    current = getattr(i18n, "current_language", None)
    if i18n is not None and current != getattr(i18n, "default_language", current):
        page.meta["search"] = {**(page.meta.get("search") or {}), "exclude": True}
    return markdown


@event_priority(0)  # after the i18n plugin (50) points the switcher at this page's translations
def on_page_context(context: dict[str, object], config: MkDocsConfig, **_: object) -> object:
    """Make the switcher's site-absolute links (``/ja/``) relative to the site's root, which
    the theme then resolves relative to the page."""
    # The i18n plugin sets the list as an attribute of `extra` (which the theme reads first)
    # as well as an item.
    for alternates in (getattr(config.extra, "alternate", None), config.extra.get("alternate")):
        for alternate in alternates or []:
            link = alternate.get("link", "")
            if link.startswith("/") and not link.startswith("//"):
                alternate["link"] = link.lstrip("/") or "./"
    return context


# A paragraph ending with "::" right before a code block.
_LITERAL_MARKER: Final = re.compile(
    r"<p>(?P<text>(?:(?!</p>).)*?)(?P<space>\s*)::</p>(?=\s*<div class=\"highlight\">)",
    re.DOTALL,
)


def on_page_content(html: str, **_: object) -> str:
    """Turn the roles left in a page's HTML into optional autorefs cross-references, and
    reST's ``::`` before a code block into what reST shows."""
    return _LITERAL_MARKER.sub(_literal_marker, _ROLE.sub(_cross_reference, html))


def _literal_marker(paragraph: re.Match[str]) -> str:
    text = paragraph["text"]
    if not text.strip():
        return ""
    return f"<p>{text}</p>" if paragraph["space"] else f"<p>{text}:</p>"


def _cross_reference(role: re.Match[str]) -> str:
    target = role["target"]
    # `~a.b.C` shows only `C`, as in Sphinx.
    shown = target.rsplit(".", 1)[-1] if role["tilde"] else target
    return f'<autoref identifier="{target}" optional><code>{shown}</code></autoref>'
