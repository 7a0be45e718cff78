"""Encryption at rest, with optional expiry, for any session: a wrapper over the protocol.

::

    from agent_sessions import SQLiteSession
    from agent_sessions.encrypted import EncryptedSession, generate_key

    key = generate_key()  # keep it in your secret manager, not next to the database
    session = EncryptedSession(SQLiteSession("user_123", "chats.db"), key=key, ttl=3600)

Every item is encrypted before it reaches the wrapped session, which stores only
envelopes (JSON objects holding ciphertext); ``get_items`` decrypts them. What a caller may
rely on:

- **Cipher.** AES-256-GCM (authenticated: a changed byte fails to decrypt, it is never
  returned altered), a 96-bit nonce per item: each wrapper's session key starts at a
  random one (``os.urandom``) and counts up, one per item, so a seal makes no system
  call. Nonces never repeat within a wrapper, and across all the wrappers (in any
  process) that write under one session key the chance of any repeat is at most that of
  a fresh random nonce per item (the bound is in ``_Nonces``); a forked child starts
  afresh. Storage shows which items of a session one wrapper wrote (consecutive
  nonces), not what they hold. Chosen over Fernet for its
  associated data (the header and the session id are authenticated without being
  encrypted), its 256-bit key and its size (no second base64 layer, no HMAC block).
- **Keys.** The master key is 32 or more random bytes (or their base64, as
  :func:`generate_key` returns; a password is refused: HKDF does not harden it). Each session
  encrypts with its own key, derived with HKDF-SHA256 from the master key and the session
  id, and binds the session id as associated data: an item copied into another session
  does not decrypt there. ``keys=[new, old, ...]`` rotates: writes use the first key,
  reads use whichever one an item names (a short key id in the envelope, derived per
  session, so it does not link sessions that share a key).
- **Expiry.** With ``ttl`` (seconds), an item older than ``ttl`` at read time is never
  returned. The write time is authenticated, so it cannot be moved forward; it is checked
  against the reader's ``ttl``, so shortening it applies to items already stored. Expired
  items stay in the wrapped store until ``clear_session``, ``pop_item`` or the store's own
  expiry (Redis ``ttl=``) removes them.
- **Unreadable items never break a read.** Expired items, items whose key is not among
  ``keys`` (or, the Agents SDK's, ``sdk_keys``), tampered or malformed envelopes and
  plaintext items are skipped; each call that skipped any logs one warning (logger
  ``agent_sessions``) counting them by reason.
- **Limits count readable items.** ``get_items(limit=N)`` returns the latest ``N`` items
  that decrypt, reading a window twice as large from the wrapped session each time the
  last one held too few. A row the wrapped store itself skips as corrupt (not JSON, written
  by something else) still counts towards that store's window, as the conformance kit
  documents for every backend.
- **pop_item** returns the latest readable item. Above it, expired, tampered and
  malformed items are removed (they are of no use to anyone holding these keys). An item
  encrypted with a key this session does not hold, or stored as plaintext, is someone's
  readable history: ``pop_item`` puts it back on top (``add_items``) and raises
  :class:`UnreadableItemError` rather than destroy it. Putting back is a second call: a
  writer that appends in between ends up below it.
- **Positions are not bound.** The protocol gives a wrapper no stable position (``pop_item``
  and other writers move them), so someone who can write to the store can reorder or
  delete items of a session, or replay one of its own items; they cannot read, alter,
  forge or move items between sessions.
- **replace_items** (the optional ReplacingSession capability) encrypts the new history
  and hands it to the wrapped session's ``replace_items``, so a ``CompactingSession`` over
  this wrapper compacts atomically too; over a session without it, it raises
  ``NotImplementedError`` before writing anything.
- **A cache of decrypted items, in this process.** A conversation reads the same history
  every turn, so each wrapper keeps, in memory, the plaintext of the items it wrote or
  decrypted, keyed by the envelope exactly as stored (its text, or, from a store that
  returns decoded envelopes, its ciphertext together with its key id and write time):
  unique per write (a random nonce), so a changed envelope is decrypted again and fails.
  A cached item is still checked against ``ttl`` at every read, each read returns fresh
  objects (a copy, never the cached dict), ``limit``, ``pop_item``, ``clear_session``
  and rotation mean what they mean without it (the store is read every time: the cache
  only spares decryptions). It holds plaintext in the memory of the process that holds
  the key anyway, never on disk; ``cache_bytes`` bounds it (about that many characters
  of envelopes and plaintext, default :data:`DEFAULT_CACHE_BYTES`, oldest entries
  dropped first), ``cache_bytes=0`` turns it off, ``clear_session`` and ``close()``
  empty it.
- **Reads through the EncodedRead capability.** Over a session that has it
  (:class:`~agent_sessions.protocol.EncodedRead`: ``SQLiteSession``), envelopes are read
  as their stored text, so that a cached one is not decoded at all, and one not cached
  that has exactly the layout this module writes is taken apart without decoding it as
  JSON (any other text, and any that fails there, is decoded and decided as before);
  over any other session the wrapper reads decoded envelopes, as before.
- **The Agents SDK's envelopes.** Items that ``agents.extensions.memory.EncryptedSession``
  wrote into the wrapped session (``{"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload":
  Fernet token}``) are read too, in their place among ours. Each of ``keys`` also gives
  the Fernet key the SDK derives from it (HKDF-SHA256, the session id as salt), the key
  read as the SDK reads its ``encryption_key`` (a str that is the URL-safe base64 of 32
  bytes: those bytes; any other str: its UTF-8; bytes: as they are);
  ``sdk_keys=[...]`` adds keys for reading them only, taken as the SDK took them (any
  non-empty str, including a password, which ``keys`` refuses: never used to write).
  Writes are always ours. What is promised above holds for them: their write time is
  the token's timestamp (seconds, authenticated), checked against ``ttl`` (the SDK's
  wrapper defaults to 600 seconds, this one to none); a token that no key authenticates
  is skipped as "sealed by the Agents SDK with a key not in keys or sdk_keys (or
  tampered)" (a Fernet token names no key, so a key not held cannot be told from a
  changed byte) and ``pop_item`` keeps it, as an item of a key not held; one that is not
  a Fernet token at all is tampered; the cache keys them by their stored text, or read
  decoded by their token. The SDK's wrapper cannot read what this one writes: switching
  is one way. ``EncryptedSession(session_id=..., underlying_session=...,
  encryption_key=..., ttl=600)``, the SDK's keywords, builds this wrapper (``ttl``
  defaulting to the SDK's 600); ``session_id`` must be the wrapped session's, and
  ``encryption_key`` a key this wrapper writes with (else give ``key=generate_key(),
  sdk_keys=[encryption_key]``). Its ``max_scan_items`` is not taken.
- **Lifecycle.** The wrapper owns the wrapped session: ``close()`` closes it too (and
  empties the cache).

``cryptography`` is an optional dependency: ``pip install "agent-sessions[encryption]"``.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import itertools
import logging
import math
import os
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias, cast, overload

from ._json import _scan_once, decode_item, encode_items
from .base import MAX_INT64, BaseSession, GivenSettings
from .errors import SessionClosedError, SessionConfigError, SessionError
from .protocol import (
    EncodedAppend,
    EncodedRead,
    Item,
    ReplacingSession,
    Session,
    SessionABC,
    SessionSettings,
    validate_session_id,
)

try:
    from cryptography.exceptions import InvalidTag
    from cryptography.fernet import Fernet, InvalidToken
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        'agent_sessions.encrypted needs the cryptography package: pip install "agent-sessions'
        '[encryption]"'
    ) from exc

__all__ = [
    "DEFAULT_CACHE_BYTES",
    "ENVELOPE_FORMAT",
    "EncryptedSession",
    "UnreadableItemError",
    "generate_key",
]

logger = logging.getLogger("agent_sessions")

ENVELOPE_FORMAT: Final = "agent_sessions.aes256gcm.v1"
"""The ``__enc__`` marker of the envelopes this module writes. An envelope is
``{"__enc__": ENVELOPE_FORMAT, "kid": key id, "at": write time in ms, "data": base64 of
nonce + ciphertext + tag}``; the associated data binds the format, key id, write time and
session id."""

MIN_KEY_BYTES: Final = 32
_NONCE_BYTES: Final = 12
_NONCE_MASK: Final = (1 << (8 * _NONCE_BYTES)) - 1
_KEY_ID_BYTES: Final = 6
_HKDF_INFO: Final = b"agent_sessions.encrypted.v1\x00"
_a2b_base64: Final = binascii.a2b_base64
_b2a_base64: Final = binascii.b2a_base64
# An envelope's JSON text up to its data (then the data, then '"}'), as encode_items
# writes the dict: {"__enc__": ENVELOPE_FORMAT, "kid": ..., "at": ..., "data": ...}.
_ENVELOPE_TEXT_HEAD: Final = '{"__enc__":"' + ENVELOPE_FORMAT + '","kid":"%s","at":%d,"data":"'
# Its pieces, for reading such a text back without decoding it as JSON (_open_texts):
# the key id is _KEY_ID_CHARS long (base64 of _KEY_ID_BYTES), the write time digits.
_TEXT_PREFIX: Final = '{"__enc__":"' + ENVELOPE_FORMAT + '","kid":"'
_TEXT_AT: Final = '","at":'
_TEXT_DATA: Final = ',"data":"'
_PREFIX_CHARS: Final = len(_TEXT_PREFIX)
_KEY_ID_CHARS: Final = len(base64.urlsafe_b64encode(bytes(_KEY_ID_BYTES)))
_KID_END: Final = _PREFIX_CHARS + _KEY_ID_CHARS
_AT_START: Final = _KID_END + len(_TEXT_AT)
_DATA_OFFSET: Final = len(_TEXT_DATA)

DEFAULT_CACHE_BYTES: Final = 4 * 2**20
"""``cache_bytes=``'s default: the plaintext cache of one wrapper holds about this many
characters of stored envelopes and their plaintext JSON (4 MiB), oldest entries dropped
first."""

_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_CacheEntry: TypeAlias = "tuple[int, str, Item | tuple[str] | str, int]"
"""A cache entry: write time (ms), key id, the plaintext and the entry's size in
characters. The plaintext is a copy of a flat item (its values all immutable scalars: a
shallow copy is a whole fresh item), ``(JSON text,)`` for any other item, or the JSON
text of an item written or decrypted and not returned from the cache yet (its first hit
turns it into one of the other two)."""
_CacheKey: TypeAlias = "str | tuple[str]"
"""What a cache entry is found by: an envelope's stored text (EncodedRead), or, read as
decoded envelopes, the data of one of ours (a str) or ``(payload,)``, the Fernet token of
one of the Agents SDK's (a tuple: no lookup of our data, a str, can find it)."""

