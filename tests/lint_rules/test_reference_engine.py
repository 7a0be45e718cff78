"""The reference engine's client: the real ``ty server``, asked over LSP (no mocks)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from lint_rules.codemod.references import (
    EngineError,
    EngineMissing,
    LanguageServer,
    Location,
    Position,
    ty_command,
)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.helpers import send_file\n",
            "pkg/helpers.py": """
                def send_file(path, *, attachment_filename=None):
                    return path, attachment_filename


                def other(attachment_filename=None):
                    return attachment_filename
                """,
            "app.py": """
                import pkg
                from pkg.helpers import other

                pkg.send_file("a", attachment_filename="a.txt")
                other(attachment_filename="b")
                label = "é✓🙂"; pkg.send_file("c", attachment_filename="c")
                """,
        },
    )
    return tmp_path


@pytest.fixture
def server(project: Path) -> Iterator[LanguageServer]:
    try:
        command = ty_command()
    except EngineMissing as error:
        pytest.skip(str(error))
    with LanguageServer(command, project) as running:
        yield running


def test_references_of_a_keyword_parameter_cross_the_re_export(
    server: LanguageServer, project: Path
) -> None:
    found = server.references(project / "pkg/helpers.py", Position(1, 23))
    places = {
        (location.path.relative_to(project.resolve()).as_posix(), location.start)
        for location in found
    }
    assert places == {
        ("pkg/helpers.py", Position(1, 23)),
        ("pkg/helpers.py", Position(2, 17)),
        ("app.py", Position(4, 19)),
        ("app.py", Position(6, 34)),
    }


def test_columns_are_characters_of_the_text_not_utf16_units(
    server: LanguageServer, project: Path
) -> None:
    # Line 6 holds an emoji (two UTF-16 units) before the keyword.
    line = (project / "app.py").read_text(encoding="utf-8").splitlines()[5]
    column = line.index("attachment_filename")
    (definition,) = server.definition(project / "app.py", Position(6, column))
    assert definition.path == (project / "pkg/helpers.py").resolve()
    assert definition.start == Position(1, 23)
    found = server.references(project / "pkg/helpers.py", Position(1, 23))
    assert (
        Location(project.resolve() / "app.py", Position(6, column), Position(6, column + 19))
        in found
    )


def test_requests_sent_together_are_each_answered_whatever_the_order_awaited(
    server: LanguageServer, project: Path
) -> None:
    helpers = project / "pkg/helpers.py"
    first = server.references_later(helpers, Position(1, 23))  # send_file's keyword
    second = server.references_later(helpers, Position(5, 10))  # other's keyword
    answered_second, answered_first = second(), first()
    assert answered_second == server.references(helpers, Position(5, 10))
    assert answered_first == server.references(helpers, Position(1, 23))
    assert {location.start.line for location in answered_first} == {1, 2, 4, 6}


def test_definition_of_a_look_alike_is_its_own(server: LanguageServer, project: Path) -> None:
    (definition,) = server.definition(project / "app.py", Position(5, 6))
    assert definition.start == Position(5, 10)  # `other`'s own parameter


def test_nothing_known_is_an_empty_answer(server: LanguageServer, project: Path) -> None:
    assert server.references(project / "app.py", Position(4, 15)) == []  # inside a string
    assert server.definition(project / "app.py", Position(4, 15)) == []


def test_a_missing_binary_names_the_install(tmp_path: Path) -> None:
    with pytest.raises(EngineMissing, match="cannot start"):
        LanguageServer([str(tmp_path / "no-such-server")], tmp_path)


def test_a_server_that_exits_is_an_error_not_a_hang(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="exited"):
        LanguageServer([sys.executable, "-c", "pass"], tmp_path, timeout=30)


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    with pytest.raises(EngineError, match="no answer within"):
        LanguageServer(silent, tmp_path, timeout=0.5)
