"""SQLite sessions: the embedded default, in memory or in a file.

``SQLiteSession("user_123", "conversations.db")`` is the one-line entry point. A session is
a cheap handle on a :class:`SQLiteStore`, which owns the connections and the schema. File
sessions of one process share one store per (path, options); an in-memory session gets a
private database unless it is given a ``store=``.

What a caller may rely on (besides the contract in :mod:`agent_sessions.protocol`):

- Statements run inline on the calling event loop's thread without waiting for locks. Only
  when SQLite reports the database busy (another process or thread holds the write lock) is
  the operation retried in a worker thread that waits up to ``busy_timeout`` seconds, so the
  event loop is never blocked on someone else's lock. Large calls run in that worker too:
  a read that finds more than 1,000 rows is done again there, and its rows decoded there;
  a write of more than 1,000 items goes there at once (its batch validated and encoded in
  a worker thread before).
- Every write is one transaction; a failed, cancelled or interrupted write is rolled back and
  never leaves a connection inside a transaction. When a call is cancelled, its outcome is
  settled before ``CancelledError`` reaches the caller: a write cancelled while waiting for
  a lock gives up (within 50 ms) and never commits later.
- Durability: WAL with ``synchronous=NORMAL`` survives an application crash but may lose the
  last commits on power loss; ``durable=True`` selects ``synchronous=FULL``.
- Corrupt rows (not a JSON object, written by something else) are skipped with a warning on
  the ``agent_sessions`` logger; they count towards ``get_items(limit)``. ``pop_item``
  discards corrupt rows at the top of the session (with a warning) and removes and returns
  the latest valid item.
- ``PRAGMA user_version`` records the schema version; a database written by a newer,
  unknown schema version is refused with :class:`UnsupportedSchemaError`, never rewritten.
- Privacy: a database file this library creates is created mode 0600 (owner only, whatever
  the umask), and SQLite gives its ``-wal`` and ``-shm`` files the database file's mode.
  An existing file keeps the mode it has (``chmod 600 file.db`` makes it private).
- Read-only: a database whose file, or whose directory, this process cannot write is
  opened read-only (``mode=ro``; also ``immutable=1`` when the directory is read-only and
  the ``-wal``/``-shm`` files SQLite needs for WAL cannot be created). Reads work; every
  write raises :class:`ReadOnlyDatabaseError` and changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from itertools import repeat
from typing import Any, Final, NamedTuple, TypeVar

from ._json import decode_item, decode_items
from .base import MAX_INT64, BaseSession, BaseStore, Release
from .errors import (
    BackendDatabaseMissingError,
    BackendTimeoutError,
    ForeignDataError,
    SessionBackendError,
    SessionConfigError,
)
from .protocol import (
    Item,
    SessionClosedError,
    SessionError,
    SessionSettings,
    SessionsPage,
    UnsupportedSchemaError,
)

__all__ = [
    "DEFAULT_TABLE_PREFIX",
    "SCHEMA_VERSION",
    "ReadOnlyDatabaseError",
    "SQLiteSession",
    "SQLiteStore",
    "UnsupportedSchemaError",
]

SCHEMA_VERSION: Final = 1
"""The schema version this library writes to ``PRAGMA user_version``."""

DEFAULT_TABLE_PREFIX: Final = "agent_sessions_"
"""Tables are ``<prefix>sessions`` and ``<prefix>items``."""

MEMORY: Final = ":memory:"

AUTO: Final = "auto"
NATIVE: Final = "native"
SDK: Final = "sdk"
LAYOUTS: Final = (AUTO, NATIVE, SDK)
"""``layout=``: ``"auto"`` (the SDK's tables if the file holds them and none of ours, else
ours), ``"native"`` (this library's tables) or ``"sdk"`` (the Agents SDK's)."""

SDK_SESSIONS_TABLE: Final = "agent_sessions"
SDK_MESSAGES_TABLE: Final = "agent_messages"
"""The Agents SDK's default table names (its ``SQLiteSession``'s third and fourth argument)."""

_T = TypeVar("_T")
_TABLE_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,47}")
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_HAS_RETURNING = sqlite3.sqlite_version_info >= (3, 35, 0)
_MAX_WAITING_THREADS = 4
# Reads of more rows, and writes of more items, run in a worker thread: inline, SQLite's
# part of a 20,000-item call holds the event loop for 15-20 ms.
_INLINE_ROWS = 1_000
_WAIT_STEP = 0.05  # seconds between checks for cancellation while waiting for a lock
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6  # result codes; sqlite3 names them from 3.11 on
_SQLITE_READONLY = 8
_SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 10, 11, 13, 26
_FILE_MODE = 0o600  # new database files: readable and writable by their owner only


class ReadOnlyDatabaseError(SessionError, PermissionError):
    """A write to a SQLite database opened read-only (its file or directory is not
    writable by this process); nothing was written."""


class SQLiteStore(BaseStore):
    """One SQLite database holding many sessions: owns its connections and schema.

    ``db_path`` is ``":memory:"`` (a private database shared by every thread of this
    process that uses this store) or a file path. ``durable=True`` selects
    ``synchronous=FULL``. ``table_prefix`` names the tables (``<prefix>sessions``,
    ``<prefix>items``; letters, digits and ``_``). ``busy_timeout`` is how many seconds a
    call waits (off the event loop) for a lock held elsewhere before it fails.

    ``layout`` chooses the tables: ``"native"`` this library's; ``"sdk"`` the Agents SDK's
    (``sessions_table``/``messages_table``, by default ``agent_sessions``/``agent_messages``),
    read and written in place so that the SDK's ``SQLiteSession`` on the same file sees
    the same sessions; ``"auto"`` (the default) the SDK's when ``sessions_table`` or
    ``messages_table`` is given another name than the SDK's default, ours when
    ``table_prefix`` is given, else, at the first operation, the SDK's if the file holds
    the SDK's tables and none of ours, ours otherwise (a new file gets ours). ``layout``
    tells the outcome once known.

    Nothing touches the database until the first operation, which creates the file and the
    schema if needed. With ``create=False`` it creates nothing: a missing file, or a
    database without this library's tables, raises ``BackendDatabaseMissingError`` naming
    the path (what tools that only read or change existing sessions want). Usable from any
    thread and event loop; ``close()`` (or ``async with``) releases every connection.
    """

    def __init__(
        self,
        db_path: str | os.PathLike[str] = MEMORY,
        *,
        durable: bool = False,
        table_prefix: str = DEFAULT_TABLE_PREFIX,
        busy_timeout: float = 30.0,
        create: bool = True,
        layout: str = AUTO,
        sessions_table: str = SDK_SESSIONS_TABLE,
        messages_table: str = SDK_MESSAGES_TABLE,
    ) -> None:
        self.db_path = _resolve_db_path(db_path)
        self.durable = durable
        # An in-memory database is private to the store: making its schema creates nothing.
        self._create = bool(create) or self.db_path == MEMORY
        self.table_prefix = _validate_table_prefix(table_prefix)
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, (int, float)):
            raise TypeError(f"busy_timeout must be a number of seconds, got {busy_timeout!r}")
        if busy_timeout < 0:
            raise SessionConfigError(f"busy_timeout must be >= 0 seconds, got {busy_timeout}")
        self.busy_timeout = float(busy_timeout)
        self._layout = _choose_layout(
            layout, self.table_prefix != DEFAULT_TABLE_PREFIX, sessions_table, messages_table
        )
        self.sessions_table, self.messages_table = sessions_table, messages_table
        self._sql: _Statements = (
            _SDKStatements(sessions_table, messages_table)
            if self._layout == SDK
            else _Statements(self.table_prefix)
        )
        self._connections: _Connections = (
            _MemoryConnection(self._configure)
            if self.db_path == MEMORY
            else _FileConnections(self.db_path, self._configure, create=self._create)
        )
        self._schema_ready = False
        self._executor_lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        self._jobs = 0  # submitted to the executor and not done yet

    def __repr__(self) -> str:
        return f"SQLiteStore({self.db_path!r}, durable={self.durable})"

    @property
    def location(self) -> str:
        return self.db_path

    @property
    def layout(self) -> str:
        """``"native"`` (this library's tables), ``"sdk"`` (the Agents SDK's tables, read and
        written in place) or, until the first operation looks at the file, ``"auto"``."""
        return self._layout

    def session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> SQLiteSession:
        """A handle on ``session_id`` in this store. Closing it leaves the store open."""
        return SQLiteSession(session_id, session_settings=session_settings, store=self)

    # -- the store operations (BaseStore's hooks) ------------------------------------------

    async def _get_items(self, session_id: str, limit: int | None) -> list[Item]:
        return await self._run(
            partial(self._read, session_id, limit, _INLINE_ROWS),
            in_worker=partial(self._read, session_id, limit, None),
        )

    async def _get_encoded_items(self, session_id: str, limit: int | None) -> list[str]:
        """:meth:`_get_items`'s rows as their text, not decoded (``get_encoded_items``)."""
        return await self._run(
            partial(self._read_texts, session_id, limit, _INLINE_ROWS),
            in_worker=partial(self._read_texts, session_id, limit, None),
        )

    async def _add_items(self, session_id: str, encoded: list[str]) -> None:
        operation = partial(self._add, session_id, encoded)
        await self._run(operation, inline=len(encoded) <= _INLINE_ROWS)

    async def _pop_item(self, session_id: str) -> Item | None:
        return await self._run(partial(self._pop, session_id))

    async def _clear_session(self, session_id: str) -> None:
        await self._run(partial(self._clear, session_id))

    async def _replace_items(self, session_id: str, encoded: list[str]) -> None:
        operation = partial(self._replace, session_id, encoded)
        await self._run(operation, inline=len(encoded) <= _INLINE_ROWS)

    async def _list_sessions(self, prefix: str, cursor: str | None, limit: int) -> SessionsPage:
        ids = await self._run(partial(self._list_session_ids, prefix, cursor, limit + 1))
        if len(ids) > limit:
            return SessionsPage(session_ids=ids[:limit], next_cursor=ids[limit - 1])
        return SessionsPage(session_ids=ids, next_cursor=None)

    async def _close(self) -> None:
        """Wait for operations running in worker threads, then close every connection."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            # Waiting for a worker may take up to busy_timeout: never on the event loop.
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)
        self._connections.close()

    def _close_now(self) -> None:
        """``_close`` for a ``close()`` never awaited: the connections are closed at once,
        unless worker threads are still running operations (then a thread closes them when
        those are done; no new one starts on a closed store)."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is None:
            self._connections.close()
            return

        def close_when_idle() -> None:
            executor.shutdown()
            self._connections.close()

        if self._jobs == 0:  # idle workers end at once
            close_when_idle()
        else:
            threading.Thread(target=close_when_idle, name="agent-sessions-sqlite-close").start()

    # -- running operations ------------------------------------------------------------

    async def _run(
        self,
        operation: Callable[[sqlite3.Connection], _T],
        *,
        inline: bool = True,
        in_worker: Callable[[sqlite3.Connection], _T] | None = None,
    ) -> _T:
        """Run ``operation`` inline if the database is free, else in a waiting worker.

        ``inline=False`` (a large write) goes to the worker at once. An inline operation
        that finds its work large raises ``_TooLarge``; ``in_worker`` (or ``operation``)
        then runs in the worker, so the event loop is not held for the whole of it."""
        self.check_open()
        if in_worker is None:
            in_worker = operation
        if not self._schema_ready:
            operation = partial(self._with_schema, operation)
            in_worker = partial(self._with_schema, in_worker)
        try:
            if inline:
                try:
                    return self._connections.run_now(operation)
                except (_DatabaseBusy, _TooLarge):
                    pass
            operation = in_worker
            abandoned = threading.Event()
            job = self._submit(operation, time.monotonic() + self.busy_timeout, abandoned)
            # One asyncio future for the job, awaited (through the shield) and, when this
            # call is cancelled, settled: its outcome is always read, so asyncio never logs
            # "Future exception was never retrieved" for a job that gave up.
            waiter = asyncio.wrap_future(job)
            try:
                return await asyncio.shield(waiter)
            except asyncio.CancelledError:
                # Settle the outcome before the caller hears of the cancellation, so that a
                # cancelled write never commits later behind its back: a job not started
                # yet never runs; a running one gives up at its next retry (within
                # _WAIT_STEP) or, if it already holds the lock, finishes its short
                # transaction.
                abandoned.set()
                if not job.cancel():
                    await _settled(waiter)
                raise
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: sqlite3.Error) -> SessionError:
        """The ``SessionError`` for a ``sqlite3`` error, naming the path. Every write is a
        transaction rolled back on failure, so none of them may have been stored."""
        code, text = _error_code(exc), str(exc)
        where = f"SQLite database {self.db_path}"
        if code == _SQLITE_READONLY or "readonly database" in text:
            return self._read_only_error()
        if isinstance(exc, _GaveUpWaiting):
            return BackendTimeoutError(text, may_have_written=False)
        if code == _SQLITE_FULL or "database or disk is full" in text:
            return SessionBackendError(
                f"{where} cannot grow: the disk, the file size limit or max_page_count is "
                f"reached ({text}); nothing was written"
            )
        if code == _SQLITE_IOERR or "disk I/O error" in text:
            return SessionBackendError(
                f"{where} could not be written or read ({text}): is the disk full, or a "
                "file size limit reached? A write that failed was rolled back"
            )
        if code == _SQLITE_NOTADB or "file is not a database" in text:
            return ForeignDataError(
                f"{where} is not a SQLite database ({text}); it was left untouched"
            )
        if code == _SQLITE_CORRUPT or "malformed" in text:
            return SessionBackendError(f"{where} is corrupt ({text})")
        if text.startswith(("cannot create SQLite database", "cannot open SQLite database")):
            return SessionBackendError(text)
        return SessionBackendError(f"{where} failed: {text}")

    def _read_only_error(self) -> ReadOnlyDatabaseError:
        why = (
            "opened read-only: the file or its directory is not writable by this process"
            if self._connections.read_only
            else "SQLite refused to write it"
        )
        return ReadOnlyDatabaseError(
            f"SQLite database {self.db_path} is read-only ({why}); nothing was written"
        )

    def _submit(
        self,
        operation: Callable[[sqlite3.Connection], _T],
        until: float,
        abandoned: threading.Event,
    ) -> Future[_T]:
        """``operation`` as a job of the store's worker threads, counted in ``_jobs`` until
        it is done."""
        with self._executor_lock:
            self.check_open()
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=_MAX_WAITING_THREADS, thread_name_prefix="agent-sessions-sqlite"
                )
            job = self._executor.submit(self._connections.run_waiting, operation, until, abandoned)
            self._jobs += 1
        job.add_done_callback(self._job_done)
        return job

    def _job_done(self, job: Future[Any]) -> None:
        with self._executor_lock:
            self._jobs -= 1

    def _configure(self, connection: sqlite3.Connection) -> None:
        connection.execute("PRAGMA foreign_keys = ON")
        connection.execute(f"PRAGMA synchronous = {'FULL' if self.durable else 'NORMAL'}")

    def _with_schema(
        self, operation: Callable[[sqlite3.Connection], _T], connection: sqlite3.Connection
    ) -> _T:
        if not self._schema_ready:
            self._ensure_schema(connection)
            self._schema_ready = True
        return operation(connection)

    def _ensure_schema(self, connection: sqlite3.Connection) -> None:
        # The version check comes first: a refused database must not even change journal mode.
        version = self._read_schema_version(connection)
        if self._layout == AUTO:
            self._detect_layout(connection, version)
        if self._layout == SDK:
            self._ensure_sdk_schema(connection)
            return
        if not self._create and not (version == SCHEMA_VERSION and self._tables_exist(connection)):
            raise BackendDatabaseMissingError(
                f"SQLite database {self.db_path} holds no agent-sessions tables "
                f"({self.table_prefix}sessions, {self.table_prefix}items); nothing was changed"
            )
        if self._connections.read_only:
            if version == SCHEMA_VERSION and self._tables_exist(connection):
                return  # the journal mode stays as the writers left it
            raise ReadOnlyDatabaseError(
                f"SQLite database {self.db_path} is read-only (the file or its directory is "
                f"not writable by this process) and holds no {self.table_prefix}* session "
                "tables of this library's schema; nothing was written"
            )
        if self.db_path != MEMORY:
            connection.execute("PRAGMA journal_mode = WAL")
        if version == SCHEMA_VERSION and self._tables_exist(connection):
            return
        with _transaction(connection):
            version = self._read_schema_version(connection)
            self._refuse_foreign_tables(connection)
            for statement in self._sql.create_schema:
                connection.execute(statement)
            if version < SCHEMA_VERSION:
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def _detect_layout(self, connection: sqlite3.Connection, version: int) -> None:
        """The SDK's layout if the file holds the SDK's tables and none of ours, else ours."""
        if version == 0 and not self._table_exists(connection, self._sql.items):
            sdk = _SDKStatements(self.sessions_table, self.messages_table)
            if all(
                _columns(connection, name) == columns
                for name, columns in sdk.columns.items()
                if name != sdk.index
            ):
                self._sql, self._layout = sdk, SDK
                return
        self._layout = NATIVE

    def _ensure_sdk_schema(self, connection: sqlite3.Connection) -> None:
        """The Agents SDK's tables, as its ``SQLiteSession`` creates them, used in place."""
        sql = self._sql
        if self._tables_exist(connection):
            self._refuse_foreign_tables(connection)
            if self.db_path != MEMORY and not self._connections.read_only:
                connection.execute("PRAGMA journal_mode = WAL")  # as the SDK's sessions do
            return
        where = f"SQLite database {self.db_path}"
        names = f"{self.sessions_table}, {self.messages_table}"
        if not self._create:
            raise BackendDatabaseMissingError(
                f"{where} holds no Agents SDK session tables ({names}); nothing was changed"
            )
        if self._connections.read_only:
            raise ReadOnlyDatabaseError(
                f"{where} is read-only (the file or its directory is not writable by this "
                f"process) and holds no Agents SDK session tables ({names}); nothing was written"
            )
        if self.db_path != MEMORY:
            connection.execute("PRAGMA journal_mode = WAL")
        with _transaction(connection):
            self._refuse_foreign_tables(connection)
            for statement in sql.create_schema:
                connection.execute(statement)

    def _table_exists(self, connection: sqlite3.Connection, name: str) -> bool:
        found = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        return found is not None

    def _read_schema_version(self, connection: sqlite3.Connection) -> int:
        version: int = connection.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UnsupportedSchemaError(
                f"SQLite database {self.db_path} has schema version {version}, newer than "
                f"version {SCHEMA_VERSION} that this agent-sessions knows; upgrade "
                "agent-sessions to use it (the database was left untouched)"
            )
        return version

    def _refuse_foreign_tables(self, connection: sqlite3.Connection) -> None:
        """Raise ``ForeignDataError`` if a table (or view, index, ...) of our names exists
        with another shape: it belongs to another program and is left untouched."""
        for name, columns in self._sql.columns.items():
            kind = connection.execute(
                "SELECT type FROM sqlite_master WHERE name = ?", (name,)
            ).fetchone()
            if kind is None:
                continue
            found = _columns(connection, name)
            if kind[0] != ("index" if name == self._sql.index else "table") or (
                kind[0] == "table" and found != columns
            ):
                raise ForeignDataError(
                    f"SQLite database {self.db_path} holds a {kind[0]} {name!r} "
                    f"({', '.join(found) or 'no columns'}) that {self._sql.owner} did not "
                    f"create; it was left untouched: choose {self._sql.rename_hint}"
                )

    def _tables_exist(self, connection: sqlite3.Connection) -> bool:
        found = connection.execute(self._sql.count_schema_objects).fetchone()[0]
        return bool(found == self._sql.schema_object_count)

    # -- operations (run on a connection, inside _run) -----------------------------------

    def _add(self, session_id: str, encoded: list[str], connection: sqlite3.Connection) -> None:
        # _transaction spelled out: this is the hot path, and a context manager costs more
        # than the Python work around a one-row insert.
        sql = self._sql
        connection.execute("BEGIN IMMEDIATE")
        try:
            if sql.sdk:  # the SDK's timestamps are SQLite's CURRENT_TIMESTAMP
                connection.execute(sql.add_session, (session_id,))
            else:
                connection.execute(sql.add_session, (session_id, time.time()))
            # A lazy iterator: a list of 20,000 parameter tuples would set off the garbage
            # collector, whose full collections pause every thread, the event loop's too.
            connection.executemany(sql.insert_item, zip(repeat(session_id), encoded))
            connection.execute("COMMIT")
        except BaseException:
            _roll_back(connection)
            raise

    def _read(
        self,
        session_id: str,
        limit: int | None,
        at_most: int | None,
        connection: sqlite3.Connection,
    ) -> list[Item]:
        """The items of ``get_items(limit)``: :meth:`_select`'s rows, decoded (in the worker
        thread when the read runs there)."""
        rows = self._select(session_id, limit, at_most, connection)
        return decode_items(rows, where=partial(self._where, session_id))

    def _read_texts(
        self,
        session_id: str,
        limit: int | None,
        at_most: int | None,
        connection: sqlite3.Connection,
    ) -> list[str]:
        """The rows of ``get_items(limit)`` as text; a row stored as bytes that are not
        UTF-8 is skipped with the warning :func:`decode_item` gives it."""
        rows = self._select(session_id, limit, at_most, connection)
        texts: list[str] = []
        for row_id, raw in rows:
            if isinstance(raw, str):
                texts.append(raw)
                continue
            try:
                texts.append(raw.decode("utf-8"))
            except (UnicodeDecodeError, AttributeError):
                decode_item(raw, where=self._where(session_id, row_id))  # warns
        return texts

    def _select(
        self,
        session_id: str,
        limit: int | None,
        at_most: int | None,
        connection: sqlite3.Connection,
    ) -> list[tuple[int, str | bytes]]:
        """The rows of ``get_items(limit)``, oldest first. With ``at_most``, more than
        ``at_most`` rows raise ``_TooLarge`` (the read is then done again in a worker)."""
        if limit is None:
            cursor = connection.execute(self._sql.select_all, (session_id,))
        else:
            cursor = connection.execute(self._sql.select_latest, (session_id, limit))
        if at_most is None or (limit is not None and limit <= at_most):
            rows = cursor.fetchall()
        else:
            rows = cursor.fetchmany(at_most + 1)
            if len(rows) > at_most:
                cursor.close()
                raise _TooLarge
        if limit is not None:
            rows.reverse()
        return rows

    def _pop(self, session_id: str, connection: sqlite3.Connection) -> Item | None:
        while True:
            if _HAS_RETURNING:
                rows = connection.execute(self._sql.pop_latest, (session_id,)).fetchall()
            else:
                with _transaction(connection):
                    rows = connection.execute(self._sql.select_latest, (session_id, 1)).fetchall()
                    if rows:
                        connection.execute(self._sql.delete_item, (rows[0][0],))
            if not rows:
                return None
            row_id, raw = rows[0]
            item = decode_item(raw, where=self._where(session_id, row_id))
            if item is not None:
                return item

    def _clear(self, session_id: str, connection: sqlite3.Connection) -> None:
        if self._sql.sdk:
            # The SDK's own sessions write without foreign_keys=ON: its rows are deleted
            # one table at a time, as the SDK does, in one transaction.
            with _transaction(connection):
                connection.execute(self._sql.delete_items, (session_id,))
                connection.execute(self._sql.delete_session, (session_id,))
            return
        # The items go with the session row (ON DELETE CASCADE), in one statement.
        connection.execute(self._sql.delete_session, (session_id,))

    def _replace(self, session_id: str, encoded: list[str], connection: sqlite3.Connection) -> None:
        """``_clear`` then ``_add`` in one transaction: the old history or the new one."""
        sql = self._sql
        with _transaction(connection):
            if sql.sdk:
                connection.execute(sql.delete_items, (session_id,))
                connection.execute(sql.delete_session, (session_id,))
            else:
                connection.execute(sql.delete_session, (session_id,))
            if not encoded:
                return
            if sql.sdk:
                connection.execute(sql.add_session, (session_id,))
            else:
                connection.execute(sql.add_session, (session_id, time.time()))
            connection.executemany(sql.insert_item, [(session_id, item) for item in encoded])

    def _list_session_ids(
        self, prefix: str, cursor: str | None, limit: int, connection: sqlite3.Connection
    ) -> list[str]:
        # Session ids are never empty, so "" is before every id.
        parameters = {
            "after": cursor or "",
            "prefix": prefix,
            "upper": _prefix_upper_bound(prefix),
            "prefix_length": len(prefix),
            "limit": limit,
        }
        rows = connection.execute(self._sql.list_sessions, parameters).fetchall()
        return [row[0] for row in rows]

    def _where(self, session_id: str, row_id: int) -> str:
        return f"{self.db_path} table {self._sql.items} id {row_id} (session {session_id!r})"


