"""Test-only rules and the CLI outcome type, shared by the lint_rules tests.

The rules exist to exercise engine behaviour that no real rule should have
(crashing, producing broken code, never converging). Test modules import this
as ``rule_fixtures`` (pytest puts this directory on ``sys.path``); mypy knows
it as ``tests.lint_rules.rule_fixtures``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import libcst
import pytest
from libcst.metadata import PositionProvider

from lint_rules.analysis.typos import find_typos
from lint_rules.rule import ConfigError, Rule, RuleOptions

needs_typos = pytest.mark.skipif(find_typos() is None, reason="the typos executable is missing")
"""For tests that run the real typos binary (LR004)."""

# Misspellings LR004's tests place, built from parts so that this repository's own
# typos run does not flag the test files.
NEAR_MISS = "al" + "og"  # typos suggests "along"
TAKE_MISS = "rec" + "ieve"  # typos suggests "receive"
OCCURRED = "occ" + "ured"  # typos suggests "occurred"


@dataclass(frozen=True)
class Outcome:
    """What a CLI run returned and printed."""

    code: int
    out: str
    err: str


Lint = Callable[..., Outcome]
"""``lint(*arguments, rules=ALL_RULES)``: run the CLI in-process."""


def run_cli(*arguments: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m lint_rules ARGUMENTS`` in a process of its own, as a user runs it."""
    command = [sys.executable, "-m", "lint_rules", *arguments]
    return subprocess.run(
        command, cwd=cwd, input=stdin, capture_output=True, text=True, check=False, timeout=600
    )


class CrashingRule(Rule):
    """Raises on a name `boom`."""

    CODE = "LR990"
    NAME = "crashing"
    MESSAGE = "never reported"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "boom":
            raise RuntimeError("the rule broke")


class BreakingFixRule(Rule):
    """Offers a fix for `breakme` whose result does not parse."""

    CODE = "LR991"
    NAME = "breaking-fix"
    MESSAGE = "breakme"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "breakme":
            self.report(node, self.MESSAGE, self.replace(node, "1 +"))


class BannedNameRule(Rule):
    """Reports names listed in its own option `banned`."""

    CODE = "LR992"
    NAME = "banned-name"
    MESSAGE = "`{name}` is banned"
    OPTIONS = ("banned",)

    def __init__(self, options: RuleOptions) -> None:
        super().__init__(options)
        banned = options.get("banned", [])
        if not isinstance(banned, list):
            raise ConfigError("'banned' must be a list of names")
        self.banned = {str(name) for name in banned}

    def prefilter(self, text: str) -> bool:
        return any(name in text for name in self.banned)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.banned:
            self.report(node, self.MESSAGE.format(name=node.id))


class BatchRule(Rule):
    """Reports, on each file, the size of the batch it was announced in."""

    CODE = "LR993"
    NAME = "batch"
    MESSAGE = "checked in a batch of {count} announced file(s)"

    def begin_batch(self, paths: Sequence[Path]) -> None:
        self.announced = set(paths)

    def check_file(self) -> None:
        if self.file.path in self.announced:
            self.report((0, 0), self.MESSAGE.format(count=len(self.announced)))


class TodoCommentRule(Rule):
    """Reports `# TODO` comments, found with libcst (the ast has no comments)."""

    CODE = "LR994"
    NAME = "todo-comment"
    MESSAGE = "a TODO comment"

    def prefilter(self, text: str) -> bool:
        return "TODO" in text

    def check_file(self) -> None:
        wrapper = self.file.cst_wrapper
        positions = wrapper.resolve(PositionProvider)
        for node in positions:
            if isinstance(node, libcst.Comment) and "TODO" in node.value:
                start = positions[node].start
                offset = self.file.line_starts[start.line - 1] + start.column
                self.report((offset, offset + len(node.value)), self.MESSAGE)


class UnsafeFixRule(Rule):
    """Offers an unsafe fix renaming `risky` to `careful`."""

    CODE = "LR995"
    NAME = "unsafe-fix"
    MESSAGE = "risky"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "risky":
            self.report(node, self.MESSAGE, self.replace(node, "careful", safe=False))


class NeverConvergingRule(Rule):
    """Always offers a fix that leaves the finding in place: `again` -> `(again)`."""

    CODE = "LR996"
    NAME = "never-converging"
    MESSAGE = "again"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "again":
            self.report(node, self.MESSAGE, self.replace(node, "(again)"))


class DyingRule(Rule):
    """Kills its worker process on a name `die_here` (as a segfault in a C parser would)."""

    CODE = "LR997"
    NAME = "dying"
    MESSAGE = "never reported"

    def visit_Name(self, node: ast.Name) -> None:
        if node.id == "die_here":
            os._exit(70)
