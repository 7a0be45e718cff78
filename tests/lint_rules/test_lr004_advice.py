"""LR004 gives the right advice: whose name it is, test data, LR001's renames, test functions.

Real typos runs on real files. The misspellings are built from parts so that this
repository's own typos run does not flag this file; ``{name}`` fields in the sources
below are filled from ``MISSPELT``. Where the advice is a typos configuration line,
the tests add that very line and check that typos then accepts the file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis.collected import collected_tests, is_test_file
from lint_rules.codemod.misspellings import NOT_OURS, TEST_DATA
from lint_rules.config import load_config, parse_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import run
from lint_rules.rules import ALL_RULES
from lint_rules.rules.typo import TypoRule

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint, needs_typos
else:
    from rule_fixtures import Lint, needs_typos

MISSPELT = {
    "schema_fn": "plain_serializer_function_" + "s" + "er_schema",
    "schema_word": "s" + "er",
    "final_from": "get_final_" + "fr" + "oms",
    "from_word": "fr" + "oms",
    "destination": "desit" + "nation",
    "structured": "struct" + "ed",
    "occurred": "occ" + "ured",
    "temperature": "temperat" + "ur",
    "tracing": "trac" + "in",
    "examples": "exma" + "ples",
    "certify": "cert" + "ifi",
}

pytestmark = needs_typos

ADVICE_PHRASES = (f"{NOT_OURS}: ", f"{TEST_DATA}: ", "not fixed: ")
"""Every LR004 message that has advice continues after its first "; " with one of these."""


def _spelled(source: str) -> str:
    return source.format(**MISSPELT)


def _write(project: Path, name: str, source: str) -> Path:
    path = project / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_spelled(source), encoding="utf-8")
    return path


def _advised_line(message: str) -> tuple[str, str]:
    """The typos table and the line a message advises to add."""
    found = re.search(r"add `([^`]+)` to typos\.toml \[default\.(extend-[a-z]+)\]", message)
    assert found is not None, message
    return found.group(2), found.group(1)


def _accept(project: Path, table: str, line: str) -> None:
    path = project / "typos.toml"
    existing = path.read_text() if path.exists() else ""
    path.write_text(f"{existing}[default.{table}]\n{line}\n")


def _lr004(outcome_out: str) -> list[str]:
    return [line for line in outcome_out.splitlines() if " LR004 " in line]


# --- A name this project does not define is not this project's to rename ---------------


def test_attribute_of_a_module_from_another_distribution_is_not_ours(
    project: Path, lint: Lint
) -> None:
    source = (
        "from pydantic_core import core_schema\n\n"
        "SCHEMA = core_schema.{schema_fn}(lambda instance: None)\n"
    )
    path = _write(project, "model_settings.py", source)

    outcome = lint("fix", "--select", "LR004")

    (message,) = _lr004(outcome.out)
    assert (
        _spelled(
            "model_settings.py:3:48: LR004 `{schema_word}` should be `set`"
            " in attribute `{schema_fn}`;"
            " not ours to rename: an attribute of `core_schema`, imported from `pydantic_core`,"
            ' outside this project; to accept it, add `{schema_fn} = "{schema_fn}"` to typos.toml'
            " [default.extend-identifiers]"
        )
        in message
    )
    assert "[tool.lint_rules.renames]" not in message
    assert path.read_text() == _spelled(source)
    _accept(project, *_advised_line(message))
    assert lint("check", "--no-cache", "--select", "LR004").code == 0


def test_attribute_nothing_in_the_project_defines_is_not_ours(project: Path, lint: Lint) -> None:
    source = "def shuffle(statement):\n    return [clause for clause in statement.{final_from}()]\n"
    path = _write(project, "tests/test_sqlalchemy_session.py", source)
    _write(project, "store.py", "class Store:\n    def {from_word}(self):\n        return []\n")

    outcome = lint("fix", "--select", "LR004")

    (message,) = [line for line in _lr004(outcome.out) if line.startswith("tests/")]
    assert (
        _spelled(
            "in attribute `{final_from}`; not ours to rename: nothing in this project defines it;"
            ' to accept it, add `{final_from} = "{final_from}"`'
            " to typos.toml [default.extend-identifiers]"
        )
        in message
    )
    assert path.read_text() == _spelled(source)
    _accept(project, *_advised_line(message))
    after = lint("check", "--no-cache", "--select", "LR004")
    assert not [line for line in _lr004(after.out) if line.startswith("tests/")], after.out


def test_keyword_of_a_function_from_another_distribution_is_not_ours(
    project: Path, lint: Lint
) -> None:
    _write(project, "router.py", "def send({destination}):\n    return {destination}\n")
    source = "from mailer import send\n\nsend({destination}=1)\n"
    path = _write(project, "notify.py", source)

    outcome = lint("fix", "--select", "LR004")

    assert (
        _spelled(
            "notify.py:3:6: LR004 `{destination}` should be `destination` in keyword argument"
            " `{destination}`; not ours to rename: a keyword of `send`, imported from `mailer`,"
            " outside this project;"
        )
        in outcome.out
    )
    assert path.read_text() == _spelled(source)


def test_keyword_nothing_in_the_project_defines_is_not_ours(project: Path, lint: Lint) -> None:
    source = "def build(factory):\n    return factory({destination}=1)\n"
    _write(project, "build.py", source)

    outcome = lint("check", "--no-cache", "--select", "LR004")

    assert (
        _spelled(
            "in keyword argument `{destination}`; not ours to rename: nothing in this project"
            " defines it"
        )
        in outcome.out
    )


def test_module_of_another_distribution_is_not_ours(project: Path, lint: Lint) -> None:
    source = "import {examples}_kit.loader\n\n{examples}_kit.loader.run()\n"
    _write(project, "run.py", source)

    outcome = lint("check", "--no-cache", "--select", "LR004")

    messages = _lr004(outcome.out)
    assert len(messages) == 2
    assert (
        _spelled(
            "run.py:1:8: LR004 `{examples}` should be `examples` in imported module"
            " `{examples}_kit`; not ours to rename: `{examples}_kit.loader` is a module outside"
            " this project; to accept it, add"
            ' `{examples}_kit = "{examples}_kit"` to typos.toml [default.extend-identifiers]'
        )
        in outcome.out
    )
    assert (
        _spelled(
            "run.py:3:1: LR004 `{examples}` should be `examples` in name `{examples}_kit`;"
            " not ours to rename: imported from `{examples}_kit`, outside this project"
        )
        in outcome.out
    )


def test_name_from_a_star_import_of_another_distribution_is_not_ours(
    project: Path, lint: Lint
) -> None:
    _write(project, "shapes.py", "from geometry import *\n\nshape = {structured}_mesh()\n")
    _write(project, "undefined.py", "shape = {structured}_grid()\n")

    outcome = lint("check", "--no-cache", "--select", "LR004")

    assert (
        _spelled(
            "shapes.py:3:9: LR004 `{structured}` should be `structured`"
            " in name `{structured}_mesh`;"
            " not ours to rename: not bound in this file, so from `import *` of `geometry`;"
        )
        in outcome.out
    )
    assert (
        _spelled(
            "undefined.py:1:9: LR004 `{structured}` should be `structured` in name"
            " `{structured}_grid`; not fixed: renaming it breaks its users"
        )
        in outcome.out
    )


def test_names_the_project_defines_keep_the_renames_advice(project: Path, lint: Lint) -> None:
    """The counterpart: an attribute, a keyword and an import of this project are ours."""
    (project / "pkg").mkdir()
    _write(project, "pkg/__init__.py", "")
    _write(
        project,
        "pkg/agent.py",
        "class Agent:\n"
        "    def __init__(self, {destination}=None):\n"
        "        self.{destination} = {destination}\n",
    )
    source = (
        "from pkg.agent import Agent\n\n"
        "agent = Agent({destination}=1)\n"
        "print(agent.{destination})\n"
    )
    _write(project, "app.py", source)

    outcome = lint("check", "--no-cache", "--select", "LR004")

    app = [line for line in _lr004(outcome.out) if line.startswith("app.py")]
    assert len(app) == 2
    for message in app:
        assert (
            _spelled(
                "not fixed: renaming it breaks its users; to migrate it, add"
                ' `{destination} = "destination"` to [tool.lint_rules.renames]'
            )
            in message
        )


def test_advice_names_the_typos_table_in_pyproject_when_typos_is_configured_there(
    project: Path, lint: Lint
) -> None:
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.typos.default.extend-words]\nfrobnicate = ""\n'
    )
    _write(
        project, "schema.py", "from pydantic_core import core_schema\ncore_schema.{schema_fn}()\n"
    )

    outcome = lint("check", "--no-cache", "--select", "LR004")

    assert (
        _spelled(
            'add `{schema_fn} = "{schema_fn}"`'
            " to pyproject.toml [tool.typos.default.extend-identifiers]"
        )
        in outcome.out
    )


# --- A string constant in a test file is test data --------------------------------------


@pytest.mark.parametrize(
    "name", ["test_serialization.py", "serialization_test.py", "conftest.py", "tests/helpers.py"]
)
def test_string_in_a_test_file_is_test_data_with_the_extend_words_line(
    project: Path, lint: Lint, name: str
) -> None:
    source = "def check(settings):\n    return settings.resolve({{'{temperature}': 0.5}})\n"
    path = _write(project, name, source)

    outcome = lint("fix", "--select", "LR004")

    (message,) = _lr004(outcome.out)
    assert (
        _spelled(
            "`{temperature}` should be `temperature` in a string constant; test data: not fixed,"
            " a test may misspell it on purpose; if so, add"
            ' `{temperature} = "{temperature}"` to typos.toml [default.extend-words]'
        )
        in message
    )
    assert "[tool.lint_rules.renames]" not in message
    assert path.read_text() == _spelled(source)
    _accept(project, *_advised_line(message))
    assert lint("check", "--no-cache", "--select", "LR004").code == 0


def test_identifier_like_string_in_a_test_is_accepted_as_that_identifier(
    project: Path, lint: Lint
) -> None:
    source = "MATCH = 'Unknown run_config settings: {tracing}_disabled'\n"
    _write(project, "tests/test_tool_context.py", source)

    outcome = lint("check", "--no-cache", "--select", "LR004")

    (message,) = _lr004(outcome.out)
    assert _advised_line(message) == (
        "extend-identifiers",
        _spelled('{tracing}_disabled = "{tracing}_disabled"'),
    )
    _accept(project, *_advised_line(message))
    assert lint("check", "--no-cache", "--select", "LR004").code == 0


def test_string_outside_tests_keeps_the_renames_advice(project: Path, lint: Lint) -> None:
    _write(project, "settings.py", "KEY = '{temperature}'\n")

    outcome = lint("check", "--no-cache", "--select", "LR004")

    assert (
        _spelled(
            "in a string constant; not fixed: its value may be relied on; to migrate it, add"
            ' `{temperature} = "temperature"` to [tool.lint_rules.renames]'
        )
        in outcome.out
    )


def test_a_docstring_in_a_test_file_is_still_prose_and_fixed(project: Path, lint: Lint) -> None:
    path = _write(project, "test_docs.py", 'def helper():\n    """No {examples} here."""\n')

    assert lint("fix", "--select", "LR004").code == 0
    assert path.read_text() == 'def helper():\n    """No examples here."""\n'


# --- A name in [tool.lint_rules.renames] is LR001's --------------------------------------


RENAMES = '[tool.lint_rules.renames]\nhandoff_{occurred} = "handoff_occurred"\n'


def test_renamed_name_is_reported_by_lr001_only(project: Path, lint: Lint) -> None:
    _write(project, "pyproject.toml", RENAMES)
    source = (
        "def handoff_{occurred}(item):\n"
        "    return item\n\n"
        "EVENT = 'handoff_{occurred}'\n"
        "OTHER = 'error_{occurred}'\n"
    )
    _write(project, "events.py", source)

    outcome = lint("check", "--no-cache")

    lr004 = _lr004(outcome.out)
    assert len(lr004) == 1, outcome.out
    assert lr004[0].startswith("events.py:5:")
    assert _spelled("LR001 [*] `handoff_{occurred}` was renamed") in outcome.out


def test_renamed_name_with_a_qualified_key_is_not_reported(project: Path, lint: Lint) -> None:
    _write(
        project,
        "pyproject.toml",
        '[tool.lint_rules.renames]\n"events:Event.handoff_{occurred}" = "handoff_occurred"\n',
    )
    _write(project, "events.py", "class Event:\n    handoff_{occurred} = 1\n")

    outcome = lint("check", "--no-cache", "--select", "LR004")

    assert outcome.code == 0, outcome.out


def test_lr004_reads_the_renames_it_does_not_own(project: Path) -> None:
    table = {"renames": {"old_name": "new_name"}}

    config = parse_config(table, project, ALL_RULES)

    assert TypoRule.READS == ("renames",)
    assert "renames" not in TypoRule.OPTIONS
    assert config.options_for(TypoRule) == table
    assert TypoRule(config.options_for(TypoRule)).renamed == frozenset({"old_name"})


# --- Test functions pytest collects are not public API ------------------------------------


def test_test_function_is_renamed_with_every_reference_in_the_file(
    project: Path, lint: Lint
) -> None:
    source = (
        "import pytest\n\n"
        "async def test_{structured}_output():\n"
        "    pass\n\n"
        "slow = pytest.mark.slow(test_{structured}_output)\n"
    )
    path = _write(project, "tests/test_agent_hooks.py", source)

    checked = lint("check", "--no-cache", "--select", "LR004")
    fixed = lint("fix", "--select", "LR004")  # safe: no --unsafe-fixes

    assert (
        _spelled(
            "LR004 [*] `{structured}` should be `structured` in test function"
            " `test_{structured}_output`\n"
        )
        in checked.out
    )
    assert fixed.code == 0, fixed.out
    assert path.read_text() == source.replace("{structured}", "structured")


def test_test_method_of_a_test_class_is_renamed(project: Path, lint: Lint) -> None:
    source = (
        "class TestAgent:\n"
        "    def test_{structured}(self):\n"
        "        pass\n\n"
        "    def test_again(self):\n"
        "        self.test_{structured}()\n"
    )
    path = _write(project, "test_agent.py", source)

    outcome = lint("fix", "--select", "LR004")

    assert outcome.code == 0, outcome.out
    assert path.read_text() == source.replace("{structured}", "structured")


def test_test_function_is_not_renamed_onto_a_name_in_use(project: Path, lint: Lint) -> None:
    source = "def test_{structured}():\n    pass\n\ndef test_structured():\n    pass\n"
    path = _write(project, "test_agent.py", source)

    outcome = lint("fix", "--select", "LR004")

    assert "not fixed: `test_structured` already exists in this file" in outcome.out
    assert path.read_text() == _spelled(source)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (
            "def test_{structured}():\n    pass\n\ntest_{structured} = None\n",
            "`test_{structured}` is bound more than once in this file",
        ),
        (
            "import sys\n\ndef test_{structured}():\n    pass\n\n"
            "sys.modules[__name__].test_{structured}\n",
            "`.test_{structured}` is also used as an attribute",
        ),
        (
            "class TestAgent:\n    def test_{structured}(self):\n        pass\n\n"
            "def check(case):\n    case.test_{structured}()\n",
            "`.test_{structured}` is also used outside its class",
        ),
        (
            "def test_{structured}():\n    pass\n\nSKIP = ['test_{structured}']\n",
            "`test_{structured}` also appears in a string",
        ),
    ],
)
def test_test_function_rename_is_refused_where_a_use_is_uncertain(
    project: Path, lint: Lint, source: str, reason: str
) -> None:
    path = _write(project, "test_agent.py", source)

    outcome = lint("fix", "--select", "LR004")

    assert _spelled(f"not fixed: {reason}") in outcome.out
    assert path.read_text() == _spelled(source)


def test_test_function_used_in_a_nested_function_is_renamed_there_too(
    project: Path, lint: Lint
) -> None:
    source = (
        "def test_{structured}():\n    pass\n\n"
        "def run_all():\n    return [test_{structured}() for _ in range(2)]\n"
    )
    path = _write(project, "test_agent.py", source)

    assert lint("fix", "--select", "LR004").code == 0
    assert path.read_text() == source.replace("{structured}", "structured")


@pytest.mark.parametrize(
    ("name", "source"),
    [
        ("conftest.py", "def test_{structured}():\n    pass\n"),
        ("tests/helpers.py", "def test_{structured}():\n    pass\n"),
        (
            "test_hooks.py",
            "import pytest\n\n@pytest.fixture\ndef test_{structured}():\n    return 1\n",
        ),
        (
            "test_hooks.py",
            "class TestHooks:\n    def __init__(self):\n        pass\n\n"
            "    def test_{structured}(self):\n        pass\n",
        ),
    ],
)
def test_functions_pytest_does_not_collect_stay_public(
    project: Path, lint: Lint, name: str, source: str
) -> None:
    path = _write(project, name, source)

    outcome = lint("fix", "--select", "LR004")

    assert "not fixed: renaming it breaks its users" in outcome.out
    assert path.read_text() == _spelled(source)


def test_ambiguous_word_in_a_test_name_says_how_to_accept_it(project: Path, lint: Lint) -> None:
    _write(project, "test_setup_db.py", "def test_uses_{certify}():\n    pass\n")

    outcome = lint("check", "--no-cache", "--select", "LR004")

    (message,) = _lr004(outcome.out)
    assert "not fixed: typos suggests more than one correction; if it is spelt as intended" in (
        message
    )
    _accept(project, *_advised_line(message))
    assert lint("check", "--no-cache", "--select", "LR004").code == 0


# --- The advice: a small, stable set of leading phrases -----------------------------------


def test_every_message_continues_with_one_of_the_fixed_advice_phrases(
    project: Path, lint: Lint
) -> None:
    _write(project, "settings.py", "KEY = '{temperature}'\n")
    _write(project, "tests/test_settings.py", "KEY = '{temperature}'\n")
    _write(
        project, "schema.py", "from pydantic_core import core_schema\ncore_schema.{schema_fn}()\n"
    )
    _write(project, "api.py", "def send({destination}):\n    return {destination}\n")
    _write(project, "notes.py", "# fixed {examples}\n")

    outcome = lint("check", "--no-cache", "--select", "LR004")

    messages = _lr004(outcome.out)
    assert len(messages) == 6, outcome.out  # the parameter: at its definition and its use
    advice = [message.split("; ", 1)[1] for message in messages if "; " in message]
    assert len(advice) == 5
    assert {phrase for text in advice for phrase in ADVICE_PHRASES if text.startswith(phrase)} == {
        f"{NOT_OURS}: ",
        f"{TEST_DATA}: ",
        "not fixed: ",
    }
    assert all(text.startswith(ADVICE_PHRASES) for text in advice)


# --- What counts as a test file and a collected test --------------------------------------


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("test_agent.py", True),
        ("agent_test.py", True),
        ("conftest.py", True),
        ("tests/helpers.py", True),
        ("tests/unit/fixtures/data.py", True),
        ("src/agent.py", False),
        ("src/testing.py", False),
        ("contests/agent.py", False),
    ],
)
def test_test_files_are_recognised_relative_to_the_root(
    tmp_path: Path, relative: str, expected: bool
) -> None:
    root = tmp_path / "tests" / "project"  # a `tests` directory above the root does not count

    assert is_test_file(root / relative, root) is expected


def test_collected_tests_follow_pytest_defaults() -> None:
    import ast

    tree = ast.parse(
        "def test_a(): pass\n"
        "def helper(): pass\n"
        "async def test_b(): pass\n"
        "class TestC:\n    def test_d(self): pass\n    def setup_method(self): pass\n"
        "class TestE:\n    def __init__(self): pass\n    def test_f(self): pass\n"
        "class Other:\n    def test_g(self): pass\n"
    )

    found = collected_tests(Path("test_x.py"), tree)
    names = {node.name for node in ast.walk(tree) if id(node) in found}  # type: ignore[attr-defined]

    assert names == {"test_a", "test_b", "test_d"}
    assert collected_tests(Path("conftest.py"), tree) == set()


# --- The cache keys a file by its content: advice read from other files is not cached ---


def test_warm_run_sees_a_definition_added_in_another_file(project: Path, lint: Lint) -> None:
    _write(project, "client.py", "def shuffle(statement):\n    return statement.{final_from}()\n")
    _write(project, "other.py", "VALUE = 1\n")

    cold = lint("check", "--select", "LR004")
    (before,) = _lr004(cold.out)
    assert "not ours to rename: nothing in this project defines it" in before
    # Now the project defines the method: the same, unchanged client.py is ours to rename.
    _write(project, "other.py", "class Statement:\n    def {final_from}(self):\n        ...\n")

    warm = lint("check", "--select", "LR004")

    client = [line for line in _lr004(warm.out) if line.startswith("client.py")]
    assert len(client) == 1, warm.out
    assert "not ours to rename" not in client[0]
    assert "[tool.lint_rules.renames]" in client[0]
    assert warm.out == lint("check", "--no-cache", "--select", "LR004").out


def test_a_result_that_read_the_project_is_reused_while_no_file_changes(project: Path) -> None:
    _write(project, "client.py", "def shuffle(statement):\n    return statement.{final_from}()\n")
    _write(project, "notes.py", "# The destination of the message\n")
    rules = [TypoRule]
    config = load_config(project, ALL_RULES)

    def cached() -> dict[str, bool]:
        return {
            result.path.name: result.cached
            for result in run([project], config, rules, RunOptions()).files
        }

    cold, warm = cached(), cached()
    (project / "notes.py").write_text("# Another comment\n")
    after_a_change = cached()

    assert cold == {"client.py": False, "notes.py": False}
    assert warm == {"client.py": True, "notes.py": True}
    # client.py read the project (does it define the name?): a change anywhere re-checks it.
    assert after_a_change == {"client.py": False, "notes.py": False}
