"""``python -m lint_rules`` and the ``lint-rules`` console script.

A ``check`` whose recorded run still holds is answered by ``quick.py`` before the command
line (argparse, the configuration, the rules) is imported; any other run is ``cli.main``'s.
"""

from __future__ import annotations

import sys

from lint_rules.quick import answer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 clean, 1 findings, 2 error)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    answered = answer(arguments)
    if answered is not None:
        return answered
    from lint_rules.cli import main as full

    return full(arguments)


if __name__ == "__main__":
    raise SystemExit(main())
