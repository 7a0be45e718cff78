"""The per-file checker: one parse and one batched traversal for every selected rule.

``Checker.check`` runs the rules admitted by their prefilters on one text, with
one ``ast`` walk whose dispatch table (node class -> visitor methods) is built
once per combination of admitted rules, then applies ``# noqa`` and
``per-file-ignores``. A rule that raises becomes an ``LR999`` finding.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path

from lint_rules import timing
from lint_rules.analysis.project import Project
from lint_rules.engine.results import RunOptions
from lint_rules.rule import ConfigError, FileContext, Finding, Rule

_NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.IGNORECASE)
_NOQA_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

Visitor = Callable[[ast.AST], None]


def file_error(message: str) -> Finding:
    """A finding about the whole file (``LR000``), placed at its start."""
    return Finding("LR000", message, 1, 1, 1, 1)


class Checker:
    """Every selected rule, instantiated once; checks one text at a time.

    Each rule's visitor methods are found once here, and the dispatch table
    for each combination of rules admitted by the prefilters is built once.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        options: RunOptions | None = None,
        project: Project | None = None,
    ) -> None:
        options = RunOptions() if options is None else options
        self.rules = list(rules)
        self.project = project if project is not None else Project(None)
        """The run's project, given to each ``FileContext``."""
        self.use_prefilter = options.use_prefilter
        self._visitors = [_visitors_of(rule) for rule in self.rules]
        self._tables: dict[tuple[int, ...], dict[type[ast.AST], list[tuple[int, Visitor]]]] = {}
        self._batch_failures: dict[int, str] = {}

    def begin_batch(self, paths: Sequence[Path]) -> None:
        """Run each rule's batch hook; a failing hook becomes LR999 on each file.

        ``ConfigError`` (from here or ``check_file``) is not a finding: it ends the run.
        """
        self._batch_failures = {}
        for index, rule in enumerate(self.rules):
            try:
                rule.begin_batch(paths)
            except ConfigError:
                raise  # the rule cannot run at all (e.g. a missing tool): exit 2
            except Exception as error:
                self._batch_failures[index] = _describe(error)

    def begin_texts(self, items: Sequence[tuple[Path, str]]) -> None:
        """Run each rule's ``begin_texts`` hook (texts a fix pass changed, about to be checked);
        a hook's failure is ignored: each rule then checks each text alone."""
        for index, rule in enumerate(self.rules):
            if index in self._batch_failures:
                continue
            with suppress(Exception):
                rule.begin_texts(items)

    def check(
        self,
        path: Path,
        text: str,
        ignored: tuple[str, ...] | Callable[[], tuple[str, ...]] = (),
    ) -> tuple[list[Finding], bool]:
        """Findings for one text, and whether it was parsed.

        ``# noqa: CODE`` comments apply; codes starting with an ``ignored`` prefix
        are dropped (``ignored`` may be a function, called only when there are findings).
        """
        context = FileContext(path, text, self.project)
        failures = dict(self._batch_failures)
        admitted = []
        for index, rule in enumerate(self.rules):
            if index in failures:
                continue
            try:
                if not self.use_prefilter or rule.admits(context):
                    admitted.append(index)
            except Exception as error:
                failures[index] = _describe(error)
        findings: list[Finding] = []
        if admitted:
            try:
                with timing.timed("parse"):
                    tree = context.ast_tree
            except SyntaxError as error:
                return [_syntax_finding(error)], True
            except (RecursionError, MemoryError):
                return [file_error("cannot parse: the code is nested too deeply")], True
            except ValueError as error:  # e.g. null bytes
                return [file_error(f"cannot parse: {error}")], True
            for index in admitted:
                self.rules[index].file = context
                self.rules[index].findings = []
            self._traverse(tree, tuple(admitted), failures)
            for index in admitted:
                rule = self.rules[index]
                if index in failures:
                    continue
                try:
                    rule.check_file()
                except ConfigError:
                    raise
                except Exception as error:
                    failures[index] = _describe(error)
                    continue
                findings.extend(rule.findings)
        for index, reason in sorted(failures.items()):
            rule = self.rules[index]
            message = f"internal error in rule {rule.CODE} ({rule.NAME}) on {path}: {reason}"
            findings.append(Finding("LR999", message, 1, 1, 1, 1))
        codes = (ignored() if callable(ignored) else ignored) if findings else ()
        if codes:
            findings = [finding for finding in findings if not finding.code.startswith(codes)]
        return _unsuppressed(findings, context), context.parsed

    def _traverse(self, tree: ast.AST, admitted: tuple[int, ...], failures: dict[int, str]) -> None:
        # Iterative, so that deeply nested code cannot overflow the stack.
        table = self._table(admitted)
        stack: list[ast.AST] = [tree]
        pop, push = stack.pop, stack.append
        child_fields = _CHILD_FIELDS
        while stack:
            node = pop()
            node_class = node.__class__
            handlers = table.get(node_class)
            if handlers is not None:
                for index, visit in handlers:
                    if index in failures:
                        continue
                    try:
                        visit(node)
                    except Exception as error:
                        failures[index] = _describe(error)
            fields = child_fields.get(node_class)
            if fields is None:
                fields = child_fields[node_class] = _fields_with_children(node_class)
            for name in fields:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    for item in value:
                        if item is not None:
                            push(item)
                elif value is not None:
                    push(value)

    def _table(self, admitted: tuple[int, ...]) -> dict[type[ast.AST], list[tuple[int, Visitor]]]:
        table = self._tables.get(admitted)
        if table is None:
            table = {}
            for index in admitted:
                for node_class, visit in self._visitors[index]:
                    table.setdefault(node_class, []).append((index, visit))
            self._tables[admitted] = table
        return table


