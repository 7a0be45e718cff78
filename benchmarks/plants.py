"""Benchmark: LR002, LR003 and ``protocols`` on two large typed SDKs, untouched and planted.

The real-world check of issue 22. For each SDK (``openai`` and ``mcp``, the sdists of
``benchmarks/lr003_findings.py``), downloads the sdist at run time
(``pip download --no-deps --no-binary :all:``, into a cache outside the repository) and
unpacks it twice into a temporary directory: the untouched tree and a planted copy. Both
get the same configuration, read from the SDK's own declarations:

- ``[tool.lint_rules.literals]``: every class attribute annotated ``Literal[...]`` of
  strings in the SDK's event and content modules (``"Class.attr" = "module:Class.attr"``,
  the first of each key in path order; 100+ keys per SDK);
- ``[tool.lint_rules.protocols]``: every ``class X(Protocol)`` of the package, with
  implementations anywhere in the tree (``"**/*.py"``);
- ``literal-factories = ["construct", "model_construct"]`` (pydantic's factories).

Then:

(a) ``check --select LR002,LR003`` and, with ``--deps PYTHON`` (an interpreter that has the
    SDK's dependencies, for mypy), ``protocols`` (LR100) on the untouched tree: every
    finding printed; the judgement of each is in benchmarks/README.md;
(b) the same on the planted copy, where each plant is a new module of its own (so plants
    do not interact) using the SDK's real API with one mistake of a shape of issue 22; a
    plant is ``found`` when a finding of one of its codes is in its module, else
    ``MISSED``, and the recall is printed; findings in a plant module beyond its mistake
    are printed too;
(c) ``check`` (LR002, LR003, ``--no-cache``) beside ``ruff check --select ALL --no-cache``
    on the untouched tree, interleaved, ``--runs`` times each; medians, ratio and the load
    average before and after.

Usage: ``.venv/bin/python benchmarks/plants.py {openai,mcp} [--deps PYTHON] [--runs 3]
[--cache DIR] [--keep]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import _common

VERSIONS = {"openai": "3.51.0", "mcp": "2.3.0"}


@dataclass(frozen=True)
class Plant:
    """A new module ``path`` of the planted copy holding one mistake of ``shape``."""

    shape: str
    path: str
    codes: tuple[str, ...]
    text: str


LR002 = ("LR002",)
LR003 = ("LR003", "LR100")

# Where each SDK declares the Literal fields to configure (paths under the tree) and
# where its packages live (the directory holding each top-level package).
FIELD_FILES = {
    "openai": ["src/openai/types/responses/*.py", "src/openai/types/chat/*.py"],
    "mcp": ["src/mcp-types/mcp_types/**/*.py", "src/mcp/**/*.py"],
}
PACKAGE_ROOTS = {"openai": ["src"], "mcp": ["src", "src/mcp-types"]}

_OPENAI_HEAD = """\
from __future__ import annotations

from openai import OpenAI
from openai.types.chat.chat_completion import ChatCompletion, Choice
from openai.types.responses.response_stream_event import ResponseStreamEvent
from openai.types.responses.response_text_delta_event import ResponseTextDeltaEvent
from openai.types.responses.response_output_item import ResponseOutputItem
from openai.types.responses.parsed_response import ParsedResponseOutputItem
from openai.types.chat.chat_completion_content_part_image_param import ImageURL
"""

_OPENAI_DRIVER = """\
from __future__ import annotations

from typing import Union

from openai.lib.computer import ComputerDriver, Screenshot
from openai.types.responses import computer_action as modern
from openai.types.responses import response_computer_tool_call as legacy


class Recorder:
    def click(self, action: Union[modern.Click, legacy.ActionClick]) -> None: ...
    def double_click(self, action: Union[modern.DoubleClick, legacy.ActionDoubleClick]) -> None: ...
    def drag(self, action: Union[modern.Drag, legacy.ActionDrag]) -> None: ...
    def keypress(self, action: Union[modern.Keypress, legacy.ActionKeypress]) -> None: ...
    def move(self, action: Union[modern.Move, legacy.ActionMove]) -> None: ...
    def scroll(self, action: Union[modern.Scroll, legacy.ActionScroll]) -> None: ...
    def type(self, action: Union[modern.Type, legacy.ActionType]) -> None: ...
    def wait(self, action: Union[modern.Wait, legacy.ActionWait]) -> None: ...
    def screenshot(self) -> Screenshot: ...


