from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from lint_rules.analysis.declarations import Declarations, file_source
from lint_rules.analysis.literals import Field, knowledge_of, parse_literals, with_renamed_values
from lint_rules.analysis.members import Members
from lint_rules.analysis.receivers import receiver_types, renamed_imports
from lint_rules.analysis.renames import parse_renames
from lint_rules.analysis.string_values import matched_values
from lint_rules.rule import ConfigError, FileContext, Fix, Invalid, Rule, RuleOptions, Valid

if TYPE_CHECKING:
    from lint_rules.analysis.project import Project

# The examples read this repository's own declaration, not the installed SDK's.
_EVENTS = {"literals": {"RunItemStreamEvent.name": "agent_sessions.events:RunItemEventName"}}
CLOSE_ENOUGH = 0.6
"""The least similarity (difflib ratio) for a "did you mean" suggestion."""
CLEAR_LEAD = 0.1
"""How far the closest value must lead the next one for the suggestion to be a fix."""


class UnknownLiteralRule(Rule):
    """Flags a string compared with, or passed as, a Literal-typed field that it cannot equal.

    ## What it does
    For each field in `[tool.lint_rules.literals]`, reads the strings its
    `Literal[...]` declaration allows from the declaring module's source (never
    importing it), then checks every string literal that is compared with the
    field (`==`, `!=`, `in`/`not in` a tuple, list or set of strings,
    `match`/`case` literal patterns, `|` alternatives included) or passed to the
    declaring class as that keyword (constructor calls and class patterns such
    as `case Event(name="...")`, always checked), or assigned to it in the body
    of a subclass (`class App(Endpoint): encoding = "..."`; an annotated
    assignment declares the subclass's own field). A string that is not allowed
    is reported with the closest allowed value. The finding names the field as it
    is compared: on a receiver of a union alias, the union's field first, then the
    configured keys it holds (the first three, then a count): ``'imag' is not a
    value of `ContentBlock.type` (configured: `TextContent.type`,
    `ImageContent.type`, `AudioContent.type` and 2 more); did you mean 'image'?``.

    Any object may have a `.name`, so a compared string is checked only where
    the receiver is known to be an instance of the declaring class, or of a
    union that holds it (then only a string that resembles an allowed value is
    reported). Classes are recognised by name, whatever module they are imported
    from; a name imported under another (`from mcp.types import ContentBlock as
    Block`, in the module or in a function) stands for the imported one, in
    annotations, `isinstance`, constructor calls and class patterns alike (and
    `from other import Thing as Event` is no `Event`). What makes a receiver
    known, within one file:

    - an annotation: of a parameter, a variable, a class attribute or
      `self.x: Event`, or the return annotation of a function of the same module
      that is called (`event = make_event()`), also through `list[Event]`,
      `AsyncIterator[Event]`... when iterated or indexed;
    - `isinstance(event, Event)`: in `if`/`elif`/`while`/`assert`, after
      `and`, in comprehension filters, and after an
      `if not isinstance(...): continue` (or `return`, `raise`, `break`);
    - a discriminator: an attribute the class annotates with a Literal of one
      string (`type: Literal["run_item_stream_event"]`), compared in the same
      ways (`if event.type != "run_item_stream_event": continue`) or matched
      (`match event.type: case "run_item_stream_event": ...`);
    - a producer: a function or method of the declaring module whose return
      annotation names the class or a union alias holding it, or one the
      configuration names (`async for event in result.stream_events():`);
    - a mapping pattern, `x["name"]` or `x.get("name")` only where `x` is typed as
      the declaring class (a TypedDict);
    - what another module declares, read when a receiver needs it, in any module
      of the project (the packages under its root and its `src/`) or of a package
      the configuration names (`agents` of `"agents.stream_events:..."`, installed
      or not), never the standard library's or other installed packages':
      the return annotation of a function it imports (`answer = make_answer()`),
      of a method of a typed value (`answer = await session.elicit_form(...)`,
      `Self` included), an attribute, property or TypedDict key of one
      (`for choice in completion.choices:`, `for item in page["items"]:`, in
      comprehensions and their conditions too), what `with` binds
      (`__enter__`/`__aenter__`) and what iterating gives (`__iter__`/`__aiter__`),
      looking in base classes too; inside a method, `self` is its class. A class
      is looked up by its name where the file, or the module whose annotation gave
      it, binds it; a name bound to two different classes is not looked up.
      Generic parameters are not followed (`Stream[Event]` is a `Stream`).

    Anything else is unknown and gives no finding (`tool.name == "my_tool"`).
    A key without a class (`"name" = ...`) checks that attribute on every
    receiver, reporting only strings that resemble an allowed value.

    ## Why is this bad?
    A misspelt value in a comparison is never an error at run time: the branch
    just never runs. mypy's strict equality catches `x.name == "typo"` only
    when `x` is typed, and never `in (...)`, `match`/`case`, untyped values,
    dictionaries or code outside the type-checked tree.

    ## Example
    ```python
    async for event in result.stream_events():
        if event.type == "run_item_stream_event" and event.name == "tool_call":
            notify()
    ```

    ## Use instead
    ```python
    async for event in result.stream_events():
        if event.type == "run_item_stream_event" and event.name == "tool_called":
            notify()
    ```

    ## Fix safety
    Unsafe: the fix replaces the string with the closest allowed value, which
    changes what the code does; it is offered only when that value is clearly
    the closest one. A string spelt with escapes, implicit concatenation or an
    f-string is reported without a fix.

    ## Options
    `[tool.lint_rules.literals]`: a table of `"Class.attr" = "module:Alias"` or
    `"module:Class.attr"` (also `"attr" = ...`). The key is the field as it is
    written at use sites: its last part is the attribute or subscript name
    checked, and `Class` (when given) is the class whose instances have it and
    whose keyword arguments are checked. Several keys with the same attribute
    allow the union of their values. The value names a `Literal[...]` alias
    (plain, `TypeAlias`, PEP 695 `type`, unions and aliases of aliases) or an
    annotated class attribute (dataclass, pydantic model, TypedDict) in a module
    found in the project root (then its `src/`, the `src/*/` directories and nested
    projects under it, then the import path). The class's
    discriminators and its producers are read from the module that declares the
    class. The union aliases holding it are read from that module, from the value's
    module, and from the other modules of their directories (and of the package
    above) that name the class, importing it or not: `A | B`, `Union[...]`,
    `Annotated[Union[...], ...]` (members in `Annotated` too), generic members
    (`Done[T]`), `TypeAliasType("Result", Done[T] | Failed, type_params=(T,))` and
    PEP 695 `type Result[T] = Done[T] | Failed` (read on Python 3.11 too, by
    rewriting the `type` line before parsing); an alias given parameters
    (`Result[int]`) is the alias. On a receiver of a union, the values the other
    members' `Literal` declares for the field are allowed and are what "did you
    mean" may suggest; a member that does not declare the field has its bases'
    (in the project, generic ones such as `class Parsed(Message[T])` too), the
    nearest declaration winning (an override narrows). A union with a member whose
    field may be any string (`type: str`) is not checked.

    The value may also be an inline table, to name what that module does not
    declare:

    ```toml
    "Event.name" = { values = "pkg.events:Event.name", producers = ["stream_events"] }
    "Job.state" = { values = "pkg.jobs:State", discriminator = { kind = ["job", "cron"] } }
    ```

    `values` (required) is the string form's value; `producers` lists function
    or method names whose result is (or iterates over) the class or a union
    holding it; `discriminator` maps an attribute to the value(s) only the
    class's instances have. Both need a `"Class.attr"` key. A missing module or
    name, a name that is not a Literal of strings, an unreadable source, an
    unknown key or a value of the wrong type is a configuration error naming
    the key.

    `literal-factories` (in `[tool.lint_rules]`): names of functions and methods
    that build a configured class from keywords, so that those keywords are
    checked as the class's own are: a call whose callee's last name is listed
    and whose first argument names the class (`build(ChunkEvent, type="chunk")`),
    or a listed method called on the class (`ChunkEvent.model_construct(type=...)`).

    ```toml
    [tool.lint_rules]
    literal-factories = ["build", "model_construct"]
    ```
    """

    CODE = "LR002"
    NAME = "unknown-literal"
    MESSAGE = "{value!r} is not a value of {field}{hint}"
    OPTIONS = ("literals", "literal-factories")
    READS = ("renames",)

    VALID = (
        Valid(
            "def on(event: RunItemStreamEvent) -> None:\n"
            "    if event.name == 'handoff_occurred':\n        pass\n",
            options=_EVENTS,
        ),
        Valid(
            "def on(event: RunItemStreamEvent) -> None:\n"
            "    if event.kind == 'tool_outputs':\n        pass\n",
            options=_EVENTS,
        ),
        Valid("if tool.name == 'tool_call':\n    pass\n", options=_EVENTS),
        Valid("found = data['input'][0]['name'] == 'tool_call'\n", options=_EVENTS),
        Valid(
            "def on(event: StreamEvent) -> None:\n"
            "    flagged = event.name in {'tool_called', 'tool_output'}\n",
            options=_EVENTS,
        ),
        Valid("if event.name == 'anything':\n    pass\n"),
        Valid("import os\nif os.name == 'nt':\n    pass\n", options=_EVENTS),
    )
    INVALID = (
        Invalid(
            "def on(event: RunItemStreamEvent) -> None:\n"
            "    if event.name == 'tool_call':\n        pass\n",
            message=(
                "'tool_call' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'tool_called'?"
            ),
            line=2, column=22, end_line=2, end_column=33,
            replacement=(
                "def on(event: RunItemStreamEvent) -> None:\n"
                "    if event.name == 'tool_called':\n        pass\n"
            ),
            options=_EVENTS,
        ),
        Invalid(
            "async def show(result):\n"
            "    async for event in result.stream_events():\n"
            "        if event.type != 'run_item_stream_event':\n"
            "            continue\n"
            "        if event.name == 'tool_outputs':\n"
            "            print(event.item)\n",
            message=(
                "'tool_outputs' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'tool_output'?"
            ),
            line=5, column=26, end_line=5, end_column=40,
            replacement=(
                "async def show(result):\n"
                "    async for event in result.stream_events():\n"
                "        if event.type != 'run_item_stream_event':\n"
                "            continue\n"
                "        if event.name == 'tool_output':\n"
                "            print(event.item)\n"
            ),
            options=_EVENTS,
        ),
        Invalid(
            "wanted = isinstance(event, RunItemStreamEvent) and event.name not in (\n"
            "    'tool_called', 'tool_outputs'\n)\n",
            message=(
                "'tool_outputs' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'tool_output'?"
            ),
            line=2, column=20, end_line=2, end_column=34,
            replacement=(
                "wanted = isinstance(event, RunItemStreamEvent) and event.name not in (\n"
                "    'tool_called', 'tool_output'\n)\n"
            ),
            options=_EVENTS,
        ),
        Invalid(
            "def on(event: RunItemStreamEvent) -> None:\n"
            "    match event.name:\n"
            "        case 'tool_called' | 'message_created':\n"
            "            pass\n",
            message=(
                "'message_created' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'message_output_created'?"
            ),
            line=3, column=30, end_line=3, end_column=47,
            replacement=(
                "def on(event: RunItemStreamEvent) -> None:\n"
                "    match event.name:\n"
                "        case 'tool_called' | 'message_output_created':\n"
                "            pass\n"
            ),
            options=_EVENTS,
        ),
        Invalid(
            "event = RunItemStreamEvent(name='finished', item=item)\n",
            message=(
                "'finished' is not a value of `RunItemStreamEvent.name`; allowed: "
                "'handoff_occurred', 'handoff_requested', 'message_output_created', "
                "'tool_called', 'tool_output'"
            ),
            line=1, column=33, end_line=1, end_column=43,
            replacement=None,
            options=_EVENTS,
        ),
        Invalid(
            "match event:\n    case RunItemStreamEvent(name='done'):\n        pass\n",
            message=(
                "'done' is not a value of `RunItemStreamEvent.name`; allowed: "
                "'handoff_occurred', 'handoff_requested', 'message_output_created', "
                "'tool_called', 'tool_output'"
            ),
            line=2, column=34, end_line=2, end_column=40,
            replacement=None,
            options=_EVENTS,
        ),
    )  # fmt: skip

    def __init__(self, options: RuleOptions, project: Project | None = None) -> None:
        super().__init__(options)
        declarations = project.declarations if project is not None else Declarations(None)
        literals, renames = options.get("literals", {}), options.get("renames", {})

        def read() -> list[Field]:
            return with_renamed_values(
                parse_literals(literals, declarations), parse_renames(renames)
            )

        # The declarations are read once per run: worker processes receive the fields
        # from the parent (``Project.shared_state``) instead of reading them again.
        key = ("LR002", "fields", repr(literals), repr(renames))
        self.fields = read() if project is None else project.shared(key, read)
        # Indexed once per run: a use site looks up its attribute (or class) name, and a
        # receiver's types, never scanning the configured fields.
        grouped: dict[str, list[Field]] = {}
        self.by_class: dict[str, dict[str, Field]] = {}
        for field in self.fields:
            grouped.setdefault(field.attribute, []).append(field)
            if field.owner is not None:
                self.by_class.setdefault(field.owner, {})[field.attribute] = field
        self.by_attribute = {name: _Attribute.of(fields) for name, fields in grouped.items()}
        self.factories = _factories(options.get("literal-factories", []))
        self._callees = self.by_class.keys() | self.factories
        """The last names of the callees whose keywords are checked: a class, a factory."""
        literals = options.get("literals", {})
        self.configured_packages = frozenset(
            _target(entry).partition(":")[0].split(".")[0]
            for entry in (literals.values() if isinstance(literals, dict) else ())
        )
        self._package_names: tuple[Path, frozenset[str]] | None = None
        self.use_site = UseSites(self.by_attribute, self.by_class, self.factories)
        self.knowledge = knowledge_of(self.fields)
        self._candidates: list[_Candidate] = []
        self._candidates_of: FileContext | None = None
        self._renamed: dict[str, str] = {}
        self._renamed_of: FileContext | None = None

    def _packages(self, root: Path | None) -> frozenset[str] | None:
        """The top-level packages whose modules receivers are looked up in: the
        project's (under its root and its src/) and those the configuration names."""
        if root is None:
            return None
        if self._package_names is None or self._package_names[0] != root:
            names = set(self.configured_packages)
            for directory in (root, root / "src"):
                try:
                    entries = list(directory.iterdir())
                except OSError:
                    continue
                for entry in entries:
                    if entry.suffix in (".py", ".pyi"):
                        names.add(entry.stem)
                    elif entry.is_dir() and entry.name.isidentifier():
                        names.add(entry.name)
            self._package_names = (root, frozenset(names))
        return self._package_names[1]

    def prefilter(self, text: str) -> bool:
        return self.use_site.admits(text)

    def dependencies(self) -> list[Path]:
        return sorted({path for field in self.fields for path in field.sources})

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for operator, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(operator, (ast.Eq, ast.NotEq)):
                self._compared(left, [right])
                self._compared(right, [left])
            elif isinstance(operator, (ast.In, ast.NotIn)) and isinstance(
                right, (ast.Tuple, ast.List, ast.Set)
            ):
                self._compared(left, right.elts)
            left = right

    def visit_Match(self, node: ast.Match) -> None:
        use = _field_use(node.subject, self.by_attribute)
        for case in node.cases:
            if use is not None:
                self._compared(node.subject, matched_values(case.pattern))
            for mapping in _mapping_patterns(case.pattern):
                for key, pattern in zip(mapping.keys, mapping.patterns, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        attribute = self.by_attribute.get(key.value)
                        if attribute is not None:
                            self._candidate(node.subject, attribute, matched_values(pattern))

    def _class_name(self, node: ast.expr | None) -> str | None:
        """The simple name of the class ``node`` names: a name imported under another
        (``from m import ItemEvent as Item``) stands for the imported one."""
        if isinstance(node, ast.Attribute):
            return node.attr
        if not isinstance(node, ast.Name):
            return None
        return self._renamed_here().get(node.id, node.id)

    def _renamed_here(self) -> dict[str, str]:
        """The names the file's imports give to others (``renamed_imports``), once per file."""
        if self._renamed_of is not self.file:
            self._renamed_of = self.file
            self._renamed = renamed_imports(self.file.ast_tree.body)
        return self._renamed

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        name = self._class_name(node.cls)
        owned = self.by_class.get(name) if name is not None else None
        if owned is None:
            return
        for attribute, pattern in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
            field = owned.get(attribute)
            if field is not None:
                for value in matched_values(pattern):
                    self._check_value(value, [field], certain=True)

    def visit_Call(self, node: ast.Call) -> None:
        callee = node.func
        # Most calls are of nothing configured: told by the callee's last name alone.
        if isinstance(callee, ast.Name):
            last = callee.id
            if last not in self._callees and self._renamed_here().get(last) not in self.by_class:
                return
        elif not isinstance(callee, ast.Attribute) or callee.attr not in self._callees:
            return
        name = self._class_name(callee)
        owned = self.by_class.get(name) if name is not None else None
        if owned is None and _last(callee) in self.factories:
            # A configured factory: `build(Event, type=...)`, `Event.model_construct(type=...)`.
            made = node.args[0] if node.args else None
            if made is None and isinstance(callee, ast.Attribute):
                made = callee.value
            made_name = self._class_name(made)
            owned = self.by_class.get(made_name) if made_name is not None else None
        if owned is None:
            return
        for keyword in node.keywords:
            field = owned.get(keyword.arg) if keyword.arg is not None else None
            if field is not None:
                self._check_value(keyword.value, [field], certain=True)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        """A subclass of a configured class that overrides its field with a string:
        ``class App(WebSocketEndpoint): encoding = "json"``."""
        owned: dict[str, Field] = {}
        for base in node.bases:
            name = self._class_name(base)
            owned.update(self.by_class.get(name, {}) if name is not None else {})
        if not owned:
            return
        for statement in node.body:
            if not isinstance(statement, ast.Assign):
                continue  # an annotated one declares the subclass's own field
            for target in statement.targets:
                field = owned.get(target.id) if isinstance(target, ast.Name) else None
                if field is not None:
                    self._check_value(statement.value, [field], certain=True)

    def check_file(self) -> None:
        """Check the compared strings; the receivers are typed only when one is typed-only."""
        candidates = self._candidates if self._candidates_of is self.file else []
        self._candidates, self._candidates_of = [], None
        if not candidates:
            return
        wanted = [c.receiver for c in candidates if c.attribute.by_type]
        known: dict[int, frozenset[str]] = {}
        if wanted:
            project = self.file.project
            tree = self.file.ast_tree
            here = file_source(self.file.path, tree, project.declarations)
            members = Members(here, project.note_read, self._packages(project.root))
            known = receiver_types(tree, self.knowledge, wanted, members)
        for candidate in candidates:
            types = known.get(id(candidate.receiver), frozenset())
            usable = list(candidate.attribute.unowned)
            certain = False
            others: set[str] = set()
            unions: set[str] = set()
            for field in candidate.attribute.typed_by(types):
                if types <= field.classes:
                    certain = True  # nothing else it may be
                elif types & field.open_unions:
                    continue  # a member of the union takes any string
                else:  # a union: its other members' values (their own or their bases')
                    others.update(v for (a, v), _ in field.siblings if a == field.attribute)
                    others.update(field.member_values)
                    # a union alias by name (not a producer's `<Class.attr>` stand-in)
                    unions.update(t for t in types & field.unions if not t.startswith("<"))
                usable.append(field)
            compared = [f"{union}.{usable[0].attribute}" for union in sorted(unions)]
            for value in candidate.values:
                if usable and getattr(value, "value", None) not in others:
                    self._check_value(value, usable, certain, others, compared)

    def _compared(self, field_side: ast.expr, values: Sequence[ast.expr]) -> None:
        use = _field_use(field_side, self.by_attribute)
        if use is not None:
            self._candidate(use[0], use[1], values)

    def _candidate(
        self, receiver: ast.expr, attribute: _Attribute, values: Sequence[ast.expr]
    ) -> None:
        """Remember strings compared with ``attribute`` of ``receiver`` that some of its
        fields does not allow, for ``check_file``."""
        suspects = [
            value
            for value in values
            if isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and value.value not in attribute.common
        ]
        if not suspects:
            return
        if self._candidates_of is not self.file:
            self._candidates, self._candidates_of = [], self.file
        self._candidates.append(_Candidate(receiver, attribute, tuple(suspects)))

    def _check_value(
        self,
        node: ast.expr,
        fields: Sequence[Field],
        certain: bool,
        others: Iterable[str] = (),
        compared: Sequence[str] = (),
    ) -> None:
        """Report ``node`` if it is a string none of ``fields`` allows (nor ``others``,
        the values of the other members of the receiver's union); unless ``certain``
        that the value is the field's, only when it resembles an allowed value.
        ``compared``: the field of the receiver's union (``ContentBlock.type``), which
        the message names first, with the configured keys it holds."""
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            return
        value = node.value
        allowed_here = {allowed for field in fields for allowed in field.values}
        allowed_here.update(others)
        if value in allowed_here:
            return
        allowed = sorted(allowed_here)
        suggestion, clear = closest(value, allowed)
        if suggestion is None and not certain:
            return
        if suggestion is not None:
            hint = f"; did you mean {suggestion!r}?"
        else:
            hint = "; allowed: " + ", ".join(repr(item) for item in allowed)
        keys = list(dict.fromkeys(field.key for field in fields))
        field_names = f"`{', '.join(keys)}`"
        if compared:
            shown = ", ".join(f"`{key}`" for key in keys[:_KEYS_SHOWN])
            more = f" and {len(keys) - _KEYS_SHOWN} more" if len(keys) > _KEYS_SHOWN else ""
            field_names = f"`{', '.join(compared)}` (configured: {shown}{more})"
        message = self.MESSAGE.format(value=value, field=field_names, hint=hint)
        fix: Fix | None = None
        if suggestion is not None and clear:
            body = self.file.string_body(node)
            # Only a plainly spelt string: no f-string, escapes or implicit concatenation.
            if body is not None:
                fix = self.replace(body, suggestion, safe=False)
        self.report(node, message, fix)


@dataclass(frozen=True)
class _Attribute:
    """The configured fields of one attribute (or key) name, indexed once per run."""

    fields: tuple[Field, ...]
    common: frozenset[str]
    """The values every field allows: a compared string among them is never reported."""
    unowned: tuple[Field, ...]
    """The fields of keys without a class: checked on every receiver."""
    by_type: Mapping[str, tuple[int, ...]]
    """For each class or union name, the positions of the fields its instances have."""

    @classmethod
    def of(cls, fields: Sequence[Field]) -> _Attribute:
        by_type: dict[str, list[int]] = {}
        for position, field in enumerate(fields):
            if field.owner is not None:
                for name in field.classes | field.unions:
                    by_type.setdefault(name, []).append(position)
        return cls(
            tuple(fields),
            frozenset.intersection(*(field.values for field in fields)),
            tuple(field for field in fields if field.owner is None),
            {name: tuple(positions) for name, positions in by_type.items()},
        )

    def typed_by(self, types: Iterable[str]) -> list[Field]:
        """The fields of a class (or union) a receiver of ``types`` may be, in
        configuration order."""
        positions = {position for name in types for position in self.by_type.get(name, ())}
        return [self.fields[position] for position in sorted(positions)]


@dataclass(frozen=True)
class _Candidate:
    """Strings compared with a field of ``receiver``, to check once receivers are typed."""

    receiver: ast.expr
    attribute: _Attribute
    values: tuple[ast.expr, ...]


def _field_use(
    node: ast.expr, by_attribute: Mapping[str, _Attribute]
) -> tuple[ast.expr, _Attribute] | None:
    """The receiver and the fields of ``receiver.attr``, ``receiver["attr"]`` or
    ``receiver.get("attr")`` (a TypedDict's)."""
    if isinstance(node, ast.Call):
        key = _get_key(node)
        attribute = by_attribute.get(key) if key is not None else None
        return (node.func.value, attribute) if attribute is not None else None  # type: ignore[attr-defined]
    if isinstance(node, ast.Attribute):
        attribute = by_attribute.get(node.attr)
    elif isinstance(node, ast.Subscript):
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, str)):
            return None
        attribute = by_attribute.get(index.value)
    else:
        return None
    return (node.value, attribute) if attribute is not None else None


