"""``FileContext``: the project root and the helpers rules share for fix ranges."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import ClassVar

import pytest

from lint_rules.config import load_config
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import run
from lint_rules.rule import FileContext, Rule


def _constant(source: str) -> tuple[FileContext, ast.Constant]:
    context = FileContext(Path("sample.py"), source)
    for node in ast.walk(context.ast_tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bytes):
            return context, node
    raise AssertionError("no string constant")


@pytest.mark.parametrize(
    ("source", "body"),
    [
        ("x = 'abc'\n", "abc"),
        ('x = r"abc"\n', "abc"),
        ('x = """abc"""\n', "abc"),
        ("x = u'é'\n", "é"),
        ("x = {'é': 'abc'}\n", "é"),
    ],
)
def test_string_body_is_the_value_between_the_quotes(source: str, body: str) -> None:
    context, node = _constant(source)

    found = context.string_body(node)

    assert found is not None
    assert context.text[found[0] : found[1]] == body


@pytest.mark.parametrize(
    "source",
    [
        "x = 'a' 'bc'\n",  # implicit concatenation
        "x = 'a\\x62c'\n",  # an escape
        "x = b'abc'\n",  # bytes
        "x = f'abc{y}'\n",  # a part of an f-string
    ],
)
def test_string_body_is_none_when_rewriting_the_range_would_not_rewrite_the_value(
    source: str,
) -> None:
    context, node = _constant(source)

    assert context.string_body(node) is None


@pytest.mark.parametrize(
    "source",
    [
        "def name(): pass\n",
        "async  def name(): pass\n",
        "@decorator\nclass name:\n    pass\n",
        "class Outer:\n    async def name(self): pass\n",
    ],
)
def test_definition_name_is_the_range_of_the_defined_name(source: str) -> None:
    context = FileContext(Path("sample.py"), source)
    node = next(
        node
        for node in ast.walk(context.ast_tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name == "name"
    )

    found = context.definition_name(node)

    assert found is not None
    assert context.text[found[0] : found[1]] == "name"


class _RootRecorder(Rule):
    """Records the project root each file is checked under.

    ## What it does
    ## Why is this bad?
    ## Example
    ## Use instead
    ## Fix safety
    None.
    ## Options
    """

    CODE = "LR990"
    NAME = "root-recorder"
    MESSAGE = "root"
    roots: ClassVar[list[Path | None]] = []

    def check_file(self) -> None:
        self.roots.append(self.file.root)


def test_rules_see_the_project_root_of_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.lint_rules]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "module.py").write_text("x = 1\n")
    config = load_config(tmp_path / "pkg", [_RootRecorder])
    _RootRecorder.roots.clear()

    run([tmp_path / "pkg"], config, [_RootRecorder], RunOptions(use_cache=False))

    assert _RootRecorder.roots == [config.root]
    assert config.root == tmp_path.resolve()
