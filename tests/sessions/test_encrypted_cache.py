"""EncryptedSession's cache of decrypted items, and SQLite's EncodedRead capability it
reads through: what a cached read must still do (expiry, tampering, fresh objects,
limits), on real SQLite sessions, read both as text and as decoded envelopes."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import sys
import threading
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import SessionClosedError, SessionConfigError, SQLiteSession, SQLiteStore
from agent_sessions.encrypted import (
    DEFAULT_CACHE_BYTES,
    EncryptedSession,
    generate_key,
)
from agent_sessions.protocol import EncodedAppend, EncodedRead

from .test_encrypted import (
    Clock,
    ProtocolOnlySession,
    flip_a_ciphertext_byte,
    numbered,
    rewrite_latest,
    warnings_of,
)
from .test_sqlite_conformance import write_raw_row

# The read paths: the envelopes' stored text (SQLite's get_encoded_items, the cache keyed
# by that text), and envelopes the store decoded (any session: keyed by their data), those
# written as dicts (the protocol's add_items) or as text (EncodedAppend without
# EncodedRead: a server backend's sessions).
READ_PATHS = ["as-text", "as-envelopes", "written-as-text-read-as-envelopes"]


class TextAppendingSession(ProtocolOnlySession):
    """The protocol plus EncodedAppend, without EncodedRead: envelopes written as their
    JSON text, read back decoded (what the wrapper sees of Redis, PostgreSQL or
    SQLAlchemy sessions)."""

    async def add_encoded_items(self, encoded: list[str]) -> None:
        await self.inner.add_encoded_items(encoded)


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore() as store:
        yield store


def wrap(inner: SQLiteSession, path: str, **options: Any) -> EncryptedSession:
    wrapped: Any = inner
    if path == "as-envelopes":
        wrapped = ProtocolOnlySession(inner)
    elif path == "written-as-text-read-as-envelopes":
        wrapped = TextAppendingSession(inner)
    return EncryptedSession(wrapped, **options)


def new_inner(store: SQLiteStore) -> SQLiteSession:
    return store.session(f"user-{uuid.uuid4().hex}")


# -- the capability ----------------------------------------------------------------------------


async def test_sqlite_sessions_read_their_items_as_the_stored_text(store: SQLiteStore) -> None:
    session = new_inner(store)
    assert isinstance(session, EncodedRead)
    await session.add_items([{"n": 0}, {"text": 'é "quoted"'}])
    await session.add_encoded_items(['{"n":2}'])
    assert await session.get_encoded_items() == [
        '{"n":0}',
        '{"text":"é \\"quoted\\""}',
        '{"n":2}',
    ]
    assert await session.get_encoded_items(2) == ['{"text":"é \\"quoted\\""}', '{"n":2}']
    assert await session.get_encoded_items(0) == []
    assert await session.get_encoded_items(2**70) == await session.get_encoded_items()


async def test_encoded_reads_check_the_limit_and_the_session_as_get_items_does(
    store: SQLiteStore,
) -> None:
    session = new_inner(store)
    with pytest.raises(TypeError):
        await session.get_encoded_items(True)
    with pytest.raises(ValueError, match="limit must be >= 0"):
        await session.get_encoded_items(-1)
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.get_encoded_items()


async def test_encoded_reads_skip_a_row_that_is_not_utf8_and_return_other_text_as_is(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    session = new_inner(store)
    await session.add_items([{"n": 0}])
    await write_raw_row(session, b"\xff\xfe")
    await write_raw_row(session, b"{not json")
    with caplog.at_level(logging.WARNING):
        assert await session.get_encoded_items() == ['{"n":0}', "{not json"]
    assert "skipping corrupt session item" in warnings_of(caplog)


async def test_a_large_encoded_read_runs_in_the_worker_and_returns_every_row(
    store: SQLiteStore,
) -> None:
    session = new_inner(store)
    await session.add_items(numbered(2_500))  # above the rows read inline
    texts = await session.get_encoded_items()
    assert texts == [f'{{"n":{n}}}' for n in range(2_500)]


# -- what the cache must still do --------------------------------------------------------------


@pytest.mark.parametrize("writer", ["this-wrapper", "another-wrapper"])
@pytest.mark.parametrize("path", READ_PATHS)
async def test_cached_reads_return_fresh_items_every_time(
    store: SQLiteStore, path: str, writer: str
) -> None:
    """Whether the cache learnt an item from add_items or from decrypting it (another
    wrapper wrote it), no read returns an object an earlier one returned."""
    inner, key = new_inner(store), generate_key()
    session = wrap(inner, path, key=key)
    written: list[dict[str, Any]] = [
        {"role": "user", "content": "flat"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "nested"}]},
    ]
    await (session if writer == "this-wrapper" else wrap(inner, path, key=key)).add_items(written)
    written[0]["content"] = "changed by the caller after add_items"
    for _ in range(3):  # the first read decodes (or decrypts), the others copy
        items = await session.get_items()
        assert items == [
            {"role": "user", "content": "flat"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "nested"}]},
        ]
        items[0]["content"] = "changed"
        items[1]["content"][0]["text"] = "changed"
        items[1]["extra"] = True
    again = await session.get_items()
    assert again[0] is not items[0]
    assert again[1]["content"] is not items[1]["content"]


@pytest.mark.parametrize("path", READ_PATHS)
async def test_what_a_wrapper_writes_it_reads_without_decrypting(
    store: SQLiteStore, path: str, decryptions: list[int]
) -> None:
    """Items added one at a time or in a batch are cached under the key the wrapper's
    reads look up (the stored text, or the data of a decoded envelope): a turn's read
    after its adds decrypts nothing. (Written as text and read decoded, the adds' entries
    were keyed by the text and never found: every first read decrypted them.)"""
    inner, key = new_inner(store), generate_key()
    session = wrap(inner, path, key=key)
    assert isinstance(session.session, EncodedAppend) == (path != "as-envelopes")
    await session.add_items([{"n": 0}])
    await session.add_items(numbered(3, start=1))
    await session.add_items([{"role": "assistant", "content": [{"text": "nested"}]}])
    expected = [*numbered(4), {"role": "assistant", "content": [{"text": "nested"}]}]
    assert await session.get_items() == expected
    assert await session.get_items(limit=2) == expected[-2:]
    assert decryptions == [0]
    assert await wrap(inner, path, key=key).get_items() == expected  # another wrapper: cold
    assert decryptions == [5]


@pytest.mark.parametrize("path", READ_PATHS)
async def test_a_cached_item_still_expires(store: SQLiteStore, path: str) -> None:
    clock = Clock()
    session = wrap(new_inner(store), path, key=generate_key(), ttl=60, clock=clock)
    await session.add_items([{"n": 0}])
    assert await session.get_items() == [{"n": 0}]  # now cached, decoded
    clock.now += 61
    assert await session.get_items() == []
    assert await session.get_items(limit=1) == []


@pytest.mark.parametrize(
    "tamper",
    [flip_a_ciphertext_byte, lambda envelope: envelope.update(at=envelope["at"] + 3_600_000)],
    ids=["flipped-byte", "write-time"],
)
@pytest.mark.parametrize("path", READ_PATHS)
async def test_an_item_tampered_with_after_it_was_cached_is_skipped(
    store: SQLiteStore,
    path: str,
    tamper: Callable[[dict[str, Any]], None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The cache answers only for the exact stored text (or, for decoded envelopes, the
    same data, key id and write time): a changed envelope is decrypted again, and fails."""
    clock, inner = Clock(), new_inner(store)
    session = wrap(inner, path, key=generate_key(), ttl=7200, clock=clock)
    await session.add_items(numbered(2))
    assert await session.get_items() == numbered(2)
    await rewrite_latest(inner, tamper)
    with caplog.at_level(logging.WARNING):
        assert await session.get_items() == numbered(1)
    assert "1 tampered or corrupt" in warnings_of(caplog)


