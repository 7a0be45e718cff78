"""The admin command line: ``python -m agent_sessions COMMAND URL ...`` (or ``agent-sessions``).

Every command takes a session URL (see :mod:`agent_sessions.urls`). ``export`` writes one
JSON line per item, ``{"item": {...}, "session_id": "..."}``, sessions in id order and
items oldest first, encoded canonically (sorted keys, no spaces, unicode as is except
characters that are not printable, which are ``\\u`` escapes): the same data exported from
any backend gives the same bytes, and ``import`` reads it back.

``import`` reads and checks the whole input against the target before it writes anything
(every line parses, every id is one the target can store, every item is one it accepts);
then, per session, ``--existing`` decides what happens to a session that already holds
items: ``skip`` (the default, so a re-run never doubles a session), ``replace`` or
``append``.

Stored text reaches the terminal escaped: an id that is not plain printable text prints as
a ``$'...'`` literal (as bash reads it), and the JSON that ``show``, ``pop`` and ``export``
print has every non-printable character as a ``\\u`` escape, so no stored newline, ANSI or
bidirectional control acts on the terminal.

Only ``import`` creates anything: the other commands open the store with ``create=False``,
so a SQLite file or PostgreSQL table that does not hold sessions yet is an error naming
it, and ``list``, ``show``, ``export`` and ``stats`` change nothing. A session exists once
it holds an item: ``show``, ``pop``, ``clear`` and ``export ID`` of a session without
items fail alike (:func:`_check_exists`).

Exit status: 0 on success, 1 when the command failed (one line on stderr: unreachable
server, malformed input, a missing database or session), 2 for a usage error (argparse's,
naming the option), 130 when interrupted (one Ctrl-C; every write is one atomic batch).

A new subcommand is one ``command(...)`` call in :func:`_parser` and a coroutine
``run(args) -> int``; ``_store(args.url)`` opens the store.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO

from . import __version__
from ._json import encode_items
from ._servers import mask_url, scrub, url_secrets
from .branches import BranchingSession, metadata_session_id
from .items import is_function_call, is_function_call_output, message_role, message_text
from .migrate import configure_parser as configure_migrate_parser
from .protocol import Item, Session, SessionError, SessionStore, validate_session_id
from .urls import open_store

__all__ = ["main"]

_canonical = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
)


PROG = "agent-sessions"


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
    run: Callable[[argparse.Namespace], Coroutine[Any, Any, int]] = parsed.run
    try:
        if parsed.reads_stdin:
            # Read before the event loop starts: in a blocking read, only the default SIGINT
            # handler stops at once (asyncio's would wait for the read to return).
            open_store(parsed.url)  # a bad URL is reported before anything is typed
            parsed.input = _read_input(parsed.command)
        status = asyncio.run(_interruptible(run(parsed)))
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return status
    except BrokenPipeError:  # `agent-sessions export URL | head`: stop quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print(f"{PROG} {parsed.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # every failure is one line, never a traceback
        urls = [value for value in vars(parsed).values() if isinstance(value, str)]
        message = _error_line(exc, getattr(parsed, "url", None), urls)
        print(f"{PROG} {parsed.command}: error: {message}", file=sys.stderr)
        return 1


class HelpFormatter(argparse.HelpFormatter):
    """Help that shows each option's default (when it has one worth showing), as
    ``argparse.ArgumentDefaultsHelpFormatter`` would without ``(default: None)``."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            "%(default)" in text
            or default in (None, False, "", argparse.SUPPRESS)
            or action.option_strings == []
        ):
            return text
        return f"{text} (default: %(default)s)" if text else "(default: %(default)s)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Inspect and move agent sessions stored at a session URL "
        "(sqlite:///file.db, redis://host:6379/0, postgresql://user@host/db).",
        epilog="A session exists once it holds an item: show, pop, export ID and clear of "
        "a session without items fail (exit 1). Only import creates a database.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, help_text: str, run: Any, *, reads_stdin: bool = False
    ) -> argparse.ArgumentParser:
        """A subcommand on a session URL; ``run(args)`` is a coroutine returning the exit
        status (raise ``CommandError`` for a failure the user can fix)."""
        sub = commands.add_parser(
            name, help=help_text, description=help_text, formatter_class=HelpFormatter
        )
        sub.add_argument("url", metavar="URL", help="session URL")
        sub.set_defaults(run=run, reads_stdin=reads_stdin)
        return sub

    listing = command("list", "list session ids, one page at a time", _list)
    listing.add_argument("--prefix", default="", help="only ids starting with this")
    listing.add_argument(
        "--limit", type=_integer(minimum=1), default=100, metavar="N", help="ids per page"
    )
    listing.add_argument("--after", metavar="CURSOR", help="continue after this page cursor")

    show = command("show", "print one session's items", _show)
    show.add_argument("session_id", metavar="ID")
    show.add_argument(
        "--last", type=_integer(minimum=0), metavar="N", help="only the latest N items"
    )
    show.add_argument(
        "--format",
        choices=["table", "json", "jsonl"],
        default="table",
        help="table: each item's role or type and its text; json, jsonl: the items",
    )

    export = command("export", "write sessions as JSON lines to stdout", _export)
    export.add_argument("session_ids", metavar="ID", nargs="*", help="default: every session")

    importing = command(
        "import",
        "read JSON lines (as export writes them) from standard input; checks everything "
        "first, creates the database if needed",
        _import,
        reads_stdin=True,
    )
    importing.add_argument(
        "--existing",
        choices=["skip", "replace", "append"],
        default="skip",
        help="what to do with a session that already holds items: skip it (re-running an "
        "import changes nothing), replace its items with the input's, or append the "
        "input's items after them",
    )
    importing.add_argument(
        "--dry-run",
        action="store_true",
        help="check the input against the target and report what would happen; write nothing",
    )

    pop = command("pop", "remove the latest item of a session and print it", _pop)
    pop.add_argument("session_id", metavar="ID")

    clear = command("clear", "remove every item of a session", _clear)
    clear.add_argument("session_id", metavar="ID")

    command("stats", "count sessions and items (reads every session)", _stats)

    branches = command(
        "branches", "list the branches of a session (agent_sessions.branches)", _branches
    )
    branches.add_argument("session_id", metavar="ID")
    usage = command(
        "usage",
        "print the token usage recorded for a session, per branch and turn, and its totals",
        _usage,
    )
    usage.add_argument("session_id", metavar="ID")
    usage.add_argument("--branch", metavar="NAME", help="only this branch's turns and total")

    migrate_help = "copy the conversations the OpenAI Agents SDK stored into TARGET_URL"
    migrate_sdk = commands.add_parser(
        "migrate-sdk", help=migrate_help, description=migrate_help, formatter_class=HelpFormatter
    )
    configure_migrate_parser(migrate_sdk)
    migrate_sdk.set_defaults(reads_stdin=False)

    # chat parses its own arguments (agent-sessions chat --help shows them)
    commands.add_parser("chat", help="chat with an agent (--help: its options)", add_help=False)
    return parser