# The Agents SDK's envelopes (agents.extensions.memory.EncryptedSession):
# {"__enc__": 1, "v": 1, "kid": "hkdf-v1", "payload": Fernet token}, the Fernet key derived
# with HKDF-SHA256 (32 bytes, salt the session id, this info) from the master key.
_SDK_KEY_ID: Final = "hkdf-v1"
_SDK_HKDF_INFO: Final = b"agents.session-store.hkdf.v1"
_SDK_KEY_BYTES: Final = 32
# A Fernet token: version byte 0x80, timestamp (8 bytes, seconds), IV (16), ciphertext
# (PKCS7-padded AES-128-CBC: whole 16-byte blocks, at least one), HMAC-SHA256 (32).
_FERNET_VERSION: Final = 0x80
_FERNET_OVERHEAD: Final = 1 + 8 + 16 + 32
_SDK_TTL: Final = 600.0
"""The ``ttl`` of the SDK's keywords when none is given: the SDK's own default."""


class _Default:
    """``ttl``'s default: ``None`` (no expiry), or the SDK's 600 seconds with its keywords."""


_DEFAULT: Final = _Default()

# Why an item was skipped; the first two are removed by pop_item, the last two kept.
_EXPIRED, _TAMPERED = "expired", "tampered or corrupt"
_UNKNOWN_KEY, _PLAINTEXT = "encrypted with a key not in keys", "not encrypted"
# A well-formed Agents SDK envelope that no key authenticates: Fernet cannot tell a key
# not held from a changed byte (its tokens name no key), so it is kept as _UNKNOWN_KEY is.
_SDK_UNKNOWN_KEY: Final = (
    "sealed by the Agents SDK with a key not in keys or sdk_keys (or tampered)"
)
_DISCARDED_BY_POP: Final = frozenset({_EXPIRED, _TAMPERED})


class UnreadableItemError(SessionError):
    """``pop_item`` found, on top of the session, an item it must not destroy: encrypted
    with a key this session does not hold, or stored as plaintext. It was put back;
    nothing was removed."""


def generate_key() -> str:
    """A new random master key (32 bytes, URL-safe base64): pass it as ``key=``."""
    return base64.urlsafe_b64encode(os.urandom(MIN_KEY_BYTES)).decode("ascii")


