"""LR001 stale-name: uses of a name that was renamed (``[tool.lint_rules.renames]``)."""

from __future__ import annotations

import ast
import bisect
import builtins
import keyword
import re
import symtable
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar, cast

from lint_rules.analysis.consistency import absolute_module, module_name
from lint_rules.rule import ConfigError, FileContext, Invalid, Rule, RuleOptions, Valid

if TYPE_CHECKING:
    import libcst
    from libcst.metadata import Access, BaseAssignment, CodeRange, Scope

_Node = TypeVar("_Node", bound="libcst.CSTNode")

_RENAMES = {"renames": {"handoff_occured": "handoff_occurred"}}  # noqa: LR001
_HASH = {"renames": {"hash": "unsafe_hash"}}
_ATTRS_HASH = {"renames": {"attr:s(hash)": "unsafe_hash"}}
_FROM = re.compile(r"from\s*(?:\.\s*)*")
_AS = re.compile(r"\s*as\s+")


class StaleNameRule(Rule):
    """Flags a name, or a string naming it, that `renames` maps to a new name.

    ## What it does
    Finds every use of an old name listed in `[tool.lint_rules.renames]`:
    names, attributes, imported modules and names (including `as` aliases),
    keyword arguments, definitions (functions, classes, parameters, `global`,
    `except ... as`, `case` captures), and string literals whose whole value is
    the old name. Names are resolved by scope (the compiler's symbol tables):
    a name that resolves to a builtin (`hash(x)` when `hash` was renamed) is not
    the renamed one and is left alone, and when the project defines the old
    name itself, an attribute of a module imported from outside the project
    (`optparse.OptionParser`) is another project's name and is left alone too.
    A qualified entry (see Options) names one binding
    instead of a spelling: a module's attribute, a class's attribute, or one
    function's keyword argument (resolved with libcst's qualified names).

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
    concatenation or escapes, nor an f-string. A qualified entry never touches
    strings.

    ## Options
    `[tool.lint_rules.renames]`: a table of `old = "new"`, where `new` is a
    Python identifier and `old` is one of:

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

    With no entries the rule reports nothing.
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
        Valid("def digest(value):\n    return hash(value)\n", options=_HASH),
        Valid("def key(value, hash=None):\n    return hash\n", options=_ATTRS_HASH),
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

    def __init__(self, options: RuleOptions) -> None:
        super().__init__(options)
        renames = options.get("renames", {})
        if not isinstance(renames, dict):
            raise ConfigError("'renames' must be a table of old_name = \"new_name\"")
        self.renames: dict[str, str] = {}
        """Bare names: every binding and use of the old spelling."""
        self.targets: dict[str, list[Target]] = {}
        """Qualified targets, by the name that is renamed."""
        for key, new in renames.items():
            if not isinstance(new, str) or not _is_identifier(new):
                raise ConfigError(f"'renames' {key!r}: {new!r} is not a Python identifier")
            target = parse_target(str(key), new)
            if target.kind == "name":
                self.renames[target.old] = new
            else:
                self.targets.setdefault(target.old, []).append(target)
        self._sites: list[tuple[str, int, int, str, int | None]] = []
        """Occurrences: (old, start, end, kind, offset of the node that holds it)."""
        self._keyword_clashes: dict[int, str] = {}
        self._scopes: list[ast.AST] = []
        """Function, class, lambda and comprehension nodes of the file, in any order."""
        self._module_aliases: dict[str, str] = {}
        """Local name -> module, for every ``import module [as name]`` of the file."""
        self._receivers: dict[int, str] = {}
        self._site_receivers: dict[int, str] = {}
        """The receiver's name of ``name.old`` attribute sites, by the site's end."""

    def prefilter(self, text: str) -> bool:
        return any(old in text for old in self.renames) or any(old in text for old in self.targets)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.renames or node.id in self.targets:  # the common case, kept cheap
            start, end = self.file.node_range(node)
            kind = "load" if isinstance(node.ctx, ast.Load) else "name"
            self._check(node.id, start, end, kind, start)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in self.renames or node.attr in self.targets:
            _, end = self.file.node_range(node)
            if isinstance(node.value, ast.Name):
                self._receivers[end] = node.value.id
            self._check(node.attr, end - len(node.attr), end, "attribute")

    def visit_arg(self, node: ast.arg) -> None:
        if node.arg in self.renames or node.arg in self.targets:
            start, _ = self.file.node_range(node)
            self._check(node.arg, start, start + len(node.arg), "name", start)

    def visit_Call(self, node: ast.Call) -> None:
        # Visited before its keywords: note the ones a bare rename would duplicate.
        passed = {keyword.arg for keyword in node.keywords}
        for argument in node.keywords:
            new = self.renames.get(argument.arg) if argument.arg is not None else None
            if new is not None and new in passed:
                self._keyword_clashes[id(argument)] = f"the call already passes `{new}`"

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg is not None and (node.arg in self.renames or node.arg in self.targets):
            start, _ = self.file.node_range(node)
            clash = self._keyword_clashes.get(id(node))
            if clash is not None:
                new = self.renames[node.arg]
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
        if not isinstance(node.value, str) or node.value not in self.renames:
            return
        body = self.file.string_body(node)
        if body is not None:  # not an f-string part, nor spelt with escapes or concatenation
            old, new = node.value, self.renames[node.value]
            self.report(node, self.MESSAGE.format(old=old, new=new), self.replace(body, new))

    def check_file(self) -> None:
        sites, self._sites = self._sites, []
        scopes, self._scopes = self._scopes, []
        self._keyword_clashes = {}
        imports, self._module_aliases = self._module_aliases, {}
        self._site_receivers, self._receivers = self._receivers, {}
        if not sites:
            return
        symbols: Symbols | None = None
        resolver: Resolver | bool | None = False  # False: not built yet
        for old, start, end, kind, anchor in sites:
            spelt = self.file.text[start:end] == old  # not so when spelt with non-ASCII forms
            new = self.renames.get(old)
            if new is not None:  # a bare name: the stdlib's symbol tables decide, cheaply
                reason: str | None = ""
                if kind == "attribute" and self._elsewhere(old, end, imports):
                    continue  # e.g. `optparse.OptionParser` when the project defines its own
                # Without the new name in the file nothing can clash with it, and a name
                # that is not a builtin's cannot resolve to one: no scope analysis needed.
                simple = new not in self.file.text and old not in _BUILTINS
                if kind in ("name", "load") and anchor is not None and not simple:
                    if symbols is None:
                        symbols = Symbols(self.file, set(self.renames), scopes)
                    reason = symbols.decide(old, new, anchor, kind == "load")
                if reason is None:
                    continue  # e.g. the builtin of that name: not what was renamed
                message = self.MESSAGE.format(old=old, new=new)
                if reason:
                    self.report((start, end), f"{message}; not fixed: {reason}")
                else:
                    fix = self.replace((start, end), new) if spelt else None
                    self.report((start, end), message, fix)
                continue
            if resolver is False:
                resolver = self._resolver()
            if not isinstance(resolver, Resolver):
                continue
            for decision in resolver.decide(old, start, kind, self.renames, self.targets):
                message = self.MESSAGE.format(old=decision.old, new=decision.new)
                if decision.reason:
                    self.report((start, end), f"{message}; not fixed: {decision.reason}")
                else:
                    fix = self.replace((start, end), decision.new) if spelt else None
                    self.report((start, end), message, fix)
                break

    def _elsewhere(self, old: str, end: int, imports: Mapping[str, str]) -> bool:
        """Whether ``receiver.old`` reads another project's ``old``: the receiver is a
        module imported from outside the project, and the project defines ``old`` itself
        (then the bare name means the project's own; otherwise, e.g. a renamed function
        of a library, the attribute on that library's module is exactly what moved)."""
        receiver = self._site_receivers.get(end)
        module = imports.get(receiver) if receiver is not None else None
        if module is None:
            return False
        project = self.file.project.index  # read once per run, and only when needed here
        return module.split(".")[0] not in project.packages and old in project.definitions

    def _resolver(self) -> Resolver | None:
        """libcst's scope and qualified names, for qualified targets; ``None`` when no
        target can apply to this file (it names none of their modules or owners)."""
        text = self.file.text
        module = module_name(self.file.path) if self.file.path.suffix == ".py" else ""
        words = {
            word
            for targets in self.targets.values()
            for target in targets
            for word in (*target.module.split("."), target.owner.split(".")[0])
            if word
        }
        own = any(target.module == module for ts in self.targets.values() for target in ts)
        if not own and not any(word in text for word in words):
            return None
        try:
            return Resolver(self.file)
        except Exception:  # libcst cannot parse what ast can: qualified targets are skipped
            return None

    def _check(
        self, name: str, start: int, end: int, kind: str = "name", anchor: int | None = None
    ) -> None:
        if name in self.renames or name in self.targets:
            self._sites.append((name, start, end, kind, anchor))

    def _check_at_end(
        self, name: str, node: ast.AST, kind: str = "name", anchored: bool = False
    ) -> None:
        if name in self.renames or name in self.targets:
            start, end = self.file.node_range(node)
            self._check(name, end - len(name), end, kind, start if anchored else None)

    def _check_definition(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
    ) -> None:
        if node.name in self.renames or node.name in self.targets:
            name = self.file.definition_name(node)
            if name is not None:
                anchor = self.offset_of(node)
                self._check(node.name, name[0], name[1], "name", anchor)

    def _check_dotted(self, dotted: str, node: ast.alias | ast.ImportFrom) -> None:
        parts = dotted.split(".")
        if not any(part in self.renames or part in self.targets for part in parts):
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

    def offset_of(self, node: ast.stmt) -> int:
        return self.file.offset(node.lineno, node.col_offset)

    def _check_listed(self, names: list[str], node: ast.Global | ast.Nonlocal) -> None:
        start, end = self.file.node_range(node)
        for name in names:
            if name in self.renames or name in self.targets:
                found = re.compile(rf"\b{re.escape(name)}\b").search(self.file.text, start, end)
                if found is not None:
                    self._check(name, found.start(), found.end(), "declaration")


_COMPREHENSIONS = {
    ast.ListComp: "listcomp",
    ast.SetComp: "setcomp",
    ast.DictComp: "dictcomp",
    ast.GeneratorExp: "genexpr",
}


class Symbols:
    """The stdlib's symbol tables of one file (``symtable``: the compiler's own scope
    analysis, far cheaper than libcst's), and which table each occurrence is in."""

    def __init__(self, file: FileContext, names: set[str], scopes: Sequence[ast.AST]) -> None:
        self.file = file
        self.module = symtable.symtable(file.text, str(file.path), "exec")
        self.parent: dict[int, symtable.SymbolTable] = {}
        self._regions: list[tuple[int, int, list[tuple[int, int]], symtable.SymbolTable]] = []
        self._starts: list[int] = []
        self.aliases: set[tuple[str, str]] = set()
        """``old = new`` assignments at module or class level."""
        self._place(scopes)
        self._note_aliases(file.ast_tree.body, names)
        for node in scopes:
            if isinstance(node, ast.ClassDef):
                self._note_aliases(node.body, names)

    def decide(self, old: str, new: str, anchor: int, load: bool) -> str | None:
        """``None``: not the renamed binding (a builtin); ``""``: rename; else why not."""
        table = self.table_at(anchor)
        try:
            symbol = table.lookup(old)
        except KeyError:
            return ""
        bound = table
        if symbol.is_declared_global() or (load and symbol.is_global() and not symbol.is_local()):
            bound = self.module
            try:
                at_module = self.module.lookup(old)
            except KeyError:
                at_module = None
            if at_module is None or not at_module.is_local():
                return None if old in _BUILTINS else ""  # a builtin, or unresolved
        elif symbol.is_free():
            current = self.parent.get(id(table))
            while current is not None and current is not self.module:
                found = _symbol(current, old)
                if found is not None and found.is_local() and current.get_type() != "class":
                    bound = current
                    break
                current = self.parent.get(id(current))
        return self._clash(bound, old, new, load)

    def _clash(self, bound: symtable.SymbolTable, old: str, new: str, load: bool) -> str:
        existing = _symbol(bound, new)
        if existing is not None and existing.is_local():
            if load and (old, new) in self.aliases:
                return ""  # `old = new`: the old name already means the new one
            return f"`{new}` is already {_describe(bound, existing)}"
        for table in self._within(bound):
            used = _symbol(table, new)
            if used is not None and used.is_referenced() and not used.is_local():
                at_module = _symbol(self.module, new)
                if at_module is not None and at_module.is_imported():
                    return f"`{new}` already names an import here"
                if (at_module is None or not at_module.is_local()) and new in _BUILTINS:
                    return f"the builtin `{new}` is used here"
                return f"`{new}` already names an outer definition here"
        return ""

    def _within(self, bound: symtable.SymbolTable) -> Iterator[symtable.SymbolTable]:
        pending = [bound]
        while pending:
            table = pending.pop()
            yield table
            pending.extend(table.get_children())

    def _place(self, scopes: Sequence[ast.AST]) -> None:
        """Give each scope node (from the rule's traversal) its symbol table and the
        character ranges its own names live in (a function's parameters and body, not
        its decorators and defaults; a comprehension without its first iterable)."""
        children: dict[int, dict[tuple[str, int], list[symtable.SymbolTable]]] = {}

        def child(table: symtable.SymbolTable, name: str, line: int) -> symtable.SymbolTable:
            index = children.get(id(table))
            if index is None:
                index = children[id(table)] = {}
                for sub in table.get_children():
                    self.parent[id(sub)] = table
                    index.setdefault((sub.get_name(), sub.get_lineno()), []).append(sub)
            found = index.get((name, line))
            return found.pop(0) if found else table

        span = self.file.node_range
        placed: list[tuple[int, int, list[tuple[int, int]], ast.AST]] = []
        for node in scopes:
            start, end = span(node)
            regions: list[tuple[int, int]]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                body = node.body if isinstance(node, ast.Lambda) else node.body[0]
                regions = [span(argument) for argument in _arguments(node.args)]
                regions.append((span(body)[0], end))
            elif isinstance(node, ast.ClassDef):
                regions = [(span(node.body[0])[0], end)]
            else:
                assert isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
                first, last = span(node.generators[0].iter)
                regions = [(start, first), (last, end)]
            placed.append((start, end, regions, node))
        placed.sort(key=lambda item: (item[0], -item[1]))
        stack: list[tuple[int, list[tuple[int, int]], symtable.SymbolTable]] = []
        for start, end, regions, node in placed:
            while stack and stack[-1][0] <= start:
                stack.pop()
            outer = self._enclosing(stack, start)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                table = child(outer, node.name, node.lineno)
            elif isinstance(node, ast.Lambda):
                table = child(outer, "lambda", node.lineno)
            else:
                line = node.lineno  # type: ignore[attr-defined]
                table = child(outer, _COMPREHENSIONS[type(node)], line)
            if table is not outer:
                stack.append((end, regions, table))
            self._regions.append((start, end, regions, table))
        self._regions.sort(key=lambda item: (item[0], -item[1]))
        self._starts = [item[0] for item in self._regions]

    def _enclosing(
        self, stack: Sequence[tuple[int, list[tuple[int, int]], symtable.SymbolTable]], at: int
    ) -> symtable.SymbolTable:
        for _, regions, table in reversed(stack):
            if any(first <= at < last for first, last in regions):
                return table
        return self.module

    def table_at(self, offset: int) -> symtable.SymbolTable:
        """The innermost symbol table whose own names include the one at ``offset``."""
        index = bisect.bisect_right(self._starts, offset)
        best = self.module
        best_size = -1
        for start, end, regions, table in self._regions[:index]:
            if end <= offset or not any(first <= offset < last for first, last in regions):
                continue
            if best_size < 0 or end - start < best_size:
                best, best_size = table, end - start
        return best

    def _note_aliases(self, body: list[ast.stmt], names: set[str]) -> None:
        for statement in body:
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and statement.targets[0].id in names
                and isinstance(statement.value, ast.Name)
            ):
                self.aliases.add((statement.targets[0].id, statement.value.id))