def _integer(*, minimum: int) -> Callable[[str], int]:
    """An argparse type: an int >= ``minimum`` (argparse names the option on failure)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _read_input(command: str) -> list[str]:
    """Every line of standard input; from a terminal, first say that it is read."""
    if sys.stdin.isatty():
        print(
            f"{PROG} {command}: reading JSON lines from standard input "
            "(end with Ctrl-D, cancel with Ctrl-C)",
            file=sys.stderr,
        )
    return sys.stdin.readlines()


async def _interruptible(command: Coroutine[Any, Any, int]) -> int:
    """``command``, stopped by Ctrl-C as ``KeyboardInterrupt``.

    asyncio's own SIGINT handler cancels the main task once; a cancellation that lands while
    a driver enters its read timeout can be lost (seen with redis-py on a loaded machine: the
    command then waited for its 10 s socket timeout). Here every SIGINT cancels the command,
    and the cancellation is repeated until the command has stopped."""
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    interrupted = False

    def cancel_until_done() -> None:
        if task is not None and not task.done():
            task.cancel()
            loop.call_later(_RECANCEL_SECONDS, cancel_until_done)

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        cancel_until_done()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):  # Windows, not the main thread
        return await command
    try:
        return await command
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGINT)


_RECANCEL_SECONDS = 0.25


async def _list(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        page = await store.list_sessions(prefix=args.prefix, cursor=args.after, limit=args.limit)
    for session_id in page.session_ids:
        print(_shown(session_id))
    if page.next_cursor is not None:
        print(f"more: --after {_shell_word(page.next_cursor)}", file=sys.stderr)
    return 0


async def _show(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        session = store.session(args.session_id)
        items = await session.get_items(limit=args.last)
        if not items:  # --last 0, or no such session
            await _check_exists(session)
    if args.format == "json":
        print(_printable_json(json.dumps(items, ensure_ascii=False, indent=2)))
    elif args.format == "jsonl":
        for item in items:
            print(_printable_json(_canonical.encode(item)))
    else:
        _print_table(items, sys.stdout)
    return 0


async def _export(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        if args.session_ids:
            session_ids = args.session_ids
            for session_id in session_ids:  # all of them, before a line is written
                await _check_exists(store.session(session_id))
        else:
            session_ids = sorted([sid async for sid in _every_session(store)])
        for session_id in session_ids:
            for item in await store.session(session_id).get_items():
                record = _canonical.encode({"item": item, "session_id": session_id})
                sys.stdout.write(_printable_json(record) + "\n")
    return 0


async def _import(args: argparse.Namespace) -> int:
    async with _store(args.url, create=True) as store:
        batches = _read_export(args.input, store)
        # Which sessions exist is read before anything is written, so the plan (and a
        # --dry-run report) is exact, and a session of the input never counts twice.
        existing = {
            session_id
            for session_id, batch in batches.items()
            if await batch.session.get_items(limit=1)
        }
        written = items = 0
        for session_id, batch in batches.items():
            if session_id in existing and args.existing == "skip":
                continue
            if not args.dry_run:
                if session_id in existing and args.existing == "replace":
                    await batch.session.clear_session()
                await batch.session.add_items(batch.items)
            written += 1
            items += len(batch.items)
    verb = "would import" if args.dry_run else "imported"
    report = f"{verb} {items} items into {written} sessions"
    if existing:
        how = {"skip": "skipped", "replace": "replaced", "append": "appended to"}[args.existing]
        report += f" ({how} {len(existing)} that already existed)"
    print(report, file=sys.stderr)
    return 0


async def _pop(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        session = store.session(args.session_id)
        item = await session.pop_item()
        if item is None:
            await _check_exists(session)  # raises: an empty session does not exist
    print(_printable_json(_canonical.encode(item)))
    return 0


async def _clear(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        session = store.session(args.session_id)
        await _check_exists(session)
        await session.clear_session()
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
        print(f"largest: {_shown(largest[1])} ({largest[0]} items)")
    return 0


async def _branching(store: SessionStore, session_id: str) -> BranchingSession:
    """The branches of ``session_id``; a session without items and without a branch log
    does not exist (the one rule of :func:`_check_exists`)."""
    validate_session_id(session_id)
    session = BranchingSession(store, session_id)
    if not await store.session(metadata_session_id(session_id)).get_items(limit=1):
        await _check_exists(store.session(session_id))
    return session


async def _branches(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        session = await _branching(store, args.session_id)
        rows = []
        for branch in await session.list_branches():
            count = len(await store.session(branch.session_id).get_items())
            origin = "" if branch.parent is None else f"{branch.parent}, turn {branch.turn}"
            rows.append(("*" if branch.current else " ", branch.name, count, origin))
    width = max([len("branch"), *(len(name) for _, name, _, _ in rows)])
    print(f"  {'branch':<{width}}  {'items':>5}  from")
    for mark, name, count, origin in rows:
        print(f"{mark} {_escaped(name):<{width}}  {count:>5}  {_escaped(origin)}".rstrip())
    return 0


async def _usage(args: argparse.Namespace) -> int:
    async with _store(args.url) as store:
        session = await _branching(store, args.session_id)
        names = [branch.name for branch in await session.list_branches()]
        spent = await session.usage_by_branch()
        names += [name for name in spent if name not in names]  # deleted branches
        if args.branch is not None:
            if args.branch not in names:
                raise CommandError(
                    f"session {args.session_id!r} has no branch {args.branch!r} and no usage "
                    "recorded on one"
                )
            names = [args.branch]
        rows = [
            (name, str(turn), counts)
            for name in names
            for turn, counts in (await session.usage_by_turn(name)).items()
        ]
        if args.branch is None:
            total = await session.usage()
        else:
            total = await session.usage(branch=args.branch)
    width = max([len("branch"), *(len(name) for name, _, _ in rows)])
    print(f"{'branch':<{width}}  {'turn':>5}  {'requests':>8}  {'input':>9}  {'output':>9}  total")
    for name, turn, counts in [*rows, ("total", "", total)]:
        print(
            f"{_escaped(name):<{width}}  {turn:>5}  {counts.requests:>8}  "
            f"{counts.input_tokens:>9}  {counts.output_tokens:>9}  {counts.total_tokens}"
        )
    return 0


@asynccontextmanager
async def _store(url: str, *, create: bool = False) -> AsyncIterator[SessionStore]:
    """The store for ``url``, closed afterwards. Only ``import`` creates a database: for
    every other command a missing one is an error that names it."""
    store = open_store(url, create=create)
    try:
        yield store
    finally:
        await store.close()


async def _check_exists(session: Session) -> None:
    """The one rule for a missing session: a session exists once it holds an item; the
    commands that name one fail (exit 1) when it holds none."""
    if not await session.get_items(limit=1):
        raise CommandError(f"no session {session.session_id!r} (it holds no items)")


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


@dataclass
class _Batch:
    """The items of one session of an import, and the target's handle on it."""

    session: Session
    items: list[Item]


