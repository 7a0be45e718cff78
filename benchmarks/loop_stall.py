"""How long a large read or write stalls the event loop, ours beside the Agents SDK's.

    python benchmarks/loop_stall.py              # 20,000 items, median of 5 runs
    python benchmarks/loop_stall.py --items 5000 --repeats 3

A ticker task sleeps 1 ms in a loop and records the longest gap between its wake-ups
while one ``get_items()`` of the whole session (or one ``add_items`` of the whole batch)
runs beside it; the stall reported is that gap minus the 1 ms sleep. A loop that never
blocks shows a stall near 0; a call that holds the loop for its whole duration shows
about its duration. Each row also gives the call's own wall time, so that a fix that
moves work off the loop can be seen not to slow the call down.

Targets: ours (``agent_sessions.SQLiteSession``) and the SDK's (``agents.SQLiteSession``)
on ``:memory:`` and on a file; ours on Redis and PostgreSQL when ``REDIS_URL`` /
``DATABASE_URL`` are set and reachable.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_sessions import SQLiteSession

TICK = 0.001


@dataclass(frozen=True)
class Target:
    name: str
    open_session: Callable[[str], Any]


class Ticker:
    """Sleeps ``TICK`` in a loop; ``longest`` is the longest gap between wake-ups."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(TICK)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            self.ticks += 1
            last = now

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(TICK * 3)  # running, and its first gaps are behind it
        self.longest = 0.0
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        await asyncio.sleep(TICK * 3)  # a gap that ends after the call is counted too
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def _items(count: int, start: int = 0) -> list[dict[str, Any]]:
    """Agent-like items: user and assistant messages, tool calls and their outputs."""
    items: list[dict[str, Any]] = []
    for index in range(start, start + count):
        kind = index % 4
        if kind == 0:
            items.append({"role": "user", "content": f"question {index}: what is the weather?"})
        elif kind == 1:
            items.append(
                {
                    "type": "function_call",
                    "call_id": f"call_{index}",
                    "name": "get_weather",
                    "arguments": '{"city": "Paris", "unit": "celsius"}',
                }
            )
        elif kind == 2:
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": f"call_{index - 1}",
                    "output": "18 degrees, light rain, wind 12 km/h from the west",
                }
            )
        else:
            items.append(
                {
                    "id": f"msg_{index}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": f"answer {index}: it is 18 degrees with light rain.",
                            "annotations": [],
                        }
                    ],
                }
            )
    return items


async def _close(session: Any) -> None:
    result = session.close()  # ours: awaitable; the SDK's: sync
    if hasattr(result, "__await__"):
        await result


async def measure(target: Target, count: int) -> tuple[float, float, float, float]:
    """(read stall, read seconds, write stall, write seconds) for one fresh session."""
    session = target.open_session(f"stall-{uuid.uuid4().hex}")
    try:
        batch = _items(count)
        # Each timed call starts with the collector's debt paid: a full collection is set
        # off by the allocations of every call before it, and the targets run interleaved,
        # so without this the same target (the one whose turn comes as the threshold is
        # crossed) pays for the others' reads in every round. A collection that the call's
        # own allocations set off is still counted.
        gc.collect()
        async with Ticker() as ticker:
            started = time.perf_counter()
            await session.add_items(batch)
            write_seconds = time.perf_counter() - started
        write_stall = max(0.0, ticker.longest - TICK)
        gc.collect()
        async with Ticker() as ticker:
            started = time.perf_counter()
            items = await session.get_items()
            read_seconds = time.perf_counter() - started
        read_stall = max(0.0, ticker.longest - TICK)
        assert len(items) == count, (target.name, len(items))
        await session.clear_session()
        return read_stall, read_seconds, write_stall, write_seconds
    finally:
        await _close(session)


def targets(directory: Path) -> list[Target]:
    from agents.memory import SQLiteSession as SDKSQLiteSession

    ours_file = str(directory / "ours.db")
    sdk_file = str(directory / "sdk.db")
    found = [
        Target("ours, :memory:", lambda sid: SQLiteSession(sid)),
        Target("SDK, :memory:", lambda sid: SDKSQLiteSession(sid)),
        Target("ours, file", lambda sid: SQLiteSession(sid, ours_file)),
        Target("SDK, file", lambda sid: SDKSQLiteSession(sid, sdk_file)),
    ]
    redis_url = os.environ.get("REDIS_URL")
    if redis_url:
        from agent_sessions.redis import RedisSession

        prefix = f"loop-stall-{uuid.uuid4().hex[:8]}:"
        from agents.extensions.memory import RedisSession as SDKRedisSession

        found.append(
            Target("ours, Redis", lambda sid: RedisSession(sid, url=redis_url, key_prefix=prefix))
        )
        # The SDK's keys, in place (the default of the SDK's forms), and the SDK's own.
        sdk_prefix = f"loop-stall-sdk-{uuid.uuid4().hex[:8]}"
        found.append(
            Target(
                "ours, Redis, SDK layout",
                lambda sid: RedisSession.from_url(sid, url=redis_url, key_prefix=sdk_prefix),
            )
        )
        found.append(
            Target(
                "SDK, Redis",
                lambda sid: SDKRedisSession.from_url(sid, url=redis_url, key_prefix=sdk_prefix),
            )
        )
    database_url = os.environ.get("DATABASE_URL")
    if database_url:
        from agent_sessions.postgres import PostgresSession

        found.append(Target("ours, PostgreSQL", lambda sid: PostgresSession(sid, url=database_url)))
    return found


async def run(count: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as name:
        results: dict[str, list[tuple[float, float, float, float]]] = {}
        chosen = targets(Path(name))
        for _ in range(repeats):
            for target in chosen:  # interleaved: drift on the machine hits every target
                try:
                    results.setdefault(target.name, []).append(await measure(target, count))
                except Exception as exc:  # a server that is not there: say so, go on
                    print(f"{target.name}: skipped ({type(exc).__name__}: {exc})")
                    chosen = [t for t in chosen if t is not target]
                    results.pop(target.name, None)
        gc_state = "on" if gc.isenabled() else "off"
        print(f"{count:,} items, median of {repeats} runs, ms, garbage collector {gc_state}\n")
        print("| target | read: max stall | read: call | write: max stall | write: call |")
        print("|---|---:|---:|---:|---:|")
        for target_name, rows in results.items():
            columns = [statistics.median(row[i] for row in rows) * 1000 for i in range(4)]
            print(f"| {target_name} | " + " | ".join(f"{value:.1f}" for value in columns) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=20_000, help="items per call (20,000)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per median (5)")
    parser.add_argument(
        "--no-gc",
        action="store_true",
        help="with the cyclic garbage collector off: what is left without its full collections",
    )
    arguments = parser.parse_args()
    if arguments.no_gc:
        gc.disable()
    asyncio.run(run(arguments.items, arguments.repeats))


if __name__ == "__main__":
    main()
