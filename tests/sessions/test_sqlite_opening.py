"""How SQLite sessions and stores open: a session's options reaching the store it opens,
the shared file stores, the schema and the layouts. Checked where the mutation run of the
functions of ``sqlite.py`` that its whole-file run never reached (opening, the schema,
the statements) found them unguarded (benchmarks/mutation.py sqlite --only, issue 28).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import agents
import pytest

from agent_sessions import (
    BackendDatabaseMissingError,
    ForeignDataError,
    SessionBackendError,
    SessionClosedError,
    SessionConfigError,
    SessionSettings,
    SQLiteSession,
    SQLiteStore,
    UnsupportedSchemaError,
)
from agent_sessions.sqlite import ReadOnlyDatabaseError, _FileConnections, _MemoryConnection


def memory_connection(store: SQLiteStore) -> sqlite3.Connection:
    connections = store._connections
    assert isinstance(connections, _MemoryConnection)
    return connections._connection


def tables(connection: sqlite3.Connection) -> set[str]:
    rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {name for (name,) in rows} - {"sqlite_sequence"}


# -- a session's own in-memory store takes the session's options ----------------------------


OURS = {"agent_sessions_sessions", "agent_sessions_items"}
THE_SDKS = {"agent_sessions", "agent_messages"}


@pytest.mark.parametrize(
    ("options", "synchronous", "expected_tables"),
    [
        ({}, 1, OURS),
        ({"durable": True}, 2, OURS),  # synchronous FULL (2), not NORMAL (1)
        ({"table_prefix": "p_"}, 1, {"p_sessions", "p_items"}),
        ({"layout": "sdk"}, 1, THE_SDKS),
        ({"sessions_table": "chats"}, 1, {"chats", "agent_messages"}),
        ({"messages_table": "lines"}, 1, {"agent_sessions", "lines"}),
    ],
    ids=["defaults", "durable", "table_prefix", "layout", "sessions_table", "messages_table"],
)
async def test_a_memory_sessions_own_store_has_the_sessions_options(
    options: dict[str, Any], synchronous: int, expected_tables: set[str]
) -> None:
    async with SQLiteSession("s", **options) as session:
        await session.add_items([{"n": 1}])
        connection = memory_connection(session.store)
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == synchronous
        assert tables(connection) == expected_tables
        assert await session.get_items() == [{"n": 1}]


async def test_a_plain_close_of_a_memory_session_closes_its_store_at_once() -> None:
    # Inside a running loop, as the SDK's examples close: not left to a task for later.
    session = SQLiteSession("s")
    await session.add_items([{"n": 1}])
    store = session.store
    session.close()
    assert store.closed
    with pytest.raises(sqlite3.ProgrammingError):  # its connection is closed too
        memory_connection(store).execute("SELECT 1")


# -- file sessions share one store per (path, options) ----------------------------------------


async def test_a_table_prefix_with_or_without_layout_native_is_one_store(tmp_path: Path) -> None:
    # A table_prefix means this library's tables: layout="native" says the same again.
    path = tmp_path / "x.db"
    async with (
        SQLiteSession("a", path, table_prefix="p_") as implied,
        SQLiteSession("b", path, table_prefix="p_", layout="native") as said,
    ):
        assert implied.store is said.store
        assert implied.store.layout == "native"


# -- the layouts -------------------------------------------------------------------------------


def schema(path: Path) -> set[tuple[str, str, str, tuple[tuple[object, ...], ...]]]:
    """Every table and index of ``path``: its kind, name and table, and its columns (a
    table's: name, declared type, not null, primary key; an index's: their names)."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        objects = connection.execute(
            "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
        ).fetchall()
        return {
            (
                kind,
                name,
                table,
                tuple(
                    (row[1], row[2], row[3], row[5]) if kind == "table" else (row[2],)
                    for row in connection.execute(
                        f"PRAGMA {'table_info' if kind == 'table' else 'index_info'}({name})"
                    )
                ),
            )
            for kind, name, table in objects
        }


async def test_the_sdk_layout_creates_on_a_new_file_the_schema_the_sdk_creates(
    tmp_path: Path,
) -> None:
    # The same tables, columns and index (its name too): the SDK's SQLiteSession opening
    # the file later finds what it would have created, and adds nothing.
    agents.SQLiteSession("creator", tmp_path / "theirs.db").close()
    async with SQLiteSession("u", tmp_path / "ours.db", layout="sdk") as ours:
        await ours.add_items([{"role": "user", "content": "hi"}])
    assert schema(tmp_path / "ours.db") == schema(tmp_path / "theirs.db")
    assert (
        "index",
        "idx_agent_messages_session_id",
        "agent_messages",
        (("session_id",), ("id",)),
    ) in schema(tmp_path / "ours.db")


