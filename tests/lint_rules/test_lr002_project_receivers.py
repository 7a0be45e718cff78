"""LR002 on receivers typed by what other modules of the project declare (issue 22 pt 3).

Return annotations of functions and methods in any module (read when a receiver needs
them), attributes and TypedDict keys of classes declared elsewhere (iterated too),
``with ... as``, comprehension conditions and ``TypedDict.get``. Each shape is found when
misspelt (with the right "did you mean") and silent on an unknown receiver.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import (
        check_literals,
        configure_literals,
        on_union,
        write_files,
    )
    from tests.lint_rules.project_fixtures import typo as _typo
    from tests.lint_rules.rule_fixtures import Lint
else:
    from project_fixtures import check_literals, configure_literals, on_union, write_files
    from project_fixtures import typo as _typo
    from rule_fixtures import Lint

SDK = {
    "sdk/__init__.py": "from .session import ServerSession as ServerSession\n",
    "sdk/types.py": """
        from __future__ import annotations

        from dataclasses import dataclass
        from typing import Literal, TypedDict, Union

        raise SystemExit("read, never imported")

        @dataclass
        class TextContent:
            text: str
            type: Literal["text"] = "text"

        @dataclass
        class ImageContent:
            data: bytes
            type: Literal["image"] = "image"

        Content = Union[TextContent, ImageContent]

        @dataclass
        class CallToolResult:
            content: list[Content]
            is_error: bool = False

        @dataclass
        class ElicitResult:
            action: Literal["accept", "decline", "cancel"]

        class Payload(TypedDict):
            kind: Literal["start", "stop"]

        class Upload(TypedDict):
            type: Literal["upload"]
            state: Literal["queued", "done"]

        class Page(TypedDict):
            items: list[Payload]
            first: Payload
    """,
    "sdk/session.py": """
        from __future__ import annotations

        from collections.abc import Iterator
        from typing import Self

        from .types import CallToolResult, Content, ElicitResult

        raise SystemExit("read, never imported")

        class ServerSession:
            async def elicit_form(self, message: str) -> ElicitResult: ...
            async def call_tool(self, name: str) -> CallToolResult: ...

        def make_result() -> CallToolResult: ...

        class EventStream:
            def __iter__(self) -> Iterator[Content]: ...

        class StreamManager:
            def __enter__(self) -> EventStream: ...
            def __exit__(self, *exc: object) -> None: ...

        class Responses:
            def stream(self) -> StreamManager: ...
            def latest(self) -> Self: ...
            def result(self) -> CallToolResult: ...

        class BaseClient:
            @property
            def responses(self) -> Responses: ...
    """,
    "sdk/tools.py": """
        from sdk import types

        class Tool:
            async def run(self) -> "types.CallToolResult": ...
    """,
    "sdk/client.py": """
        from .session import BaseClient, ServerSession

        class Client(BaseClient):
            session: ServerSession
    """,
}

LITERALS = {
    "ElicitResult.action": "sdk.types:ElicitResult.action",
    "TextContent.type": "sdk.types:TextContent.type",
    "Payload.kind": "sdk.types:Payload.kind",
}


@pytest.fixture
def sdk(project: Path) -> Path:
    return write_files(project, SDK)


def _check(source: str, literals: Mapping[str, object] = LITERALS) -> list[tuple[int, str]]:
    return sorted(check_literals(source, literals))  # several on a line: by message


ACCEPTING = _typo("accepting", "ElicitResult.action", "accept")
TXT = _typo("txt", "TextContent.type", "text")
STOPPED = _typo("stopped", "Payload.kind", "stop")

# (id, misspelt source, line, finding, the same shape on an unknown receiver)
SHAPES = [
    (
        "a method of a class of another module, awaited",
        """
        from sdk.session import ServerSession

        async def ask(session: ServerSession) -> bool:
            answer = await session.elicit_form("name?")
            return answer.action == "accepting"
        """,
        6,
        ACCEPTING,
        """
        from sdk.session import Other

        async def ask(session: Other) -> bool:
            answer = await session.elicit_form("name?")
            return answer.action == "accepting"
        """,
    ),
    (
        "a method through a package re-export",
        """
        from sdk import ServerSession

        async def ask(session: ServerSession) -> bool:
            return (await session.elicit_form("name?")).action == "accepting"
        """,
        5,
        ACCEPTING,
        """
        from sdk import Other

        async def ask(session: Other) -> bool:
            return (await session.elicit_form("name?")).action == "accepting"
        """,
    ),
    (
        "a function of another module",
        """
        from sdk.session import make_result

        for content in make_result().content:
            print(content.type == "txt")
        """,
        5,
        TXT,
        """
        from sdk.session import make_other

        for content in make_other().content:
            print(content.type == "txt")
        """,
    ),
    (
        "for over an annotated attribute of a class of another module",
        """
        from sdk.types import CallToolResult

        def show(result: CallToolResult) -> None:
            for content in result.content:
                if content.type == "txt":
                    print(content)
        """,
        6,
        TXT,
        """
        from sdk.types import Other

        def show(result: Other) -> None:
            for content in result.content:
                if content.type == "txt":
                    print(content)
        """,
    ),
    (
        "a comprehension condition",
        """
        from sdk.types import CallToolResult

        def texts(result: CallToolResult) -> list[object]:
            return [c for c in result.content if c.type == "txt"]
        """,
        5,
        TXT,
        """
        from sdk.types import Other

        def texts(result: Other) -> list[object]:
            return [c for c in result.content if c.type == "txt"]
        """,
    ),
    (
        "with ... as over a property and a method, then for over __iter__",
        """
        from sdk.client import Client

        def show(client: Client) -> None:
            with client.responses.stream() as stream:
                for event in stream:
                    print(event.type == "txt")
        """,
        7,
        on_union(TXT, "Content"),  # `__iter__` gives the union alias
        """
        from sdk.client import Client

        def show(client: Client) -> None:
            with client.responses.other() as stream:
                for event in stream:
                    print(event.type == "txt")
        """,
    ),
    (
        "a method returning Self, and an attribute inherited from a base class",
        """
        from sdk.client import Client

        async def run(client: Client) -> None:
            result = client.responses.latest().result()
            answer = await client.session.elicit_form("?")
            print(result.content[0].type == "txt", answer.action == "accepting")
        """,
        7,
        None,
        """
        from sdk.client import Client

        async def run(client: Client) -> None:
            result = client.responses.earliest().result()
            answer = await client.session.ask("?")
            print(result.content[0].type == "txt", answer.action == "accepting")
        """,
    ),
    (
        "self typed by its class, whose base declares the property",
        """
        from sdk.session import BaseClient

        class Mine(BaseClient):
            def first(self) -> bool:
                return self.responses.result().content[0].type == "txt"
        """,
        6,
        TXT,
        """
        from sdk.session import BaseClient

        class Mine(Other):
            def first(self) -> bool:
                return self.responses.result().content[0].type == "txt"
        """,
    ),
    (
        "annotations through a module import (types.CallToolResult), here and there",
        """
        from sdk import types
        from sdk.tools import Tool

        async def on(tool: Tool, given: types.CallToolResult) -> None:
            print((await tool.run()).content[0].type == "txt")
            print(given.content[0].type == "image", given.content[1].type == "txt")
        """,
        6,
        None,
        """
        from sdk import types
        from sdk.tools import Tool

        async def on(tool: Tools, given: types.CallToolResults) -> None:
            print((await tool.run()).content[0].type == "txt")
            print(given.content[0].type == "image", given.content[1].type == "txt")
        """,
    ),
    (
        "for over a TypedDict key",
        """
        from sdk.types import Page

        def kinds(page: Page) -> None:
            for payload in page["items"]:
                print(payload["kind"] == "stopped")
        """,
        6,
        STOPPED,
        """
        def kinds(page: dict) -> None:
            for payload in page["items"]:
                print(payload["kind"] == "stopped")
        """,
    ),
    (
        "TypedDict .get()",
        """
        from sdk.types import Page, Payload

        def on(payload: Payload, page: Page) -> bool:
            return payload.get("kind") == "stopped" or page["first"].get("kind") == "start"
        """,
        5,
        STOPPED,
        """
        def on(payload: dict, page: dict) -> bool:
            return payload.get("kind") == "stopped" or page["first"].get("kind") == "start"
        """,
    ),
]


@pytest.mark.parametrize(
    ("source", "line", "message"),
    [pytest.param(s, n, m, id=name) for name, s, n, m, _ in SHAPES],
)
def test_misspelt_value_is_found(sdk: Path, source: str, line: int, message: str | None) -> None:
    if message is not None:
        expected = [(line, message)]
    elif "given" in source:
        expected = [(line, TXT), (line + 1, TXT)]
    else:
        expected = [(line, TXT), (line, ACCEPTING)]

    assert _check(source) == sorted(expected)


@pytest.mark.parametrize("source", [pytest.param(s, id=name) for name, *_, s in SHAPES])
def test_same_shape_on_an_unknown_receiver_is_silent(sdk: Path, source: str) -> None:
    assert _check(source) == []


@pytest.mark.parametrize("source", [pytest.param(s, id=name) for name, s, *_ in SHAPES])
def test_correct_values_are_silent(sdk: Path, source: str) -> None:
    for wrong, right in (("accepting", "accept"), ("txt", "image"), ("stopped", "stop")):
        source = source.replace(f'"{wrong}"', f'"{right}"')

    assert _check(source) == []


def test_a_name_bound_to_two_classes_is_not_looked_up(sdk: Path) -> None:
    # The file's own `CallToolResult` is not the SDK's: the SDK's attributes say nothing
    # about what `make()` gives here.
    (sdk / "sdk" / "other.py").write_text(
        "from .types import CallToolResult\ndef make() -> CallToolResult: ...\n"
    )
    use = "for content in make().content:\n    print(content.type == 'txt')\n"
    own = "class CallToolResult:\n    content: list[str]\n"

    assert _check("from sdk.other import make\n" + own + use) == []
    assert _check("from sdk.other import make\n" + use) == [(3, TXT)]


@pytest.mark.parametrize(("kind", "found"), [("upload", True), ("other", False)])
def test_discriminator_read_with_get_narrows(sdk: Path, kind: str, found: bool) -> None:
    literals = {"Upload.state": "sdk.types:Upload.state"}
    source = f"""
        def on(event: dict) -> bool:
            return event.get("type") == "{kind}" and event.get("state") == "queueing"
        """

    assert _check(source, literals) == (
        [(3, _typo("queueing", "Upload.state", "queued"))] if found else []
    )


def test_function_of_a_namespace_package_in_a_namespace_package(sdk: Path) -> None:
    # `helpers/` and `helpers/fakes/` have no __init__.py (a test tree often has none).
    fakes = sdk / "helpers" / "fakes"
    fakes.mkdir(parents=True)
    (fakes / "results.py").write_text(
        "from sdk.types import CallToolResult\ndef fake_result() -> CallToolResult: ...\n"
    )
    source = "from helpers.fakes.results import fake_result\n" + (
        "for content in fake_result().content:\n    print(content.type == 'txt')\n"
    )

    assert _check(source) == [(3, TXT)]


def test_only_the_project_and_the_configured_packages_are_read(
    sdk: Path, tmp_path: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An installed package the configuration does not name (the standard library,
    # pydantic...) is never read for receivers: `vendor` outside the project is not.
    site = tmp_path / "site"
    (site / "vendor").mkdir(parents=True)
    helper = "from sdk.types import CallToolResult\ndef fetch() -> CallToolResult: ...\n"
    (site / "vendor" / "__init__.py").write_text(helper)
    monkeypatch.syspath_prepend(str(site))
    configure_literals(sdk, '"TextContent.type" = "sdk.types:TextContent.type"')
    (sdk / "use.py").write_text(
        "from vendor import fetch\nfor c in fetch().content:\n    print(c.type == 'txt')\n"
    )

    outside = lint("check", "--no-cache", "use.py")
    (sdk / "vendor").mkdir()
    (sdk / "vendor" / "__init__.py").write_text(helper)
    inside = lint("check", "--no-cache", "use.py")

    assert outside.code == 0
    assert inside.out.splitlines()[0] == f"use.py:3:21: LR002 [~] {TXT}"
