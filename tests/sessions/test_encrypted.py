"""EncryptedSession over SQLite: the conformance kit, and what encryption adds to it.

The wrapped sessions are real SQLite sessions; tampering and foreign keys are written into
the real database, and the plaintext is looked for in the database's own bytes.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agent_sessions import (
    InvalidItemError,
    Session,
    SessionClosedError,
    SessionConfigError,
    SessionSettings,
    SQLiteSession,
    SQLiteStore,
)
from agent_sessions.encrypted import (
    ENVELOPE_FORMAT,
    EncryptedSession,
    UnreadableItemError,
    generate_key,
)
from agent_sessions.protocol import ReplacingSession
from agent_sessions.testing import SessionConformance

from .test_sqlite_conformance import write_raw_row

SECRET = "the launch code is 0000-swordfish"


def open_encrypted_file(session_id: str, *, db_path: Path, key: str) -> EncryptedSession:
    """An encrypted session on the SQLite file (module level: child processes call it)."""
    return EncryptedSession(SQLiteSession(session_id, db_path), key=key)


class TestEncryptedSQLiteMemorySession(SessionConformance):
    """The kit through the wrapper, on one shared in-memory store."""

    store: SQLiteStore
    key = generate_key()

    @pytest.fixture(autouse=True)
    async def memory_store(self) -> AsyncIterator[None]:
        async with SQLiteStore() as store:
            self.store = store
            yield

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        inner = self.store.session(session_id)
        return EncryptedSession(inner, key=self.key, session_settings=session_settings)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, EncryptedSession)
        await write_raw_row(session.session, raw)


class TestEncryptedSQLiteFileSession(SessionConformance):
    """The kit through the wrapper on a file, child processes included."""

    supports_processes = True
    db_path: Path
    key = generate_key()

    @pytest.fixture(autouse=True)
    def database_file(self, tmp_path: Path) -> None:
        self.db_path = tmp_path / "encrypted.db"

    async def create_session(
        self, session_id: str, *, session_settings: SessionSettings | None = None
    ) -> Session:
        return EncryptedSession(
            SQLiteSession(session_id, self.db_path), key=self.key, session_settings=session_settings
        )

    def child_session_factory(self) -> Callable[[str], Session]:
        return functools.partial(open_encrypted_file, db_path=self.db_path, key=self.key)

    def failing_store_address(self) -> tuple[str, str]:
        return str(self.db_path.with_name("not-a-database.db")), ""

    async def create_failing_session(self, session_id: str) -> Session:
        path = self.db_path.with_name("not-a-database.db")
        path.write_bytes(b"not a SQLite database, " * 100)
        return EncryptedSession(SQLiteSession(session_id, path), key=self.key)

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, EncryptedSession)
        await write_raw_row(session.session, raw)


# -- helpers ---------------------------------------------------------------------------------


class Clock:
    """A clock the test moves by hand (seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore() as store:
        yield store


@pytest.fixture
def session_id() -> str:
    return f"user-{uuid.uuid4().hex}"


def numbered(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"n": n} for n in range(start, start + count)]


async def rewrite_latest(inner: SQLiteSession, change: Callable[[dict[str, Any]], None]) -> None:
    """Change the newest stored envelope of ``inner`` in place, in the database."""
    store, prefix = inner.store, inner.store.table_prefix

    def rewrite(connection: object) -> None:
        assert isinstance(connection, sqlite3.Connection)
        row_id, raw = connection.execute(
            f"SELECT id, item FROM {prefix}items WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            (inner.session_id,),
        ).fetchone()
        envelope = json.loads(raw)
        change(envelope)
        connection.execute(
            f"UPDATE {prefix}items SET item = ? WHERE id = ?", (json.dumps(envelope), row_id)
        )

    await store._run(rewrite)


