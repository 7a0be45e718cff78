"""Passwords are never printed, whatever they hold (issue 25, point 4).

Each spelling of a user name or password with ``#``, ``/``, ``?``, ``@`` or ``%`` is tried
raw and percent-encoded on PostgreSQL and Redis URLs naming a loopback port nobody listens
on: the exception (its text, its causes, its traceback), every log record and every admin
CLI output (``python -m agent_sessions ...`` in a subprocess) is checked for the secret.
A raw spelling is refused at open with ``SessionConfigError`` (drivers would split the URL
in different places); an encoded one reaches the driver and fails as unreachable.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sqlite3
import subprocess
import sys
import traceback
from pathlib import Path
from urllib.parse import quote

import pytest

from agent_sessions import (
    BackendUnreachableError,
    SessionConfigError,
    SessionError,
    open_session,
    open_store,
)
from agent_sessions._servers import mask_url
from agent_sessions.postgres import PostgresStore
from agent_sessions.redis import RedisStore

SECRET = "Sekret42"
"""In every password below; the part after the special character, never to be printed."""

PASSWORDS = [f"Hid3{char}{SECRET}" for char in "#/?@%"] + [
    f"{SECRET}%",
    f"%{SECRET}#",
    *(f"Hid3@x{char}{SECRET}" for char in "#/?"),
    # Digits then "/", "?" or "#": read as a port until the "@" after them.
    *(f"12{char}{SECRET}" for char in "#/?"),
]
USERS = ["ad#min", "ad/min", "ad?min", "ad@min", "ad%min", "ad%40min"]


def _free_port() -> int:
    """A loopback port nobody listens on (bound, read and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PORT = _free_port()


def _url(scheme: str, user: str, password: str) -> str:
    if scheme == "redis":
        return f"redis://{user}:{password}@127.0.0.1:{PORT}/0?connect_timeout=2"
    return f"postgresql://{user}:{password}@127.0.0.1:{PORT}/db?connect_timeout=2"


def _cases() -> list[tuple[str, bool]]:
    """(url, raw): every password and user spelling on both backends, raw and encoded."""
    cases = []
    for scheme in ("postgresql", "redis"):
        for password in PASSWORDS:
            cases.append((_url(scheme, "app", password), True))
            cases.append((_url(scheme, "app", quote(password, safe="")), False))
        for user in USERS:
            raw = user != "ad%40min"
            cases.append((_url(scheme, user, SECRET), raw))
            cases.append((_url(scheme, quote(user, safe=""), quote(SECRET, safe="")), False))
    return cases


CASES = _cases()


def _assert_hidden(text: str) -> None:
    assert SECRET not in text, text
    assert "Hid3" not in text, text


def _whole_text(exc: BaseException) -> str:
    """What printing ``exc`` can show: its traceback with every cause and context."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


@pytest.mark.parametrize(("url", "raw"), CASES)
def test_the_masked_url_hides_the_whole_password(url: str, raw: bool) -> None:
    masked = mask_url(url)
    _assert_hidden(masked)
    assert masked.endswith(f"@127.0.0.1:{PORT}/" + url.rsplit("/", 1)[1])


@pytest.mark.parametrize(("url", "raw"), CASES)
def test_exceptions_and_logs_never_show_the_password(
    url: str, raw: bool, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: ours, psycopg's, the pool's, redis'

    async def use() -> None:
        store = open_store(url)
        _assert_hidden(repr(store))
        try:
            await store.list_sessions()
        finally:
            await store.close()

    with pytest.raises(SessionError) as caught:
        asyncio.run(use())
    if raw:
        assert isinstance(caught.value, SessionConfigError)
        assert "percent-encode" in str(caught.value)
    else:
        assert isinstance(caught.value, BackendUnreachableError), caught.value
    _assert_hidden(_whole_text(caught.value))
    for record in caplog.records:
        _assert_hidden(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            _assert_hidden(_whole_text(record.exc_info[1]))


@pytest.mark.parametrize(("url", "raw"), CASES)
def test_the_constructors_refuse_a_raw_spelling_without_showing_it(url: str, raw: bool) -> None:
    store_class = RedisStore if url.startswith("redis") else PostgresStore
    if not raw:
        store = store_class(url.partition("?")[0])  # ?connect_timeout is open_store's
        _assert_hidden(repr(store))
        _assert_hidden(store.location)
        return
    for make in (lambda: store_class(url), lambda: open_session(url, "s")):
        with pytest.raises(SessionConfigError) as caught:
            make()
        _assert_hidden(_whole_text(caught.value))


def test_a_password_parameter_is_masked_in_errors(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"postgresql://app@127.0.0.1:{PORT}/db?connect_timeout=2&password=Hid3%23{SECRET}"

    async def use() -> None:
        store = open_store(url)
        try:
            await store.list_sessions()
        finally:
            await store.close()

    with pytest.raises(BackendUnreachableError) as caught:
        asyncio.run(use())
    _assert_hidden(_whole_text(caught.value))
    assert all(SECRET not in record.getMessage() for record in caplog.records)


def _cli(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_sessions", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _cli_all(commands: list[list[str]]) -> list[tuple[list[str], int, str]]:
    """Run the commands at once (each a process of its own): (argv, status, output)."""
    processes = [
        (
            argv,
            subprocess.Popen(
                [sys.executable, "-m", "agent_sessions", *argv],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            ),
        )
        for argv in commands
    ]
    results = []
    line = json.dumps({"item": {"n": 1}, "session_id": "s"}) + "\n"
    for argv, process in processes:
        out, err = process.communicate(line if argv[0] == "import" else "", timeout=90)
        results.append((argv, process.returncode, out + err))
    return results


def test_the_cli_never_prints_the_password_of_any_spelling() -> None:
    results = _cli_all([["list", url] for url, _ in CASES])
    for argv, status, output in results:
        assert status == 1, (argv, output)
        assert "error:" in output, output
        _assert_hidden(output)


def test_no_cli_command_prints_the_password(tmp_path: Path) -> None:
    sdk_db = tmp_path / "sdk.db"  # migrate-sdk reads an SDK file, writes to the URL
    with sqlite3.connect(sdk_db) as connection:
        connection.execute(
            "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, session_id TEXT,"
            " message_data TEXT, created_at TEXT)"
        )
        connection.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES ('s', '{\"n\": 1}')"
        )
    commands = []
    for url, _ in CASES[:: max(1, len(CASES) // 8)]:
        commands += [
            ["show", url, "s"],
            ["export", url],
            ["import", url],
            ["pop", url, "s"],
            ["clear", url, "s"],
            ["stats", url],
            ["migrate-sdk", str(sdk_db), url],
        ]
        if url.startswith("redis"):
            commands.append(["migrate-sdk", url, "sqlite://"])
    for argv, status, output in _cli_all(commands):
        assert status == 1, (argv, output)
        _assert_hidden(output)