class SQLiteSession(BaseSession[SQLiteStore]):
    """Conversation history for one session id in SQLite.

    ``SQLiteSession(session_id)`` keeps items in a private in-memory database (lost with the
    session); ``SQLiteSession(session_id, "path.db")`` keeps them in a file, sharing one
    :class:`SQLiteStore` per path inside the process. ``store=`` puts the session on a store
    you manage (then ``db_path``, ``durable`` and ``table_prefix`` come from the store, and
    closing the session leaves the store open). Closing the last session of a shared
    file store closes that store.

    The Agents SDK's signature works as is: ``SQLiteSession(session_id, db_path,
    sessions_table, messages_table, session_settings)``, positionally or by keyword, and
    ``db_path`` is what was given. ``layout`` chooses the tables (see :class:`SQLiteStore`):
    by default a file holding the SDK's tables (``sessions_table``/``messages_table``) and
    none of ours is used in place, in the SDK's layout, as are SDK table names other than
    its defaults; anything else gets this library's tables (named by ``table_prefix``).
    """

    def __init__(
        self,
        session_id: str,
        db_path: str | os.PathLike[str] = MEMORY,
        sessions_table: str = SDK_SESSIONS_TABLE,
        messages_table: str = SDK_MESSAGES_TABLE,
        session_settings: SessionSettings | None = None,
        *,
        durable: bool = False,
        store: SQLiteStore | None = None,
        table_prefix: str = DEFAULT_TABLE_PREFIX,
        layout: str = AUTO,
    ) -> None:
        if store is not None:
            custom_tables = _custom_sdk_tables(sessions_table, messages_table)
            self.refuse_options_with_store(
                db_path=os.fspath(db_path) != MEMORY,
                durable=durable,
                table_prefix=table_prefix != DEFAULT_TABLE_PREFIX,
                layout=layout != AUTO,
                **dict.fromkeys(custom_tables, True),
            )
        own_store = partial(
            _open_store, db_path, durable, table_prefix, layout, sessions_table, messages_table
        )
        super().__init__(
            session_id,
            store=store if store is not None else own_store,
            session_settings=session_settings,
        )
        self.db_path: str | os.PathLike[str] = db_path if store is None else store.db_path

    async def get_encoded_items(self, limit: int | None = None) -> list[str]:
        """The latest ``limit`` items (default ``session_settings.limit``, else all) as the
        JSON text stored for them, oldest first, not decoded (the
        :class:`~agent_sessions.protocol.EncodedRead` capability, for wrappers that decode
        their own text: ``EncryptedSession``). A row written by something else may hold
        any text; one stored as bytes that are not UTF-8 is skipped with a warning."""
        self._check_open()
        limit = self._effective_limit(limit)
        if limit == 0:
            return []
        everything = limit is None or limit > MAX_INT64
        return await self.store._get_encoded_items(self.session_id, None if everything else limit)


