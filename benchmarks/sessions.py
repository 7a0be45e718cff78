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

Wrappers (``WRAPPER_BUILDERS``: ``EncryptedSession``, ours over our SQLite beside the SDK's
over its SQLite; ``TrimmingSession`` and ``CompactingSession``, ours only;
``BranchingSession`` beside the SDK's ``AdvancedSQLiteSession``) run
``WRAPPER_WORKLOADS`` on the plain and the wrapped session in one interleaved run, and
report the overhead of the wrapper (``--wrappers-only``: just those).

The server rows (``--servers-only``) put ours beside the SDK's ``RedisSession`` and
``SQLAlchemySession`` on the same servers, then each ``EncryptedSession`` over its own
plain session there: ours over our backend, the SDK's over the SDK's, all four interleaved
(``--encrypted-servers``: just those).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib
import inspect
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agent_sessions import SQLiteSession

SessionFactory = Callable[[str], Any]
"""Session id -> a session on the target's store (ours or the SDK's; both have the same
async methods). Module-level and picklable, so that child processes can call it too."""


@dataclass(frozen=True)
class Target:
    implementation: str  # "ours", "sdk", ...
    storage: str  # "memory", "file" (each one's default), "file FULL" or "server"
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
    "add_items, 1 item": (single_item_adds, frozenset({"memory", "file", "file FULL", "server"})),
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
    "4 processes, add_items 1 item": (
        process_writers,
        frozenset({"file", "file FULL", "server"}),
    ),
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


def ours_durable_file(path: str, session_id: str) -> SQLiteSession:
    return SQLiteSession(session_id, path, durable=True)


def ours_sdk_layout_file(path: str, session_id: str) -> SQLiteSession:
    """Ours on the SDK's tables, read and written in place (``layout="sdk"``)."""
    return SQLiteSession(session_id, path, layout="sdk")


def sqlite_targets(directory: Path) -> list[Target]:
    return [
        Target("sdk", "memory", sdk_memory),
        Target("ours", "memory", ours_memory),
        Target("sdk", "file", functools.partial(sdk_file, str(directory / "sdk.db"))),
        Target("ours", "file", functools.partial(ours_file, str(directory / "ours.db"))),
        Target(
            "ours, SDK layout",
            "file",
            functools.partial(ours_sdk_layout_file, str(directory / "ours-sdk-layout.db")),
        ),
        # The SDK's default (WAL, synchronous=FULL: an fsync per commit) against ours made
        # as durable, so that the write rows compare like with like too.
        Target("sdk", "file FULL", functools.partial(sdk_file, str(directory / "sdk-full.db"))),
        Target(
            "ours",
            "file FULL",
            functools.partial(ours_durable_file, str(directory / "ours-full.db")),
        ),
    ]


TARGET_BUILDERS: list[Callable[[Path], list[Target]]] = [sqlite_targets]
"""Each builder returns targets whose stores live in (or are named after) the directory."""


# -- wrappers --------------------------------------------------------------------------------
# A wrapper's cost is the difference between a session and the same session wrapped, on the
# same storage, measured in one interleaved run. The SDK's own wrapper over the SDK's own
# SQLiteSession gives its overhead beside ours.

BENCH_TTL = 3600  # both wrappers check a TTL, as a deployment would (the SDK's always does)


@dataclass(frozen=True)
class WrapperPair:
    wrapper: str  # "EncryptedSession", ...
    plain: Target
    wrapped: Target


BASELINE_MODULES: dict[str, Any] = {}
"""``--baseline REV``: the wrapper modules as they were at that git revision, loaded
beside the current ones (``agent_sessions._baseline_<name>``, relative imports resolved in
today's package), so that before and after are measured in one run."""


def load_baseline(revision: str, directory: Path) -> None:
    import importlib.util
    import subprocess

    root = Path(__file__).resolve().parent.parent
    for name in ("encrypted", "bounded"):
        source = subprocess.run(
            ["git", "show", f"{revision}:src/agent_sessions/{name}.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        path = directory / f"baseline_{name}.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"agent_sessions._baseline_{name}", path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        module.__package__ = "agent_sessions"
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        BASELINE_MODULES[name] = module
    BASELINE_MODULES["revision"] = revision


def _wrapper_module(name: str, baseline: bool) -> Any:
    if baseline:
        return BASELINE_MODULES[name]
    return importlib.import_module(f"agent_sessions.{name}")


def ours_encrypted(
    key: str,
    plain: SessionFactory,
    session_id: str,
    *,
    baseline: bool = False,
    cache_bytes: int | None = None,
) -> Any:
    module = _wrapper_module("encrypted", baseline)
    options = {} if cache_bytes is None else {"cache_bytes": cache_bytes}
    return module.EncryptedSession(plain(session_id), key=key, ttl=BENCH_TTL, **options)


def sdk_encrypted(key: str, plain: SessionFactory, session_id: str) -> Any:
    from agents.extensions.memory import EncryptedSession

    return EncryptedSession(session_id, plain(session_id), encryption_key=key, ttl=BENCH_TTL)


def encrypted_pairs(directory: Path) -> list[WrapperPair]:
    from agent_sessions.encrypted import generate_key

    key = generate_key()  # also a valid Fernet key: the SDK's wrapper takes it as is
    pairs = []
    for plain in sqlite_targets(directory):
        if plain.storage == "file FULL" or plain.implementation not in ("ours", "sdk"):
            continue  # fsync dominates: the wrapper's cost is what "file" shows
        wrap = ours_encrypted if plain.implementation == "ours" else sdk_encrypted
        wrapped = Target(
            f"{plain.implementation} encrypted",
            plain.storage,
            functools.partial(wrap, key, plain.open_session),
        )
        pairs.append(WrapperPair("EncryptedSession", plain, wrapped))
        if plain.implementation == "ours" and BASELINE_MODULES:
            before = Target(
                f"ours encrypted @{BASELINE_MODULES['revision']}",
                plain.storage,
                functools.partial(ours_encrypted, key, plain.open_session, baseline=True),
            )
            pairs.append(WrapperPair("EncryptedSession", plain, before))
    return pairs


BENCH_MAX_ITEMS = 50  # a trimming bound above the reads' limit=10: the view is computed
BENCH_THRESHOLD = 1_000_000  # compaction never triggers: its wrapper's cost on each call


def ours_trimming(plain: SessionFactory, session_id: str, *, baseline: bool = False) -> Any:
    module = _wrapper_module("bounded", baseline)
    return module.TrimmingSession(plain(session_id), max_items=BENCH_MAX_ITEMS)


def ours_compacting(plain: SessionFactory, session_id: str, *, baseline: bool = False) -> Any:
    from agent_sessions.models import OfflineModel

    module = _wrapper_module("bounded", baseline)
    return module.CompactingSession(
        plain(session_id), model=OfflineModel(), threshold=BENCH_THRESHOLD
    )


def ours_branching(plain: SessionFactory, session_id: str) -> Any:
    """Our BranchingSession, its branches and log opened by ``plain`` (the main branch is
    the session ``session_id`` itself)."""
    from agent_sessions.branches import BranchingSession

    return BranchingSession(plain, session_id)


def sdk_advanced(path: str, session_id: str) -> Any:
    """The SDK's AdvancedSQLiteSession (branches and usage, SQLite only): its own tables
    beside the SDK's plain ones, in the same database."""
    from agents.extensions.memory import AdvancedSQLiteSession

    return AdvancedSQLiteSession(session_id=session_id, db_path=path, create_tables=True)


def bounded_pairs(directory: Path) -> list[WrapperPair]:
    """Trimming and compaction, ours only: the SDK has no trimming wrapper, and its
    compaction needs OpenAI's API. Branches: our BranchingSession over our SQLiteSession
    beside the SDK's AdvancedSQLiteSession, each against its own plain session."""
    pairs = []
    for plain in sqlite_targets(directory):
        if plain.storage == "file FULL" or plain.implementation not in ("ours", "sdk"):
            continue
        if plain.implementation == "sdk":
            path = ":memory:" if plain.storage == "memory" else str(directory / "sdk.db")
            advanced = Target(
                "sdk AdvancedSQLiteSession", plain.storage, functools.partial(sdk_advanced, path)
            )
            pairs.append(WrapperPair("branches", plain, advanced))
            continue
        branching = Target(
            "ours BranchingSession",
            plain.storage,
            functools.partial(ours_branching, plain.open_session),
        )
        pairs.append(WrapperPair("branches", plain, branching))
        for name, wrap in (
            ("TrimmingSession", ours_trimming),
            ("CompactingSession", ours_compacting),
        ):
            wrapped = Target(
                f"ours {name}", plain.storage, functools.partial(wrap, plain.open_session)
            )
            pairs.append(WrapperPair(name, plain, wrapped))
            if BASELINE_MODULES:
                before = Target(
                    f"ours {name} @{BASELINE_MODULES['revision']}",
                    plain.storage,
                    functools.partial(wrap, plain.open_session, baseline=True),
                )
                pairs.append(WrapperPair(name, plain, before))
    return pairs


WRAPPER_BUILDERS: list[Callable[[Path], list[WrapperPair]]] = [encrypted_pairs, bounded_pairs]

WRAPPER_WORKLOADS: dict[str, Workload] = {
    "add_items, 1 item": single_item_adds,
    "get_items(limit=10), 1k items": limited_reads("small_history"),
    "get_items(limit=10), 100k items": limited_reads("large_history"),
}


# The floor of our EncryptedSession: the authenticated encryption alone (cryptography's
# AESGCM with the wrapper's own session key, base64 included), on the items each workload
# handles. No Python around it can be removed; it is timed in the same interleaved loop.


def _aes_floor(workload_name: str) -> Callable[[WrapperPair, Sizes], Awaitable[float]] | None:
    if workload_name == "add_items, 1 item":
        return _aes_floor_adds
    if workload_name.startswith("get_items(limit=10)"):
        history = "small_history" if "1k" in workload_name else "large_history"
        return functools.partial(_aes_floor_reads, history)
    return None


async def _aes_floor_adds(pair: WrapperPair, sizes: Sizes) -> float:
    """Seal one item's JSON per add: a counted nonce (as the wrapper makes them), AES-GCM,
    base64."""
    import binascii
    import itertools

    from agent_sessions.encrypted import EncryptedSession

    session = pair.wrapped.open_session(_fresh_id("floor"))
    assert isinstance(session, EncryptedSession)
    key = session._keys[0]
    counter = itertools.count(int.from_bytes(os.urandom(12), "big"))
    started = time.perf_counter()
    for index in range(sizes.single_adds):
        text = f'{{"role":"user","content":"message {index}"}}'.encode()
        nonce = (next(counter) & ((1 << 96) - 1)).to_bytes(12, "big")
        sealed = nonce + key.cipher.encrypt(nonce, text, key.aad_head + b"0" + key.aad_tail)
        binascii.b2a_base64(sealed, newline=False)
    elapsed = (time.perf_counter() - started) / sizes.single_adds
    await _close(session)
    return elapsed


async def _aes_floor_reads(history: str, pair: WrapperPair, sizes: Sizes) -> float:
    """Open the 10 latest envelopes per read: base64 decode and AES-GCM decryption."""
    import binascii

    session = await _history(pair.wrapped, getattr(sizes, history))
    key = session._keys[0]
    sealed = [
        (envelope["data"], b"%s%d%s" % (key.aad_head, envelope["at"], key.aad_tail))
        for envelope in await session.session.get_items(10)
    ]
    started = time.perf_counter()
    for _ in range(sizes.limited_reads):
        for data, associated in sealed:
            raw = binascii.a2b_base64(data)
            key.cipher.decrypt(raw[:12], raw[12:], associated)
    return (time.perf_counter() - started) / sizes.limited_reads


async def run_wrappers(sizes: Sizes, repeats: int, directory: Path) -> None:
    pairs = [pair for build in WRAPPER_BUILDERS for pair in build(directory)]
    rows: list[tuple[WrapperPair, str, float, float, float | None]] = []
    for workload_name, workload in WRAPPER_WORKLOADS.items():
        for pair in pairs:
            is_ours_encrypted = pair.wrapped.implementation == "ours encrypted"
            floor_of = _aes_floor(workload_name) if is_ours_encrypted else None
            timings: dict[str, list[float]] = {"plain": [], "wrapped": [], "floor": []}
            for _ in range(repeats):  # interleaved, as above
                timings["plain"].append(await workload(pair.plain, sizes, directory))
                timings["wrapped"].append(await workload(pair.wrapped, sizes, directory))
                if floor_of is not None:
                    timings["floor"].append(await floor_of(pair, sizes))
            plain, wrapped = (statistics.median(timings[k]) for k in ("plain", "wrapped"))
            floor = statistics.median(timings["floor"]) if timings["floor"] else None
            print(
                f"  {workload_name} [{pair.wrapped.implementation}, {pair.plain.storage}]: "
                f"{plain=:.3g} {wrapped=:.3g} {floor=}",
                file=sys.stderr,
                flush=True,
            )
            rows.append((pair, workload_name, plain, wrapped, floor))
    print(_wrapper_table(rows))
    for session in _histories.values():
        await _close(session)
    _histories.clear()
    print()
    await run_compaction(repeats, directory)


# -- wrappers, call by call ----------------------------------------------------------------
# Under load the runs above drift by tens of percent between a plain and a wrapped run taken
# a second apart. Here every round times a short burst on each target in turn (the order
# rotating), so that each round's ratio to plain compares calls made within milliseconds
# of each other; the table gives the median of those ratios.

RATIO_ROUNDS = 400
RATIO_BURST = 20
TURN = "a turn: get_items(limit=10), add_items x 2, SDK-shaped"
COLD = "EncryptedSession, cold"
"""Each read made with the wrapper's cache emptied (the first read of a history by a
new wrapper); the plain "EncryptedSession" reads warm, its cache filled as it wrote."""


async def _fill_sdk_shaped(session: Any, length: int) -> None:
    """``length`` items shaped as the Agents SDK saves a chat: a user message (flat) and
    the model's output message (nested content parts), in turn."""
    items: list[dict[str, Any]] = []
    for index in range(length // 2):
        items.append({"role": "user", "content": f"question {index}"})
        items.append(
            {
                "id": f"msg_{index:08d}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": f"answer {index}", "annotations": []}],
            }
        )
    await session.add_items(items)


RATIO_WORKLOADS: dict[str, Callable[[Any, int], Awaitable[None]]] = {
    "get_items(limit=10), 1k items": lambda session, length: _fill(session, length),
    "get_items(limit=10), 1k SDK-shaped items": _fill_sdk_shaped,
    "add_items, 1 item": lambda session, length: _fill(session, length),
    TURN: _fill_sdk_shaped,
}


async def _turn(session: Any) -> None:
    """What a conversation does each turn: read the latest items, save the user's
    message, then the model's answer (the Runner's order)."""
    await session.get_items(limit=10)
    await session.add_items([{"role": "user", "content": "question"}])
    await session.add_items(
        [
            {
                "id": "msg_answer",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "answer", "annotations": []}],
            }
        ]
    )


