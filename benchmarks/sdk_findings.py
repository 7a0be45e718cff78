"""Benchmark: LR002 and LR004 on the Agents SDK's own sdist, as a new user would run them.

Downloads the ``openai-agents`` sdist (``pip download --no-deps --no-binary :all:``) into
a cache directory outside the repository (or uses the sdist or unpacked tree given with
``--sdist``), unpacks it into a temporary directory, appends the natural configuration
to its ``pyproject.toml`` (``"RunItemStreamEvent.name"`` read from
``agents.stream_events``, with ``stream_events`` named as its producer because
``result.py`` declares it, not the event's module; and one TypedDict field,
``OutputSchemaPrimitive.type``, for the dictionary shapes), plants misspellings in the
shapes LR002 must find (in real SDK files, replacing one value each, and in a new test
file that uses the SDK's real API), then runs
``python -m lint_rules check --format json`` on ``src/ tests/ examples/``.

Prints each planted misspelling as ``found`` or ``MISSED``, every other LR002 finding
(there must be none), and LR004's findings grouped by the advice they give (the message
after its first ``"; "``, or ``fixable`` when the finding has a fix). Exits 1 on a miss
or an extra LR002 finding, 2 if the SDK changed so that a plant no longer applies.

Usage: ``.venv/bin/python benchmarks/sdk_findings.py [--sdist PATH] [--cache DIR]
[--keep]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

SDK = "openai-agents"
VERSION = "0.24.0"
DEFAULT_CACHE = Path(tempfile.gettempdir()) / "lint_rules_sdk_findings"

CONFIG = """

[tool.lint_rules]
select = ["LR002", "LR004"]

[tool.lint_rules.literals]
"RunItemStreamEvent.name" = { values = "agents.stream_events:RunItemStreamEvent.name", \
producers = ["stream_events"] }
"OutputSchemaPrimitive.type" = \
"agents.extensions.experimental.codex.codex_tool:OutputSchemaPrimitive.type"
"""


@dataclass(frozen=True)
class Plant:
    """Replace ``old`` with ``new`` on ``line`` of ``path``: LR002 must report ``new`` there."""

    shape: str
    path: str
    line: int
    old: str
    new: str


# Real comparisons of the SDK, each misspelt in place.
IN_PLACE = [
    Plant(
        "discriminator != then continue, over stream_events()",
        "examples/sandbox/unix_local_pty.py", 131, '"tool_called"', '"tool_calls"',
    ),
    Plant(
        "discriminator == with the body",
        "tests/test_soft_cancel.py", 98, '"tool_called"', '"tool_calls"',
    ),
    Plant(
        "discriminator == and",
        "tests/test_agent_runner.py", 5456, '"tool_output"', '"tool_outputs"',
    ),
    Plant(
        "isinstance and, in a while loop",
        "tests/test_server_conversation_tracker.py", 1083, '"tool_called"', '"tool_calls"',
    ),
    Plant(
        "discriminator and isinstance",
        "tests/test_streaming_tool_call_arguments.py", 111, '"tool_called"', '"tool_calls"',
    ),
    Plant(
        "collection built by an isinstance-filtered comprehension",
        "tests/test_tool_approval_call_id_reuse.py", 1721, '"tool_called"', '"tool_calls"',
    ),
    Plant(
        "comprehension filter, in a set",
        "tests/sandbox/test_runtime.py", 5695, '"tool_output"', '"tool_outputs"',
    ),
    Plant(
        "indexed element after an assert on its discriminator",
        "tests/test_stream_events.py", 441, '"tool_output"', '"tool_outputs"',
    ),
    Plant(
        "constructor keyword",
        "src/agents/run_internal/streaming.py", 41, '"tool_called"', '"tool_calls"',
    ),
    Plant(
        "discriminator != then continue, in a helper",
        "examples/sandbox/extensions/daytona/usaspending_text2sql/agent.py", 329,
        '"tool_output"', '"tool_outputs"',
    ),
]  # fmt: skip

PLANTED_FILE = "tests/test_lint_rules_planted.py"
# A new test file on the SDK's real API: "# plant: <shape>" marks each line LR002 must
# report; "# silent" lines use the same values on receivers that are not known.
PLANTED_SOURCE = """\
from __future__ import annotations

