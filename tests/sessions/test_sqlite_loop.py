"""Large SQLite reads and writes leave the event loop turns (issue 23, point 5).

What the loop gets is measured by ``benchmarks/loop_stall.py``; these tests check the
behaviour without timing: another task runs while a large call is in progress, results
and errors are the same on both sides of the size thresholds, and a cancelled large call
settles (all or nothing, never later)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import SQLiteSession, SQLiteStore
from agent_sessions.protocol import InvalidItemError

LARGE = 5_000


def _items(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"message {index}", "n": index}
        for index in range(start, start + count)
    ]


@pytest.fixture(params=["memory", "file", "sdk"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    if request.param == "memory":
        opened = SQLiteStore(":memory:")
    else:
        opened = SQLiteStore(
            tmp_path / "loop.db", layout="sdk" if request.param == "sdk" else "native"
        )
    async with opened:
        yield opened


class Ticks:
    """A task that counts its turns of the event loop."""

    def __init__(self) -> None:
        self.count = 0

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0)
            self.count += 1


async def _turns_during(call: Any) -> tuple[Any, int]:
    ticks = Ticks()
    task = asyncio.create_task(ticks.run())
    await asyncio.sleep(0)  # the ticker is running
    ticks.count = 0
    try:
        result = await call
        return result, ticks.count
    finally:
        task.cancel()


async def test_other_tasks_run_during_a_large_write_and_a_large_read(store: SQLiteStore) -> None:
    session = store.session("big")
    _, during_write = await _turns_during(session.add_items(_items(LARGE)))
    items, during_read = await _turns_during(session.get_items())
    assert items == _items(LARGE)
    assert during_write > 0
    assert during_read > 0
    latest, during_limited = await _turns_during(session.get_items(limit=LARGE - 1))
    assert latest == _items(LARGE - 1, start=1)
    assert during_limited > 0


async def test_small_calls_stay_inline(store: SQLiteStore) -> None:
    """Below the thresholds nothing is handed to a worker: the call never yields."""
    session = store.session("small")
    _, during_write = await _turns_during(session.add_items(_items(10)))
    await session.add_items(_items(500, start=10))
    items, during_read = await _turns_during(session.get_items())
    assert items == _items(510)
    assert (during_write, during_read) == (0, 0)
    # A short limit on a long session stays inline too.
    await session.add_items(_items(LARGE, start=510))
    latest, during_limited = await _turns_during(session.get_items(limit=10))
    assert latest == _items(10, start=LARGE + 500)
    assert during_limited == 0


@pytest.mark.parametrize("count", [999, 1_000, 1_001, 2_001, 4_001])
@pytest.mark.parametrize("limit", [None, 1, 999, 1_000, 1_001, 3_000, 10_000])
async def test_reads_across_the_thresholds_return_the_latest_items_in_order(
    store: SQLiteStore, count: int, limit: int | None
) -> None:
    session = store.session(f"n{count}")
    await session.add_items(_items(count))
    expected = _items(count) if limit is None else _items(count)[-limit:]
    assert await session.get_items(limit) == expected


@pytest.mark.parametrize("bad_index", [0, 999, 1_000, 1_500, LARGE - 1])
async def test_a_large_batch_with_one_bad_item_stores_nothing_and_names_it(
    store: SQLiteStore, bad_index: int
) -> None:
    session = store.session("bad")
    await session.add_items([{"before": True}])
    batch: list[Any] = _items(LARGE)
    batch[bad_index] = {"value": {1, 2}}
    with pytest.raises(InvalidItemError, match=rf"^item {bad_index} is not a JSON object"):
        await session.add_items(batch)
    assert await session.get_items() == [{"before": True}]


async def test_a_cancelled_large_read_leaves_the_session_usable(store: SQLiteStore) -> None:
    session = store.session("cancel-read")
    await session.add_items(_items(LARGE))
    task = asyncio.create_task(session.get_items())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await session.get_items() == _items(LARGE)


async def test_a_cancelled_large_write_is_all_or_nothing_and_never_lands_later(
    store: SQLiteStore,
) -> None:
    session = store.session("cancel-write")
    for turns in range(6):  # cancelled at different points of the encoding and the write
        await session.clear_session()
        task = asyncio.create_task(session.add_items(_items(LARGE)))
        for _ in range(turns):
            await asyncio.sleep(0)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        stored = len(await session.get_items())
        assert stored in (0, LARGE)
        await asyncio.sleep(0.05)
        assert len(await session.get_items()) == stored


def test_sync_callers_with_asyncio_run_per_call(tmp_path: Path) -> None:
    """The code users write: ``asyncio.run`` per call, a large batch, a file session."""
    path = tmp_path / "sync.db"

    async def write() -> None:
        async with SQLiteSession("s", path) as session:
            await session.add_items(_items(LARGE))

    async def read() -> list[Any]:
        async with SQLiteSession("s", path) as session:
            return await session.get_items()

    asyncio.run(write())
    assert asyncio.run(read()) == _items(LARGE)


@pytest.mark.parametrize(("count", "off_the_loop"), [(10, False), (LARGE, True)])
async def test_a_large_read_decodes_in_the_worker_thread(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, count: int, off_the_loop: bool
) -> None:
    """Where the rows are decoded, seen from the warning a corrupt row logs: the thread
    that logged it is the loop's for a small read, a worker's for a large one."""
    path = tmp_path / "where.db"
    async with SQLiteStore(path) as opened:
        session = opened.session("s")
        await session.add_items(_items(count))
        with sqlite3.connect(path) as raw:
            raw.execute(
                "INSERT INTO agent_sessions_items (session_id, item) VALUES ('s', 'not json')"
            )
        raw.close()
        with caplog.at_level(logging.WARNING, logger="agent_sessions"):
            assert await session.get_items() == _items(count)
        [record] = [r for r in caplog.records if "corrupt" in r.getMessage()]
        assert (record.thread != threading.get_ident()) is off_the_loop