async def _cold_read(session: Any) -> object:
    session._drop_cache()
    return await session.get_items(limit=10)


async def run_wrapper_ratios(directory: Path, rounds: int = RATIO_ROUNDS) -> None:
    from agent_sessions.encrypted import generate_key

    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {_load()}", flush=True)

    key = generate_key()
    for plain in sqlite_targets(directory):
        if plain.implementation != "ours" or plain.storage == "file FULL":
            continue
        wrappers: dict[str, SessionFactory] = {
            "EncryptedSession": functools.partial(ours_encrypted, key, plain.open_session),
            COLD: functools.partial(ours_encrypted, key, plain.open_session),
            "EncryptedSession, cache_bytes=0": functools.partial(
                ours_encrypted, key, plain.open_session, cache_bytes=0
            ),
            "TrimmingSession": functools.partial(ours_trimming, plain.open_session),
            "CompactingSession": functools.partial(ours_compacting, plain.open_session),
            "BranchingSession": functools.partial(ours_branching, plain.open_session),
        }
        if BASELINE_MODULES:
            revision = BASELINE_MODULES["revision"]
            wrappers[f"EncryptedSession @{revision}"] = functools.partial(
                ours_encrypted, key, plain.open_session, baseline=True
            )
            wrappers[f"{COLD} @{revision}"] = functools.partial(
                ours_encrypted, key, plain.open_session, baseline=True
            )
            wrappers[f"TrimmingSession @{revision}"] = functools.partial(
                ours_trimming, plain.open_session, baseline=True
            )
            wrappers[f"CompactingSession @{revision}"] = functools.partial(
                ours_compacting, plain.open_session, baseline=True
            )
        factories: dict[str, SessionFactory] = {"plain": plain.open_session, **wrappers}
        for workload, fill in RATIO_WORKLOADS.items():
            sessions = {name: factory(_fresh_id("ratio")) for name, factory in factories.items()}
            if not workload.startswith("get_items"):
                for name in [name for name in sessions if name.startswith(COLD)]:
                    del sessions[name]  # a write is the same with the cache full or empty
            for session in sessions.values():
                await fill(session, 1_000)
            calls: dict[str, Callable[[], Awaitable[object]]] = {}
            for name, session in sessions.items():
                if name.startswith(COLD):
                    calls[name] = functools.partial(_cold_read, session)
                elif workload == TURN:
                    calls[name] = functools.partial(_turn, session)
                elif workload.startswith("get_items"):
                    calls[name] = functools.partial(session.get_items, limit=10)
                else:
                    calls[name] = functools.partial(
                        session.add_items, [{"role": "user", "content": "message"}]
                    )
            encrypted = sessions["EncryptedSession"]
            calls["AES-GCM alone (floor)"] = await _ratio_floor(encrypted, workload)
            if not workload.startswith("get_items"):  # the floor of the tables before 06:00
                calls[URANDOM_FLOOR] = await _ratio_floor(encrypted, workload, urandom=True)
            names = list(calls)
            per_call: dict[str, list[float]] = {name: [] for name in names}
            ratios: dict[str, list[float]] = {name: [] for name in names}
            for round_index in range(rounds):
                shift = round_index % len(names)
                spent: dict[str, float] = {}
                for name in names[shift:] + names[:shift]:
                    call = calls[name]
                    started = time.perf_counter()
                    for _ in range(RATIO_BURST):
                        await call()
                    spent[name] = (time.perf_counter() - started) / RATIO_BURST
                for name in names:
                    per_call[name].append(spent[name])
                    ratios[name].append(spent[name] / spent["plain"])
            print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {_load()}")
            print(f"| {workload} | {plain.storage} | per call | vs plain |")
            print("|---|---|---|---|")
            for name in names:
                ratio = statistics.median(ratios[name])
                shown = f"+{ratio - 1:.0%}" if ratio >= 1 else f"-{1 - ratio:.0%}"
                if name == "plain":
                    shown = "-"
                elif name.startswith("AES"):
                    shown = f"+{ratio:.0%}"  # the floor's own cost, added to a plain call
                median = _format_seconds(statistics.median(per_call[name]))
                print(f"| {name} | | {median} | {shown} |")
            print()
            for session in sessions.values():
                await _close(session)


