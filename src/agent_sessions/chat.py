"""A terminal chat that remembers across restarts, on a SQLite session file.

    agent-sessions chat --db conversations.db --session user_123 [--model NAME] [--history FILE]

(``python -m agent_sessions chat`` and ``python -m agent_sessions.chat`` are the same
program.) Without ``--model`` it runs the deterministic offline model, which answers by
recalling what you said; with ``--model`` it talks to an OpenAI-compatible Chat
Completions endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). Lines starting with ``/``
are commands (``/help`` lists them).

In a terminal the prompt line is edited with ``readline`` (arrows, Up/Down through the
lines typed, Ctrl-R to search); ``--history FILE`` keeps those lines across runs (by
default they are kept for the run only). Ctrl-D (or ``/quit``) ends the chat. Ctrl-C while
the assistant answers stops the answer (the run keeps what was saved whole: your message,
not a partial answer); Ctrl-C at the prompt ends the chat at once with status 130, and the
line being typed is not sent. Without a terminal (input from a pipe) there is no prompt,
and Ctrl-C ends the chat at once.

A problem found before the first prompt (an unusable ``--db`` or ``--session``, a model
that cannot be set up) is one line on stderr and exit status 2, with or without a terminal.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from .agent import Agent
from .cli import HelpFormatter
from .events import TextDeltaEvent
from .items import is_function_call, is_function_call_output, message_role, message_text
from .models import Model, OfflineModel, OpenAIChatCompletionsModel
from .protocol import Item, Session
from .runner import Runner
from .sqlite import SQLiteSession

if sys.version_info >= (3, 11):
    from asyncio import Runner as EventLoop
else:  # pragma: no cover - Python 3.10
    # Not installable on 3.11+, where mypy runs (for python_version 3.10): no stubs there.
    from backports.asyncio.runner import (  # type: ignore[import-not-found, unused-ignore]
        Runner as EventLoop,
    )

__all__ = ["main"]

PROG = "agent-sessions chat"
INSTRUCTIONS = "You are a helpful assistant. Reply concisely."
COMMANDS = {
    "/help": "this list",
    "/history": "print the conversation so far",
    "/undo": "forget the last exchange (your last message and what followed it)",
    "/clear": "forget the whole conversation",
    "/quit": "end the chat (as Ctrl-D does)",
}
HISTORY_LENGTH = 1000
"""Lines kept in the ``--history`` file."""


def main(argv: list[str] | None = None) -> int:
    """Run the chat on stdin and stdout until end of input or ``/quit``.

    Returns 0; 2 when the chat cannot start (one line on stderr says why); 130 when
    interrupted by Ctrl-C.
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A terminal chat whose memory survives restarts (a SQLite file).",
        epilog="Inside the chat: " + ", ".join(COMMANDS) + ". Ctrl-D quits.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--db", default="conversations.db", help="SQLite file of the sessions")
    parser.add_argument("--session", default="default", help="the conversation's session id")
    parser.add_argument(
        "--model",
        help="a Chat Completions model name (uses OPENAI_BASE_URL and OPENAI_API_KEY); "
        "without it, the offline model",
    )
    parser.add_argument(
        "--history",
        metavar="FILE",
        help="keep the lines typed at the prompt in FILE across runs (Up recalls them); "
        "without it, Up recalls this run's lines only",
    )
    args = parser.parse_args(argv)
    interactive = sys.stdin.isatty()
    with EventLoop() as loop:
        try:
            chat = _Chat.start(args, loop, interactive)
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return 130
        except Exception as exc:  # any problem of the set-up: one line, before a prompt
            print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
            return 2
        try:
            return chat.loop()
        finally:
            chat.close()


