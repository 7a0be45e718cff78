"""LR002 on the declarations real SDKs are built from (issue 22 point 3).

Each shape twice: misspelt on a receiver known through it (found, with the right "did you
mean"), and the same code on a receiver that is not known, or with a correct value
(silent). The SDK is a package of several modules, as generated SDKs are: each event
class in its own module, the union in another that imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis.declarations import literal_values
from lint_rules.rule import ConfigError
from lint_rules.rules.unknown_literal import UnknownLiteralRule

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import check_literals as _check
    from tests.lint_rules.project_fixtures import configure_literals, on_union, write_files
    from tests.lint_rules.project_fixtures import typo as _typo
    from tests.lint_rules.rule_fixtures import Lint
else:
    from project_fixtures import check_literals as _check
    from project_fixtures import configure_literals, on_union, write_files
    from project_fixtures import typo as _typo
    from rule_fixtures import Lint

SDK = {
    "sdk/__init__.py": "",
    "sdk/jobs.py": """
        from __future__ import annotations

        from dataclasses import dataclass
        from typing import Generic, Literal, TypeVar, Union

        from typing_extensions import TypeAliasType

        raise SystemExit("read, never imported")

        T = TypeVar("T")

        @dataclass
        class Finished(Generic[T]):
            value: T
            outcome: Literal["succeeded", "skipped"]
            state: Literal["finished"] = "finished"

        @dataclass
        class Running:
            state: Literal["running", "finishing"] = "running"

        Result = Union[Finished[T], Running]
        Outcome = TypeAliasType("Outcome", Finished[T] | Running, type_params=(T,))
        States = TypeAliasType("States", Literal["running", "finishing"] | Literal["finished"])
    """,
    "sdk/modern.py": """
        from typing import Literal

        from .jobs import Finished, Running

        type Either[T] = Finished[T] | Running
    """,
    "sdk/items.py": """
        from dataclasses import dataclass
        from typing import Literal

        @dataclass
        class ItemEvent:
            name: Literal["tool_called", "tool_output"]
            type: Literal["item_event"] = "item_event"
    """,
    "sdk/raw.py": """
        from dataclasses import dataclass
        from typing import Literal

        @dataclass
        class RawEvent:
            data: str
            type: Literal["raw_event"] = "raw_event"
    """,
    "sdk/stream.py": """
        from typing import Annotated, Union

        from .items import ItemEvent
        from .raw import RawEvent

        class PropertyInfo:
            def __init__(self, discriminator: str) -> None: ...

        StreamEvent = Annotated[Union[ItemEvent, RawEvent], PropertyInfo(discriminator="type")]
        __all__ = ["ItemEvent", "PropertyInfo", "RawEvent", "StreamEvent"]
    """,
    # mcp's `mcp.types`: a mirror of another package's namespace, by a star import
    "sdk/wire.py": """
        from sdk.stream import *
        from sdk.stream import __all__ as __all__
    """,
}

RESULT = {"Finished.outcome": "sdk.jobs:Finished.outcome"}
RUNNING = {"Running.state": "sdk.jobs:Running.state"}
ITEMS = {"ItemEvent.name": "sdk.items:ItemEvent.name"}


@pytest.fixture
def sdk(project: Path) -> Path:
    return write_files(project, SDK)


SKIPPING = _typo("skipping", "Finished.outcome", "skipped")
TOOL_CAL = _typo("tool_cal", "ItemEvent.name", "tool_called")

# (id, literals, misspelt source, line, finding, the same shape silent)
SHAPES = [
    (
        "generic member of a union",
        RESULT,
        "def on(r: Result) -> bool:\n    return r.outcome == 'skipping'\n",
        2,
        on_union(SKIPPING, "Result"),
        "def on(r: Other) -> bool:\n    return r.outcome == 'skipping'\n",
    ),
    (
        "subscripted alias of a union with a generic member",
        RESULT,
        "def on(r: Result[int]) -> bool:\n    return r.outcome == 'skipping'\n",
        2,
        on_union(SKIPPING, "Result"),
        "def on(r: Other[int]) -> bool:\n    return r.outcome == 'skipping'\n",
    ),
    (
        "TypeAliasType with type_params",
        RESULT,
        "def on(r: Outcome[int]) -> bool:\n    return r.outcome == 'skipping'\n",
        2,
        on_union(SKIPPING, "Outcome"),
        "def on(r: Outcomes[int]) -> bool:\n    return r.outcome == 'skipping'\n",
    ),
    (
        "PEP 695 type statement in another module importing the members",
        RESULT,
        "def on(r: Either[int]) -> bool:\n    return r.outcome == 'skipping'\n",
        2,
        on_union(SKIPPING, "Either"),
        "def on(r: Neither[int]) -> bool:\n    return r.outcome == 'skipping'\n",
    ),
    (
        "a local subscripted alias",
        RESULT,
        "Local = Finished[T] | Other\n"
        "def on(r: Local[int]) -> bool:\n    return r.outcome == 'skipping'\n",
        3,
        SKIPPING,
        "Local = Others[T] | Other\n"
        "def on(r: Local[int]) -> bool:\n    return r.outcome == 'skipping'\n",
    ),
    (
        "a local TypeAliasType",
        RESULT,
        "Local = TypeAliasType('Local', Finished[T] | Other, type_params=(T,))\n"
        "def on(r: Local[int]) -> bool:\n    return r.outcome == 'skipping'\n",
        3,
        SKIPPING,
        "Local = TypeAliasType('Local', Others[T] | Other, type_params=(T,))\n"
        "def on(r: Local[int]) -> bool:\n    return r.outcome == 'skipping'\n",
    ),
    (
        "union of members imported into the alias's module",
        ITEMS,
        "def on(event: StreamEvent) -> bool:\n    return event.name == 'tool_cal'\n",
        2,
        on_union(_typo("tool_cal", "ItemEvent.name", "tool_called"), "StreamEvent"),
        "def on(event: StreamEvents) -> bool:\n    return event.name == 'tool_cal'\n",
    ),
    (
        "a union re-exported by a star import, imported under another name",
        ITEMS,
        "from sdk.wire import StreamEvent as Event\n"
        "def on(event: Event) -> bool:\n    return event.name == 'tool_cal'\n",
        3,
        on_union(_typo("tool_cal", "ItemEvent.name", "tool_called"), "StreamEvent"),
        "from sdk.wire import StreamEvents as Event\n"
        "def on(event: Event) -> bool:\n    return event.name == 'tool_cal'\n",
    ),
    (
        "a member imported under another name",
        ITEMS,
        "from sdk.items import ItemEvent as Item\n"
        "def on(event: Item) -> bool:\n    return event.name == 'tool_cal'\n",
        3,
        _typo("tool_cal", "ItemEvent.name", "tool_called"),
        # the configured class's name given to something else
        "from elsewhere import Other as ItemEvent\n"
        "def on(event: ItemEvent) -> bool:\n    return event.name == 'tool_cal'\n",
    ),
    (
        "a union imported under another name in a function",
        ITEMS,
        "def on(event: object) -> bool:\n"
        "    from sdk.stream import StreamEvent as Event\n"
        "    assert isinstance(event, Event)\n"
        "    return event.name == 'tool_cal'\n",
        4,
        on_union(_typo("tool_cal", "ItemEvent.name", "tool_called"), "StreamEvent"),
        "def on(event: object) -> bool:\n"
        "    from sdk.stream import StreamEvents as Event\n"
        "    assert isinstance(event, Event)\n"
        "    return event.name == 'tool_cal'\n",
    ),
    (
        "imported members: the union's field of one member",
        {"ItemEvent.type": "sdk.items:ItemEvent.type"},
        "def on(event: StreamEvent) -> bool:\n    return event.type == 'item_evnt'\n",
        2,
        on_union(_typo("item_evnt", "ItemEvent.type", "item_event"), "StreamEvent"),
        # the other member's own value, read from the module it is imported from
        "def on(event: StreamEvent) -> bool:\n    return event.type == 'raw_event'\n",
    ),
]


@pytest.mark.parametrize(
    ("literals", "source", "line", "message"),
    [pytest.param(lit, s, n, m, id=name) for name, lit, s, n, m, _ in SHAPES],
)
def test_misspelt_value_is_found(
    sdk: Path, literals: Mapping[str, object], source: str, line: int, message: str
) -> None:
    assert _check(source, literals) == [(line, message)]


@pytest.mark.parametrize(
    ("literals", "source"), [pytest.param(lit, s, id=name) for name, lit, _, _, _, s in SHAPES]
)
def test_same_shape_on_an_unknown_receiver_is_silent(
    sdk: Path, literals: Mapping[str, object], source: str
) -> None:
    assert _check(source, literals) == []


@pytest.mark.parametrize("alias", ["Result", "Result[int]", "Outcome[int]", "Either[int]"])
def test_value_of_a_generic_member_is_a_correct_value_of_the_union(sdk: Path, alias: str) -> None:
    # The generic member's discriminator is its own value, not a misspelling of the
    # other member's "finishing" (this was a false finding with a wrong fix).
    source = f"def on(r: {alias}) -> bool:\n    return r.state == 'finished'\n"

    assert _check(source, RUNNING) == []
    assert _check(source.replace("'finished'", "'finishin'"), RUNNING) == [
        (2, on_union(_typo("finishin", "Running.state", "finishing"), alias.split("[")[0]))
    ]


def test_union_module_named_in_the_configuration_is_read_too(sdk: Path) -> None:
    # The key may name the class through the module holding the union (a re-export).
    literals = {"ItemEvent.name": "sdk.stream:ItemEvent.name"}

    source = "def on(e: StreamEvent) -> bool:\n    return e.name == 'tool_cal'\n"

    assert _check(source, literals) == [(2, on_union(TOOL_CAL, "StreamEvent"))]
    assert _check(source.replace("tool_cal", "tool_output"), literals) == []


def test_literal_declared_with_type_alias_type_is_read(sdk: Path) -> None:
    assert literal_values("sdk.jobs", "States") == ("running", "finishing", "finished")


FACTORY_SOURCE = """
    from sdk.items import ItemEvent

    first = build(ItemEvent, name="tool_cal")
    second = ItemEvent.model_construct(name="tool_cal")
    third = sdk.items.ItemEvent.model_construct(name="tool_cal")
    fine = build(ItemEvent, name="tool_called"), build(Other, name="tool_cal")
    other = make(ItemEvent, name="tool_cal"), ItemEvent.copy(name="tool_cal")
