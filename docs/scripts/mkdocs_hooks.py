"""MkDocs hooks for this site (``hooks:`` in mkdocs.yml).

The library's docstrings cross-reference with Sphinx roles (``:class:`~agent_sessions.Runner```),
which the API reference, rendering docstrings as Markdown, would show as literal text. Each
role becomes a cross-reference that mkdocs-autorefs resolves to the object's entry in the
reference, or plain code when the object has none.
"""

from __future__ import annotations

import re
from typing import Final

_ROLE: Final = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|data|exc|obj):<code>(?P<tilde>~?)(?P<target>[\w.]+)</code>"
)


def on_page_content(html: str, **_: object) -> str:
    """Turn the roles left in a page's HTML into optional autorefs cross-references."""
    return _ROLE.sub(_cross_reference, html)


def _cross_reference(role: re.Match[str]) -> str:
    target = role["target"]
    # `~a.b.C` shows only `C`, as in Sphinx.
    shown = target.rsplit(".", 1)[-1] if role["tilde"] else target
    return f'<autoref identifier="{target}" optional><code>{shown}</code></autoref>'
