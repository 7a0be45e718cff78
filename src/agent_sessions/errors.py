"""Every error this library raises itself, in one hierarchy.

``SessionError`` is the base. Each error says whether a write that failed with it may
still have been stored (``may_have_written``): ``False`` means the write certainly did not
happen (it was refused before anything reached the server), ``True`` means its outcome is
unknown (the connection broke or timed out after the request was sent; the write is
atomic, so it was stored whole or not at all). Read the items back before retrying such a
write, or it may be stored twice.

::

    SessionError
    ├── SessionClosedError          (also RuntimeError)  used after close()
    ├── InvalidItemError            (also TypeError)     an item is not storable
    ├── InvalidSessionIdError       (also ValueError)    an id the backend cannot store
    ├── SessionConfigError          (also ValueError)    a bad option (URL or constructor)
    ├── UnsupportedSchemaError                           data of a newer library version
    ├── ForeignDataError                                 not ours, where a session would be
    └── SessionBackendError         (also ConnectionError) the server failed
        ├── BackendUnreachableError                      no connection (refused, DNS, timeout)
        ├── BackendAuthenticationError                   the server refused the credentials
        ├── BackendDatabaseMissingError                  the named database does not exist
        └── BackendTimeoutError                          no reply within the socket timeout
"""

from __future__ import annotations

__all__ = [
    "BackendAuthenticationError",
    "BackendDatabaseMissingError",
    "BackendTimeoutError",
    "BackendUnreachableError",
    "ForeignDataError",
    "InvalidItemError",
    "InvalidSessionIdError",
    "SessionBackendError",
    "SessionClosedError",
    "SessionConfigError",
    "SessionError",
    "UnsupportedSchemaError",
]


class SessionError(Exception):
    """Base class of the errors this library raises itself.

    ``may_have_written`` is ``True`` only when a write that failed with this error may
    nevertheless have been stored (whole: writes are atomic).
    """

    may_have_written: bool = False

    def __init__(self, *args: object, may_have_written: bool | None = None) -> None:
        super().__init__(*args)
        if may_have_written is not None:
            self.may_have_written = may_have_written


class SessionClosedError(SessionError, RuntimeError):
    """A session or store was used after ``close()``; nothing was written."""


class InvalidItemError(SessionError, TypeError):
    """An item passed to ``add_items`` is not a JSON object this library stores (see
    ``MAX_DEPTH`` in ``agent_sessions._json``); nothing of the batch was stored."""


class InvalidSessionIdError(SessionError, ValueError):
    """A session id the backend cannot store: empty, a lone surrogate (no UTF-8 form), a
    NUL character or too long for PostgreSQL's index. Raised when the session is made."""


class SessionConfigError(SessionError, ValueError):
    """An option of a store or URL is out of range or names something unusable; the
    message names the option."""


class UnsupportedSchemaError(SessionError):
    """The database was written by a newer version of this library; it is left untouched."""


class ForeignDataError(SessionError):
    """Something that is not a session of ours lives where a session would be (a Redis key
    of another type, a table of another shape); it is left untouched."""


class SessionBackendError(SessionError, ConnectionError):
    """A server behind a session failed: it could not be reached, or the connection broke
    or timed out mid-call.

    The message names the server's URL with its password masked; the driver's own error is
    chained as ``__cause__``. ``may_have_written`` says whether a write may have been
    stored. The next call reconnects.
    """


class BackendUnreachableError(SessionBackendError):
    """No connection could be made: refused, unknown host or no answer within the connect
    timeout. Nothing was sent."""


class BackendAuthenticationError(SessionBackendError):
    """The server refused the user name or password. Nothing was written."""


class BackendDatabaseMissingError(SessionBackendError):
    """The database named in the URL does not exist (PostgreSQL) or is out of the server's
    range (a Redis database index). Nothing was written."""


class BackendTimeoutError(SessionBackendError):
    """The server did not answer within the socket timeout; a write may have been stored."""

    may_have_written = True