URANDOM_FLOOR = "AES-GCM alone, os.urandom nonce"


async def _ratio_floor(
    session: Any, workload: str, *, urandom: bool = False
) -> Callable[[], Awaitable[None]]:
    """One call's worth of AES-GCM (and base64) on ``session``'s own envelopes. A seal's
    nonce is counted (a random start, then one more per seal, as the wrapper makes them
    since 2026-12-02 06:00 UTC), or with ``urandom`` one ``os.urandom`` call per seal
    (the floor of the tables before: a system call of about 0.7 us)."""
    import binascii
    import itertools

    key = session._keys[0]
    if workload.startswith("get_items"):
        sealed = [
            (envelope["data"], b"%s%d%s" % (key.aad_head, envelope["at"], key.aad_tail))
            for envelope in await session.session.get_items(10)
        ]

        async def decrypt() -> None:
            for data, associated in sealed:
                raw = binascii.a2b_base64(data)
                key.cipher.decrypt(raw[:12], raw[12:], associated)

        return decrypt
    associated = key.aad_head + b"0" + key.aad_tail
    seals = 2 if workload == TURN else 1  # a turn: what it writes (its reads hit the cache)
    counter = itertools.count(int.from_bytes(os.urandom(12), "big"))
    mask = (1 << 96) - 1

    async def encrypt() -> None:
        for _ in range(seals):
            nonce = os.urandom(12) if urandom else (next(counter) & mask).to_bytes(12, "big")
            text = b'{"role":"user","content":"message"}'
            sealed = nonce + key.cipher.encrypt(nonce, text, associated)
            binascii.b2a_base64(sealed, newline=False)

    return encrypt