driver: ComputerDriver = Recorder()
"""


def _openai_plants() -> list[Plant]:
    def lr002(name: str, shape: str, body: str) -> Plant:
        return Plant(shape, f"plants/{name}.py", LR002, _OPENAI_HEAD + textwrap.dedent(body))

    def driver(name: str, shape: str, old: str, new: str, tail: str = "") -> Plant:
        assert old in _OPENAI_DRIVER, old
        text = _OPENAI_DRIVER.replace(old, new) + textwrap.dedent(tail)
        return Plant(shape, f"plants/{name}.py", LR003, text)

    return [
        lr002(
            "direct",
            "direct annotation",
            """
            def on(event: ResponseTextDeltaEvent) -> bool:
                return event.type == "response.output_text_delta"
            """,
        ),
        lr002(
            "annotated_union",
            "Annotated[Union[...], PropertyInfo] union (members imported)",
            """
            def on(event: ResponseStreamEvent) -> bool:
                return event.type == "response.output_text_delta"
            """,
        ),
        lr002(
            "imported_member_match",
            "match/case on an Annotated union of imported members",
            """
            def on(item: ResponseOutputItem) -> int:
                match item.type:
                    case "function_cal":
                        return 1
                return 0
            """,
        ),
        lr002(
            "generic_member",
            "generic member (ParsedResponseOutputMessage[T]) of a union",
            """
            def on(item: ParsedResponseOutputItem) -> bool:
                return item.type == "output_message"
            """,
        ),
        lr002(
            "subscripted_alias",
            "subscripted alias (ParsedResponseOutputItem[int])",
            """
            def on(item: ParsedResponseOutputItem[int]) -> bool:
                return item.type == "function_cal"
            """,
        ),
        lr002(
            "return_other_module",
            "return annotation of a method in another module (client.responses.retrieve)",
            """
            def on(client: OpenAI) -> bool:
                response = client.responses.retrieve("resp_1")
                return response.output[0].type == "function_cal"
            """,
        ),
        lr002(
            "for_attribute",
            "for over an annotated attribute (completion.choices)",
            """
            def on(completion: ChatCompletion) -> int:
                for choice in completion.choices:
                    if choice.finish_reason == "stopped":
                        return 1
                return 0
            """,
        ),
        lr002(
            "comprehension",
            "comprehension condition",
            """
            def on(completion: ChatCompletion) -> list[Choice]:
                return [c for c in completion.choices if c.finish_reason == "max_tokens"]
            """,
        ),
        lr002(
            "typeddict_get",
            "TypedDict .get()",
            """
            def on(image: ImageURL) -> bool:
                return image.get("detail") == "highest"
            """,
        ),
        lr002(
            "in_tuple",
            "in a tuple, over the stream's events (for over an iterated annotation)",
            """
            def on(events: list[ResponseStreamEvent]) -> int:
                return sum(1 for e in events if e.type in ("response.completed", "response.fail"))
            """,
        ),
        lr002(
            "constructor",
            "constructor keyword",
            """
            def make() -> ResponseTextDeltaEvent:
                return ResponseTextDeltaEvent(
                    content_index=0, delta="", item_id="", logprobs=[], output_index=0,
                    sequence_number=0, type="response.output_text_delta",
                )
            """,
        ),
        lr002(
            "factory",
            "class + keyword factory (Model.construct(type=...))",
            """
            def make() -> ResponseTextDeltaEvent:
                return ResponseTextDeltaEvent.construct(type="response.output_text_delta")
            """,
        ),
        driver(
            "async_in_sync",
            "an async method in a sync protocol's implementation",
            "    def wait(self,",
            "    async def wait(self,",
        ),
        driver(
            "return_drift",
            "return-type drift (-> bytes for -> Screenshot)",
            "    def screenshot(self) -> Screenshot: ...",
            "    def screenshot(self) -> bytes: ...",
        ),
        driver(
            "kind_change",
            "a parameter made keyword-only",
            "    def move(self, action:",
            "    def move(self, *, action:",
        ),
        driver(
            "subclass_override",
            "a subclass of an implementation that overrides one method wrongly",
            "driver: ComputerDriver = Recorder()",
            "driver: ComputerDriver = Recorder()",
            """

            class Spy(Recorder):
                async def click(self, action: Union[modern.Click, legacy.ActionClick]) -> None: ...
            """,
        ),
        Plant(
            "an explicit Protocol subclass with a wrong signature",
            "plants/explicit_subclass.py",
            LR003,
            textwrap.dedent(
                """\
                from __future__ import annotations

                from openai.lib.browser import BrowserClickDriver, BrowserState, ClickInput


                class Clicker(BrowserClickDriver):
                    def state(self) -> BrowserState: ...
                    def click(self, action: ClickInput, retries: int) -> None: ...
                """
            ),
        ),
    ]


_MCP_HEAD = """\
from __future__ import annotations

