"""The admin commands ``branches`` and ``usage`` on sessions of agent_sessions.branches,
in a subprocess as users run them: output, exit codes, missing databases and sessions."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agent_sessions import SQLiteStore
from agent_sessions.branches import BranchingSession, Usage
from agent_sessions.items import assistant_message, user_message


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


def _cli(*argv: str) -> tuple[int, str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "agent_sessions", *argv],
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


def _fill(url: str) -> None:
    async def fill() -> None:
        async with SQLiteStore(url.removeprefix("sqlite:///")) as store:
            session = BranchingSession(store, "chat")
            await session.add_items([user_message("a"), assistant_message("1")])
            await session.record_usage({"requests": 1, "input_tokens": 10, "output_tokens": 2})
            await session.add_items([user_message("b"), assistant_message("2")])
            await session.record_usage({"requests": 1, "input_tokens": 20, "output_tokens": 4})
            await session.branch_from(1, "edit")
            await session.add_items([user_message("b2")])
            await session.record_usage({"requests": 2, "input_tokens": 7, "output_tokens": 1})
            await session.branch_from(0, "gone", switch=False)
            await session.switch("gone")
            await session.add_items([user_message("c")])
            await session.record_usage({"requests": 1, "input_tokens": 5, "output_tokens": 5})
            await session.switch("edit")
            await session.delete_branch("gone")

    asyncio.run(fill())


def test_branches_lists_each_branch_its_items_and_origin(url: str) -> None:
    _fill(url)
    assert _cli("branches", url, "chat") == (
        0,
        "  branch  items  from\n  main        4\n* edit        3  main, turn 1\n",
        "",
    )


def test_usage_prints_turns_per_branch_and_the_totals(url: str) -> None:
    _fill(url)
    status, out, err = _cli("usage", url, "chat")
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        "branch   turn  requests      input     output  total",
        "main        0         1         10          2  12",
        "main        1         1         20          4  24",
        "edit        1         2          7          1  8",
        "gone        0         1          5          5  10",
        "total                 5         42         12  54",
    ]
    status, out, err = _cli("usage", url, "chat", "--branch", "edit")
    assert (status, out.splitlines()[1:], err) == (
        0,
        [
            "edit        1         2          7          1  8",
            "total                 2          7          1  8",
        ],
        "",
    )


def test_unknown_sessions_branches_and_databases_fail_with_one_line(
    url: str, tmp_path: Path
) -> None:
    _fill(url)
    status, out, err = _cli("usage", url, "chat", "--branch", "nope")
    assert (status, out) == (1, "")
    assert err == (
        "agent-sessions usage: error: session 'chat' has no branch 'nope' and no usage "
        "recorded on one\n"
    )
    status, out, err = _cli("branches", url, "other")
    assert (status, out) == (1, "")
    assert "no session 'other'" in err
    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    status, out, err = _cli("branches", missing, "chat")
    assert (status, out) == (1, "")
    assert err.startswith("agent-sessions branches: error: ")
    assert "missing.db" in err
    assert not (tmp_path / "missing.db").exists()
    assert _cli("usage", url)[0] == 2  # no session id: a usage error


def test_usage_shows_what_the_runner_recorded_by_itself(url: str) -> None:
    """No record_usage: our Runner's runs (one plain, one streamed) are recorded per turn."""
    from agent_sessions import Agent, Runner, RunResult
    from agent_sessions.models import OfflineModel

    async def run() -> list[RunResult]:
        async with SQLiteStore(url.removeprefix("sqlite:///")) as store:
            session = BranchingSession(store, "chat")
            agent = Agent("a", "Be brief.", OfflineModel())
            first = await Runner.run(agent, "hello", session=session)
            streamed = Runner.run_streamed(agent, "and again", session=session)
            async for _ in streamed.stream_events():
                pass
            await streamed.wait()
            return [first, streamed.result]

    first, second = (result.usage for result in asyncio.run(run()))
    status, out, err = _cli("usage", url, "chat")
    assert (status, err) == (0, "")
    rows = [line.split() for line in out.splitlines()[1:]]
    total = first + second
    assert rows == [
        ["main", "0", *_counts(first)],
        ["main", "1", *_counts(second)],
        ["total", *_counts(total)],
    ]
    assert second.input_tokens > first.input_tokens  # the second call saw the history


def _counts(usage: Usage) -> list[str]:
    fields = (usage.requests, usage.input_tokens, usage.output_tokens, usage.total_tokens)
    return [str(value) for value in fields]
