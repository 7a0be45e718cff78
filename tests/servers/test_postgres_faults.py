"""PostgreSQL under faults, on a cluster of the tests' own (never the shared server):
frozen with SIGSTOP, and with its connections terminated every few milliseconds.

Every ``asyncio.run`` runs in a child process with a hard timeout, so a call that never
returns fails its test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest

from agent_sessions import SessionBackendError
from agent_sessions.postgres import PostgresStore

from .own_servers import PASSWORD, OwnPostgres, own_postgres

pytestmark = pytest.mark.timeout(180)

CONNECT_TIMEOUT = 2.0
STATEMENT_TIMEOUT = 2.0
# docs/sessions.md ("Bounds"): a call returns within connect + statement timeouts plus
# this margin (psycopg's cancel of a statement cut by the deadline: 5 s to send, 5 s
# for its reply), even on a frozen server.
MARGIN = 10.0
HARD_TIMEOUT = 60.0
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster() -> Iterator[OwnPostgres]:
    with own_postgres() as own:
        yield own


def _url(cluster: OwnPostgres, application_name: str) -> str:
    return (
        f"postgresql://postgres:{PASSWORD}@127.0.0.1:{cluster.port}/postgres"
        f"?application_name={application_name}"
    )


def _child(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


STORE = f"""
import asyncio, sys, time
from agent_sessions import SessionError
from agent_sessions.postgres import PostgresStore

store = PostgresStore(
    sys.argv[1], table="faults_items", connect_timeout={CONNECT_TIMEOUT},
    statement_timeout={STATEMENT_TIMEOUT}, socket_timeout={STATEMENT_TIMEOUT},
    timeout={CONNECT_TIMEOUT},
)
session = store.session(sys.argv[2])
"""

FROZEN = (
    STORE
    + """
asyncio.run(session.add_items([{"n": 0}]))
print("used", flush=True)
sys.stdin.readline()  # the server is frozen now
started = time.monotonic()
try:
    asyncio.run(session.get_items())
    outcome = "answered"
except SessionError as exc:
    outcome = type(exc).__name__
print(outcome, round(time.monotonic() - started, 2), flush=True)
sys.stdin.readline()  # the server runs again
print(asyncio.run(session.get_items()), flush=True)
asyncio.run(store.close())
"""
)


def test_asyncio_run_returns_on_a_frozen_server_and_recovers(cluster: OwnPostgres) -> None:
    child = _child(FROZEN, _url(cluster, "faults-frozen"), f"frozen-{os.getpid()}")
    assert child.stdin is not None
    assert child.stdout is not None
    stdout = child.stdout
    try:
        assert child.stdout.readline().strip() == "used"
        with cluster.frozen():
            child.stdin.write("\n")
            child.stdin.flush()
            reply: list[str] = []
            reader = threading.Thread(target=lambda: reply.append(stdout.readline()))
            reader.start()
            reader.join(HARD_TIMEOUT)
            assert reply, "asyncio.run never returned on the frozen server"
        outcome, seconds = reply[0].split()
        assert outcome in ("BackendUnreachableError", "BackendTimeoutError")
        assert float(seconds) <= CONNECT_TIMEOUT + STATEMENT_TIMEOUT + MARGIN
        child.stdin.write("\n")
        child.stdin.flush()
        out, err = child.communicate(timeout=HARD_TIMEOUT)
        assert child.returncode == 0, err
        assert out.strip() == "[{'n': 0}]"
    finally:
        child.kill()
        child.wait()


CHURN = (
    STORE
    + """
errors = 0
for n in range(int(sys.argv[3])):
    try:
        asyncio.run(session.add_items([{"n": n}]))
        asyncio.run(session.get_items(limit=1))
    except SessionError:
        errors += 1