from typing import Any

from agents import Agent, Runner, RunItemStreamEvent
from agents.extensions.experimental.codex.codex_tool import (
    OutputSchemaField,
    OutputSchemaPrimitive,
)
from agents.stream_events import StreamEvent


def on_event(event: RunItemStreamEvent) -> bool:
    return event.name == "tool_calls"  # plant: parameter annotation


def on_any(event: StreamEvent) -> bool:
    return event.name == "tool_outputs"  # plant: union annotation


def make_event() -> RunItemStreamEvent:
    raise NotImplementedError


def from_a_call() -> bool:
    event = make_event()
    return event.name in ("tool_called", "handoff_request")  # plant: return annotation


def annotated_variable(value: Any) -> bool:
    event: RunItemStreamEvent = value
    return event.name != "message_output_create"  # plant: variable annotation


class Recorder:
    def __init__(self, event: Any) -> None:
        self.event: RunItemStreamEvent = event

    def matches(self) -> bool:
        return self.event.name == "reasoning_item"  # plant: attribute annotation


def branches(event: object) -> str:
    if isinstance(event, Agent):
        return "agent"
    elif isinstance(event, RunItemStreamEvent):
        if event.name == "tool_search_call":  # plant: elif isinstance
            return "search"
    return ""


def early_return(event: object) -> bool:
    if not isinstance(event, RunItemStreamEvent):
        return False
    return event.name == "mcp_list_tool"  # plant: return on not isinstance


async def stream(agent: Agent) -> list[str]:
    seen = []
    result = Runner.run_streamed(agent, input="hi")
    async for event in result.stream_events():
        if not isinstance(event, RunItemStreamEvent):
            continue
        if event.name == "tool_calls":  # plant: continue on not isinstance
            seen.append(event.name)
    async for event in result.stream_events():
        match event.type:
            case "run_item_stream_event":
                if event.name == "tool_outputs":  # plant: match on the discriminator
                    seen.append("output")
    async for event in result.stream_events():
        match event:
            case RunItemStreamEvent(name="tool_calls"):  # plant: class pattern
                seen.append("called")
    return seen


def schema_kind(schema: OutputSchemaPrimitive) -> bool:
    return schema["type"] == "strings"  # plant: TypedDict subscript


def schema_match(schema: OutputSchemaPrimitive) -> str:
    match schema:
        case {"type": "integers"}:  # plant: TypedDict mapping pattern
            return "int"
    return ""


def unknown_receivers(tool: Any, json_data: Any, field: OutputSchemaField) -> list[bool]:
    return [
        tool.name == "tool_calls",  # silent
        json_data["original_input"][0]["name"] == "tool_outputs",  # silent
        field["type"] == "array",  # silent: a union whose other member says "array"
    ]
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="an sdist (.tar.gz) or its unpacked tree")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="download directory")
    parser.add_argument("--keep", action="store_true", help="keep (and print) the checked tree")
    arguments = parser.parse_args()

    workspace = Path(tempfile.mkdtemp(prefix="sdk_findings_"))
    try:
        tree = _unpacked(arguments.sdist or _download(arguments.cache), workspace)
        planted = _plant(tree)
        if planted is None:
            return 2
        return _report(tree, planted)
    finally:
        if arguments.keep:
            print(f"\nchecked tree kept in {workspace}")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


