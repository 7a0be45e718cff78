"""Findings that must hold on projects the suite was not built on (issues 21 and 22).

Each test is the smallest shape of what a trial on a real project (the anthropic SDK,
starlette) showed, recorded in benchmarks/README.md ("Trial on projects not used before").
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import check_literals, write_files
else:
    from project_fixtures import check_literals, write_files

# The anthropic SDK's shape: the stream's events are a union alias of another module,
# narrowed by their `type`, and the delta a narrowed event holds is a union of its own.
EVENTS = {
    "sdk/__init__.py": "",
    "sdk/deltas.py": """
        from typing import Annotated, Literal, Union

        class TextDelta:
            type: Literal["text_delta"]

        class JsonDelta:
            type: Literal["json_delta"]

        Delta = Annotated[Union[TextDelta, JsonDelta], "discriminator"]
    """,
    "sdk/events.py": """
        from typing import Literal, Union

        from .deltas import Delta

        class DeltaEvent:
            type: Literal["content_block_delta"]
            delta: Delta

        class StopEvent:
            type: Literal["message_stop"]

        Event = Union[DeltaEvent, StopEvent]
    """,
}
LITERALS = {
    "TextDelta.type": "sdk.deltas:TextDelta.type",
    "JsonDelta.type": "sdk.deltas:JsonDelta.type",
    "DeltaEvent.type": "sdk.events:DeltaEvent.type",
    "StopEvent.type": "sdk.events:StopEvent.type",
}
DLETA = (
    "'text_dleta' is not a value of `Delta.type` (configured: `TextDelta.type`,"
    " `JsonDelta.type`); did you mean 'text_delta'?"
)


def test_a_narrowed_member_of_an_imported_union_is_looked_up_where_the_union_is(
    project: Path,
) -> None:
    # `DeltaEvent` is not imported here: `event.type == "content_block_delta"` makes the
    # `Event` of `sdk.events` a `DeltaEvent`, which that module binds.
    write_files(project, EVENTS)
    source = """
        from sdk.events import Event

        def on(event: Event) -> None:
            if event.type == "message_stop":
                pass
            elif event.type == "content_block_delta":
                if event.delta.type == "text_dleta":
                    pass
    """
    assert check_literals(source, LITERALS) == [(8, DLETA)]
    assert check_literals(source.replace("text_dleta", "text_delta"), LITERALS) == []


# starlette's shape: a subclass of `WebSocketEndpoint` overrides its Literal-typed
# class attribute `encoding`.
ENDPOINT = """
    from typing import Literal

    class WebSocketEndpoint:
        encoding: Literal["text", "bytes", "json"] | None = None
"""
ENDPOINT_LITERALS = {"WebSocketEndpoint.encoding": "web.endpoints:WebSocketEndpoint.encoding"}


@pytest.mark.parametrize("imported", ["WebSocketEndpoint", "WebSocketEndpoint as Endpoint"])
def test_a_subclass_overriding_a_field_with_a_value_it_cannot_take_is_found(
    project: Path, imported: str
) -> None:
    write_files(project, {"web/__init__.py": "", "web/endpoints.py": ENDPOINT})
    base = imported.rpartition(" ")[2]
    source = f"""
        from web.endpoints import {imported}

        class App({base}):
            encoding = "jsn"

        class Fine({base}):
            encoding = "json"

        class Own({base}):
            encoding: str = "jsn"  # declares its own field

        class Other:
            encoding = "jsn"
    """
    assert check_literals(source, ENDPOINT_LITERALS) == [
        (5, "'jsn' is not a value of `WebSocketEndpoint.encoding`; did you mean 'json'?")
    ]
