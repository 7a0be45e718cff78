"""The admin CLI as a user runs it: the installed ``agent-sessions`` script in a process of
its own, on a terminal where it matters (read-only commands that create nothing, one rule
for a missing session, usage errors, ``--version``, Ctrl-C). Server backends:
tests/servers/test_cli_read_only.py."""

from __future__ import annotations

import asyncio
import hashlib
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from agent_sessions import Item, SQLiteStore, __version__

BIN = Path(sys.executable).parent
AGENT_SESSIONS = str(BIN / "agent-sessions")
LINT_RULES = str(BIN / "lint-rules")
READ_COMMANDS = [["list"], ["show", "{url}", "s"], ["export"], ["export", "{url}", "s"], ["stats"]]


def run(*argv: str, stdin: str = "", cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``agent-sessions ARGV`` as a process; its status, stdout and stderr."""
    return subprocess.run(
        [AGENT_SESSIONS, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def _argv(command: list[str], url: str) -> list[str]:
    if len(command) == 1:
        return [command[0], url]
    return [part.format(url=url) for part in command]


def _fill(path: Path, sessions: dict[str, list[Item]]) -> None:
    async def fill() -> None:
        async with SQLiteStore(path) as store:
            for session_id, items in sessions.items():
                await store.session(session_id).add_items(items)

    asyncio.run(fill())


def _digest(directory: Path) -> dict[str, str]:
    """Every file of ``directory`` and a hash of its bytes."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.iterdir())
    }


def _one_error_line(err: str) -> str:
    assert err.endswith("\n"), repr(err)
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err[:-1]


# -- read-only commands create and change nothing ----------------------------------------------


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: " ".join(c))
def test_a_read_command_on_a_missing_database_fails_naming_it_and_creates_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    result = run(*_argv(command, "sqlite:///missing.db"), cwd=tmp_path)

    assert result.returncode == 1
    assert _one_error_line(result.stderr) == (
        f"agent-sessions {command[0]}: error: no SQLite database at {tmp_path / 'missing.db'}"
    )
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["pop"], ["clear"]])
def test_pop_and_clear_on_a_missing_database_fail_and_create_nothing(
    tmp_path: Path, command: list[str]
) -> None:
    result = run(command[0], "sqlite:///missing.db", "s", cwd=tmp_path)

    assert result.returncode == 1
    assert "no SQLite database at" in _one_error_line(result.stderr)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: " ".join(c))
def test_a_read_command_changes_no_byte_of_the_database(tmp_path: Path, command: list[str]) -> None:
    _fill(tmp_path / "s.db", {"s": [{"role": "user", "content": "hi"}]})
    before = _digest(tmp_path)

    result = run(*_argv(command, f"sqlite:///{tmp_path / 's.db'}"))

    assert result.returncode == 0, result.stderr
    assert _digest(tmp_path) == before


@pytest.mark.parametrize("command", [*READ_COMMANDS, ["pop"], ["clear"]], ids=str)
def test_a_database_of_another_program_is_refused_and_left_as_it_was(
    tmp_path: Path, command: list[str]
) -> None:
    with sqlite3.connect(tmp_path / "other.db") as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    connection.close()
    before = _digest(tmp_path)
    argv = _argv(command, f"sqlite:///{tmp_path / 'other.db'}")
    if command[0] in ("pop", "clear"):
        argv.append("s")

    result = run(*argv)

    assert result.returncode == 1
    assert "holds no agent-sessions tables" in _one_error_line(result.stderr)
    assert _digest(tmp_path) == before


def test_import_creates_the_database(tmp_path: Path) -> None:
    line = '{"item":{"n":1},"session_id":"s"}\n'
    result = run("import", "sqlite:///new.db", stdin=line, cwd=tmp_path)

    assert (result.returncode, result.stderr) == (0, "imported 1 items into 1 sessions\n")
    assert run("export", "sqlite:///new.db", cwd=tmp_path).stdout == line


# -- one rule for a missing session ---------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["show", "nosuch"],
        ["show", "nosuch", "--last", "0"],
        ["pop", "nosuch"],
        ["clear", "nosuch"],
        ["export", "s", "nosuch"],
    ],
    ids=" ".join,
)
def test_every_command_naming_a_missing_session_fails_alike(
    tmp_path: Path, argv: list[str]
) -> None:
    _fill(tmp_path / "s.db", {"s": [{"n": 1}]})
    before = _digest(tmp_path)
    url = f"sqlite:///{tmp_path / 's.db'}"

    result = run(argv[0], url, *argv[1:])

    assert (result.returncode, result.stdout) == (1, "")
    assert _one_error_line(result.stderr) == (
        f"agent-sessions {argv[0]}: error: no session 'nosuch' (it holds no items)"
    )
    assert _digest(tmp_path) == before  # export wrote no line of "s" either


def test_show_last_zero_of_a_session_prints_the_header_only(tmp_path: Path) -> None:
    _fill(tmp_path / "s.db", {"s": [{"n": 1}]})
    result = run("show", f"sqlite:///{tmp_path / 's.db'}", "s", "--last", "0")

    assert (result.returncode, result.stdout) == (0, "   #  kind  text\n")