async def test_a_file_holding_our_tables_at_version_0_and_the_sdks_is_ours(tmp_path: Path) -> None:
    # "auto" takes the SDK's tables only when none of ours are there: ours, found without
    # a schema version (written before one was recorded, or reset), are ours, and adopted.
    path = tmp_path / "both.db"
    async with SQLiteSession("u", path, layout="native") as first:
        await first.add_items([{"ours": 1}])
    agents.SQLiteSession("creator", path).close()  # the SDK's tables beside ours
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA user_version = 0")
    async with SQLiteSession("u", path) as again:
        assert await again.get_items() == [{"ours": 1}]
        assert again.store.layout == "native"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 1


async def test_a_file_whose_version_records_our_schema_is_ours_without_our_tables(
    tmp_path: Path,
) -> None:
    # user_version 1 is what this library writes (the SDK writes none): such a file is
    # ours even where only the SDK's tables are left, and gets our tables back.
    path = tmp_path / "ours-once.db"
    agents.SQLiteSession("creator", path).close()
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA user_version = 1")
    async with SQLiteSession("u", path) as session:
        await session.add_items([{"n": 1}])
        assert session.store.layout == "native"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        assert tables(connection) == OURS | THE_SDKS


# -- another program's objects under our names -------------------------------------------------


@pytest.mark.parametrize(
    ("create", "described"),
    [
        (
            "CREATE TABLE agent_sessions_items (name TEXT, price REAL)",
            "table 'agent_sessions_items' (name, price)",
        ),
        (
            "CREATE TABLE t (x); CREATE TRIGGER agent_sessions_items AFTER INSERT ON t "
            "BEGIN SELECT 1; END",
            "trigger 'agent_sessions_items' (no columns)",
        ),
    ],
    ids=["table", "trigger"],
)
async def test_another_programs_object_of_our_name_is_refused_saying_what_it_is(
    tmp_path: Path, create: str, described: str
) -> None:
    path = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.executescript(create)
    async with SQLiteSession("s", path) as session:
        with pytest.raises(ForeignDataError) as caught:
            await session.add_items([{"n": 1}])
    assert str(caught.value) == (
        f"SQLite database {session.store.db_path} holds a {described} that agent-sessions "
        "did not create; it was left untouched: choose another table_prefix"
    )


# -- a file or a directory this process may not write: opened read-only ----------------------


def deny_writing(monkeypatch: pytest.MonkeyPatch, target: Path) -> None:
    """``os.access`` says no to writing ``target`` only (as it does for a user without
    write permission there; root, which this may run as, ignores the mode bits)."""
    real = os.access

    def access(name: Any, mode: int, **kwargs: Any) -> bool:
        if mode & os.W_OK and os.path.realpath(name) == str(target):
            return False
        return real(name, mode, **kwargs)

    monkeypatch.setattr(os, "access", access)


def leave_shm_alone(path: Path) -> None:
    Path(f"{path}-shm").write_bytes(b"")


def wal_files(path: Path) -> list[str]:
    return sorted(name for name in ("-wal", "-shm") if Path(f"{path}{name}").exists())


@pytest.mark.parametrize("denied", ["file", "directory"])
async def test_a_database_whose_file_or_directory_is_not_writable_is_opened_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, denied: str
) -> None:
    # The store opens the file with mode=ro, and SQLite itself refuses the write.
    path = (tmp_path / "chat.db").resolve()
    async with SQLiteStore(path) as store:
        await store.session("s").add_items([{"n": 1}])
    before = path.read_bytes()
    assert wal_files(path) == []  # the last connection closed them
    deny_writing(monkeypatch, path if denied == "file" else path.parent)
    async with SQLiteStore(path) as store:
        session = store.session("s")
        assert await session.get_items() == [{"n": 1}]
        with pytest.raises(ReadOnlyDatabaseError) as caught:
            await session.add_items([{"n": 2}])
        if denied == "directory":
            # -wal and -shm cannot be created there: the file is read as it is
            # (immutable), creating neither
            assert wal_files(path) == []
    assert str(caught.value) == (
        f"SQLite database {path} is read-only (opened read-only: the file or its directory "
        "is not writable by this process); nothing was written"
    )
    assert path.read_bytes() == before


