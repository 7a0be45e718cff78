"""LR002 reports a compared string only where the receiver is known to be the declaring class.

Every shape of item 1 of issue 12 is here twice: misspelt on a receiver known to be the
class (one finding) and the same code on a receiver that is not known (no finding).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import configure_literals, literal_findings, on_union
else:
    from project_fixtures import configure_literals, literal_findings, on_union

from lint_rules.analysis import receivers
from lint_rules.rule import ConfigError, Finding
from lint_rules.rules import unknown_literal
from lint_rules.rules.unknown_literal import UnknownLiteralRule

EVENTS = """
    from __future__ import annotations

    from collections.abc import AsyncIterator
    from dataclasses import dataclass
    from typing import Literal, TypeAlias, TypedDict

    raise SystemExit("read, never imported")

    Name = Literal["tool_called", "tool_output", "handoff_occurred"]

    @dataclass
    class ItemEvent:
        name: Name
        type: Literal["item_event"] = "item_event"

    @dataclass
    class RawEvent:
        data: str
        type: Literal["raw_event"] = "raw_event"

    StreamEvent: TypeAlias = ItemEvent | RawEvent
    AnyEvent = StreamEvent | None

    class Stream:
        async def events(self) -> AsyncIterator[StreamEvent]: ...

    def next_event() -> AnyEvent: ...

    class Payload(TypedDict):
        name: Name

    @dataclass
    class Plain:
        name: Name
        kind: str
