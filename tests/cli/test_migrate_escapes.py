"""``migrate-sdk`` shows session ids as ``list`` does (issue 25, point 7): a stored
newline, ANSI escape or bidirectional control never reaches the terminal raw."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

HOSTILE = ["plain", "red\x1b[31mtext", "two\nlines", "bidi\u202eevil", "tab\there"]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_sessions", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _sdk_file(path: Path, rows: list[tuple[str, str]]) -> None:
    """A database as the Agents SDK's SQLiteSession lays it out."""
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, created_at TEXT,"
            " updated_at TEXT)"
        )
        connection.execute(
            "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " session_id TEXT NOT NULL, message_data TEXT NOT NULL, created_at TEXT)"
        )
        for session_id, data in rows:
            connection.execute(
                "INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", (session_id,)
            )
            connection.execute(
                "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
                (session_id, data),
            )
    connection.close()


def _assert_printable(text: str) -> None:
    for line in text.splitlines():
        assert line.isprintable(), repr(line)


def test_migrate_sdk_escapes_session_ids_as_list_does(tmp_path: Path) -> None:
    source = tmp_path / "sdk.db"
    _sdk_file(source, [(sid, json.dumps({"role": "user", "content": sid})) for sid in HOSTILE])
    target = f"sqlite:///{tmp_path / 'ours.db'}"
    migrated = _cli("migrate-sdk", str(source), target)
    assert migrated.returncode == 0, migrated.stderr
    _assert_printable(migrated.stdout + migrated.stderr)
    listed = _cli("list", target)
    assert listed.returncode == 0, listed.stderr
    shown = listed.stdout.splitlines()
    assert len(shown) == len(HOSTILE)  # one line per id: no id broke a line
    # Every id appears in migrate-sdk's report spelled exactly as list spells it.
    report = migrated.stdout.splitlines()
    for spelled in shown:
        assert any(line.startswith(f"copied    {spelled}: ") for line in report), (spelled, report)


def test_migrate_sdk_escapes_the_ids_and_reasons_of_skipped_rows(tmp_path: Path) -> None:
    source = tmp_path / "sdk.db"
    _sdk_file(source, [("ok", '{"n": 1}'), ("bad\x1b[2Jid", "not json \x1b[2J")])
    target = f"sqlite:///{tmp_path / 'ours.db'}"
    migrated = _cli("migrate-sdk", str(source), target, "--skip-invalid")
    assert migrated.returncode == 0, migrated.stderr
    assert "\x1b" not in migrated.stdout + migrated.stderr
    _assert_printable(migrated.stdout + migrated.stderr)
    assert "$'bad\\x1b[2Jid'" in migrated.stderr
