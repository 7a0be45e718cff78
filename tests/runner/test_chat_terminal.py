"""The chat in a terminal, as a user types: `agent-sessions chat` under a pseudo-terminal
(pexpect), sent real keys (arrows, Up, Ctrl-C, Ctrl-D), and its set-up errors in a
terminal and in a pipe."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agent_sessions import Item, SQLiteStore

AGENT_SESSIONS = str(Path(sys.executable).parent / "agent-sessions")
PROMPT = "you> "
LEFT, UP = "\x1b[D", "\x1b[A"


def spawn(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> pexpect.spawn[str]:
    child = pexpect.spawn(
        AGENT_SESSIONS,
        ["chat", *argv],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=30,
        dimensions=(24, 200),
    )
    return child


def chat(tmp_path: Path, *argv: str) -> pexpect.spawn[str]:
    """The chat on tmp_path/c.db, session "s", at its first prompt."""
    child = spawn("--db", "c.db", "--session", "s", *argv, cwd=tmp_path)
    child.expect_exact(PROMPT)
    return child


def say(child: pexpect.spawn[str], keys: str) -> str:
    """Type ``keys`` and Enter; what the chat printed up to its next prompt."""
    child.send(keys + "\r")
    child.expect_exact(PROMPT)
    return str(child.before)


def ended(child: pexpect.spawn[str]) -> tuple[int, str]:
    """The exit status and the last output of a chat that is ending."""
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, f"killed by signal {child.signalstatus}"
    return child.exitstatus, str(child.before)


def stored(tmp_path: Path) -> list[Item]:
    async def read() -> list[Item]:
        async with SQLiteStore(tmp_path / "c.db") as store:
            return await store.session("s").get_items()

    return asyncio.run(read())


def user_lines(tmp_path: Path) -> list[object]:
    return [item["content"] for item in stored(tmp_path) if item.get("role") == "user"]


def test_arrow_keys_edit_the_line_instead_of_being_stored(tmp_path: Path) -> None:
    child = chat(tmp_path)
    say(child, f"abc{LEFT}{LEFT}X")
    child.sendcontrol("d")
    assert ended(child)[0] == 0

    assert user_lines(tmp_path) == ["aXbc"]


def test_up_recalls_the_previous_line(tmp_path: Path) -> None:
    child = chat(tmp_path)
    say(child, "My name is Ada")
    answer = say(child, UP)
    child.sendcontrol("d")
    ended(child)

    assert 'You said: "My name is Ada". Before that you said: "My name is Ada"' in answer
    assert user_lines(tmp_path) == ["My name is Ada", "My name is Ada"]


def test_a_history_file_keeps_the_typed_lines_across_runs(tmp_path: Path) -> None:
    first = chat(tmp_path, "--history", "typed")
    say(first, "I like tea")
    say(first, "/history")
    first.sendcontrol("d")
    assert ended(first)[0] == 0

    second = chat(tmp_path, "--history", "typed")
    say(second, UP + UP)  # Up, Up: the line before /history
    second.sendcontrol("d")
    ended(second)

    assert user_lines(tmp_path) == ["I like tea", "I like tea"]
    assert (tmp_path / "typed").read_text().splitlines() == ["I like tea", "/history", "I like tea"]


def test_ctrl_c_at_the_prompt_ends_the_chat_at_once_and_sends_nothing(tmp_path: Path) -> None:
    child = chat(tmp_path)
    say(child, "first")
    child.send("half a thought")
    # Pressed once readline has shown what was typed (as a user does): a SIGINT between
    # readline's select() and its read of the typed keys is only seen at the next key
    # (CPython's readline loop checks signals on EINTR only).
    child.expect_exact("half a thought")
    child.sendcontrol("c")
    status, output = ended(child)

    assert status == 130
    assert output.endswith("\r\n")  # the shell's prompt starts on a line of its own
    assert "Traceback" not in output
    assert user_lines(tmp_path) == ["first"]


def test_ctrl_d_ends_the_chat_with_a_newline(tmp_path: Path) -> None:
    child = chat(tmp_path)
    child.sendcontrol("d")
    status, output = ended(child)

    assert (status, output) == (0, "\r\n")


def test_undo_and_history_on_an_empty_session_say_so(tmp_path: Path) -> None:
    child = chat(tmp_path)
    undo = say(child, "/undo")
    history = say(child, "/history")
    child.sendcontrol("d")
    ended(child)

    assert undo.splitlines()[-1] == "nothing to undo: the session is empty"
    assert history.splitlines()[-1] == "the session is empty"


def test_help_lists_every_command(tmp_path: Path) -> None:
    child = chat(tmp_path)
    output = say(child, "/help")
    child.sendcontrol("d")
    ended(child)

    commands = [line.split()[0] for line in output.splitlines()[1:6]]
    assert commands == ["/help", "/history", "/undo", "/clear", "/quit"]


@pytest.fixture
def silent_model(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a chat whose model endpoint (on 127.0.0.1) never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = listener.getsockname()[1]
    yield {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "sk-test",
    }
    listener.close()


def test_ctrl_c_during_an_answer_stops_it_and_the_chat_goes_on(
    tmp_path: Path, silent_model: dict[str, str]
) -> None:
    child = spawn("--db", "c.db", "--session", "s", "--model", "m", cwd=tmp_path, env=silent_model)
    child.expect_exact(PROMPT)
    child.send("Are you there?\r")
    child.expect_exact("assistant> ")
    child.sendcontrol("c")
    child.expect_exact(PROMPT)
    interrupted = str(child.before)
    child.sendcontrol("d")
    status, _ = ended(child)

    assert "interrupted: the answer was not saved" in interrupted
    assert "Traceback" not in interrupted
    assert status == 0
    assert stored(tmp_path) == [{"role": "user", "content": "Are you there?"}]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--db", "/nonexistent/dir/x.db"], "cannot create SQLite database /nonexistent/dir/x.db"),
        (["--session", ""], "session_id must be a non-empty str"),
    ],
    ids=["missing directory", "empty session id"],
)
@pytest.mark.parametrize("where", ["terminal", "pipe"])
def test_a_setup_error_is_one_line_before_any_prompt_with_status_2(
    tmp_path: Path, argv: list[str], message: str, where: str
) -> None:
    if where == "terminal":
        child = spawn(*argv, cwd=tmp_path)
        status, output = ended(child)
    else:
        result = subprocess.run(
            [AGENT_SESSIONS, "chat", *argv],
            input="hello\n",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=30,
            check=False,
        )
        status, output = result.returncode, result.stdout + result.stderr

    assert status == 2
    lines = output.splitlines()
    assert len(lines) == 1, output
    assert lines[0].startswith(f"agent-sessions chat: error: {message}")
    assert PROMPT not in output
