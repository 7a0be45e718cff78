"""The admin CLI against real Redis and PostgreSQL: whole-import checks, idempotent
re-runs and one-line errors for bad options."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import uuid

import pytest

from agent_sessions import Item
from agent_sessions.cli import main
from agent_sessions.urls import open_store


def _with_option(url: str, name: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{name}={value}"


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
    assert err.count("\n") == 1, err
    assert err.endswith("\n")
    assert "Traceback" not in err
    assert err[:-1].isprintable(), repr(err)
    return err[:-1]


def _everything(url: str) -> dict[str, list[Item]]:
    async def read() -> dict[str, list[Item]]:
        store = open_store(url)
        try:
            page = await store.list_sessions(limit=1000)
            return {sid: await store.session(sid).get_items() for sid in sorted(page.session_ids)}
        finally:
            await store.close()

    return asyncio.run(read())


def _line(session_id: str, item: Item) -> str:
    return json.dumps({"item": item, "session_id": session_id}) + "\n"


@pytest.fixture
def postgres_url(database_url: str, fresh_postgres_table: str) -> str:
    return _with_option(database_url, "table", fresh_postgres_table)


@pytest.fixture
def redis_run_url(redis_url: str, redis_prefix: str) -> str:
    return _with_option(redis_url, "key_prefix", f"{redis_prefix}cli-{uuid.uuid4().hex}:")


def test_a_nul_in_the_second_session_id_is_refused_with_its_line_before_any_import(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = _line("first", {"n": 1}) + _line("first", {"n": 2}) + _line("sec\x00ond", {"n": 3})
    status, _, err = _run(capsys, "import", postgres_url, stdin=dump)
    assert status == 1
    line = _one_error_line(err)
    assert line.startswith("agent-sessions import: error: line 3: ")
    assert "NUL" in line
    assert _everything(postgres_url) == {}


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_importing_the_same_file_twice_keeps_one_copy_of_each_session(
    backend: str,
    postgres_url: str,
    redis_run_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = postgres_url if backend == "postgres" else redis_run_url
    dump = "".join(_line(sid, {"n": n}) for sid in ["a", "b"] for n in range(3))
    assert _run(capsys, "import", url, stdin=dump)[0] == 0
    status, _, err = _run(capsys, "import", url, stdin=dump)
    assert (status, err) == (
        0,
        "imported 0 items into 0 sessions (skipped 2 that already existed)\n",
    )
    expected = [{"n": 0}, {"n": 1}, {"n": 2}]
    assert _everything(url) == {"a": expected, "b": expected}
    status, _, err = _run(capsys, "import", url, "--existing", "replace", stdin=dump)
    assert (status, err) == (
        0,
        "imported 6 items into 2 sessions (replaced 2 that already existed)\n",
    )
    assert _everything(url) == {"a": expected, "b": expected}


@pytest.mark.parametrize("command", ["list", "import", "show"])
@pytest.mark.parametrize(
    "bad",
    ["redis ttl=inf", "redis db 99", "postgres table=pg_class"],
)
def test_a_bad_option_is_one_error_line_and_writes_nothing(
    bad: str,
    command: str,
    redis_url: str,
    redis_prefix: str,
    database_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    prefix = f"{redis_prefix}bad-{uuid.uuid4().hex}:"
    url = {
        "redis ttl=inf": _with_option(_with_option(redis_url, "key_prefix", prefix), "ttl", "inf"),
        "redis db 99": _with_option(redis_url.rsplit("/", 1)[0] + "/99", "key_prefix", prefix),
        "postgres table=pg_class": _with_option(database_url, "table", "pg_class"),
    }[bad]
    argv = {"list": ["list", url], "import": ["import", url], "show": ["show", url, "s"]}[command]
    status, out, err = _run(capsys, *argv, stdin=_line("s", {"n": 1}))
    assert (status, out) == (1, "")
    _one_error_line(err)
    if bad == "redis ttl=inf":
        assert _everything(_with_option(redis_url, "key_prefix", prefix)) == {}


def test_a_server_password_is_masked_in_every_error(capsys: pytest.CaptureFixture[str]) -> None:
    # Nothing listens on port 1: the connection is refused at once.
    for url in (
        "redis://user:Hunter2Secret@127.0.0.1:1/0",
        "postgresql://user:Hunter2Secret@127.0.0.1:1/db?connect_timeout=2",
    ):
        status, _, err = _run(capsys, "list", url)
        assert status == 1
        assert "Hunter2Secret" not in _one_error_line(err)