def _download(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob(f"openai_agents-{VERSION}.tar.gz"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", f"{SDK}=={VERSION}", "--dest", str(cache)],
            check=True,
        )  # fmt: skip
        found = sorted(cache.glob(f"openai_agents-{VERSION}.tar.gz"))
    if not found:
        raise SystemExit(f"no openai_agents-{VERSION}.tar.gz in {cache} after pip download")
    return found[0]


def _unpacked(source: Path, workspace: Path) -> Path:
    """A fresh copy of the SDK tree under ``workspace``."""
    target = workspace / "sdk"
    if source.is_dir():
        shutil.copytree(source, target)
        return target
    with tarfile.open(source) as archive:
        if sys.version_info >= (3, 12):
            archive.extractall(workspace, filter="data")
        else:  # the sdist is PyPI's own, read into a private temporary directory
            archive.extractall(workspace)
    (unpacked,) = [path for path in workspace.iterdir() if path.is_dir()]
    unpacked.rename(target)
    return target


def _plant(tree: Path) -> list[tuple[str, str, int, str]] | None:
    """Apply the plants; what LR002 must report: (shape, path, line, value)."""
    expected = []
    for plant in IN_PLACE:
        path = tree / plant.path
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if plant.line > len(lines) or lines[plant.line - 1].count(plant.old) != 1:
            print(f"cannot plant {plant.shape!r}: {plant.path}:{plant.line} lacks {plant.old}")
            return None
        lines[plant.line - 1] = lines[plant.line - 1].replace(plant.old, plant.new)
        path.write_text("".join(lines), encoding="utf-8")
        expected.append((plant.shape, plant.path, plant.line, plant.new.strip('"')))
    (tree / PLANTED_FILE).write_text(PLANTED_SOURCE, encoding="utf-8")
    for number, line in enumerate(PLANTED_SOURCE.splitlines(), start=1):
        if "# plant: " in line:
            shape = line.split("# plant: ")[1]
            value = line.split('"')[-2]
            expected.append((shape, PLANTED_FILE, number, value))
    with (tree / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
        pyproject.write(CONFIG)
    return expected


def _report(tree: Path, expected: list[tuple[str, str, int, str]]) -> int:
    environment = dict(os.environ)
    # LR004 runs the `typos` of this environment.
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment["PATH"]
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "lint_rules", "check", "--format", "json", "--no-cache",
         "src", "tests", "examples"],
        cwd=tree, capture_output=True, text=True, env=environment, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        print(completed.stdout, completed.stderr, sep="\n")
        return 2
    findings = json.loads(completed.stdout)
    lr002 = [item for item in findings if item["code"] == "LR002"]
    lr004 = [item for item in findings if item["code"] == "LR004"]
    print(f"{SDK} {VERSION}: {len(findings)} findings in {elapsed:.1f} s\n")

    print(f"LR002, {len(expected)} planted misspellings:")
    missed = 0
    matched: set[int] = set()
    for shape, path, line, value in expected:
        hits = [
            index
            for index, item in enumerate(lr002)
            if item["path"] == path and item["line"] == line and f"'{value}'" in item["message"]
        ]
        matched.update(hits)
        missed += not hits
        print(f"  {'found ' if hits else 'MISSED'} {shape}: {path}:{line} {value!r}")
    extra = [item for index, item in enumerate(lr002) if index not in matched]
    print(f"\nLR002, other findings: {len(extra)}")
    for item in extra:
        print(f"  {item['path']}:{item['line']}:{item['column']}: {item['message']}")

    # Grouped by the kind of advice (its leading phrase: "test data", "not ours to
    # rename", "not fixed"...), then each finding with the exact advice it gives.
    groups: dict[str, list[dict[str, object]]] = defaultdict(list)
    for item in lr004:
        advice = str(item["message"]).partition("; ")[2]
        kind = "safe fix" if item["fix"] else advice.partition(":")[0] or "(no advice)"
        groups[kind].append(item)
    print(f"\nLR004: {len(lr004)} findings, by the advice they give")
    for kind, items in sorted(groups.items(), key=lambda pair: (-len(pair[1]), pair[0])):
        print(f"\n  [{len(items)}] {kind}")
        for item in items:
            head, _, advice = str(item["message"]).partition("; ")
            print(f"    {item['path']}:{item['line']}: {head}")
            if advice and not item["fix"]:
                print(f"        {textwrap.shorten(advice, 160)}")

    if missed or extra:
        print(f"\nFAILED: {missed} missed, {len(extra)} extra LR002 findings")
        return 1
    print("\nOK: every planted misspelling found, nothing else reported by LR002")
    return 0


if __name__ == "__main__":
    sys.exit(main())