async def test_a_read_only_directory_with_a_writer_at_work_is_read_through_its_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A writer holds the database open: its -wal and -shm files exist, and its latest
    # commits are in the -wal only. A reader of the read-only directory uses them (not
    # immutable, which would read the main file alone).
    path = (tmp_path / "chat.db").resolve()
    async with SQLiteStore(path) as writer:
        await writer.session("s").add_items([{"n": 1}])
        await writer.session("s").add_items([{"n": 2}])
        assert wal_files(path) == ["-shm", "-wal"]
        deny_writing(monkeypatch, path.parent)
        async with SQLiteStore(path) as reader:
            assert await reader.session("s").get_items() == [{"n": 1}, {"n": 2}]


async def test_a_read_only_directory_with_a_leftover_shm_alone_is_read_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A -shm without its -wal (left by a crash): nobody writes through WAL now, and the
    # -wal cannot be created there, so the file is read as it is and nothing is created.
    path = (tmp_path / "chat.db").resolve()
    async with SQLiteStore(path) as store:
        await store.session("s").add_items([{"n": 1}])
    leave_shm_alone(path)
    deny_writing(monkeypatch, path.parent)
    async with SQLiteStore(path) as store:
        assert await store.session("s").get_items() == [{"n": 1}]
    assert wal_files(path) == ["-shm"]


# -- a file that cannot be opened, and connections after close --------------------------------


async def test_a_directory_given_as_the_database_cannot_be_opened_and_says_so(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path) as store:
        with pytest.raises(SessionBackendError) as caught:
            await store.session("s").get_items()
    assert str(caught.value) == (
        f"cannot open SQLite database {store.db_path}: unable to open database file"
    )


def test_file_connections_closed_open_no_new_connection(tmp_path: Path) -> None:
    # A thread asking for its first connection after close() (an operation that passed the
    # store's check just before another thread closed it) gets none.
    path = str((tmp_path / "chat.db").resolve())
    connections = _FileConnections(path, lambda connection: None, create=True)
    assert connections.run_now(lambda connection: connection.execute("SELECT 1").fetchone())
    connections.close()

    def first_in_a_new_thread() -> Exception | None:
        try:
            connections.run_now(lambda connection: None)
        except Exception as exc:  # handed back to the test
            return exc
        return None

    with ThreadPoolExecutor(1) as pool:
        error = pool.submit(first_in_a_new_thread).result()
    assert type(error) is SessionClosedError
    assert str(error) == f"SQLiteStore({path!r}) is closed"


# -- the arguments' checks, with their whole messages ----------------------------------------


class BytesPath:
    """A path-like object whose path is bytes."""

    def __fspath__(self) -> bytes:
        return b"chat.db"


IDENTIFIER = (
    "must be an SQL identifier (a letter or '_', then letters, digits or '_', at most 64 "
    "characters, not starting with 'sqlite_'), got"
)
PREFIX = (
    "table_prefix must be an SQL identifier (a letter or '_', then letters, digits or '_', "
    "at most 48 characters), got"
)


