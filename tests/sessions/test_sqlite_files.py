"""SQLite database files: private by default, readable when read-only."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_sessions import BackendDatabaseMissingError, SessionBackendError, SQLiteStore


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask() -> Iterator[None]:
    """Run with the most permissive umask, so only the library's own mode counts."""
    previous = os.umask(0)
    yield
    os.umask(previous)


async def _add_and_list_files(path: Path) -> dict[str, int]:
    """Write to ``path`` and return the modes of the database's files while it is open."""
    async with SQLiteStore(path) as store:
        await store.session("s").add_items([{"secret": "x"}])
        return {child.name: stat.S_IMODE(child.stat().st_mode) for child in path.parent.iterdir()}


@pytest.mark.usefixtures("umask")
def test_a_new_database_and_its_wal_and_shm_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "private.db"
    modes = asyncio.run(_add_and_list_files(path))
    # the WAL files exist while the store is open
    assert modes == {"private.db": 0o600, "private.db-wal": 0o600, "private.db-shm": 0o600}
    assert _mode(path) == 0o600


@pytest.mark.usefixtures("umask")
def test_an_existing_database_keeps_the_mode_its_owner_gave_it(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    sqlite3.connect(path).close()
    path.chmod(0o640)
    modes = asyncio.run(_add_and_list_files(path))
    assert modes == {"shared.db": 0o640, "shared.db-wal": 0o640, "shared.db-shm": 0o640}


async def test_a_database_that_cannot_be_created_names_the_reason(tmp_path: Path) -> None:
    async with SQLiteStore(tmp_path / "missing-dir" / "x.db") as store:
        with pytest.raises(SessionBackendError, match="cannot create SQLite database"):
            await store.session("s").get_items()


# -- read-only databases ---------------------------------------------------------------------

_READER = """
import asyncio, json, sys
from agent_sessions import BackendDatabaseMissingError, SessionBackendError, SQLiteStore

async def main():
    async with SQLiteStore(sys.argv[1]) as store:
        try:
            result = {"items": await store.session("s").get_items()}
        except Exception as exc:
            print(json.dumps({"read": f"{type(exc).__name__}: {exc}"}))
            return
        result["ids"] = (await store.list_sessions()).session_ids
        for name, write in [
            ("add", lambda: store.session("s").add_items([{"n": 3}])),
            ("pop", lambda: store.session("s").pop_item()),
            ("clear", lambda: store.session("s").clear_session()),
        ]:
            try:
                await write()
                result[name] = "written"
            except Exception as exc:
                result[name] = f"{type(exc).__name__}: {exc}"
    print(json.dumps(result))

asyncio.run(main())
"""


def _read_as_other_user(path: Path) -> dict[str, object]:
    """Run the reader script as a user that cannot write ``path`` (``nobody`` when this
    runs as root, which ignores permissions)."""
    command = [sys.executable, "-c", _READER, str(path)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot drop write permission")
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, object] = json.loads(result.stdout)
    return parsed


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory other users can reach (pytest's tmp_path is private to its user)."""
    directory = Path(tempfile.mkdtemp(prefix="agent-sessions-files-"))
    directory.chmod(0o755)
    yield directory
    directory.chmod(0o755)
    shutil.rmtree(directory)


def _fill(path: Path, *items: dict[str, int]) -> None:
    async def fill() -> None:
        async with SQLiteStore(path) as store:
            await store.session("s").add_items(list(items or [{"n": 1}, {"n": 2}]))

    asyncio.run(fill())


def _assert_read_but_not_written(result: dict[str, object], path: Path) -> None:
    assert result["items"] == [{"n": 1}, {"n": 2}]
    assert result["ids"] == ["s"]
    for write in ("add", "pop", "clear"):
        message = str(result[write])
        assert message.startswith(f"ReadOnlyDatabaseError: SQLite database {path} is read-only")
        assert "nothing was written" in message


@pytest.mark.parametrize("directory_writable", [False, True])
def test_a_read_only_database_can_be_read_and_refuses_writes(
    shared_dir: Path, directory_writable: bool
) -> None:
    path = shared_dir / "ro.db"
    _fill(path)
    path.chmod(0o444)
    shared_dir.chmod(0o777 if directory_writable else 0o555)
    before = path.read_bytes()
    _assert_read_but_not_written(_read_as_other_user(path), path)
    assert path.read_bytes() == before


def test_a_read_only_reader_sees_commits_still_in_a_writers_wal(shared_dir: Path) -> None:
    path = shared_dir / "live.db"
    _fill(path, {"n": 1})
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")  # keep the commit in the -wal
        writer.execute(
            "INSERT INTO agent_sessions_items (session_id, item) VALUES ('s', '{\"n\":2}')"
        )
        assert Path(f"{path}-wal").stat().st_size > 0
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").chmod(0o644)  # readable by others, writable by the owner
        shared_dir.chmod(0o555)
        _assert_read_but_not_written(_read_as_other_user(path), path)
    finally:
        writer.close()


def test_a_read_only_database_without_session_tables_says_so(shared_dir: Path) -> None:
    path = shared_dir / "other.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE unrelated (x)")
    connection.close()
    path.chmod(0o444)
    shared_dir.chmod(0o555)
    message = str(_read_as_other_user(path)["read"])
    assert message.startswith(f"ReadOnlyDatabaseError: SQLite database {path} is read-only")
    assert "holds no agent_sessions_* session tables" in message


# -- create=False: for tools that must not create a database ---------------------------------


def test_a_store_that_may_not_create_refuses_a_missing_file_and_creates_none(
    tmp_path: Path,
) -> None:
    async def use() -> None:
        async with SQLiteStore(tmp_path / "missing.db", create=False) as store:
            with pytest.raises(BackendDatabaseMissingError, match=r"no SQLite database at .*"):
                await store.session("s").get_items()
            with pytest.raises(BackendDatabaseMissingError):
                await store.session("s").add_items([{"n": 1}])

    asyncio.run(use())

    assert list(tmp_path.iterdir()) == []


def test_a_store_that_may_not_create_leaves_a_foreign_database_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "notes.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    connection.close()
    before = path.read_bytes()

    async def use() -> None:
        async with SQLiteStore(path, create=False) as store:
            with pytest.raises(BackendDatabaseMissingError, match="holds no agent-sessions"):
                await store.list_sessions()

    asyncio.run(use())

    assert path.read_bytes() == before
    assert sorted(child.name for child in tmp_path.iterdir()) == ["notes.db"]


async def test_a_store_that_may_not_create_reads_and_writes_an_existing_database(
    tmp_path: Path,
) -> None:
    async with SQLiteStore(tmp_path / "s.db") as store:
        await store.session("s").add_items([{"n": 1}])
    async with SQLiteStore(tmp_path / "s.db", create=False) as store:
        await store.session("s").add_items([{"n": 2}])
        assert await store.session("s").get_items() == [{"n": 1}, {"n": 2}]
