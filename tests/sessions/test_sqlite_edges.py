"""SQLite at the edges (issue 25, point 7): NUL characters in listing prefixes and ids,
huge page sizes, and a cancelled wait for a lock that leaves no error in the logs."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_sessions import SQLiteStore

IDS = ["a", "a\x00", "a\x00b", "a\x00b\x00c", "a\x01", "ab", "b\x00"]


@pytest.fixture(params=["memory", "file"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore(
        ":memory:" if request.param == "memory" else tmp_path / "nul.db"
    ) as opened:
        for session_id in IDS:
            await opened.session(session_id).add_items([{"id": session_id}])
        yield opened


@pytest.mark.parametrize(
    ("prefix", "expected"),
    [
        ("a\x00", ["a\x00", "a\x00b", "a\x00b\x00c"]),
        ("a\x00b", ["a\x00b", "a\x00b\x00c"]),
        ("a\x00b\x00", ["a\x00b\x00c"]),
        ("\x00", []),
        ("a", ["a", "a\x00", "a\x00b", "a\x00b\x00c", "a\x01", "ab"]),
        ("", sorted(IDS)),
    ],
)
async def test_a_nul_in_the_prefix_finds_the_ids_that_start_with_it(
    store: SQLiteStore, prefix: str, expected: list[str]
) -> None:
    page = await store.list_sessions(prefix=prefix)
    assert (list(page.session_ids), page.next_cursor) == (expected, None)
    # Page by page through ids that hold NULs: each once, in order.
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.list_sessions(prefix=prefix, cursor=cursor, limit=1)
        seen += page.session_ids
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == expected
    for session_id in expected:
        assert await store.session(session_id).get_items() == [{"id": session_id}]


@pytest.mark.parametrize("limit", [2**63 - 1, 2**63, 2**64, 10**30])
async def test_a_huge_page_size_is_clamped(store: SQLiteStore, limit: int) -> None:
    page = await store.list_sessions(limit=limit)
    assert (list(page.session_ids), page.next_cursor) == (sorted(IDS), None)


# A child process: a write waits (in a worker thread) for a lock another process holds,
# and is cancelled by asyncio.wait_for, twice, each in its own asyncio.run; then the
# futures are collected. asyncio logs a future whose exception nobody read when it is
# collected ("Future exception was never retrieved", at ERROR level).
_CANCELLED_WAIT = textwrap.dedent(
    """
    import asyncio, gc, logging, sqlite3, subprocess, sys, time
    from agent_sessions import SQLiteSession

    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    path = sys.argv[1]

    async def prepare():
        async with SQLiteSession("s", path) as session:
            await session.add_items([{"n": 0}])

    asyncio.run(prepare())
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, held by another connection
    session = SQLiteSession("s", path)

    async def cancelled_write():
        try:
            await asyncio.wait_for(session.add_items([{"n": 1}]), 0.3)
        except (TimeoutError, asyncio.TimeoutError):
            print("timed out", flush=True)

    asyncio.run(cancelled_write())
    asyncio.run(cancelled_write())
    time.sleep(0.3)  # the workers gave up
    gc.collect()
    holder.execute("ROLLBACK")
    print(asyncio.run(session.get_items()), flush=True)
    asyncio.run(session.close())
    gc.collect()
    """
)


def test_a_cancelled_wait_for_the_lock_logs_no_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CANCELLED_WAIT, str(tmp_path / "locked.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "timed out\ntimed out\n[{'n': 0}]\n"
    assert "never retrieved" not in done.stderr, done.stderr
    assert "_Abandoned" not in done.stderr, done.stderr
    assert "ERROR" not in done.stderr, done.stderr
