"""Where a misspelling typos found sits in the syntax tree, and the fix safe there.

``Placer.place`` locates one misspelling (a comment, a docstring, a doctest, a
string constant, an identifier) and decides, for LR004: a word in prose is fixed
unless it names code; an identifier is fixed only where no caller can notice (a
private name with every reference in its scope, ``scope_renamer``; a collected
test function, ``renamer.rename_test``); anything else is reported with the advice
that migrates it (``[tool.lint_rules.renames]``) or accepts it (the typos
configuration line), and why.
"""

from __future__ import annotations

import ast
import bisect
import io
import os
import re
import sys
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.analysis.collected import CollectedTest, collected_tests, is_test_file
from lint_rules.analysis.ownership import FileNames
from lint_rules.analysis.typos import Misspelling, typos_config, typos_root
from lint_rules.codemod.renamer import rename_test
from lint_rules.rule import Edit, FileContext, Fix, is_private

if TYPE_CHECKING:
    from lint_rules.codemod.scope_renamer import ScopeRenamer

_INLINE_CODE = re.compile(r"``[^`\n]+``|`[^`\n]+`")
"""Inline code in reStructuredText and Markdown prose, role targets (:func:`name`) included."""


def _file_names(tree: ast.Module) -> set[str]:
    """Every name the file defines or binds (definitions, parameters, assignments, imports)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.alias):
            names.update(node.name.split("."))
            if node.asname:
                names.add(node.asname)
    return names


@dataclass(frozen=True)
class Placed:
    """A misspelling located in the file: where, what it is part of, and any fix."""

    start: int
    end: int
    typo: str
    corrections: tuple[str, ...]
    place: str
    note: str = ""
    fix: Fix | None = None


_STRING_BODY = re.compile(r"[A-Za-z]{0,2}('''|\"\"\"|'|\")(.*)\1", re.DOTALL)
_FSTRING_MIDDLE = getattr(tokenize, "FSTRING_MIDDLE", -1)  # Python 3.12+
_STRING_TOKENS = (tokenize.STRING, _FSTRING_MIDDLE)
_PLACED_TOKENS = (tokenize.COMMENT, tokenize.NAME, *_STRING_TOKENS)


class Placer:
    """Locates misspellings in one file; the concrete syntax tree is built on demand."""

    def __init__(self, file: FileContext, renamed: frozenset[str] = frozenset()) -> None:
        self.file = file
        self.text = text = file.text
        self.renamed = renamed
        self.in_tests = is_test_file(file.path, file.root)
        self._range = file.node_range
        self._names: ScopeRenamer | None = None
        self._owners: FileNames | None = None
        self._tests: dict[int, CollectedTest] | None = None
        self._definitions: dict[int, str] | None = None
        self._imports: list[tuple[int, int]] = []
        self.typos_line_starts = [0, *(match.end() for match in re.finditer("\n", text))]
        """typos counts lines by LF only (Python also by a lone CR)."""
        self.tokens = _tokens(text)
        self.token_starts = [start for start, _, _ in self.tokens]
        self.docstrings = sorted(_docstring_ranges(file.ast_tree, self._range))
        self.strings: list[tuple[int, int, str]] = []
        self.formatted_names: list[tuple[int, int]] = []
        """Names inside f-string replacement fields: code, though tokenize (< 3.12) says string."""
        for node in ast.walk(file.ast_tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.strings.append((*self._range(node), node.value))
            elif isinstance(node, ast.FormattedValue):
                self.formatted_names.extend(
                    self._range(name) for name in ast.walk(node) if isinstance(name, ast.Name)
                )
        self.strings.sort()

    def place(self, misspelling: Misspelling) -> Placed | None:
        """Where the misspelling is and what to do about it; ``None``: not LR004's to report."""
        start = self._offset(misspelling)
        end = start + len(misspelling.typo)
        corrections = misspelling.corrections
        if self.text[start:end] != misspelling.typo:  # typos' lines differ (e.g. lone \r)
            note = "; not fixed: it could not be located exactly"
            return Placed(start, start, misspelling.typo, corrections, "this file", note)
        if self.renamed and self._word_at(start, end) in self.renamed:
            return None  # an old name of [tool.lint_rules.renames]: LR001 reports its uses
        token = self._token_at(start, end)
        kind = token[2] if token is not None else None
        if kind == tokenize.COMMENT:
            return self._word_fix(start, end, misspelling, "a comment")
        name = next((r for r in self.formatted_names if r[0] <= start and end <= r[1]), None)
        if name is not None:
            return self._identifier(name[0], name[1], start, end, misspelling)
        if kind in _STRING_TOKENS:
            assert token is not None
            if any(first <= token[0] and token[1] <= last for first, last in self.docstrings):
                if _in_doctest(self.text, token[0], start):
                    note = "; not fixed: a doctest's code and expected output are code"
                    return Placed(start, end, misspelling.typo, corrections, "a doctest", note)
                return self._word_fix(start, end, misspelling, "a docstring")
            return self._string_constant(start, end, misspelling)
        if kind == tokenize.NAME:
            assert token is not None
            return self._identifier(token[0], token[1], start, end, misspelling)
        return Placed(start, end, misspelling.typo, corrections, "code", "; not fixed")

    def _identifier(
        self, first: int, last: int, start: int, end: int, misspelling: Misspelling
    ) -> Placed:
        # Scope analysis (libcst) is slow; skip it when its answer cannot change the outcome.
        old, typo, corrections = self.text[first:last], misspelling.typo, misspelling.corrections
        test = self._test_names().get(first)
        if test is None and self._public_definition(first) is None:  # else: defined here
            foreign = self._owners_of().foreign(first, old)
            if foreign is not None:
                site, why = foreign
                note = f"; {NOT_OURS}: {why}; to accept it, {self._allow(old, identifier=True)}"
                return Placed(start, end, typo, corrections, f"{site} `{old}`", note)
        if _ambiguous(misspelling):
            note = f"{_ambiguous(misspelling)}; if it is spelt as intended, {self._allow(typo)}"
            return Placed(start, end, typo, corrections, f"identifier `{old}`", note)
        if test is not None:
            return self._test_function(first, start, end, misspelling, test)
        kind = None if is_private(old) else self._public_site(first)
        if kind is None:
            return self._scoped_identifier(first, last, start, end, misspelling)
        new = old[: start - first] + corrections[0] + old[end - first :]
        return Placed(start, end, typo, corrections, f"{kind} `{old}`", _public_note(old, new))

    def _scoped_identifier(
        self, first: int, last: int, start: int, end: int, misspelling: Misspelling
    ) -> Placed:
        """Place a misspelling (one correction) by what the name at ``first:last`` binds."""
        old = self.text[first:last]
        typo, corrections = misspelling.typo, misspelling.corrections
        renamer = self._renamer()
        node = renamer.name_at(first)
        if node is None:  # e.g. a name the parser and the tokenizer see differently
            note = "; not fixed: it could not be located in the syntax tree"
            return Placed(start, end, typo, corrections, f"identifier `{old}`", note)
        new = old[: start - first] + corrections[0] + old[end - first :]
        binding = renamer.binding(node)
        place = f"{binding.kind} `{old}`"
        if not binding.private:
            return Placed(start, end, typo, corrections, place, _public_note(old, new))
        edits, refusal = renamer.rename(node, binding, old, new)
        if refusal:
            return Placed(start, end, typo, corrections, place, f"; not fixed: {refusal}")
        return Placed(start, end, typo, corrections, place, "", Fix(tuple(edits)))

    def _public_definition(self, offset: int) -> str | None:
        """The kind of the public definition whose name starts at ``offset``, if any."""
        if self._definitions is None:
            self._definitions, self._imports = _public_definitions(self.file)
        return self._definitions.get(offset)

    def _public_site(self, offset: int) -> str | None:
        """The kind of a public definition or attribute at ``offset``, if it is one."""
        kind = self._public_definition(offset)
        if kind is not None:
            return kind
        if any(first <= offset < last for first, last in self._imports):
            return None
        before = offset - 1
        while before >= 0 and self.text[before] in " \t":
            before -= 1
        return "attribute" if before >= 0 and self.text[before] == "." else None

    def _word_fix(self, start: int, end: int, misspelling: Misspelling, place: str) -> Placed:
        fix = None
        note = _ambiguous(misspelling) or self._names_code(start, end)
        if not note:
            fix = Fix((Edit(start, end, misspelling.corrections[0]),))
        return Placed(start, end, misspelling.typo, misspelling.corrections, place, note, fix)

    def _names_code(self, start: int, end: int) -> str:
        """Why a word in prose at ``start:end`` is code, not prose (``""`` if it is prose)."""
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", end)
        line = self.text[line_start : len(self.text) if line_end < 0 else line_end]
        for span in _INLINE_CODE.finditer(line):
            if span.start() <= start - line_start and end - line_start <= span.end():
                return "; not fixed: it is inline code"
        word = self._word_at(start, end)
        if word in _file_names(self.file.ast_tree) or word in self.file.project.index.definitions:
            return f"; not fixed: `{word}` names code in this project"
        return ""

    def _string_constant(self, start: int, end: int, misspelling: Misspelling) -> Placed:
        place = "a string constant"
        if self.in_tests:
            word = self._word_at(start, end)
            advice = self._allow(word, identifier=word.lower() != misspelling.typo.lower())
            note = f"; {TEST_DATA}: not fixed, a test may misspell it on purpose; if so, {advice}"
            return Placed(start, end, misspelling.typo, misspelling.corrections, place, note)
        note = "; not fixed: its value may be relied on"
        constant = self._constant_at(start, end)
        if constant is not None and not _ambiguous(misspelling):
            first, last, value = constant
            body = _STRING_BODY.fullmatch(self.text, first, last)
            if body is not None and body.group(2) == value and value.isidentifier():
                inner = start - body.start(2)
                new = value[:inner] + misspelling.corrections[0] + value[inner + (end - start) :]
                note += f"; to migrate it, {_renames_line(value, new)}"
        return Placed(start, end, misspelling.typo, misspelling.corrections, place, note)

    def _constant_at(self, start: int, end: int) -> tuple[int, int, str] | None:
        index = bisect.bisect_right(self.strings, (start, sys.maxsize, "")) - 1
        while index >= 0:
            first, last, value = self.strings[index]
            if first <= start and end <= last:
                return first, last, value
            index -= 1
        return None

    def _word_at(self, start: int, end: int) -> str:
        """The whole word (letters, digits, ``_``) around ``start:end``."""
        first, last = start, end
        while first > 0 and (self.text[first - 1].isalnum() or self.text[first - 1] == "_"):
            first -= 1
        while last < len(self.text) and (self.text[last].isalnum() or self.text[last] == "_"):
            last += 1
        return self.text[first:last]

    def _owners_of(self) -> FileNames:
        if self._owners is None:
            self._owners = FileNames(self.file)
        return self._owners

    def _test_names(self) -> dict[int, CollectedTest]:
        """The test functions pytest collects from this file (and their classes), by the
        offset of their name."""
        if self._tests is None:
            self._tests = {}
            tests = collected_tests(self.file.path, self.file.ast_tree)
            for node in self.file.ast_tree.body:
                functions = node.body if isinstance(node, ast.ClassDef) else [node]
                for function in functions:
                    if id(function) in tests:
                        assert isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                        name = self.file.definition_name(function)
                        if name is not None:
                            owner = node if isinstance(node, ast.ClassDef) else None
                            self._tests[name[0]] = (function, owner)
        return self._tests

    def _test_function(
        self, first: int, start: int, end: int, misspelling: Misspelling, test: CollectedTest
    ) -> Placed:
        """A test function pytest collects: no caller names it, so it is renamed with
        every reference in the file, as a private name is."""
        function, owner = test
        old, typo, corrections = function.name, misspelling.typo, misspelling.corrections
        new = old[: start - first] + corrections[0] + old[end - first :]
        place = f"test {'method' if owner is not None else 'function'} `{old}`"
        names = {self.text[s:e] for s, e, kind in self.tokens if kind == tokenize.NAME}
        strings = [value for _, _, value in self.strings]
        edits, refusal = rename_test(self.file, names, strings, test, first, new)
        if refusal:
            return Placed(start, end, typo, corrections, place, f"; not fixed: {refusal}")
        return Placed(start, end, typo, corrections, place, "", Fix(tuple(edits)))

    def _allow(self, word: str, identifier: bool = False) -> str:
        """The typos configuration line that accepts ``word`` (an identifier: exactly)."""
        table = "extend-identifiers" if identifier else "extend-words"
        key = word if identifier else word.lower()
        where = _typos_table(os.path.abspath(self.file.path.parent), table)
        return f"add `{_toml_key(key)} = {_toml_string(key)}` to {where}"

    def _renamer(self) -> ScopeRenamer:
        if self._names is None:
            from lint_rules.codemod.scope_renamer import (
                ScopeRenamer,  # libcst: only for scope analysis
            )

            values = [value for _, _, value in self.strings]
            self._names = ScopeRenamer(self.file, values)
        return self._names

    def _offset(self, misspelling: Misspelling) -> int:
        starts = self.typos_line_starts
        line = min(max(misspelling.line, 1), len(starts)) - 1
        start = starts[line]
        end = starts[line + 1] if line + 1 < len(starts) else len(self.text)
        line_bytes = self.text[start:end].encode("utf-8", errors="surrogateescape")
        prefix = line_bytes[: misspelling.byte_offset].decode("utf-8", errors="replace")
        return start + len(prefix)

    def _token_at(self, start: int, end: int) -> tuple[int, int, int] | None:
        index = bisect.bisect_right(self.token_starts, start) - 1
        if index >= 0 and end <= self.tokens[index][1]:
            return self.tokens[index]
        return None