COMPACTION_HISTORY = 250  # items (125 turns of a question and an answer) when compacting
COMPACTION_THRESHOLD = 200
COMPACTION_RUNS = 20


async def run_compaction(repeats: int, directory: Path) -> None:
    """Compaction's cost per turn, ours over our SQLite, with a model that costs nothing
    (``OfflineModel``): a real model's call (seconds) comes on top, outside the store."""
    from agent_sessions.bounded import CompactingSession
    from agent_sessions.models import OfflineModel

    def turns(count: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for n in range(count // 2):
            items += [{"role": "user", "content": f"question {n}"}]
            items += [{"role": "assistant", "content": f"answer {n}"}]
        return items

    rows: list[tuple[str, str, float]] = []
    for plain in sqlite_targets(directory):
        if plain.implementation != "ours" or plain.storage == "file FULL":
            continue
        checks: list[float] = []
        compactions: list[float] = []
        for _ in range(repeats):
            below = CompactingSession(
                plain.open_session(_fresh_id("below")),
                model=OfflineModel(),
                threshold=COMPACTION_THRESHOLD,
            )
            await below.add_items(turns(COMPACTION_THRESHOLD - 50))
            started = time.perf_counter()
            for _ in range(COMPACTION_RUNS):
                await below.after_run()
            checks.append((time.perf_counter() - started) / COMPACTION_RUNS)
            await below.close()
            spent = 0.0
            for _ in range(COMPACTION_RUNS):
                over = CompactingSession(
                    plain.open_session(_fresh_id("over")),
                    model=OfflineModel(["a summary of the conversation"]),
                    threshold=COMPACTION_THRESHOLD,
                )
                await over.add_items(turns(COMPACTION_HISTORY))
                started = time.perf_counter()
                await over.after_run()
                spent += time.perf_counter() - started
                assert len(await over.get_items()) == 5  # summary + the last 2 turns
                await over.close()
            compactions.append(spent / COMPACTION_RUNS)
        rows.append(
            (
                f"after_run, {COMPACTION_THRESHOLD - 50} items, threshold "
                f"{COMPACTION_THRESHOLD}: no compaction",
                plain.storage,
                statistics.median(checks),
            )
        )
        rows.append(
            (
                f"after_run, {COMPACTION_HISTORY} items: compacted to 5",
                plain.storage,
                statistics.median(compactions),
            )
        )
    lines = ["| CompactingSession | storage | per call |", "|---|---|---|"]
    lines += [f"| {name} | {storage} | {_format_seconds(t)} |" for name, storage, t in rows]
    print("\n".join(lines))


def _implementation(pair: WrapperPair) -> str:
    label = pair.wrapped.implementation
    return pair.plain.implementation + (label[label.index(" @") :] if " @" in label else "")


def _wrapper_table(rows: list[tuple[WrapperPair, str, float, float, float | None]]) -> str:
    lines = [
        "| wrapper | workload | implementation | storage | plain | wrapped | overhead "
        "| AES-GCM alone (floor) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for pair, workload, plain, wrapped, floor in rows:
        overhead = f"{(wrapped - plain) / plain:+.0%}"
        floor_text = "-" if floor is None else f"{_format_seconds(floor)} (+{floor / plain:.0%})"
        lines.append(
            f"| {pair.wrapper} | {workload} | {_implementation(pair)} | "
            f"{pair.plain.storage} | {_format_seconds(plain)} | {_format_seconds(wrapped)} | "
            f"{overhead} | {floor_text} |"
        )
    return "\n".join(lines)


# -- server backends -------------------------------------------------------------------------
# Redis and PostgreSQL, ours beside the Agents SDK's RedisSession and SQLAlchemySession on
# the same servers (REDIS_URL, DATABASE_URL), in the same run. The SDK's PostgreSQL peer
# needs packages kept out of our extras: SERVER_PEER_INSTALL installs them. Round trips
# are counted by a loopback proxy in front of the server (RoundTripCounter).

SERVER_PEER_INSTALL = 'pip install "sqlalchemy[asyncio]" asyncpg'
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_DATABASE_URL = "postgresql://postgres@127.0.0.1:5432/test"
DEFAULT_MYSQL_URL = "mysql+asyncmy://root@127.0.0.1:3306/test"
SQLALCHEMY_IMPLEMENTATION = "ours-sqlalchemy"
"""Our SQLAlchemy backend, beside the SDK's ``SQLAlchemySession`` on the same engine driver
(asyncpg on PostgreSQL, asyncmy on MariaDB)."""
SQLALCHEMY_PSYCOPG = "ours-sqlalchemy-psycopg"
"""Our SQLAlchemy backend on PostgreSQL through psycopg (the ``postgres`` extra's driver),
whose statements run on the driver connection (docs/sessions.md, "Drivers")."""


@dataclass(frozen=True)
class ServerSizes:
    single_adds: int = 1_000
    history: int = 100_000
    limited_reads: int = 1_000
    pops: int = 500
    writers: int = 8
    adds_per_writer: int = 125
    counted_calls: int = 100

    def scaled(self, divisor: int) -> ServerSizes:
        fixed = {"writers", "counted_calls"}
        return ServerSizes(
            **{
                name: value if name in fixed else max(1, value // divisor)
                for name, value in vars(self).items()
            }
        )


@dataclass(frozen=True)
class ServerTarget:
    """One implementation on one server. ``connect(url)`` opens it (``url`` may name the
    round-trip counter instead of the server) and yields a session factory; leaving the
    context removes the keys or tables the target wrote."""

    implementation: str
    server: str
    url: str
    connect: Callable[[str], contextlib.AbstractAsyncContextManager[SessionFactory]]


ServerWorkload = Callable[[SessionFactory, ServerSizes], Awaitable[float]]
"""Runs once and returns seconds per operation."""


async def server_single_adds(sessions: SessionFactory, sizes: ServerSizes) -> float:
    session = sessions(_fresh_id("adds"))
    await session.add_items([_server_item(-1)])  # connections and tables ready
    started = time.perf_counter()
    for index in range(sizes.single_adds):
        await session.add_items([_server_item(index)])
    elapsed = time.perf_counter() - started
    await session.clear_session()
    return elapsed / sizes.single_adds


async def server_limited_reads(sessions: SessionFactory, sizes: ServerSizes) -> float:
    session = sessions(_fresh_id("history"))
    for start in range(0, sizes.history, 1_000):
        count = min(1_000, sizes.history - start)
        await session.add_items([_server_item(start + n) for n in range(count)])
    assert len(await session.get_items(limit=10)) == min(10, sizes.history)
    started = time.perf_counter()
    for _ in range(sizes.limited_reads):
        await session.get_items(limit=10)
    elapsed = time.perf_counter() - started
    await session.clear_session()
    return elapsed / sizes.limited_reads


async def server_pops(sessions: SessionFactory, sizes: ServerSizes) -> float:
    session = sessions(_fresh_id("pops"))
    await session.add_items([_server_item(n) for n in range(sizes.pops)])
    started = time.perf_counter()
    for _ in range(sizes.pops):
        assert await session.pop_item() is not None
    return (time.perf_counter() - started) / sizes.pops


async def server_concurrent_writers(sessions: SessionFactory, sizes: ServerSizes) -> float:
    """Wall time per item while ``sizes.writers`` tasks add single items, each to its own
    session, through one store (one pool, one client or one engine)."""
    writers = [sessions(_fresh_id("writer")) for _ in range(sizes.writers)]
    await asyncio.gather(*(writer.add_items([_server_item(-1)]) for writer in writers))

    async def write(writer: Any) -> None:
        for index in range(sizes.adds_per_writer):
            await writer.add_items([_server_item(index)])

    started = time.perf_counter()
    await asyncio.gather(*(write(writer) for writer in writers))
    elapsed = time.perf_counter() - started
    for writer in writers:
        await writer.clear_session()
    return elapsed / (sizes.writers * sizes.adds_per_writer)


SERVER_WORKLOADS: dict[str, ServerWorkload] = {
    "add_items, 1 item": server_single_adds,
    "get_items(limit=10), 100k items": server_limited_reads,
    "pop_item": server_pops,
    "8 concurrent writers, add_items 1 item": server_concurrent_writers,
}


def server_targets(redis_url: str, database_url: str, mysql_url: str) -> list[ServerTarget]:
    run_id = f"{os.getpid()}_{int(time.time())}"
    postgres_asyncpg = "postgresql+asyncpg://" + database_url.split("://", 1)[1]
    postgres_psycopg = "postgresql+psycopg://" + database_url.split("://", 1)[1]
    ours_sqlalchemy = functools.partial(_ours_sqlalchemy, run_id)
    return [
        ServerTarget("sdk", "redis", redis_url, functools.partial(_sdk_redis, run_id)),
        ServerTarget("ours", "redis", redis_url, functools.partial(_ours_redis, run_id)),
        ServerTarget("sdk", "postgres", postgres_asyncpg, functools.partial(_sdk_sql, run_id)),
        ServerTarget("ours", "postgres", database_url, functools.partial(_ours_postgres, run_id)),
        ServerTarget(SQLALCHEMY_IMPLEMENTATION, "postgres", postgres_asyncpg, ours_sqlalchemy),
        ServerTarget(SQLALCHEMY_PSYCOPG, "postgres", postgres_psycopg, ours_sqlalchemy),
        ServerTarget("sdk", "mariadb", mysql_url, functools.partial(_sdk_sql, run_id)),
        ServerTarget(SQLALCHEMY_IMPLEMENTATION, "mariadb", mysql_url, ours_sqlalchemy),
    ]


SERVERS = ("redis", "postgres", "mariadb")


def _server_urls() -> tuple[str, str, str]:
    """``REDIS_URL``, ``DATABASE_URL`` and ``MYSQL_URL``, or the tests' defaults."""
    return (
        os.environ.get("REDIS_URL", DEFAULT_REDIS_URL),
        os.environ.get("DATABASE_URL", DEFAULT_DATABASE_URL),
        os.environ.get("MYSQL_URL", DEFAULT_MYSQL_URL),
    )


async def _runnable(targets: list[ServerTarget], servers: tuple[str, ...]) -> list[ServerTarget]:
    """The targets on ``servers`` that can run here; a line for each one skipped."""
    runnable = []
    for target in targets:
        if target.server not in servers:
            continue
        problem = await _server_target_problem(target)
        if problem is None:
            runnable.append(target)
        else:
            print(f"skipping {target.implementation} on {target.server}: {problem}")
    return runnable


async def _time_server(
    applicable: list[ServerTarget],
    sizes: ServerSizes,
    repeats: int,
    workloads: dict[str, ServerWorkload],
) -> dict[str, dict[str, float]]:
    """Workload name -> implementation -> median seconds per operation, the targets of
    one server run in turn within each repeat (interleaved, as for SQLite)."""
    timings: dict[str, dict[str, list[float]]] = {name: {} for name in workloads}
    for _ in range(repeats):
        for target in applicable:
            async with target.connect(target.url) as sessions:
                for name, workload in workloads.items():
                    seconds = await workload(sessions, sizes)
                    timings[name].setdefault(target.implementation, []).append(seconds)
    return {
        name: {implementation: statistics.median(r) for implementation, r in runs.items()}
        for name, runs in timings.items()
    }


async def _print_round_trips(applicable: list[ServerTarget], sizes: ServerSizes) -> None:
    for target in applicable:
        counts = await _count_round_trips(target, sizes)
        print(
            f"round trips per call, {target.implementation} on {target.server}: "
            + ", ".join(f"{name} {count:.2f}" for name, count in counts.items())
        )


async def run_servers(sizes: ServerSizes, repeats: int, servers: tuple[str, ...] = SERVERS) -> None:
    targets = await _runnable(server_targets(*_server_urls()), servers)
    rows: list[tuple[str, str, dict[str, float]]] = []
    for server in servers:
        applicable = [target for target in targets if target.server == server]
        if not applicable:
            continue
        medians = await _time_server(applicable, sizes, repeats, SERVER_WORKLOADS)
        for name, by_implementation in medians.items():
            print(f"  {name} [{server}]: {by_implementation}", file=sys.stderr, flush=True)
            rows.append((name, server, by_implementation))
        await _print_round_trips(applicable, sizes)
    print()
    print(_server_table(rows))


def _server_table(rows: list[tuple[str, str, dict[str, float]]]) -> str:
    ours = ("ours", SQLALCHEMY_IMPLEMENTATION, SQLALCHEMY_PSYCOPG)
    lines = [
        "| workload | server | sdk | ours | ours (SQLAlchemy) | ours (SQLAlchemy, psycopg) "
        "| ours, calls/s | ours / sdk throughput | ours (SQLAlchemy) / sdk throughput "
        "| ours (SQLAlchemy, psycopg) / sdk throughput |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, server, medians in rows:
        sdk = medians.get("sdk")
        times = [medians.get(name) for name in ours]
        cells = [_format_seconds(seconds) if seconds else "-" for seconds in (sdk, *times)]
        fastest = min((seconds for seconds in times if seconds), default=None)
        calls = f"{1 / fastest:,.0f}" if fastest else "-"
        ratios = [f"{sdk / seconds:.1f}x" if sdk and seconds else "-" for seconds in times]
        lines.append(
            f"| {workload} | {server} | {' | '.join(cells)} | {calls} | {' | '.join(ratios)} |"
        )
    return "\n".join(lines)


# -- encrypted sessions on the servers -------------------------------------------------------
# Each EncryptedSession over its own plain session on the same server: ours over our backend,
# the SDK's (agents.extensions.memory.EncryptedSession) over the SDK's, the four run in turn
# within each repeat, so that each wrapper's overhead over its plain session is measured
# beside ours / SDK throughput. Tables and keys are the plain targets': removed as theirs.

ENCRYPTED_SERVERS: dict[str, tuple[str, str]] = {
    "redis": ("ours", "redis (redis-py)"),
    "postgres": (SQLALCHEMY_IMPLEMENTATION, "postgres (SQLAlchemy, asyncpg)"),
    "mariadb": (SQLALCHEMY_IMPLEMENTATION, "mariadb (SQLAlchemy, asyncmy)"),
}
"""Server -> (the implementation of ours in ``server_targets`` that is wrapped there, the
table's label). Each is on the SDK's driver: the SDK's ``RedisSession`` on the same
redis-py client, its ``SQLAlchemySession`` on the same engine driver."""

ENCRYPTED_ROLES = ("sdk", "sdk encrypted", "ours", "ours encrypted")
"""The implementations of ``encrypted_server_targets``, in the order they run."""

ENCRYPTED_SERVER_WORKLOADS: dict[str, ServerWorkload] = {
    "add_items, 1 item": server_single_adds,
    "get_items(limit=10), 100k items": server_limited_reads,
    "pop_item": server_pops,
}


@contextlib.asynccontextmanager
async def _encrypted_connect(
    connect: Callable[[str], contextlib.AbstractAsyncContextManager[SessionFactory]],
    wrap: Callable[[SessionFactory, str], Any],
    url: str,
) -> AsyncIterator[SessionFactory]:
    """``connect(url)``'s sessions, each wrapped by ``wrap(plain sessions, session id)``."""
    async with connect(url) as sessions:
        yield functools.partial(wrap, sessions)


def encrypted_server_targets(plain_targets: list[ServerTarget], key: str) -> list[ServerTarget]:
    """For each server of ``ENCRYPTED_SERVERS`` in ``plain_targets``: the SDK's plain
    target, the same wrapped in the SDK's ``EncryptedSession``, ours plain, and ours wrapped
    in our ``EncryptedSession`` (``ENCRYPTED_ROLES``); both wrappers with ``key`` and a TTL."""
    targets = []
    for server, (ours, _) in ENCRYPTED_SERVERS.items():
        for role, implementation, wrap in (
            ("sdk", "sdk", sdk_encrypted),
            ("ours", ours, ours_encrypted),
        ):
            for plain in plain_targets:
                if plain.server != server or plain.implementation != implementation:
                    continue
                wrapped = functools.partial(
                    _encrypted_connect, plain.connect, functools.partial(wrap, key)
                )
                targets.append(ServerTarget(role, server, plain.url, plain.connect))
                targets.append(ServerTarget(f"{role} encrypted", server, plain.url, wrapped))
    return targets


async def run_encrypted_servers(
    sizes: ServerSizes, repeats: int, servers: tuple[str, ...] = SERVERS
) -> None:
    from agent_sessions.encrypted import generate_key

    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {_load()}", flush=True)
    targets = encrypted_server_targets(server_targets(*_server_urls()), generate_key())
    targets = await _runnable(targets, servers)
    rows: list[tuple[str, str, dict[str, float]]] = []
    for server in servers:
        applicable = [target for target in targets if target.server == server]
        if not applicable:
            continue
        medians = await _time_server(applicable, sizes, repeats, ENCRYPTED_SERVER_WORKLOADS)
        for name, by_implementation in medians.items():
            print(f"  {name} [{server}, encrypted]: {by_implementation}", file=sys.stderr)
            rows.append((name, server, by_implementation))
        await _print_round_trips(applicable, sizes)
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {_load()}")
    print()
    print(_encrypted_server_table(rows))


def _encrypted_server_table(rows: list[tuple[str, str, dict[str, float]]]) -> str:
    lines = [
        "| workload | server | SDK plain | SDK encrypted | ours plain | ours encrypted "
        "| ours / SDK throughput, encrypted | ours / SDK, plain "
        "| overhead over plain: SDK's / ours |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for workload, server, medians in rows:
        times = [medians.get(role) for role in ENCRYPTED_ROLES]
        sdk, sdk_encrypted, ours, ours_encrypted = times
        cells = [_format_seconds(seconds) if seconds else "-" for seconds in times]

        def ratio(slow: float | None, fast: float | None) -> str:
            return f"{slow / fast:.1f}x" if slow and fast else "-"

        def overhead(plain: float | None, wrapped: float | None) -> str:
            return f"{(wrapped - plain) / plain:+.0%}" if plain and wrapped else "-"

        lines.append(
            f"| {workload} | {ENCRYPTED_SERVERS[server][1]} | {' | '.join(cells)} "
            f"| {ratio(sdk_encrypted, ours_encrypted)} | {ratio(sdk, ours)} "
            f"| {overhead(sdk, sdk_encrypted)} / {overhead(ours, ours_encrypted)} |"
        )
    return "\n".join(lines)


async def _count_round_trips(target: ServerTarget, sizes: ServerSizes) -> dict[str, float]:
    """Network round trips per call of add_items (1 item), get_items(limit=10), pop_item."""
    parts = urlsplit(target.url)
    async with RoundTripCounter(parts.hostname or "127.0.0.1", parts.port or 0) as counter:
        userinfo = parts.netloc.rpartition("@")[0]
        proxied = parts._replace(netloc=f"{userinfo}@" * bool(userinfo) + counter.address)
        async with target.connect(urlunsplit(proxied)) as sessions:
            session = sessions(_fresh_id("counted"))
            await session.add_items([_server_item(n) for n in range(20)])
            await session.get_items(limit=10)  # connections, tables, prepared statements
            await session.pop_item()
            counts = {
                "add_items": await counter.per_call(
                    sizes.counted_calls, lambda: session.add_items([_server_item(0)])
                ),
                "get_items(limit=10)": await counter.per_call(
                    sizes.counted_calls, lambda: session.get_items(limit=10)
                ),
                "pop_item": await counter.per_call(sizes.counted_calls, session.pop_item),
            }
            await session.clear_session()
    return counts


class RoundTripCounter:
    """A loopback TCP proxy counting request/reply exchanges on all its connections.

    A reply that follows bytes from the client counts one round trip, however many
    requests those bytes held: a pipeline, MULTI/EXEC or PostgreSQL's Parse/Bind/Execute/
    Sync sent together cost one network round trip, and are counted so."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self.round_trips = 0
        self.address = ""

    async def __aenter__(self) -> RoundTripCounter:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.address = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def per_call(self, calls: int, call: Callable[[], Awaitable[object]]) -> float:
        self.round_trips = 0
        for _ in range(calls):
            await call()
        return self.round_trips / calls

    async def _serve(self, client_in: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        server_in, server = await asyncio.open_connection(*self._target)
        self._writers += [client, server]
        request_sent = False

        async def pump(
            source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, upstream: bool
        ) -> None:
            nonlocal request_sent
            with contextlib.suppress(OSError):
                while chunk := await source.read(65536):
                    if upstream:
                        request_sent = True
                    elif request_sent:
                        request_sent = False
                        self.round_trips += 1
                    sink.write(chunk)
                    await sink.drain()
            sink.transport.abort()

        for task in (
            asyncio.create_task(pump(client_in, server, upstream=True)),
            asyncio.create_task(pump(server_in, client, upstream=False)),
        ):
            self._tasks.add(task)


async def _server_target_problem(target: ServerTarget) -> str | None:
    """Why ``target`` cannot run here (server down, peer packages missing), or None."""
    try:
        async with target.connect(target.url) as sessions:
            await sessions(_fresh_id("probe")).get_items(limit=1)
    except ImportError as exc:
        return f"{exc} (install: {SERVER_PEER_INSTALL})"
    except Exception as exc:
        return f"{target.url} does not answer: {str(exc).splitlines()[0]}"
    return None


@contextlib.asynccontextmanager
async def _ours_redis(run_id: str, url: str) -> AsyncIterator[SessionFactory]:
    from agent_sessions.redis import RedisStore

    prefix = f"bench:{run_id}:"
    async with RedisStore(url, key_prefix=prefix) as store:
        yield store.session
        await _delete_redis_keys(url, prefix)


@contextlib.asynccontextmanager
async def _sdk_redis(run_id: str, url: str) -> AsyncIterator[SessionFactory]:
    import redis.asyncio as aioredis
    from agents.extensions.memory.redis_session import RedisSession

    client = aioredis.Redis.from_url(url)
    prefix = f"bench-sdk:{run_id}"
    try:
        yield lambda session_id: RedisSession(session_id, redis_client=client, key_prefix=prefix)
    finally:
        await client.aclose()
    await _delete_redis_keys(url, prefix)


@contextlib.asynccontextmanager
async def _ours_postgres(run_id: str, url: str) -> AsyncIterator[SessionFactory]:
    from agent_sessions.postgres import PostgresStore

    table = f"bench_items_{run_id}"
    async with PostgresStore(url, table=table) as store:
        yield store.session
    await _drop_tables(url, [table], migrated=table)


@contextlib.asynccontextmanager
async def _ours_sqlalchemy(run_id: str, url: str) -> AsyncIterator[SessionFactory]:
    from agent_sessions.sqlalchemy import SQLAlchemyStore

    table = f"bench_sa_{run_id}"
    async with SQLAlchemyStore(url, table=table) as store:
        yield store.session
    await _drop_sql_tables(url, [table, f"{table}_locks"], migrated=table)


@contextlib.asynccontextmanager
async def _sdk_sql(run_id: str, url: str) -> AsyncIterator[SessionFactory]:
    """The SDK's ``SQLAlchemySession`` on ``url`` (``postgresql+asyncpg://`` or
    ``mysql+asyncmy://``), one engine for all its sessions, as its docs show."""
    # Imported by name: asyncpg is the peer's, not in our extras.
    sqlalchemy_asyncio = importlib.import_module("sqlalchemy.ext.asyncio")
    importlib.import_module("asyncpg" if url.startswith("postgresql") else "asyncmy")
    peer = importlib.import_module("agents.extensions.memory.sqlalchemy_session")
    engine = sqlalchemy_asyncio.create_async_engine(url)
    tables = (f"bench_sdk_sessions_{run_id}", f"bench_sdk_messages_{run_id}")
    create_tables = not url.startswith("mysql")
    if not create_tables:
        # Its tables cannot be created on MySQL/MariaDB ("VARCHAR requires a length"): make
        # them as a MySQL user must, from its own metadata with a VARCHAR(255) session id.
        sqlalchemy = importlib.import_module("sqlalchemy")
        shape = peer.SQLAlchemySession(
            "shape", engine=engine, sessions_table=tables[0], messages_table=tables[1]
        )
        for table in (shape._sessions, shape._messages):
            table.c.session_id.type = sqlalchemy.String(255)
        async with engine.begin() as conn:
            await conn.run_sync(shape._metadata.create_all)
    try:
        yield lambda session_id: peer.SQLAlchemySession(
            session_id,
            engine=engine,
            create_tables=create_tables,
            sessions_table=tables[0],
            messages_table=tables[1],
        )
    finally:
        await engine.dispose()
    await _drop_sql_tables(url, [tables[1], tables[0]])


async def _delete_redis_keys(url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    async with aioredis.Redis.from_url(url) as client:
        async for key in client.scan_iter(match=prefix.replace(":", "\\:") + "*", count=1000):
            await client.delete(key)


async def _drop_tables(url: str, tables: list[str], migrated: str | None = None) -> None:
    import psycopg
    from psycopg import sql

    from agent_sessions.postgres import MIGRATIONS_TABLE

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for table in tables:
            await conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
        if migrated is not None:
            await conn.execute(
                sql.SQL("DELETE FROM {} WHERE table_name = %s").format(
                    sql.Identifier(MIGRATIONS_TABLE)
                ),
                (migrated,),
            )


async def _drop_sql_tables(url: str, tables: list[str], migrated: str | None = None) -> None:
    import sqlalchemy as sa
    from sqlalchemy.ext.asyncio import create_async_engine

    from agent_sessions.sqlalchemy import MIGRATIONS_TABLE

    engine = create_async_engine(url)
    try:
        async with engine.begin() as conn:
            for table in tables:
                await conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
            if migrated is not None:
                await conn.execute(
                    sa.text(f"DELETE FROM {MIGRATIONS_TABLE} WHERE table_name = :table"),
                    {"table": migrated},
                )
    finally:
        await engine.dispose()


def _server_item(index: int) -> dict[str, Any]:
    return {"role": "user", "content": f"message {index}"}


# -- running and reporting -----------------------------------------------------------------


async def run(sizes: Sizes, repeats: int, directory: Path) -> None:
    targets = [target for build in TARGET_BUILDERS for target in build(directory)]
    rows: list[tuple[str, str, dict[str, float]]] = []
    for workload_name, (workload, storages) in WORKLOADS.items():
        for storage in ("memory", "file", "file FULL", "server"):
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
    _histories.clear()


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
        if target.storage == "file FULL":
            continue  # reads do not depend on synchronous: the "file" rows say it
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


def _load() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


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
    parser.add_argument(
        "--servers-only",
        action="store_true",
        help="only the Redis, PostgreSQL and MariaDB rows, plain then encrypted",
    )
    parser.add_argument(
        "--encrypted-servers",
        action="store_true",
        help="only the encrypted server rows: each EncryptedSession (ours, the SDK's) beside "
        "its plain session",
    )
    parser.add_argument(
        "--server",
        action="append",
        choices=SERVERS,
        help="with --servers-only or --encrypted-servers: only this server's rows (repeatable)",
    )
    parser.add_argument(
        "--wrappers-only", action="store_true", help="only the wrappers' overhead on SQLite"
    )
    parser.add_argument(
        "--compaction-only", action="store_true", help="only compaction's cost per turn"
    )
    parser.add_argument(
        "--wrapper-ratios",
        action="store_true",
        help="only the wrappers' overhead on SQLite, call by call (robust under load)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=RATIO_ROUNDS,
        help=f"with --wrapper-ratios: rounds per table (default {RATIO_ROUNDS})",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="with --wrappers-only or --wrapper-ratios: also the wrappers as they were at "
        "git revision REV",
    )
    arguments = parser.parse_args()
    sizes = Sizes().scaled(10) if arguments.quick else Sizes()
    print(f"Machine: {_machine()}")
    if arguments.wrapper_ratios:
        print(f"Medians of {arguments.rounds} rounds of {RATIO_BURST} calls per target.")
    else:
        print(f"Medians of {arguments.repeats} runs; per operation.")
    if arguments.quick:
        print("Quick run: every size divided by 10 (the row labels name the full sizes).")
    print()
    if arguments.compaction_only:
        with tempfile.TemporaryDirectory(prefix="sessions-bench-") as directory:
            asyncio.run(run_compaction(arguments.repeats, Path(directory)))
        return
    if arguments.wrapper_ratios:
        with tempfile.TemporaryDirectory(prefix="sessions-bench-") as directory:
            if arguments.baseline:
                load_baseline(arguments.baseline, Path(directory))
            asyncio.run(run_wrapper_ratios(Path(directory), arguments.rounds))
        return
    if arguments.wrappers_only:
        with tempfile.TemporaryDirectory(prefix="sessions-bench-") as directory:
            if arguments.baseline:
                load_baseline(arguments.baseline, Path(directory))
            asyncio.run(run_wrappers(sizes, arguments.repeats, Path(directory)))
        return
    if not (arguments.servers_only or arguments.encrypted_servers):
        with tempfile.TemporaryDirectory(prefix="sessions-bench-") as directory:
            asyncio.run(run(sizes, arguments.repeats, Path(directory)))
            print()
            asyncio.run(run_wrappers(sizes, arguments.repeats, Path(directory)))
        print()
    server_sizes = ServerSizes().scaled(10) if arguments.quick else ServerSizes()
    servers = tuple(arguments.server or SERVERS)
    if not arguments.encrypted_servers:
        asyncio.run(run_servers(server_sizes, arguments.repeats, servers))
        print()
    asyncio.run(run_encrypted_servers(server_sizes, arguments.repeats, servers))


if __name__ == "__main__":
    main()