def _target(entry: object) -> str:
    """The ``module:Name`` of a (validated) ``literals`` entry."""
    return entry if isinstance(entry, str) else str(entry.get("values", ""))  # type: ignore[attr-defined]


def _last(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _factories(value: object) -> frozenset[str]:
    """``literal-factories``: the names of functions and methods whose keywords are the
    fields of the class given as their first argument (or whose method they are)."""
    if not isinstance(value, list) or not all(
        isinstance(name, str) and name.isidentifier() for name in value
    ):
        raise ConfigError(
            "'literal-factories' must be a list of function or method names, "
            'e.g. ["build", "model_construct"]'
        )
    return frozenset(value)


def _get_key(node: ast.Call) -> str | None:
    """``"key"`` of ``mapping.get("key")`` or ``mapping.get("key", default)``."""
    if (
        isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and 1 <= len(node.args) <= 2
        and not node.keywords
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def _mapping_patterns(pattern: ast.pattern) -> list[ast.MatchMapping]:
    """The mapping patterns that match the subject itself (through ``|`` and ``as``)."""
    found = []
    pending = [pattern]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.MatchMapping):
            found.append(current)
        elif isinstance(current, ast.MatchOr):
            pending.extend(current.patterns)
        elif isinstance(current, ast.MatchAs) and current.pattern is not None:
            pending.append(current.pattern)
    return found


# Each finds the candidate names of one kind of use site, whatever the configuration:
# `.attr` (comments may sit between the dot and the name inside brackets) and a quoted
# `'attr'`. Each starts with a fixed character, which `re` looks for before trying the
# rest: a pattern that starts with `\b` or a class is tried at every position of the text.
_DOTTED = re.compile(r"\.\s*(?:#[^\n]*\n\s*)*(\w+)")
_QUOTED = re.compile(r"['\"](\w+)(?=['\"])")
# What a use site of an attribute needs besides the name (a comparison: `==` or `!=`,
# `in` a literal tuple, list or set, or a `match`), the word boundary before `in` and
# `match` checked on each occurrence (`_after_word_boundary`), and the text between a
# callee and its `(`.
_IN_LITERAL = re.compile(r"in[\s\\]*(?:#[^\n]*\n[\s\\]*)*[(\[{]")
_MATCH = re.compile(r"match\b")
_WORD_CHARACTER = re.compile(r"\w")
_BETWEEN_CALLEE_AND_PAREN = r"[\s\\]*(?:#[^\n]*\n[\s\\]*)*\("
# Where a compared field and its string are: the text between tokens (whitespace, a
# line continuation, comments), after the field (closing brackets too) and before the
# string (opening brackets too); a string compared with what follows it, a string
# compared (`==` or `!=`, the string's prefix letters, its quote), `in` or `not in`
# before a bracket, and a line starting with the word `match` (a `match` statement).
_GAP = r"(?:[\s\\]|#[^\n]*\n)*"
_CLOSING = r"(?:[\s)\]\\]|#[^\n]*\n)*"
_OPENING = r"(?:[\s(\\]|#[^\n]*\n)*"
_OPERATOR = re.compile("[=!]=")
_BLANK = frozenset(" \t\f\r\\")
_LITERAL_OPERAND = re.compile(
    f"{_GAP}(?:[A-Za-z]{{0,2}}(?:\"[^\"\\\\\\n]*\"|'[^'\\\\\\n]*')|None|True|False|[0-9]+)"
    f"{_GAP}(?![.\\[(\\w'\"])"
)
_OPERATOR_STRING = f"[=!]={_OPENING}[A-Za-z]{{0,2}}['\"]"
_IN_BRACKET = f"(?:not(?:[\\s\\\\]|#[^\\n]*\\n)+)?in{_GAP}[(\\[{{]"
_SPACED_DOT = re.compile(r"\.(?:[\s\\]|#[^\n]*\n)+(\w+)")
_MATCH_STATEMENT = re.compile(r"^[ \t\f]*match\b", re.MULTILINE)
_KEYS_SHOWN = 3
"""How many configured keys a finding on a union's field names (the rest are counted)."""
_CLASS_KEYWORD = re.compile(r"\bclass[\s\\]+$")
_AS_NAME = re.compile(r"as[ \t]+(\w+)")
_CLASS_STATEMENT = re.compile(r"class\s+\w+\s*\(([^)]*)")
_WORDS = re.compile(r"\w+")


class UseSites:
    """The prefilter: whether a text may hold a use site: a declaring class's name called
    (``Class(attr=...)``, ``case Class(attr=...)``, or under the name an import gives it:
    ``from m import Class as C`` ... ``C(attr=...)``; merely named when factories are
    configured: ``build(Class, attr=...)``), or a configured attribute compared where it
    is written: `.attr` or a quoted `'attr'` (a subscript's, a ``.get``'s) followed by
    ``==``/``!=`` and a string, or by ``in``/``not in`` and a bracket, or by ``:`` in a text
    with a ``match`` statement (its subject, a mapping pattern's key); brackets, comments
    and line breaks between them. Where a string comes first (``"a" == x.attr``) the
    receiver may be any expression: any string followed by ``==``/``!=`` admits the text,
    unless the string is in brackets and compared with a literal (``.get("KEY") == "1"``).
    A few patterns fixed per run find the candidate names, looked up in sets, so a file
    costs the same with 5 or 500 configured keys: the words that start with the first
    character of a class name, then each class name the text holds as a callee, the
    words of its class statements' bases and the names its imports give with ``as`` (one
    pass each, whatever the classes); then, for each configured attribute the text
    names, one pattern that starts with the name. CPU of the prefilter alone on openai's
    2,546 files, one process: 0.24 s with 5 keys, 0.30 s with 116, 0.33 s with 500."""

    def __init__(
        self, attributes: Iterable[str], classes: Iterable[str], factories: Iterable[str] = ()
    ) -> None:
        self.attributes = frozenset(attributes)
        self.classes = frozenset(classes)
        self.factories = frozenset(factories)
        """``literal-factories``: with any, a class named anywhere may be a factory's."""
        # Every word of the text that is a class's name starts a match (a word inside
        # another may too: the candidates are a superset, each then looked for as itself).
        first = "".join(sorted({name[0] for name in self.classes}))
        self._class_words = re.compile(f"[{re.escape(first)}]\\w*") if first else None
        self._callees = {name: _callee(name) for name in self.classes}
        self._patterns: dict[str, re.Pattern[str]] = {}
        """Each configured attribute's use-site patterns (``_compared``), compiled once."""

    def admits(self, text: str) -> bool:
        if not self.attributes:
            return False
        if self._class_words is not None:
            named = self.classes.intersection(self._class_words.findall(text))
            if named and (
                self.factories or any(_called(text, self._callees[name]) for name in named)
            ):
                return True
            bases = _base_words(text) if named else frozenset()
            if named & bases:
                return True  # `class App(Endpoint):` may override a field
            if named:
                renamed = _renamed(text, named)
                if any(_called(text, _callee(name)) or name in bases for name in renamed):
                    return True  # `from m import Event as E` ... `E(type=...)`
        if not _compares(text):
            return False
        named = self.attributes.intersection(_DOTTED.findall(text)) | self.attributes.intersection(
            _QUOTED.findall(text)
        )
        if not named:
            return False
        if _string_compared(text):
            return True  # `"a" == <anything>.attr`: where the receiver starts is not known
        matches = "match" in text and _MATCH_STATEMENT.search(text) is not None
        spaced = named.intersection(_SPACED_DOT.findall(text))
        return any(
            self._compared(name, matches, name in spaced).search(text) is not None
            or self._got_with_default(name).search(text) is not None
            for name in sorted(named)
        )

    def _compared(self, name: str, matches: bool, spaced: bool) -> re.Pattern[str]:
        """``.name`` or ``'name'`` (a subscript's, a ``.get``'s) followed by ``==``/``!=``
        a string, or by ``in`` a literal tuple, list or set; with ``matches``, also by
        ``:`` (a ``match`` subject, a mapping pattern's key). ``spaced``: the text has the
        name after a dot and a space or comment (``x. name``): any ``name`` counts then."""
        key = f"{name} {matches} {spaced}"
        pattern = self._patterns.get(key)
        if pattern is None:
            escaped = re.escape(name)
            before = f"(?<!\\w{escaped})" if spaced else f"(?<=[.'\"]{escaped})"
            pattern = self._patterns[key] = re.compile(
                f"{escaped}{before}['\"]{{0,3}}{_CLOSING}"
                f"(?:{_OPERATOR_STRING}|{_IN_BRACKET}{'|:' if matches else ''})"
            )
        return pattern

    def _got_with_default(self, name: str) -> re.Pattern[str]:
        """``.get('name', default)``: what follows the default is not looked at."""
        key = f"{name} get"
        pattern = self._patterns.get(key)
        if pattern is None:
            pattern = self._patterns[key] = re.compile(
                f"get{_GAP}\\({_OPENING}['\"]{{1,3}}{re.escape(name)}['\"]{{1,3}}{_CLOSING},"
            )
        return pattern


def _callee(name: str) -> re.Pattern[str]:
    """``name`` followed by its ``(``: its first characters are what ``re`` looks for."""
    return re.compile(re.escape(name) + _BETWEEN_CALLEE_AND_PAREN)


def _base_words(text: str) -> frozenset[str]:
    """The words among the bases of the ``class`` statements of ``text`` (a line that
    starts with ``class Name(``, up to the first ``)``), found in one pass whatever the
    configured classes (each class's own pattern, tried at each line, cost 0.3 s of CPU
    on openai's 2,546 files with 434 classes)."""
    words: set[str] = set()
    for found in _CLASS_STATEMENT.finditer(text):
        start = found.start()
        line = text.rfind("\n", 0, start) + 1
        if text[line:start].strip(" \t") == "":
            words.update(_WORDS.findall(found.group(1)))
    return frozenset(words)


def _renamed(text: str, named: frozenset[str]) -> set[str]:
    """The names ``Name as Other`` binds to a name of ``named`` in ``text`` (``Other``):
    found from each ``as`` (a literal ``re`` looks for), the word before it read back."""
    renamed = set()
    for found in _AS_NAME.finditer(text):
        end = found.start()
        while end > 0 and text[end - 1] in " \t":
            end -= 1
        if end == found.start():
            continue  # `as` ends a longer word (`alias x`)
        start = end
        while start > 0 and _WORD_CHARACTER.match(text, start - 1) is not None:
            start -= 1
        if start < end and text[start:end] in named:
            renamed.add(found.group(1))
    return renamed


def _called(text: str, callee: re.Pattern[str]) -> bool:
    """Whether the name of ``callee`` (``_callee``) is followed by ``(`` somewhere in
    ``text`` as a word, other than in its ``class name(...)`` definition (a call, or a
    class pattern)."""
    for found in callee.finditer(text):
        start = found.start()
        if _after_word_boundary(text, start) and (
            _CLASS_KEYWORD.search(text, max(0, start - 64), start) is None
        ):
            return True
    return False


def _compares(text: str) -> bool:
    """Whether ``text`` has ``==``, ``!=``, ``in`` before a ``(``, ``[`` or ``{``, or the
    word ``match``."""
    if "==" in text or "!=" in text:
        return True
    return any(
        _after_word_boundary(text, found.start())
        for pattern in (_IN_LITERAL, _MATCH)
        for found in pattern.finditer(text)
    )


def _string_compared(text: str) -> bool:
    """Whether a string may be compared with ``==`` or ``!=`` with what follows it
    (``"a" == event.kind``), or a string in brackets (``("a") == ...``) with something
    other than a literal (the usual ``.get("KEY") == "1"`` is not). Looked for from each
    operator back over spaces, line breaks and closing brackets: a line before them
    with a ``#`` (it may end with a comment) counts as a string."""
    for found in _OPERATOR.finditer(text):
        position, closed = found.start() - 1, False
        while position >= 0:
            character = text[position]
            if character == ")":
                closed = True
            elif character == "\n":
                start = text.rfind("\n", 0, position) + 1
                if text.find("#", start, position) >= 0:
                    return True
            elif character not in _BLANK:
                break
            position -= 1
        if (
            position >= 0
            and text[position] in "'\""
            and (not closed or _LITERAL_OPERAND.match(text, found.end()) is None)
        ):
            return True
    return False


def _after_word_boundary(text: str, start: int) -> bool:
    """Whether a word starting at ``start`` starts there (``\b`` before it)."""
    return start == 0 or _WORD_CHARACTER.match(text, start - 1) is None


def closest(value: str, allowed: Sequence[str]) -> tuple[str | None, bool]:
    """The allowed value most like ``value`` (None if none is close), and whether it
    leads every other one clearly."""
    import difflib  # only when a value is not allowed

    scored = sorted(
        ((difflib.SequenceMatcher(None, value, item).ratio(), item) for item in allowed),
        key=lambda pair: (-pair[0], pair[1]),
    )
    if not scored or scored[0][0] < CLOSE_ENOUGH:
        return None, False
    best = scored[0][0]
    runner_up = scored[1][0] if len(scored) > 1 else 0.0
    return scored[0][1], best - runner_up >= CLEAR_LEAD