print("returned", errors, flush=True)
"""
)
RUNS = 50
CALLS = 3


def _terminate_every_few_ms(cluster: OwnPostgres, name: str, stop: threading.Event) -> int:
    """Terminate the backends of ``application_name`` = ``name`` every 5-50 ms."""
    killed = 0
    with psycopg.connect(_url(cluster, "faults-killer"), autocommit=True) as killer:
        while not stop.is_set():
            row = killer.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (name,),
            ).fetchone()
            killed += row[0] if row else 0
            stop.wait(random.uniform(0.005, 0.05))
    return killed


def test_asyncio_run_per_call_always_returns_under_connection_churn(
    cluster: OwnPostgres,
) -> None:
    name = f"faults-churn-{os.getpid()}"
    stop = threading.Event()
    hung: list[int] = []
    failed: list[str] = []

    def one_run(run: int) -> None:
        child = _child(CHURN, _url(cluster, name), f"churn-{run}", str(CALLS))
        try:
            out, err = child.communicate(timeout=HARD_TIMEOUT)
        except subprocess.TimeoutExpired:
            hung.append(run)
            return
        finally:
            child.kill()
            child.wait()
        if child.returncode != 0 or not out.startswith("returned"):
            failed.append(err[-2000:])

    with ThreadPoolExecutor(1) as killer_thread:
        killed = killer_thread.submit(_terminate_every_few_ms, cluster, name, stop)
        try:
            with ThreadPoolExecutor(4) as runs:
                list(runs.map(one_run, range(RUNS)))
        finally:
            stop.set()
        assert killed.result() > 0, "the churn never terminated a connection"
    assert hung == [], f"{len(hung)} of {RUNS} runs never returned: {hung}"
    assert failed == [], failed[0]


FAILED_WRITES = 1000
WRITERS = 8


async def test_may_have_written_false_only_for_writes_that_are_absent(
    cluster: OwnPostgres,
) -> None:
    """Writers add one-item batches, each with a marker of its own, while their
    connections are terminated at random moments (every 5 to 50 ms): no batch whose
    failure said ``may_have_written=False`` may be in the table."""
    name = f"faults-written-{os.getpid()}"
    store = PostgresStore(
        _url(cluster, name),
        table="faults_written",
        max_connections=WRITERS,
        connect_timeout=CONNECT_TIMEOUT,
        statement_timeout=STATEMENT_TIMEOUT,
        socket_timeout=STATEMENT_TIMEOUT,
        timeout=CONNECT_TIMEOUT,
    )
    await store.session("warm-up").add_items([{"marker": "warm-up"}])
    not_written: list[str] = []
    maybe_written: list[str] = []
    stored = 0
    stop = threading.Event()
    deadline = asyncio.get_running_loop().time() + 90

    async def writer(index: int) -> None:
        nonlocal stored
        session = store.session(f"writer-{index}")
        while len(not_written) + len(maybe_written) < FAILED_WRITES:
            assert asyncio.get_running_loop().time() < deadline, "too few failed writes"
            marker = uuid.uuid4().hex
            try:
                await session.add_items([{"marker": marker}])
                stored += 1
            except SessionBackendError as exc:
                (maybe_written if exc.may_have_written else not_written).append(marker)

    def killer() -> None:
        with psycopg.connect(_url(cluster, "faults-killer"), autocommit=True) as conn:
            while not stop.is_set():
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = %s",
                    (name,),
                )
                stop.wait(random.uniform(0.005, 0.05))

    killing = threading.Thread(target=killer)
    killing.start()
    try:
        await asyncio.gather(*(writer(index) for index in range(WRITERS)))
    finally:
        stop.set()
        killing.join()
    async with await psycopg.AsyncConnection.connect(_url(cluster, "faults-check")) as conn:
        cursor = await conn.execute(
            "SELECT payload->>'marker' FROM faults_written WHERE session_id LIKE 'writer-%'"
        )
        present = {row[0] for row in await cursor.fetchall()}
    await store.close()
    falsely_not_written = [marker for marker in not_written if marker in present]
    print(
        f"{len(not_written) + len(maybe_written)} failed writes: {len(not_written)} "
        f"not written, {len(maybe_written)} may have been written "
        f"({sum(marker in present for marker in maybe_written)} of them stored); "
        f"{stored} stored; {len(falsely_not_written)} false 'not written'"
    )
    assert len(not_written) + len(maybe_written) >= FAILED_WRITES
    assert len(present) >= stored  # every acknowledged write is there
    assert falsely_not_written == []
