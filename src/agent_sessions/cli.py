"""The admin command line: ``python -m agent_sessions COMMAND URL ...`` (or ``agent-sessions``).

Every command takes a session URL (see :mod:`agent_sessions.urls`). ``export`` writes one
JSON line per item, ``{"item": {...}, "session_id": "..."}``, sessions in id order and
items oldest first, encoded canonically (sorted keys, no spaces, unicode as is): the same
data exported from any backend gives the same bytes, and ``import`` reads it back.

Exit status: 0 on success, 1 when the command failed (unreachable server, malformed
input, empty session for ``pop``), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from typing import Any, TextIO

from ._json import encode_items
from .migrate import configure_parser as configure_migrate_parser
from .protocol import Item, SessionError, SessionStore
from .urls import open_store

__all__ = ["main"]

_canonical = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
)


class CommandError(Exception):
    """A command failed in a way the user can fix; the message says how."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return the process exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    parsed, rest = parser.parse_known_args(args)
    if parsed.command == "chat":
        from .chat import main as chat_main

        return chat_main(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        run: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = parsed.run
        return asyncio.run(run(parsed))
    except (CommandError, SessionError, ValueError, TypeError, ImportError, OSError) as exc:
        print(f"agent-sessions {parsed.command}: error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-sessions",
        description="Inspect and move agent sessions stored at a session URL "
        "(sqlite:///file.db, redis://host:6379/0, postgresql://user@host/db).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_text: str, run: Any) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("url", metavar="URL", help="session URL")
        sub.set_defaults(run=run)
        return sub

    listing = command("list", "list session ids, one page at a time", _list)
    listing.add_argument("--prefix", default="", help="only ids starting with this")
    listing.add_argument("--limit", type=int, default=100, help="ids per page (default 100)")
    listing.add_argument("--after", metavar="CURSOR", help="continue after this page cursor")

    show = command("show", "print one session's items", _show)
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--last", type=int, metavar="N", help="only the latest N items")
    show.add_argument("--format", choices=["table", "json", "jsonl"], default="table")

    export = command("export", "write sessions as JSON lines to stdout", _export)
    export.add_argument("session_ids", metavar="ID", nargs="*", help="default: every session")

    command("import", "read JSON lines (as export writes them) from stdin", _import)

    pop = command("pop", "remove the latest item of a session and print it", _pop)
    pop.add_argument("session_id", metavar="ID")

    clear = command("clear", "remove every item of a session", _clear)
    clear.add_argument("session_id", metavar="ID")

    command("stats", "count sessions and items (reads every session)", _stats)

    migrate_help = "copy the conversations the OpenAI Agents SDK stored into TARGET_URL"
    migrate_sdk = commands.add_parser("migrate-sdk", help=migrate_help, description=migrate_help)
    configure_migrate_parser(migrate_sdk)

    # chat parses its own arguments (agent-sessions chat --help shows them)
    commands.add_parser("chat", help="chat with an agent", add_help=False)
    return parser


async def _list(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        page = await store.list_sessions(prefix=args.prefix, cursor=args.after, limit=args.limit)
    for session_id in page.session_ids:
        print(session_id)
    if page.next_cursor is not None:
        print(f"more: --after {shlex.quote(page.next_cursor)}", file=sys.stderr)
    return 0


async def _show(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        items = await store.session(args.session_id).get_items(limit=args.last)
    if args.format == "json":
        print(json.dumps(items, ensure_ascii=False, indent=2))
    elif args.format == "jsonl":
        for item in items:
            print(_canonical.encode(item))
    else:
        _print_table(items, sys.stdout)
    return 0


async def _export(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        session_ids = args.session_ids or sorted([sid async for sid in _every_session(store)])
        for session_id in session_ids:
            for item in await store.session(session_id).get_items():
                sys.stdout.write(_canonical.encode({"item": item, "session_id": session_id}) + "\n")
    return 0


async def _import(args: argparse.Namespace) -> int:
    batches = _read_export(sys.stdin)
    async with _store(args.url) as store:
        for session_id, items in batches.items():
            await store.session(session_id).add_items(items)
    count = sum(len(items) for items in batches.values())
    print(f"imported {count} items into {len(batches)} sessions", file=sys.stderr)
    return 0


async def _pop(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        item = await store.session(args.session_id).pop_item()
    if item is None:
        print(f"session {args.session_id!r} is empty", file=sys.stderr)
        return 1
    print(_canonical.encode(item))
    return 0


async def _clear(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        await store.session(args.session_id).clear_session()
    return 0


async def _stats(args: argparse.Namespace) -> int:
    sessions = items = 0
    largest: tuple[int, str] | None = None
    async with _store(args.url) as store:
        async for session_id in _every_session(store):
            count = len(await store.session(session_id).get_items())
            sessions += 1
            items += count
            if largest is None or (count, session_id) > largest:
                largest = (count, session_id)
    print(f"sessions: {sessions}")
    print(f"items: {items}")
    if largest is not None:
        print(f"largest: {largest[1]} ({largest[0]} items)")
    return 0


@asynccontextmanager
async def _store(url: str) -> AsyncIterator[SessionStore]:
    """The store for ``url``, closed afterwards."""
    store = open_store(url)
    try:
        yield store
    finally:
        await store.close()


async def _every_session(store: SessionStore) -> AsyncIterator[str]:
    cursor: str | None = None
    seen: set[str] = set()
    while True:
        page = await store.list_sessions(cursor=cursor, limit=1000)
        for session_id in page.session_ids:
            if session_id not in seen:  # SCAN-based listings may repeat an id
                seen.add(session_id)
                yield session_id
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


def _read_export(lines: TextIO) -> dict[str, list[Item]]:
    """Every line of an export, grouped by session; nothing is returned (so nothing is
    imported) if any line is malformed, and the error names the first bad line."""
    batches: dict[str, list[Item]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise CommandError(f"line {number}: not JSON: {exc}") from None
        if not isinstance(record, dict) or set(record) != {"item", "session_id"}:
            raise CommandError(
                f'line {number}: expected {{"item": {{...}}, "session_id": "..."}}, '
                f"got {line.strip()[:80]}"
            )
        session_id, item = record["session_id"], record["item"]
        if not isinstance(session_id, str) or not session_id:
            raise CommandError(f"line {number}: session_id must be a non-empty string")
        try:
            encode_items([item])
        except TypeError as exc:
            raise CommandError(f"line {number}: {exc}") from None
        batches.setdefault(session_id, []).append(item)
    return batches


def _print_table(items: list[Item], out: TextIO) -> None:
    """One row per item: its position, its role or type, and its JSON shortened."""
    out.write(f"{'#':>4}  {'kind':<16}  item\n")
    for position, item in enumerate(items, start=1):
        kind = item.get("role") or item.get("type") or ""
        text = _canonical.encode(item)
        if len(text) > 100:
            text = text[:99] + "…"
        out.write(f"{position:>4}  {str(kind)[:16]:<16}  {text}\n")
