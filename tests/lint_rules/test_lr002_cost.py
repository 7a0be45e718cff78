"""LR002's cost (issue 22 point 4): what a run reads, once, whatever the configuration."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis import declarations
from lint_rules.analysis.literals import parse_literals
from lint_rules.config import load_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import run
from lint_rules.rules.unknown_literal import UnknownLiteralRule, UseSites

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

EVENTS = (
    "from dataclasses import dataclass\n"
    "from typing import Literal\n\n"
    "@dataclass\n"
    "class Event:\n"
    '    kind: Literal["alpha", "omega"]\n'
)
USE = "def on(event: Event) -> None:\n    if event.kind == 'omegaa':\n        pass\n"


def _configure(project: Path, *entries: str) -> None:
    (project / "pyproject.toml").write_text(
        '[tool.lint_rules]\nselect = ["LR002"]\n\n[tool.lint_rules.literals]\n' + "\n".join(entries)
    )


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each module source is parsed to read declarations (by file name)."""
    counts: Counter[str] = Counter()
    parse = declarations._parse

    def counting(text: str, path: Path) -> ast.Module:
        counts[path.name] += 1
        return parse(text, path)

    monkeypatch.setattr(declarations, "_parse", counting)
    return counts


def test_the_declarations_validated_are_not_read_again_by_the_run(
    project: Path, lint: Lint, parsed: Counter[str]
) -> None:
    (project / "events.py").write_text(EVENTS)
    (project / "use.py").write_text(USE)
    _configure(project, '"Event.kind" = "events:Event.kind"')

    outcome = lint("check", "--no-cache", "--jobs", "1")

    assert "'omegaa' is not a value of `Event.kind`; did you mean 'omega'?" in outcome.out
    # read to validate the configuration, and the run starts from what that read
    assert parsed["events.py"] == 1


def test_a_declaration_changed_after_the_configuration_was_read_is_read_again(
    project: Path, parsed: Counter[str]
) -> None:
    (project / "events.py").write_text(EVENTS)
    (project / "use.py").write_text(USE)
    _configure(project, '"Event.kind" = "events:Event.kind"')
    config = load_config(project, [UnknownLiteralRule])
    # 'omegaa' becomes a value: the validated fields no longer hold
    (project / "events.py").write_text(EVENTS.replace('"omega"]', '"omega", "omegaa"]'))

    result = run([project / "use.py"], config, [UnknownLiteralRule], RunOptions(use_cache=False))

    assert [finding.message for finding in result.files[0].findings] == []
    assert parsed["events.py"] == 2