"""


def test_configured_factories_check_the_class_keywords(sdk: Path) -> None:
    assert _check(FACTORY_SOURCE, ITEMS, ["build", "model_construct"]) == [
        (line, _typo("tool_cal", "ItemEvent.name", "tool_called")) for line in (4, 5, 6)
    ]


def test_factories_are_not_checked_unless_configured(sdk: Path) -> None:
    assert _check(FACTORY_SOURCE, ITEMS) == []


@pytest.mark.parametrize("value", ["build", [1], ["a.b"], {"build": 1}])
def test_bad_factories_are_a_configuration_error(sdk: Path, value: object) -> None:
    with pytest.raises(ConfigError, match="'literal-factories' must be a list"):
        UnknownLiteralRule({"literals": dict(ITEMS), "literal-factories": value})


def test_factories_from_pyproject(sdk: Path, lint: Lint) -> None:
    configure_literals(
        sdk,
        '"ItemEvent.name" = "sdk.items:ItemEvent.name"',
        settings='literal-factories = ["build"]\n',
    )
    (sdk / "use.py").write_text(
        "from sdk.items import ItemEvent\nbuild(ItemEvent, name='tool_cal')\n"
    )

    outcome = lint("check", "--no-cache", "use.py")

    assert outcome.out.splitlines()[0] == (
        "use.py:2:23: LR002 [~] " + _typo("tool_cal", "ItemEvent.name", "tool_called")
    )


RENAMED_CLASS_SOURCE = """
    from elsewhere import Other as ItemEvent
    from sdk.items import ItemEvent as Item

    first = Item(name="tool_cal")
    second = build(Item, name="tool_cal")
    match first:
        case Item(name="tool_cal"):
            pass
        case ItemEvent(name="tool_cal"):
            pass
    fine = ItemEvent(name="tool_cal"), build(ItemEvent, name="tool_cal")
"""


def test_a_class_imported_under_another_name_checks_its_keywords(sdk: Path) -> None:
    # `Item` is the configured `ItemEvent`; the `ItemEvent` of this file is another class.
    assert _check(RENAMED_CLASS_SOURCE, ITEMS, ["build"]) == [
        (line, _typo("tool_cal", "ItemEvent.name", "tool_called")) for line in (5, 6, 8)
    ]
    # without a factory configured, the constructor call alone still admits the file
    assert _check(RENAMED_CLASS_SOURCE.replace("build(Item", "other(Item"), ITEMS) == [
        (line, _typo("tool_cal", "ItemEvent.name", "tool_called")) for line in (5, 8)
    ]
