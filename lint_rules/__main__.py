"""``python -m lint_rules`` and the ``lint-rules`` console script."""

from __future__ import annotations

from lint_rules.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
