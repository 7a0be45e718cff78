"""A terminal chat that remembers across restarts, on a SQLite session file.

    python -m agent_sessions.chat --db conversations.db --session user_123 [--model NAME]

Without ``--model`` it runs the deterministic offline model, which answers by recalling
what you said; with ``--model`` it talks to an OpenAI-compatible Chat Completions
endpoint (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``). Lines starting with ``/`` are
commands: ``/history``, ``/undo`` (forget the last exchange), ``/clear``, ``/quit``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TextIO

from .agent import Agent
from .events import TextDeltaEvent
from .items import is_function_call, is_function_call_output, message_role, message_text
from .models import Model, OfflineModel, OpenAIChatCompletionsModel
from .protocol import Item, Session
from .runner import Runner
from .sqlite import SQLiteSession

__all__ = ["main"]

INSTRUCTIONS = "You are a helpful assistant. Reply concisely."
COMMANDS = "/history, /undo, /clear, /quit"


def main(argv: list[str] | None = None) -> int:
    """Run the chat on stdin and stdout until end of input or ``/quit``.

    Returns 0, or 2 when the model cannot be set up (the reason goes to stderr).
    """
    parser = argparse.ArgumentParser(
        prog="python -m agent_sessions.chat",
        description="A terminal chat whose memory survives restarts (a SQLite file).",
    )
    parser.add_argument("--db", default="conversations.db", help="SQLite file of the sessions")
    parser.add_argument("--session", default="default", help="the conversation's session id")
    parser.add_argument(
        "--model",
        help="a Chat Completions model name (uses OPENAI_BASE_URL and OPENAI_API_KEY); "
        "without it, the offline model",
    )
    args = parser.parse_args(argv)
    try:
        model: Model = OpenAIChatCompletionsModel(args.model) if args.model else OfflineModel()
    except Exception as exc:  # e.g. no API key, or the openai extra missing
        print(f"error: {exc}", file=sys.stderr)
        return 2
    agent = Agent("assistant", INSTRUCTIONS, model)
    try:
        return asyncio.run(_chat(agent, args.db, args.session, sys.stdin, sys.stdout))
    except KeyboardInterrupt:
        return 130


async def _chat(agent: Agent, db: str, session_id: str, stdin: TextIO, stdout: TextIO) -> int:
    interactive = stdin.isatty()
    async with SQLiteSession(session_id, db) as session:
        if interactive:
            count = len(await session.get_items())
            print(f"session {session_id!r} in {db}: {count} items. {COMMANDS}.", file=stdout)
        while True:
            if interactive:
                print("you> ", end="", file=stdout, flush=True)
            line = stdin.readline()
            if not line:
                return 0
            text = line.strip()
            if text == "/quit":
                return 0
            if text.startswith("/"):
                await _command(text, session, stdout)
            elif text:
                await _answer(agent, text, session, stdout)


async def _answer(agent: Agent, text: str, session: Session, stdout: TextIO) -> None:
    print("assistant> ", end="", file=stdout, flush=True)
    streamed = Runner.run_streamed(agent, text, session=session)
    try:
        async for event in streamed.stream_events():
            if isinstance(event, TextDeltaEvent):
                print(event.delta, end="", file=stdout, flush=True)
    except Exception as exc:  # keep the chat alive; the question stays saved for a retry
        print(f"\nerror: {type(exc).__name__}: {exc}", file=sys.stderr)
    print(file=stdout, flush=True)


async def _command(command: str, session: Session, stdout: TextIO) -> None:
    if command == "/history":
        for item in await session.get_items():
            print(_describe(item), file=stdout)
    elif command == "/undo":
        # An exchange ends with the assistant's answer and starts with the user's message.
        # At most one pop per stored item: a store whose pop_item fails to remove what it
        # returns cannot keep this loop going forever.
        forgotten = 0
        for _ in range(len(await session.get_items())):
            popped = await session.pop_item()
            if popped is None:
                break
            forgotten += 1
            if message_role(popped) == "user":
                break
        print(f"forgot the last exchange ({forgotten} items)", file=stdout)
    elif command == "/clear":
        await session.clear_session()
        print("history cleared", file=stdout)
    else:
        print(f"unknown command {command}; try {COMMANDS}", file=stdout)


def _describe(item: Item) -> str:
    if is_function_call(item):
        return f"[tool call] {item.get('name')}({item.get('arguments')})"
    if is_function_call_output(item):
        return f"[tool output] {item.get('output')}"
    return f"{message_role(item) or item.get('type')}> {message_text(item)}"


if __name__ == "__main__":
    sys.exit(main())
