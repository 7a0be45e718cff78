"""String renames (issue 21, point 3): ``[tool.lint_rules.renames.strings]`` renames a
string value such as an event name (dots and dashes allowed). ``fix`` rewrites it as safe
only where the string is the value of the renamed thing: compared with a field
(``event.type == ...``, ``in (...)``, ``match`` cases) or passed to a field whose
``Literal`` declares the new value; the same text anywhere else (a dict key, data, a
docstring) gets an unsafe fix, and a ``Literal`` declaration that still lists the old
value is reported with an unsafe fix too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.rules.stale_name import LITERAL_DECLARATION, STRING_VALUE, STRING_WITHHELD

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

OLD, NEW = "response.audio.delta", "response.output_audio.delta"

PYPROJECT = f"""[tool.lint_rules.renames]
old_name = "new_name"

[tool.lint_rules.renames.strings]
"{OLD}" = "{NEW}"
"tool-call" = "tool-called"

[tool.lint_rules.literals]
"AudioEvent.type" = "events:AudioEventType"
"""

EVENTS = f"""from dataclasses import dataclass
from typing import Literal

AudioEventType = Literal["{NEW}", "response.done"]


@dataclass
class AudioEvent:
    type: AudioEventType


@dataclass
class Other:
    type: str
"""

HANDLER = f"""from events import AudioEvent, Other


def handle(event):
    if event.type == "{OLD}":
        return "audio"
    if event["type"] in ("{OLD}", "response.done"):
        return "either"
    match event.type:
        case "{OLD}" | "x":
            return "matched"
    return None


def make():
    return AudioEvent(type="{OLD}"), Other(type="{OLD}")


HANDLERS = {{"{OLD}": handle}}


def old_name(kind):
    return kind == "tool-call"