class EncryptedSession(SessionABC):
    """``session``'s items encrypted at rest (AES-256-GCM, a key per session derived with
    HKDF), optionally unreadable once older than ``ttl`` seconds.

    Give exactly one of ``key`` (a master key) or ``keys`` (newest first: writes use the
    first, reads any). ``clock`` returns the current time in seconds (default
    ``time.time``). ``session_settings`` defaults to the wrapped session's; their ``limit``
    counts readable items. ``cache_bytes`` sizes the in-process cache of decrypted
    items (about that many characters; ``0`` turns it off): see the module's
    documentation.

    The Agents SDK's envelopes (``agents.extensions.memory.EncryptedSession``) in the
    wrapped session are read too, with the SDK's derivation of each of ``keys`` and of
    each of ``sdk_keys``: master keys given to the SDK's wrapper as ``encryption_key``, for
    reading its items only (any string the SDK took, a password included; never used to
    write). The SDK's own keywords are taken as well,
    ``EncryptedSession(session_id=..., underlying_session=..., encryption_key=...,
    ttl=600)``: the same wrapper, its ``ttl`` defaulting to the SDK's 600 seconds.
    """

    @overload
    def __init__(
        self,
        session: Session,
        *,
        key: str | bytes | None = None,
        keys: Sequence[str | bytes] | None = None,
        ttl: float | None = None,
        sdk_keys: Sequence[str | bytes] | None = None,
        clock: Callable[[], float] = time.time,
        session_settings: SessionSettings | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None: ...

    @overload
    def __init__(
        self,
        *,
        session_id: str,
        underlying_session: Session,
        encryption_key: str | bytes,
        ttl: float | None = 600,
        sdk_keys: Sequence[str | bytes] | None = None,
        clock: Callable[[], float] = time.time,
        session_settings: SessionSettings | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None: ...

    def __init__(
        self,
        session: Session | None = None,
        *,
        key: str | bytes | None = None,
        keys: Sequence[str | bytes] | None = None,
        ttl: float | _Default | None = _DEFAULT,
        sdk_keys: Sequence[str | bytes] | None = None,
        clock: Callable[[], float] = time.time,
        session_settings: SessionSettings | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        session_id: str | None = None,
        underlying_session: Session | None = None,
        encryption_key: str | bytes | None = None,
    ) -> None:
        if underlying_session is not None or session_id is not None or encryption_key is not None:
            session, key = _sdk_form(
                session, key, keys, session_id, underlying_session, encryption_key
            )
            if isinstance(ttl, _Default):
                ttl = _SDK_TTL
        elif isinstance(ttl, _Default):
            ttl = None
        if not isinstance(session, Session):
            raise TypeError(_not_a_session(session))
        self._cache_bytes = _check_cache_bytes(cache_bytes)
        self.session_id = validate_session_id(session.session_id)
        self.session = session
        self._given = GivenSettings(session_settings)
        self._ttl = _check_ttl(ttl)
        self._clock = clock
        given = _given_keys(key, keys)
        self._keys = [
            _SessionKey.derive(_master_bytes(master, f"key {index}"), self.session_id)
            for index, master in enumerate(given)
        ]
        self._by_id = {session_key.key_id: session_key for session_key in reversed(self._keys)}
        # What the Agents SDK's HKDF derives its Fernet keys from, for each of keys then
        # sdk_keys (duplicates dropped); the Fernet keys are derived at the first SDK
        # envelope met (_sdk_fernets), so a wrapper that never meets one pays nothing.
        read_only = _sdk_given(sdk_keys)
        inputs = [_sdk_input(master) for master in given]
        inputs += [_sdk_master_bytes(master, index) for index, master in enumerate(read_only)]
        self._sdk_inputs: tuple[bytes, ...] = tuple(dict.fromkeys(inputs))
        self._sdk_keys_given = len(read_only)
        self._sdk_ciphers: list[Fernet] | None = None
        # The wrapped session's EncodedAppend capability, when it has it: the envelopes go
        # to the store as the JSON text made here, not as dicts it validates and encodes.
        self._add_encoded = (
            session.add_encoded_items if isinstance(session, EncodedAppend) else None
        )
        # A store's session whose add_encoded_items is BaseSession's: its shape checks
        # are spared (the texts are made here, each a JSON object) and the envelopes go to
        # its store's _add_items, as that method sends them, after the same closed check.
        self._direct: BaseSession[Any] | None = (
            session
            if isinstance(session, BaseSession)
            and type(session).add_encoded_items is BaseSession.add_encoded_items
            else None
        )
        # Its EncodedRead capability: envelopes read as their stored text, which keys the
        # cache and is parsed here, not decoded as JSON by the store.
        self._get_encoded = session.get_encoded_items if isinstance(session, EncodedRead) else None
        # Stored text (or, read as dicts, the envelope's data) -> _CacheEntry, in the
        # order written; _cache_chars is the sum of their sizes.
        self._cache: dict[_CacheKey, _CacheEntry] = {}
        self._cache_chars = 0
        # A session may be shared by threads, each with its loop: what adds to the cache
        # and counts it, and the eviction that walks it, hold this lock (a lookup or the
        # replacement of one entry is a single dict operation and needs none).
        self._cache_lock = threading.Lock()
        self._closed = False

    @property
    def ttl(self) -> float | None:
        """Seconds after which an item is unreadable (``None``: never). Assignable, checked
        as given to the constructor (a ``ttl`` of 0 would expire every item, which
        ``pop_item`` removes); the next call uses it."""
        return self._ttl

    @ttl.setter
    def ttl(self, ttl: float | None) -> None:
        self._ttl = _check_ttl(ttl)

    @property
    def cache_bytes(self) -> int:
        """The cache's bound, in characters (``0``: no cache). Assignable, checked as given
        to the constructor; a smaller bound evicts at once."""
        return self._cache_bytes

    @cache_bytes.setter
    def cache_bytes(self, cache_bytes: int) -> None:
        self._cache_bytes = _check_cache_bytes(cache_bytes)
        if self._cache_chars > self._cache_bytes:
            self._evict()

    @property
    def session_settings(self) -> SessionSettings | None:
        """The settings given to this wrapper, else the wrapped session's (read at each
        call, so the Agents SDK's default there stays the SDK's). Assign to change them;
        ``None`` goes back to the wrapped session's. Their ``limit`` counts readable items."""
        given = self._given.handed_out()
        return self.session.session_settings if given is None else given

    @session_settings.setter
    def session_settings(self, settings: SessionSettings | None) -> None:
        self._given = GivenSettings(settings)

    def __repr__(self) -> str:
        sdk = f", sdk_keys={self._sdk_keys_given}" if self._sdk_keys_given else ""
        return f"EncryptedSession({self.session!r}, keys={len(self._keys)}{sdk}, ttl={self.ttl!r})"

    async def get_items(self, limit: int | None = None) -> list[Item]:
        """The latest ``limit`` readable items (default ``session_settings.limit``, else
        all), oldest first; unreadable ones skipped with one warning."""
        self._check_open()
        wanted = self._effective_limit(limit)
        if wanted == 0:
            return []
        cache = self._cache if self._cache_bytes else None
        window = wanted = MAX_INT64 if wanted is None or wanted >= MAX_INT64 else wanted
        while True:
            skipped: dict[str, int] = {}
            oldest = self._oldest_live()
            if self._get_encoded is not None:
                texts = await self._get_encoded(window)
                items, corrupt = self._open_texts(texts, skipped, cache, oldest)
                returned = len(texts) - corrupt  # corrupt rows count as a store skips them
            else:
                stored = await self.session.get_items(window)
                items, returned = self._open_envelopes(stored, skipped, cache, oldest), len(stored)
            if self._cache_chars > self._cache_bytes:
                self._evict()
            if len(items) >= wanted or returned < window or window >= MAX_INT64:
                break
            # Too few readable items: a wider window, which holds this one's items again
            # (without the cache, a scratch one spares them a second decryption).
            window = min(window * 2, MAX_INT64)
            cache = {} if cache is None else cache
        if len(items) > wanted:
            items = items[-wanted:]
        if skipped:
            self._warn(skipped, "get_items skipped")
        return items

    async def add_items(self, items: list[Item]) -> None:
        """Encrypt ``items`` (validated first, as every session does) and store them as one
        atomic batch."""
        self._check_open()
        encoded = encode_items(items)
        if not encoded:
            return
        at = int(self._clock() * 1000)
        add_encoded = self._add_encoded
        if add_encoded is None:  # the protocol's add_items, with envelope dicts
            envelopes = self._keys[0].seal(encoded, at)
            await self.session.add_items(envelopes)
            if self._cache_bytes:
                self._remember([e["data"] for e in envelopes], encoded, at)
            return
        if len(encoded) > 1:
            texts, sealed = self._keys[0].seal_texts(encoded, at)
            keys = texts if self._get_encoded is not None else sealed
        else:
            # The common case (a turn adds its items one call each), keeping the data: the
            # cache's key when reads are decoded.
            text, data = self._keys[0].seal_one(encoded[0], at)
            texts = [text]
            keys = [text] if self._get_encoded is not None else [data]
        direct = self._direct
        if direct is not None:
            direct._check_open()
            await direct.store._add_items(direct.session_id, texts)
        else:
            await add_encoded(texts)
        if not self._cache_bytes:
            return
        if len(keys) == 1:  # _remember's common case, inline
            key = keys[0]
            size = len(key) + len(encoded[0])
            if size <= self._cache_bytes:
                lock = self._cache_lock
                lock.acquire()  # not `with`: its protocol costs 50 ns more per add
                try:
                    self._cache[key] = (at, self._keys[0].key_id, encoded[0], size)
                    self._cache_chars += size
                finally:
                    lock.release()
                if self._cache_chars > self._cache_bytes:
                    self._evict()
        else:
            self._remember(keys, encoded, at)

    async def replace_items(self, items: list[Item]) -> None:
        """Make ``items`` (encrypted) the whole history in one atomic step, through the
        wrapped session's ``replace_items`` (the ReplacingSession capability, which a
        ``CompactingSession`` above this wrapper writes through). Raises
        ``NotImplementedError``, nothing written, when the wrapped session lacks it."""
        self._check_open()
        if not isinstance(self.session, ReplacingSession):
            raise NotImplementedError(
                f"{type(self.session).__name__} cannot replace a history atomically"
            )
        encoded = encode_items(items)
        at = int(self._clock() * 1000)
        await self.session.replace_items(self._keys[0].seal(encoded, at) if encoded else [])

    async def pop_item(self) -> Item | None:
        """Remove and return the latest readable item; see the module's documentation for
        what happens to unreadable items above it."""
        self._check_open()
        skipped: Counter[str] = Counter()
        try:
            while True:
                stored = await self.session.pop_item()
                if stored is None:
                    return None
                opened = self._open(stored)
                if not isinstance(opened, str):
                    return opened
                if opened in _DISCARDED_BY_POP:
                    skipped[opened] += 1
                    continue
                await self.session.add_items([stored])
                where = (
                    "keys=[...] or sdk_keys=[...]" if opened == _SDK_UNKNOWN_KEY else "keys=[...]"
                )
                raise UnreadableItemError(
                    f"pop_item on session {self.session_id!r}: the latest item is {opened} "
                    f"({_describe(stored)}); it was put back, not removed. Pass its key in "
                    f"{where} to read it."
                )
        finally:
            self._warn(skipped, "pop_item removed")

    async def clear_session(self) -> None:
        """Remove every item of the wrapped session (and empty the cache)."""
        self._check_open()
        self._drop_cache()
        await self.session.clear_session()

    async def close(self) -> None:
        """Close this wrapper and the session it wraps. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._drop_cache()
        close = getattr(self.session, "close", None)
        if callable(close):
            result = close()
            if inspect.isawaitable(result):
                await result

    # -- helpers -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(f"EncryptedSession {self.session_id!r} is closed")

    def _open_texts(
        self,
        texts: list[str],
        skipped: dict[str, int],
        cache: dict[_CacheKey, _CacheEntry] | None,
        oldest: float | None,
    ) -> tuple[list[Item], int]:
        """The readable items of the stored ``texts`` (fresh dicts), in order, and how many
        texts were not JSON objects (rows a store's ``get_items`` skips: the same warning
        is given here); reasons for the others counted in ``skipped``.

        The hot path of every read: a text seen before (written or read by this wrapper)
        is looked up in ``cache``, and only its expiry is decided again; any other one is
        decoded (as the store would have) and opened by :meth:`_open_miss`."""
        items: list[Item] = []
        corrupt = 0
        by_id = self._by_id
        # Misses decrypted here, cached after the loop under one hold of the lock.
        fresh: list[tuple[str, _CacheEntry]] = []
        for text in texts:
            entry = cache.get(text) if cache is not None else None
            if entry is not None:
                if oldest is not None and entry[0] < oldest:
                    skipped[_EXPIRED] = skipped.get(_EXPIRED, 0) + 1
                    continue
                plain = entry[2]
                if isinstance(plain, dict):
                    items.append(plain.copy())
                elif isinstance(plain, tuple):
                    try:
                        items.append(_scan_once(plain[0], 0)[0])  # decoded before: an object
                    except RecursionError:  # a deep caller: _thaw decodes on a fresh stack
                        items.append(self._thaw(text, entry))
                else:
                    items.append(self._thaw(text, entry))
                continue
            # An envelope of ours exactly as seal_texts writes it, of a key held here, not
            # expired, that authenticates, holding a flat-or-nested object: its fields are
            # sliced out (no JSON decoding of the envelope) and it is decrypted inline.
            # Anything else (and any failure here) takes the general path below, which
            # decides it as before.
            if text.startswith(_TEXT_PREFIX) and text.startswith(_TEXT_AT, _KID_END):
                session_key = by_id.get(text[_PREFIX_CHARS:_KID_END])
                at_end = text.find(_TEXT_DATA, _AT_START)
                at_text = text[_AT_START:at_end]
                if (
                    session_key is not None
                    and at_text.isdigit()
                    and at_text.isascii()
                    and at_text[0] != "0"
                    and text.endswith('"}')
                ):
                    at = int(at_text)
                    data = text[at_end + _DATA_OFFSET : -2]
                    plaintext = None
                    if (oldest is None or at >= oldest) and '"' not in data and "\\" not in data:
                        try:
                            raw = _a2b_base64(data)
                            if len(data) == (len(raw) + 2) // 3 * 4:  # canonical base64
                                plaintext = session_key.open(raw, at)
                        except (binascii.Error, ValueError, InvalidTag):
                            plaintext = None
                    if plaintext is not None and plaintext.startswith("{"):
                        try:
                            item, end = _scan_once(plaintext, 0)
                        except (StopIteration, ValueError, RecursionError):
                            end = -1
                        if end == len(plaintext) and type(item) is dict:
                            items.append(item)
                            if cache is not None:
                                size = len(text) + len(plaintext)
                                if cache is not self._cache:  # a scratch cache
                                    cache[text] = (at, session_key.key_id, (plaintext,), size)
                                elif size <= self._cache_bytes:
                                    fresh.append((text, (at, session_key.key_id, plaintext, size)))
                            continue
            try:
                envelope, end = _scan_once(text, 0)
            except (StopIteration, ValueError, RecursionError):
                end = -1
            if end != len(text) or type(envelope) is not dict:
                envelope = decode_item(text, where=self._where(0))  # warns, or a deep one
                if envelope is None:
                    corrupt += 1
                    continue
            if type(envelope.get("__enc__")) is int:  # the Agents SDK's marker (1); ours, a str
                opened = self._open_sdk(envelope, text, skipped, cache, oldest)
            else:
                opened = self._open_miss(envelope, text, skipped, cache, oldest)
            if opened is not None:
                items.append(opened)
        if fresh:
            assert cache is not None
            added = 0
            with self._cache_lock:
                if cache is self._cache:  # not emptied meanwhile (clear_session, close)
                    for key, new in fresh:
                        if cache.setdefault(key, new) is new:  # another thread's read may
                            added += new[3]  # have cached it
                    self._cache_chars += added
        return items, corrupt

    def _open_envelopes(
        self,
        stored: list[Item],
        skipped: dict[str, int],
        cache: dict[_CacheKey, _CacheEntry] | None,
        oldest: float | None,
    ) -> list[Item]:
        """:meth:`_open_texts` for envelopes a store decoded: the cache is keyed by their
        ``data`` (nonce and ciphertext), and a hit counts only if the envelope's key id
        and write time are the ones that data was decrypted with (the Agents SDK's, by
        ``(payload,)``: :meth:`_open_sdk`)."""
        items: list[Item] = []
        for envelope in stored:
            data = envelope.get("data")
            entry = cache.get(data) if cache is not None and type(data) is str else None
            if entry is not None:
                at = envelope.get("at")
                if (
                    type(at) is int
                    and at == entry[0]
                    and envelope.get("kid") == entry[1]
                    and envelope.get("__enc__") == ENVELOPE_FORMAT
                ):
                    if oldest is not None and at < oldest:
                        skipped[_EXPIRED] = skipped.get(_EXPIRED, 0) + 1
                        continue
                    plain = entry[2]
                    if isinstance(plain, dict):
                        items.append(plain.copy())
                    else:
                        items.append(self._thaw(cast(str, data), entry))
                    continue
            if type(envelope.get("__enc__")) is int:  # the Agents SDK's marker (1); ours, a str
                item = self._open_sdk(envelope, None, skipped, cache, oldest)
            else:
                item = self._open_miss(envelope, data, skipped, cache, oldest)
            if item is not None:
                items.append(item)
        return items

    def _open_miss(
        self,
        envelope: Item,
        cache_key: object,
        skipped: dict[str, int],
        cache: dict[_CacheKey, _CacheEntry] | None,
        oldest: float | None,
    ) -> Item | None:
        """The item inside ``envelope`` (a fresh dict), remembered in ``cache`` under
        ``cache_key``; or ``None``, its reason counted in ``skipped``. The common case (an
        envelope of this module, a key this session holds, not expired) is decided here;
        anything else takes :meth:`_plaintext`, which says why it cannot be returned."""
        at, data, key_id = envelope.get("at"), envelope.get("data"), envelope.get("kid")
        session_key = self._by_id.get(key_id) if type(key_id) is str else None
        if (
            session_key is not None
            and type(at) is int
            and type(data) is str
            and (oldest is None or at >= oldest)
            and envelope.get("__enc__") == ENVELOPE_FORMAT
        ):
            try:
                plaintext = session_key.open(_a2b_base64(data), at)
            except (binascii.Error, ValueError, InvalidTag):
                plaintext = _TAMPERED
        else:
            plaintext = self._plaintext(envelope, oldest)
        if type(cache_key) is not str or not plaintext.startswith("{"):
            return self._opened(plaintext, skipped, None, None, 0, "")
        # An item: the envelope is one of ours, its write time and key id checked above.
        return self._opened(plaintext, skipped, cache, cache_key, envelope["at"], envelope["kid"])

    def _opened(
        self,
        plaintext: str,
        skipped: dict[str, int],
        cache: dict[_CacheKey, _CacheEntry] | None,
        key: _CacheKey | None,
        at: int,
        key_id: str,
    ) -> Item | None:
        """The item whose JSON text is ``plaintext`` (a fresh dict), remembered in
        ``cache`` under ``key`` as written at ``at`` with ``key_id``; or ``None`` when
        ``plaintext`` is the reason an envelope cannot be returned (counted in
        ``skipped``: every plaintext is a JSON object, no reason starts with ``{``)."""
        if not plaintext.startswith("{"):
            skipped[plaintext] = skipped.get(plaintext, 0) + 1
            return None
        try:
            item, end = _scan_once(plaintext, 0)
        except (StopIteration, ValueError, RecursionError):
            end = -1
        if end != len(plaintext) or type(item) is not dict:
            return decode_item(plaintext, where=self._where(0))  # warns, or a deep item
        if cache is not None and key is not None:
            # Kept as text: the first hit decides whether to keep a copy of the item
            # instead (_thaw), so that a cold read pays no copy for items never read again.
            size = len(key if isinstance(key, str) else key[0]) + len(plaintext)
            if cache is not self._cache:  # a scratch cache
                cache[key] = (at, key_id, (plaintext,), size)
            elif size <= self._cache_bytes:
                with self._cache_lock:
                    if key not in cache:  # another thread's read may have cached it
                        cache[key] = (at, key_id, plaintext, size)
                        self._cache_chars += size
        return item

    def _open_sdk(
        self,
        envelope: Item,
        text: str | None,
        skipped: dict[str, int],
        cache: dict[_CacheKey, _CacheEntry] | None,
        oldest: float | None,
    ) -> Item | None:
        """:meth:`_open_miss` for an envelope whose marker is an int (the Agents SDK's is
        1): the item inside (a fresh dict), or ``None``, its reason counted in ``skipped``.
        Cached under its stored ``text`` (already looked up, a miss), or, read decoded
        (``text`` is ``None``), under ``(payload,)``, the Fernet token: unique per write
        (a random IV), holding the authenticated write time, so a changed token misses."""
        key: _CacheKey | None = text
        payload = envelope.get("payload")
        if (
            text is None
            and type(payload) is str
            and envelope["__enc__"] == 1
            and "v" in envelope
            and "kid" in envelope
        ):  # an envelope the SDK would not read (a field missing) is decided below
            key = (payload,)
            entry = cache.get(key) if cache is not None else None
            if entry is not None:
                if oldest is not None and entry[0] < oldest:
                    skipped[_EXPIRED] = skipped.get(_EXPIRED, 0) + 1
                    return None
                plain = entry[2]
                return plain.copy() if isinstance(plain, dict) else self._thaw(key, entry)
        at, plaintext = self._sdk_plaintext(envelope, oldest)
        return self._opened(plaintext, skipped, cache, key, at, _SDK_KEY_ID)

    def _sdk_plaintext(self, envelope: Item, oldest: float | None) -> tuple[int, str]:
        """The write time (ms) and JSON text inside an Agents SDK envelope, or ``(-1,
        reason)``. Read as the SDK reads it: ``__enc__`` 1 with ``v``, ``kid`` and
        ``payload``, a Fernet token of one of the SDK-derived keys, whatever ``v`` and
        ``kid`` hold (the SDK checks neither); its timestamp, authenticated, against
        ``ttl`` as ours (seconds, so in whole seconds)."""
        marker = envelope.get("__enc__")
        if marker != 1 or type(marker) is not int:
            return -1, _PLAINTEXT  # what the SDK takes for a plaintext item too
        payload = envelope.get("payload")
        if type(payload) is not str or "v" not in envelope or "kid" not in envelope:
            return -1, _TAMPERED
        try:
            raw = base64.urlsafe_b64decode(payload)  # as Fernet decodes it (lenient)
        except ValueError:  # binascii.Error, or a str that is not ASCII
            return -1, _TAMPERED
        blocks = len(raw) - _FERNET_OVERHEAD
        if blocks < 16 or blocks % 16 or raw[0] != _FERNET_VERSION:
            return -1, _TAMPERED  # not a Fernet token, whatever the key
        for fernet in self._sdk_fernets():
            try:
                plain = fernet.decrypt(payload)
            except InvalidToken:
                continue
            break
        else:
            return -1, _SDK_UNKNOWN_KEY
        try:
            text = plain.decode("utf-8")
        except UnicodeDecodeError:
            return -1, _TAMPERED
        if not text.startswith("{"):
            return -1, _TAMPERED  # authenticated, but not an item (nor ever a reason)
        at = int.from_bytes(raw[1:9], "big") * 1000  # authenticated by the HMAC above
        if oldest is not None and at < oldest:
            return -1, _EXPIRED
        return at, text

    def _sdk_fernets(self) -> list[Fernet]:
        """The Fernet keys the Agents SDK derives for this session from each of
        ``keys`` and ``sdk_keys``, derived once (two threads at once may both derive
        them: the same keys)."""
        ciphers = self._sdk_ciphers
        if ciphers is None:
            salt = self.session_id.encode("utf-8")
            ciphers = [
                Fernet(
                    base64.urlsafe_b64encode(
                        HKDF(
                            algorithm=hashes.SHA256(),
                            length=_SDK_KEY_BYTES,
                            salt=salt,
                            info=_SDK_HKDF_INFO,
                        ).derive(master)
                    )
                )
                for master in self._sdk_inputs
            ]
            self._sdk_ciphers = ciphers
        return ciphers

    def _thaw(self, key: _CacheKey, entry: _CacheEntry) -> Item:
        """A fresh item from a cache entry holding JSON text: ``(text,)`` for an item
        known to be nested, else a text written or decrypted and not returned from the
        cache since, whose entry then becomes a copy of the item if it is flat."""
        plain = entry[2]
        text = plain[0] if isinstance(plain, tuple) else plain
        assert isinstance(text, str)
        try:
            item: Item = _scan_once(text, 0)[0]  # decoded once already: an object
        except RecursionError:  # a deep caller: decode_item decodes on an empty stack
            found = decode_item(text, where=self._where(0))
            assert found is not None
            return found
        if isinstance(plain, str) and key in self._cache:  # not returned from it before
            self._cache[key] = (
                entry[0],
                entry[1],
                item.copy() if _flat(item) else (text,),
                entry[3],
            )
        return item

    def _remember(self, keys: list[str], encoded: list[str], at: int) -> None:
        """Cache what was just written: ``keys[i]`` (the envelope's stored text, or its data
        when reads are decoded) holds ``encoded[i]``, an item's JSON (kept as text: its
        first read decides whether to keep a copy of the item)."""
        cache, key_id, limit = self._cache, self._keys[0].key_id, self._cache_bytes
        added = 0
        with self._cache_lock:
            for key, text in zip(keys, encoded, strict=True):
                size = len(key) + len(text)
                if size <= limit:
                    cache[key] = (at, key_id, text, size)
                    added += size
            self._cache_chars += added
        if self._cache_chars > limit:
            self._evict()

    def _evict(self) -> None:
        """Drop the oldest entries until the cache holds at most 3/4 of ``cache_bytes``
        (in one pass: dropping from the front one at a time is quadratic in a dict).

        Under the cache's lock, on a snapshot of the entries, counted afresh: another
        thread's read may replace an entry meanwhile (``_thaw``)."""
        with self._cache_lock:
            cache = self._cache
            entries = list(cache.items())
            chars = sum(entry[3] for _, entry in entries)
            target = self._cache_bytes * 3 // 4
            for key, entry in entries:
                if chars <= target:
                    break
                chars -= entry[3]
                cache.pop(key, None)
            self._cache_chars = chars

    def _drop_cache(self) -> None:
        with self._cache_lock:
            self._cache = {}
            self._cache_chars = 0

    def _open(self, envelope: Item) -> Item | str:
        """The item inside ``envelope`` (a fresh dict), or the reason it cannot be returned."""
        text = self._plaintext(envelope, self._oldest_live())
        if not text.startswith("{"):
            return text
        item = decode_item(text, where=self._where(0))
        return _TAMPERED if item is None else item

    def _oldest_live(self) -> float | None:
        """The write time (ms) below which an item has expired, or ``None`` without a TTL."""
        ttl = self._ttl
        return None if ttl is None else (self._clock() - ttl) * 1000

    def _plaintext(self, envelope: Item, oldest: float | None) -> str:
        """The JSON text inside ``envelope``, or the reason it cannot be returned."""
        if envelope.get("__enc__") != ENVELOPE_FORMAT:
            return self._sdk_plaintext(envelope, oldest)[1]  # the SDK's, or _PLAINTEXT
        key_id, at, data = envelope.get("kid"), envelope.get("at"), envelope.get("data")
        if type(key_id) is not str or type(at) is not int or type(data) is not str:
            return _TAMPERED
        session_key = self._by_id.get(key_id)
        if session_key is None:
            return _UNKNOWN_KEY
        text = session_key.unseal(data, at)
        if text is None:
            return _TAMPERED
        if oldest is not None and at < oldest:
            return _EXPIRED
        return text

    def _where(self, _: object) -> str:
        return f"encrypted session {self.session_id!r}"

    def _warn(self, skipped: Counter[str] | dict[str, int], call: str) -> None:
        counts = [f"{count} {reason}" for reason, count in sorted(skipped.items()) if count]
        if counts:
            logger.warning(
                "encrypted session %r: %s unreadable items: %s",
                self.session_id,
                call,
                ", ".join(counts),
            )


class _Nonces:
    """The AES-GCM nonces of one session key in this process: a random 96-bit start
    (``os.urandom``), then one more for each item (mod 2**96), so that a seal costs no
    system call (``os.urandom`` was about 0.7 us of a 1.7 us seal).

    Why they never repeat where it matters. A nonce must not repeat under one key; the
    key is the session's (HKDF of the master key and the session id), shared by every
    wrapper of that session in any process. Within one wrapper's key the nonces are
    consecutive: distinct until 2**96 items. Two runs of ``m1`` and ``m2`` nonces, each
    from an independent uniform start, overlap with probability at most
    ``(m1 + m2 - 1) / 2**96``; summed over every pair of the ``W`` runs (one per wrapper,
    and one per forked child, below) that ever write ``q`` items in all under that key:
    at most ``((W - 1) * q - W * (W - 1) / 2) / 2**96``, never more than the
    ``q * (q - 1) / 2**97`` of a fresh random nonce per item (the difference is
    ``((q - W)**2 + q - W) / 2 >= 0``; equal when every run writes one item, far less
    when each writes many), e.g. below 2**-32 while ``W * q`` stays below 2**64. A forked
    child would continue its parent's run: ``os.register_at_fork`` gives every live
    sequence a new random start in the child. (A process image resumed twice, a virtual
    machine's snapshot, would repeat a run, as it would repeat any state in memory.) A
    free-threaded Python (no GIL, where ``next`` on a shared counter is not known to be
    atomic in every version) takes a fresh ``os.urandom`` nonce per item instead.

    What it shows: the nonces of one wrapper's items are consecutive, so someone reading
    the store can tell which items of a session one wrapper wrote (as the write times,
    stored in the clear, mostly do already); not their content, and nothing across
    sessions (each session key has its own start)."""

    __slots__ = ("__weakref__", "count")

    def __init__(self) -> None:
        self.count = self._start()
        _LIVE_NONCES.add(self)

    @staticmethod
    def _start() -> itertools.count[int]:
        return itertools.count(int.from_bytes(os.urandom(_NONCE_BYTES), "big"))

    def restart(self) -> None:
        """A new random start (a forked child's)."""
        self.count = self._start()


_LIVE_NONCES: Final[weakref.WeakSet[_Nonces]] = weakref.WeakSet()
# Whether next() on a shared itertools.count is atomic: with the GIL, always (C code that
# runs no Python code); without it, not in every version, so os.urandom per nonce.
_COUNTED_NONCES: Final[bool] = bool(getattr(sys, "_is_gil_enabled", lambda: True)())


def _restart_nonces_after_fork() -> None:
    for nonces in list(_LIVE_NONCES):
        nonces.restart()


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork to survive
    os.register_at_fork(after_in_child=_restart_nonces_after_fork)


def _nonce(nonces: _Nonces) -> bytes:
    """The next nonce of ``nonces`` (see :class:`_Nonces`)."""
    if _COUNTED_NONCES:
        return (next(nonces.count) & _NONCE_MASK).to_bytes(_NONCE_BYTES, "big")
    return os.urandom(_NONCE_BYTES)  # pragma: no cover - a free-threaded Python


@dataclass(frozen=True)
class _SessionKey:
    """One master key's cipher for one session, the id its envelopes carry, and the
    constant parts of their associated data (format, key id, then write time, session id)."""

    key_id: str
    cipher: AESGCM
    aad_head: bytes
    aad_tail: bytes
    # The last one-item write's time (ms), envelope text head and associated data.
    last_write: list[tuple[int, str, bytes]] = field(
        default_factory=lambda: [(-1, "", b"")], compare=False
    )
    nonces: _Nonces = field(default_factory=_Nonces, compare=False)

    @classmethod
    def derive(cls, master: bytes, session_id: str) -> _SessionKey:
        session_bytes = session_id.encode("utf-8")
        hkdf = HKDF(
            algorithm=hashes.SHA256(),
            length=32 + _KEY_ID_BYTES,
            salt=None,
            info=_HKDF_INFO + session_bytes,
        )
        material = hkdf.derive(master)
        key_id = base64.urlsafe_b64encode(material[32:]).decode("ascii")
        head = b"%s\x00%s\x00" % (ENVELOPE_FORMAT.encode(), key_id.encode())
        return cls(key_id, AESGCM(material[:32]), head, b"\x00" + session_bytes)

    def seal(self, texts: list[str], at: int) -> list[Item]:
        """One envelope per JSON text, all written at ``at`` (ms)."""
        return [
            {"__enc__": ENVELOPE_FORMAT, "kid": self.key_id, "at": at, "data": data}
            for data in self._sealed(texts, at)
        ]

    def seal_texts(self, texts: list[str], at: int) -> tuple[list[str], list[str]]:
        """:meth:`seal`'s envelopes as the JSON text ``encode_items`` writes for them
        (same keys, order and separators; base64 and key ids need no escaping), and the
        data of each (base64 of nonce + ciphertext + tag)."""
        sealed = self._sealed(texts, at)
        head = _ENVELOPE_TEXT_HEAD % (self.key_id, at)
        return [f'{head}{data}"}}' for data in sealed], sealed

    def seal_one(self, text: str, at: int) -> tuple[str, str]:
        """:meth:`seal_texts` of one text (every add of a turn): the envelope's text and
        its data (base64 of nonce + ciphertext + tag)."""
        memo = self.last_write[0]  # one read: a tuple another thread only replaces
        if memo[0] != at:  # writes in the same millisecond share the envelope's head
            memo = self.remember_write(at)
        if _COUNTED_NONCES:  # _nonce, inline
            nonce = (next(self.nonces.count) & _NONCE_MASK).to_bytes(_NONCE_BYTES, "big")
        else:  # pragma: no cover - a free-threaded Python
            nonce = os.urandom(_NONCE_BYTES)
        sealed = self.cipher.encrypt(nonce, text.encode("utf-8"), memo[2])
        data = _b2a_base64(nonce + sealed, newline=False).decode("ascii")
        return f'{memo[1]}{data}"}}', data

    def remember_write(self, at: int) -> tuple[int, str, bytes]:
        """``(at, envelope text head, associated data)`` of a write at ``at``, kept in
        :attr:`last_write` for the writes of the same millisecond."""
        memo = (
            at,
            _ENVELOPE_TEXT_HEAD % (self.key_id, at),
            b"%s%d%s" % (self.aad_head, at, self.aad_tail),
        )
        self.last_write[0] = memo
        return memo

    def _sealed(self, texts: list[str], at: int) -> list[str]:
        """The base64 of nonce + ciphertext + tag of each text, written at ``at``."""
        associated = b"%s%d%s" % (self.aad_head, at, self.aad_tail)
        encrypt, nonces = self.cipher.encrypt, self.nonces
        sealed_texts: list[str] = []
        for text in texts:
            nonce = _nonce(nonces)
            sealed = nonce + encrypt(nonce, text.encode("utf-8"), associated)
            sealed_texts.append(binascii.b2a_base64(sealed, newline=False).decode("ascii"))
        return sealed_texts

    def unseal(self, data: str, at: int) -> str | None:
        """The text sealed in ``data`` at ``at``, or ``None`` if it does not authenticate."""
        try:
            # Lenient base64: any change to the bytes fails authentication below anyway.
            return self.open(binascii.a2b_base64(data), at)
        except (binascii.Error, ValueError, InvalidTag):
            return None

    def open(self, raw: bytes, at: int) -> str:
        """The text sealed in ``raw`` (nonce + ciphertext + tag) at ``at``; raises
        ``InvalidTag`` if it does not authenticate, ``ValueError`` if it is not UTF-8."""
        associated = b"%s%d%s" % (self.aad_head, at, self.aad_tail)
        plain = self.cipher.decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], associated)
        return plain.decode("utf-8")


