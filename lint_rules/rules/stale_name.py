"""LR001 stale-name: uses of a name that was renamed (``[tool.lint_rules.renames]``)."""

from __future__ import annotations

import ast
import contextlib
import re
from typing import TYPE_CHECKING

from lint_rules.analysis.renames import Renames, Target, parse_renames
from lint_rules.analysis.string_values import COMPARED, LITERAL, ValuePositions, value_positions
from lint_rules.rule import Edit, FileContext, Fix, Invalid, Rule, RuleOptions, Valid

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    from lint_rules.analysis.project import Project
    from lint_rules.codemod.project_renames import BareAttributes, ProjectRenames
    from lint_rules.codemod.references import Occurrence as ReferenceOccurrence
    from lint_rules.codemod.rename import Occurrence

_RENAMES = {"renames": {"handoff_occured": "handoff_occurred"}}  # noqa: LR001
_HASH = {"renames": {"hash": "unsafe_hash"}}
_ATTRS_HASH = {"renames": {"attr:s(hash)": "unsafe_hash"}}
_EVENT = {"renames": {"strings": {"response.audio.delta": "response.output_audio.delta"}}}
_FROM = re.compile(r"from\s*(?:\.\s*)*")
_AS = re.compile(r"\s*as\s+")
STRING_DATA = "a string's text may be data rather than the name (a key, an alias, an event)"
"""Why a bare entry's fix of a string constant is unsafe."""
STRING_VALUE = (
    "the string is not compared with a field, nor passed to one whose `Literal` declares "
    "the new value: it may be data (a key, an alias, a payload)"
)
"""Why a string rename's fix outside a value position is unsafe."""
LITERAL_DECLARATION = (
    "a `Literal` declaration lists the values its field accepts: keep the old one while "
    "senders may still use it"
)
"""Why a string rename's fix of a ``Literal[...]`` member is unsafe."""
STRING_WITHHELD = (
    "rename withheld: the same text is data elsewhere ({sites}), which would stop matching"
    " the renamed values"
)
"""Why a string rename's fix in a value position is unsafe when the rename is incomplete."""
_ATTRIBUTE_FUNCTIONS = frozenset({"getattr", "hasattr", "setattr", "delattr"})