"""

LITERALS = {
    "ItemEvent.name": "events:ItemEvent.name",
    "Payload.name": "events:Payload.name",
}
TYPO = "'tool_cal' is not a value of `{}`; did you mean 'tool_called'?"


@pytest.fixture
def events(project: Path) -> Path:
    (project / "events.py").write_text(textwrap.dedent(EVENTS), encoding="utf-8")
    return project


def _check(source: str, literals: Mapping[str, object] = LITERALS) -> list[Finding]:
    return literal_findings(source, literals)


# (id, source with the misspelling on a known receiver, line of the finding,
#  the same shape on a receiver that is not known)
SHAPES = [
    (
        "parameter annotation",
        """
        def on(event: ItemEvent) -> None:
            if event.name == "tool_cal":
                pass
        """,
        3,
        """
        def on(event: Tool) -> None:
            if event.name == "tool_cal":
                pass
        """,
    ),
    (
        "variable annotation",
        """
        event: ItemEvent = receive()
        found = event.name == "tool_cal"
        """,
        3,
        """
        event = receive()
        found = event.name == "tool_cal"
        """,
    ),
    (
        "string and Optional annotations",
        """
        def on(event: "ItemEvent", other: Optional[ItemEvent]) -> None:
            print(event.name == "tool_cal", other.name == "tool_output")
        """,
        3,
        """
        def on(event: "Tool", other: Optional[Tool]) -> None:
            print(event.name == "tool_cal", other.name == "tool_output")
        """,
    ),
    (
        "attribute annotated on self",
        """
        class Handler:
            def __init__(self, event):
                self.event: ItemEvent = event

            def handle(self):
                return self.event.name == "tool_cal"
        """,
        7,
        """
        class Handler:
            def __init__(self, event):
                self.event = event

            def handle(self):
                return self.event.name == "tool_cal"
        """,
    ),
    (
        "class attribute annotation",
        """
        @dataclass
        class Handler:
            event: ItemEvent

            def handle(self):
                return self.event.name == "tool_cal"
        """,
        7,
        """
        @dataclass
        class Handler:
            event: Tool

            def handle(self):
                return self.event.name == "tool_cal"
        """,
    ),
    (
        "return annotation of a function called in the module",
        """
        def make() -> ItemEvent:
            return build()

        event = make()
        if event.name == "tool_cal" or make().name == "tool_output":
            pass
        """,
        6,
        """
        def make() -> Tool:
            return build()

        event = make()
        if event.name == "tool_cal" or make().name == "tool_output":
            pass
        """,
    ),
    (
        "isinstance and",
        """
        found = isinstance(event, ItemEvent) and event.name == "tool_cal"
        """,
        2,
        """
        found = isinstance(event, Tool) and event.name == "tool_cal"
        """,
    ),
    (
        "inside an isinstance branch",
        """
        if isinstance(event, (ItemEvent, RawEvent)):
            print(event.name in ("tool_called", "tool_cal"))
        """,
        3,
        """
        if isinstance(event, (Tool, RawEvent)):
            print(event.name in ("tool_called", "tool_cal"))
        """,
    ),
    (
        "elif isinstance",
        """
        if isinstance(event, RawEvent):
            pass
        elif isinstance(event, ItemEvent):
            assert event.name != "tool_cal"
        """,
        5,
        """
        if isinstance(event, RawEvent):
            pass
        elif isinstance(event, Tool):
            assert event.name != "tool_cal"
        """,
    ),
    (
        "continue when not isinstance",
        """
        for event in queue:
            if not isinstance(event, ItemEvent):
                continue
            if event.name == "tool_cal":
                pass
        """,
        5,
        """
        for event in queue:
            if not isinstance(event, Tool):
                continue
            if event.name == "tool_cal":
                pass
        """,
    ),
    (
        "return when not isinstance",
        """
        def on(event):
            if not isinstance(event, ItemEvent):
                return None
            return event.name == "tool_cal"
        """,
        5,
        """
        def on(event):
            if isinstance(event, ItemEvent):
                return None
            return event.name == "tool_cal"
        """,
    ),
    (
        "assert isinstance",
        """
        assert isinstance(event, ItemEvent)
        found = event.name == "tool_cal"
        """,
        3,
        """
        assert event is not None
        found = event.name == "tool_cal"
        """,
    ),
    (
        "discriminator != then continue, over a declared producer",
        """
        async def show(stream: Stream):
            async for event in stream.events():
                if event.type != "item_event":
                    continue
                if event.name == "tool_cal":
                    print(event)
        """,
        6,
        """
        async def show(stream: Stream):
            async for event in stream.events():
                if event.type != "raw_event":
                    continue
                if event.name == "tool_cal":
                    print(event)
        """,
    ),
    (
        "discriminator == with the body",
        """
        async def show(stream):
            async for event in stream.events():
                if event.type == "item_event":
                    if event.name == "tool_cal":
                        print(event)
        """,
        5,
        """
        async def show(stream):
            async for event in stream.events():
                if event.type == "item_event":
                    if event.data.name == "tool_cal":
                        print(event)
        """,
    ),
    (
        "discriminator == and",
        """
        def on(event):
            return event.type == "item_event" and event.name == "tool_cal"
        """,
        3,
        """
        def on(event):
            return event.type == "item_event" or event.name == "tool_cal"
        """,
    ),
    (
        "match on the discriminator",
        """
        def on(event):
            match event.type:
                case "item_event":
                    return event.name == "tool_cal"
        """,
        5,
        """
        def on(event):
            match event.type:
                case "other_event":
                    return event.name == "tool_cal"
        """,
    ),
    (
        "match on a class pattern",
        """
        def on(event):
            match event:
                case ItemEvent() as item:
                    return item.name == "tool_cal"
        """,
        5,
        """
        def on(event):
            match event:
                case Tool() as item:
                    return item.name == "tool_cal"
        """,
    ),
    (
        "match on the field of a known receiver",
        """
        def on(event: ItemEvent):
            match event.name:
                case "tool_called" | "tool_cal":
                    pass
        """,
        4,
        """
        def on(event: Tool):
            match event.name:
                case "tool_called" | "tool_cal":
                    pass
        """,
    ),
    (
        "a union annotation that holds the class",
        """
        def on(event: StreamEvent) -> None:
            print(event.name == "tool_cal")
        """,
        3,
        """
        def on(event: Stream) -> None:
            print(event.name == "tool_cal")
        """,
    ),
    (
        "a declared function returning an alias of the union",
        """
        event = next_event()
        print(event.name == "tool_cal")
        """,
        3,
        """
        event = next_tool()
        print(event.name == "tool_cal")
        """,
    ),
    (
        "a local alias of a union",
        """
        Event = ItemEvent | Other
        def on(event: Event) -> None:
            print(event.name == "tool_cal")
        """,
        4,
        """
        Event = Tool | Other
        def on(event: Event) -> None:
            print(event.name == "tool_cal")
        """,
    ),
    (
        "a comprehension filter",
        """
        names = [e for e in queue if isinstance(e, ItemEvent) and e.name == "tool_cal"]
        """,
        2,
        """
        names = [e for e in queue if isinstance(e, Tool) and e.name == "tool_cal"]
        """,
    ),
    (
        "a collection built by a filtered comprehension",
        """
        items = [e for e in queue if isinstance(e, ItemEvent)]
        assert not any(e.name == "tool_cal" for e in items)
        """,
        3,
        """
        items = [e for e in queue]
        assert not any(e.name == "tool_cal" for e in items)
        """,
    ),
    (
        "a typed collection, iterated and indexed",
        """
        def on(events: list[ItemEvent]) -> None:
            for event in events:
                print(event.name == "tool_output")
            print(events[0].name == "tool_cal")
        """,
        5,
        """
        def on(events: list[Tool]) -> None:
            for event in events:
                print(event.name == "tool_output")
            print(events[0].name == "tool_cal")
        """,
    ),
    (
        "an indexed element narrowed by its discriminator",
        """
        events = collect()
        assert events[1].type == "item_event"
        assert events[1].name == "tool_cal"
        """,
        4,
        """
        events = collect()
        assert events[1].type == "item_event"
        assert events[2].name == "tool_cal"
        """,
    ),
    (
        "a TypedDict subscript",
        """
        def on(payload: Payload) -> bool:
            return payload["name"] == "tool_cal"
        """,
        3,
        """
        def on(payload: dict) -> bool:
            return payload["name"] == "tool_cal"
        """,
    ),
    (
        "a mapping pattern on a TypedDict",
        """
        def on(payload: Payload):
            match payload:
                case {"name": "tool_cal"}:
                    pass
        """,
        4,
        """
        def on(payload: dict):
            match payload:
                case {"name": "tool_cal"}:
                    pass
        """,
    ),
]


@pytest.mark.parametrize(
    ("source", "line"), [pytest.param(s, n, id=name) for name, s, n, _ in SHAPES]
)
def test_misspelt_string_on_a_known_receiver_is_found(events: Path, source: str, line: int) -> None:
    findings = _check(source)

    assert [finding.line for finding in findings] == [line]
    item, payload = TYPO.format("ItemEvent.name"), TYPO.format("Payload.name")
    # on a receiver of a union alias, the message names the union's field first
    unions = [on_union(item, union) for union in ("StreamEvent", "AnyEvent")]
    assert findings[0].message in (item, payload, *unions)


@pytest.mark.parametrize("source", [pytest.param(s, id=name) for name, _, _, s in SHAPES])
def test_same_shape_on_an_unknown_receiver_is_silent(events: Path, source: str) -> None:
    assert _check(source) == []


def test_a_known_class_is_checked_even_without_resemblance_and_a_union_is_not(
    events: Path,
) -> None:
    findings = _check(
        """
        def on(event: ItemEvent, either: StreamEvent) -> None:
            print(event.name == "finished", either.name == "finished")
        """
    )

    assert [(f.line, f.column, f.message) for f in findings] == [
        (
            3,
            25,
            "'finished' is not a value of `ItemEvent.name`; allowed: "
            "'handoff_occurred', 'tool_called', 'tool_output'",
        )
    ]


@pytest.mark.parametrize(
    "source",
    [
        'tool.name == "tool_cal"',
        'json_data["original_input"][0]["name"] == "tool_cal"',
        'f.name != "tool_cal"',
        'event.new_agent.name == "tool_cal"',
        "def on(event: ItemEvent):\n    event = other()\n    return event.name == 'tool_cal'\n",
        "def on(event: ItemEvent):\n    return event.item.name == 'tool_cal'\n",
        "if isinstance(event, ItemEvent):\n    pass\nfound = event.name == 'tool_cal'\n",
        "if not isinstance(event, ItemEvent):\n    print(event.name == 'tool_cal')\n",
        "found = isinstance(event, ItemEvent) or event.name == 'tool_cal'\n",
        "for event in produce():\n    print(event.name == 'tool_cal')\n",
        "def on(event: Plain):\n    return event.kind == 'tool_cal'\n",
        "def on(event: ItemEvent):\n    def inner(event):\n"
        "        return event.name == 'tool_cal'\n",
    ],
)
def test_unknown_receivers_are_silent(events: Path, source: str) -> None:
    assert _check(source) == []


def test_constructor_keyword_and_class_pattern_are_checked_on_any_receiver(
    events: Path,
) -> None:
    findings = _check(
        """
        event = ItemEvent(name="tool_cal")
        match anything:
            case ItemEvent(name="tool_cal"):
                pass
        """
    )

    assert [f.line for f in findings] == [2, 4]


def test_configured_producer_and_discriminator_name_what_the_module_does_not(
    events: Path,
) -> None:
    literals = {
        "Plain.name": {
            "values": "events:Plain.name",
            "producers": ["stream_plain"],
            "discriminator": {"kind": ["plain", "simple"]},
        }
    }

    produced = _check(
        """
        async def show(result):
            async for event in result.stream_plain():
                print(event.name == "tool_cal")
        """,
        literals,
    )
    discriminated = _check(
        """
        def on(event):
            if event.kind in ("plain", "simple"):
                return event.name == "tool_cal"
            if event.kind == "other":
                return event.name == "tool_cal"
        """,
        literals,
    )
    not_configured = _check(
        """
        async def show(result):
            async for event in result.stream_plain():
                print(event.name == "tool_cal")
        """,
        {"Plain.name": "events:Plain.name"},
    )

    assert [f.line for f in produced] == [4]
    assert [f.line for f in discriminated] == [4]
    assert not_configured == []


def test_key_without_a_class_checks_every_receiver(events: Path) -> None:
    findings = _check('found = tool.name == "tool_cal"\n', {"name": "events:Name"})

    assert [f.message for f in findings] == [TYPO.format("name")]


def test_receiver_analysis_runs_only_when_a_string_is_not_allowed(
    events: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = receivers.receiver_types

    def counting(*arguments: object) -> object:
        calls.append(1)
        return real(*arguments)  # type: ignore[arg-type]

    monkeypatch.setattr(unknown_literal, "receiver_types", counting)

    assert _check('def on(e: ItemEvent):\n    return e.name == "tool_called"\n') == []
    assert _check("def on(e: ItemEvent):\n    return e.data == 'x'\n") == []
    assert calls == []
    assert len(_check('def on(e: ItemEvent):\n    return e.name == "tool_cal"\n')) == 1
    assert calls == [1]


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ({"values": "events:Name", "extra": 1}, "unknown key 'extra'"),
        ({"producers": ["x"]}, "'values' must be \"module:Name\""),
        ({"values": 3}, "'values' must be \"module:Name\""),
        ({"values": "events:Name", "discriminator": ["type"]}, "'discriminator' must be a table"),
        ({"values": "events:Name", "discriminator": {"type": []}}, "'discriminator' 'type'"),
        ({"values": "events:Name", "discriminator": {"type": [1]}}, "'discriminator' 'type'"),
        ({"values": "events:Name", "producers": "stream_events"}, "'producers' must be a list"),
        ({"values": "events:Name", "producers": ["a.b"]}, "'producers' must be a list"),
        (["events:Name"], 'expected "module:Name" or an inline table'),
    ],
)
def test_bad_inline_table_is_a_configuration_error_naming_the_key(
    events: Path, entry: object, complaint: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        UnknownLiteralRule({"literals": {"ItemEvent.name": entry}})

    assert "'literals' 'ItemEvent.name'" in str(raised.value)
    assert complaint in str(raised.value)


def test_discriminator_needs_a_class_in_the_key(events: Path) -> None:
    with pytest.raises(ConfigError, match=r'need a "Class\.attr" key'):
        UnknownLiteralRule(
            {"literals": {"name": {"values": "events:Name", "producers": ["events"]}}}
        )


def test_inline_table_from_pyproject_is_read(events: Path, lint: object) -> None:
    configure_literals(
        events, '"Plain.name" = { values = "events:Plain.name", producers = ["stream_plain"] }'
    )
    (events / "use.py").write_text(
        "async def show(result):\n"
        "    async for event in result.stream_plain():\n"
        '        print(event.name == "tool_cal")\n'
    )

    outcome = lint("check", "--no-cache", "use.py")  # type: ignore[operator]

    assert outcome.out.splitlines()[0] == ("use.py:3:29: LR002 [~] " + TYPO.format("Plain.name"))


def test_facts_read_from_the_declaring_module(events: Path) -> None:
    from lint_rules.analysis.declarations import class_facts

    facts = class_facts("events", "ItemEvent", "name")

    assert facts is not None
    assert facts.discriminators == {"type": "item_event"}
    assert facts.unions == ("AnyEvent", "StreamEvent")
    assert sorted(facts.producers) == ["events", "next_event"]
    assert facts.siblings == {("type", "raw_event"): "RawEvent"}
    assert class_facts("events", "Missing", "name") is None


def test_annotation_types() -> None:
    import ast

    def types(text: str) -> frozenset[str]:
        return receivers.annotation_types(ast.parse(text, mode="eval").body, {})

    assert types("Optional[agents.ItemEvent]") == {"ItemEvent"}
    assert types("AsyncIterator[A | B]") == {"[]A", "[]B"}
    assert types("'list[\"A\"]'") == {"[]A"}
    assert types("Annotated[A, 1]") == {"A"}
    assert types("type[A]") == frozenset()
    assert types("dict[str, A]") == {"dict"}


ANNOTATED_EVENTS = """
    from dataclasses import dataclass
    from typing import Annotated, Literal, Union

    raise SystemExit("read, never imported")

    class PropertyInfo:
        def __init__(self, discriminator: str) -> None: ...

    @dataclass
    class ItemEvent:
        name: Literal["tool_called", "tool_output"]
        type: Literal["item_event"] = "item_event"

    @dataclass
    class RawEvent:
        data: str
        type: Literal["raw_event"] = "raw_event"

    StreamEvent = Annotated[
        Union[ItemEvent, Annotated[RawEvent, "raw"]], PropertyInfo(discriminator="type")
    ]

    class Stream:
        def events(self) -> list[StreamEvent]: ...
"""


@pytest.mark.parametrize(
    ("source", "found"),
    [
        # the union alias as generated SDKs declare it, and a member wrapped too
        ("def on(event: StreamEvent):\n    return event.name == 'tool_cal'\n", True),
        (
            "def on(stream: Stream):\n    for event in stream.events():\n"
            "        if event.type == 'raw_event':\n            continue\n"
            "        print(event.name == 'tool_cal')\n",
            True,
        ),
        # an unknown receiver of the same shape
        ("def on(event):\n    return event.name == 'tool_cal'\n", False),
        ("def on(event: RawEvent):\n    return event.name == 'tool_cal'\n", False),
    ],
)
def test_annotated_union_alias_is_a_union(project: Path, source: str, found: bool) -> None:
    (project / "events.py").write_text(textwrap.dedent(ANNOTATED_EVENTS), encoding="utf-8")

    findings = _check(source, {"ItemEvent.name": "events:ItemEvent.name"})

    expected = on_union(TYPO.format("ItemEvent.name"), "StreamEvent")
    assert [f.message for f in findings] == ([expected] if found else [])