WRONG: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"busy_timeout": "5"}, TypeError, "busy_timeout must be a number of seconds, got '5'"),
    ({"busy_timeout": True}, TypeError, "busy_timeout must be a number of seconds, got True"),
    ({"busy_timeout": -0.5}, SessionConfigError, "busy_timeout must be >= 0 seconds, got -0.5"),
    ({"db_path": 5}, TypeError, "db_path must be a str or a path, got int"),
    ({"db_path": BytesPath()}, TypeError, "db_path must be a str path, got bytes"),
    ({"db_path": ""}, SessionConfigError, "db_path must be ':memory:' or a file path, got ''"),
    ({"table_prefix": "a-b"}, SessionConfigError, f"{PREFIX} 'a-b'"),
    ({"table_prefix": 7}, SessionConfigError, f"{PREFIX} 7"),
    ({"table_prefix": "p" * 49}, SessionConfigError, f"{PREFIX} '{'p' * 49}'"),
    (
        {"table_prefix": "SQLite_x"},
        SessionConfigError,
        "table_prefix must not start with 'sqlite_' (reserved by SQLite): 'SQLite_x'",
    ),
    (
        {"layout": "theirs"},
        SessionConfigError,
        "layout must be one of 'auto', 'native', 'sdk', got 'theirs'",
    ),
    ({"sessions_table": 3}, TypeError, "sessions_table must be a str, got int"),
    ({"messages_table": None}, TypeError, "messages_table must be a str, got NoneType"),
    ({"sessions_table": "a b"}, SessionConfigError, f"sessions_table {IDENTIFIER} 'a b'"),
    (
        {"messages_table": "m" * 65},
        SessionConfigError,
        f"messages_table {IDENTIFIER} '{'m' * 65}'",
    ),
    (
        {"messages_table": "SQLITE_m"},
        SessionConfigError,
        f"messages_table {IDENTIFIER} 'SQLITE_m'",
    ),
    (
        {"table_prefix": "p_", "sessions_table": "s", "messages_table": "m"},
        SessionConfigError,
        "table_prefix names this library's tables, sessions_table, messages_table the "
        "Agents SDK's: give one or the other",
    ),
    (
        {"layout": "native", "messages_table": "m"},
        SessionConfigError,
        "messages_table name the Agents SDK's tables: not with layout='native' "
        "(table_prefix= names this library's)",
    ),
    (
        {"layout": "native", "sessions_table": "s", "messages_table": "m"},
        SessionConfigError,
        "sessions_table, messages_table name the Agents SDK's tables: not with "
        "layout='native' (table_prefix= names this library's)",
    ),
    (
        {"layout": "sdk", "table_prefix": "p_"},
        SessionConfigError,
        "table_prefix names this library's tables: not with layout='sdk' "
        "(sessions_table=/messages_table= name the SDK's)",
    ),
]
"""(arguments, the error, its message): busy_timeout is the store's alone."""


@pytest.mark.parametrize(
    ("arguments", "error", "message", "opened_by"),
    [
        *((*case, "store") for case in WRONG),
        *((*case, "session") for case in WRONG if "busy_timeout" not in case[0]),
    ],
)
def test_a_wrong_argument_is_refused_with_what_was_given_and_what_is_allowed(
    tmp_path: Path, arguments: dict[str, Any], error: type[Exception], message: str, opened_by: str
) -> None:
    arguments = {"db_path": tmp_path / "x.db", **arguments}
    open_it: Any = partial(SQLiteSession, "s") if opened_by == "session" else SQLiteStore
    with pytest.raises(error) as caught:
        open_it(**arguments)
    assert type(caught.value) is error
    assert str(caught.value) == message
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("arguments", "accepted"),
    [
        ({"busy_timeout": 0}, 0.0),
        ({"busy_timeout": 2}, 2.0),
        ({"table_prefix": "p" * 48}, "p" * 48),
        ({"sessions_table": "s" * 64}, "s" * 64),
    ],
)
def test_arguments_at_their_bounds_are_accepted(
    tmp_path: Path, arguments: dict[str, Any], accepted: object
) -> None:
    store = SQLiteStore(tmp_path / "x.db", **arguments)
    [(name, _)] = arguments.items()
    assert getattr(store, name) == accepted
    assert type(getattr(store, name)) is type(accepted)


# -- a session on a given store -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"db_path": "x.db"}, "db_path"),
        ({"durable": True}, "durable"),
        ({"table_prefix": "p_"}, "table_prefix"),
        ({"layout": "native"}, "layout"),
        ({"sessions_table": "chats"}, "sessions_table"),
        ({"messages_table": "lines"}, "messages_table"),
        (
            {"durable": True, "layout": "sdk", "messages_table": "lines"},
            "durable, layout, messages_table",
        ),
    ],
)
async def test_options_given_with_a_store_are_refused_naming_them(
    options: dict[str, Any], named: str
) -> None:
    async with SQLiteStore() as store:
        with pytest.raises(SessionConfigError) as caught:
            SQLiteSession("s", store=store, **options)
    assert str(caught.value) == (
        f"pass either store= or {named}, not both: a session on a given store uses the "
        "store's settings"
    )


async def test_a_session_on_a_store_given_with_the_default_options_uses_the_store(
    tmp_path: Path,
) -> None:
    # The SDK's signature with every default spelled out is no conflict.
    async with SQLiteStore(tmp_path / "x.db") as store:
        session = SQLiteSession(
            "s",
            ":memory:",
            "agent_sessions",
            "agent_messages",
            None,
            durable=False,
            store=store,
            table_prefix="agent_sessions_",
            layout="auto",
        )
        assert session.store is store
        assert session.db_path == store.db_path
        await session.add_items([{"n": 1}])
        assert await store.session("s").get_items() == [{"n": 1}]