def flip_a_ciphertext_byte(envelope: dict[str, Any]) -> None:
    data = bytearray(base64.b64decode(envelope["data"]))
    data[len(data) // 2] ^= 0x01
    envelope["data"] = base64.b64encode(bytes(data)).decode("ascii")


def database_bytes(directory: Path, name: str) -> bytes:
    """Every byte of the SQLite database ``name``.db: the file, its WAL and shared memory."""
    return b"".join(path.read_bytes() for path in sorted(directory.glob(f"{name}.db*")))


def warnings_of(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


# -- nothing readable at rest ----------------------------------------------------------------


async def test_the_database_file_holds_no_plaintext(tmp_path: Path, session_id: str) -> None:
    key = generate_key()
    item = {"role": "user", "content": SECRET}
    async with EncryptedSession(SQLiteSession(session_id, tmp_path / "enc.db"), key=key) as session:
        await session.add_items([item, {"role": "assistant", "content": [{"text": SECRET}]}])
        assert (await session.get_items())[0] == item
    # The same write without the wrapper, so the search below is shown to find plaintext.
    async with SQLiteSession(session_id, tmp_path / "plain.db") as plain:
        await plain.add_items([item])

    needles = [SECRET.encode(), b"swordfish", b"launch"]
    assert all(needle in database_bytes(tmp_path, "plain") for needle in needles)
    encrypted = database_bytes(tmp_path, "enc")
    assert encrypted
    assert not any(needle in encrypted for needle in needles)
    assert key.encode() not in encrypted


async def test_the_inner_session_holds_only_envelopes(store: SQLiteStore, session_id: str) -> None:
    inner = store.session(session_id)
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items([{"content": SECRET}])
    (envelope,) = await inner.get_items()
    assert set(envelope) == {"__enc__", "kid", "at", "data"}
    assert envelope["__enc__"] == ENVELOPE_FORMAT
    assert SECRET not in json.dumps(envelope)


async def test_equal_items_encrypt_to_different_ciphertexts(
    store: SQLiteStore, session_id: str
) -> None:
    inner = store.session(session_id)
    await EncryptedSession(inner, key=generate_key()).add_items([{"same": 1}, {"same": 1}])
    first, second = await inner.get_items()
    assert first["data"] != second["data"]


def nonce_of(envelope: dict[str, Any]) -> int:
    """The AES-GCM nonce (the first 12 bytes of the data) of a stored envelope."""
    return int.from_bytes(base64.b64decode(envelope["data"])[:12], "big")


async def test_a_wrappers_nonces_count_up_from_a_random_start(
    store: SQLiteStore, session_id: str
) -> None:
    """One item at a time, in batches, and through replace_items: every nonce of one
    wrapper is the one before plus 1 (mod 2**96), so none repeats; another wrapper of
    the same session and key starts elsewhere (an independent random start)."""
    inner, key = store.session(session_id), generate_key()
    session = EncryptedSession(inner, key=key)
    await session.add_items([{"n": 0}])
    await session.add_items(numbered(3, start=1))
    await session.add_items([{"n": 4}])
    await session.replace_items(numbered(5))
    await session.add_items([{"n": 5}])
    nonces = [nonce_of(envelope) for envelope in await inner.get_items()]
    assert len(nonces) == 6
    first = nonces[0] - 5  # the replaced history's first nonce came after five others
    assert nonces == [(first + 5 + n) % 2**96 for n in range(6)]
    assert await session.get_items() == numbered(6)

    other = store.session(f"{session_id}-other")
    await EncryptedSession(inner, key=key).add_items([{"n": 6}])
    await EncryptedSession(other, key=key).add_items([{"n": 0}])
    (last,) = await inner.get_items(limit=1)
    assert abs(nonce_of(last) - nonces[-1]) > 2**32  # 2**-64 to fail by chance


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")
def test_a_forked_child_does_not_reuse_its_parents_next_nonces() -> None:
    """A child forked from a process holding a session key seals under the same key, so
    it must not continue the parent's count: it starts at a new random nonce."""
    key = EncryptedSession(SQLiteSession("forked"), key=generate_key())._keys[0]
    key.seal_one('{"n":0}', 1)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        try:
            os.write(write_end, key.seal_one('{"n":1}', 1)[1].encode("ascii"))
        finally:
            os._exit(0)
    os.close(write_end)
    child_data = os.read(read_end, 1000).decode("ascii")
    os.close(read_end)
    assert os.waitpid(child, 0)[1] == 0
    parent_data = key.seal_one('{"n":1}', 1)[1]
    parent = int.from_bytes(base64.b64decode(parent_data)[:12], "big")
    child_nonce = int.from_bytes(base64.b64decode(child_data)[:12], "big")
    assert abs(parent - child_nonce) > 2**32
    assert key.unseal(child_data, 1) == '{"n":1}'


class ProtocolOnlySession:
    """A real SQLite session seen through the six members of the protocol only: no
    EncodedAppend capability, so the wrapper hands it envelope dicts."""

    def __init__(self, inner: SQLiteSession) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.session_settings: SessionSettings | None = inner.session_settings

    async def get_items(self, limit: int | None = None) -> list[Any]:
        return await self.inner.get_items(limit)

    async def add_items(self, items: list[Any]) -> None:
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        await self.inner.clear_session()


async def test_envelopes_written_as_text_are_the_json_add_items_writes(
    store: SQLiteStore, session_id: str
) -> None:
    """The EncodedAppend path (the envelope's JSON made by the wrapper) stores the same
    text as the protocol path (a dict the store encodes): same keys, order, separators."""
    key, at = generate_key(), 1_700_000_000.123
    items: list[dict[str, Any]] = [
        {"role": "user", "content": 'é " \\ \n \u2028'},
        {"n": [1, {"x": None}]},
    ]
    fast = EncryptedSession(store.session(session_id + "-a"), key=key, clock=lambda: at)
    plain = EncryptedSession(
        ProtocolOnlySession(store.session(session_id + "-b")), key=key, clock=lambda: at
    )
    assert fast._add_encoded is not None
    assert plain._add_encoded is None
    await fast.add_items(items)
    await plain.add_items(items)

    def raw_rows(connection: sqlite3.Connection) -> list[tuple[str, str]]:
        return connection.execute(
            f"SELECT session_id, item FROM {store.table_prefix}items WHERE session_id IN (?, ?) "
            "ORDER BY id",
            (session_id + "-a", session_id + "-b"),
        ).fetchall()

    rows = await store._run(raw_rows)
    texts = {sid: [text for owner, text in rows if owner == sid] for sid, _ in rows}
    a, b = texts[session_id + "-a"], texts[session_id + "-b"]
    assert len(a) == len(b) == 2
    for fast_text, plain_text in zip(a, b, strict=True):
        fast_envelope, plain_envelope = json.loads(fast_text), json.loads(plain_text)
        assert list(fast_envelope) == list(plain_envelope) == ["__enc__", "kid", "at", "data"]
        for text, envelope in ((fast_text, fast_envelope), (plain_text, plain_envelope)):
            assert text == json.dumps(envelope, separators=(",", ":"))
        assert fast_envelope["__enc__"] == plain_envelope["__enc__"] == ENVELOPE_FORMAT
        assert fast_envelope["at"] == plain_envelope["at"] == 1_700_000_000_123
    assert await fast.get_items() == items
    assert await plain.get_items() == items


@pytest.mark.parametrize(
    "encoded",
    [["not json"], [b"{}"], ["{}", 1], ["[1]"], ("{}",)],
    ids=["not-an-object", "bytes", "not-a-str", "an-array", "a-tuple"],
)
async def test_add_encoded_items_refuses_what_is_not_object_text_and_stores_nothing(
    store: SQLiteStore, session_id: str, encoded: Any
) -> None:
    session = store.session(session_id)
    with pytest.raises(InvalidItemError):
        await session.add_encoded_items(encoded)
    assert await session.get_items() == []
    await session.add_encoded_items(['{"a":1}', "{}"])
    await session.add_encoded_items([])
    assert await session.get_items() == [{"a": 1}, {}]


# -- keys ------------------------------------------------------------------------------------


async def test_a_wrong_key_reads_nothing_and_warns(
    store: SQLiteStore, session_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    right, wrong = generate_key(), generate_key()
    await EncryptedSession(store.session(session_id), key=right).add_items(numbered(3))
    with caplog.at_level(logging.WARNING):
        assert await EncryptedSession(store.session(session_id), key=wrong).get_items() == []
    assert "3 encrypted with a key not in keys" in warnings_of(caplog)
    assert await EncryptedSession(store.session(session_id), key=right).get_items() == numbered(3)


async def test_an_item_moved_to_another_session_does_not_decrypt_there(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    key = generate_key()
    alice, bob = (
        store.session("alice-" + uuid.uuid4().hex),
        store.session("bob-" + uuid.uuid4().hex),
    )
    await EncryptedSession(alice, key=key).add_items([{"content": SECRET}])
    await EncryptedSession(bob, key=key).add_items([{"content": "bob's own"}])
    await bob.add_items(await alice.get_items())  # a copy of alice's envelope, as stored
    with caplog.at_level(logging.WARNING):
        assert await EncryptedSession(bob, key=key).get_items() == [{"content": "bob's own"}]
    assert "1 encrypted with a key not in keys" in warnings_of(caplog)


async def test_rotation_writes_with_the_first_key_and_reads_with_any(
    store: SQLiteStore, session_id: str
) -> None:
    old, new = generate_key(), generate_key()
    await EncryptedSession(store.session(session_id), key=old).add_items([{"written": "old"}])
    rotated = EncryptedSession(store.session(session_id), keys=[new, old])
    await rotated.add_items([{"written": "new"}])
    both = [{"written": "old"}, {"written": "new"}]
    assert await rotated.get_items() == both
    # The new item is under the new key only; once the old key is retired, only it reads.
    assert await EncryptedSession(store.session(session_id), key=new).get_items() == both[1:]
    assert await EncryptedSession(store.session(session_id), key=old).get_items() == both[:1]
    assert await EncryptedSession(store.session(session_id), keys=[old, new]).get_items() == both


async def test_keys_given_as_bytes_and_as_their_base64_are_the_same_key(
    store: SQLiteStore, session_id: str
) -> None:
    key = generate_key()
    raw = base64.urlsafe_b64decode(key)
    await EncryptedSession(store.session(session_id), key=raw).add_items([{"n": 1}])
    assert await EncryptedSession(store.session(session_id), key=key).get_items() == [{"n": 1}]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "exactly one of key= or keys="),
        ({"key": generate_key(), "keys": [generate_key()]}, "exactly one of key= or keys="),
        ({"keys": []}, "keys= is empty"),
        ({"keys": generate_key()}, "a list of keys"),
        ({"key": "correct horse battery staple"}, "a password is not a key"),
        ({"key": b"0123456789"}, "has 10 bytes"),
        ({"key": generate_key(), "ttl": 0}, "ttl must be"),
        ({"key": generate_key(), "ttl": -5}, "ttl must be"),
        ({"key": generate_key(), "ttl": float("nan")}, "ttl must be"),
    ],
)
def test_bad_options_raise_session_config_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(SessionConfigError, match=message):
        EncryptedSession(SQLiteSession("s"), **options)


@pytest.mark.parametrize(
    "options",
    [{"key": 12345}, {"key": generate_key(), "ttl": True}, {"key": generate_key(), "ttl": "60"}],
)
def test_options_of_the_wrong_type_raise_type_error(options: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        EncryptedSession(SQLiteSession("s"), **options)


def test_wrapping_something_that_is_not_a_session_raises_type_error() -> None:
    with pytest.raises(TypeError, match="wraps a Session, got dict"):
        EncryptedSession({"session_id": "x"}, key=generate_key())  # type: ignore[call-overload]


# -- tampering -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tamper",
    [
        flip_a_ciphertext_byte,
        lambda envelope: envelope.update(
            at=envelope["at"] + 3_600_000
        ),  # an older item made younger
        lambda envelope: envelope.update(data=envelope["data"][:-8]),  # truncated
        lambda envelope: envelope.update(data="not base64 at all!"),
        lambda envelope: envelope.update(at="yesterday"),
        lambda envelope: envelope.pop("data"),
    ],
    ids=["flipped-byte", "write-time", "truncated", "not-base64", "at-not-int", "no-data"],
)
async def test_a_tampered_item_is_skipped_with_a_warning_and_the_others_read(
    store: SQLiteStore,
    session_id: str,
    caplog: pytest.LogCaptureFixture,
    tamper: Callable[[dict[str, Any]], None],
) -> None:
    inner = store.session(session_id)
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items(numbered(2))
    await session.add_items([{"content": SECRET}])
    await rewrite_latest(inner, tamper)
    await session.add_items([{"n": 2}])
    with caplog.at_level(logging.WARNING):
        assert await session.get_items() == numbered(3)
        assert await session.get_items(limit=2) == numbered(3)[1:]
    assert "1 tampered or corrupt" in warnings_of(caplog)


def _swap_data_char(text: str) -> str:
    """A different base64 character in the middle of the envelope's data."""
    at = text.index('"data":"') + 8 + 20
    return text[:at] + ("B" if text[at] != "B" else "C") + text[at + 1 :]


def _in_data(text: str, offset: int, inserted: str, replace: int = 0) -> str:
    at = text.index('"data":"') + 8 + offset
    return text[:at] + inserted + text[at + replace :]


def _escaped(text: str, field: str) -> str:
    """The first character of a string field written as a JSON escape (same value)."""
    at = text.index(f'"{field}":"') + len(field) + 4
    return f"{text[:at]}\\u{ord(text[at]):04x}{text[at + 1 :]}"


def _at(text: str, change: Callable[[str], str]) -> str:
    start = text.index('"at":') + 5
    end = text.index(",", start)
    return text[:start] + change(text[start:end]) + text[end:]


# A stored envelope's text as written (compact JSON), changed; what a read must make of it.
STORED_TEXTS: dict[str, tuple[Callable[[str], str], str]] = {
    "as-written": (lambda text: text, "read"),
    "data-char-changed": (_swap_data_char, "tampered or corrupt"),
    "data-truncated": (lambda text: text[: text.index('"}') - 4] + '"}', "tampered or corrupt"),
    "data-extended": (lambda text: text[:-2] + 'AAAA"}', "tampered or corrupt"),
    "data-not-base64-char": (lambda text: _in_data(text, 12, "!"), "read"),  # lenient base64
    "data-char-escaped": (lambda text: _escaped(text, "data"), "read"),
    "data-raw-quote": (lambda text: _in_data(text, 12, '"'), "corrupt row"),
    # A backslash and "x": never a JSON escape (a backslash before the data's own next
    # character was one whenever that was b, f, n, r, t, u or /: about 1 run in 10).
    "data-raw-backslash": (lambda text: _in_data(text, 12, "\\x", 2), "corrupt row"),
    "kid-char-escaped": (lambda text: _escaped(text, "kid"), "read"),
    "kid-other": (
        lambda text: text[: text.index('"kid":"') + 7] + "AAAAAAAA" + text[text.index('","at"') :],
        "encrypted with a key not in keys",
    ),
    "at-plus-one": (lambda text: _at(text, lambda at: str(int(at) + 1)), "tampered or corrupt"),
    "at-leading-zero": (lambda text: _at(text, lambda at: "0" + at), "corrupt row"),
    "at-arabic-digits": (
        lambda text: _at(text, lambda at: at.translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))),
        "corrupt row",
    ),
    "at-negative": (lambda text: _at(text, lambda at: "-" + at), "tampered or corrupt"),
    "spaces-inside": (lambda text: text.replace('":', '": '), "read"),
    "space-after": (lambda text: text + " ", "read"),
    "fields-reordered": (
        lambda text: json.dumps(dict(reversed(json.loads(text).items())), separators=(",", ":")),
        "read",
    ),
}