def _custom_sdk_tables(sessions_table: object, messages_table: object) -> list[str]:
    """The names of the SDK's table arguments given other values than the SDK's defaults,
    after checking both are SQL identifiers."""
    if sessions_table == SDK_SESSIONS_TABLE and messages_table == SDK_MESSAGES_TABLE:
        return []  # the common case, checked first: sessions are cheap handles
    custom = []
    for name, value, default in (
        ("sessions_table", sessions_table, SDK_SESSIONS_TABLE),
        ("messages_table", messages_table, SDK_MESSAGES_TABLE),
    ):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        if not _TABLE_NAME.fullmatch(value) or value.lower().startswith("sqlite_"):
            raise SessionConfigError(
                f"{name} must be an SQL identifier (a letter or '_', then letters, digits "
                f"or '_', at most 64 characters, not starting with 'sqlite_'), got {value!r}"
            )
        if value != default:
            custom.append(name)
    return custom


def _open_store(
    db_path: str | os.PathLike[str],
    durable: bool,
    table_prefix: str,
    layout: str,
    sessions_table: str,
    messages_table: str,
) -> tuple[SQLiteStore, Release]:
    """A session's own store: a private one in memory, the process's shared one for a file."""
    path = _resolve_db_path(db_path)
    if path == MEMORY:
        store = SQLiteStore(
            MEMORY,
            durable=durable,
            table_prefix=table_prefix,
            layout=layout,
            sessions_table=sessions_table,
            messages_table=messages_table,
        )
        return store, _Release(store.close, lambda: store.close().release_now())
    layout = _choose_layout(
        layout, table_prefix != DEFAULT_TABLE_PREFIX, sessions_table, messages_table
    )
    key = _StoreKey(
        path,
        durable,
        _validate_table_prefix(table_prefix),
        layout,
        sessions_table,
        messages_table,
    )
    shared = _shared_stores.acquire(key)
    return shared, _Release(
        partial(_shared_stores.release, key, shared),
        partial(_shared_stores.release_now, key, shared),
    )