class StaleNameRule(Rule):
    """Flags a name, or a string naming it, that `renames` maps to a new name.

    ## What it does
    Finds every use of an old name listed in `[tool.lint_rules.renames]`:
    names, attributes, imported modules and names (including `as` aliases),
    keyword arguments, definitions (functions, classes, parameters, `global`,
    `except ... as`, `case` captures), and string literals whose whole value is
    the old name; and, for a string rename (`renames.strings`), string
    literals whose whole value is the old string. Names are resolved by scope
    (the compiler's symbol tables):
    a name that resolves to a builtin (`hash(x)` when `hash` was renamed) is not
    the renamed one and is left alone, and when the project defines the old
    name itself, an attribute of a module imported from outside the project
    (`optparse.OptionParser`) is another project's name and is left alone too.
    For a name the project defines, each attribute of that spelling is asked of
    the reference engine: one that leads only outside the project (`str.split`,
    `re.Pattern.split`) is left alone, one whose receiver's type is not known is
    reported without a fix.
    A qualified entry (see Options) names one binding
    instead of a spelling: a module's attribute, a class's attribute, or one
    function's keyword argument. When its module is one of the project's files,
    the project-wide reference engine judges it (see "Fix safety");
    a target of another project (a library the code uses) is resolved with
    libcst's qualified names, file by file.

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
    quotes and string prefixes, and only where the result means the same: a
    rename that would clash with a binding already there (another parameter of
    the function, a local or import of that scope, a keyword the call already
    passes, a name the scope uses from outside it) is reported with the reason
    and not fixed. `fix` then verifies each file (it must compile, and names
    must resolve as before) and renames a module-level name only if every
    module of the project that imports it is renamed in the same run.
    A deliberate compatibility alias stays when its line carries
    `# noqa: LR001`, e.g. `handoff_occured = handoff_occurred  # noqa: LR001`;
    uses of the alias are then renamed to the new name. Only a string literal
    that spells the old name exactly is checked: not one that builds it by
    concatenation or escapes, nor an f-string. A qualified entry touches only
    strings that name its binding: `__all__` entries of its module.

    A bare entry never rewrites a string's contents as safe: a string whose
    whole value is the old name may be data that only looks like it (a
    wire-format key, a field alias, an event name another program sends), so
    its fix is unsafe (`--unsafe-fixes`) and the finding says so. The strings
    that are the name itself stay safe: the entries of a module-level
    `__all__`, and the attribute name passed to `getattr`, `hasattr`, `setattr`
    or `delattr` (a bare entry renames that attribute everywhere).

    A string rename (`renames.strings`, see Options) rewrites the string as
    safe only where it is the value of the renamed thing: compared with a field
    (`event.type == "old"`, `event["type"] != "old"`, `event.type in ("old",
    ...)` with a literal tuple, list or set, a `case "old":` of `match
    event.type`), or passed to a field whose `Literal` declares the new value
    (`Event(type="old")` or `case Event(type="old")`, with `Event.type` in
    `[tool.lint_rules.literals]`: LR002's fields). Anywhere else (a dict key,
    an alias, test data, a docstring, a comparison with a plain variable) the
    finding's fix is unsafe and says why; so is a `Literal[...]` declaration
    that still lists the old value (renaming it makes the field refuse what
    senders still send). A string rename is whole or withheld: while the same
    text is data anywhere in the project (a payload in the tests, a dispatch
    table's key), renaming only the compared values would make them miss what
    is still sent, so their fixes are unsafe too and name the data sites.

    How a rename is judged: for a qualified target defined in the project, every
    occurrence of its old
    spelling in the project's files (names, attributes, keywords in calls and
    definitions, `__all__` entries, `getattr`/`hasattr`/`setattr` strings, keys
    read from a `**kwargs` dictionary, keys of a dictionary unpacked into a call
    (`f(**{"old": 1})`, through a local name, or returned by a helper:
    `Retry(**options())`), `"{self.old}"` fields of format strings,
    strings of Python source that import, call or read it, such as a test's
    `create_module("from pkg import old ...")` or `mock.patch("pkg.mod.old")`)
    is classified with ty's language server (references, then "go to
    definition" where the references are silent) as the target's, another
    thing's (another class's attribute, `str.split`, `str.format`'s keywords,
    `urllib.parse`) or unknown, with a reason. A keyword reaches the target
    through a subclass whose `__init__` hands `**kwargs` to `super().__init__`,
    or a function that passes `**options` on, only when that is all they do
    with the key. If every occurrence is known, the rename is one safe fix:
    the parameter and every call (subclass constructors and classes held in
    variables included), whichever spelling of the target is configured. If
    any is unknown, nothing of it is renamed safely: each unknown site is a
    finding with its reason ("the receiver's type is not known", "forwarded
    through `**options` of `send_from_directory`, ...", "Python source in a
    string names the target"), the target's own
    sites carry an unsafe fix (`--unsafe-fixes` renames the known part), and
    the summary names the withheld target. After `fix`, `check` reports exactly
    what was not renamed, and exits 1 while anything is left. The engine starts
    only when an old spelling occurs in the files, once per run for every
    target.

    ## Options
    `[tool.lint_rules.renames]`: a table of `old = "new"` (and a `strings`
    table, below), where `new` is a Python identifier and `old` is one of:

    - `old_name`: every binding and use of that spelling (except builtins),
      and strings whose whole value is it;
    - `"module:name"`: the attribute `name` of `module` (a function, class or
      variable): its definition in that module, its imports
      (`from module import name`, absolute or relative), its uses through them
      and `module.name`; an `as` alias keeps its own name;
    - `"module:Class.name"`: a class attribute or method: its definition in
      the class, `self.name`/`cls.name` inside the class and `Class.name`; on
      any other receiver the class is not known, and the finding is reported
      without a fix;
    - `"module:function(name)"` (or `"module:Class.method(name)"`): a keyword
      argument: the parameter and its uses inside that function, and
      `name=` in calls that resolve to that function.

    ```toml
    [tool.lint_rules.renames]
    handoff_occured = "handoff_occurred"
    "attr:s(hash)" = "unsafe_hash"
    "agents.run:Runner.run_streamed(max_turn)" = "max_turns"
    "requests.utils:get_unicode_from_response" = "text_of"
    "agents.items:RunItem.raw_item" = "raw"
    ```

    String values go in its `strings` table, `"old" = "new"` with any text
    (dots, dashes, spaces): both non-empty and different, and no new string
    renamed again; anything else is a configuration error naming the entry.

    ```toml
    [tool.lint_rules.renames.strings]
    "response.audio.delta" = "response.output_audio.delta"
    ```

    With no entries the rule reports nothing.
    """

    CODE = "LR001"
    NAME = "stale-name"
    MESSAGE = "`{old}` was renamed to `{new}`"
    OPTIONS = ("renames",)
    READS = ("literals",)

    VALID = (
        Valid("handoff_occurred(item)", options=_RENAMES),
        Valid('if event.type == "response.audio.delta.x":\n    pass\n', options=_EVENT),
        Valid("handoff_occured = handoff_occurred  # noqa: LR001", options=_RENAMES),
        Valid("log('handoff_occured twice')", options=_RENAMES),
        Valid("event = f'handoff_occured'", options=_RENAMES),
        Valid("handoff_occured_at = 1", options=_RENAMES),
        Valid("handoff_occured()"),
        Valid('NAMES = {"handoff_occ" "ured": 1}', options=_RENAMES),
        Valid("KEY = b'handoff_occured'", options=_RENAMES),
        Valid("def digest(value):\n    return hash(value)\n", options=_HASH),
        Valid("def key(value, hash=None):\n    return hash\n", options=_ATTRS_HASH),
    )
    INVALID = (
        Invalid(
            'if event.type == "response.audio.delta":\n    play(event)\n',
            message="`response.audio.delta` was renamed to `response.output_audio.delta`",
            line=1, column=18, end_line=1, end_column=40,
            replacement='if event.type == "response.output_audio.delta":\n    play(event)\n',
            options=_EVENT,
        ),
        Invalid(
            'HANDLERS = {"response.audio.delta": play}\n',
            message=(
                "`response.audio.delta` was renamed to `response.output_audio.delta`; "
                f"unsafe fix: {STRING_VALUE}"
            ),
            line=1, column=13, end_line=1, end_column=35,
            replacement='HANDLERS = {"response.output_audio.delta": play}\n',
            options=_EVENT,
        ),
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
            message="`handoff_occured` was renamed to `handoff_occurred`; unsafe fix: "
            + STRING_DATA,
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
            message="`handoff_occured` was renamed to `handoff_occurred`; unsafe fix: "
            + STRING_DATA,
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
        Invalid(
            "import attr\n\n@attr.s(hash=True)\nclass Point:\n    x = attr.ib()\n",
            message="`attr:s(hash)` was renamed to `unsafe_hash`",
            line=3, column=9, end_line=3, end_column=13,
            replacement=(
                "import attr\n\n@attr.s(unsafe_hash=True)\nclass Point:\n    x = attr.ib()\n"
            ),
            options=_ATTRS_HASH,
        ),
        Invalid(
            "emit(handoff_occurred=1, handoff_occured=None)\n",
            message=(
                "`handoff_occured` was renamed to `handoff_occurred`; not fixed: "
                "the call already passes `handoff_occurred`"
            ),
            line=1, column=26, end_line=1, end_column=41,
            replacement=None,
            options=_RENAMES,
        ),
    )  # fmt: skip

    def __init__(self, options: RuleOptions, project: Project | None = None) -> None:
        super().__init__(options)
        self._project = project
        self.renames = parse_renames(options.get("renames", {}))
        self._qualified = _qualified(self.renames)
        self.old_names = self.renames.old_names
        self._occurrences: list[Occurrence] = []
        self._keyword_clashes: dict[int, str] = {}
        self._scopes: list[ast.AST] = []
        """Function, class, lambda and comprehension nodes of the file, in any order."""
        self._module_aliases: dict[str, str] = {}
        """Local name -> module, for every ``import module [as name]`` of the file."""
        self._name_strings_of: object = None
        self._name_string_ids: set[int] = set()
        self._positions_of: object = None
        self._positions = ValuePositions()
        self._declared, self._sources = _declared_values(
            options.get("literals", {}) if self.renames.strings else {}, project
        )

    def prefilter(self, text: str) -> bool:
        return any(old in text for old in self.old_names) or any(
            old in text for old in self.renames.strings
        )

    def admits(self, file: FileContext) -> bool:
        """``prefilter``, and no when every spelling the file holds is a qualified target's
        that the reference engine's plan judged (made already), and the plan read this very
        text and found only other things' occurrences there (``str(text).split`` for a
        module's ``split``): the file would have no finding, and is not parsed for it."""
        text = file.text
        if not self.prefilter(text):
            return False
        project, root = file.project, file.root
        if project is None or root is None or any(old in text for old in self.renames.strings):
            return True
        present = [old for old in self.old_names if old in text]
        if any(old in self.renames.bare for old in present):
            return True
        judge = _qualified_judge(project, root, self._qualified)
        if not all(judge.handles_every(old) for old in present):
            return True
        project.note_read()  # the plan read the other files of the project
        return not judge.quiet(file.path, text)

    def dependencies(self) -> list[Path]:
        return self._sources

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.old_names:  # the common case, kept cheap
            start, end = self.file.node_range(node)
            kind = "load" if isinstance(node.ctx, ast.Load) else "name"
            self._check(node.id, start, end, kind, start)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.old_names:
            _, end = self.file.node_range(node)
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            self._check(node.attr, end - len(node.attr), end, "attribute", receiver=receiver)

    def visit_arg(self, node: ast.arg) -> None:
        if node.arg in self.old_names:
            start, _ = self.file.node_range(node)
            self._check(node.arg, start, start + len(node.arg), "name", start)

    def visit_Call(self, node: ast.Call) -> None:
        # Visited before its keywords: note the ones a bare rename would duplicate.
        passed = {keyword.arg for keyword in node.keywords}
        for argument in node.keywords:
            new = self.renames.bare.get(argument.arg) if argument.arg is not None else None
            if new is not None and new in passed:
                self._keyword_clashes[id(argument)] = f"the call already passes `{new}`"

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and node.arg in self.old_names:
            start, _ = self.file.node_range(node)
            clash = self._keyword_clashes.get(id(node))
            if clash is not None:
                new = self.renames.bare[node.arg]
                message = self.MESSAGE.format(old=node.arg, new=new)
                self.report((start, start + len(node.arg)), f"{message}; not fixed: {clash}")
                return
            self._check(node.arg, start, start + len(node.arg), "keyword")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scopes.append(node)
        self._check_definition(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scopes.append(node)
        self._check_definition(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scopes.append(node)
        self._check_definition(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._scopes.append(node)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._scopes.append(node)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._scopes.append(node)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._scopes.append(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._scopes.append(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self._module_aliases[local] = alias.name if alias.asname else local

    def visit_alias(self, node: ast.alias) -> None:
        if node.asname is not None:
            self._check_at_end(node.asname, node, anchored=True)
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
                start = separator.end()
                anchor = self.file.node_range(node)[0]
                self._check(node.name, start, start + len(node.name), "name", anchor)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name is not None:
            self._check_at_end(node.name, node, anchored=True)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name is not None:
            self._check_at_end(node.name, node, anchored=True)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str):
            return
        if node.value in self.renames.strings:
            self._check_string(node)
            return
        if node.value not in self.renames.bare:
            return
        body = self.file.string_body(node)
        if body is not None:  # not an f-string part, nor spelt with escapes or concatenation
            old, new = node.value, self.renames.bare[node.value]
            message = self.MESSAGE.format(old=old, new=new)
            if id(node) in self._name_strings():
                self.report(node, message, self.replace(body, new))
            else:
                fix = self.replace(body, new, safe=False)
                self.report(node, f"{message}; unsafe fix: {STRING_DATA}", fix)

    def _check_string(self, node: ast.Constant) -> None:
        """A string rename's old value: safe where it is a field's value, else unsafe."""
        body = self.file.string_body(node)
        if body is None:  # an f-string part, or spelt with escapes or concatenation
            return
        old = str(node.value)
        new = self.renames.strings[old]
        message = self.MESSAGE.format(old=old, new=new)
        if self._positions_of is not self.file:
            self._positions_of = self.file
            self._positions = value_positions(self.file.ast_tree, self._declared)
        kind = self._positions.kinds.get(id(node))
        passed = self._positions.passed.get(id(node))
        if kind == LITERAL:
            fix = self.replace(body, new, safe=False)
            self.report(node, f"{message}; unsafe fix: {LITERAL_DECLARATION}", fix)
        elif kind == COMPARED or (passed is not None and new in passed):
            data = self._string_data().get(old, ())
            if data:
                sites = ", ".join(data[:3]) + (
                    f" and {len(data) - 3} more" if len(data) > 3 else ""
                )
                withheld = STRING_WITHHELD.format(sites=sites)
                self.report(
                    node, f"{message}; unsafe fix: {withheld}", self.replace(body, new, False)
                )
            else:
                self.report(node, message, self.replace(body, new))
        else:
            fix = self.replace(body, new, safe=False)
            self.report(node, f"{message}; unsafe fix: {STRING_VALUE}", fix)

    def _wire_fields(self) -> Mapping[str, list[str]]:
        """Bare old name -> the serialising model fields it names (```Class.field`
        (path:line)``): a field of a pydantic model or a ``TypedDict`` without an alias, whose
        name is the key of the data it is parsed from and dumped to."""
        spellings = frozenset(self.renames.bare)
        project = self.file.project
        root = self.file.root
        if project is None or root is None:
            return _model_fields([(self.file.path, self.file.ast_tree)], spellings, None)
        project.note_read()

        def build() -> Mapping[str, list[str]]:
            markers = (*spellings, *_MODEL_BASES)
            trees = _parsed(project.files(), dict.fromkeys(markers, ""))
            return _model_fields(trees, spellings, root)

        return project.shared(("LR001", "wire", spellings), build)

    def _string_data(self) -> Mapping[str, list[str]]:
        """Old value of each string rename -> where the project holds its text as data
        (``path:line``): not in a value position, or in a ``Literal`` declaration. A string
        rename is applied whole or not at all: renaming the compared values while a payload,
        a dispatch table or test data keeps the old text changes what matches."""
        strings = self.renames.strings
        project = self.file.project
        root = self.file.root
        if project is None or root is None:
            return _data_of([(self.file.path, self.file.ast_tree)], strings, self._declared, None)
        project.note_read()  # the verdict depends on the other files of the project
        declared = self._declared

        def build() -> Mapping[str, list[str]]:
            return _data_of(_parsed(project.files(), strings), strings, declared, root)

        return project.shared(("LR001", "strings", tuple(sorted(strings.items()))), build)

    def _name_strings(self) -> set[int]:
        """The string constants of this file that are names, not data (``id`` of each)."""
        if self._name_strings_of is not self.file:
            self._name_strings_of, self._name_string_ids = (
                self.file,
                name_strings(self.file.ast_tree),
            )
        return self._name_string_ids

    def check_file(self) -> None:
        # The rename planner and the reference engine, only for a file the prefilter
        # admits: a check of files without an old spelling never imports them.
        from lint_rules.codemod.references import OTHER, UNKNOWN
        from lint_rules.codemod.rename import FileOccurrences, plan_renames

        found = FileOccurrences(self._occurrences, self._scopes, self._module_aliases)
        self._occurrences, self._scopes, self._module_aliases = [], [], {}
        self._keyword_clashes = {}
        renames = self.renames
        judge = self._judge()
        if judge is not None:
            renames = self._check_judged(judge)
        attributes: dict[str, dict[tuple[int, int], ReferenceOccurrence]] = {}
        for renaming in plan_renames(self.file, renames, found):
            where = (renaming.occurrence.start, renaming.occurrence.end)
            message = self.MESSAGE.format(old=renaming.old, new=renaming.new)
            verdict = self._attribute_verdict(renaming.occurrence, attributes)
            if verdict is not None and verdict.verdict == OTHER:
                continue  # `text.split(...)` on a `str`: not the project's `split`
            wire = self._wire_fields().get(renaming.old) if renaming.old in renames.bare else None
            if wire:
                self.report(where, f"{message}; not fixed: {WIRE_FIELD.format(field=wire[0])}")
            elif verdict is not None and verdict.verdict == UNKNOWN:
                self.report(where, f"{message}; not fixed: {verdict.reason}")
            elif renaming.reason:
                self.report(where, f"{message}; not fixed: {renaming.reason}")
            else:
                fix = Fix((renaming.edit,)) if renaming.edit is not None else None
                self.report(where, message, fix)

    def _attribute_verdict(
        self,
        occurrence: Occurrence,
        cache: dict[str, dict[tuple[int, int], ReferenceOccurrence]],
    ) -> ReferenceOccurrence | None:
        """For an attribute spelt like a bare rename of a name the project defines: what
        the reference engine says it is (``None``: not such an attribute)."""
        old = occurrence.old
        root = self.file.root
        if occurrence.kind != "attribute" or old not in self.renames.bare or root is None:
            return None
        project = self.file.project
        defined = project.index.definitions
        if old not in defined and self.renames.bare[old] not in defined:
            return None  # a library's name that moved: its module's attribute is renamed
        if old not in cache:
            spellings = self._bare_defined(defined)

            judge = _bare_judge(project, root, spellings)
            cache[old] = judge.verdicts(self.file.path, self.file.text, old)
        line, column = self.file.position(occurrence.end - len(old))
        return cache[old].get((line, column - 1))

    def _bare_defined(self, defined: frozenset[str]) -> frozenset[str]:
        """The bare renames of a name the project defines, under its old or (once
        renamed) its new name: their attributes are judged by the reference engine."""
        return frozenset(
            old for old, new in self.renames.bare.items() if old in defined or new in defined
        )

    def _judge(self) -> ProjectRenames | None:
        """The reference engine's judge of the project's qualified targets, when this file
        holds one of their spellings (``None``: outside a project, or none here)."""
        targets = self.renames.targets
        root = self.file.root
        if not targets or root is None or not any(old in self.file.text for old in targets):
            return None
        project = self.file.project
        project.note_read()  # the verdicts depend on the other files of the project
        return _qualified_judge(project, root, self._qualified)

    def prepare_project(self, paths: Sequence[Path]) -> None:
        """Before worker processes start: build the reference engine's verdicts once, if
        an old spelling occurs in the files (each worker would start the engine again)."""
        project = self._project
        root = project.root if project is not None else None
        if project is None or root is None or not self.old_names:
            return
        present: set[str] = set()
        for path in paths:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            present.update(old for old in self.old_names if old in text)
        if any(old in self.renames.targets for old in present):
            _qualified_judge(project, root, self._qualified).prepare(project.map_files)
        bare = {old for old in present if old in self.renames.bare}
        if bare:
            spellings = self._bare_defined(project.index.definitions)
            if bare & spellings:
                _bare_judge(project, root, spellings).prepare()

    def _check_judged(self, judge: ProjectRenames) -> Renames:
        """Report the judged targets' sites in this file; the targets left to the per-file
        resolver (a library's, renamed in its users) are returned."""
        starts = self.file.line_starts
        for site in judge.sites(self.file.path, self.file.text, self.file.ast_tree):
            start = starts[site.line - 1] + site.column
            end = start + len(site.old)
            message = self.MESSAGE.format(old=site.key, new=site.new)
            spelt = self.file.text[start:end] == site.old
            if site.renamed and spelt:
                fix = Fix((Edit(start, end, site.new),), site.safe)
                self.report((start, end), f"{message}; {site.note}" if site.note else message, fix)
            else:
                note = site.note or "its source spells the name otherwise"
                self.report((start, end), f"{message}; not renamed: {note}")
        kept: dict[str, tuple[Target, ...]] = {}
        for old, found in self.renames.targets.items():
            left = tuple(target for target in found if not judge.handles(target))
            if left:
                kept[old] = left
        return Renames(self.renames.bare, kept)

    def _check(
        self,
        name: str,
        start: int,
        end: int,
        kind: str = "name",
        anchor: int | None = None,
        receiver: str | None = None,
    ) -> None:
        if name in self.old_names:
            from lint_rules.codemod.rename import Occurrence

            self._occurrences.append(Occurrence(name, start, end, kind, anchor, receiver))

    def _check_at_end(
        self, name: str, node: ast.AST, kind: str = "name", anchored: bool = False
    ) -> None:
        if name in self.old_names:
            start, end = self.file.node_range(node)
            self._check(name, end - len(name), end, kind, start if anchored else None)

    def _check_definition(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> None:
        if node.name in self.old_names:
            name = self.file.definition_name(node)
            if name is not None:
                anchor = self.file.offset(node.lineno, node.col_offset)
                self._check(node.name, name[0], name[1], "name", anchor)

    def _check_dotted(self, dotted: str, node: ast.alias | ast.ImportFrom) -> None:
        parts = dotted.split(".")
        if not any(part in self.old_names for part in parts):
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
                self._check(part, match.start(index), match.end(index), "import")

    def _check_listed(self, names: list[str], node: ast.Global | ast.Nonlocal) -> None:
        start, end = self.file.node_range(node)
        for name in names:
            if name in self.old_names:
                found = re.compile(rf"\b{re.escape(name)}\b").search(self.file.text, start, end)
                if found is not None:
                    self._check(name, found.start(), found.end(), "declaration")


def name_strings(tree: ast.Module) -> set[int]:
    """The ``id`` of each string constant of ``tree`` that is a name rather than data: the
    entries of a module-level ``__all__`` (assigned, extended or appended to) and the
    attribute argument of ``getattr``/``hasattr``/``setattr``/``delattr``."""
    found: set[int] = set()
    for statement in tree.body:
        pending: list[ast.expr] = []
        if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if statement.value is not None and any(
                isinstance(target, ast.Name) and target.id == "__all__" for target in targets
            ):
                pending.append(statement.value)
        elif (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
            and isinstance(statement.value.func.value, ast.Name)
            and statement.value.func.value.id == "__all__"
        ):
            pending.extend(statement.value.args)
        while pending:  # a string, a list or tuple of them, or a sum of those
            part = pending.pop()
            if isinstance(part, ast.Constant):
                found.add(id(part))
            elif isinstance(part, (ast.List, ast.Tuple)):
                found.update(id(element) for element in part.elts)
            elif isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
                pending.extend((part.left, part.right))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in _ATTRIBUTE_FUNCTIONS
            and len(node.args) >= 2
        ):
            found.add(id(node.args[1]))
    return found


_MODEL_BASES = frozenset({"BaseModel", "RootModel", "TypedDict", "BaseSettings"})
"""Classes whose subclasses' field names are their data's keys (pydantic, ``typing``)."""
WIRE_FIELD = (
    "rename withheld: {field}, a field of a serialising model, is spelt as its data's"
    " key: renaming it changes what is parsed and dumped (give it an `alias` first)"
)
"""Why a bare rename of a pydantic or ``TypedDict`` field is not made."""


def _model_fields(
    trees: Sequence[tuple[Path, ast.Module]], spellings: frozenset[str], root: Path | None
) -> dict[str, list[str]]:
    """Old spelling -> ```Class.field` (path:line)`` of each field so spelt, without an
    alias, of a class that subclasses a pydantic model or a ``TypedDict`` (by name, through
    the project's classes: over-approximate, it only withholds)."""
    classes = [
        (path, node)
        for path, tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    models = set(_MODEL_BASES)
    changed = True
    while changed:  # classes of the project that inherit a model, by their names
        changed = False
        for _, node in classes:
            if node.name not in models and any(_base_name(b) in models for b in node.bases):
                models.add(node.name)
                changed = True
    found: dict[str, list[str]] = {}
    for path, node in classes:
        if not any(_base_name(b) in models for b in node.bases):
            continue
        for statement in node.body:
            target, value = None, None
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                target, value = statement.target.id, statement.value
            elif (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
            ):
                target, value = statement.targets[0].id, statement.value
            if target not in spellings or _aliased(value):
                continue
            name = path
            if root is not None:
                with contextlib.suppress(ValueError):
                    name = path.resolve().relative_to(root.resolve())
            where = f"`{node.name}.{target}` ({name.as_posix()}:{statement.lineno})"
            found.setdefault(target, []).append(where)
    return found


def _base_name(base: ast.expr) -> str:
    if isinstance(base, ast.Subscript):  # `TypedDict[...]`, `RootModel[int]`
        base = base.value
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else ""


def _aliased(value: ast.expr | None) -> bool:
    """Whether a field's value is ``Field(..., alias=...)`` (or a validation/serialisation
    alias): its data's key is spelt there, not by the attribute's name."""
    return isinstance(value, ast.Call) and any(
        keyword.arg in ("alias", "validation_alias", "serialization_alias")
        for keyword in value.keywords
    )


def _parsed(files: Sequence[Path], strings: Mapping[str, str]) -> list[tuple[Path, ast.Module]]:
    """The files holding an old value's text, parsed (those that do not parse are left out:
    they are LR000 findings)."""
    parsed = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if any(old in text for old in strings):
            try:
                parsed.append((path, ast.parse(text)))
            except (SyntaxError, ValueError):
                continue
    return parsed


def _data_of(
    trees: Sequence[tuple[Path, ast.Module]],
    strings: Mapping[str, str],
    declared: Mapping[str, Mapping[str, frozenset[str]]],
    root: Path | None,
) -> dict[str, list[str]]:
    """Old value -> ``path:line`` of each occurrence of its text that is data (see
    ``StaleNameRule._string_data``)."""
    data: dict[str, list[tuple[str, int]]] = {}
    for path, tree in trees:
        positions = value_positions(tree, declared)
        parts = {
            id(value)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for value in node.values
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            new = strings.get(node.value)
            if new is None or id(node) in parts:
                continue
            kind = positions.kinds.get(id(node))
            passed = positions.passed.get(id(node))
            if kind == COMPARED or (kind != LITERAL and passed is not None and new in passed):
                continue
            name = path
            if root is not None:
                with contextlib.suppress(ValueError):
                    name = path.resolve().relative_to(root.resolve())
            data.setdefault(node.value, []).append((name.as_posix(), node.lineno))
    return {old: [f"{f}:{n}" for f, n in sorted(sites)] for old, sites in data.items()}


def _declared_values(
    literals: object, project: Project | None
) -> tuple[Mapping[str, Mapping[str, frozenset[str]]], list[Path]]:
    """Class -> attribute -> the values its ``Literal`` declares, from LR002's
    ``literals`` table (read only when there are string renames), and the sources read."""
    if not literals:
        return {}, []
    from lint_rules.analysis.declarations import Declarations
    from lint_rules.analysis.literals import parse_literals

    declarations = project.declarations if project is not None else Declarations(None)
    declared: dict[str, dict[str, frozenset[str]]] = {}
    sources: set[Path] = set()
    for field in parse_literals(literals, declarations):
        sources.update(field.sources)
        if field.owner is not None:
            attributes = declared.setdefault(field.owner, {})
            known = attributes.get(field.attribute, frozenset())
            attributes[field.attribute] = known | field.values
    return declared, sorted(sources)


def _qualified_judge(project: Project, root: Path, qualified: _Qualified) -> ProjectRenames:
    """The project's judge of the qualified targets (built once per ``Project``)."""
    every, key = qualified

    def build() -> ProjectRenames:
        from lint_rules.codemod.project_renames import project_renames  # only when needed

        return project_renames(root, project.files(), every)

    return project.shared(key, build)


_Qualified = tuple[tuple[Target, ...], tuple[object, ...]]
"""The qualified targets of a ``renames`` table, and the key of their judge in
``Project.shared`` (``_qualified``)."""


def _qualified(renames: Renames) -> _Qualified:
    every = tuple(target for found in renames.targets.values() for target in found)
    return every, ("LR001", tuple((t.key, t.new) for t in every))


def _bare_judge(project: Project, root: Path, spellings: frozenset[str]) -> BareAttributes:
    """The project's judge of attributes spelt like bare renames (built once)."""

    def build() -> BareAttributes:
        from lint_rules.codemod.project_renames import bare_attributes

        return bare_attributes(root, project.files(), spellings)

    return project.shared(("LR001", "bare", spellings), build)
