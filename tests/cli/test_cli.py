"""The admin command line on a SQLite file (the server backends: tests/servers)."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from agent_sessions import Item, SQLiteStore
from agent_sessions.cli import main


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'sessions.db'}"


def _fill(url: str, sessions: dict[str, list[Item]]) -> None:
    async def fill() -> None:
        async with SQLiteStore(url.removeprefix("sqlite:///")) as store:
            for session_id, items in sessions.items():
                await store.session(session_id).add_items(items)

    asyncio.run(fill())


def _items(url: str, session_id: str) -> list[Item]:
    async def read() -> list[Item]:
        async with SQLiteStore(url.removeprefix("sqlite:///")) as store:
            return await store.session(session_id).get_items()

    return asyncio.run(read())


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_list_prints_one_page_of_ids_and_the_cursor_of_the_next(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(url, {sid: [{"n": 1}] for sid in ["a", "b", "c"]})
    status, out, err = _run(capsys, "list", url, "--limit", "2")
    assert (status, out) == (0, "a\nb\n")
    assert err == "more: --after b\n"


def test_list_after_a_cursor_continues_with_the_next_page(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(url, {sid: [{"n": 1}] for sid in ["a", "b", "c"]})
    assert _run(capsys, "list", url, "--limit", "2", "--after", "b") == (0, "c\n", "")


def test_list_with_prefix_shows_only_matching_ids(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(url, {sid: [{"n": 1}] for sid in ["user-1", "user-2", "bot-1"]})
    assert _run(capsys, "list", url, "--prefix", "user-")[1] == "user-1\nuser-2\n"


def test_show_prints_a_table_of_each_items_text_in_full(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "word " * 40
    _fill(
        url,
        {
            "s": [
                {"role": "user", "content": long.strip()},
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "line one\nline two"}],
                },
                {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
                {"type": "reasoning", "x": 1},
            ]
        },
    )
    status, out, _ = _run(capsys, "show", url, "s")
    assert status == 0
    assert out.splitlines() == [
        "   #  kind                  text",
        f"   1  user                  {long.strip()}",
        "   2  assistant             line one",
        "                            line two",
        "   3  function_call         weather({})",
        "   4  function_call_output  sunny",
        '   5  reasoning             {"type":"reasoning","x":1}',
    ]


def test_show_last_n_as_json(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(url, {"s": [{"n": 1}, {"n": 2}, {"n": 3}]})
    status, out, _ = _run(capsys, "show", url, "s", "--last", "2", "--format", "json")
    assert status == 0
    assert json.loads(out) == [{"n": 2}, {"n": 3}]


def test_show_as_json_lines(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(url, {"s": [{"n": 1, "t": "é"}, {"n": 2}]})
    assert _run(capsys, "show", url, "s", "--format", "jsonl")[1] == ('{"n":1,"t":"é"}\n{"n":2}\n')


def test_export_writes_canonical_json_lines_sorted_by_session(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(url, {"b": [{"z": 1, "a": "é"}], "a": [{"n": 1}, {"n": 2}]})
    assert _run(capsys, "export", url)[1] == (
        '{"item":{"n":1},"session_id":"a"}\n'
        '{"item":{"n":2},"session_id":"a"}\n'
        '{"item":{"a":"é","z":1},"session_id":"b"}\n'
    )


def test_export_of_named_sessions_writes_only_those(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(url, {"a": [{"n": 1}], "b": [{"n": 2}]})
    assert _run(capsys, "export", url, "b")[1] == '{"item":{"n":2},"session_id":"b"}\n'


def test_import_appends_the_lines_of_each_session_in_order(
    url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _fill(url, {"a": [{"n": 0}]})
    lines = [
        '{"item":{"n":1},"session_id":"a"}',
        '{"item":{"m":1},"session_id":"b"}',
        '{"item":{"n":2},"session_id":"a"}',
    ]
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n".join(lines) + "\n"))
    status, _, err = _run(capsys, "import", url, "--existing", "append")
    assert (status, err) == (
        0,
        "imported 3 items into 2 sessions (appended to 1 that already existed)\n",
    )
    assert _items(url, "a") == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert _items(url, "b") == [{"m": 1}]


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("{not json", "line 3: not JSON"),
        ('{"item":[1],"session_id":"a"}', "line 3: item 0 must be a dict"),
        ('{"item":{},"session_id":""}', "line 3: session_id must be a non-empty str"),
        ('{"item":{}}', 'line 3: expected {"item": {...}, "session_id": "..."}'),
    ],
)
def test_import_of_a_malformed_line_names_it_and_imports_nothing(
    url: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    bad_line: str,
    message: str,
) -> None:
    good = '{"item":{"n":1},"session_id":"a"}'
    monkeypatch.setattr(sys, "stdin", io.StringIO(f"{good}\n{good}\n{bad_line}\n{good}\n"))
    status, _, err = _run(capsys, "import", url)
    assert status == 1
    assert message in err
    assert _items(url, "a") == []


def test_pop_prints_the_latest_item_and_removes_it(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(url, {"s": [{"n": 1}, {"n": 2}]})
    assert _run(capsys, "pop", url, "s") == (0, '{"n":2}\n', "")
    assert _items(url, "s") == [{"n": 1}]


def test_pop_of_a_session_without_items_fails(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(url, {"somebody": [{"n": 1}]})
    assert _run(capsys, "pop", url, "nobody") == (
        1,
        "",
        "agent-sessions pop: error: no session 'nobody' (it holds no items)\n",
    )


def test_clear_removes_that_session_only(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(url, {"a": [{"n": 1}], "b": [{"n": 2}]})
    assert _run(capsys, "clear", url, "a") == (0, "", "")
    assert (_items(url, "a"), _items(url, "b")) == ([], [{"n": 2}])


def test_stats_counts_sessions_and_items(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(url, {"a": [{"n": 1}], "b": [{"n": 1}, {"n": 2}, {"n": 3}]})
    assert _run(capsys, "stats", url)[1] == "sessions: 2\nitems: 4\nlargest: b (3 items)\n"


def test_unsupported_url_fails_with_the_schemes_it_knows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = _run(capsys, "list", "mssql://user:pw@host/db")
    assert status == 1
    assert "unsupported session URL 'mssql://user:***@host/db'" in err
    assert "mysql+asyncmy://" in err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["frobnicate", "sqlite://"])
    assert exited.value.code == 2


def test_chat_hands_its_arguments_to_the_chat_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received: list[list[str]] = []

    def chat_main(argv: list[str]) -> int:
        received.append(argv)
        return 7

    chat = types.ModuleType("agent_sessions.chat")
    chat.main = chat_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agent_sessions.chat", chat)
    assert main(["chat", "--model", "x"]) == 7
    assert received == [["--model", "x"]]


def test_chat_help_is_the_chat_commands_own(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["chat", "--help"])
    assert exited.value.code == 0
    assert "--session" in capsys.readouterr().out


def test_arguments_no_command_knows_are_a_usage_error(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["list", url, "--bogus"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_python_dash_m_runs_the_command_line(url: str) -> None:
    _fill(url, {"s": [{"n": 1}]})
    result = subprocess.run(
        [sys.executable, "-m", "agent_sessions", "export", url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout) == (0, '{"item":{"n":1},"session_id":"s"}\n')