_BUILTINS = frozenset(dir(builtins))


def _arguments(arguments: ast.arguments) -> list[ast.arg]:
    found = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    found += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return found


def _symbol(table: symtable.SymbolTable, name: str) -> symtable.Symbol | None:
    try:
        return table.lookup(name)
    except KeyError:
        return None


def _describe(table: symtable.SymbolTable, symbol: symtable.Symbol) -> str:
    kind, name = table.get_type(), table.get_name()
    if symbol.is_parameter():
        return f"a parameter of `{name}`"
    if symbol.is_imported():
        return "an import in this scope"
    if kind == "function":
        return f"a local of `{name}`"
    if kind == "class":
        return f"a member of class `{name}`"
    return "defined in this module"


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


_QUALIFIED = re.compile(
    r"(?P<module>[^\W\d]\w*(?:\.[^\W\d]\w*)*):(?P<path>[^\W\d]\w*(?:\.[^\W\d]\w*)*)"
    r"(?:\((?P<keyword>[^\W\d]\w*)\))?"
)


@dataclass(frozen=True)
class Target:
    """One entry of ``renames``: what is renamed, and to what.

    ``kind`` is ``name`` (a bare ``old``: every binding of that spelling),
    ``attribute`` (``module:old``: a module's attribute), ``member``
    (``module:Class.old``: a class attribute or method) or ``keyword``
    (``module:function(old)``: one function's parameter, and the keyword
    argument in its calls).
    """

    key: str
    kind: str
    old: str
    new: str
    module: str = ""
    owner: str = ""
    """The class (``member``) or the function's dotted path in its module (``keyword``)."""

    @property
    def shown(self) -> str:
        return self.old if self.kind == "name" else self.key


