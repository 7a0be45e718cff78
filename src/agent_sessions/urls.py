"""Session URLs: one string names a backend, its location and its options.

========================================  ==========================================
URL                                       store
========================================  ==========================================
``sqlite://``                             SQLite in memory (private to the store)
``sqlite:///relative/path.db``            SQLite file (``sqlite:////abs/path.db``)
``redis://[user:password@]host[:port]/db`` Redis (also ``rediss://``, ``unix://``)
``postgresql://user@host[:port]/dbname``  PostgreSQL (also ``postgres://``)
========================================  ==========================================

Options ride in the query string and are removed before the URL reaches the driver:
``table_prefix`` (SQLite), ``key_prefix`` and ``ttl`` (Redis), ``table`` (PostgreSQL).
Any other query parameter is passed on to the driver (``?sslmode=require``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from ._servers import mask_url
from .protocol import SessionABC, SessionSettings, SessionStore

if TYPE_CHECKING:
    from .postgres import PostgresSession, PostgresStore
    from .redis import RedisSession, RedisStore
    from .sqlite import SQLiteSession, SQLiteStore

__all__ = ["open_session", "open_store"]

_REDIS_SCHEMES = ("redis", "rediss", "unix")
_POSTGRES_SCHEMES = ("postgresql", "postgres")
_OPTIONS = {
    "sqlite": {"table_prefix"},
    "redis": {"key_prefix", "ttl"},
    "postgres": {"table"},
}


def open_store(url: str) -> SessionStore:
    """A store for ``url``; the caller closes it (``await store.close()``)."""
    backend, target, options = _parse(url)
    store: SQLiteStore | RedisStore | PostgresStore
    if backend == "sqlite":
        from .sqlite import SQLiteStore

        store = SQLiteStore(target, **options)
    elif backend == "redis":
        from .redis import RedisStore

        store = RedisStore(target, **options)
    else:
        from .postgres import PostgresStore

        store = PostgresStore(target, **options)
    return store


def open_session(
    url: str, session_id: str, *, session_settings: SessionSettings | None = None
) -> SessionABC:
    """A session on ``url`` that owns its connection: ``await session.close()`` (or
    ``async with``) releases it.

    SQLite file sessions of one process share one store per path, as ``SQLiteSession``
    does; an in-memory ``sqlite://`` session is private to itself.
    """
    backend, target, options = _parse(url)
    session: SQLiteSession | RedisSession | PostgresSession
    if backend == "sqlite":
        from .sqlite import SQLiteSession

        session = SQLiteSession(session_id, target, session_settings=session_settings, **options)
    elif backend == "redis":
        from .redis import RedisSession

        session = RedisSession(session_id, target, session_settings=session_settings, **options)
    else:
        from .postgres import PostgresSession

        session = PostgresSession(session_id, target, session_settings=session_settings, **options)
    return session


def _parse(url: str) -> tuple[str, str, dict[str, Any]]:
    """Split ``url`` into (backend, what its driver gets, our options)."""
    if not isinstance(url, str):
        raise TypeError(f"a session URL must be a str, got {type(url).__name__}")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        backend = "sqlite"
    elif scheme in _REDIS_SCHEMES:
        backend = "redis"
    elif scheme in _POSTGRES_SCHEMES:
        backend = "postgres"
    else:
        raise ValueError(
            f"unsupported session URL {mask_url(url)!r}: expected sqlite://, "
            "redis://, rediss://, unix://, postgresql:// or postgres://"
        )
    query = parse_qsl(parts.query, keep_blank_values=True)
    allowed = _OPTIONS[backend]
    options: dict[str, Any] = {key: value for key, value in query if key in allowed}
    driver_query = [(key, value) for key, value in query if key not in allowed]
    if "ttl" in options:
        options["ttl"] = _seconds(options["ttl"])
    if backend == "sqlite":
        if driver_query:
            unknown = ", ".join(sorted({key for key, _ in driver_query}))
            raise ValueError(f"unknown option(s) in SQLite URL: {unknown}")
        if parts.netloc:
            raise ValueError(
                f"a SQLite URL has no host: use sqlite:///relative.db or "
                f"sqlite:////absolute.db, got {url!r}"
            )
        path = unquote(parts.path)
        # sqlite:///x.db names the relative path x.db; sqlite:////x.db the absolute /x.db.
        return backend, path[1:] if path else ":memory:", options
    target = urlunsplit(parts._replace(query=urlencode(driver_query)))
    return backend, target, options


def _seconds(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"ttl must be a number of seconds, got {text!r}") from None
