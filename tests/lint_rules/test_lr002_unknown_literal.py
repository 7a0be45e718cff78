"""LR002 unknown-literal on real projects: declarations read statically, the real SDK, errors."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis.declarations import literal_values
from lint_rules.config import load_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import run
from lint_rules.rule import ConfigError
from lint_rules.rules.unknown_literal import UnknownLiteralRule

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import configure_literals as _configure
    from tests.lint_rules.rule_fixtures import Lint
else:
    from project_fixtures import configure_literals as _configure
    from rule_fixtures import Lint

SDK_FIELD = '"RunItemStreamEvent.name" = "agents.stream_events:RunItemStreamEvent.name"'
SDK_STREAM = (
    '"RunItemStreamEvent.name" = { values = "agents.stream_events:RunItemStreamEvent.name", '
    'producers = ["stream_events"] }'
)

DECLARATIONS = """
    from typing import Literal, TypeAlias, Union, Optional
    import typing
    import typing_extensions as te
    from dataclasses import dataclass
    from typing_extensions import TypedDict
    from pydantic import BaseModel

    raise SystemExit("read, never imported")

    Plain = Literal["queued", "running"]
    Annotated: TypeAlias = typing.Literal["done"]
    Extension = te.Literal["failed"]
    Both = Plain | Annotated
    Either = Union[Plain, Literal["cancelled"]]
    Maybe = Optional[Extension]
    Quoted: TypeAlias = "Literal['paused']"
    NotLiteral = str

    @dataclass
    class Job:
        state: Both
        label: str

    class Payload(TypedDict):
        kind: Literal["start", "stop"]

    class Model(BaseModel):
        level: Literal["low", "high"]

    class Child(Model):
        pass