@pytest.mark.parametrize("path", READ_PATHS)
async def test_a_wrapper_with_another_key_never_reads_from_a_cache(
    store: SQLiteStore, path: str
) -> None:
    inner = new_inner(store)
    key = generate_key()
    owner = wrap(inner, path, key=key)
    await owner.add_items(numbered(3))
    assert await owner.get_items() == numbered(3)
    assert await wrap(inner, path, key=generate_key()).get_items() == []
    rotated = wrap(inner, path, keys=[generate_key(), key])
    assert await rotated.get_items() == numbered(3)


@pytest.mark.parametrize("path", READ_PATHS)
async def test_pop_and_clear_act_on_the_store_whatever_is_cached(
    store: SQLiteStore, path: str
) -> None:
    session = wrap(new_inner(store), path, key=generate_key())
    await session.add_items(numbered(3))
    assert await session.get_items() == numbered(3)
    assert await session.pop_item() == {"n": 2}
    assert await session.get_items() == numbered(2)
    assert await session.get_items(limit=5) == numbered(2)
    await session.clear_session()
    assert await session.get_items() == []
    assert session._cache == {}  # the plaintext went with the history
    await session.add_items(numbered(1, start=7))
    assert await session.get_items() == [{"n": 7}]


@pytest.mark.parametrize("path", READ_PATHS)
async def test_limit_counts_readable_items_with_a_warm_cache(store: SQLiteStore, path: str) -> None:
    inner = new_inner(store)
    key = generate_key()
    session = wrap(inner, path, key=key)
    await session.add_items(numbered(5))
    await wrap(inner, path, key=generate_key()).add_items(numbered(30, start=100))
    await session.add_items(numbered(1, start=5))
    for _ in range(2):  # cold, then warm
        assert await session.get_items(limit=3) == numbered(6)[3:]
        assert await session.get_items(limit=6) == numbered(6)


