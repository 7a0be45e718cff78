"""LR004 typo on real files with the real typos binary: the seed's misspellings, placed and fixed.

The misspellings are built from parts so that this repository's own typos run does not
flag this file; ``{name}`` fields in the sources below are filled from ``MISSPELT``.
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis.typos import PIPE_INPUT_LIMIT

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint, needs_typos
else:
    from rule_fixtures import Lint, needs_typos

MISSPELT = {
    "suppresses": "Sup" + "resses",
    "destination": "desit" + "nation",
    "examples": "exma" + "ples",
    "structured": "struct" + "ed",
    "occurred": "occ" + "ured",
    "for": "f" + "o",
}

pytestmark = needs_typos


def _write(project: Path, name: str, source: str) -> Path:
    path = project / name
    path.write_text(source.format(**MISSPELT), encoding="utf-8", newline="")
    return path


def _spelled(source: str) -> str:
    return source.format(**MISSPELT)


def test_misspelt_comment_is_reported_and_fixed(project: Path, lint: Lint) -> None:
    path = _write(project, "schema.py", "# {suppresses} warnings about missing annotations\n")

    checked = lint("check", "--no-cache")
    fixed = lint("fix")

    assert _spelled(
        "schema.py:1:3: LR004 [*] `{suppresses}` should be `Suppresses` in a comment"
    ) in (checked.out)
    assert fixed.code == 0
    assert path.read_text() == "# Suppresses warnings about missing annotations\n"


def test_misspelt_docstring_word_is_fixed(project: Path, lint: Lint) -> None:
    source = 'class HandoffSpanData:\n    """Includes source and {destination} agents."""\n'
    path = _write(project, "span_data.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == (
        'class HandoffSpanData:\n    """Includes source and destination agents."""\n'
    )


def test_misspelling_in_a_doctest_is_reported_not_fixed(project: Path, lint: Lint) -> None:
    source = (
        "def route(item):\n"
        '    """The agent an item goes to ({destination} first).\n'
        "\n"
        "    >>> route('x')\n"
        "    '{destination}'\n"
        '    """\n'
    )
    path = _write(project, "route.py", source)

    outcome = lint("fix")

    assert outcome.code == 1
    assert _spelled(
        "route.py:5:6: LR004 `{destination}` should be `destination` in a doctest;"
    ) in (outcome.out)
    assert path.read_text() == _spelled(source).replace(
        _spelled("({destination} first)"), "(destination first)"
    )