"""


def _write(path: Path, source: str) -> None:
    path.write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.fixture
def declared(project: Path) -> Path:
    """A project with a ``states`` module declaring Literals every supported way."""
    _write(project / "states.py", DECLARATIONS)
    return project


@pytest.mark.parametrize(
    ("name", "values"),
    [
        ("Plain", ("queued", "running")),
        ("Annotated", ("done",)),
        ("Extension", ("failed",)),
        ("Both", ("queued", "running", "done")),
        ("Either", ("queued", "running", "cancelled")),
        ("Maybe", ("failed",)),
        ("Quoted", ("paused",)),
        ("Job.state", ("queued", "running", "done")),
        ("Payload.kind", ("start", "stop")),
        ("Model.level", ("low", "high")),
        ("Child.level", ("low", "high")),
    ],
)
def test_declaration_values_are_read_from_source_without_running_it(
    declared: Path, name: str, values: tuple[str, ...]
) -> None:
    assert literal_values("states", name) == values


def test_pep_695_type_statement_is_read(project: Path) -> None:
    _write(
        project / "modern.py", 'from typing import Literal\ntype Color = Literal["red", "blue"]\n'
    )

    assert literal_values("modern", "Color") == ("red", "blue")


def test_alias_imported_from_another_module_is_followed(project: Path) -> None:
    (project / "pkg").mkdir()
    _write(project / "pkg" / "__init__.py", "raise ImportError('never run')\n")
    _write(project / "pkg" / "base.py", 'from typing import Literal\nColor = Literal["red"]\n')
    _write(project / "pkg" / "more.py", 'from .base import Color\nfrom typing import Literal\n'
           'Shade = Color | Literal["teal"]\n')  # fmt: skip

    assert literal_values("pkg.more", "Shade") == ("red", "teal")


def test_module_of_an_uninstalled_src_layout_project_is_found(project: Path) -> None:
    (project / "src" / "app").mkdir(parents=True)
    _write(project / "src" / "app" / "__init__.py", "raise ImportError('never run')\n")
    _write(
        project / "src" / "app" / "events.py", 'from typing import Literal\nName = Literal["x"]\n'
    )

    assert literal_values("app.events", "Name") == ("x",)


def test_package_init_resolves_its_relative_imports(project: Path) -> None:
    (project / "pkg").mkdir()
    _write(project / "pkg" / "__init__.py", "from .kinds import Kind as Kind\n")
    _write(project / "pkg" / "kinds.py", 'from typing import Literal\nKind = Literal["a", "b"]\n')
    _write(project / "pkg" / "fields.py", "from . import Kind\nAlias = Kind\n")

    assert literal_values("pkg.fields", "Alias") == ("a", "b")


def test_real_sdk_event_name_typo_is_flagged_with_the_sdk_spelling(
    project: Path, lint: Lint
) -> None:
    # The SDK's producer is declared in another module than the event: configured.
    _configure(project, SDK_STREAM)
    (project / "handler.py").write_text(
        "async def on_events(result):\n"
        "    async for event in result.stream_events():\n"
        '        if event.name == "handoff_occurred":\n'
        "            print(event.item)\n"
    )

    outcome = lint("check", "--no-cache")

    assert outcome.code == 1
    assert outcome.out.splitlines()[0] == (
        "handler.py:3:26: LR002 [~] 'handoff_occurred' is not a value of `StreamEvent.name`"
        " (configured: `RunItemStreamEvent.name`); did you mean 'handoff_occured'?"  # noqa: LR001
    )


def test_unsafe_fix_applies_the_suggestion_only_with_unsafe_fixes(
    project: Path, lint: Lint
) -> None:
    _configure(project, SDK_FIELD)
    handler = project / "handler.py"
    handler.write_text(
        "def on(event: RunItemStreamEvent):\n"
        '    if event.name in ("tool_called", "handoff_occurred"):\n        pass\n'
    )

    assert lint("fix").code == 1
    assert "handoff_occurred" in handler.read_text()
    assert lint("fix", "--unsafe-fixes").code == 0
    assert handler.read_text() == (
        "def on(event: RunItemStreamEvent):\n"
        '    if event.name in ("tool_called", "handoff_occured"):\n        pass\n'  # noqa: LR001
    )


def test_ambiguous_suggestion_is_reported_without_a_fix(project: Path, lint: Lint) -> None:
    _write(
        project / "kinds.py",
        'from typing import Literal\nKind = Literal["tool_call", "tool_calls"]\n',
    )
    _configure(project, '"kind" = "kinds:Kind"')
    (project / "use.py").write_text("if item.kind == 'tool_cal':\n    pass\n")

    outcome = lint("check", "--no-cache")

    assert outcome.out.splitlines()[0] == (
        "use.py:1:17: LR002 'tool_cal' is not a value of `kind`; did you mean 'tool_call'?"
    )


def test_warm_run_rechecks_uses_when_the_declaration_changes(project: Path, lint: Lint) -> None:
    _write(project / "kinds.py", 'from typing import Literal\nKind = Literal["start", "stop"]\n')
    _configure(project, '"kind" = "kinds:Kind"')
    (project / "use.py").write_text("if item.kind == 'pause':\n    pass\n")
    assert lint("check").code == 0  # 'pause' resembles no value yet; fills the cache
    _write(project / "kinds.py", 'from typing import Literal\nKind = Literal["paused", "stop"]\n')

    outcome = lint("check")

    assert "'pause' is not a value of `kind`; did you mean 'paused'?" in outcome.out


def test_keyword_to_the_declaring_class_is_checked_and_other_calls_are_not(
    declared: Path, lint: Lint
) -> None:
    _configure(declared, '"Job.state" = "states:Job.state"')
    (declared / "use.py").write_text("Job(state='finished')\nOther(state='finished')\n")

    outcome = lint("check", "--no-cache")

    assert outcome.out.splitlines()[:-1] == [
        "use.py:1:11: LR002 'finished' is not a value of `Job.state`; "
        "allowed: 'done', 'queued', 'running'"
    ]


def test_keys_with_the_same_attribute_allow_the_union_of_their_values(
    declared: Path, lint: Lint
) -> None:
    _configure(declared, '"Job.state" = "states:Job.state"', '"Task.state" = "states:Payload.kind"')
    # A receiver that may be either class (typed since issue 12: an untyped one is unknown).
    (declared / "use.py").write_text(
        "def use(item: Job | Task):\n"
        "    ok = item.state in ('done', 'stop')\n    bad = item.state == 'stoop'\n"
    )

    outcome = lint("check", "--no-cache")

    assert outcome.out.splitlines()[0].startswith(
        "use.py:3:25: LR002 [~] 'stoop' is not a value of "
    )
    assert "`Job.state, Task.state`" in outcome.out
    assert outcome.out.startswith("use.py:3:")
    assert outcome.out.count("LR002") == 1


def test_compared_string_unlike_every_value_is_taken_for_another_field(
    project: Path, lint: Lint
) -> None:
    _configure(project, SDK_FIELD)
    (project / "platform.py").write_text(
        "import os\nWINDOWS = os.name == 'nt'\nJAVA = sys.platform.name in ('java', 'jython')\n"
    )

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_only_files_that_use_the_field_are_parsed(declared: Path) -> None:
    _configure(declared, '"Job.state" = "states:Job.state"')
    sources = {
        "attribute.py": "x = job.state == 'done'\n",
        "subscript.py": "x = job['state'] != 'done'\n",
        "in_a_tuple.py": "x = job.state in (\n    'done',\n)\n",
        "matched.py": "match job.state:\n    case 'done':\n        pass\n",
        "constructor.py": "x = Job()\n",
        "constructor_split.py": "x = (Job  # a comment\n     (state='done'))\n",
        "attribute_not_compared.py": "x = job.state\nprint(job['state'])\n",
        "class_only_defined.py": "class Job(Base):\n    state: str\n",
        "class_not_called.py": "jobs: list[Job] = []\n",
        "variable_only.py": "state = 1\nprint(state)\n",
        "unrelated.py": "print('hello')\n",
    }
    for name, source in sources.items():
        (declared / name).write_text(source)
    config = load_config(declared, [UnknownLiteralRule])

    result = run(
        [declared / name for name in sources],
        config,
        [UnknownLiteralRule],
        RunOptions(use_cache=False),
    )

    # A use site compares the field (==, !=, in a literal tuple, list or set, match) or
    # calls its class: a file that only reads the field, or names the class without
    # calling it, cannot hold a finding, and is never parsed (issue 22 point 4).
    assert {r.path.name: r.parsed for r in result.files} == {
        "attribute.py": True,
        "subscript.py": True,
        "in_a_tuple.py": True,
        "matched.py": True,
        "constructor.py": True,
        "constructor_split.py": True,
        "attribute_not_compared.py": False,
        "class_only_defined.py": False,
        "class_not_called.py": False,
        "variable_only.py": False,
        "unrelated.py": False,
    }


def test_attribute_split_by_a_comment_inside_brackets_is_still_checked(
    declared: Path, lint: Lint
) -> None:
    _configure(declared, '"Job.state" = "states:Job.state"')
    (declared / "split.py").write_text(
        "def use(job: Job):\n    ok = (job.  # the state\n        state == 'rnning')\n"
    )

    outcome = lint("check", "--no-cache")

    assert outcome.out.startswith("split.py:3:18: LR002 [~] 'rnning' is not a value of")


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ('"state" = "no_such_module:State"', "module 'no_such_module' not found"),
        ('"state" = "states:Missing"', "states: no module-level name 'Missing'"),
        ('"state" = "states:NotLiteral"', "states:NotLiteral is not a Literal of strings"),
        ('"state" = "states:Job.label"', "states:Job.label is not a Literal of strings"),
        ('"state" = "states:Job.nothing"', "no annotated class attribute 'Job.nothing'"),
        ('"state" = "states"', 'expected "module:Name" or "module:Class.attr"'),
        ('"a.b.c" = "states:Plain"', 'expected "attr" or "Class.attr"'),
        ('"state" = "broken:Plain"', "cannot parse the source of module 'broken'"),
        ('"state" = "binary:Plain"', "cannot read the source of module 'binary'"),
    ],
)
def test_bad_declaration_is_a_configuration_error_naming_it(
    declared: Path, lint: Lint, entry: str, complaint: str
) -> None:
    (declared / "broken.py").write_text("Plain = Literal[\n")
    (declared / "binary.py").write_bytes(b"Plain = '\xff'\n")
    _configure(declared, entry)
    (declared / "use.py").write_text("x.state == 'a'\n")

    outcome = lint("check", "--no-cache")

    assert outcome.code == 2
    assert "'literals'" in outcome.err
    assert complaint in outcome.err


def test_literals_option_must_be_a_table() -> None:
    with pytest.raises(ConfigError, match="'literals' must be a table"):
        UnknownLiteralRule({"literals": ["state"]})


MANY_CLASSES = 300
USES = """
    from events import Event, Job, Payload


    def on(event: Event, job: Job, payload: Payload, other) -> None:
        if event.kind == "starts" or event.kind in ("stop", "pasue"):
            pass
        match job.state:
            case "queued" | "queue":
                pass
        if payload["kind"] == "stops" and other.kind == "starts":
            pass
        if other.state == "anything" and other.name == "started":
            pass
        Event(kind="finished")
        Job(state="done")
