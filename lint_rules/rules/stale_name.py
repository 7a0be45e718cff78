"""LR001 stale-name: uses of a name that was renamed (``[tool.lint_rules.renames]``)."""

from __future__ import annotations

import ast
import keyword
import re

from lint_rules.rule import ConfigError, Fix, Invalid, Rule, RuleOptions, Valid

_RENAMES = {"renames": {"handoff_occured": "handoff_occurred"}}  # noqa: LR001
_FROM = re.compile(r"from\s*(?:\.\s*)*")
_AS = re.compile(r"\s*as\s+")


class StaleNameRule(Rule):
    """Flags a name, or a string naming it, that `renames` maps to a new name.

    ## What it does
    Finds every use of an old name listed in `[tool.lint_rules.renames]`:
    names, attributes, imported modules and names (including `as` aliases),
    keyword arguments, definitions (functions, classes, parameters, `global`,
    `except ... as`, `case` captures), and string literals whose whole value is
    the old name.

    ## Why is this bad?
    A renamed name that lingers keeps the old spelling alive: new code copies
    it, searches miss it, and string constants (event names, dictionary keys)
    silently stop matching the renamed side. Typo checkers cannot tell that the
    old spelling is now wrong, and mypy cannot see inside strings.

    ## Example
    ```python
    if item.type == "handoff_occured":
        handoff_occured(item)
    ```

    ## Use instead
    ```python
    if item.type == "handoff_occurred":
        handoff_occurred(item)
    ```

    ## Fix safety
    Safe: the old name is replaced by the new one, in the same place, keeping
    quotes and string prefixes. A deliberate compatibility alias stays when its
    line carries `# noqa: LR001`, e.g.
    `handoff_occured = handoff_occurred  # noqa: LR001`. Only a string literal
    that spells the old name exactly is checked: not one that builds it by
    concatenation or escapes, nor an f-string.

    ## Options
    `[tool.lint_rules.renames]`: a table of `old_name = "new_name"`; both must
    be Python identifiers. With no entries the rule reports nothing.
    """

    CODE = "LR001"
    NAME = "stale-name"
    MESSAGE = "`{old}` was renamed to `{new}`"
    OPTIONS = ("renames",)

    VALID = (
        Valid("handoff_occurred(item)", options=_RENAMES),
        Valid("handoff_occured = handoff_occurred  # noqa: LR001", options=_RENAMES),
        Valid("log('handoff_occured twice')", options=_RENAMES),
        Valid("event = f'handoff_occured'", options=_RENAMES),
        Valid("handoff_occured_at = 1", options=_RENAMES),
        Valid("handoff_occured()"),
        Valid('NAMES = {"handoff_occ" "ured": 1}', options=_RENAMES),
        Valid("KEY = b'handoff_occured'", options=_RENAMES),
    )
    INVALID = (
        Invalid(
            "handoff_occured(item)",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=1, end_line=1, end_column=16,
            replacement="handoff_occurred(item)",
            options=_RENAMES,
        ),
        Invalid(
            "events.handoff_occured()",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=8, end_line=1, end_column=23,
            replacement="events.handoff_occurred()",
            options=_RENAMES,
        ),
        Invalid(
            "from agents.events import handoff_occured as on_handoff",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=27, end_line=1, end_column=42,
            replacement="from agents.events import handoff_occurred as on_handoff",
            options=_RENAMES,
        ),
        Invalid(
            "import events as handoff_occured",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=18, end_line=1, end_column=33,
            replacement="import events as handoff_occurred",
            options=_RENAMES,
        ),
        Invalid(
            "import pkg.handoff_occured.sub",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=12, end_line=1, end_column=27,
            replacement="import pkg.handoff_occurred.sub",
            options=_RENAMES,
        ),
        Invalid(
            "from .handoff_occured import emit",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=7, end_line=1, end_column=22,
            replacement="from .handoff_occurred import emit",
            options=_RENAMES,
        ),
        Invalid(
            "emit(kind, handoff_occured=True)",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=12, end_line=1, end_column=27,
            replacement="emit(kind, handoff_occurred=True)",
            options=_RENAMES,
        ),
        Invalid(
            "@hook\nasync def handoff_occured(item):\n    pass\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=2, column=11, end_line=2, end_column=26,
            replacement="@hook\nasync def handoff_occurred(item):\n    pass\n",
            options=_RENAMES,
        ),
        Invalid(
            "class handoff_occured:\n    pass\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=7, end_line=1, end_column=22,
            replacement="class handoff_occurred:\n    pass\n",
            options=_RENAMES,
        ),
        Invalid(
            "def on_item(item, *, handoff_occured=False):\n    pass\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=22, end_line=1, end_column=37,
            replacement="def on_item(item, *, handoff_occurred=False):\n    pass\n",
            options=_RENAMES,
        ),
        Invalid(
            "def reset():\n    global handoff_occured\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=2, column=12, end_line=2, end_column=27,
            replacement="def reset():\n    global handoff_occurred\n",
            options=_RENAMES,
        ),
        Invalid(
            "try:\n    run()\nexcept Error as handoff_occured:\n    pass\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=3, column=17, end_line=3, end_column=32,
            replacement="try:\n    run()\nexcept Error as handoff_occurred:\n    pass\n",
            options=_RENAMES,
        ),
        Invalid(
            "match event:\n    case [*handoff_occured]:\n        pass\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=2, column=12, end_line=2, end_column=27,
            replacement="match event:\n    case [*handoff_occurred]:\n        pass\n",
            options=_RENAMES,
        ),
        Invalid(
            "if item.type == r'handoff_occured':\n    pass\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=17, end_line=1, end_column=35,
            replacement="if item.type == r'handoff_occurred':\n    pass\n",
            options=_RENAMES,
        ),
        Invalid(
            "from events import (\n    emit,\n    handoff_occured,\n)\n",
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=3, column=5, end_line=3, end_column=20,
            replacement="from events import (\n    emit,\n    handoff_occurred,\n)\n",
            options=_RENAMES,
        ),
        Invalid(
            'HANDLERS = {"handoff_occured": on_handoff}',
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=13, end_line=1, end_column=30,
            replacement='HANDLERS = {"handoff_occurred": on_handoff}',
            options=_RENAMES,
        ),
        Invalid(
            'print(f"sent: {handoff_occured!r}")',
            message="`handoff_occured` was renamed to `handoff_occurred`",
            line=1, column=16, end_line=1, end_column=31,
            replacement='print(f"sent: {handoff_occurred!r}")',
            options=_RENAMES,
        ),
    )  # fmt: skip

    def __init__(self, options: RuleOptions) -> None:
        super().__init__(options)
        renames = options.get("renames", {})
        if not isinstance(renames, dict):
            raise ConfigError("'renames' must be a table of old_name = \"new_name\"")
        for old, new in renames.items():
            for name in (old, new):
                if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
                    raise ConfigError(f"'renames' {old!r}: {name!r} is not a Python identifier")
        self.renames: dict[str, str] = renames

    def prefilter(self, text: str) -> bool:
        return any(old in text for old in self.renames)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.renames:  # the common case, kept cheap
            self._check(node.id, *self.file.node_range(node))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self._check_at_end(node.attr, node)

    def visit_arg(self, node: ast.arg) -> None:
        if node.arg in self.renames:
            start, _ = self.file.node_range(node)
            self._check(node.arg, start, start + len(node.arg))

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and node.arg in self.renames:
            start, _ = self.file.node_range(node)
            self._check(node.arg, start, start + len(node.arg))

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._check_definition(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._check_definition(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_definition(node)

    def visit_alias(self, node: ast.alias) -> None:
        if node.asname is not None:
            self._check_at_end(node.asname, node)
        self._check_dotted(node.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module is not None:
            self._check_dotted(node.module, node)

    def visit_Global(self, node: ast.Global) -> None:
        self._check_listed(node.names, node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self._check_listed(node.names, node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name is not None and node.type is not None:
            _, type_end = self.file.node_range(node.type)
            separator = _AS.match(self.file.text, type_end)
            if separator is not None:
                self._check(node.name, separator.end(), separator.end() + len(node.name))

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name is not None:
            self._check_at_end(node.name, node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name is not None:
            self._check_at_end(node.name, node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or node.value not in self.renames:
            return
        body = self.file.string_body(node)
        if body is not None:  # not an f-string part, nor spelt with escapes or concatenation
            old, new = node.value, self.renames[node.value]
            self.report(node, self.MESSAGE.format(old=old, new=new), self.replace(body, new))

    def _check(self, name: str, start: int, end: int) -> None:
        new = self.renames.get(name)
        if new is None:
            return
        fix: Fix | None = None
        if self.file.text[start:end] == name:  # not so when spelled with non-ASCII forms
            fix = self.replace((start, end), new)
        self.report((start, end), self.MESSAGE.format(old=name, new=new), fix)

    def _check_at_end(self, name: str, node: ast.AST) -> None:
        if name in self.renames:
            _, end = self.file.node_range(node)
            self._check(name, end - len(name), end)

    def _check_definition(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> None:
        if node.name in self.renames:
            name = self.file.definition_name(node)
            if name is not None:
                self._check(node.name, *name)

    def _check_dotted(self, dotted: str, node: ast.alias | ast.ImportFrom) -> None:
        parts = dotted.split(".")
        if not any(part in self.renames for part in parts):
            return
        start, _ = self.file.node_range(node)
        if isinstance(node, ast.ImportFrom):
            prefix = _FROM.match(self.file.text, start)
            if prefix is None:
                return
            start = prefix.end()
        pattern = r"\s*\.\s*".join(f"({re.escape(part)})" for part in parts)
        match = re.compile(pattern).match(self.file.text, start)
        if match is not None:
            for index, part in enumerate(parts, start=1):
                self._check(part, match.start(index), match.end(index))

    def _check_listed(self, names: list[str], node: ast.Global | ast.Nonlocal) -> None:
        start, end = self.file.node_range(node)
        for name in names:
            if name in self.renames:
                found = re.compile(rf"\b{re.escape(name)}\b").search(self.file.text, start, end)
                if found is not None:
                    self._check(name, found.start(), found.end())
