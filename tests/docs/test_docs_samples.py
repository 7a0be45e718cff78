"""The Python samples of the English docs are type-checked and run, so a renamed API fails.

Each page's ```python blocks form one script, read top to bottom like the page: later
blocks use what earlier ones defined. Top-level ``await`` is allowed, as in an async REPL.
A block right after the comment ``<!-- docs-test: typecheck-only (why) -->`` is
type-checked but not run (it needs a server, a key or the network).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from mypy import api as mypy_api
from translate_docs import english_pages

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = REPO_ROOT / "docs"
TYPECHECK_ONLY = "<!-- docs-test: typecheck-only"
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+-]*)")


@dataclass(frozen=True)
class Block:
    """One ```python block: its code (dedented) and the page line of its first code line."""

    code: str
    first_line: int
    typecheck_only: bool


@dataclass
class PageSamples:
    page: str
    blocks: list[Block] = field(default_factory=list)

    def script(self, *, for_execution: bool, first_line: str = "") -> str:
        """The blocks (all, or those that run) at their page lines, blank lines between:
        line numbers in errors and tracebacks are the page's. ``first_line`` takes line 1
        (a page never starts with a code block)."""
        lines = [first_line]
        for block in self.blocks:
            if for_execution and block.typecheck_only:
                continue
            code = block.code.splitlines()
            lines += [""] * (block.first_line - 1 - len(lines))
            lines += [f"    {line}" if first_line else line for line in code]
        return "\n".join(lines) + "\n"


def python_blocks(page: str) -> PageSamples:
    """The ```python blocks of a page under docs/, in order."""
    samples = PageSamples(page)
    lines = (DOCS_DIR / page).read_text(encoding="utf-8").splitlines()
    index = 0
    previous_text = ""
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            if lines[index].strip():
                previous_text = lines[index].strip()
            index += 1
            continue
        fence, indent = opening["fence"], opening["indent"]
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if opening["lang"] == "python":
            body = "\n".join(line[len(indent) :] for line in lines[index + 1 : end])
            samples.blocks.append(
                Block(
                    code=textwrap.dedent(body),
                    first_line=index + 2,
                    typecheck_only=previous_text.startswith(TYPECHECK_ONLY),
                )
            )
        previous_text = ""
        index = end + 1
    return samples


PAGES = [samples for page in english_pages(DOCS_DIR) if (samples := python_blocks(page)).blocks]


def test_every_python_block_of_the_docs_is_collected() -> None:
    fences = sum(
        len(re.findall(r"^[ \t]*```python\b", (DOCS_DIR / page).read_text(), re.MULTILINE))
        for page in english_pages(DOCS_DIR)
    )

    assert fences > 0
    assert sum(len(samples.blocks) for samples in PAGES) == fences


def test_samples_type_check_with_mypy_strict(tmp_path: Path) -> None:
    pages: dict[str, str] = {}
    for number, samples in enumerate(PAGES):
        # `async with` and `async for` are valid only inside a function for mypy: the page
        # becomes the body of one, defined on line 1.
        script = samples.script(for_execution=False, first_line="async def _page() -> None:")
        module = tmp_path / f"docs_page_{number}.py"
        module.write_text(script, encoding="utf-8")
        pages[str(module)] = f"docs/{samples.page}"

    stdout, stderr, status = mypy_api.run(
        [
            "--config-file",
            str(REPO_ROOT / "pyproject.toml"),
            "--no-error-summary",
            "--hide-error-context",
            *sorted(pages),
        ]
    )

    report = stdout
    for module, page in pages.items():
        report = report.replace(module, page)
    assert status == 0, report + stderr


@pytest.mark.parametrize("samples", PAGES, ids=[samples.page for samples in PAGES])
async def test_samples_run(
    samples: PageSamples, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # samples may create files such as conversations.db
    script = samples.script(for_execution=True)
    code = compile(script, f"docs/{samples.page}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, object] = {"__name__": f"docs_{Path(samples.page).stem}"}

    outcome = eval(code, namespace)
    if inspect.iscoroutine(outcome):
        await outcome