async def test_the_cache_holds_at_most_cache_bytes(store: SQLiteStore) -> None:
    session = EncryptedSession(new_inner(store), key=generate_key(), cache_bytes=5_000)
    for start in range(0, 200, 20):
        await session.add_items(numbered(20, start=start))
        assert session._cache_chars <= 5_000
    assert await session.get_items() == numbered(200)
    assert 0 < session._cache_chars <= 5_000
    assert len(session._cache) < 200
    assert session._cache_chars == sum(entry[3] for entry in session._cache.values())


def test_threads_sharing_one_wrapper_keep_the_cache_counted_and_bounded(tmp_path: Path) -> None:
    """Four threads, each with its loop (``asyncio.run``), write and read one wrapper with a
    small cache: every item comes back, in each thread's order, and the cache's count of
    what it holds stays exact and within ``cache_bytes`` (threads that missed the same
    envelope at once counted it twice, and an eviction overwrote another thread's count:
    with 4 threads the count drifted to 2-4x what the cache held, which then evicted it
    all)."""
    inner = SQLiteSession("shared", str(tmp_path / "sessions.db"))
    session = EncryptedSession(inner, key=generate_key(), cache_bytes=3_000)
    failures: list[BaseException] = []

    def writer(thread: int) -> None:
        async def run() -> None:
            for n in range(150):
                await session.add_items([{"thread": thread, "n": n, "pad": "x" * 50}])
                await session.get_items(limit=20)

        try:
            asyncio.run(run())
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as CPython can
    try:
        threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert failures == []
    history = asyncio.run(session.get_items())
    for t in range(4):
        assert [item["n"] for item in history if item["thread"] == t] == list(range(150))
    assert session._cache_chars == sum(entry[3] for entry in session._cache.values())
    assert 0 < session._cache_chars <= 3_000
    asyncio.run(session.close())