def test_a_sessions_db_path_is_what_was_given(tmp_path: Path) -> None:
    given = tmp_path / "x.db"
    session = SQLiteSession("s", given)
    assert session.db_path is given  # as the SDK's SQLiteSession keeps it
    session.close()


# -- the schema is checked once per store --------------------------------------------------------


async def test_after_the_first_operation_each_call_runs_its_own_statements_only() -> None:
    # The first operation checks (and makes) the schema; later ones do not look again.
    async with SQLiteStore() as store:
        session = store.session("s")
        await session.add_items([{"n": 1}])
        statements: list[str] = []
        memory_connection(store).set_trace_callback(statements.append)
        assert await session.get_items() == [{"n": 1}]
        await session.add_items([{"n": 2}])
        memory_connection(store).set_trace_callback(None)
    assert not [s for s in statements if "PRAGMA" in s or "sqlite_master" in s], statements
    assert len(statements) == 5  # the select; BEGIN, the session row, the item, COMMIT


# -- a version of ours without our tables: never created where nothing may be --------------------


def versioned_without_tables(path: Path) -> bytes:
    """A database whose user_version is ours (1) but holding none of our tables."""
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
        connection.execute("PRAGMA user_version = 1")
    return path.read_bytes()


async def test_create_false_refuses_our_version_without_our_tables_and_changes_nothing(
    tmp_path: Path,
) -> None:
    path = (tmp_path / "x.db").resolve()
    before = versioned_without_tables(path)
    async with SQLiteStore(path, create=False) as store:
        with pytest.raises(BackendDatabaseMissingError) as caught:
            await store.session("s").add_items([{"n": 1}])
    assert str(caught.value) == (
        f"SQLite database {path} holds no agent-sessions tables (agent_sessions_sessions, "
        "agent_sessions_items); nothing was changed"
    )
    assert path.read_bytes() == before


async def test_read_only_our_version_without_our_tables_is_refused_as_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = (tmp_path / "x.db").resolve()
    before = versioned_without_tables(path)
    deny_writing(monkeypatch, path)
    async with SQLiteStore(path) as store:
        with pytest.raises(ReadOnlyDatabaseError) as caught:
            await store.session("s").get_items()
    assert str(caught.value) == (
        f"SQLite database {path} is read-only (the file or its directory is not writable by "
        "this process) and holds no agent_sessions_* session tables of this library's "
        "schema; nothing was written"
    )
    assert path.read_bytes() == before


# -- a store's defaults, and a newer schema ------------------------------------------------------


async def test_a_stores_defaults(tmp_path: Path) -> None:
    async with SQLiteStore() as memory, SQLiteStore(tmp_path / "x.db") as file:
        for store in (memory, file):
            assert store.durable is False
            assert store.busy_timeout == 30.0
            assert store.table_prefix == "agent_sessions_"
            assert store.layout == "auto"  # until the first operation looks
            await store.session("s").add_items([{"n": 1}])
            assert store.layout == "native"
        assert memory.db_path == ":memory:"
        assert memory_connection(memory).execute("PRAGMA synchronous").fetchone()[0] == 1


async def test_a_database_of_a_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = (tmp_path / "x.db").resolve()
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA user_version = 2")
    before = path.read_bytes()
    async with SQLiteStore(path) as store:
        with pytest.raises(UnsupportedSchemaError) as caught:
            await store.session("s").get_items()
    assert str(caught.value) == (
        f"SQLite database {path} has schema version 2, newer than version 1 that this "
        "agent-sessions knows; upgrade agent-sessions to use it (the database was left "
        "untouched)"
    )
    assert path.read_bytes() == before


@pytest.mark.parametrize("given", ["by position", "by keyword"])
async def test_a_sessions_settings_are_its_own(tmp_path: Path, given: str) -> None:
    # The SDK's signature: (session_id, db_path, sessions_table, messages_table,
    # session_settings).
    settings = SessionSettings(limit=2)
    if given == "by position":
        session = SQLiteSession(
            "s", tmp_path / "x.db", "agent_sessions", "agent_messages", settings
        )
    else:
        session = SQLiteSession("s", tmp_path / "x.db", session_settings=settings)
    async with session:
        assert session.session_settings.limit == 2
        await session.add_items([{"n": n} for n in range(4)])
        assert await session.get_items() == [{"n": 2}, {"n": 3}]