def test_export_into_a_pipe_closed_early_stops_quietly(tmp_path: Path) -> None:
    _fill(tmp_path / "s.db", {f"s{n}": [{"n": n, "pad": "x" * 100}] * 50 for n in range(40)})
    shell = f"{AGENT_SESSIONS} export sqlite:///{tmp_path / 's.db'} | head -n 1"
    result = subprocess.run(
        ["bash", "-c", shell + "; echo ${PIPESTATUS[0]} >&2"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert result.stdout.count("\n") == 1
    assert result.stderr == "1\n"  # no "Broken pipe" error, no traceback


# -- usage errors, --version, --help ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["show", "sqlite:///x.db", "s", "--last", "-1"],
            "argument --last: must be at least 0, got -1",
        ),
        (["list", "sqlite:///x.db", "--limit", "0"], "argument --limit: must be at least 1, got 0"),
        (
            ["list", "sqlite:///x.db", "--limit", "ten"],
            "argument --limit: expected an integer, got 'ten'",
        ),
    ],
)
def test_a_bad_option_value_is_a_usage_error_naming_the_option(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    result = run(*argv, cwd=tmp_path)

    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == f"agent-sessions {argv[0]}: error: {message}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("program", [AGENT_SESSIONS, LINT_RULES])
def test_both_programs_print_their_version(program: str) -> None:
    result = subprocess.run([program, "--version"], capture_output=True, text=True, check=False)

    assert (result.returncode, result.stdout) == (0, f"{Path(program).name} {__version__}\n")


def test_help_shows_the_defaults() -> None:
    listing = run("list", "--help").stdout
    importing = run("import", "--help").stdout
    chat = run("chat", "--help").stdout

    assert "ids per page (default: 100)" in " ".join(listing.split())
    assert "(default: skip)" in importing
    assert "(default: conversations.db)" in chat
    assert "(default: None)" not in listing + importing + chat


@pytest.mark.parametrize(
    "start",
    [
        [AGENT_SESSIONS, "chat"],
        [sys.executable, "-m", "agent_sessions", "chat"],
        [sys.executable, "-m", "agent_sessions.chat"],
    ],
    ids=["script", "python -m agent_sessions", "python -m agent_sessions.chat"],
)
def test_the_chat_has_one_program_name_however_it_is_started(start: list[str]) -> None:
    helped = subprocess.run([*start, "--help"], capture_output=True, text=True, check=False)
    failed = subprocess.run([*start, "--bogus"], capture_output=True, text=True, check=False)

    assert helped.stdout.startswith("usage: agent-sessions chat ")
    assert failed.returncode == 2
    assert failed.stderr.splitlines()[-1].startswith("agent-sessions chat: error: ")


# -- Ctrl-C ------------------------------------------------------------------------------------


def test_import_from_a_terminal_says_it_reads_standard_input_and_ctrl_c_stops_it(
    tmp_path: Path,
) -> None:
    child = pexpect.spawn(
        AGENT_SESSIONS,
        ["import", "sqlite:///new.db"],
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=30,
    )
    child.expect("reading JSON lines from standard input")
    child.sendline('{"item":{"n":1},"session_id":"s"}')
    child.sendcontrol("c")
    child.expect(pexpect.EOF)
    child.close()

    assert child.exitstatus == 130
    assert "Traceback" not in (child.before or "")
    assert "agent-sessions import: interrupted" in (child.before or "")
    assert list(tmp_path.iterdir()) == []  # nothing half-written: not even the database


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A listener on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(60)
    yield listener
    listener.close()


@pytest.mark.parametrize("attempt", range(4))
def test_ctrl_c_interrupts_a_command_waiting_for_a_server_at_once(
    silent_server: socket.socket, attempt: int
) -> None:
    # Repeated: a SIGINT right after the first command is sent was lost in about 4 runs of
    # 10 (redis-py entering its read timeout); the command then waited 10 s for its socket
    # timeout and failed with it instead of stopping.
    port = silent_server.getsockname()[1]
    process = subprocess.Popen(
        [AGENT_SESSIONS, "list", f"redis://127.0.0.1:{port}/0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Observed, not slept on: once its first command has arrived it is waiting for the
    # reply (the socket timeout is 10 s); on a loaded machine starting Python alone takes
    # seconds, and a SIGINT between connecting and sending lands in the driver's connect.
    connection, _ = silent_server.accept()
    connection.settimeout(60)
    assert connection.recv(1)
    assert process.poll() is None
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)

    connection.close()
    assert (process.returncode, out, err) == (130, "", "agent-sessions list: interrupted\n")
    assert time.monotonic() - interrupted < 5


def test_the_readme_spells_the_admin_cli_one_way() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")

    assert "agent_sessions.chat" not in readme
    assert "python -m agent_sessions " not in readme


def test_import_from_a_pipe_prints_no_hint(tmp_path: Path) -> None:
    result = run("import", "sqlite:///new.db", cwd=tmp_path)  # stdin: an empty pipe

    assert (result.returncode, result.stderr) == (0, "imported 0 items into 0 sessions\n")
