"""Sessions side by side: the same workloads on each implementation, in one run.

    python benchmarks/sessions.py            # the full run (a few minutes)
    python benchmarks/sessions.py --quick    # a smoke run with 1/10 of the sizes

Prints a markdown table of per-operation medians (of ``--repeats`` runs) and the ratio of
the Agents SDK's ``agents.SQLiteSession`` to ours, then the resident memory over 10,000
``get_items(limit=10)`` calls.

The table is data: ``TARGETS`` lists (implementation, storage) pairs with a picklable
session factory, ``WORKLOADS`` lists timing functions. A new backend (Redis, PostgreSQL)
adds a ``Target`` with ``storage="server"``; every workload runs on it, and the report
compares it with ours on the same storage when there is one.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

from agent_sessions import SQLiteSession

SessionFactory = Callable[[str], Any]
"""Session id -> a session on the target's store (ours or the SDK's; both have the same
async methods). Module-level and picklable, so that child processes can call it too."""


@dataclass(frozen=True)
class Target:
    implementation: str  # "ours", "sdk", ...
    storage: str  # "memory", "file" or "server"
    open_session: SessionFactory


@dataclass(frozen=True)
class Sizes:
    single_adds: int = 10_000
    small_history: int = 1_000
    large_history: int = 100_000
    limited_reads: int = 2_000
    full_reads: int = 3
    pops: int = 1_000
    processes: int = 4
    adds_per_process: int = 1_000
    rss_reads: int = 10_000

    def scaled(self, divisor: int) -> Sizes:
        return Sizes(
            **{
                name: max(1, value // divisor) if name != "processes" else value
                for name, value in vars(self).items()
            }
        )


Workload = Callable[[Target, Sizes, Path], Awaitable[float]]
"""Runs once on a target and returns seconds per operation."""


# -- workloads -----------------------------------------------------------------------------


async def single_item_adds(target: Target, sizes: Sizes, directory: Path) -> float:
    session = target.open_session(_fresh_id("adds"))
    try:
        started = time.perf_counter()
        for index in range(sizes.single_adds):
            await session.add_items([{"role": "user", "content": f"message {index}"}])
        return (time.perf_counter() - started) / sizes.single_adds
    finally:
        await _close(session)


def limited_reads(history: str) -> Workload:
    async def run(target: Target, sizes: Sizes, directory: Path) -> float:
        session = await _history(target, getattr(sizes, history))
        started = time.perf_counter()
        for _ in range(sizes.limited_reads):
            await session.get_items(limit=10)
        return (time.perf_counter() - started) / sizes.limited_reads

    return run


async def full_reads(target: Target, sizes: Sizes, directory: Path) -> float:
    session = await _history(target, sizes.large_history)
    started = time.perf_counter()
    for _ in range(sizes.full_reads):
        items = await session.get_items()
    assert len(items) == sizes.large_history
    return (time.perf_counter() - started) / sizes.full_reads


async def pops(target: Target, sizes: Sizes, directory: Path) -> float:
    session = target.open_session(_fresh_id("pops"))
    try:
        await _fill(session, sizes.large_history)
        started = time.perf_counter()
        for _ in range(sizes.pops):
            await session.pop_item()
        return (time.perf_counter() - started) / sizes.pops
    finally:
        await _close(session)


async def process_writers(target: Target, sizes: Sizes, directory: Path) -> float:
    """Wall time per item while ``sizes.processes`` processes add single items to one
    session at once (process start-up excluded)."""
    session_id = _fresh_id("processes")
    context = multiprocessing.get_context("spawn")
    ready = [context.Event() for _ in range(sizes.processes)]
    start = context.Event()
    results = context.Queue()
    children = [
        context.Process(
            target=_write_in_child,
            args=(
                target.open_session,
                session_id,
                sizes.adds_per_process,
                ready[n],
                start,
                results,
            ),
        )
        for n in range(sizes.processes)
    ]
    for child in children:
        child.start()
    for event in ready:
        await asyncio.to_thread(event.wait)
    start.set()
    spans: list[tuple[float, float]] = [await asyncio.to_thread(results.get) for _ in children]
    for child in children:
        await asyncio.to_thread(child.join)
    wall = max(end for _, end in spans) - min(begin for begin, _ in spans)
    return wall / (sizes.processes * sizes.adds_per_process)


WORKLOADS: dict[str, tuple[Workload, frozenset[str]]] = {
    "add_items, 1 item": (single_item_adds, frozenset({"memory", "file", "server"})),
    "get_items(limit=10), 1k items": (
        limited_reads("small_history"),
        frozenset({"memory", "file", "server"}),
    ),
    "get_items(limit=10), 100k items": (
        limited_reads("large_history"),
        frozenset({"memory", "file", "server"}),
    ),
    "get_items(), 100k items": (full_reads, frozenset({"memory", "file", "server"})),
    "pop_item, 100k items": (pops, frozenset({"memory", "file", "server"})),
    "4 processes, add_items 1 item": (process_writers, frozenset({"file", "server"})),
}
"""Workload name -> (timing function, the storages it applies to)."""


# -- targets -------------------------------------------------------------------------------


def ours_memory(session_id: str) -> SQLiteSession:
    return SQLiteSession(session_id)


def sdk_memory(session_id: str) -> Any:
    import agents

    return agents.SQLiteSession(session_id)


def ours_file(path: str, session_id: str) -> SQLiteSession:
    return SQLiteSession(session_id, path)


def sdk_file(path: str, session_id: str) -> Any:
    import agents

    return agents.SQLiteSession(session_id, path)


def sqlite_targets(directory: Path) -> list[Target]:
    return [
        Target("sdk", "memory", sdk_memory),
        Target("ours", "memory", ours_memory),
        Target("sdk", "file", functools.partial(sdk_file, str(directory / "sdk.db"))),
        Target("ours", "file", functools.partial(ours_file, str(directory / "ours.db"))),
    ]


TARGET_BUILDERS: list[Callable[[Path], list[Target]]] = [sqlite_targets]
"""Each builder returns targets whose stores live in (or are named after) the directory."""


# -- running and reporting -----------------------------------------------------------------


async def run(sizes: Sizes, repeats: int, directory: Path) -> None:
    targets = [target for build in TARGET_BUILDERS for target in build(directory)]
    rows: list[tuple[str, str, dict[str, float]]] = []
    for workload_name, (workload, storages) in WORKLOADS.items():
        for storage in ("memory", "file", "server"):
            applicable = [t for t in targets if t.storage == storage and storage in storages]
            if not applicable:
                continue
            # Interleaved repeats: a machine whose load changes hurts every target alike.
            timings: dict[str, list[float]] = {t.implementation: [] for t in applicable}
            for _ in range(repeats):
                for target in applicable:
                    timings[target.implementation].append(await workload(target, sizes, directory))
            medians = {name: statistics.median(runs) for name, runs in timings.items()}
            print(f"  {workload_name} [{storage}]: {medians}", file=sys.stderr, flush=True)
            rows.append((workload_name, storage, medians))
    print(_table(rows))
    print()
    print(await _memory_table(targets, sizes))
    for session in _histories.values():
        await _close(session)


def _table(rows: list[tuple[str, str, dict[str, float]]]) -> str:
    names = sorted({name for _, _, medians in rows for name in medians}, key=_column_order)
    header = ["workload", "storage", *names, "sdk / ours"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for workload, storage, medians in rows:
        cells = [_format_seconds(medians[name]) if name in medians else "-" for name in names]
        ratio = (
            f"{medians['sdk'] / medians['ours']:.1f}x"
            if "sdk" in medians and "ours" in medians
            else "-"
        )
        lines.append("| " + " | ".join([workload, storage, *cells, ratio]) + " |")
    return "\n".join(lines)


async def _memory_table(targets: list[Target], sizes: Sizes) -> str:
    lines = [
        f"| {sizes.rss_reads:,} x get_items(limit=10) on {sizes.large_history:,} items "
        "| storage | RSS before | peak RSS during | RSS after |",
        "|---|---|---|---|---|",
    ]
    context = multiprocessing.get_context("spawn")
    for target in targets:
        # A fresh process per target, so one's memory never shows in another's figures.
        results = context.Queue()
        child = context.Process(target=_measure_rss_in_child, args=(target, sizes, results))
        child.start()
        before, peak, after = await asyncio.to_thread(results.get)
        await asyncio.to_thread(child.join)
        lines.append(
            f"| {target.implementation} | {target.storage} | {before / 1024:.1f} MiB "
            f"| {peak / 1024:.1f} MiB | {after / 1024:.1f} MiB |"
        )
    return "\n".join(lines)


def _measure_rss_in_child(target: Target, sizes: Sizes, results: Any) -> None:
    async def measure() -> tuple[int, int, int]:
        session = await _history(target, sizes.large_history)
        before = peak = _rss_kib()
        for call in range(sizes.rss_reads):
            await session.get_items(limit=10)
            if call % 100 == 0:
                peak = max(peak, _rss_kib())
        after = _rss_kib()
        await _close(session)
        return before, max(peak, after), after

    results.put(asyncio.run(measure()))


_histories: dict[tuple[str, str, int], Any] = {}


async def _history(target: Target, length: int) -> Any:
    """One session per (target, length) holding ``length`` items, built once per run."""
    key = (target.implementation, target.storage, length)
    if key not in _histories:
        session = target.open_session(_fresh_id(f"history-{length}"))
        await _fill(session, length)
        _histories[key] = session
    return _histories[key]


async def _fill(session: Any, length: int) -> None:
    for start in range(0, length, 1_000):
        await session.add_items(
            [
                {"role": "user", "content": f"message {index}"}
                for index in range(start, min(start + 1_000, length))
            ]
        )


def _write_in_child(
    open_session: SessionFactory,
    session_id: str,
    count: int,
    ready: Event,
    start: Event,
    results: Any,
) -> None:
    async def write() -> tuple[float, float]:
        session = open_session(session_id)
        await session.get_items(limit=1)  # connect before the clock starts
        ready.set()
        await asyncio.to_thread(start.wait)
        begin = time.monotonic()  # CLOCK_MONOTONIC: comparable across processes
        for index in range(count):
            await session.add_items([{"role": "user", "content": f"message {index}"}])
        end = time.monotonic()
        await _close(session)
        return begin, end

    results.put(asyncio.run(write()))


async def _close(session: Any) -> None:
    result = session.close()
    if inspect.isawaitable(result):
        await result


_ids = iter(range(1_000_000))


def _fresh_id(label: str) -> str:
    return f"{label}-{os.getpid()}-{next(_ids)}"


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def _column_order(name: str) -> tuple[int, str]:
    return ({"sdk": 0, "ours": 1}.get(name, 2), name)


def _format_seconds(seconds: float) -> str:
    if seconds >= 0.1:
        return f"{seconds * 1e3:,.0f} ms"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.1f} us"


def _machine() -> str:
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line)
    except (OSError, StopIteration):
        pass
    import importlib.metadata
    import sqlite3

    try:
        sdk = importlib.metadata.version("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        sdk = "not installed"
    return (
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} CPUs ({cpu}), "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"openai-agents {sdk}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes: a smoke run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per median (default 3)")
    arguments = parser.parse_args()
    sizes = Sizes().scaled(10) if arguments.quick else Sizes()
    print(f"Machine: {_machine()}")
    print(f"Medians of {arguments.repeats} runs; per operation.\n")
    with tempfile.TemporaryDirectory(prefix="sessions-bench-") as directory:
        asyncio.run(run(sizes, arguments.repeats, Path(directory)))


if __name__ == "__main__":
    main()
