"""Commands other than ``import`` create nothing on a server either: on a PostgreSQL
database without the table, they fail naming it and leave no table or migration row."""

from __future__ import annotations

import io
import sys

import psycopg
import pytest

from agent_sessions.cli import main
from agent_sessions.postgres import MIGRATIONS_TABLE


def _table_state(database_url: str, table: str) -> tuple[bool, int]:
    """Whether ``table`` exists, and how many migration rows name it."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        known = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (MIGRATIONS_TABLE,)).fetchone()
        if not (known and known[0]):
            return bool(row and row[0]), 0
        migrations = conn.execute(
            f"SELECT count(*) FROM {MIGRATIONS_TABLE} WHERE table_name = %s", (table,)
        ).fetchone()
    return bool(row and row[0]), int(migrations[0]) if migrations else 0


@pytest.mark.parametrize(
    "argv", [["list"], ["show", "s"], ["export"], ["stats"], ["pop", "s"], ["clear", "s"]]
)
def test_a_command_on_a_database_without_the_table_fails_and_creates_nothing(
    database_url: str,
    fresh_postgres_table: str,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    url = f"{database_url}?table={fresh_postgres_table}"

    status = main([argv[0], url, *argv[1:]])

    err = capsys.readouterr().err
    assert status == 1
    assert f"holds no agent-sessions table '{fresh_postgres_table}'" in err
    assert _table_state(database_url, fresh_postgres_table) == (False, 0)


def test_import_creates_the_table(
    database_url: str, fresh_postgres_table: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{database_url}?table={fresh_postgres_table}"
    original = sys.stdin
    sys.stdin = io.StringIO('{"item":{"n":1},"session_id":"s"}\n')
    try:
        assert main(["import", url]) == 0
    finally:
        sys.stdin = original

    assert _table_state(database_url, fresh_postgres_table) == (True, 1)
    assert main(["show", url, "s", "--format", "jsonl"]) == 0
    assert capsys.readouterr().out == '{"n":1}\n'
