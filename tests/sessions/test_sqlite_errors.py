"""SQLite's failures are ``SessionError``s naming the path, the ``sqlite3`` error as
``__cause__`` (issue 25, point 6): a file size limit reached, a file that is not a
database, a table of our name that another program made, a bad table prefix."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent_sessions import (
    ForeignDataError,
    SessionBackendError,
    SessionConfigError,
    SessionError,
    SQLiteSession,
    SQLiteStore,
    open_store,
)

# A child process: a session writing 20 kB items under a 256 kB file size limit
# (RLIMIT_FSIZE; SIGXFSZ ignored, so a write past it fails with EFBIG), as on a full disk.
_FILL_UP = textwrap.dedent(
    """
    import asyncio, json, resource, signal, sqlite3, sys
    from agent_sessions import SQLiteSession, SessionError

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    async def main(path):
        report = {}
        async with SQLiteSession("s", path) as session:
            await session.add_items([{"n": -1}])
            limit = resource.getrlimit(resource.RLIMIT_FSIZE)
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, limit[1]))
            try:
                for n in range(1000):
                    await session.add_items([{"n": n, "blob": "x" * 20000}])
            except Exception as exc:
                report = {
                    "written": n,
                    "types": [kind.__name__ for kind in type(exc).__mro__],
                    "message": str(exc),
                    "cause": type(exc.__cause__).__name__,
                    "sqlite_cause": isinstance(exc.__cause__, sqlite3.Error),
                    "may_have_written": getattr(exc, "may_have_written", None),
                }
            resource.setrlimit(resource.RLIMIT_FSIZE, limit)
            report["stored"] = [item["n"] for item in await session.get_items()]
            await session.add_items([{"n": "after"}])
            report["after"] = (await session.get_items(1))[0]["n"]
        print(json.dumps(report))

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_write_past_the_file_size_limit_is_a_session_error_and_loses_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "full.db"
    done = subprocess.run(
        [sys.executable, "-c", _FILL_UP, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "SessionError" in report["types"], report
    assert "SessionBackendError" in report["types"], report
    assert str(path) in report["message"]
    assert report["sqlite_cause"], report
    assert report["may_have_written"] is False
    # Every acknowledged write is there, the refused one is not, and the next one works.
    assert report["stored"] == [-1, *range(report["written"])]
    assert report["after"] == "after"


async def test_a_file_that_is_not_a_database_raises_foreign_data_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    content = b"these are my notes, not a database\n" * 200
    path.write_bytes(content)
    for items in (None, [{"n": 1}]):  # a read, then a write
        async with SQLiteSession("s", path) as session:
            call = session.get_items() if items is None else session.add_items(items)
            with pytest.raises(ForeignDataError) as caught:
                await call
        assert str(path) in str(caught.value)
        assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes() == content


@pytest.mark.parametrize("table", ["agent_sessions_items", "agent_sessions_sessions"])
async def test_a_foreign_table_of_our_name_raises_foreign_data_error(
    tmp_path: Path, table: str
) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as connection:
        connection.execute(f"CREATE TABLE {table} (name TEXT, price REAL)")
        connection.execute(f"INSERT INTO {table} VALUES ('tea', 2.5)")
    connection.close()
    async with SQLiteSession("s", path) as session:
        with pytest.raises(ForeignDataError, match=table) as caught:
            await session.add_items([{"n": 1}])
    assert str(path) in str(caught.value)
    with sqlite3.connect(path) as connection:
        assert connection.execute(f"SELECT * FROM {table}").fetchall() == [("tea", 2.5)]
        names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    connection.close()
    assert names == {table}  # nothing of ours was created beside it


async def test_a_database_of_our_tables_still_opens(tmp_path: Path) -> None:
    path = tmp_path / "ours.db"
    async with SQLiteSession("s", path) as session:
        await session.add_items([{"n": 1}])
    async with SQLiteStore(path) as store:  # a second store checks the shapes again
        assert await store.session("s").get_items() == [{"n": 1}]


@pytest.mark.parametrize("prefix", ["a;drop", "a%3Bdrop%20table", "1x", "sqlite_x"])
def test_a_bad_table_prefix_in_a_url_raises_session_config_error(
    tmp_path: Path, prefix: str
) -> None:
    with pytest.raises(SessionConfigError, match="table_prefix"):
        open_store(f"sqlite:///{tmp_path / 'x.db'}?table_prefix={prefix}")
    with pytest.raises(SessionConfigError, match="table_prefix"):
        SQLiteSession("s", tmp_path / "x.db", table_prefix=prefix)
    assert not (tmp_path / "x.db").exists()


async def test_every_sqlite_failure_is_a_session_error(tmp_path: Path) -> None:
    """A directory where the file should be: SQLite cannot open it."""
    path = tmp_path / "a-directory.db"
    path.mkdir()
    async with SQLiteSession("s", path) as session:
        with pytest.raises(SessionError) as caught:
            await asyncio.wait_for(session.get_items(), 30)
    assert isinstance(caught.value, SessionBackendError)
    assert str(path) in str(caught.value)
    assert isinstance(caught.value.__cause__, (sqlite3.Error, OSError))