async def test_cache_bytes_0_caches_nothing_and_reads_the_same(store: SQLiteStore) -> None:
    inner, key = new_inner(store), generate_key()
    session = EncryptedSession(inner, key=key, cache_bytes=0)
    await session.add_items(numbered(50))
    await EncryptedSession(inner, key=generate_key()).add_items(numbered(30))  # unreadable
    await session.add_items(numbered(1, start=50))
    assert await session.get_items(limit=10) == numbered(51)[-10:]
    assert await session.get_items() == numbered(51)
    assert session._cache == {}
    assert session._cache_chars == 0
    assert EncryptedSession(inner, key=key).cache_bytes == DEFAULT_CACHE_BYTES


async def test_closing_drops_the_cached_plaintext(store: SQLiteStore) -> None:
    session = EncryptedSession(new_inner(store), key=generate_key())
    await session.add_items(numbered(3))
    assert await session.get_items() == numbered(3)
    assert session._cache
    await session.close()
    assert session._cache == {}


@pytest.mark.parametrize(
    ("cache_bytes", "error"),
    [(-1, SessionConfigError), (True, TypeError), (1.5, TypeError), ("1", TypeError)],
)
def test_a_bad_cache_size_is_refused(cache_bytes: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="cache_bytes"):
        EncryptedSession(SQLiteSession("s"), key=generate_key(), cache_bytes=cache_bytes)  # type: ignore[call-overload]


async def test_envelopes_written_with_other_json_spacing_read_through_the_text_path(
    store: SQLiteStore,
) -> None:
    """A text not as this module writes it (here: json.dumps' default spacing, as another
    writer might store it) is decoded as JSON, not refused."""
    inner = new_inner(store)
    session = EncryptedSession(inner, key=generate_key(), cache_bytes=0)
    await session.add_items(numbered(2))
    await rewrite_latest(inner, lambda envelope: None)  # rewritten with ", " and ": "

    def raw_latest(connection: sqlite3.Connection) -> str:
        table = f"{inner.store.table_prefix}items"
        row = connection.execute(f"SELECT item FROM {table} ORDER BY id DESC LIMIT 1").fetchone()
        return str(row[0])

    assert '", "' in await inner.store._run(raw_latest)
    assert await session.get_items() == numbered(2)


@pytest.mark.parametrize("path", READ_PATHS)
async def test_ttl_and_cache_bytes_assigned_later_are_checked_then_used(
    store: SQLiteStore, path: str
) -> None:
    """``ttl`` and ``cache_bytes`` may be assigned, checked as the constructor checks them:
    a ``ttl`` of 0 or below would make every item expired, which ``pop_item`` removes, so
    it is refused with nothing changed; a smaller ``cache_bytes`` applies at once."""
    clock = Clock()
    session = wrap(new_inner(store), path, key=generate_key(), ttl=60, clock=clock)
    await session.add_items(numbered(30))
    assert await session.get_items() == numbered(30)
    for bad, error in ((0, SessionConfigError), (-1.0, SessionConfigError), ("60", TypeError)):
        with pytest.raises(error, match="ttl must be"):
            session.ttl = bad  # type: ignore[assignment]
    assert session.ttl == 60.0
    assert await session.pop_item() == {"n": 29}  # nothing else removed as expired
    assert await session.get_items() == numbered(29)
    clock.now += 61
    session.ttl = 120
    assert await session.get_items(limit=2) == numbered(29)[-2:]  # a longer TTL applies
    session.ttl = None
    clock.now += 1_000
    assert await session.get_items(limit=1) == numbered(29)[-1:]
    for bad, error in ((-1, SessionConfigError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(error, match="cache_bytes must be"):
            session.cache_bytes = bad  # type: ignore[assignment]
    assert session.cache_bytes == DEFAULT_CACHE_BYTES
    assert session._cache_chars > 300
    session.cache_bytes = 300
    assert session._cache_chars <= 300
    assert session._cache_chars == sum(entry[3] for entry in session._cache.values())
    session.cache_bytes = 0
    assert session._cache == {}
    assert await session.get_items() == numbered(29)
    assert session._cache == {}