def _flat(item: Item) -> bool:
    """Whether every value of ``item`` is an immutable scalar: a shallow copy is then a
    whole fresh item."""
    for value in item.values():  # noqa: SIM110 - a loop: all() of a generator is slower
        if type(value) not in _SCALARS:
            return False
    return True


def _check_cache_bytes(cache_bytes: object) -> int:
    if isinstance(cache_bytes, bool) or not isinstance(cache_bytes, int):
        raise TypeError(f"cache_bytes must be an int >= 0, got {type(cache_bytes).__name__}")
    if cache_bytes < 0:
        raise SessionConfigError(f"cache_bytes must be >= 0 (0: no cache), got {cache_bytes}")
    return cache_bytes


def _given_keys(key: str | bytes | None, keys: Sequence[str | bytes] | None) -> list[str | bytes]:
    if (key is None) == (keys is None):
        raise SessionConfigError("EncryptedSession takes exactly one of key= or keys=")
    if keys is not None and isinstance(keys, (str, bytes)):
        raise SessionConfigError("keys= takes a list of keys (newest first), not one key")
    given = [key] if keys is None else list(keys)
    if not given:
        raise SessionConfigError("keys= is empty: give at least one key (newest first)")
    return cast("list[str | bytes]", given)


def _master_bytes(master: object, where: str) -> bytes:
    if isinstance(master, str):
        try:
            decoded = base64.urlsafe_b64decode(master.encode("ascii"))
        except (UnicodeEncodeError, binascii.Error, ValueError):
            decoded = b""
        if len(decoded) < MIN_KEY_BYTES:
            raise SessionConfigError(
                f"{where} is a str but not the base64 of {MIN_KEY_BYTES}+ random bytes: use "
                "generate_key() (a password is not a key: HKDF does not harden it)"
            )
        return decoded
    if isinstance(master, (bytes, bytearray)):
        if len(master) < MIN_KEY_BYTES:
            raise SessionConfigError(
                f"{where} has {len(master)} bytes; a master key needs {MIN_KEY_BYTES}+ random bytes"
            )
        return bytes(master)
    raise TypeError(f"{where} must be bytes or a base64 str, got {type(master).__name__}")