from mcp.server.session import ServerSession
from mcp_types import CallToolResult, ContentBlock, ElicitResult, TextContent
"""

_MCP_STORAGE = """\
from __future__ import annotations

from mcp.client.auth.oauth2 import TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class MemoryStorage:
    async def get_tokens(self) -> OAuthToken | None: ...
    async def set_tokens(self, tokens: OAuthToken) -> None: ...
    async def get_client_info(self) -> OAuthClientInformationFull | None: ...
    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...


storage: TokenStorage = MemoryStorage()
"""


def _mcp_plants() -> list[Plant]:
    def lr002(name: str, shape: str, body: str) -> Plant:
        return Plant(shape, f"plants/{name}.py", LR002, _MCP_HEAD + textwrap.dedent(body))

    def storage(name: str, shape: str, old: str, new: str, tail: str = "") -> Plant:
        assert old in _MCP_STORAGE, old
        text = _MCP_STORAGE.replace(old, new) + textwrap.dedent(tail)
        return Plant(shape, f"plants/{name}.py", LR003, text)

    return [
        lr002(
            "direct",
            "direct annotation",
            """
            def on(result: ElicitResult) -> bool:
                return result.action == "accepted"
            """,
        ),
        lr002(
            "union",
            "a union alias (ContentBlock = TextContent | ImageContent | ...)",
            """
            def on(block: ContentBlock) -> bool:
                return block.type == "txt"
            """,
        ),
        lr002(
            "imported_member",
            "a union of members imported into the alias's module (mcp.types re-exports)",
            """
            from mcp.types import ContentBlock as Block

            def on(block: Block) -> bool:
                return block.type == "imag"
            """,
        ),
        lr002(
            "match",
            "match/case on a union",
            """
            def on(block: ContentBlock) -> int:
                match block.type:
                    case "resource_lnk":
                        return 1
                return 0
            """,
        ),
        lr002(
            "return_other_module",
            "return annotation of a method in another module (await session.elicit_form)",
            """
            async def on(session: ServerSession) -> bool:
                answer = await session.elicit_form("name?", {"type": "object"})
                return answer.action == "declin"
            """,
        ),
        lr002(
            "for_attribute",
            "for over an annotated attribute (result.content)",
            """
            def on(result: CallToolResult) -> int:
                for block in result.content:
                    if block.type == "txt":
                        return 1
                return 0
            """,
        ),
        lr002(
            "comprehension",
            "comprehension condition",
            """
            def on(result: CallToolResult) -> list[ContentBlock]:
                return [c for c in result.content if c.type == "audi"]
            """,
        ),
        lr002(
            "in_set",
            "in a set, on a list of a union",
            """
            def on(blocks: list[ContentBlock]) -> int:
                return sum(1 for b in blocks if b.type in {"text", "resources"})
            """,
        ),
        lr002(
            "constructor",
            "constructor keyword",
            """
            def make() -> TextContent:
                return TextContent(type="txt", text="hello")
            """,
        ),
        lr002(
            "factory",
            "class + keyword factory (TextContent.model_construct(type=...))",
            """
            def make() -> TextContent:
                return TextContent.model_construct(type="txt", text="hello")
            """,
        ),
        lr002(
            "isinstance",
            "isinstance narrowing",
            """
            def on(block: object) -> bool:
                return isinstance(block, TextContent) and block.type == "txt"
            """,
        ),
        storage(
            "sync_in_async",
            "a sync method in an async protocol's implementation",
            "    async def set_tokens(",
            "    def set_tokens(",
        ),
        storage(
            "return_drift",
            "return-type drift (-> OAuthToken for -> OAuthToken | None... -> str)",
            "    async def get_tokens(self) -> OAuthToken | None: ...",
            "    async def get_tokens(self) -> str: ...",
        ),
        storage(
            "kind_change",
            "a parameter made keyword-only",
            "    async def set_client_info(self, client_info",
            "    async def set_client_info(self, *, client_info",
        ),
        storage(
            "subclass_override",
            "a subclass of an implementation that overrides one method wrongly",
            "storage: TokenStorage = MemoryStorage()",
            "storage: TokenStorage = MemoryStorage()",
            """

            class Spy(MemoryStorage):
                def set_tokens(self, tokens: OAuthToken) -> None: ...
            """,
        ),
        Plant(
            "an explicit Protocol subclass with a wrong signature",
            "plants/explicit_subclass.py",
            LR003,
            textwrap.dedent(
                """\
                from __future__ import annotations

                from collections.abc import Callable

                from mcp.server.subscriptions import SubscriptionBus
                from mcp.server.subscriptions import ServerEvent


                class Bus(SubscriptionBus):
                    def publish(self, event: ServerEvent) -> None: ...
                    def subscribe(
                        self, listener: Callable[[ServerEvent], None]
                    ) -> Callable[[], None]:
                        return lambda: None
                """
            ),
        ),
        Plant(
            "a subclass of a real implementation (InMemorySubscriptionBus) made sync",
            "plants/real_subclass.py",
            LR003,
            textwrap.dedent(
                """\
                from __future__ import annotations

                from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent


                class Spy(InMemorySubscriptionBus):
                    def publish(self, event: ServerEvent) -> None: ...
                """
            ),
        ),
    ]


PLANTS = {"openai": _openai_plants, "mcp": _mcp_plants}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sdk", choices=sorted(VERSIONS))
    parser.add_argument("--deps", help="a Python with the SDK's dependencies, for protocols")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "lr003-sdists")
    parser.add_argument("--keep", action="store_true", help="keep the unpacked trees")
    arguments = parser.parse_args()
    sdk = arguments.sdk
    sdist = _common.download(sdk, VERSIONS[sdk], arguments.cache)
    work = Path(tempfile.mkdtemp(prefix="plants-"))
    try:
        untouched = _common.unpack(sdist, work / "untouched")
        planted = _common.unpack(sdist, work / "planted")
        fields, protocols = _configure(sdk, untouched, arguments.deps)
        _configure(sdk, planted, arguments.deps)
        plants = PLANTS[sdk]()
        for plant in plants:
            target = planted / plant.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                print(f"two plants in {plant.path}", file=sys.stderr)
                return 2
            target.write_text(plant.text, encoding="utf-8")
        files = sum(1 for _ in untouched.rglob("*.py"))
        print(f"{sdk} {VERSIONS[sdk]}: {files} files, {fields} literal keys, {protocols} protocols")

        print("\n(a) untouched tree")
        base = _findings(untouched, arguments.deps)
        for finding in base:
            print(f"  {_show(finding)}")
        print(f"  {len(base)} findings")

        print("\n(b) planted copy")
        after = _findings(planted, arguments.deps)
        base_keys = {_show(finding) for finding in base}
        found = 0
        for plant in plants:
            mine = [f for f in after if f["path"] == plant.path]
            hits = [f for f in mine if f["code"] in plant.codes]
            found += bool(hits)
            verdict = "found " if hits else "MISSED"
            codes = ",".join(sorted({str(f["code"]) for f in hits}))
            print(f"  {verdict} {plant.path} ({plant.shape}) {codes}")
            for finding in mine:
                print(f"         {_show(finding)}")
        others = [
            f
            for f in after
            if not str(f["path"]).startswith("plants/") and _show(f) not in base_keys
        ]
        for finding in others:
            print(f"  new outside the plants: {_show(finding)}")
        print(f"  recall {found}/{len(plants)} = {100 * found / len(plants):.0f}%")

        if arguments.runs < 1:
            return 0
        print("\n(c) check beside ruff --select ALL, interleaved")
        print(f"  load average before: {os.getloadavg()[0]:.1f}")
        ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
        check = [sys.executable, "-m", "lint_rules", "check", "--select", "LR002,LR003"]
        commands = {
            "check": [*check, "--no-cache", "--exit-zero"],
            "ruff": [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q"],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(arguments.runs):
            for name, command in commands.items():
                start = time.perf_counter()
                subprocess.run(command, cwd=untouched, capture_output=True, check=False)
                times[name].append(time.perf_counter() - start)
        medians = {name: statistics.median(values) for name, values in times.items()}
        for name, values in times.items():
            shown = ", ".join(f"{value:.2f}" for value in values)
            print(f"  {name}: median {medians[name]:.2f} s ({shown})")
        print(f"  check / ruff: {medians['check'] / medians['ruff']:.2f}x")
        print(f"  load average after: {os.getloadavg()[0]:.1f}")
    finally:
        if arguments.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work)
    return 0


def _show(finding: dict[str, object]) -> str:
    return f"{finding['path']}:{finding['line']}: {finding['code']} {finding['message']}"


def _findings(tree: Path, deps: str | None) -> list[dict[str, object]]:
    """``check --select LR002,LR003`` and, with ``deps``, ``protocols`` on ``tree``."""
    commands = [["check", "--select", "LR002,LR003", "--no-cache"]]
    if deps is not None:
        commands.append(["protocols"])
    findings: list[dict[str, object]] = []
    for command in commands:
        run = subprocess.run(
            [sys.executable, "-m", "lint_rules", *command, "--format", "json"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "CI": "true"},
        )
        if run.returncode not in (0, 1):
            message = f"{' '.join(command)} failed ({run.returncode}):\n{run.stderr}"
            raise SystemExit(message)
        findings += json.loads(run.stdout)
    return sorted(findings, key=lambda f: (str(f["path"]), int(str(f["line"])), str(f["code"])))


def _module(tree: Path, sdk: str, path: Path) -> str | None:
    for root in sorted(PACKAGE_ROOTS[sdk], key=len, reverse=True):
        try:
            parts = path.relative_to(tree / root).with_suffix("").parts
        except ValueError:
            continue
        if any("-" in part for part in parts):
            continue
        return ".".join(parts).removesuffix(".__init__")
    return None


def _configure(sdk: str, tree: Path, deps: str | None) -> tuple[int, int]:
    """Append ``[tool.lint_rules]`` (and mypy's interpreter) read from the SDK's sources."""
    fields = _common.literal_fields(
        (path, module)
        for pattern in FIELD_FILES[sdk]
        for path in sorted(tree.glob(pattern))
        if (module := _module(tree, sdk, path)) is not None
    )
    protocols = []
    for path in sorted((tree / "src").rglob("*.py")):
        module = _module(tree, sdk, path)
        if module is not None:
            text = path.read_text(encoding="utf-8")
            protocols += [f"{module}:{name}" for name in _common.PROTOCOL.findall(text)]
    literals = "\n".join(f'"{key}" = "{value}"' for key, value in fields.items())
    table = "\n".join(f'"{key}" = ["**/*.py"]' for key in protocols)
    text = (
        '\n[tool.lint_rules]\nselect = ["LR002", "LR003"]\n'
        'literal-factories = ["construct", "model_construct"]\n\n'
        f"[tool.lint_rules.literals]\n{literals}\n\n[tool.lint_rules.protocols]\n{table}\n"
    )
    pyproject = tree / "pyproject.toml"
    original = pyproject.read_text(encoding="utf-8")
    if deps is not None:
        mypy = f'\n[tool.mypy]\npython_executable = "{deps}"\n'
        if "[tool.mypy]" in original:
            original = original.replace("[tool.mypy]", f'[tool.mypy]\npython_executable = "{deps}"')
            mypy = ""
        text = mypy + text
    pyproject.write_text(original + text, encoding="utf-8")
    return len(fields), len(protocols)


if __name__ == "__main__":
    raise SystemExit(main())
