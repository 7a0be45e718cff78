"""What the server backends (Redis, PostgreSQL) share: the outage error, masked URLs and
the install hint for a missing driver."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from .protocol import SessionError

__all__ = ["SessionBackendError", "mask_url", "missing_driver"]

_PASSWORD_PARAMETER = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]+)")


class SessionBackendError(SessionError, ConnectionError):
    """A server behind a session could not be reached, or the connection broke mid-call.

    The message names the server's URL with its password masked; the driver's own error is
    chained as ``__cause__``. Whether a write that failed this way was stored is unknown
    only when the connection broke after the request was sent: each write is one atomic
    request, so it was stored entirely or not at all. The next call reconnects.
    """


def mask_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: in the user info, and as a
    ``password=`` parameter (libpq's ``key=value`` strings and URL query strings)."""
    url = _PASSWORD_PARAMETER.sub(r"\1***", url)
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port is not None else "")
    return urlunsplit(parts._replace(netloc=netloc))


def missing_driver(backend: str, extra: str, module: str) -> ImportError:
    """The error raised when a backend's optional driver is not installed."""
    return ImportError(
        f"the {backend} backend needs the {module!r} package, which is not installed: "
        f'pip install "agent-sessions[{extra}]"'
    )