def _sdk_input(master: str | bytes) -> bytes:
    """What the Agents SDK's HKDF derives from ``master``, one of ``keys=`` (valid): a str
    as the SDK reads its ``encryption_key`` (the bytes it is the URL-safe base64 of if
    they are 32, else its UTF-8), bytes as they are (32 random bytes are what the SDK
    reads from their base64)."""
    if isinstance(master, str):
        try:
            decoded = base64.urlsafe_b64decode(master)
        except ValueError:
            decoded = b""
        return decoded if len(decoded) == _SDK_KEY_BYTES else master.encode("utf-8")
    return bytes(master)


def _sdk_given(sdk_keys: object) -> list[object]:
    if sdk_keys is None:
        return []
    if isinstance(sdk_keys, (str, bytes, bytearray)):
        raise SessionConfigError("sdk_keys= takes a list of keys, not one key")
    if not isinstance(sdk_keys, Iterable):
        raise TypeError(f"sdk_keys= takes a list of keys, got {type(sdk_keys).__name__}")
    return list(sdk_keys)


def _sdk_master_bytes(master: object, index: int) -> bytes:
    """What the Agents SDK's HKDF derives from ``master``, one of ``sdk_keys=``: any
    non-empty str (as the SDK accepts it, a raw string included), or bytes that are the
    base64 of 32 bytes (``Fernet.generate_key()``: the only bytes the SDK reads)."""
    where = f"sdk key {index}"
    if isinstance(master, (bytes, bytearray)):
        try:
            decoded = base64.urlsafe_b64decode(bytes(master))
        except ValueError:
            decoded = b""
        if len(decoded) != _SDK_KEY_BYTES:
            raise SessionConfigError(
                f"{where} is bytes but not the base64 of {_SDK_KEY_BYTES} bytes, the only "
                "bytes key the Agents SDK's EncryptedSession reads: give the str it was given"
            )
        return decoded
    if not isinstance(master, str):
        raise TypeError(
            f"{where} must be the str given to the Agents SDK's EncryptedSession as "
            f"encryption_key, got {type(master).__name__}"
        )
    if not master:
        raise SessionConfigError(f"{where} is empty (the Agents SDK refuses an empty key too)")
    return _sdk_input(master)