@pytest.mark.parametrize("name", list(STORED_TEXTS))
async def test_a_stored_envelope_text_is_decided_alike_cold_and_warm(
    store: SQLiteStore, session_id: str, caplog: pytest.LogCaptureFixture, name: str
) -> None:
    """Reads take a stored text of this module's exact layout apart without decoding it
    as JSON: any other text (escapes, spaces, another order, a changed byte) must still
    mean what its JSON means, read by a new wrapper (nothing cached) and again."""
    change, outcome = STORED_TEXTS[name]
    key = generate_key()
    inner = store.session(session_id)
    clock = Clock()
    await EncryptedSession(inner, key=key, clock=clock, ttl=60).add_items(
        [{"n": 0}, {"content": SECRET, "nested": {"list": [1, 2]}}]
    )
    prefix = inner.store.table_prefix

    def rewrite(connection: object) -> None:
        assert isinstance(connection, sqlite3.Connection)
        row_id, text = connection.execute(
            f"SELECT id, item FROM {prefix}items WHERE session_id = ? ORDER BY id DESC LIMIT 1",
            (inner.session_id,),
        ).fetchone()
        connection.execute(
            f"UPDATE {prefix}items SET item = ? WHERE id = ?", (change(text), row_id)
        )

    await inner.store._run(rewrite)
    reader = EncryptedSession(inner, key=key, clock=clock, ttl=60)
    expected: list[dict[str, Any]] = [{"n": 0}]
    if outcome == "read":
        expected.append({"content": SECRET, "nested": {"list": [1, 2]}})
    # A row that is not JSON counts towards the store's window, as the store skips it.
    latest = [] if outcome == "corrupt row" else expected[-1:]
    for attempt in ("cold", "warm"):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            assert await reader.get_items() == expected, attempt
            assert await reader.get_items(limit=1) == latest, attempt
        if outcome in ("tampered or corrupt", "encrypted with a key not in keys"):
            assert f"1 {outcome}" in warnings_of(caplog), attempt
        elif outcome == "corrupt row":  # not JSON: skipped as a store skips such a row
            assert warnings_of(caplog), attempt
        else:
            assert not warnings_of(caplog), attempt