def _tokens(text: str) -> list[tuple[int, int, int]]:
    """(start, end, type) of the comment, string and name tokens, by character offset."""
    # tokenize sees universal newlines; rows map back to ``text`` through its own line starts.
    original_starts = [0, *(match.end() for match in re.finditer(r"\r\n?|\n", text))]
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
        if token.type in _PLACED_TOKENS:
            (first_row, first_col), (last_row, last_col) = token.start, token.end
            start = original_starts[first_row - 1] + first_col
            end = original_starts[last_row - 1] + last_col
            found.append((start, end, token.type))
    return found


def _docstring_ranges(
    tree: ast.Module, node_range: Callable[[ast.AST], tuple[int, int]]
) -> Iterator[tuple[int, int]]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                yield node_range(body[0].value)


_DOCTEST_PROMPT = re.compile(r"\s*(>>>|\.\.\.)(\s|$)")


def _in_doctest(text: str, string_start: int, offset: int) -> bool:
    """Whether ``offset`` lies in a doctest example (prompt lines and their expected output)."""
    lines = text[string_start:offset].split("\n")
    for line in reversed(lines[:-1]):  # the lines above the misspelling's, nearest first
        if not line.strip():
            break  # a blank line ends an example's expected output
        if _DOCTEST_PROMPT.match(line):
            return True
    return _DOCTEST_PROMPT.match(lines[-1]) is not None