def _read_export(lines: TextIO, store: SessionStore) -> dict[str, _Batch]:
    """Every line of an export, grouped by session (in order of first appearance) and
    checked against ``store``: an id must be one the store takes (``store.session``
    refuses the others, e.g. a NUL for PostgreSQL) and an item one it stores (the
    library's own ``encode_items``). Nothing is returned, so nothing is imported, if any
    line is bad; the error names the first bad line."""
    batches: dict[str, _Batch] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except RecursionError:
            raise CommandError(f"line {number}: nested too deeply to read") from None
        except ValueError as exc:
            raise CommandError(f"line {number}: not JSON: {exc}") from None
        if not isinstance(record, dict) or set(record) != {"item", "session_id"}:
            raise CommandError(
                f'line {number}: expected {{"item": {{...}}, "session_id": "..."}}, '
                f"got {_printable_json(line.strip()[:80])}"
            )
        session_id, item = record["session_id"], record["item"]
        batch = batches.get(session_id) if isinstance(session_id, str) else None
        if batch is None:
            try:
                validate_session_id(session_id)
                _check_utf8(session_id)
                session = store.session(session_id)
            except (TypeError, ValueError) as exc:
                raise CommandError(f"line {number}: {exc}") from None
            batch = batches[session_id] = _Batch(session, [])
        try:
            encode_items([item])
        except (TypeError, ValueError, RecursionError) as exc:
            raise CommandError(f"line {number}: {exc}") from None
        batch.items.append(item)
    return batches