def parse_target(key: str, new: str) -> Target:
    """A ``renames`` entry; ``ConfigError`` naming the key if it is malformed."""
    if ":" not in key:
        if not _is_identifier(key):
            raise ConfigError(f"'renames' {key!r}: {key!r} is not a Python identifier")
        return Target(key, "name", key, new)
    match = _QUALIFIED.fullmatch(key)
    if match is None:
        raise ConfigError(
            f"'renames' {key!r}: a qualified target is `module:name`, `module:Class.name` "
            "or `module:function(keyword)`"
        )
    module, path, keyword_name = match["module"], match["path"], match["keyword"]
    parts = path.split(".")
    for part in [*module.split("."), *parts, keyword_name or "x"]:
        if keyword.iskeyword(part):
            raise ConfigError(f"'renames' {key!r}: {part!r} is a Python keyword")
    if keyword_name is not None:
        return Target(key, "keyword", keyword_name, new, module, path)
    if len(parts) == 1:
        return Target(key, "attribute", parts[0], new, module)
    return Target(key, "member", parts[-1], new, module, ".".join(parts[:-1]))


@dataclass(frozen=True)
class Decision:
    """What to do with one occurrence: rename it (no ``reason``) or report why not."""

    old: str
    new: str
    reason: str = ""


class Resolver:
    """Scope and qualified-name analysis (libcst) of one file, built only when needed."""

    def __init__(self, file: FileContext) -> None:
        import libcst
        from libcst.metadata import ParentNodeProvider, PositionProvider, ScopeProvider

        self.file = file
        self.module = module_name(file.path) if file.path.suffix == ".py" else ""
        resolved = file.cst_wrapper.resolve_many(
            [ScopeProvider, ParentNodeProvider, PositionProvider]
        )
        self.scopes = cast("Mapping[libcst.CSTNode, Scope | None]", resolved[ScopeProvider])
        self.parents = cast("Mapping[libcst.CSTNode, libcst.CSTNode]", resolved[ParentNodeProvider])
        positions = cast("Mapping[libcst.CSTNode, CodeRange]", resolved[PositionProvider])
        self.names: dict[int, libcst.Name] = {}
        starts = file.line_starts
        for node, where in positions.items():
            if isinstance(node, libcst.Name):
                self.names[starts[where.start.line - 1] + where.start.column] = node

    def decide(
        self,
        old: str,
        start: int,
        kind: str,
        renames: Mapping[str, str],
        targets: Mapping[str, Sequence[Target]],
    ) -> Iterator[Decision]:
        """The decisions for an occurrence of ``old`` at ``start`` (the first one counts)."""
        import libcst

        node = self.names.get(start)
        bare = renames.get(old)
        if node is None:  # e.g. a name libcst places differently: only bare renames apply
            if bare is not None:
                yield Decision(old, bare)
            return
        parent = self.parents.get(node)
        if kind == "import" or isinstance(parent, libcst.ImportAlias) or self._in_import(node):
            yield from self._import(node, old, bare, targets.get(old, ()))
            return
        if isinstance(parent, libcst.Attribute) and parent.attr is node:
            yield from self._attribute(parent, old, bare, targets.get(old, ()))
            return
        if isinstance(parent, libcst.Arg) and parent.keyword is node:
            yield from self._keyword(parent, old, bare, targets.get(old, ()))
            return
        if kind == "declaration":  # `global old`: follows the module-level binding
            if bare is not None:
                yield Decision(old, bare)
            return
        yield from self._name(node, parent, old, bare, targets.get(old, ()))

    # -- occurrences --------------------------------------------------------------------------

    def _import(
        self, node: libcst.Name, old: str, bare: str | None, targets: Sequence[Target]
    ) -> Iterator[Decision]:
        import libcst

        alias = self._ancestor(node, libcst.ImportAlias)
        statement = self._ancestor(node, libcst.ImportFrom)
        local = alias is not None and alias.asname is None and alias.name is node
        if alias is not None and alias.asname is not None and node is alias.asname.name:
            yield from self._name(node, self.parents.get(node), old, bare, targets)
            return
        if bare is not None:
            reason = self._binding_clash(node, old, bare) if local else ""
            yield Decision(old, bare, reason)
            return
        if statement is None or alias is None or alias.name is not node:
            return
        source = self._absolute_module(statement)
        for target in targets:
            if target.kind == "attribute" and source == target.module:
                reason = self._binding_clash(node, old, target.new) if local else ""
                yield Decision(target.shown, target.new, reason)

    def _attribute(
        self, attribute: libcst.Attribute, old: str, bare: str | None, targets: Sequence[Target]
    ) -> Iterator[Decision]:
        import libcst

        if bare is not None:
            yield Decision(old, bare)
            return
        qualified = self._qualified(attribute)
        receiver = attribute.value
        for target in targets:
            if target.kind == "attribute":
                if f"{target.module}.{old}" in qualified:
                    yield Decision(target.shown, target.new)
            elif target.kind == "member":
                owner = f"{target.module}.{target.owner}"
                if owner in self._qualified(receiver) or self._is_own_instance(receiver, target):
                    yield Decision(target.shown, target.new)
                elif not (isinstance(receiver, libcst.Name) and receiver.value in ("self", "cls")):
                    code = self.file.cst_module.code_for_node(receiver)
                    yield Decision(
                        target.shown,
                        target.new,
                        f"`{old}` may be `{target.owner}.{old}`, but the class of `{code}` "
                        "is not known here",
                    )

    def _keyword(
        self, argument: libcst.Arg, old: str, bare: str | None, targets: Sequence[Target]
    ) -> Iterator[Decision]:
        import libcst

        call = self.parents.get(argument)
        if not isinstance(call, libcst.Call):
            return
        passed = {arg.keyword.value for arg in call.args if arg.keyword is not None}
        if bare is not None:
            reason = f"the call already passes `{bare}`" if bare in passed else ""
            yield Decision(old, bare, reason)
            return
        called = self._qualified(call.func)
        for target in targets:
            if target.kind == "keyword" and f"{target.module}.{target.owner}" in called:
                reason = f"the call already passes `{target.new}`" if target.new in passed else ""
                yield Decision(target.shown, target.new, reason)

    def _name(
        self,
        node: libcst.Name,
        parent: libcst.CSTNode | None,
        old: str,
        bare: str | None,
        targets: Sequence[Target],
    ) -> Iterator[Decision]:
        from libcst.metadata import BuiltinAssignment

        scope = self._scope_of(node)
        if scope is None:
            if bare is not None:
                yield Decision(old, bare)
            return
        access = next((a for a in scope.accesses[old] if a.node is node), None)
        if access is not None:
            referents = access.referents
            if referents and all(isinstance(r, BuiltinAssignment) for r in referents):
                return  # the builtin of that name: not what was renamed
            bound = next((r.scope for r in referents if not isinstance(r, BuiltinAssignment)), None)
            if bound is None:  # unresolved (e.g. a star import): only a bare rename applies
                if bare is not None:
                    yield Decision(old, bare)
                return
        else:
            bound = scope
        if bare is not None:
            yield Decision(old, bare, self._scope_clash(node, parent, bound, old, bare, access))
            return
        for target in targets:
            if self._binds_target(node, parent, bound, target, access):
                reason = self._scope_clash(node, parent, bound, old, target.new, access)
                yield Decision(target.shown, target.new, reason)

    # -- which binding is the target ----------------------------------------------------------

    def _binds_target(
        self,
        node: libcst.Name,
        parent: libcst.CSTNode | None,
        bound: Scope,
        target: Target,
        access: Access | None,
    ) -> bool:
        import libcst
        from libcst.metadata import ClassScope, FunctionScope, GlobalScope

        if target.kind == "attribute":
            if access is not None and f"{target.module}.{target.old}" in self._qualified(node):
                return True
            return isinstance(bound, GlobalScope) and self.module == target.module
        if target.kind == "member":
            return (
                isinstance(bound, ClassScope)
                and isinstance(bound.node, libcst.ClassDef)
                and self._dotted_definition(bound.node) == target.owner
                and self.module == target.module
            )
        if target.kind == "keyword" and isinstance(bound, FunctionScope):
            function = bound.node
            return (
                isinstance(function, libcst.FunctionDef)
                and self.module == target.module
                and self._dotted_definition(function) == target.owner
                and any(param.name.value == target.old for param in _params(function))
            )
        return False

    def _is_own_instance(self, receiver: libcst.BaseExpression, target: Target) -> bool:
        """``self.x``/``cls.x`` inside the target's class, or ``Class.x`` in its module."""
        import libcst

        if not isinstance(receiver, libcst.Name) or self.module != target.module:
            return False
        if receiver.value in ("self", "cls"):
            owner = self._ancestor(receiver, libcst.ClassDef)
            return owner is not None and self._dotted_definition(owner) == target.owner
        return receiver.value == target.owner and f"{target.module}.{target.owner}" in (
            self._qualified(receiver)
        )

    # -- collisions -----------------------------------------------------------------------------

    def _binding_clash(self, node: libcst.Name, old: str, new: str) -> str:
        scope = self._scope_of(node)
        if scope is None:
            return ""
        return self._scope_clash(node, self.parents.get(node), scope, old, new, None)

    def _scope_clash(
        self,
        node: libcst.Name,
        parent: libcst.CSTNode | None,
        bound: Scope,
        old: str,
        new: str,
        access: Access | None,
    ) -> str:
        """Why renaming ``old`` to ``new`` in scope ``bound`` would change what a name means."""
        import libcst
        from libcst.metadata import Assignment, BuiltinAssignment

        if isinstance(parent, libcst.Param):
            function = self._ancestor(parent, libcst.FunctionDef)
            if function is not None and any(p.name.value == new for p in _params(function)):
                return f"`{new}` is already a parameter of `{function.name.value}`"
        existing = [a for a in bound.assignments[new] if a.scope is bound]
        if existing:
            olds = [a for a in bound.assignments[old] if isinstance(a, Assignment)]
            if access is not None and olds and all(self._aliases(a.node, new) for a in olds):
                return ""  # `old = new`: the old name already means the new one
            return f"`{new}` is already {self._describe(existing[0], bound)}"
        for scope in self._scopes_within(bound):
            for used in scope.accesses[new]:
                referents = used.referents
                if all(r.scope is not bound for r in referents):
                    if referents and all(isinstance(r, BuiltinAssignment) for r in referents):
                        return f"the builtin `{new}` is used here"
                    if any(
                        isinstance(r, Assignment)
                        and isinstance(r.node, (libcst.Import, libcst.ImportFrom))
                        for r in referents
                    ):
                        return f"`{new}` already names an import here"
                    return f"`{new}` already names an outer definition here"
        return ""

    def _describe(self, assignment: BaseAssignment, scope: Scope) -> str:
        import libcst
        from libcst.metadata import Assignment, ClassScope, FunctionScope

        node = assignment.node if isinstance(assignment, Assignment) else None
        if isinstance(node, libcst.Param):
            function = scope.node if isinstance(scope, FunctionScope) else None
            name = function.name.value if isinstance(function, libcst.FunctionDef) else "lambda"
            return f"a parameter of `{name}`"
        if isinstance(node, (libcst.Import, libcst.ImportFrom)):
            return "an import in this scope"
        if isinstance(scope, FunctionScope) and isinstance(scope.node, libcst.FunctionDef):
            return f"a local of `{scope.node.name.value}`"
        if isinstance(scope, ClassScope) and isinstance(scope.node, libcst.ClassDef):
            return f"a member of class `{scope.node.name.value}`"
        return "defined in this module"

    def _aliases(self, node: libcst.CSTNode, new: str) -> bool:
        """Whether ``node`` is the name assigned in ``old = new``."""
        import libcst

        statement = self._ancestor(node, libcst.Assign) if isinstance(node, libcst.Name) else None
        return (
            statement is not None
            and isinstance(statement.value, libcst.Name)
            and statement.value.value == new
        )

    def _scopes_within(self, bound: Scope) -> list[Scope]:
        found = []
        for scope in {id(s): s for s in self.scopes.values() if s is not None}.values():
            current: Scope | None = scope
            while current is not None:
                if current is bound:
                    found.append(scope)
                    break
                parent = current.parent
                current = None if parent is current else parent
        return found

    # -- helpers ------------------------------------------------------------------------------

    def _qualified(self, node: libcst.CSTNode) -> set[str]:
        from libcst.metadata import QualifiedNameSource

        scope = self._scope_of(node)
        if scope is None:
            return set()
        names = set()
        for qualified in scope.get_qualified_names_for(node):
            name = qualified.name
            if qualified.source is QualifiedNameSource.LOCAL and self.module:
                name = f"{self.module}.{name}"
            elif name.startswith("."):
                level = len(name) - len(name.lstrip("."))
                name = absolute_module(name[level:], level, self.module, self.file.path)
            names.add(name)
        return names

    def _absolute_module(self, statement: libcst.ImportFrom) -> str:

        dotted = ""
        if statement.module is not None:
            dotted = self.file.cst_module.code_for_node(statement.module).replace(" ", "")
        level = len(statement.relative)
        if level == 0:
            return dotted
        return absolute_module(dotted, level, self.module, self.file.path)

    def _dotted_definition(self, node: libcst.ClassDef | libcst.FunctionDef) -> str:
        """``Outer.method``: the definition's path inside its module."""
        import libcst

        parts = [node.name.value]
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (libcst.ClassDef, libcst.FunctionDef)):
                parts.append(current.name.value)
            current = self.parents.get(current)
        return ".".join(reversed(parts))

    def _scope_of(self, node: libcst.CSTNode) -> Scope | None:
        current: libcst.CSTNode | None = node
        while current is not None:
            scope = self.scopes.get(current)
            if scope is not None:
                return scope
            current = self.parents.get(current)
        return None

    def _in_import(self, node: libcst.CSTNode) -> bool:
        import libcst

        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, (libcst.Import, libcst.ImportFrom)):
                return True
            if isinstance(current, (libcst.BaseSmallStatement, libcst.BaseStatement)):
                return False
            current = self.parents.get(current)
        return False

    def _ancestor(self, node: libcst.CSTNode, kind: type[_Node]) -> _Node | None:
        current = self.parents.get(node)
        while current is not None:
            if isinstance(current, kind):
                return current
            current = self.parents.get(current)
        return None


def _params(function: libcst.FunctionDef) -> list[libcst.Param]:
    import libcst

    params = function.params
    found = [*params.posonly_params, *params.params, *params.kwonly_params]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, libcst.Param):
            found.append(star)
    return found
