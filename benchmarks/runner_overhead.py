"""What a run with session memory costs, ours against the OpenAI Agents SDK's Runner.

Both runners get a model that answers at once, so the figures are the runner's and the
session's own cost per run: read the history, save the input, call the model, save the
answer. Each session starts with ``--history`` items; the table shows microseconds per
run (median of ``--repeats`` rounds of ``--runs`` runs).

    .venv/bin/python benchmarks/runner_overhead.py [--runs 100] [--repeats 3] [--history 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import agents
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from agent_sessions import Agent, OfflineModel, Runner, SessionSettings, SQLiteSession
from agent_sessions.items import assistant_message, user_message

RunOnce = Callable[[int], Awaitable[None]]


class InstantSDKModel(agents.Model):
    """An SDK model that answers "ok" at once."""

    async def get_response(self, *args: Any, **kwargs: Any) -> agents.ModelResponse:
        reply = ResponseOutputMessage(
            id="msg",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="ok", annotations=[])],
        )
        return agents.ModelResponse(output=[reply], usage=agents.Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("not streamed here")


def history(length: int) -> list[dict[str, Any]]:
    return [
        user_message(f"question {i}") if i % 2 == 0 else assistant_message(f"answer {i}")
        for i in range(length)
    ]


async def ours(db: str, history_length: int, limit: int | None) -> tuple[RunOnce, SQLiteSession]:
    settings = SessionSettings(limit=limit)
    session = SQLiteSession("bench", db, session_settings=settings)
    await session.add_items(history(history_length))
    agent = Agent("bench", "", OfflineModel(["ok"] * 1_000_000))

    async def run_once(i: int) -> None:
        await Runner.run(agent, f"message {i}", session=session)

    return run_once, session


async def sdk(db: str, history_length: int, limit: int | None) -> tuple[RunOnce, Any]:
    settings = agents.memory.SessionSettings(limit=limit)
    session = agents.SQLiteSession("bench", db, session_settings=settings)
    await session.add_items(history(history_length))  # type: ignore[arg-type]
    agent = agents.Agent(name="bench", instructions="", model=InstantSDKModel())
    config = agents.RunConfig(tracing_disabled=True)

    async def run_once(i: int) -> None:
        await agents.Runner.run(agent, f"message {i}", session=session, run_config=config)

    return run_once, session


async def measure(run_once: RunOnce, runs: int, repeats: int) -> float:
    """Median microseconds per run."""
    await run_once(-1)  # warm-up: imports, schema, caches
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(runs):
            await run_once(i)
        rounds.append((time.perf_counter() - start) / runs * 1e6)
    return statistics.median(rounds)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--history", type=int, default=1000)
    args = parser.parse_args()
    print(f"us per run, {args.history} items of history, median of {args.repeats} x {args.runs}")
    print("| runner | storage | limit=None | limit=20 |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for name, factory in (("agent_sessions", ours), ("openai-agents", sdk)):
            for storage in ("memory", "file"):
                cells = []
                for limit in (None, 20):
                    db = ":memory:" if storage == "memory" else str(Path(directory) / f"{name}.db")
                    run_once, session = await factory(db, args.history, limit)
                    cells.append(f"{await measure(run_once, args.runs, args.repeats):,.0f}")
                    await session.clear_session()
                    if isinstance(session, SQLiteSession):
                        await session.close()
                    else:
                        session.close()
                print(f"| {name} | {storage} | {' | '.join(cells)} |")


if __name__ == "__main__":
    asyncio.run(main())
