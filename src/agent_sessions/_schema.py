"""The schema-version rules of the SQL backends that record their versions in a migrations
table (``postgres`` and ``sqlalchemy``): which recorded versions are refused, what a
migration does when a table of that name exists already, and the errors with their words.
Each backend keeps its own statements (psycopg or SQLAlchemy) and calls these."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .errors import BackendDatabaseMissingError, ForeignDataError, UnsupportedSchemaError


@dataclass(frozen=True)
class TableVersions:
    """The versions of one store's ``table``, recorded in ``migrations_table``;
    ``supported`` is the newest version this library knows, ``creator`` how a foreign
    table's error names who did not create it."""

    table: str
    migrations_table: str
    supported: int
    creator: str = "agent-sessions"

    def checked(self, recorded: int) -> int:
        """``recorded`` (0: no entry), refusing a version newer than this library's: it
        is never read or rewritten."""
        if recorded > self.supported:
            raise UnsupportedSchemaError(
                f"table {self.table!r} has schema version {recorded}, newer than this "
                f"library's {self.supported}: upgrade agent-sessions instead of using it"
            )
        return recorded

    def require_current(self, recorded: int, where: str) -> None:
        """For a store that creates nothing: refuse a table missing or not up to date."""
        if self.checked(recorded) < self.supported:
            raise BackendDatabaseMissingError(
                f"{where} holds no agent-sessions table {self.table!r}; nothing was changed"
            )

    async def migrate(
        self,
        recorded: int,
        *,
        taken: Callable[[], Awaitable[str | None]],
        apply: Callable[[int], Awaitable[None]],
    ) -> None:
        """Apply every version after ``recorded`` in order (``apply`` makes it and records
        it). Before version 1, ``taken()`` names a table of ours that exists already
        (without an entry, so something else made it): refused, nothing touched."""
        for version in range(self.checked(recorded) + 1, self.supported + 1):
            if version == 1:
                name = await taken()
                if name is not None:
                    raise ForeignDataError(
                        f"table {name!r} exists but was not created by {self.creator} (no "
                        f"entry in {self.migrations_table}); choose another table name"
                    )
            await apply(version)