_LEAF_FIELDS = frozenset(
    {"arg", "asname", "attr", "conversion", "id", "is_async", "kind", "kwd_attrs", "level",
     "lineno", "module", "n", "name", "rest", "s", "simple", "tag", "type_comment",
     "ctx", "op", "ops"}
)  # fmt: skip
"""Fields that never hold a node, or hold only the context and operator
singletons (``ast.Load``, ``ast.Add``, ``ast.Eq``...), which are not visited."""
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields_with_children(node_class: type) -> tuple[str, ...]:
    """The fields of a node class that hold nodes, ``None`` or lists of them."""
    if node_class in (ast.Constant, ast.MatchSingleton):
        return ()  # ``value`` is a Python constant
    skipped = _LEAF_FIELDS | ({"names"} if node_class in (ast.Global, ast.Nonlocal) else set())
    fields: tuple[str, ...] = getattr(node_class, "_fields", ())
    return tuple(name for name in fields if name not in skipped)


def _visitors_of(rule: Rule) -> list[tuple[type[ast.AST], Visitor]]:
    visitors = []
    for name in dir(type(rule)):
        if not name.startswith("visit_"):
            continue
        node_class = getattr(ast, name.removeprefix("visit_"), None)
        if not (isinstance(node_class, type) and issubclass(node_class, ast.AST)):
            raise TypeError(f"{type(rule).__name__}.{name}: no ast node class of that name")
        visitors.append((node_class, getattr(rule, name)))
    return visitors


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _syntax_finding(error: SyntaxError) -> Finding:
    line = error.lineno or 1
    column = max(error.offset or 1, 1)
    return Finding("LR000", f"syntax error: {error.msg}", line, column, line, column)


def _unsuppressed(findings: list[Finding], context: FileContext) -> list[Finding]:
    kept = []
    for finding in findings:
        if finding.line <= len(context.lines):
            match = _NOQA.search(context.lines[finding.line - 1])
            if match and finding.code.upper() in {
                code.upper() for code in _NOQA_CODE.findall(match.group(1))
            }:
                continue
        kept.append(finding)
    return kept