def _check_utf8(session_id: str) -> None:
    """Refuse an id UTF-8 cannot encode (a lone surrogate, which JSON can spell): no
    backend stores it. (``validate_session_id`` checks this too in later versions.)"""
    try:
        session_id.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"session_id holds {exc.object[exc.start]!r}, a lone surrogate, which UTF-8 "
            "cannot store"
        ) from None


def _print_table(items: list[Item], out: TextIO) -> None:
    """One row per item: its position, its role or type, and its text (a message's text, a
    tool call's ``name(arguments)``, a tool result's output, else the item's JSON), in
    full; the lines of a multi-line text are indented under the first."""
    rows = [_kind_and_text(item) for item in items]
    width = max([len("kind"), *(len(kind) for kind, _ in rows)])
    out.write(f"{'#':>4}  {'kind':<{width}}  text\n")
    for position, (kind, text) in enumerate(rows, start=1):
        first, *more = text.split("\n")
        out.write(f"{position:>4}  {kind:<{width}}  {_escaped(first)}\n")
        for line in more:
            out.write(f"{'':>4}  {'':<{width}}  {_escaped(line)}\n")


def _kind_and_text(item: Item) -> tuple[str, str]:
    """An item's kind (printable) and its text (as stored)."""
    kind, text = _kind_and_raw_text(item)
    return _escaped(kind), text


