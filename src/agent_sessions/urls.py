"""Session URLs: one string names a backend, its location and its options.

========================================  ==========================================
URL                                       store
========================================  ==========================================
``sqlite://``                             SQLite in memory (private to the store)
``sqlite:///relative/path.db``            SQLite file (``sqlite:////abs/path.db``)
``redis://[user:password@]host[:port]/db`` Redis (also ``rediss://``, ``unix://``)
``postgresql://user@host[:port]/dbname``  PostgreSQL (also ``postgres://``)
``mysql+asyncmy://user@host[:port]/db``   SQLAlchemy (also ``mysql://``, ``mariadb://``,
                                          ``postgresql+psycopg://``,
                                          ``sqlite+aiosqlite:///path.db``, ...)
========================================  ==========================================

Options ride in the query string and are removed before the URL reaches the driver:
``table_prefix`` and ``layout`` (SQLite); ``key_prefix``, ``layout``, ``ttl``,
``connect_timeout`` and ``socket_timeout`` (Redis); ``table``, ``max_connections``, ``timeout``,
``connect_timeout``, ``statement_timeout`` and ``socket_timeout`` (PostgreSQL); ``table``,
``max_connections``, ``timeout`` and ``socket_timeout`` (SQLAlchemy). Any other
query parameter is passed on to the driver byte for byte as written
(``?options=-c%20statement_timeout%3D1234`` reaches libpq as is), and one the driver does
not know (``?bogus=1``) is refused when the store is made. An option whose value is out
of range raises ``SessionConfigError`` (a ``ValueError``) naming it. A user name or
password holding ``/ ? # @ [ ]`` or a stray ``%`` must be percent-encoded (``%2F``, ...):
it is refused with ``SessionConfigError`` (and never shown), since drivers would split
such a URL in different places.

The backends are the rows of :data:`BACKENDS`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ._servers import check_userinfo, mask_url
from .errors import SessionConfigError
from .protocol import SessionABC, SessionSettings, SessionStore

__all__ = ["BACKENDS", "Backend", "open_session", "open_store"]


def _seconds(name: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            return float(text)
        except ValueError:
            raise SessionConfigError(f"{name} must be a number of seconds, got {text!r}") from None

    return parse


def _integer(name: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise SessionConfigError(f"{name} must be an integer, got {text!r}") from None

    return parse


def _text(text: str) -> str:
    return text


@dataclass(frozen=True)
class Backend:
    """One row of :data:`BACKENDS`: everything ``open_store`` and ``open_session`` need.

    ``module`` is imported on first use (so a driver is only needed by those who use
    it); ``store`` and ``session`` name its classes, which take the driver's target as
    their first argument (after the session id) and ``options`` as keywords. ``options``
    maps each query parameter we read to the function that parses its text; every other
    parameter goes to the driver, unless ``driver_options`` is ``False`` (then it is an
    error). ``target`` turns the URL into the driver's target (default: the URL without
    our options). ``creates`` says that the store creates its database or tables on first
    use, unless given ``create=False``.
    """

    name: str
    schemes: tuple[str, ...]
    module: str
    store: str
    session: str
    options: dict[str, Callable[[str], Any]]
    driver_options: bool = True
    target: Callable[[str, Any], str] | None = None
    creates: bool = False


def _sqlite_target(url: str, parts: Any) -> str:
    if parts.netloc:
        raise SessionConfigError(
            f"a SQLite URL has no host: use sqlite:///relative.db or "
            f"sqlite:////absolute.db, got {mask_url(url)!r}"
        )
    path = unquote(parts.path)
    # sqlite:///x.db names the relative path x.db; sqlite:////x.db the absolute /x.db.
    return path[1:] if path else ":memory:"


_TIMEOUTS = {
    "connect_timeout": _seconds("connect_timeout"),
    "socket_timeout": _seconds("socket_timeout"),
}

BACKENDS: tuple[Backend, ...] = (
    Backend(
        name="SQLite",
        schemes=("sqlite",),
        module="sqlite",
        store="SQLiteStore",
        session="SQLiteSession",
        options={"table_prefix": _text, "layout": _text},
        driver_options=False,
        target=_sqlite_target,
        creates=True,
    ),
    Backend(
        name="Redis",
        schemes=("redis", "rediss", "unix"),
        module="redis",
        store="RedisStore",
        session="RedisSession",
        options={"key_prefix": _text, "layout": _text, "ttl": _seconds("ttl"), **_TIMEOUTS},
    ),
    Backend(
        name="PostgreSQL",
        schemes=("postgresql", "postgres"),
        module="postgres",
        store="PostgresStore",
        session="PostgresSession",
        options={
            "table": _text,
            "max_connections": _integer("max_connections"),
            "timeout": _seconds("timeout"),
            "statement_timeout": _seconds("statement_timeout"),
            **_TIMEOUTS,
        },
        creates=True,
    ),
    Backend(
        name="SQLAlchemy",
        schemes=(
            "mysql",
            "mariadb",
            "mysql+asyncmy",
            "mariadb+asyncmy",
            "postgresql+psycopg",
            "postgresql+asyncpg",
            "sqlite+aiosqlite",
        ),
        module="sqlalchemy",
        store="SQLAlchemyStore",
        session="SQLAlchemySession",
        options={
            "table": _text,
            "max_connections": _integer("max_connections"),
            "timeout": _seconds("timeout"),
            "socket_timeout": _seconds("socket_timeout"),
        },
        creates=True,
    ),
)
"""Every backend a URL can name. A new backend adds one row here (see docs/sessions.md)."""


def open_store(url: str, *, create: bool = True) -> SessionStore:
    """A store for ``url``; the caller closes it (``await store.close()``).

    ``create=False`` creates nothing: a SQLite file or PostgreSQL table that does not hold
    this library's sessions yet raises ``BackendDatabaseMissingError`` at the first call
    (a Redis key needs no creating).
    """
    backend, target, options = _parse(url)
    if backend.creates and not create:
        options["create"] = False
    store: SessionStore = _class(backend, backend.store)(target, **options)
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
    session: SessionABC = _class(backend, backend.session)(
        session_id, target, session_settings=session_settings, **options
    )
    return session


def _class(backend: Backend, name: str) -> Any:
    return getattr(importlib.import_module(f".{backend.module}", __package__), name)


def _parse(url: str) -> tuple[Backend, str, dict[str, Any]]:
    """Split ``url`` into (backend, what its driver gets, our options).

    The driver's options reach it byte for byte as written (``%20`` stays ``%20``, never
    re-encoded as ``+``): only our own options are taken out of the query string."""
    if not isinstance(url, str):
        raise TypeError(f"a session URL must be a str, got {type(url).__name__}")
    check_userinfo(url)  # before anything splits the URL: a raw "?" or "#" would cut it
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise SessionConfigError(f"malformed session URL {mask_url(url)!r}: {exc}") from None
    scheme = parts.scheme.lower()
    backend = next((row for row in BACKENDS if scheme in row.schemes), None)
    if backend is None:
        known = ", ".join(f"{scheme}://" for row in BACKENDS for scheme in row.schemes)
        raise SessionConfigError(
            f"unsupported session URL {mask_url(url)!r}: expected one of {known}"
        )
    before_fragment, hash_sign, fragment = url.partition("#")
    base, _, query = before_fragment.partition("?")
    options: dict[str, Any] = {}
    driver_query: list[str] = []
    for piece in query.split("&") if query else []:
        pair = parse_qsl(piece, keep_blank_values=True)
        key, value = pair[0] if pair else (piece, "")
        parse = backend.options.get(key)
        if parse is None:
            if piece:
                driver_query.append(piece)  # as written
        elif key in options:
            raise SessionConfigError(f"option {key} given twice in {mask_url(url)!r}")
        else:
            options[key] = parse(value)
    if driver_query and not backend.driver_options:
        unknown = ", ".join(sorted({unquote(piece.partition("=")[0]) for piece in driver_query}))
        raise SessionConfigError(f"unknown option(s) in {backend.name} URL: {unknown}")
    if backend.target is not None:
        return backend, backend.target(url, parts), options
    target = base + ("?" + "&".join(driver_query) if driver_query else "")
    return backend, target + hash_sign + fragment, options