def _ambiguous(misspelling: Misspelling) -> str:
    """Why a misspelling has no single correction, or "" if it has one."""
    if not misspelling.corrections:
        return "; not fixed: typos suggests no correction"
    if len(misspelling.corrections) > 1:
        return "; not fixed: typos suggests more than one correction"
    return ""


def _public_definitions(file: FileContext) -> tuple[dict[int, str], list[tuple[int, int]]]:
    """Public definitions by the offset of their name, and the ranges of imports.

    Public definitions: functions, classes and methods, and names assigned in a module
    or class body (outside functions and comprehensions, which hold locals).
    """
    node_range = file.node_range
    definitions: dict[int, str] = {}
    imports: list[tuple[int, int]] = []
    stack: list[tuple[ast.AST, bool]] = [(file.ast_tree, False)]  # (node, inside a class body)
    while stack:
        node, in_class = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                imports.append(node_range(child))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if not is_private(child.name):
                    kind = "class" if isinstance(child, ast.ClassDef) else "function"
                    kind = "method" if in_class and kind == "function" else kind
                    spelt = file.definition_name(child)
                    if spelt is not None:
                        definitions[spelt[0]] = f"public {kind}"
                if isinstance(child, ast.ClassDef):
                    stack.append((child, True))
                continue  # a function's body holds locals: scope analysis decides those
            if isinstance(child, ast.expr):
                member = "public class member" if in_class else "public module member"
                for name in _assigned_names(child):
                    if not is_private(name.id):
                        definitions[node_range(name)[0]] = member
            else:
                stack.append((child, in_class))
    return definitions, imports