def _kind_and_raw_text(item: Item) -> tuple[str, str]:
    role = message_role(item)
    if role is not None and "content" in item:
        return role, message_text(item)
    kind = item.get("type")
    if is_function_call(item):
        return str(kind), f"{item.get('name')}({item.get('arguments')})"
    if is_function_call_output(item) and isinstance(item.get("output"), str):
        return str(kind), str(item["output"])
    return str(kind if kind is not None else role or ""), _canonical.encode(item)


# -- what reaches the terminal ---------------------------------------------------------------

_SHORT_ESCAPES = {"\\": "\\\\", "'": "\\'", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _shown(text: str) -> str:
    """``text`` as is when it is plain printable text, else as a ``$'...'`` literal (bash's
    ANSI-C quoting) in which every non-printable character is an escape: a newline in an
    id never reads as two ids and no control sequence reaches the terminal."""
    if text.isprintable() and not text.startswith("$'"):
        return text
    return _ansi_c_literal(text)


def _escaped(text: str) -> str:
    """``text`` with every non-printable character as its ``$'...'`` escape."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _ansi_c_literal(char)[2:-1] for char in text)


def _shell_word(text: str) -> str:
    """``text`` quoted for a POSIX shell when printable, else as a ``$'...'`` literal."""
    return shlex.quote(text) if text.isprintable() else _ansi_c_literal(text)


def _ansi_c_literal(text: str) -> str:
    parts = []
    for char in text:
        if char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif char.isprintable():
            parts.append(char)
        elif ord(char) < 0x80:  # bash's \\x is a byte: only for ASCII
            parts.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            parts.append(f"\\u{ord(char):04x}")
        else:
            parts.append(f"\\U{ord(char):08x}")
    return "$'" + "".join(parts) + "'"


def _printable_json(text: str) -> str:
    """JSON ``text`` with every non-printable character inside its strings written as a
    ``\\u`` escape: the same JSON value, safe to print. (JSON escapes only the C0 controls;
    C1 controls such as U+009B, DEL, line separators and bidirectional overrides would
    reach the terminal as they are.) Newlines outside strings (indentation) are kept."""
    if text.isprintable():
        return text
    parts = []
    for char in text:
        if char.isprintable() or char == "\n":
            parts.append(char)
            continue
        code = ord(char)
        if code > 0xFFFF:  # a UTF-16 surrogate pair, as JSON spells characters beyond BMP
            code -= 0x10000
            parts.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            parts.append(f"\\u{code:04x}")
    return "".join(parts)


def _error_line(exc: BaseException, url: str | None, arguments: Sequence[str] = ()) -> str:
    """``exc`` as one printable line, with the password of ``url`` and of every URL among
    ``arguments`` masked. Errors this library documents (its own, bad values, OS errors, a
    missing driver) speak for themselves; anything else (a driver's error) is prefixed with
    its type and the masked URL."""
    message = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    if not message:
        message = type(exc).__name__
    documented = (CommandError, SessionError, ValueError, TypeError, OSError, ImportError)
    if not isinstance(exc, documented):
        # sqlite3.Error, a server's refusal (redis ResponseError, psycopg errors), ...
        message = f"{type(exc).__name__}: {message}"
        if url is not None:
            message = f"{message} (at {mask_url(url)})"
    for argument in {*arguments, *([url] if url is not None else [])}:
        message = scrub(message, url_secrets(argument))
    return _escaped(message)