class _Release:
    """What closing a session releases: awaited (``__call__``) or at once (``now``, for a
    ``close()`` that is never awaited, see ``base.Closing``)."""

    __slots__ = ("_release", "now")

    def __init__(self, release: Release, now: Callable[[], None]) -> None:
        self._release = release
        self.now = now

    def __call__(self) -> Awaitable[None]:
        return self._release()


# -- connections ---------------------------------------------------------------------------


class _DatabaseBusy(Exception):
    """The inline attempt found the database locked; retry where waiting is allowed."""


class _TooLarge(Exception):
    """The inline attempt found more rows than ``_INLINE_ROWS``; do it in a worker."""


class _GaveUpWaiting(sqlite3.OperationalError):
    """The database stayed locked for the whole ``busy_timeout``."""


class _Abandoned(Exception):
    """The caller was cancelled while its operation waited for a lock; it never ran."""


async def _settled(waiter: asyncio.Future[Any]) -> None:
    """Wait until the job behind ``waiter`` is done, even through repeated cancellation
    (it is short), and read its outcome."""
    while not waiter.done():
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait({waiter})
    if not waiter.cancelled():
        waiter.exception()  # retrieved: the caller is told of its cancellation instead


class _Connections:
    """How a store gets a connection: now (never waiting) or in a worker (waiting)."""

    read_only = False
    """Whether the database was opened read-only (known after the first connection)."""

    def run_now(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        raise NotImplementedError

    def run_waiting(
        self,
        operation: Callable[[sqlite3.Connection], _T],
        until: float,
        abandoned: threading.Event,
    ) -> _T:
        """Run ``operation``, retrying while the database is busy until ``time.monotonic()``
        reaches ``until`` (then raise the busy error) or ``abandoned`` is set (then raise
        ``_Abandoned``); checked every ``_WAIT_STEP`` seconds."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class _MemoryConnection(_Connections):
    """One connection to a private in-memory database, shared by threads under a lock."""

    def __init__(self, configure: Callable[[sqlite3.Connection], None]) -> None:
        self._connection = sqlite3.connect(MEMORY, isolation_level=None, check_same_thread=False)
        configure(self._connection)
        self._lock = threading.Lock()

    def run_now(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        if not self._lock.acquire(blocking=False):
            raise _DatabaseBusy
        try:
            return operation(self._connection)
        finally:
            self._lock.release()

    def run_waiting(
        self,
        operation: Callable[[sqlite3.Connection], _T],
        until: float,
        abandoned: threading.Event,
    ) -> _T:
        while not self._lock.acquire(timeout=_WAIT_STEP):
            if abandoned.is_set():
                raise _Abandoned
            if time.monotonic() >= until:
                raise _GaveUpWaiting(
                    "in-memory SQLite database is locked by another thread: gave up after "
                    "waiting busy_timeout seconds; nothing was written"
                )
        try:
            return operation(self._connection)
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class _FileConnections(_Connections):
    """Connections per thread: event-loop threads get one that never waits for a lock,
    worker threads one that waits in short steps (to notice cancellation)."""

    def __init__(
        self, path: str, configure: Callable[[sqlite3.Connection], None], *, create: bool
    ) -> None:
        self._path = path
        self._configure = configure
        self._create = create
        self._local = threading.local()
        self._lock = threading.Lock()
        self._opened: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._closed = False
        self._target: str | None = None  # what sqlite3.connect gets, chosen on first open

    def _choose_target(self) -> str:
        """Create a missing database file 0600; open one this process cannot write (or
        whose directory it cannot write) read-only, through a ``file:`` URI."""
        path = self._path
        directory = os.path.dirname(path) or "."
        if not self._create and not os.path.isfile(path):
            raise BackendDatabaseMissingError(f"no SQLite database at {path}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _FILE_MODE)
        except FileExistsError:
            pass
        except OSError as exc:
            raise sqlite3.OperationalError(
                f"cannot create SQLite database {path}: {exc.strerror}"
            ) from exc
        else:
            os.close(fd)  # an empty file is an empty database; SQLite fills it in
            return path
        directory_writable = os.access(directory, os.W_OK | os.X_OK)
        if os.access(path, os.W_OK) and directory_writable:
            return path
        self.read_only = True
        query = "mode=ro"
        if not directory_writable and not (
            os.path.exists(path + "-wal") and os.path.exists(path + "-shm")
        ):
            # WAL needs the -shm file even to read; none can be created here, so nobody
            # is writing through WAL now: read the file as it is.
            query += "&immutable=1"
        return f"file:{urllib.parse.quote(path)}?{query}"

    def run_now(self, operation: Callable[[sqlite3.Connection], _T]) -> _T:
        try:
            connection = getattr(self._local, "now", None) or self._open("now", 0.0)
            return operation(connection)
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise _DatabaseBusy from exc
            raise

    def run_waiting(
        self,
        operation: Callable[[sqlite3.Connection], _T],
        until: float,
        abandoned: threading.Event,
    ) -> _T:
        while True:
            if abandoned.is_set():
                raise _Abandoned
            try:
                connection = getattr(self._local, "waiting", None) or self._open(
                    "waiting", _WAIT_STEP
                )
                return operation(connection)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                if time.monotonic() >= until:
                    raise _GaveUpWaiting(
                        f"SQLite database {self._path} is locked by another connection: "
                        "gave up after waiting busy_timeout seconds; nothing was written"
                    ) from exc

    def close(self) -> None:
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, []
        for _, connection in opened:
            connection.close()

    def _open(self, role: str, busy_timeout: float) -> sqlite3.Connection:
        if self._target is None:
            self._target = self._choose_target()
        try:
            connection = sqlite3.connect(
                self._target,
                timeout=busy_timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=self.read_only,
            )
        except sqlite3.Error as exc:
            raise sqlite3.OperationalError(
                f"cannot open SQLite database {self._path}: {exc}"
            ) from exc
        try:
            self._configure(connection)
        except BaseException:
            connection.close()
            raise
        with self._lock:
            if self._closed:
                connection.close()
                raise SessionClosedError(f"SQLiteStore({self._path!r}) is closed")
            # Threads come and go (asyncio.run per thread, worker pools): close what the
            # finished ones left behind, so connections do not pile up.
            still_used = []
            for thread, opened in self._opened:
                if thread.is_alive():
                    still_used.append((thread, opened))
                else:
                    opened.close()
            still_used.append((threading.current_thread(), connection))
            self._opened = still_used
        setattr(self._local, role, connection)
        return connection


@contextmanager
def _transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` ... ``COMMIT``; rolled back on any exception, including
    cancellation and KeyboardInterrupt, so the connection never stays in a transaction."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
        connection.execute("COMMIT")
    except BaseException:
        _roll_back(connection)
        raise


def _roll_back(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:
        connection.execute("ROLLBACK")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = _error_code(exc)
    if code is not None:
        return code in (_SQLITE_BUSY, _SQLITE_LOCKED)
    message = str(exc)
    return "database is locked" in message or "is locked" in message


def _error_code(exc: sqlite3.Error) -> int | None:
    """The primary SQLite result code of ``exc`` (``None`` before Python 3.11)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else int(code) & 0xFF


# -- shared stores per path ----------------------------------------------------------------


class _StoreKey(NamedTuple):
    """Sessions with equal keys share a store."""

    path: str
    durable: bool
    table_prefix: str
    layout: str
    sessions_table: str
    messages_table: str


class _SharedStores:
    """The process-wide registry of file stores, with reference counts."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stores: dict[_StoreKey, tuple[SQLiteStore, int]] = {}

    def acquire(self, key: _StoreKey) -> SQLiteStore:
        with self._lock:
            store, count = self._stores.get(key, (None, 0))
            if store is None or store.closed:
                store = SQLiteStore(
                    key.path,
                    durable=key.durable,
                    table_prefix=key.table_prefix,
                    layout=key.layout,
                    sessions_table=key.sessions_table,
                    messages_table=key.messages_table,
                )
                count = 0
            self._stores[key] = (store, count + 1)
            return store

    async def release(self, key: _StoreKey, store: SQLiteStore) -> None:
        if self._last_one(key, store):
            await store.close()

    def release_now(self, key: _StoreKey, store: SQLiteStore) -> None:
        """``release`` without awaiting: the last one closes the store's connections now."""
        if self._last_one(key, store):
            store.close().release_now()

    def _last_one(self, key: _StoreKey, store: SQLiteStore) -> bool:
        """Hand one reference back; ``True`` when it was the last (the store must close)."""
        with self._lock:
            registered, count = self._stores.get(key, (None, 0))
            if registered is not store:
                return False  # someone closed it early and a new store took its place
            if count > 1:
                self._stores[key] = (store, count - 1)
                return False
            del self._stores[key]
            return True


_shared_stores = _SharedStores()


# -- SQL -----------------------------------------------------------------------------------


class _Statements:
    """Every statement a store runs, built once from a validated table prefix."""

    sdk = False
    owner = "agent-sessions"
    rename_hint = "another table_prefix"

    def __init__(self, prefix: str) -> None:
        sessions, items = f"{prefix}sessions", f"{prefix}items"
        index = f"{prefix}items_by_session"
        self.items = items
        self.index = index
        self.columns = {
            sessions: ["session_id", "created_at"],
            items: ["id", "session_id", "item"],
            index: ["session_id", "id"],
        }
        self.create_schema = (
            f"""CREATE TABLE IF NOT EXISTS {sessions} (
                session_id TEXT PRIMARY KEY NOT NULL,
                created_at REAL NOT NULL
            )""",
            # A new rowid is always above every existing one in the table, which is all
            # the order needs; AUTOINCREMENT would add a write per insert to never reuse the
            # id of a popped newest item.
            f"""CREATE TABLE IF NOT EXISTS {items} (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL
                    REFERENCES {sessions} (session_id) ON DELETE CASCADE,
                item TEXT NOT NULL
            )""",
            f"CREATE INDEX IF NOT EXISTS {index} ON {items} (session_id, id)",
        )
        self.count_schema_objects = (
            f"SELECT count(*) FROM sqlite_master WHERE name IN ('{sessions}', '{items}', '{index}')"
        )
        self.schema_object_count = 3
        # Leaves an existing row untouched: no page written when the session exists.
        # created_at is for admins; nothing is ordered by time.
        self.add_session = (
            f"INSERT OR IGNORE INTO {sessions} (session_id, created_at) VALUES (?, ?)"
        )
        self.insert_item = f"INSERT INTO {items} (session_id, item) VALUES (?, ?)"
        self.select_all = f"SELECT id, item FROM {items} WHERE session_id = ? ORDER BY id"
        self.select_latest = (
            f"SELECT id, item FROM {items} WHERE session_id = ? ORDER BY id DESC LIMIT ?"
        )
        self.pop_latest = (
            f"DELETE FROM {items} WHERE id = "
            f"(SELECT max(id) FROM {items} WHERE session_id = ?) RETURNING id, item"
        )
        self.delete_item = f"DELETE FROM {items} WHERE id = ?"
        self.delete_session = f"DELETE FROM {sessions} WHERE session_id = ?"
        self.delete_items = f"DELETE FROM {items} WHERE session_id = ?"
        self.list_sessions = _list_sessions_sql(sessions, items)


class _SDKStatements(_Statements):
    """The statements on the Agents SDK's tables (``agent_sessions``/``agent_messages`` or
    the names given), as its ``SQLiteSession`` (openai-agents 0.24) creates and uses them."""

    sdk = True
    owner = "the Agents SDK"
    rename_hint = "other sessions_table/messages_table names"

    def __init__(self, sessions: str, messages: str) -> None:
        index = f"idx_{messages}_session_id"
        self.items = messages
        self.index = index
        self.columns = {
            sessions: ["session_id", "created_at", "updated_at"],
            messages: ["id", "session_id", "message_data", "created_at"],
            index: ["session_id", "id"],
        }
        # The SDK's own DDL, so that its sessions and ours create the same tables.
        self.create_schema = (
            f"""CREATE TABLE IF NOT EXISTS {sessions} (
                session_id TEXT PRIMARY KEY,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
            )""",
            f"""CREATE TABLE IF NOT EXISTS {messages} (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL,
                message_data TEXT NOT NULL,
                created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
                FOREIGN KEY (session_id) REFERENCES {sessions} (session_id)
                    ON DELETE CASCADE
            )""",
            f"CREATE INDEX IF NOT EXISTS {index} ON {messages} (session_id, id)",
        )
        self.count_schema_objects = (
            f"SELECT count(*) FROM sqlite_master WHERE name IN ('{sessions}', '{messages}', "
            f"'{index}')"
        )
        self.schema_object_count = 3
        # One statement for the SDK's INSERT OR IGNORE and its UPDATE of updated_at.
        self.add_session = (
            f"INSERT INTO {sessions} (session_id) VALUES (?) ON CONFLICT (session_id) "
            "DO UPDATE SET updated_at = CURRENT_TIMESTAMP"
        )
        self.insert_item = f"INSERT INTO {messages} (session_id, message_data) VALUES (?, ?)"
        self.select_all = (
            f"SELECT id, message_data FROM {messages} WHERE session_id = ? ORDER BY id"
        )
        self.select_latest = (
            f"SELECT id, message_data FROM {messages} WHERE session_id = ? ORDER BY id DESC LIMIT ?"
        )
        self.pop_latest = (
            f"DELETE FROM {messages} WHERE id = "
            f"(SELECT max(id) FROM {messages} WHERE session_id = ?) RETURNING id, message_data"
        )
        self.delete_item = f"DELETE FROM {messages} WHERE id = ?"
        self.delete_session = f"DELETE FROM {sessions} WHERE session_id = ?"
        self.delete_items = f"DELETE FROM {messages} WHERE session_id = ?"
        self.list_sessions = _list_sessions_sql(sessions, messages)


def _list_sessions_sql(sessions: str, items: str) -> str:
    return (
        f"SELECT s.session_id FROM {sessions} AS s "
        "WHERE s.session_id > :after AND s.session_id >= :prefix "
        "AND (:upper IS NULL OR s.session_id < :upper) "
        # [prefix, upper) holds exactly the ids starting with prefix (TEXT compares
        # as bytes, NULs included: length() and substr() would stop at a NUL).
        "AND (:upper IS NOT NULL OR substr(s.session_id, 1, :prefix_length) = :prefix) "
        f"AND EXISTS (SELECT 1 FROM {items} AS i WHERE i.session_id = s.session_id) "
        "ORDER BY s.session_id LIMIT :limit"
    )


def _columns(connection: sqlite3.Connection, name: str) -> list[str]:
    return [row[1] for row in connection.execute(f"PRAGMA table_info({name})")]


def _choose_layout(
    layout: object, prefix_given: bool, sessions_table: object, messages_table: object
) -> str:
    """The layout asked for: ``layout`` checked against the other arguments; custom SDK
    table names select the SDK's, a ``table_prefix`` ours; else ``"auto"``."""
    if layout not in LAYOUTS:
        raise SessionConfigError(
            f"layout must be one of {', '.join(map(repr, LAYOUTS))}, got {layout!r}"
        )
    custom = _custom_sdk_tables(sessions_table, messages_table)
    if custom and prefix_given:
        raise SessionConfigError(
            f"table_prefix names this library's tables, {', '.join(custom)} the Agents "
            "SDK's: give one or the other"
        )
    if custom and layout == NATIVE:
        raise SessionConfigError(
            f"{', '.join(custom)} name the Agents SDK's tables: not with layout='native' "
            "(table_prefix= names this library's)"
        )
    if prefix_given and layout == SDK:
        raise SessionConfigError(
            "table_prefix names this library's tables: not with layout='sdk' "
            "(sessions_table=/messages_table= name the SDK's)"
        )
    if layout == AUTO and custom:
        return SDK
    if layout == AUTO and prefix_given:
        return NATIVE
    return str(layout)


def _resolve_db_path(db_path: str | os.PathLike[str]) -> str:
    if not isinstance(db_path, (str, os.PathLike)):
        raise TypeError(f"db_path must be a str or a path, got {type(db_path).__name__}")
    path = os.fspath(db_path)
    if not isinstance(path, str):
        raise TypeError(f"db_path must be a str path, got {type(path).__name__}")
    if path == MEMORY:
        return MEMORY
    if not path:
        raise SessionConfigError("db_path must be ':memory:' or a file path, got ''")
    return os.path.realpath(path)


def _validate_table_prefix(table_prefix: str) -> str:
    if not isinstance(table_prefix, str) or not _TABLE_PREFIX.fullmatch(table_prefix):
        raise SessionConfigError(
            f"table_prefix must be an SQL identifier (a letter or '_', then letters, digits "
            f"or '_', at most 48 characters), got {table_prefix!r}"
        )
    if table_prefix.lower().startswith("sqlite_"):
        raise SessionConfigError(
            f"table_prefix must not start with 'sqlite_' (reserved by SQLite): {table_prefix!r}"
        )
    return table_prefix


def _prefix_upper_bound(prefix: str) -> str | None:
    """The smallest string greater than every string starting with ``prefix`` (``None``
    when there is none). SQLite compares TEXT as UTF-8 bytes, i.e. by code point."""
    stripped = prefix.rstrip("\U0010ffff")
    if not stripped:
        return None
    following = ord(stripped[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # surrogates cannot be stored: skip over them
        following = 0xE000
    return stripped[:-1] + chr(following)