"""


def _many_declarations(project: Path) -> list[str]:
    """``events`` declaring the three classes the uses name and ``MANY_CLASSES`` more,
    each with a ``kind``, a ``state`` and a ``name``; the keys of the others."""
    lines = [
        "from dataclasses import dataclass",
        "from typing import Literal, TypedDict",
        "",
        "@dataclass",
        'class Event:\n    kind: Literal["start", "stop", "pause"]',
        "@dataclass",
        'class Job:\n    state: Literal["queued", "running", "done"]',
        'class Payload(TypedDict):\n    kind: Literal["start", "stop"]',
    ]
    keys = []
    for number in range(MANY_CLASSES):
        lines.append(
            f"@dataclass\nclass Other{number}:\n"
            f'    kind: Literal["start{number}", "begin{number}"]\n'
            f'    state: Literal["s{number}"]\n'
            f'    name: Literal["started", "n{number}"]'
        )
        keys += [
            f'"Other{number}.{attribute}" = "events:Other{number}.{attribute}"'
            for attribute in ("kind", "state", "name")
        ]
    (project / "events.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return keys


def test_findings_do_not_depend_on_how_many_keys_are_configured(project: Path, lint: Lint) -> None:
    others = _many_declarations(project)
    _write(project / "uses.py", USES)
    few = [
        '"Event.kind" = "events:Event.kind"',
        '"Job.state" = "events:Job.state"',
        '"Payload.kind" = "events:Payload.kind"',
    ]

    _configure(project, *few)
    with_few = lint("check", "--no-cache")
    # the others first and last, so that the uses' fields are neither first nor alone
    _configure(project, *others[: len(others) // 2], *few, *others[len(others) // 2 :])
    with_many = lint("check", "--no-cache")

    assert with_few.code == with_many.code == 1, with_many.err
    assert with_few.out == with_many.out
    found = [line for line in with_few.out.splitlines() if "LR002" in line]
    # every misspelling on a known receiver; nothing on `other`, whatever it resembles
    assert [line.split(" is not")[0].split()[-1] for line in found] == [
        "'starts'",
        "'pasue'",
        "'queue'",
        "'stops'",
        "'finished'",
    ], with_few.out