async def test_plaintext_items_in_the_inner_session_are_never_returned(
    store: SQLiteStore, session_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    inner = store.session(session_id)
    await inner.add_items([{"content": "written before encryption"}])
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items([{"n": 0}])
    with caplog.at_level(logging.WARNING):
        assert await session.get_items() == [{"n": 0}]
    assert "1 not encrypted" in warnings_of(caplog)


# -- expiry ----------------------------------------------------------------------------------


async def test_items_older_than_the_ttl_are_never_returned(
    store: SQLiteStore, session_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    session = EncryptedSession(store.session(session_id), key=generate_key(), ttl=60, clock=clock)
    await session.add_items([{"at": 0}])
    clock.now += 50
    await session.add_items([{"at": 50}])
    clock.now += 10  # exactly 60 s after the first: not yet older than the ttl
    assert await session.get_items() == [{"at": 0}, {"at": 50}]
    clock.now += 1
    with caplog.at_level(logging.WARNING):
        assert await session.get_items() == [{"at": 50}]
        assert await session.get_items(limit=2) == [{"at": 50}]
    assert "1 expired" in warnings_of(caplog)
    clock.now += 50
    assert await session.get_items() == []


async def test_each_add_carries_its_own_write_time_within_a_millisecond_or_not(
    store: SQLiteStore, session_id: str
) -> None:
    # One-item adds reuse the envelope head and associated data of the previous one when
    # written in the same millisecond: each envelope must still name, and authenticate,
    # the time it was written at.
    clock, key = Clock(1_700_000_000.0), generate_key()
    session = EncryptedSession(store.session(session_id), key=key, clock=clock)
    times = [0.0, 0.0004, 0.002, 0.0, 0.002]  # same ms, next, back, a batch, same again
    for n, offset in enumerate(times):
        clock.now = 1_700_000_000.0 + offset
        await session.add_items([{"n": n}] if n != 3 else [{"n": 3}, {"n": 3.5}])
    await session.add_items([{"n": 5}])
    stored = [envelope["at"] for envelope in await session.session.get_items()]
    base = 1_700_000_000_000
    assert stored == [base, base, base + 2, base, base, base + 2, base + 2]
    fresh = EncryptedSession(store.session(session_id), key=key, clock=clock, cache_bytes=0)
    expected = [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 3.5}, {"n": 4}, {"n": 5}]
    assert await fresh.get_items() == expected
    fresh.ttl = 0.0015  # at base + 2 ms, only what was written then is live
    assert await fresh.get_items() == [{"n": 2}, {"n": 4}, {"n": 5}]


async def test_adds_check_that_the_wrapped_session_is_open(
    store: SQLiteStore, session_id: str
) -> None:
    # Over a store's session the envelopes go to its store directly: its closed check
    # still applies, and nothing is written.
    inner = store.session(session_id)
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items([{"n": 0}])
    await inner.close()
    with pytest.raises(SessionClosedError):
        await session.add_items([{"n": 1}])
    assert len(await store.session(session_id).get_items()) == 1


class RecordingSQLiteSession(SQLiteSession):
    """A SQLiteSession with its own add_encoded_items, which records what it is given."""

    written: list[list[str]]

    async def add_encoded_items(self, encoded: list[str]) -> None:
        self.written = [*getattr(self, "written", []), list(encoded)]
        await super().add_encoded_items(encoded)


async def test_a_session_overriding_add_encoded_items_gets_the_envelopes(tmp_path: Path) -> None:
    inner = RecordingSQLiteSession("recorded", tmp_path / "recorded.db")
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items([{"n": 0}])
    await session.add_items([{"n": 1}, {"n": 2}])
    assert [len(texts) for texts in inner.written] == [1, 2]
    assert await session.get_items() == [{"n": 0}, {"n": 1}, {"n": 2}]
    await session.close()


async def test_the_readers_ttl_applies_to_items_already_stored(
    store: SQLiteStore, session_id: str
) -> None:
    clock, key = Clock(), generate_key()
    await EncryptedSession(store.session(session_id), key=key, clock=clock).add_items([{"n": 0}])
    clock.now += 3600
    without_ttl = EncryptedSession(store.session(session_id), key=key, clock=clock)
    assert await without_ttl.get_items() == [{"n": 0}]
    with_ttl = EncryptedSession(store.session(session_id), key=key, ttl=600, clock=clock)
    assert await with_ttl.get_items() == []


async def test_pop_item_removes_expired_items_and_returns_the_latest_live_one(
    store: SQLiteStore, session_id: str
) -> None:
    clock, inner, key = Clock(), store.session(session_id), generate_key()
    session = EncryptedSession(inner, key=key, ttl=60, clock=clock)
    await session.add_items([{"n": 0}])
    clock.now += 100
    await session.add_items([{"n": 1}])
    # Two stale items written "earlier" by a writer whose clock is behind.
    stale = EncryptedSession(inner, key=key, clock=Clock(clock.now - 1000))
    await stale.add_items([{"stale": 1}, {"stale": 2}])
    assert await session.pop_item() == {"n": 1}
    assert len(await inner.get_items()) == 1  # the two expired ones went with it
    assert await session.pop_item() is None  # {"n": 0} has expired too
    assert await inner.get_items() == []


# -- limits count readable items -------------------------------------------------------------


async def test_limit_counts_readable_items_past_many_unreadable_ones(
    store: SQLiteStore, session_id: str
) -> None:
    key = generate_key()
    session = EncryptedSession(store.session(session_id), key=key)
    await session.add_items(numbered(5))
    foreign = EncryptedSession(store.session(session_id), key=generate_key())
    await foreign.add_items([{"foreign": n} for n in range(40)])
    await session.add_items(numbered(1, start=5))
    assert await session.get_items(limit=3) == numbered(6)[3:]
    assert await session.get_items(limit=6) == numbered(6)
    assert await session.get_items(limit=100) == numbered(6)
    settings = EncryptedSession(
        store.session(session_id), key=key, session_settings=SessionSettings(limit=2)
    )
    assert await settings.get_items() == numbered(6)[4:]


class WindowRecordingSession(SQLiteSession):
    """A real SQLite session that notes the limit of every read (of items, or of their
    stored text: the EncodedRead capability the wrapper reads through)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.windows: list[int | None] = []

    async def get_items(self, limit: int | None = None) -> list[Any]:
        self.windows.append(limit)
        return await super().get_items(limit)

    async def get_encoded_items(self, limit: int | None = None) -> list[str]:
        self.windows.append(limit)
        return await super().get_encoded_items(limit)


async def test_a_read_costs_one_window_of_the_limit_when_everything_is_readable() -> None:
    inner = WindowRecordingSession("windows")
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items(numbered(1_000))
    assert await session.get_items(limit=10) == numbered(1_000)[-10:]
    assert inner.windows == [10]


async def test_a_read_widens_its_window_by_doubling_past_unreadable_items() -> None:
    key = generate_key()
    inner = WindowRecordingSession("windows")
    await EncryptedSession(inner, key=key).add_items(numbered(100))
    await EncryptedSession(inner, key=generate_key()).add_items(numbered(45))  # unreadable
    session = EncryptedSession(inner, key=key)
    assert await session.get_items(limit=10) == numbered(100)[-10:]
    assert inner.windows == [10, 20, 40, 80]


async def test_the_settings_default_to_the_wrapped_sessions(store: SQLiteStore) -> None:
    inner = store.session("s-" + uuid.uuid4().hex, session_settings=SessionSettings(limit=4))
    assert EncryptedSession(inner, key=generate_key()).session_settings == SessionSettings(limit=4)


# -- pop_item and unreadable items -----------------------------------------------------------


async def test_pop_item_removes_tampered_items_above_the_latest_readable_one(
    store: SQLiteStore, session_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    inner = store.session(session_id)
    session = EncryptedSession(inner, key=generate_key())
    await session.add_items(numbered(2))
    await session.add_items([{"content": SECRET}])
    await rewrite_latest(inner, flip_a_ciphertext_byte)
    with caplog.at_level(logging.WARNING):
        assert await session.pop_item() == {"n": 1}
    assert "1 tampered or corrupt" in warnings_of(caplog)
    assert await session.get_items() == numbered(1)
    assert len(await inner.get_items()) == 1


async def test_pop_item_keeps_an_item_of_a_foreign_key_and_raises(
    store: SQLiteStore, session_id: str
) -> None:
    inner, mine, theirs = store.session(session_id), generate_key(), generate_key()
    await EncryptedSession(inner, key=mine).add_items(numbered(2))
    await EncryptedSession(inner, key=theirs).add_items([{"theirs": 1}])
    before = await inner.get_items()
    with pytest.raises(UnreadableItemError, match="put back, not removed"):
        await EncryptedSession(inner, key=mine).pop_item()
    assert await inner.get_items() == before
    assert await EncryptedSession(inner, key=theirs).pop_item() == {"theirs": 1}
    assert await EncryptedSession(inner, key=mine).pop_item() == {"n": 1}


async def test_pop_item_keeps_a_plaintext_item_and_raises(
    store: SQLiteStore, session_id: str
) -> None:
    inner = store.session(session_id)
    await inner.add_items([{"legacy": "plaintext"}])
    with pytest.raises(UnreadableItemError, match="not encrypted"):
        await EncryptedSession(inner, key=generate_key()).pop_item()
    assert await inner.get_items() == [{"legacy": "plaintext"}]


# -- concurrency -----------------------------------------------------------------------------


async def test_concurrent_add_items_from_many_tasks_keep_every_batch_whole(
    tmp_path: Path, session_id: str
) -> None:
    key, db_path = generate_key(), tmp_path / "concurrent.db"
    sessions = [EncryptedSession(SQLiteSession(session_id, db_path), key=key) for _ in range(4)]

    async def write(writer: int) -> None:
        for batch in range(5):
            items = [{"w": writer, "b": batch, "i": i} for i in range(3)]
            await sessions[writer % 4].add_items(items)

    await asyncio.gather(*(write(writer) for writer in range(8)))
    items = await sessions[0].get_items()
    assert len(items) == 8 * 5 * 3
    for start in range(0, len(items), 3):
        w, b = items[start]["w"], items[start]["b"]
        assert items[start : start + 3] == [{"w": w, "b": b, "i": i} for i in range(3)]
    for writer in range(8):
        assert [it["b"] for it in items if it["w"] == writer and it["i"] == 0] == list(range(5))
    for session in sessions:
        await session.close()


# -- without cryptography --------------------------------------------------------------------


def test_agent_sessions_imports_without_cryptography() -> None:
    script = (
        "import sys\n"
        "sys.modules['cryptography'] = None\n"  # as if not installed
        "import agent_sessions\n"
        "assert 'agent_sessions.encrypted' not in sys.modules\n"
        "try:\n"
        "    import agent_sessions.encrypted\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert 'pip install "agent-sessions[encryption]"' in done.stdout


# -- under the Agents SDK's Runner -----------------------------------------------------------


async def test_the_agents_sdk_runner_keeps_an_encrypted_history(tmp_path: Path) -> None:
    from agents import Agent, Runner

    from agent_sessions.sdk import as_agents_session

    from .test_agents_sdk import NO_TRACING, ScriptedModel, contents

    model, key = ScriptedModel(), generate_key()
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    for text in ("My name is Ada, " + SECRET, "What is my name?"):
        inner = SQLiteSession("user-1", tmp_path / "chat.db")
        async with EncryptedSession(inner, key=key) as session:
            await Runner.run(agent, text, session=as_agents_session(session), run_config=NO_TRACING)
    assert contents(model.inputs[1]) == [
        ("user", "My name is Ada, " + SECRET),
        ("assistant", "reply 1"),
        ("user", "What is my name?"),
    ]
    stored = database_bytes(tmp_path, "chat")
    assert b"Ada" not in stored
    assert b"reply 1" not in stored


# -- replace_items, for a CompactingSession above -----------------------------------------


async def test_compaction_over_an_encrypted_session_replaces_atomically(
    store: SQLiteStore, session_id: str
) -> None:
    from agent_sessions.bounded import SUMMARY_PREFIX, CompactingSession
    from agent_sessions.models import OfflineModel

    inner = store.session(session_id)
    encrypted = EncryptedSession(inner, key=generate_key())
    assert isinstance(encrypted, ReplacingSession)
    history = [{"role": "user", "content": SECRET}, {"role": "assistant", "content": "ok"}]
    await encrypted.add_items([*history, {"role": "user", "content": "next"}])
    compacting = CompactingSession(
        encrypted, model=OfflineModel(["a summary"]), threshold=2, keep_last_turns=1
    )
    assert await compacting.compact() is True
    assert await encrypted.get_items() == [
        {"role": "system", "content": SUMMARY_PREFIX + "a summary"},
        {"role": "user", "content": "next"},
    ]
    stored = await inner.get_items()
    assert [envelope["__enc__"] for envelope in stored] == [ENVELOPE_FORMAT] * 2
    assert "summary" not in json.dumps(stored)
    await encrypted.replace_items([])
    assert await inner.get_items() == []


async def test_replace_items_over_a_session_without_it_writes_nothing(
    store: SQLiteStore, session_id: str
) -> None:
    from agent_sessions.bounded import CompactingSession
    from agent_sessions.models import OfflineModel

    inner = store.session(session_id)
    encrypted = EncryptedSession(ProtocolOnlySession(inner), key=generate_key())
    await encrypted.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    with pytest.raises(NotImplementedError, match="ProtocolOnlySession cannot replace"):
        await encrypted.replace_items([{"n": 1}])
    assert len(await encrypted.get_items()) == 2
    compacting = CompactingSession(  # falls back to clear_session + add_items
        encrypted, model=OfflineModel(["s"]), threshold=1, keep_last_turns=1
    )
    assert await compacting.compact() is True
    assert (await encrypted.get_items())[1:] == [{"role": "user", "content": "b"}]
