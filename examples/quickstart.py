"""Quickstart: a conversation stored in a SQLite file survives a process restart.

    python examples/quickstart.py [conversation.db]

Runs two separate Python processes, one after the other, on the same database file. The
first tells the assistant something; the second starts with nothing in memory, reads the
conversation back from the file and remembers it. Without a path, a temporary file is used.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from agent_sessions import Item, SQLiteSession

SESSION_ID = "user_123"


async def take_turn(db_path: Path, text: str) -> None:
    """One conversation turn in this process: read the history, answer, store both."""
    async with SQLiteSession(SESSION_ID, db_path) as session:
        history = await session.get_items()
        reply = answer(history)
        await session.add_items(
            [{"role": "user", "content": text}, {"role": "assistant", "content": reply}]
        )
    print(f"[process {os.getpid()}] user: {text}")
    print(f"[process {os.getpid()}] assistant: {reply}")


def answer(history: list[Item]) -> str:
    """A stand-in for an LLM: it can only know what the session gave it."""
    said = [item["content"] for item in history if item["role"] == "user"]
    if not said:
        return "Nice to meet you. I will remember that."
    return f"You told me earlier: {said[0]!r}"


async def show(db_path: Path) -> list[Item]:
    async with SQLiteSession(SESSION_ID, db_path) as session:
        return await session.get_items()


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--turn":
        asyncio.run(take_turn(Path(sys.argv[2]), sys.argv[3]))
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        db_path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(scratch) / "conversation.db"
        for text in ("My name is Ada.", "What is my name?"):
            # A new interpreter each time: only the file carries the conversation over.
            subprocess.run([sys.executable, __file__, "--turn", str(db_path), text], check=True)
        history = asyncio.run(show(db_path))
    print(f"\n{len(history)} items stored in {db_path}:")
    for item in history:
        print(f"  {item['role']}: {item['content']}")
    remembered = "My name is Ada." in history[-1]["content"]
    print("remembered across the restart" if remembered else "FORGOTTEN across the restart")
    return 0 if remembered else 1


if __name__ == "__main__":
    sys.exit(main())