class _Chat:
    """The chat's state: the agent, the open session and where lines come from."""

    def __init__(
        self,
        agent: Agent,
        session: SQLiteSession,
        loop: EventLoop,
        interactive: bool,
        history: str | None,
    ) -> None:
        self.agent = agent
        self.session = session
        self.interactive = interactive
        self.history = history
        self._loop = loop
        self.out: TextIO = sys.stdout

    @classmethod
    def start(cls, args: argparse.Namespace, loop: EventLoop, interactive: bool) -> _Chat:
        """Set everything up and greet; raises on anything that keeps the chat from
        working, before the first prompt."""
        model: Model = OpenAIChatCompletionsModel(args.model) if args.model else OfflineModel()
        session = SQLiteSession(args.session, args.db)
        try:
            count = len(loop.run(session.get_items()))  # opens (or creates) the database
            if interactive:
                _set_up_line_editing(args.history)
        except BaseException:
            loop.run(session.close())
            raise
        chat = cls(
            Agent("assistant", INSTRUCTIONS, model), session, loop, interactive, args.history
        )
        if interactive:
            print(
                f"session {args.session!r} in {args.db}: {count} items. "
                f"Commands: {', '.join(COMMANDS)}; Ctrl-D quits.",
                file=chat.out,
            )
        return chat

    def loop(self) -> int:
        """Read and answer lines until end of input or ``/quit``; the exit status."""
        while True:
            try:
                line = self._read_line()
            except KeyboardInterrupt:  # the line being typed is dropped, never sent
                print(file=self.out, flush=True)
                return 130
            if line is None:
                return 0
            text = line.strip()
            if text == "/quit":
                return 0
            # On Ctrl-C the event loop cancels the step, waits for it to stop, then raises.
            try:
                if text.startswith("/"):
                    self._loop.run(self._command(text))
                elif text:
                    self._loop.run(self._answer(text))
            except KeyboardInterrupt:
                if not self.interactive:
                    print(file=self.out, flush=True)
                    return 130
                print(
                    "\ninterrupted: the answer was not saved (your message was; /undo forgets it)",
                    file=self.out,
                    flush=True,
                )

    def close(self) -> None:
        self._loop.run(self.session.close())
        if self.interactive and self.history is not None:
            import readline

            try:
                readline.write_history_file(self.history)
            except OSError as exc:
                print(f"{PROG}: could not save the history: {_one_line(exc)}", file=sys.stderr)

    def _read_line(self) -> str | None:
        """The next line without its newline, or ``None`` at end of input."""
        if not self.interactive:
            line = sys.stdin.readline()
            return line if line else None
        try:
            return input("you> ")  # readline edits it: arrows, history, Ctrl-R
        except EOFError:  # Ctrl-D: leave the shell's prompt on a line of its own
            print(file=self.out)
            return None

    async def _answer(self, text: str) -> None:
        print("assistant> ", end="", file=self.out, flush=True)
        streamed = Runner.run_streamed(self.agent, text, session=self.session)
        try:
            async for event in streamed.stream_events():
                if isinstance(event, TextDeltaEvent):
                    print(event.delta, end="", file=self.out, flush=True)
        except Exception as exc:  # keep the chat alive; the question stays saved for a retry
            print(f"\nerror: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        print(file=self.out, flush=True)

    async def _command(self, command: str) -> None:
        out = self.out
        session = self.session
        if command == "/help":
            width = max(map(len, COMMANDS))
            for name, what in COMMANDS.items():
                print(f"{name:<{width}}  {what}", file=out)
            print("Ctrl-D quits; Ctrl-C stops an answer, or quits at the prompt.", file=out)
        elif command == "/history":
            items = await session.get_items()
            for item in items:
                print(_describe(item), file=out)
            if not items:
                print("the session is empty", file=out)
        elif command == "/undo":
            forgotten = await _undo(session)
            if forgotten:
                print(f"forgot the last exchange ({forgotten} items)", file=out)
            else:
                print("nothing to undo: the session is empty", file=out)
        elif command == "/clear":
            count = len(await session.get_items())
            await session.clear_session()
            print(f"history cleared ({count} items)", file=out)
        else:
            print(f"unknown command {command}; try /help", file=out)


async def _undo(session: Session) -> int:
    """Forget the last exchange: pop items up to and including the latest user message.
    At most one pop per stored item: a store whose ``pop_item`` fails to remove what it
    returns cannot keep this loop going forever. Returns how many were removed."""
    forgotten = 0
    for _ in range(len(await session.get_items())):
        popped = await session.pop_item()
        if popped is None:
            break
        forgotten += 1
        if message_role(popped) == "user":
            break
    return forgotten


def _set_up_line_editing(history: str | None) -> None:
    """Line editing for ``input()`` (imported only for a terminal: importing ``readline``
    may write terminal codes), with the lines of ``history`` to recall."""
    import readline

    readline.set_history_length(HISTORY_LENGTH)
    if history is not None and os.path.exists(history):
        readline.read_history_file(history)


def _describe(item: Item) -> str:
    if is_function_call(item):
        return f"[tool call] {item.get('name')}({item.get('arguments')})"
    if is_function_call_output(item):
        return f"[tool output] {item.get('output')}"
    return f"{message_role(item) or item.get('type')}> {message_text(item)}"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


if __name__ == "__main__":
    sys.exit(main())
