"""``python -m lint_rules`` and the ``lint-rules`` console script.

A ``check`` whose recorded run still holds is answered by ``quick.py`` before the command
line (argparse, the configuration, the rules) is imported; any other run is ``cli.main``'s.
A ``check`` whose record no longer holds only because checked files were edited starts
typos on them first, so that it runs while the rest is imported
(``analysis.typos.start_early``).
"""

from __future__ import annotations

import sys

from lint_rules import quick

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 clean, 1 findings, 2 error)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    answered, edited = quick.answer_or_edited(arguments)
    if answered is not None:
        return answered
    if edited:  # typos runs on them while the command line and the rules are imported
        from pathlib import Path

        from lint_rules.analysis.typos import discard_early, start_early

        start_early([Path(file) for file in edited])
        try:
            from lint_rules.cli import main as full

            return full(arguments)
        finally:
            discard_early()
    from lint_rules.cli import main as full

    return full(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
