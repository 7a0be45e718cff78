"""The terminal chat: memory across restarts, its commands, and --model."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_sessions.chat import main

from .test_openai_model import ChatCompletionsServer


def chat_process(db: Path, session_id: str, lines: str) -> str:
    """Run the chat as a fresh process on ``lines`` of stdin; return its stdout."""
    completed = subprocess.run(
        [sys.executable, "-m", "agent_sessions.chat", "--db", str(db), "--session", session_id],
        input=lines,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return completed.stdout


def chat_in_process(monkeypatch: pytest.MonkeyPatch, argv: list[str], lines: str) -> str:
    stdout = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    monkeypatch.setattr(sys, "stdout", stdout)
    assert main(argv) == 0
    return stdout.getvalue()


def test_chat_remembers_across_restarts(tmp_path: Path) -> None:
    db = tmp_path / "conversations.db"
    chat_process(db, "user_123", "My name is Ada\n")
    second = chat_process(db, "user_123", "What did I say before?\n")

    assert 'Before that you said: "My name is Ada"' in second


def test_chat_sessions_in_one_file_stay_apart(tmp_path: Path) -> None:
    db = tmp_path / "conversations.db"
    chat_process(db, "alice", "I like pizza\n")
    bob = chat_process(db, "bob", "What do I like?\n")

    assert "pizza" not in bob
    assert "That is the first thing you told me." in bob


def test_undo_forgets_the_last_exchange(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--db", str(tmp_path / "c.db"), "--session", "s"]
    output = chat_in_process(monkeypatch, argv, "I like tea\nI like coffee\n/undo\nAnd?\n")

    assert output.splitlines()[-1].strip() == (
        'assistant> You said: "And?". Before that you said: "I like tea".'
    )


def test_undo_on_an_empty_session_forgets_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["--db", str(tmp_path / "c.db")]

    assert chat_in_process(monkeypatch, argv, "/undo\n") == (
        "nothing to undo: the session is empty\n"
    )


def test_model_without_an_api_key_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello\n"))

    assert main(["--db", str(tmp_path / "c.db"), "--model", "m"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert not (tmp_path / "c.db").exists()


def test_history_and_clear_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["--db", str(tmp_path / "c.db"), "--session", "s"]
    output = chat_in_process(monkeypatch, argv, "hello\n/history\n/clear\n/history\n/quit\nlost\n")

    lines = output.splitlines()
    assert lines[1] == "user> hello"
    assert lines[2].startswith("assistant> You said:")
    assert lines[3:] == ["history cleared (2 items)", "the session is empty"]


def test_help_lists_the_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = chat_in_process(monkeypatch, ["--db", str(tmp_path / "c.db")], "/help\n")

    assert [line.split()[0] for line in output.splitlines()[:5]] == [
        "/help",
        "/history",
        "/undo",
        "/clear",
        "/quit",
    ]


def test_an_unknown_command_points_to_help(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    output = chat_in_process(monkeypatch, ["--db", str(tmp_path / "c.db")], "/frobnicate\n")

    assert output == "unknown command /frobnicate; try /help\n"


@pytest.fixture
def server() -> Iterator[ChatCompletionsServer]:
    running = ChatCompletionsServer()
    yield running
    running.close()


def test_model_option_talks_to_the_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: ChatCompletionsServer
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server.replies += [{"content": "Hello Ada!"}, {"content": "Your name is Ada."}]
    argv = ["--db", str(tmp_path / "c.db"), "--session", "s", "--model", "gpt-test"]
    output = chat_in_process(monkeypatch, argv, "I am Ada\nWho am I?\n")

    assert output.splitlines() == ["assistant> Hello Ada!", "assistant> Your name is Ada."]
    assert server.requests[1]["model"] == "gpt-test"
    assert [m["content"] for m in server.requests[1]["messages"][1:]] == [
        "I am Ada",
        "Hello Ada!",
        "Who am I?",
    ]


def test_model_error_is_reported_and_a_retry_sends_the_question_once(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    server: ChatCompletionsServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    argv = ["--db", str(tmp_path / "c.db"), "--model", "m"]
    failed = chat_in_process(monkeypatch, argv, "first\n")  # the server has no reply yet
    assert "error: BadRequestError" in capsys.readouterr().err

    server.replies.append({"content": "answer"})
    retried = chat_in_process(monkeypatch, argv, "first\n")

    assert failed == "assistant> \n"
    assert retried == "assistant> answer\n"
    assert server.requests[-1]["messages"][1:] == [{"role": "user", "content": "first"}]
