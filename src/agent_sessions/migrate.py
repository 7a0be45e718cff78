"""Bringing conversations over from the OpenAI Agents SDK's own stores.

The SDK's ``SQLiteSession`` keeps its items in two tables of its own (``agent_sessions``
and ``agent_messages`` by default, one JSON text per row) and its ``RedisSession`` in keys
of its own (``agents:session:<id>:messages``, a list of JSON texts). Our ``SQLiteSession``
uses the SDK's tables in place, and our ``RedisSession`` the SDK's keys (their
``layout``); our other backends, and our own Redis layout, read a conversation the SDK
wrote as empty until it is migrated (a SQLite target always gets this library's tables)::

    agent-sessions migrate-sdk conversations.db sqlite:///conversations.db
    agent-sessions migrate-sdk redis://localhost:6379/0 postgresql://app@db/app

or from Python::

    sources = await read_sdk_sqlite("conversations.db")
    # any SessionStore; the same SQLite file needs ?layout=native, or its SDK tables are
    # used in place and there is nothing to migrate
    store = open_store("sqlite:///conversations.db?layout=native")
    try:
        report = await migrate(sources, store)
    finally:
        await store.close()

What a migration guarantees:

- **lossless**: every item as the SDK stored it (every field, unicode, nesting), in the
  SDK's order, under the same session id;
- **idempotent**: a session whose items are already there is left alone (also when our
  side has added items after them since), so a second run changes nothing; a session that
  has grown in the SDK's store since the last run gets only its new items (the target
  holds a prefix of the source);
- **nothing refused silently**: every problem is found before anything is written, and
  then nothing is written: a row that is not a JSON object (unless ``skip_invalid``, which
  reports each skipped row), a target session that holds other items than the source
  (a conflict), a missing table or an unreachable server. Each session is written with one
  atomic ``add_items``.

The source is only read, never changed: the SDK's data stays where it was.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sqlite3
import sys
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ._json import encode_items
from ._servers import check_userinfo, mask_url, scrub, url_secrets
from .protocol import InvalidItemError, Item, SessionError, SessionStore

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_MESSAGES_TABLE",
    "DEFAULT_SESSIONS_TABLE",
    "MigrationError",
    "MigrationReport",
    "SDKSession",
    "SessionOutcome",
    "SkippedRow",
    "configure_parser",
    "describe",
    "migrate",
    "read_sdk_redis",
    "read_sdk_sqlite",
]

DEFAULT_SESSIONS_TABLE = "agent_sessions"
DEFAULT_MESSAGES_TABLE = "agent_messages"
DEFAULT_KEY_PREFIX = "agents:session"
"""The SDK's defaults: ``SQLiteSession(sessions_table=..., messages_table=...)`` and
``RedisSession(key_prefix=...)``."""

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class MigrationError(SessionError):
    """A migration found a problem; nothing was written. The message lists the problems."""


@dataclass(frozen=True)
class SkippedRow:
    """A stored row of the SDK that is not an item (with ``skip_invalid``)."""

    session_id: str
    where: str
    reason: str


@dataclass
class SDKSession:
    """One conversation read from the SDK's store: its id and items, oldest first."""

    session_id: str
    items: list[Item]
    skipped: list[SkippedRow] = field(default_factory=list)


Action = Literal["copied", "appended", "unchanged"]


@dataclass(frozen=True)
class SessionOutcome:
    """What a migration did (or, in a dry run, would do) to one session."""

    session_id: str
    action: Action
    written: int
    total: int


@dataclass(frozen=True)
class MigrationReport:
    """Every session's outcome, and the rows skipped as invalid."""

    sessions: list[SessionOutcome]
    skipped: list[SkippedRow]
    dry_run: bool

    @property
    def items_written(self) -> int:
        return sum(outcome.written for outcome in self.sessions)


