"""The admin CLI on bad input and hostile data: whole-import checks, re-runs, escaped
output, one-line errors (SQLite; the server backends: tests/servers/test_cli_errors.py)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_sessions import Item, SQLiteStore
from agent_sessions.cli import main

HOSTILE_IDS = ["two\nlines", "\x1b[31mred\x1b[0m", "csi\x9b2J", "rtl\u202eevil", "$'x'"]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def url(path: Path) -> str:
    return f"sqlite:///{path}"


def _fill(path: Path, sessions: dict[str, list[Item]]) -> None:
    async def fill() -> None:
        async with SQLiteStore(path) as store:
            for session_id, items in sessions.items():
                await store.session(session_id).add_items(items)

    asyncio.run(fill())


def _everything(path: Path) -> dict[str, list[Item]]:
    async def read() -> dict[str, list[Item]]:
        async with SQLiteStore(path) as store:
            page = await store.list_sessions(limit=1000)
            return {sid: await store.session(sid).get_items() for sid in page.session_ids}

    return asyncio.run(read())


def _run(capsys: pytest.CaptureFixture[str], *argv: str, stdin: str = "") -> tuple[int, str, str]:
    original = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        status = main(list(argv))
    finally:
        sys.stdin = original
    out, err = capsys.readouterr()
    return status, out, err


def _one_error_line(err: str) -> str:
    """``err`` must be exactly one printable line; returns it."""
    assert err.endswith("\n")
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    assert err[:-1].isprintable(), repr(err)
    return err[:-1]


def _export_line(session_id: str, item: Item) -> str:
    return json.dumps({"item": item, "session_id": session_id}) + "\n"


# -- import: whole-input checks, re-runs -----------------------------------------------------


def test_importing_the_same_file_twice_does_not_double_sessions(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _export_line("a", {"n": 1}) + _export_line("a", {"n": 2}) + _export_line("b", {})
    assert _run(capsys, "import", url, stdin=dump) == (
        0,
        "",
        "imported 3 items into 2 sessions\n",
    )
    assert _run(capsys, "import", url, stdin=dump) == (
        0,
        "",
        "imported 0 items into 0 sessions (skipped 2 that already existed)\n",
    )
    assert _everything(path) == {"a": [{"n": 1}, {"n": 2}], "b": [{}]}


def test_a_rerun_after_a_partial_import_completes_only_the_missing_sessions(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(path, {"a": [{"n": 1}]})  # as if the first run stopped after session a
    dump = _export_line("a", {"n": 1}) + _export_line("b", {"m": 1})
    status, _, err = _run(capsys, "import", url, stdin=dump)
    assert (status, err) == (
        0,
        "imported 1 items into 1 sessions (skipped 1 that already existed)\n",
    )
    assert _everything(path) == {"a": [{"n": 1}], "b": [{"m": 1}]}


def test_replace_swaps_the_items_of_existing_sessions_and_leaves_others_alone(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(path, {"a": [{"old": 1}, {"old": 2}], "other": [{"keep": 1}]})
    dump = _export_line("a", {"new": 1}) + _export_line("b", {"new": 2})
    status, _, err = _run(capsys, "import", url, "--existing", "replace", stdin=dump)
    assert (status, err) == (
        0,
        "imported 2 items into 2 sessions (replaced 1 that already existed)\n",
    )
    assert _everything(path) == {"a": [{"new": 1}], "b": [{"new": 2}], "other": [{"keep": 1}]}


def test_a_dry_run_reports_the_plan_and_writes_nothing(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(path, {"a": [{"n": 0}]})
    dump = _export_line("a", {"n": 1}) + _export_line("b", {"n": 2})
    status, _, err = _run(capsys, "import", url, "--dry-run", "--existing", "append", stdin=dump)
    assert (status, err) == (
        0,
        "would import 2 items into 2 sessions (appended to 1 that already existed)\n",
    )
    assert _everything(path) == {"a": [{"n": 0}]}


def test_a_line_nested_100k_deep_is_refused_by_number_and_nothing_is_imported(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = '{"item":{"x":' + "[" * 100_000 + "]" * 100_000 + '},"session_id":"deep"}\n'
    status, _, err = _run(capsys, "import", url, stdin=_export_line("a", {"n": 1}) + deep)
    assert status == 1
    assert _one_error_line(err) == "agent-sessions import: error: line 2: nested too deeply to read"
    assert _everything(path) == {}


@pytest.mark.parametrize(
    ("bad_id", "message"),
    [
        # a lone surrogate: JSON can spell it, UTF-8 cannot store it
        ("\ud800", "line 2: session_id holds '\\ud800' at index 0, a lone surrogate"),
        (7, "line 2: session_id must be a str, got int"),
    ],
)
def test_an_id_the_target_cannot_store_is_refused_before_anything_is_written(
    path: Path, url: str, capsys: pytest.CaptureFixture[str], bad_id: object, message: str
) -> None:
    bad = json.dumps({"item": {"n": 2}, "session_id": bad_id}) + "\n"
    status, _, err = _run(capsys, "import", url, stdin=_export_line("a", {"n": 1}) + bad)
    assert status == 1
    assert message in _one_error_line(err)
    assert _everything(path) == {}


# -- stored text reaches the terminal escaped ------------------------------------------------


def test_list_prints_ids_that_are_not_plain_text_as_escaped_literals(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(path, {sid: [{"n": 1}] for sid in [*HOSTILE_IDS, "plain id"]})
    expected = {
        "two\nlines": "$'two\\nlines'",
        "\x1b[31mred\x1b[0m": "$'\\x1b[31mred\\x1b[0m'",
        "csi\x9b2J": "$'csi\\u009b2J'",
        "rtl\u202eevil": "$'rtl\\u202eevil'",
        "$'x'": "$'$\\'x\\''",  # looks like a literal: quoted too
        "plain id": "plain id",
    }
    assert _run(capsys, "list", url) == (
        0,
        "".join(f"{expected[i]}\n" for i in sorted(expected)),
        "",
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_an_escaped_id_reads_back_as_the_id_in_bash(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(path, {sid: [{"n": 1}] for sid in HOSTILE_IDS})
    shown = _run(capsys, "list", url)[1].splitlines()
    script = "; ".join(f"printf '%s\\0' {literal}" for literal in shown)
    read_back = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        check=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    ).stdout
    assert read_back.decode().split("\0")[:-1] == sorted(HOSTILE_IDS)


def test_the_next_page_cursor_is_escaped_too(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(path, {"a\nb": [{"n": 1}], "c": [{"n": 1}]})
    status, out, err = _run(capsys, "list", url, "--limit", "1")
    assert (status, out, err) == (0, "$'a\\nb'\n", "more: --after $'a\\nb'\n")


@pytest.mark.parametrize("output", ["table", "json", "jsonl", "pop", "export", "stats"])
def test_stored_control_characters_never_reach_the_terminal(
    path: Path, url: str, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    hostile = "\x1b[2J\x1b]0;title\x07 C1:\x9b31m bidi:\u202e ls:\u2028 del:\x7f tag:\U000e0041"
    items: list[Item] = [{"role": hostile, "content": hostile, hostile: 1}]
    _fill(path, {"s\x1b[1m": items})
    argv = {
        "table": ["show", url, "s\x1b[1m"],
        "json": ["show", url, "s\x1b[1m", "--format", "json"],
        "jsonl": ["show", url, "s\x1b[1m", "--format", "jsonl"],
        "pop": ["pop", url, "s\x1b[1m"],
        "export": ["export", url],
        "stats": ["stats", url],
    }[output]
    status, out, err = _run(capsys, *argv)
    assert (status, err) == (0, "")
    assert all(line.isprintable() for line in out.splitlines()), out
    if output in ("json", "jsonl", "pop"):  # still the same JSON value
        decoded = json.loads(out) if output == "json" else [json.loads(out)]
        assert decoded == items
    if output == "export":  # and an export still imports as the same data
        copy = path.with_name("copy.db")
        assert _run(capsys, "import", f"sqlite:///{copy}", stdin=out)[0] == 0
        assert _everything(copy) == {"s\x1b[1m": items}


# -- every error is one clean line -----------------------------------------------------------


def test_a_password_in_a_sqlite_url_is_never_printed(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = _run(capsys, "list", "sqlite://u:S3cretPW@host/x.db")
    assert status == 1
    line = _one_error_line(err)
    assert "S3cretPW" not in line
    assert "a SQLite URL has no host" in line


def test_a_file_that_is_not_a_database_is_one_error_line(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path.write_bytes(b"this is not a database, just text\n" * 200)
    for argv in (["list", url], ["import", url]):
        status, _, err = _run(capsys, *argv, stdin=_export_line("a", {}))
        assert status == 1
        assert "file is not a database" in _one_error_line(err)
    assert path.read_bytes() == b"this is not a database, just text\n" * 200


# -- a read-only database ------------------------------------------------------------------


@pytest.fixture
def read_only_db() -> Iterator[Path]:
    """A database with one session, in a directory that the CLI's user cannot write.

    As root (which ignores permissions) the CLI runs as ``nobody``; the directory must
    then be reachable by others, so it is not under pytest's private tmp_path.
    """
    directory = Path(tempfile.mkdtemp(prefix="agent-sessions-ro-"))
    path = directory / "ro.db"
    _fill(path, {"s": [{"n": 1}, {"n": 2}]})
    path.chmod(0o444)
    directory.chmod(0o555)
    yield path
    directory.chmod(0o755)
    shutil.rmtree(directory)


def _cli_as_reader(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agent_sessions", *argv]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot drop write permission")
        command = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *command]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)


def test_a_read_only_database_can_be_read_and_writes_fail_with_one_line(
    read_only_db: Path,
) -> None:
    url = f"sqlite:///{read_only_db}"
    before = read_only_db.read_bytes()
    shown = _cli_as_reader("show", url, "s", "--format", "jsonl")
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, '{"n":1}\n{"n":2}\n', "")
    assert _cli_as_reader("list", url).stdout == "s\n"
    for argv in (["import", url, "--existing", "append"], ["pop", url, "s"], ["clear", url, "s"]):
        result = _cli_as_reader(*argv, stdin=_export_line("s", {"n": 3}))
        assert result.returncode == 1
        line = _one_error_line(result.stderr)
        assert f"SQLite database {read_only_db} is read-only" in line
    assert read_only_db.read_bytes() == before
    assert sorted(p.name for p in read_only_db.parent.iterdir()) == ["ro.db"]


def test_a_foreign_table_of_our_name_is_one_error_line_naming_the_path(
    path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 1")
        connection.execute("CREATE TABLE agent_sessions_items (x)")  # not our shape
    status, _, err = _run(capsys, "import", url, stdin=_export_line("a", {}))
    assert status == 1
    line = _one_error_line(err)
    assert f"SQLite database {path} holds a table 'agent_sessions_items' (x)" in line
    assert "did not create" in line