"""


@pytest.fixture
def events_project(project: Path) -> Path:
    (project / "pyproject.toml").write_text(PYPROJECT)
    (project / "events.py").write_text(EVENTS)
    (project / "handler.py").write_text(HANDLER)
    return project


def _complete() -> str:
    """The handler without the old text as data: the string rename is complete."""
    return HANDLER.replace(f'Other(type="{OLD}")', "Other(type=None)").replace(
        f'{{"{OLD}": handle}}', "{}"
    )


def _column(line: str, text: str, occurrence: int = 1) -> int:
    index = -1
    for _ in range(occurrence):
        index = line.index(text, index + 1)
    return index + 1


def test_check_marks_only_the_compared_and_declared_values_as_safe(
    events_project: Path, lint: Lint
) -> None:
    complete = _complete()
    (events_project / "handler.py").write_text(complete)

    outcome = lint("check", "--select", "LR001", "--format", "json", "--no-cache")

    findings = json.loads(outcome.out)
    lines = complete.splitlines()
    quoted = f'"{OLD}"'
    strings = {
        (f["line"], f["column"]): f["fix"]["safe"]
        for f in findings
        if f["message"].startswith(f"`{OLD}`")
    }
    assert strings == {
        (5, _column(lines[4], quoted)): True,  # event.type == ...
        (7, _column(lines[6], quoted)): True,  # event["type"] in (...)
        (10, _column(lines[9], quoted)): True,  # a match case of event.type
        (16, _column(lines[15], quoted)): True,  # AudioEvent's Literal declares the new value
    }
    assert outcome.code == 1


def test_the_same_text_as_data_withholds_the_whole_string_rename(
    events_project: Path, lint: Lint
) -> None:
    """openai-agents' shape: the SDK compares ``parsed.type == "response.audio.delta"``
    while its tests (and the server) send that text as JSON. Renaming the compared values
    alone makes the SDK ignore the events it is sent: every occurrence gets an unsafe fix,
    the value positions naming the data sites."""
    outcome = lint("check", "--select", "LR001", "--format", "json", "--no-cache")

    findings = json.loads(outcome.out)
    lines = HANDLER.splitlines()
    quoted = f'"{OLD}"'
    strings = {
        (f["line"], f["column"]): (f["fix"]["safe"], f["message"])
        for f in findings
        if f["message"].startswith(f"`{OLD}`")
    }
    data = STRING_WITHHELD.format(sites="handler.py:16, handler.py:19")
    expected = f"`{OLD}` was renamed to `{NEW}`; unsafe fix: "
    assert strings == {
        (5, _column(lines[4], quoted)): (False, expected + data),
        (7, _column(lines[6], quoted)): (False, expected + data),
        (10, _column(lines[9], quoted)): (False, expected + data),
        (16, _column(lines[15], quoted)): (False, expected + data),
        (16, _column(lines[15], quoted, 2)): (False, expected + STRING_VALUE),  # Other.type
        (19, _column(lines[18], quoted)): (False, expected + STRING_VALUE),  # a dict key
    }
    assert lint("fix", "--select", "LR001").code == 1
    fixed = (events_project / "handler.py").read_text()
    assert fixed == HANDLER.replace("def old_name", "def new_name")  # the strings all stay


def test_the_data_in_another_file_withholds_the_rename_too(
    events_project: Path, lint: Lint
) -> None:
    complete = _complete()
    (events_project / "handler.py").write_text(complete)
    (events_project / "test_handler.py").write_text(
        f'PAYLOAD = {{"type": "{OLD}", "delta": "AAA="}}\n'
    )

    outcome = lint("check", "--select", "LR001", "--no-cache")

    withheld = STRING_WITHHELD.format(sites="test_handler.py:1")
    assert sum(line.endswith(withheld) for line in outcome.out.splitlines()) == 4
    assert lint("fix", "--select", "LR001").code == 1
    assert f'"{OLD}"' in (events_project / "handler.py").read_text()


def test_fix_renames_the_compared_values_when_the_rename_is_complete(
    events_project: Path, lint: Lint
) -> None:
    complete = _complete()
    (events_project / "handler.py").write_text(complete)

    outcome = lint("fix", "--select", "LR001")

    fixed = (events_project / "handler.py").read_text()
    assert fixed == complete.replace(f'"{OLD}"', f'"{NEW}"').replace("def old_name", "def new_name")
    # A bare rename still never rewrites a string: `kind == "tool-call"` is a string
    # rename's value, compared with a plain name (not a field): unsafe.
    assert 'kind == "tool-call"' in fixed
    assert outcome.code == 1

    again = lint("check", "--select", "LR001", "--no-cache", "--format", "json")
    assert again.code == 1
    left = json.loads(again.out)
    assert [(f["line"], f["fix"]["safe"]) for f in left] == [(23, False)]
    assert lint("fix", "--select", "LR001").code == 1  # nothing more is safe to fix
    assert (events_project / "handler.py").read_text() == fixed


def test_unsafe_fixes_rename_every_occurrence(events_project: Path, lint: Lint) -> None:
    outcome = lint("fix", "--select", "LR001", "--unsafe-fixes")

    assert outcome.code == 0, outcome.out
    fixed = (events_project / "handler.py").read_text()
    assert OLD not in fixed
    assert '"tool-called"' in fixed


def test_lr002_accepts_the_new_value_and_reports_the_old_one(
    events_project: Path, lint: Lint
) -> None:
    (events_project / "handler.py").write_text(_complete())
    assert lint("fix", "--select", "LR001").code == 1

    outcome = lint("check", "--select", "LR002", "--no-cache")

    assert outcome.code == 0, outcome.out


def test_a_literal_declaration_of_the_old_value_is_reported_with_an_unsafe_fix(
    events_project: Path, lint: Lint
) -> None:
    declared = EVENTS.replace(f'Literal["{NEW}"', f'Literal["{OLD}", "{NEW}"')
    (events_project / "events.py").write_text(declared)
    (events_project / "handler.py").write_text("")

    outcome = lint("check", "--select", "LR001", "--no-cache")

    column = _column(declared.splitlines()[3], f'"{OLD}"')
    first = outcome.out.splitlines()[0]
    assert first.startswith(f"events.py:4:{column}: LR001 ")
    assert first.endswith(f"`{OLD}` was renamed to `{NEW}`; unsafe fix: {LITERAL_DECLARATION}")
    assert lint("fix", "--select", "LR001").code == 1
    assert (events_project / "events.py").read_text() == declared


def test_escaped_or_concatenated_spellings_are_left_alone(project: Path, lint: Lint) -> None:
    (project / "pyproject.toml").write_text(
        f'[tool.lint_rules.renames.strings]\n"{OLD}" = "{NEW}"\n'
    )
    source = (
        'def handle(event):\n    return event.type == "response.audio" ".delta" or '
        f'event.type == f"{OLD}x"\n'
    )
    (project / "m.py").write_text(source)

    outcome = lint("check", "--select", "LR001", "--no-cache")

    assert outcome.code == 0, outcome.out


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ('"" = "new"', "'renames.strings' '': the old string is empty"),
        ('"a.b" = ""', "'renames.strings' 'a.b': the new string is empty"),
        ('"a.b" = "a.b"', "'renames.strings' 'a.b': the new string is the old one"),
        ('"a.b" = 1', "'renames.strings' 'a.b': the new value must be a string, not int"),
        ('"a.b" = ["c"]', "'renames.strings' 'a.b': the new value must be a string, not list"),
        (
            '"a.b" = "c.d"\n"c.d" = "e.f"',
            "'renames.strings' 'a.b': its new string 'c.d' is itself renamed (to 'e.f')",
        ),
    ],
    ids=["empty-old", "empty-new", "same", "int", "list", "chain"],
)
def test_a_bad_string_entry_is_a_config_error_naming_it(
    project: Path, lint: Lint, entry: str, error: str
) -> None:
    (project / "pyproject.toml").write_text(f"[tool.lint_rules.renames.strings]\n{entry}\n")
    (project / "m.py").write_text("x = 1\n")

    outcome = lint("check")

    assert outcome.code == 2
    assert error in outcome.err
    assert outcome.out == ""


def test_a_non_table_strings_entry_is_a_config_error(project: Path, lint: Lint) -> None:
    (project / "pyproject.toml").write_text('[tool.lint_rules.renames]\nstrings = ["a.b"]\n')

    outcome = lint("check")

    assert outcome.code == 2
    assert "'renames' 'strings': expected a table of \"old\" = \"new\" strings" in outcome.err


def test_a_dotted_name_under_renames_points_to_the_strings_table(project: Path, lint: Lint) -> None:
    (project / "pyproject.toml").write_text(f'[tool.lint_rules.renames]\n"{OLD}" = "{NEW}"\n')

    outcome = lint("check")

    assert outcome.code == 2
    assert "[tool.lint_rules.renames.strings]" in outcome.err
