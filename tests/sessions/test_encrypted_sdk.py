"""EncryptedSession reads the Agents SDK's encrypted items: the real SDK's
``agents.extensions.memory.EncryptedSession`` writes them (real Fernet, real HKDF) into
our real SQLite sessions, in memory and on a file, and ours reads them back with the same
key, beside its own, over both read paths (stored text, decoded envelopes).

(The same over Redis: tests/servers/test_encrypted_redis.py.)
"""

from __future__ import annotations

import base64
import json
import logging
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import agents
import pytest
from agents.extensions.memory import EncryptedSession as SDKEncryptedSession
from cryptography.fernet import Fernet

from agent_sessions import Session, SessionConfigError, SessionSettings, SQLiteSession, SQLiteStore
from agent_sessions.encrypted import (
    ENVELOPE_FORMAT,
    EncryptedSession,
    UnreadableItemError,
    generate_key,
)
from agent_sessions.testing import SessionConformance

from .test_encrypted import Clock, warnings_of
from .test_encrypted_cache import READ_PATHS, wrap
from .test_sqlite_conformance import write_raw_row

NO_KEY = "sealed by the Agents SDK with a key not in keys or sdk_keys (or tampered)"
PASSWORD = "correct horse battery staple"  # a raw string: the SDK takes it "for compatibility"


def sdk_wrapper(inner: Session, key: str, *, session_id: str | None = None) -> Any:
    """The SDK's own EncryptedSession over one of our sessions (typed Any: the SDK types its
    underlying session as its own SessionABC)."""
    underlying: Any = inner
    return SDKEncryptedSession(
        session_id=inner.session_id if session_id is None else session_id,
        underlying_session=underlying,
        encryption_key=key,
        ttl=10**9,  # the SDK's own reads in these tests see every item it wrote
    )


def said(who: str, count: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"{who} {n}"} for n in range(start, start + count)]


def sdk_shaped(index: int) -> dict[str, Any]:
    """An output message as the SDK's Runner saves it (nested content parts, unicode)."""
    return {
        "id": f"msg_{index:04d}",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": f"réponse {index} ✓", "annotations": []}],
    }