def _not_a_session(session: object) -> str:
    message = f"EncryptedSession wraps a Session, got {type(session).__name__}"
    if isinstance(session, str):
        message += (
            ": the Agents SDK's positional EncryptedSession(session_id, underlying_session, "
            "encryption_key) is taken by its keywords, EncryptedSession(session_id=..., "
            "underlying_session=..., encryption_key=...), or write "
            "EncryptedSession(underlying_session, key=encryption_key)"
        )
    return message


def _sdk_form(
    session: object,
    key: object,
    keys: object,
    session_id: object,
    underlying_session: object,
    encryption_key: str | bytes | None,
) -> tuple[Session, str | bytes]:
    """The wrapped session and the key of the Agents SDK's keywords
    (``session_id=, underlying_session=, encryption_key=``), checked."""
    sdk_keywords = "session_id=, underlying_session= and encryption_key="
    if session is not None:
        raise SessionConfigError(
            "give the wrapped session once: positionally, or as underlying_session= (the "
            "Agents SDK's keyword), not both"
        )
    if key is not None or keys is not None:
        raise SessionConfigError(
            "encryption_key= (the Agents SDK's keyword) is a key=: give one of them, not both"
        )
    if underlying_session is None or session_id is None or encryption_key is None:
        missing = [
            name
            for name, value in (
                ("session_id=", session_id),
                ("underlying_session=", underlying_session),
                ("encryption_key=", encryption_key),
            )
            if value is None
        ]
        raise SessionConfigError(
            f"the Agents SDK's keywords go together ({sdk_keywords}): {', '.join(missing)} "
            "missing; or write EncryptedSession(session, key=...)"
        )
    if not isinstance(underlying_session, Session):
        raise TypeError(_not_a_session(underlying_session))
    if session_id != underlying_session.session_id:
        raise SessionConfigError(
            f"session_id={session_id!r} is not the wrapped session's id "
            f"({underlying_session.session_id!r}): this wrapper encrypts and reads the items "
            "of the session it wraps, under that session's id"
        )
    try:
        _master_bytes(encryption_key, "encryption_key")
    except SessionConfigError as exc:
        raise SessionConfigError(
            f"{exc}. The Agents SDK accepts such a key for compatibility; here it reads the "
            "SDK's items only: EncryptedSession(underlying_session, key=generate_key(), "
            "sdk_keys=[encryption_key]) writes with a new key and reads both"
        ) from None
    return underlying_session, encryption_key


def _check_ttl(ttl: object) -> float | None:
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"ttl must be a number of seconds or None, got {type(ttl).__name__}")
    if not math.isfinite(ttl) or ttl <= 0:
        raise SessionConfigError(f"ttl must be a number of seconds > 0, got {ttl!r}")
    return float(ttl)


def _describe(envelope: Item) -> str:
    if envelope.get("__enc__") == ENVELOPE_FORMAT:
        return f"key id {envelope.get('kid')!r}"
    marker = envelope.get("__enc__")
    if marker == 1 and type(marker) is int:
        return "a Fernet token of the Agents SDK's EncryptedSession"
    return f"keys {sorted(map(str, envelope))[:5]}"