@pytest.mark.parametrize(
    ("text", "admitted"),
    [
        ("x = event.kind == 'a'\n", True),
        ("x = event.kind != 'a'\n", True),
        ("x = event.kind in ('a',)\n", True),
        ("x = event.kind in[\n    'a']\n", True),
        ("x = event.kind in  # why\n  {'a'}\n", True),
        ("match event.kind:\n    case 'a':\n        pass\n", True),
        ("x = payload['kind'] == 'a'\n", True),
        # `in` and `match` as words only
        ("x = event.kind\ny = within(1)\n", False),
        ("x = event.kind\ny = rematch\nz = match_all\n", False),
        ("x = event.kind\ny = match\n", False),
        # the field next to the comparison and its string (brackets, comments, lines
        # between), or the string first with whatever follows; a `.get` with a default
        ("x = (event.kind) == 'a'\n", True),
        ("x = (event.kind  # why\n     != (\n    'a'))\n", True),
        ("x = event.kind == r'a'\n", True),
        ('x = payload["""kind"""] == "a"\n', True),
        ("x = payload.get('kind') == 'a'\n", True),
        ("x = payload.get(\n    'kind', None\n) == 'a'\n", True),
        ("x = event.kind not in ['a']\n", True),
        ("x = event.kind not  \\\n  in ['a']\n", True),
        ("x = 'a' == event.kind\n", True),
        ("x = ('a') != events[0].kind\n", True),
        ("x = ('a'  # why\n     ) == make().kind\n", True),
        ("x = event. kind == 'a'\n", True),
        ("x = (event.  # why\n     kind == 'a')\n", True),
        ("match event:\n    case {'kind': 'a'}:\n        pass\n", True),
        ("match (event.kind):\n    case 'a':\n        pass\n", True),
        # a field and a comparison apart, or a comparison with no string
        ("x = event.kind\ny = other == 'a'\n", False),
        ("x = event.kind == other\n", False),
        ("x = event.kind == Kind.A\n", False),
        ("x = event.kind\nif os.environ.get('A') == '1':\n    pass\n", False),
        ("x = event.kind\nif get('A') != None:\n    pass\n", False),
        ("x = event.kind\ny = (kind == 'a')\n", False),
        ("x = {'kind': 'a'}\ny = a == 'b'\n", False),
        ("x = {'kind': 'a'}\nm = re.match('b', y)\n", False),
        ("x = event.kind\nm = re.match('b', y) in (1, 2)\n", False),
        ("x = event.kind.upper() == 'A'\n", False),
        # the class called, not defined, nor named inside another word
        ("x = Event(kind='a')\n", True),
        ("x = Event (kind='a')\n", True),
        ("x = (Event  # a comment\n     (kind='a'))\n", True),
        ("match x:\n    case Event(kind='a'):\n        pass\n", True),
        ("from m import Event as E\nx = E(kind='a')\n", True),
        ("from m import (\n    Event  as\tE,\n)\nx = E (kind='a')\n", True),
        ("from m import Event as E\nx = E\n", False),
        ("from m import MyEvent as E\nx = E(kind='a')\n", False),
        ("x = alias Event\ny = Event\n", False),
        # a subclass of the class may override its field: its bases, up to the first `)`
        ("class App(Event):\n    kind = 'a'\n", True),
        ("class App(\n    Base,  # why\n    Event,\n):\n    kind = 'a'\n", True),
        ("from m import Event as E\n\n\nclass App(E):\n    kind = 'a'\n", True),
        ("    class App(Base, metaclass=Event):\n        pass\n", True),
        ("x = Event\nclass App(Base):\n    pass\n", False),
        ("x = Event\nclass App(Base(1), Other):\n    pass\n", False),
        ("x = Event\nsubclass App(Event)\n", False),
        ("x = Event\n# class App(Event):\n", False),
        ("class App(MyEvent, Events):\n    pass\n", False),
        ("class Event(Base):\n    kind: str\n", False),
        ("x = MyEvent(kind='a')\ny = Events(kind='a')\n", False),
        ("events: list[Event] = []\n", False),
        ("print('hello')\n", False),
    ],
)
def test_the_prefilter_admits_a_text_by_its_use_sites_only(text: str, admitted: bool) -> None:
    use_sites = UseSites(attributes={"kind"}, classes={"Event"})

    assert use_sites.admits(text) is admitted


def test_each_field_names_every_source_its_facts_were_read_from(tmp_path: Path) -> None:
    # `C` of the union is read once, for the first field; the second still depends on it.
    files = {
        "bases.py": "from typing import Literal\n\nclass Base:\n    role: Literal['base']\n",
        "others.py": "from typing import Literal\nfrom bases import Base\n\n"
        "class C(Base):\n    kind: Literal['gamma']\n",
        "events.py": "from typing import Literal\n\n"
        "class A:\n    kind: Literal['alpha']\n\nclass B:\n    kind: Literal['beta']\n",
        "unions.py": "from events import A, B\nfrom others import C\n\nEvent = A | B | C\n",
    }
    for name, source in files.items():
        (tmp_path / name).write_text(source)
    table = {"A.kind": "events:A.kind", "B.kind": "events:B.kind"}

    fields = parse_literals(table, declarations.Declarations(tmp_path))

    for field in fields:
        assert {path.name for path in field.sources} == set(files), field.key
        assert field.member_values >= {"gamma"}, field.key
        assert ("role", "base") in {pair for pair, _ in field.siblings}, field.key