def old_sdk_envelope(sdk: Any, item: dict[str, Any], written_at: int) -> dict[str, Any]:
    """The envelope the SDK's wrapper writes for ``item``, as if written at ``written_at``
    (seconds): its own cipher, with Fernet's encrypt_at_time (a token carries its time)."""
    plaintext = json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    token = sdk.cipher.encrypt_at_time(plaintext, written_at).decode("ascii")
    return {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": token}


def change_payload(envelope: dict[str, Any], change: Callable[[bytes], bytes]) -> None:
    raw = base64.urlsafe_b64decode(envelope["payload"])
    envelope["payload"] = base64.urlsafe_b64encode(change(raw)).decode("ascii")


def flip(offset: int) -> Callable[[bytes], bytes]:
    def flipped(raw: bytes) -> bytes:
        changed = bytearray(raw)
        changed[offset] ^= 0x01
        return bytes(changed)

    return flipped


async def stored_envelopes(inner: SQLiteSession) -> list[dict[str, Any]]:
    """The envelopes as the wrapped session stores them."""
    return await inner.get_items()


async def rewrite_all(inner: SQLiteSession, change: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``change`` to every stored envelope of ``inner`` that is the SDK's."""
    envelopes = await inner.get_items()
    for envelope in envelopes:
        if envelope.get("__enc__") == 1:
            change(envelope)
    await inner.replace_items(envelopes)


@pytest.fixture
async def store() -> AsyncIterator[SQLiteStore]:
    async with SQLiteStore() as store:
        yield store


@pytest.fixture
def inner(store: SQLiteStore) -> SQLiteSession:
    return store.session(f"user-{uuid.uuid4().hex}")


@pytest.fixture
def fernet_decryptions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-element list counting every Fernet decryption from the test's start (ours of
    the SDK's tokens; the SDK's own reads are kept out of the windows counted)."""
    count = [0]
    original = Fernet.decrypt

    def counting(self: Fernet, token: bytes | str, ttl: int | None = None) -> bytes:
        count[0] += 1
        return original(self, token, ttl)

    monkeypatch.setattr(Fernet, "decrypt", counting)
    return count


# -- the SDK's items, read by ours -------------------------------------------------------------


@pytest.mark.parametrize("path", READ_PATHS)
async def test_items_the_sdk_wrote_read_back_equal(inner: SQLiteSession, path: str) -> None:
    key = generate_key()
    items = [*said("sdk", 2), sdk_shaped(0), {"role": "user", "content": 'ünïcode \u2603 "q"'}]
    await sdk_wrapper(inner, key).add_items(items)
    ours = wrap(inner, path, key=key)
    assert await ours.get_items() == items
    assert await ours.get_items() == items  # from the cache
    assert await ours.get_items(limit=2) == items[2:]


async def test_the_sdks_items_on_a_file_read_by_a_new_process_wrapper(tmp_path: Path) -> None:
    path, key = tmp_path / "chats.db", generate_key()
    await sdk_wrapper(SQLiteSession("u1", path), key).add_items([*said("sdk", 2), sdk_shaped(1)])
    reopened = EncryptedSession(SQLiteSession("u1", path), key=key)
    assert await reopened.get_items() == [*said("sdk", 2), sdk_shaped(1)]
    await reopened.close()
    assert b"sdk 0" not in path.read_bytes()


async def test_the_sdks_own_sqlite_tables_are_read_in_place(tmp_path: Path) -> None:
    """The SDK's EncryptedSession over the SDK's SQLiteSession (its tables, its JSON with
    spaces), read by ours on the same file."""
    path, key = tmp_path / "conversations.db", generate_key()
    sdk_store = agents.SQLiteSession("user_123", str(path))
    sdk = SDKEncryptedSession(
        session_id="user_123", underlying_session=sdk_store, encryption_key=key
    )
    await sdk.add_items([{"role": "user", "content": "hello"}, cast(Any, sdk_shaped(0))])
    sdk_store.close()
    raw = sqlite3.connect(path).execute("SELECT message_data FROM agent_messages").fetchall()
    assert [json.loads(row[0])["__enc__"] for row in raw] == [1, 1]

    ours = EncryptedSession(SQLiteSession("user_123", path), key=key, ttl=600)
    assert await ours.get_items() == [{"role": "user", "content": "hello"}, sdk_shaped(0)]
    await ours.add_items([{"role": "user", "content": "and ours"}])
    assert [item["content"] for item in (await ours.get_items(limit=2))] == [
        sdk_shaped(0)["content"],
        "and ours",
    ]
    await ours.close()


@pytest.mark.parametrize("path", READ_PATHS)
async def test_a_mixed_history_reads_in_order_and_limit_counts_readable_items(
    inner: SQLiteSession, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    key = generate_key()
    sdk, stranger = sdk_wrapper(inner, key), sdk_wrapper(inner, generate_key())
    ours = wrap(inner, path, key=key)
    await sdk.add_items(said("sdk", 2))
    await ours.add_items(said("ours", 2))
    await stranger.add_items(said("stranger", 3))  # the SDK's, of a key ours does not hold
    await sdk.add_items(said("sdk", 1, start=2))
    await ours.add_items(said("ours", 1, start=2))
    expected = [*said("sdk", 2), *said("ours", 2), *said("sdk", 1, 2), *said("ours", 1, 2)]
    for cache_bytes in (0, 4 * 2**20):  # without the cache, then with it (twice)
        reader = wrap(inner, path, key=key, cache_bytes=cache_bytes)
        for _ in range(2):
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                assert await reader.get_items() == expected
                assert await reader.get_items(limit=3) == expected[-3:]
                assert await reader.get_items(limit=4) == expected[-4:]  # past the stranger's
            assert f"3 {NO_KEY}" in warnings_of(caplog)
    assert await ours.get_items(limit=1) == said("ours", 1, 2)


async def test_rotated_keys_read_the_sdks_items_of_each(inner: SQLiteSession) -> None:
    old, new = generate_key(), generate_key()
    await sdk_wrapper(inner, old).add_items(said("old", 1))
    await sdk_wrapper(inner, new).add_items(said("new", 1))
    ours = EncryptedSession(inner, keys=[generate_key(), new, old])
    assert await ours.get_items() == [*said("old", 1), *said("new", 1)]


async def test_keys_read_the_sdks_items_as_the_sdk_read_those_keys(store: SQLiteStore) -> None:
    """A str key is read as the SDK reads its encryption_key (the bytes it is the base64
    of when they are 32, else the str's UTF-8); 32 bytes are what the SDK read from their
    base64; Fernet.generate_key()'s bytes go to sdk_keys as the SDK took them."""
    raw = os.urandom(32)
    longer = base64.urlsafe_b64encode(os.urandom(48)).decode("ascii")  # ours: 48 bytes
    fernet_key = Fernet.generate_key()
    cases: list[tuple[str, dict[str, Any]]] = [
        (base64.urlsafe_b64encode(raw).decode("ascii"), {"key": raw}),
        (longer, {"key": longer}),
        (fernet_key.decode("ascii"), {"key": generate_key(), "sdk_keys": [fernet_key]}),
        (PASSWORD, {"key": generate_key(), "sdk_keys": [PASSWORD]}),
    ]
    for sdk_key, options in cases:
        inner = store.session(f"user-{uuid.uuid4().hex}")
        await sdk_wrapper(inner, sdk_key).add_items(said("sdk", 1))
        assert await EncryptedSession(inner, **options).get_items() == said("sdk", 1), sdk_key


async def test_an_sdk_item_copied_into_another_session_does_not_decrypt_there(
    store: SQLiteStore, caplog: pytest.LogCaptureFixture
) -> None:
    key = generate_key()
    first, second = store.session("first"), store.session("second")
    await sdk_wrapper(first, key).add_items(said("sdk", 1))
    await second.add_items(await first.get_items())  # the envelope, moved
    with caplog.at_level(logging.WARNING):
        assert await EncryptedSession(second, key=key).get_items() == []
    assert f"1 {NO_KEY}" in warnings_of(caplog)


async def test_writes_stay_ours_and_the_sdk_reads_only_its_own(inner: SQLiteSession) -> None:
    key = generate_key()
    sdk = sdk_wrapper(inner, key)
    await sdk.add_items(said("sdk", 1))
    ours = EncryptedSession(inner, key=key)
    await ours.add_items(said("ours", 1))
    markers = [envelope["__enc__"] for envelope in await stored_envelopes(inner)]
    assert markers == [1, ENVELOPE_FORMAT]
    assert await sdk.get_items() == said("sdk", 1)  # switching is one way


# -- expiry ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", READ_PATHS)
async def test_the_tokens_own_time_expires_sdk_items_against_our_ttl(
    inner: SQLiteSession, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    key, clock = generate_key(), Clock()
    sdk = sdk_wrapper(inner, key)
    now = int(clock.now)
    await inner.add_items(
        [
            old_sdk_envelope(sdk, {"n": "an hour old"}, now - 3600),
            old_sdk_envelope(sdk, {"n": "a minute old"}, now - 60),
        ]
    )
    assert [item["n"] for item in await sdk_wrapper(inner, key).get_items()] == [
        "an hour old",
        "a minute old",
    ]  # genuine SDK envelopes: the SDK reads them (with a ttl above their age)
    for cache_bytes in (0, 4 * 2**20):
        reader = wrap(inner, path, key=key, clock=clock, cache_bytes=cache_bytes)
        assert await reader.get_items() == [{"n": "an hour old"}, {"n": "a minute old"}]
        reader.ttl = 600
        with caplog.at_level(logging.WARNING):
            assert await reader.get_items() == [{"n": "a minute old"}]  # cached or not
        assert "1 expired" in warnings_of(caplog)
        assert await reader.get_items(limit=1) == [{"n": "a minute old"}]
        reader.ttl = 30
        assert await reader.get_items() == []


async def test_sdk_items_expire_as_our_clock_moves(inner: SQLiteSession) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items(said("sdk", 2))
    clock = Clock(now=float(int(__import__("time").time())))
    ours = EncryptedSession(inner, key=key, ttl=600, clock=clock)
    assert await ours.get_items() == said("sdk", 2)
    clock.now += 601 + 1  # whole seconds: a token's time has no fraction
    assert await ours.get_items() == []


async def test_a_token_made_younger_is_not_returned(
    inner: SQLiteSession, caplog: pytest.LogCaptureFixture
) -> None:
    key, clock = generate_key(), Clock()
    sdk = sdk_wrapper(inner, key)
    envelope = old_sdk_envelope(sdk, {"n": "old"}, int(clock.now) - 3600)
    change_payload(envelope, lambda raw: raw[:1] + int(clock.now).to_bytes(8, "big") + raw[9:])
    await inner.add_items([envelope])
    with caplog.at_level(logging.WARNING):
        assert await EncryptedSession(inner, key=key, ttl=600, clock=clock).get_items() == []
    assert f"1 {NO_KEY}" in warnings_of(caplog)  # its HMAC covers the time


# -- unreadable SDK items ----------------------------------------------------------------------


TAMPERINGS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("flipped-ciphertext-byte", lambda e: change_payload(e, flip(30)), NO_KEY),
    ("flipped-hmac-byte", lambda e: change_payload(e, flip(-1)), NO_KEY),
    ("truncated", lambda e: change_payload(e, lambda raw: raw[:-5]), "tampered or corrupt"),
    ("a-block-less", lambda e: change_payload(e, lambda raw: raw[:-16]), NO_KEY),
    (
        "not-fernet",
        lambda e: change_payload(e, lambda raw: b"\x81" + raw[1:]),
        "tampered or corrupt",
    ),
    ("not-base64", lambda e: e.update(payload="€ not base64"), "tampered or corrupt"),
    ("payload-not-str", lambda e: e.update(payload=12345), "tampered or corrupt"),
    ("no-v", lambda e: e.pop("v"), "tampered or corrupt"),
    ("another-marker", lambda e: e.update(__enc__=2), "not encrypted"),
]


@pytest.mark.parametrize("path", READ_PATHS)
@pytest.mark.parametrize(
    ("tamper", "reason"),
    [(tamper, reason) for _, tamper, reason in TAMPERINGS],
    ids=[name for name, _, _ in TAMPERINGS],
)
async def test_a_changed_sdk_envelope_is_skipped_with_the_one_warning(
    inner: SQLiteSession,
    path: str,
    tamper: Callable[[dict[str, Any]], None],
    reason: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items(said("sdk", 2))
    ours = wrap(inner, path, key=key)
    assert await ours.get_items() == said("sdk", 2)  # cached as they were

    def tamper_first(envelopes: list[dict[str, Any]]) -> None:
        tamper(envelopes[0])

    envelopes = await inner.get_items()
    tamper_first(envelopes)
    await inner.replace_items(envelopes)
    await ours.add_items(said("ours", 1))
    with caplog.at_level(logging.WARNING):
        assert await ours.get_items() == [*said("sdk", 1, 1), *said("ours", 1)]
        # A window holding the changed one: it is skipped there too.
        assert await ours.get_items(limit=3) == [*said("sdk", 1, 1), *said("ours", 1)]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"encrypted session {inner.session_id!r}: get_items skipped unreadable items: 1 {reason}"
    ] * 2
    # A new wrapper (nothing cached) decides it alike.
    assert await wrap(inner, path, key=key).get_items() == [*said("sdk", 1, 1), *said("ours", 1)]


async def test_a_wrong_key_reads_none_of_the_sdks_items(
    inner: SQLiteSession, caplog: pytest.LogCaptureFixture
) -> None:
    await sdk_wrapper(inner, generate_key()).add_items(said("sdk", 3))
    with caplog.at_level(logging.WARNING):
        assert await EncryptedSession(inner, key=generate_key()).get_items() == []
    assert f"3 {NO_KEY}" in warnings_of(caplog)


async def test_a_password_key_is_read_through_sdk_keys_and_never_written_with(
    inner: SQLiteSession,
) -> None:
    await sdk_wrapper(inner, PASSWORD).add_items(said("sdk", 2))
    with pytest.raises(SessionConfigError, match="a password is not a key"):
        EncryptedSession(inner, key=PASSWORD)
    ours = EncryptedSession(inner, key=generate_key(), sdk_keys=[PASSWORD])
    await ours.add_items(said("ours", 1))
    assert await ours.get_items() == [*said("sdk", 2), *said("ours", 1)]
    assert [envelope["__enc__"] for envelope in await stored_envelopes(inner)] == [
        1,
        1,
        ENVELOPE_FORMAT,
    ]
    assert await sdk_wrapper(inner, PASSWORD).get_items() == said("sdk", 2)
    assert "sdk_keys=1" in repr(ours)


# -- pop_item ----------------------------------------------------------------------------------


async def test_pop_item_returns_and_removes_an_sdk_item_of_a_key_held(inner: SQLiteSession) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items(said("sdk", 2))
    ours = EncryptedSession(inner, key=key)
    assert await ours.get_items() == said("sdk", 2)  # cached: the pop must still remove it
    assert await ours.pop_item() == said("sdk", 1, 1)[0]
    assert await ours.get_items() == said("sdk", 1)
    assert len(await inner.get_items()) == 1


async def test_pop_item_puts_back_an_sdk_item_no_key_decrypts(inner: SQLiteSession) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items(said("mine", 1))
    await sdk_wrapper(inner, generate_key()).add_items(said("stranger", 1))
    before = await inner.get_items()
    ours = EncryptedSession(inner, key=key)
    with pytest.raises(UnreadableItemError, match=r"keys=\[\.\.\.\] or sdk_keys=\[\.\.\.\]"):
        await ours.pop_item()
    assert await inner.get_items() == before  # put back on top, unchanged
    assert await ours.get_items() == said("mine", 1)


async def test_pop_item_removes_expired_and_malformed_sdk_items_above(
    inner: SQLiteSession, caplog: pytest.LogCaptureFixture
) -> None:
    key, clock = generate_key(), Clock()
    sdk = sdk_wrapper(inner, key)
    now = int(clock.now)
    malformed = old_sdk_envelope(sdk, {"n": "x"}, now)
    malformed["payload"] = malformed["payload"][:40]
    await inner.add_items(
        [
            old_sdk_envelope(sdk, {"n": "live"}, now - 10),
            old_sdk_envelope(sdk, {"n": "expired"}, now - 3600),
            malformed,
        ]
    )
    ours = EncryptedSession(inner, key=key, ttl=600, clock=clock)
    with caplog.at_level(logging.WARNING):
        assert await ours.pop_item() == {"n": "live"}
    assert await inner.get_items() == []
    assert "pop_item removed unreadable items: 1 expired, 1 tampered or corrupt" in warnings_of(
        caplog
    )


# -- the cache ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", READ_PATHS)
async def test_sdk_items_are_decrypted_once_then_read_from_the_cache(
    inner: SQLiteSession, path: str, fernet_decryptions: list[int]
) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items([*said("sdk", 3), sdk_shaped(0)])
    ours = wrap(inner, path, key=key)
    before = fernet_decryptions[0]
    first = await ours.get_items()
    assert fernet_decryptions[0] - before == 4
    first[0]["content"] = "changed by the caller"
    first[3]["content"][0]["text"] = "changed too"
    for _ in range(3):
        assert await ours.get_items() == [*said("sdk", 3), sdk_shaped(0)]  # fresh objects
    assert await ours.get_items(limit=2) == [*said("sdk", 1, 2), sdk_shaped(0)]
    assert fernet_decryptions[0] - before == 4
    # A rewritten envelope (same item, a new token) is a miss: decrypted again.
    envelopes = await inner.get_items()
    envelopes[1] = old_sdk_envelope(sdk_wrapper(inner, key), said("sdk", 1, 1)[0], 1_700_000_000)
    await inner.replace_items(envelopes)
    assert await ours.get_items() == [*said("sdk", 3), sdk_shaped(0)]
    assert fernet_decryptions[0] - before == 5


# -- replace_items -----------------------------------------------------------------------------


async def test_replace_items_rewrites_a_mixed_history_in_our_format(inner: SQLiteSession) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items(said("sdk", 2))
    ours = EncryptedSession(inner, key=key)
    await ours.add_items(said("ours", 1))
    history = await ours.get_items()
    await ours.replace_items(history)
    assert [envelope["__enc__"] for envelope in await stored_envelopes(inner)] == [
        ENVELOPE_FORMAT
    ] * 3
    assert await EncryptedSession(inner, key=key).get_items() == history


# -- the SDK's constructor keywords ------------------------------------------------------------


async def test_the_sdks_keywords_build_our_wrapper(inner: SQLiteSession) -> None:
    key = generate_key()
    await sdk_wrapper(inner, key).add_items(said("sdk", 1))
    session = EncryptedSession(
        session_id=inner.session_id, underlying_session=inner, encryption_key=key
    )
    assert session.ttl == 600  # the SDK's default
    assert session.session is inner
    await session.add_items(said("ours", 1))
    assert await session.get_items() == [*said("sdk", 1), *said("ours", 1)]
    assert (await stored_envelopes(inner))[-1]["__enc__"] == ENVELOPE_FORMAT
    given = EncryptedSession(
        session_id=inner.session_id,
        underlying_session=inner,
        encryption_key=key,
        ttl=None,
        sdk_keys=[PASSWORD],
    )
    assert given.ttl is None
    assert await given.get_items() == [*said("sdk", 1), *said("ours", 1)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sdk_keys": PASSWORD}, "sdk_keys= takes a list of keys, not one key"),
        ({"sdk_keys": [""]}, "sdk key 0 is empty"),
        ({"sdk_keys": [PASSWORD, b"not base64 of 32 bytes"]}, "sdk key 1 is bytes but not"),
        (
            {"session_id": "other", "underlying_session": "inner", "encryption_key": "key"},
            "session_id='other' is not the wrapped session's id",
        ),
        (
            {"session_id": "s", "underlying_session": "inner", "encryption_key": PASSWORD},
            r"a password is not a key.*sdk_keys=\[encryption_key\]",
        ),
        ({"session_id": "s", "underlying_session": "inner"}, "encryption_key= missing"),
        ({"underlying_session": "inner", "encryption_key": "key"}, "session_id= missing"),
        ({"session_id": "s", "encryption_key": "key"}, "underlying_session= missing"),
        ({"session": "inner", "underlying_session": "inner"}, "give the wrapped session once"),
        (
            {
                "session_id": "s",
                "underlying_session": "inner",
                "encryption_key": "key",
                "key": "key",
            },
            "give one of them, not both",
        ),
    ],
)
def test_bad_sdk_arguments_raise_session_config_error(
    options: dict[str, Any], message: str
) -> None:
    inner, key = SQLiteSession("s"), generate_key()
    given: dict[str, Any] = {
        name: inner if value == "inner" else key if value == "key" else value
        for name, value in options.items()
    }
    if not {"session", "underlying_session", "session_id", "encryption_key"} & given.keys():
        given["session"] = inner
        given.setdefault("key", key)
    with pytest.raises(SessionConfigError, match=message):
        EncryptedSession(**given)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sdk_keys": [42]}, "sdk key 0 must be the str given to the Agents SDK"),
        ({"sdk_keys": 42}, "sdk_keys= takes a list of keys, got int"),
    ],
)
def test_sdk_keys_of_the_wrong_type_raise_type_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        EncryptedSession(SQLiteSession("s"), key=generate_key(), **options)


def test_the_sdks_positional_form_is_refused_with_its_keywords_named() -> None:
    positional: Any = EncryptedSession
    with pytest.raises(TypeError, match=r"got str: .*EncryptedSession\(session_id=\.\.\."):
        positional("s", key=generate_key())
    with pytest.raises(TypeError):  # underlying_session and encryption_key positionally
        positional("s", SQLiteSession("s"), generate_key())


class TestEncryptedSessionOfTheSDKsKeywords(SessionConformance):
    """The kit through the wrapper built with the Agents SDK's keywords (ttl 600)."""

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
        return EncryptedSession(
            session_id=session_id,
            underlying_session=self.store.session(session_id),
            encryption_key=self.key,
            session_settings=session_settings,
        )

    async def write_corrupt_item(self, session: Session, raw: bytes) -> None:
        assert isinstance(session, EncryptedSession)
        await write_raw_row(session.session, raw)