def test_string_constant_in_a_list_is_reported_not_fixed(project: Path, lint: Lint) -> None:
    source = "PROMPTS = [\n    'translate code {examples} as sample code',\n]\n"
    path = _write(project, "translate_docs.py", source)

    outcome = lint("fix")

    assert outcome.code == 1
    assert (
        _spelled(
            "translate_docs.py:2:21: LR004 `{examples}` should be `examples` in a string constant;"
            " not fixed: its value may be relied on\n"
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_collected_test_function_name_is_renamed(project: Path, lint: Lint) -> None:
    source = "async def test_{structured}_output_non_streamed_agent_hooks():\n    pass\n"
    path = _write(project, "test_agent_hooks.py", source)

    outcome = lint("fix")

    assert outcome.code == 0, outcome.out
    assert path.read_text() == (
        "async def test_structured_output_non_streamed_agent_hooks():\n    pass\n"
    )


def test_public_function_named_test_outside_a_test_file_is_reported_with_its_renames_line(
    project: Path, lint: Lint
) -> None:
    source = "async def test_{structured}_output_non_streamed_agent_hooks():\n    pass\n"
    path = _write(project, "agent_hooks.py", source)

    outcome = lint("fix")

    assert outcome.code == 1
    assert (
        _spelled(
            "in public function `test_{structured}_output_non_streamed_agent_hooks`;"
            " not fixed: renaming it breaks its users; to migrate it, add"
            " `test_{structured}_output_non_streamed_agent_hooks ="
            ' "test_structured_output_non_streamed_agent_hooks"` to [tool.lint_rules.renames]'
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_private_local_is_renamed_with_every_reference(project: Path, lint: Lint) -> None:
    source = (
        "def run(agent):\n"
        "    _{structured} = agent.output\n"
        "    def show():\n"
        "        return repr(_{structured})\n"
        "    return [_{structured}, show()]\n"
    )
    path = _write(project, "hooks.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == (
        "def run(agent):\n"
        "    _structured = agent.output\n"
        "    def show():\n"
        "        return repr(_structured)\n"
        "    return [_structured, show()]\n"
    )


def test_public_event_name_string_is_reported_with_its_renames_line(
    project: Path, lint: Lint
) -> None:
    source = 'event = RunItemStreamEvent(item=item, name="handoff_{occurred}")\n'
    path = _write(project, "run_impl.py", source)

    outcome = lint("fix")

    assert outcome.code == 1
    assert (
        _spelled(
            "run_impl.py:1:53: LR004 `{occurred}` should be `occurred` in a string constant;"
            " not fixed: its value may be relied on; to migrate it,"
            ' add `handoff_{occurred} = "handoff_occurred"` to [tool.lint_rules.renames]\n'
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_local_after_a_line_ending_with_a_period_is_a_local_not_an_attribute(
    project: Path, lint: Lint
) -> None:
    source = "def run(agent):\n    # Keep the output.\n    {structured} = agent.output\n"
    path = _write(project, "hooks.py", source)

    assert lint("fix").code == 0
    assert (
        path.read_text()
        == "def run(agent):\n    # Keep the output.\n    structured = agent.output\n"
    )


def test_public_attribute_the_project_defines_is_reported_with_its_renames_line(
    project: Path, lint: Lint
) -> None:
    _write(
        project,
        "agent.py",
        "class Agent:\n    def __init__(self):\n        self.{destination} = None\n",
    )
    source = "def run(agent):\n    return agent.{destination}\n"
    path = _write(project, "hooks.py", source)

    outcome = lint("fix")

    assert (
        _spelled(
            "hooks.py:2:18: LR004 `{destination}` should be `destination` in attribute"
            " `{destination}`; not fixed: renaming it breaks its users;"
            " to migrate it, add"
            ' `{destination} = "destination"`'
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_private_module_member_is_renamed_in_its_global_statements(
    project: Path, lint: Lint
) -> None:
    source = "_{destination}_count = 0\n\ndef bump():\n    global _{destination}_count\n"
    path = _write(project, "counter.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == source.replace("{destination}", "destination")


def test_local_is_renamed_in_a_closure_that_declares_it_nonlocal(project: Path, lint: Lint) -> None:
    source = (
        "def outer():\n"
        "    {destination} = []\n"
        "    def inner():\n"
        "        nonlocal {destination}\n"
        "        {destination} = [1]\n"
        "    inner()\n"
        "    return {destination}\n"
    )
    path = _write(project, "closure.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == source.replace("{destination}", "destination")


def test_local_is_renamed_inside_f_string_replacement_fields(project: Path, lint: Lint) -> None:
    source = "def show(item):\n    {destination} = item.to\n    return f'-> {{{destination}!r}}'\n"
    path = _write(project, "show.py", source)

    assert lint("fix").code == 0
    assert (
        path.read_text()
        == "def show(item):\n    destination = item.to\n    return f'-> {destination!r}'\n"
    )


def test_misspelling_in_a_latin_1_file_is_fixed_keeping_its_encoding(
    project: Path, lint: Lint
) -> None:
    source = "# -*- coding: latin-1 -*-\n# café {suppresses} it\n"
    path = project / "legacy.py"
    path.write_bytes(_spelled(source).encode("latin-1"))

    checked = lint("check", "--no-cache")
    lint("fix")

    assert "legacy.py:2:8: LR004 [*]" in checked.out
    assert path.read_bytes() == "# -*- coding: latin-1 -*-\n# café Suppresses it\n".encode(
        "latin-1"
    )


def test_private_module_member_is_renamed_in_every_function(project: Path, lint: Lint) -> None:
    source = "_{structured}_cache = {{}}\n\ndef get(key):\n    return _{structured}_cache[key]\n"
    path = _write(project, "cache.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == (
        "_structured_cache = {}\n\ndef get(key):\n    return _structured_cache[key]\n"
    )


def test_comprehension_variable_at_module_level_is_a_local(project: Path, lint: Lint) -> None:
    source = "ITEMS = [{destination}.upper() for {destination} in ('a', 'b')]\n"
    path = _write(project, "items.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == "ITEMS = [destination.upper() for destination in ('a', 'b')]\n"


def test_public_module_member_is_reported_not_renamed(project: Path, lint: Lint) -> None:
    source = "{structured}_cache = {{}}\n"
    path = _write(project, "cache.py", source)

    outcome = lint("fix")

    assert _spelled(f"in public module member `{'{structured}'}_cache`; not fixed") in outcome.out
    assert path.read_text() == _spelled(source)


def test_private_class_member_is_renamed_with_its_self_uses(project: Path, lint: Lint) -> None:
    source = (
        "class Agent:\n"
        "    _{structured} = False\n"
        "    def __init__(self):\n"
        "        self._{structured} = True\n"
        "    def is_ready(self):\n"
        "        return self._{structured}\n"
    )
    path = _write(project, "agent.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == source.replace("{structured}", "structured")


def test_private_attribute_used_outside_its_class_is_not_renamed(project: Path, lint: Lint) -> None:
    source = (
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self._{structured} = True\n"
        "\n"
        "def peek(agent):\n"
        "    return agent._{structured}\n"
    )
    path = _write(project, "agent.py", source)

    outcome = lint("fix")

    assert _spelled("not fixed: `._{structured}` is also used outside its class") in outcome.out
    assert path.read_text() == _spelled(source)


def test_parameter_of_a_private_function_is_renamed(project: Path, lint: Lint) -> None:
    source = "def _send(item, {destination}):\n    return {destination}.put(item)\n"
    path = _write(project, "send.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == "def _send(item, destination):\n    return destination.put(item)\n"


def test_parameter_of_a_public_function_is_reported_with_its_renames_line(
    project: Path, lint: Lint
) -> None:
    source = "def send(item, {destination}):\n    return {destination}.put(item)\n"
    path = _write(project, "send.py", source)

    outcome = lint("fix")

    assert (
        _spelled(
            f"in public parameter `{'{destination}'}`; not fixed: renaming it breaks its users;"
            f' to migrate it, add `{"{destination}"} = "destination"` to [tool.lint_rules.renames]'
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_positional_only_parameter_of_a_public_function_is_renamed(
    project: Path, lint: Lint
) -> None:
    source = "def send({destination}, /):\n    return {destination}\n"
    path = _write(project, "send.py", source)

    assert lint("fix").code == 0
    assert path.read_text() == "def send(destination, /):\n    return destination\n"


def test_rename_onto_an_existing_name_is_not_offered(project: Path, lint: Lint) -> None:
    source = "def run(agent):\n    _{structured} = agent.output\n    _structured = None\n"
    path = _write(project, "hooks.py", source)

    outcome = lint("fix")

    assert "not fixed: `_structured` already exists in this file" in outcome.out
    assert path.read_text() == _spelled(source)


def test_private_parameter_passed_by_keyword_is_not_renamed(project: Path, lint: Lint) -> None:
    source = "def _send({destination}):\n    return {destination}\n\n_send({destination}=1)\n"
    path = _write(project, "send.py", source)

    outcome = lint("fix")

    assert _spelled("not fixed: `{destination}` is also passed as a keyword argument") in (
        outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_name_also_spelled_in_a_string_annotation_is_not_renamed(project: Path, lint: Lint) -> None:
    source = "def f(x: '_{structured}') -> None:\n    pass\n\n_{structured} = int\n"
    path = _write(project, "types.py", source)

    lint("fix")

    assert path.read_text() == _spelled(source)


def test_word_with_several_corrections_is_not_fixed(project: Path, lint: Lint) -> None:
    source = "def check(schema):\n    {for} = schema.get('type')\n    return {for}\n"
    path = _write(project, "strict_schema.py", source)

    outcome = lint("fix")

    assert (
        _spelled(
            "strict_schema.py:2:5: LR004 `{for}` should be `of` or `for` or `do` or `go` or `to`"
            " in identifier `{for}`;"
            " not fixed: typos suggests more than one correction"
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_word_the_typos_config_forbids_without_correction_is_not_fixed(
    project: Path, lint: Lint
) -> None:
    (project / "typos.toml").write_text('[default.extend-words]\nfrobnicate = ""\n')
    path = _write(project, "tool.py", "# frobnicate the input\n")

    outcome = lint("fix")

    assert (
        "tool.py:1:3: LR004 `frobnicate` should be spelt otherwise in a comment;"
        " not fixed: typos suggests no correction"
    ) in outcome.out
    assert path.read_text() == "# frobnicate the input\n"


def test_name_imported_from_another_distribution_is_not_ours_to_rename(
    project: Path, lint: Lint
) -> None:
    source = "from agents import _{structured}\n\n_{structured}()\n"
    path = _write(project, "user.py", source)

    outcome = lint("fix")

    assert (
        _spelled(
            "in imported name `_{structured}`; not ours to rename: imported from"
            " `agents`, outside this project; to accept it, add"
            ' `_{structured} = "_{structured}"` to typos.toml [default.extend-identifiers]'
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_project_typos_config_exceptions_are_honoured(project: Path, lint: Lint) -> None:
    _write(
        project,
        "typos.toml",
        '[default.extend-identifiers]\nhandoff_{occurred} = "handoff_{occurred}"\n',
    )
    _write(project, "events.py", "EVENT = 'handoff_{occurred}'\n")

    outcome = lint("check", "--no-cache")

    assert outcome.code == 0, outcome.out


def test_files_excluded_by_the_typos_config_are_not_reported(project: Path, lint: Lint) -> None:
    (project / "typos.toml").write_text('[files]\nextend-exclude = ["translated/"]\n')
    (project / "translated").mkdir()
    _write(project, "translated/prompts.py", "# {suppresses}\n")
    _write(project, "kept.py", "# {suppresses}\n")

    outcome = lint("check", "--no-cache")

    assert "kept.py:1:3: LR004" in outcome.out
    assert "prompts.py" not in outcome.out


def test_editing_the_typos_config_invalidates_the_cache(project: Path, lint: Lint) -> None:
    _write(project, "events.py", "EVENT = 'handoff_{occurred}'\n")
    assert lint("check").code == 1

    _write(
        project,
        "typos.toml",
        '[default.extend-identifiers]\nhandoff_{occurred} = "handoff_{occurred}"\n',
    )

    assert lint("check").code == 0


def test_fix_keeps_crlf_line_endings_and_non_ascii_columns(project: Path, lint: Lint) -> None:
    source = "café = 1  # {suppresses} the café warning\r\nx = 2\r\n"
    path = _write(project, "crlf.py", source)

    checked = lint("check", "--no-cache")
    lint("fix")

    assert "crlf.py:1:13: LR004 [*]" in checked.out
    assert path.read_bytes() == "café = 1  # Suppresses the café warning\r\nx = 2\r\n".encode()


def test_source_from_stdin_is_checked(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _spelled("# {suppresses} warnings\n").encode()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))

    outcome = lint("check", "-", "--stdin-filename", "schema.py")

    assert "schema.py:1:3: LR004 [*]" in outcome.out


def test_files_checked_by_several_processes_are_all_reported(project: Path, lint: Lint) -> None:
    for index in range(24):
        _write(project, f"module_{index:02}.py", "# {suppresses}\n")

    outcome = lint("check", "--no-cache", "--jobs", "2")

    assert outcome.out.count("LR004") == 24


def test_batch_with_a_file_list_too_long_for_a_pipe_is_checked_whole(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    package = project / ("a_rather_long_package_name_" * 3)
    package.mkdir()
    names = [f"module_with_a_long_name_number_{index:03}.py" for index in range(60)]
    for name in names:
        _write(package, name, "# {suppresses}\n")
    listing = "".join(f"{package.name}/{name}\n" for name in names)
    assert len(listing.encode()) > PIPE_INPUT_LIMIT

    outcome = lint("check", "--no-cache", "--jobs", "1")

    assert outcome.out.count("LR004") == 60
    assert list(scratch.iterdir()) == [], "the file list given to typos is removed"


def test_missing_typos_is_an_error_with_exit_code_2(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    nowhere = tmp_path / "empty-bin"
    nowhere.mkdir()
    monkeypatch.setattr(sys, "executable", str(nowhere / "python"))
    monkeypatch.setenv("PATH", str(nowhere))
    _write(project, "schema.py", "# {suppresses}\n")

    outcome = lint("check", "--no-cache")

    assert outcome.code == 2
    assert "LR004 needs the `typos` executable (PyPI package `typos`)" in outcome.err


def test_missing_typos_does_not_matter_when_lr004_is_not_selected(
    project: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    nowhere = tmp_path / "empty-bin"
    nowhere.mkdir()
    monkeypatch.setattr(sys, "executable", str(nowhere / "python"))
    monkeypatch.setenv("PATH", str(nowhere))
    (project / "old.py").write_text("old_name()\n")

    outcome = lint("check", "--no-cache", "--select", "LR001")

    assert outcome.code == 1
    assert "LR001" in outcome.out


def test_typos_failing_on_its_config_is_an_error_with_exit_code_2(
    project: Path, lint: Lint
) -> None:
    (project / "typos.toml").write_text("[default\n")
    _write(project, "schema.py", "# {suppresses}\n")

    outcome = lint("check", "--no-cache")

    assert outcome.code == 2
    assert "typos failed" in outcome.err
    assert "TOML parse error" in outcome.err


def test_fix_twice_changes_nothing_the_second_time(project: Path, lint: Lint) -> None:
    source = "def run(agent):\n    # {suppresses} it\n    _{structured} = agent\n"
    path = _write(project, "hooks.py", source)
    lint("fix")
    first = path.read_text()

    second = lint("fix")

    assert second.code == 0
    assert first == "def run(agent):\n    # Suppresses it\n    _structured = agent\n"
    assert path.read_text() == first


@pytest.mark.parametrize("kind", ["files", "texts"])
def test_cancelled_typos_runs_are_reaped_and_leave_no_scratch_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    from lint_rules.analysis.typos import start_typos_on_files, start_typos_on_texts

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    package = project / ("a_rather_long_package_name_" * 3)
    package.mkdir()
    paths = [
        _write(package, f"module_with_a_long_name_number_{index:03}.py", "# {suppresses}\n")
        for index in range(200)  # a file list longer than a pipe holds, from any root
    ]
    pending = (
        start_typos_on_files(paths)
        if kind == "files"
        else start_typos_on_texts([(path, path.read_text()) for path in paths])
    )
    processes = [process for process, _, _ in pending._runs]
    assert processes
    assert list(scratch.iterdir()), "a scratch file or folder while typos runs"

    pending.cancel()

    assert all(process.returncode is not None for process in processes)
    assert list(scratch.iterdir()) == []


def test_one_typos_run_reports_each_text_under_its_own_index(project: Path) -> None:
    from lint_rules.analysis.typos import start_typos_on_texts

    first = _write(project, "first.py", "# {suppresses}\n")
    second = _write(project, "second.py", "# clean\n")
    pending = start_typos_on_texts(
        [(first, first.read_text()), (second, second.read_text()), (first, "# again\n")]
    )

    found = pending.result()

    assert pending.included == {0, 1}, "a path given twice is checked once"
    assert [m.typo for m in found[0]] == [MISSPELT["suppresses"]]
    assert found[1] == []
    assert pending.result() is found, "read once, then answered from memory"
