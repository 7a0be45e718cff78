"""``python -m agent_sessions``: the admin command line (see :mod:`agent_sessions.cli`)."""

from __future__ import annotations

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