_LOCAL_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _assigned_names(expression: ast.expr) -> Iterator[ast.Name]:
    """Names ``expression`` binds in the enclosing scope (not in a lambda or comprehension)."""
    stack: list[ast.AST] = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            yield node
        elif not isinstance(node, _LOCAL_SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _public_note(old: str, new: str) -> str:
    return f"; not fixed: renaming it breaks its users; to migrate it, {_renames_line(old, new)}"


def _renames_line(old: str, new: str) -> str:
    return f'add `{old} = "{new}"` to [tool.lint_rules.renames]'


NOT_OURS = "not ours to rename"
"""Advice on a name another distribution defines: accept it in the typos configuration."""
TEST_DATA = "test data"
"""Advice on a string constant of a test file: accept it in the typos configuration."""


def _typos_table(directory: str, table: str) -> str:
    """Where to add a line to ``[default.<table>]`` for files of ``directory``."""
    root = typos_root(Path(directory))
    config = typos_config(root) if root is not None else None
    if config is not None and config.name == "pyproject.toml":
        return f"pyproject.toml [tool.typos.default.{table}]"
    return f"{config.name if config is not None else 'typos.toml'} [default.{table}]"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml_string(value: str) -> str:
    import json  # a JSON string of printable text is a TOML basic string

    return json.dumps(value, ensure_ascii=False)