async def read_sdk_sqlite(
    path: str | Path,
    *,
    sessions_table: str = DEFAULT_SESSIONS_TABLE,
    messages_table: str = DEFAULT_MESSAGES_TABLE,
    session_ids: Collection[str] | None = None,
    skip_invalid: bool = False,
) -> list[SDKSession]:
    """Every session with items in a database the SDK's ``SQLiteSession`` wrote, in
    session id order, items in the SDK's order (its row ids).

    The file is opened read-only. ``session_ids`` reads only those sessions. Raises
    ``MigrationError`` when the file, a table or a requested session is missing, or
    (without ``skip_invalid``) when a row is not a JSON object.
    """
    for name, value in (("sessions_table", sessions_table), ("messages_table", messages_table)):
        if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
            raise ValueError(f"{name} must be an SQL identifier, got {value!r}")
    source = Path(path)
    rows = await asyncio.to_thread(_read_sqlite_rows, source, sessions_table, messages_table)
    grouped: dict[str, list[tuple[str, str | bytes]]] = {}
    for row_id, session_id, data in rows:
        grouped.setdefault(str(session_id), []).append((f"row id {row_id}", data))
    return _decode_sessions(grouped, f"{source} table {messages_table}", session_ids, skip_invalid)


def _read_sqlite_rows(
    source: Path, sessions_table: str, messages_table: str
) -> list[tuple[int, str, str | bytes]]:
    if not source.is_file():  # mode=ro below also keeps sqlite3 from creating one
        raise MigrationError(f"no SQLite database at {source}")
    uri = source.resolve().as_uri() + "?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise MigrationError(f"cannot open {source}: {exc}") from None
    try:
        tables = {
            name
            for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        absent = [name for name in (sessions_table, messages_table) if name not in tables]
        if absent:
            found = ", ".join(sorted(tables)) or "none"
            raise MigrationError(
                f"{source} has no table {absent[0]!r} (tables: {found}): is it a database "
                "the Agents SDK's SQLiteSession wrote? Name its tables with "
                "--sessions-table/--messages-table"
            )
        rows: list[tuple[int, str, str | bytes]] = connection.execute(
            f"SELECT id, session_id, message_data FROM {messages_table} ORDER BY session_id, id"
        ).fetchall()
        return rows
    except sqlite3.DatabaseError as exc:
        raise MigrationError(f"cannot read {source}: {exc}") from None
    finally:
        connection.close()


async def read_sdk_redis(
    url: str,
    *,
    key_prefix: str = DEFAULT_KEY_PREFIX,
    session_ids: Collection[str] | None = None,
    skip_invalid: bool = False,
) -> list[SDKSession]:
    """Every session with items that the SDK's ``RedisSession`` wrote under
    ``key_prefix`` at ``url``, in session id order, items in list order.

    Keys are found with ``SCAN`` (never ``KEYS``) and only read; ``session_ids`` reads
    only those sessions. Raises ``MigrationError`` when the server cannot be reached or a
    requested session is missing, or (without ``skip_invalid``) when an entry is not a
    JSON object.
    """
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError as exc:
        raise ImportError(
            'reading the SDK\'s Redis sessions needs redis: pip install "agent-sessions[redis]"'
        ) from exc
    if not isinstance(key_prefix, str) or not key_prefix:
        raise ValueError("key_prefix must be a non-empty str")
    head, tail = f"{key_prefix}:", ":messages"
    pattern = _glob_escape(head) + "*" + tail
    check_userinfo(url)  # a raw "/" or "#" in a password would be shown as a port
    try:
        client = redis.asyncio.Redis.from_url(url)
    except ValueError as exc:
        raise MigrationError(
            f"bad Redis URL {mask_url(url)}: {scrub(str(exc), url_secrets(url))}"
        ) from None
    grouped: dict[str, list[tuple[str, str | bytes]]] = {}
    try:
        keys: set[bytes] = set()  # SCAN may return a key twice
        async for key in client.scan_iter(match=pattern, count=1000, _type="list"):
            keys.add(key)
        for key in keys:
            session_id = key.decode("utf-8", "surrogateescape")[len(head) : -len(tail)]
            values: list[str | bytes] = await client.lrange(key, 0, -1)
            grouped[session_id] = [(f"list index {i}", value) for i, value in enumerate(values)]
    except redis.exceptions.RedisError as exc:
        raise MigrationError(
            f"cannot read the SDK's sessions at {mask_url(url)}: "
            f"{scrub(str(exc), url_secrets(url))}"
        ) from exc
    finally:
        await client.aclose()
    return _decode_sessions(grouped, f"{mask_url(url)} keys {pattern}", session_ids, skip_invalid)


async def migrate(
    sources: Iterable[SDKSession], store: SessionStore, *, dry_run: bool = False
) -> MigrationReport:
    """Write ``sources`` into ``store``, session by session, under the same ids.

    A target session that is empty gets every item; one that already holds the source's
    items (the first ones, or all of them, perhaps followed by newer ones) gets only the
    rest, or nothing. Every target is read before anything is written: a conflict (a
    target holding other items) raises ``MigrationError`` naming every conflicting
    session, and nothing is written.
    ``dry_run`` reports what would be done and writes nothing.
    """
    plan: list[tuple[SDKSession, SessionOutcome]] = []
    conflicts: list[str] = []
    skipped: list[SkippedRow] = []
    for source in sources:
        skipped += source.skipped
        if not source.items:
            continue
        existing = await store.session(source.session_id).get_items()
        total = len(source.items)
        if existing[:total] == source.items:  # all there (the target may have grown since)
            plan.append((source, SessionOutcome(source.session_id, "unchanged", 0, total)))
        elif existing == source.items[: len(existing)]:  # a first part is there, or none
            action: Action = "appended" if existing else "copied"
            missing = total - len(existing)
            plan.append((source, SessionOutcome(source.session_id, action, missing, total)))
        else:
            conflicts.append(
                f"{source.session_id!r} (the target holds {len(existing)} items that are not "
                f"the first of the source's {total})"
            )
    if conflicts:
        raise MigrationError(
            "nothing was migrated: these sessions already hold other items in the target "
            "(clear them, or migrate into another store): " + "; ".join(conflicts)
        )
    if not dry_run:
        for source, outcome in plan:
            if outcome.written:
                new_items = source.items[outcome.total - outcome.written :]
                await store.session(source.session_id).add_items(new_items)
    return MigrationReport([outcome for _, outcome in plan], skipped, dry_run)


def _decode_sessions(
    grouped: dict[str, list[tuple[str, str | bytes]]],
    origin: str,
    session_ids: Collection[str] | None,
    skip_invalid: bool,
) -> list[SDKSession]:
    """Each (requested) session's rows decoded to items; every bad row is collected, then
    either skipped (and reported) or raised together."""
    if session_ids is not None:
        wanted = set(session_ids)
        absent = sorted(wanted - set(grouped))
        if absent:
            raise MigrationError(f"no such session in {origin}: {', '.join(absent)}")
        grouped = {sid: rows for sid, rows in grouped.items() if sid in wanted}
    sessions: list[SDKSession] = []
    problems: list[SkippedRow] = []
    for session_id in sorted(grouped):
        session = SDKSession(session_id, [])
        for where, data in grouped[session_id]:
            reason = None
            try:
                item = json.loads(data)
            except (ValueError, UnicodeDecodeError) as exc:
                reason = f"not JSON ({exc})"
            else:
                try:
                    encode_items([item])
                except InvalidItemError as exc:
                    reason = str(exc).replace("item 0 ", "", 1)
            if reason is None:
                session.items.append(item)
            else:
                problem = SkippedRow(session_id, where, reason)
                problems.append(problem)
                session.skipped.append(problem)
        sessions.append(session)
    if problems and not skip_invalid:
        listed = "; ".join(f"session {p.session_id!r} {p.where}: {p.reason}" for p in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise MigrationError(
            f"{len(problems)} stored rows in {origin} are not items: {listed}{more}; nothing "
            "was migrated (pass --skip-invalid to migrate the rest and list what was skipped)"
        )
    return sessions


def _glob_escape(text: str) -> str:
    """``text`` matched literally by a Redis ``MATCH`` pattern."""
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


def describe(report: MigrationReport) -> list[str]:
    """The report as lines for a person: one per session, one per skipped row, a total.
    Session ids are shown as ``list`` shows them (a ``$'...'`` literal when not plain
    printable text), so no stored newline or control sequence reaches the terminal."""
    from .cli import _escaped, _shown

    lines = [
        f"{outcome.action:<9} {_shown(outcome.session_id)}: {outcome.written} of "
        f"{outcome.total} items"
        for outcome in report.sessions
    ]
    lines += [
        f"skipped   {_shown(row.session_id)}: {_escaped(row.where)}: {_escaped(row.reason)}"
        for row in report.skipped
    ]
    counts = {
        action: sum(1 for o in report.sessions if o.action == action)
        for action in ("copied", "appended", "unchanged")
    }
    verb = "would write" if report.dry_run else "wrote"
    lines.append(
        f"{len(report.sessions)} sessions ({counts['copied']} copied, {counts['appended']} "
        f"appended, {counts['unchanged']} unchanged): {verb} {report.items_written} items"
        + (f", skipped {len(report.skipped)} invalid rows" if report.skipped else "")
    )
    return lines


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The ``agent-sessions migrate-sdk`` command's arguments, on an argparse parser."""
    parser.add_argument(
        "source",
        metavar="SOURCE",
        help="the SDK's store: a SQLite file (or sqlite:///file.db) its SQLiteSession "
        "wrote, or a redis:// URL its RedisSession wrote to",
    )
    parser.add_argument("url", metavar="TARGET_URL", help="our session URL to write into")
    parser.add_argument("--sessions-table", default=DEFAULT_SESSIONS_TABLE, help="SQLite")
    parser.add_argument("--messages-table", default=DEFAULT_MESSAGES_TABLE, help="SQLite")
    parser.add_argument("--key-prefix", default=DEFAULT_KEY_PREFIX, help="Redis")
    parser.add_argument(
        "--session",
        dest="only",
        action="append",
        metavar="ID",
        help="migrate only this session (repeatable; default: every session)",
    )
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="skip stored rows that are not items (each is listed) instead of refusing",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would be written; write nothing"
    )
    parser.set_defaults(run=_run_command)


async def _run_command(args: argparse.Namespace) -> int:
    from .urls import open_store

    source: str = args.source
    is_redis = source.split("://", 1)[0].lower() in ("redis", "rediss", "unix")
    if is_redis:
        if (args.sessions_table, args.messages_table) != (
            DEFAULT_SESSIONS_TABLE,
            DEFAULT_MESSAGES_TABLE,
        ):
            raise ValueError("--sessions-table/--messages-table are for a SQLite source")
        sources = await read_sdk_redis(
            source,
            key_prefix=args.key_prefix,
            session_ids=args.only,
            skip_invalid=args.skip_invalid,
        )
    else:
        if args.key_prefix != DEFAULT_KEY_PREFIX:
            raise ValueError("--key-prefix is for a Redis source")
        path = source[len("sqlite:///") :] if source.startswith("sqlite:///") else source
        if "://" in path:
            raise ValueError(
                f"SOURCE must be a SQLite file or a redis:// URL, got {mask_url(source)!r}"
            )
        sources = await read_sdk_sqlite(
            path,
            sessions_table=args.sessions_table,
            messages_table=args.messages_table,
            session_ids=args.only,
            skip_invalid=args.skip_invalid,
        )
    target: str = args.url
    if target.split("://", 1)[0].lower() == "sqlite" and "layout=" not in target:
        # A SQLite target gets this library's tables: the SDK's are the source (in place,
        # a file holding only the SDK's tables would otherwise be opened in the SDK's layout).
        target += ("&" if "?" in target else "?") + "layout=native"
    store = open_store(target)
    try:
        report = await migrate(sources, store, dry_run=args.dry_run)
    finally:
        await store.close()
    for line in describe(report):
        print(line, file=sys.stdout if not line.startswith("skipped") else sys.stderr)
    return 0
