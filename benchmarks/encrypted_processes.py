"""EncryptedSession written by several processes at once: every nonce distinct, nothing lost.

What a deployment does: a web app's worker processes (forked from one parent, as gunicorn
does, or spawned) and a parent that wrote before forking, all writing one session of one
SQLite file through ``EncryptedSession`` with one master key, each call in its own
``asyncio.run``; the forked writers go on with the parent's own wrapper (its session key
and nonce sequence, which a forked child must restart), the spawned ones open their own.
Each writer adds ``--items`` items one call each, then one batch of 5. Then a new wrapper
reads the whole history, and the raw file is read back: the script
checks that every item is read, that the AES-GCM nonces of all envelopes are distinct (the
counted nonces of ``_Nonces``: a random start per wrapper, restarted in a forked child),
and that no plaintext marker is in the file. Prints one table row per run and exits 1 on
any failure.

    .venv/bin/python benchmarks/encrypted_processes.py [--writers 4] [--items 200]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from agent_sessions import SQLiteSession
from agent_sessions.encrypted import EncryptedSession

KEY = base64.b64encode(b"a master key of 32 bytes, or mo!").decode()
MARKER = "plaintext-marker"
BATCH = 5


def _session(path: Path) -> EncryptedSession:
    return EncryptedSession(SQLiteSession("shared", db_path=path), key=KEY)


_PARENTS: dict[Path, EncryptedSession] = {}
"""The wrapper the parent wrote with, per file: what a forked writer inherits."""


def _write(path: Path, writer: str, items: int) -> None:
    """One writer process: ``items`` one-item adds, each in its own event loop, then a batch
    (a forked writer through the parent's wrapper, a spawned one through its own)."""
    session = _PARENTS.get(path) or _session(path)
    for index in range(items):
        asyncio.run(session.add_items([{"writer": writer, "n": index, "note": MARKER}]))
    batch = [{"writer": writer, "n": f"batch {n}", "note": MARKER} for n in range(BATCH)]
    asyncio.run(session.add_items(batch))
    asyncio.run(session.close())


def _envelopes(path: Path) -> list[dict[str, object]]:
    """Every envelope stored in the file, whatever the table (read as raw rows)."""
    found = []
    with sqlite3.connect(path) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master")]
        for table in tables:
            columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
            for column in columns:
                for (value,) in connection.execute(f"SELECT {column} FROM {table}"):
                    if isinstance(value, str) and '"__enc__"' in value:
                        found.append(json.loads(value))
    return found


def run(writers: int, items: int) -> bool:
    with tempfile.TemporaryDirectory(prefix="encrypted-processes-") as directory:
        path = Path(directory) / "chat.db"
        parent = _PARENTS[path] = _session(path)
        asyncio.run(parent.add_items([{"writer": "parent", "note": MARKER}]))  # before forking
        started = time.perf_counter()
        processes: list[multiprocessing.process.BaseProcess] = []
        for index in range(writers):
            forked = index % 2 == 0
            name = f"{'fork' if forked else 'spawn'} {index}"
            arguments = (path, name, items)
            process: multiprocessing.process.BaseProcess
            if forked:
                process = multiprocessing.get_context("fork").Process(target=_write, args=arguments)
            else:
                process = multiprocessing.get_context("spawn").Process(
                    target=_write, args=arguments
                )
            process.start()
            processes.append(process)
        for process in processes:
            process.join()
        elapsed = time.perf_counter() - started
        read = asyncio.run(_session(path).get_items())
        envelopes = _envelopes(path)
        nonces = [base64.b64decode(str(envelope["data"]))[:12] for envelope in envelopes]
        expected = 1 + writers * (items + BATCH)
        plaintext = MARKER.encode() in path.read_bytes()
        exits = [process.exitcode for process in processes]
        ok = (
            exits == [0] * writers
            and len(read) == expected
            and len(envelopes) == expected
            and len(set(nonces)) == expected
            and not plaintext
        )
        print(
            f"| {writers} ({(writers + 1) // 2} forked, {writers // 2} spawned) | {items} + {BATCH}"
            f" | {len(read)} of {expected} | {len(envelopes)} | {len(set(nonces))}"
            f" | {'yes' if plaintext else 'no'} | {elapsed:.1f} s | {'ok' if ok else 'FAILED'} |"
        )
        asyncio.run(_PARENTS.pop(path).close())
        return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    print(
        "| writer processes | items each | items read | envelopes stored | distinct nonces"
        " | plaintext in the file | writers' time | result |"
    )
    print("|---|---|---|---|---|---|---|---|")
    results = [run(arguments.writers, arguments.items) for _ in range(arguments.runs)]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
