from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lint_rules.rule import ConfigError, Fix, Invalid, Rule, RuleOptions, Valid
from lint_rules.static import literal_values, recording

_EVENTS = {"literals": {"RunItemStreamEvent.name": "agents.stream_events:RunItemStreamEvent.name"}}
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
    `match`/`case` literal patterns, `|` alternatives included, also as a
    mapping pattern's value) or passed to the declaring class as that keyword
    (constructor calls and class patterns such as `case Event(name="...")`).
    The field is recognised at use sites as an attribute (`event.name`) or a
    subscript (`event["name"]`) with its name. A string that is not allowed
    is reported with the closest allowed value. Since any object may have an
    attribute of that name, a compared string that resembles no allowed value
    is taken to belong to another field (`os.name == "nt"`) and is not
    reported; a keyword of the declaring class is always checked.

    ## Why is this bad?
    A misspelt value in a comparison is never an error at run time: the branch
    just never runs. mypy's strict equality catches `x.name == "typo"` only
    when `x` is typed, and never `in (...)`, `match`/`case`, untyped values,
    dictionaries or code outside the type-checked tree.

    ## Example
    ```python
    if event.name == "handoff_occurred":  # the SDK emits "handoff_occured"
        notify()
    ```

    ## Use instead
    ```python
    if event.name == "handoff_occured":
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
    checked, and `Class` (when given) is the constructor whose keyword arguments
    are checked. Several keys with the same attribute allow the union of their
    values. The value names a `Literal[...]` alias (plain, `TypeAlias`, PEP 695
    `type`, unions and aliases of aliases) or an annotated class attribute
    (dataclass, pydantic model, TypedDict) in a module found on the import path
    (the working directory first). A missing module or name, a name that is not
    a Literal of strings, or an unreadable source is a configuration error.
    """

    CODE = "LR002"
    NAME = "unknown-literal"
    MESSAGE = "{value!r} is not a value of `{field}`{hint}"
    OPTIONS = ("literals",)

    VALID = (
        Valid("if event.name == 'handoff_occured':\n    pass\n", options=_EVENTS),
        Valid("if event.kind == 'handoff_occurred':\n    pass\n", options=_EVENTS),
        Valid("if event.name == other.name:\n    pass\n", options=_EVENTS),
        Valid("flagged = event.name in {'tool_called', 'tool_output'}\n", options=_EVENTS),
        Valid("if event.name == 'anything':\n    pass\n"),
        Valid("import os\nif os.name == 'nt':\n    pass\n", options=_EVENTS),
    )
    INVALID = (
        Invalid(
            "if event.name == 'handoff_occurred':\n    pass\n",
            message=(
                "'handoff_occurred' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'handoff_occured'?"
            ),
            line=1, column=18, end_line=1, end_column=36,
            replacement="if event.name == 'handoff_occured':\n    pass\n",
            options=_EVENTS,
        ),
        Invalid(
            "if event['name'] != \"tool_call\":\n    pass\n",
            message=(
                "'tool_call' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'tool_called'?"
            ),
            line=1, column=21, end_line=1, end_column=32,
            replacement="if event['name'] != \"tool_called\":\n    pass\n",
            options=_EVENTS,
        ),
        Invalid(
            "wanted = event.name not in ('tool_called', 'tool_outputs')\n",
            message=(
                "'tool_outputs' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'tool_output'?"
            ),
            line=1, column=44, end_line=1, end_column=58,
            replacement="wanted = event.name not in ('tool_called', 'tool_output')\n",
            options=_EVENTS,
        ),
        Invalid(
            "match event.name:\n    case 'tool_called' | 'message_created':\n        pass\n",
            message=(
                "'message_created' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'message_output_created'?"
            ),
            line=2, column=26, end_line=2, end_column=43,
            replacement=(
                "match event.name:\n    case 'tool_called' | 'message_output_created':\n"
                "        pass\n"
            ),
            options=_EVENTS,
        ),
        Invalid(
            "event = RunItemStreamEvent(name='finished', item=item)\n",
            message=(
                "'finished' is not a value of `RunItemStreamEvent.name`; allowed: "
                "'handoff_occured', 'handoff_requested', 'mcp_approval_requested', "
                "'mcp_approval_response', 'mcp_list_tools', 'message_output_created', "
                "'reasoning_item_created', 'tool_called', 'tool_output', "
                "'tool_search_called', 'tool_search_output_created'"
            ),
            line=1, column=33, end_line=1, end_column=43,
            replacement=None,
            options=_EVENTS,
        ),
        Invalid(
            "match event:\n    case RunItemStreamEvent(name='done'):\n        pass\n",
            message=(
                "'done' is not a value of `RunItemStreamEvent.name`; allowed: "
                "'handoff_occured', 'handoff_requested', 'mcp_approval_requested', "
                "'mcp_approval_response', 'mcp_list_tools', 'message_output_created', "
                "'reasoning_item_created', 'tool_called', 'tool_output', "
                "'tool_search_called', 'tool_search_output_created'"
            ),
            line=2, column=34, end_line=2, end_column=40,
            replacement=None,
            options=_EVENTS,
        ),
        Invalid(
            "match payload:\n    case {'name': 'tool_outputs'}:\n        pass\n",
            message=(
                "'tool_outputs' is not a value of `RunItemStreamEvent.name`; "
                "did you mean 'tool_output'?"
            ),
            line=2, column=19, end_line=2, end_column=33,
            replacement="match payload:\n    case {'name': 'tool_output'}:\n        pass\n",
            options=_EVENTS,
        ),
    )  # fmt: skip

    def __init__(self, options: RuleOptions) -> None:
        super().__init__(options)
        self.fields = parse_literals(options.get("literals", {}))
        self.by_attribute: dict[str, list[Field]] = {}
        self.by_class: dict[str, dict[str, Field]] = {}
        for field in self.fields:
            self.by_attribute.setdefault(field.attribute, []).append(field)
            if field.owner is not None:
                self.by_class.setdefault(field.owner, {})[field.attribute] = field
        self.use_site = _use_site_pattern(self.by_attribute, self.by_class)

    def prefilter(self, text: str) -> bool:
        return self.use_site is not None and self.use_site.search(text) is not None

    def dependencies(self) -> list[Path]:
        return sorted({path for field in self.fields for path in field.sources})

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for operator, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(operator, (ast.Eq, ast.NotEq)):
                self._check_pair(left, right)
                self._check_pair(right, left)
            elif isinstance(operator, (ast.In, ast.NotIn)):
                fields = self._fields_of(left)
                if fields and isinstance(right, (ast.Tuple, ast.List, ast.Set)):
                    for element in right.elts:
                        self._check_value(element, fields, certain=False)
            left = right

    def visit_Match(self, node: ast.Match) -> None:
        fields = self._fields_of(node.subject)
        if not fields:
            return
        for case in node.cases:
            self._check_pattern(case.pattern, fields, certain=False)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        callee = node.cls
        name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
        owned = self.by_class.get(name) if isinstance(name, str) else None
        if owned is None:
            return
        for attribute, pattern in zip(node.kwd_attrs, node.kwd_patterns, strict=True):
            field = owned.get(attribute)
            if field is not None:
                self._check_pattern(pattern, [field], certain=True)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        for key, pattern in zip(node.keys, node.patterns, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                fields = self.by_attribute.get(key.value, [])
                if fields:
                    self._check_pattern(pattern, fields, certain=False)

    def visit_Call(self, node: ast.Call) -> None:
        callee = node.func
        name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
        owned = self.by_class.get(name) if isinstance(name, str) else None
        if owned is None:
            return
        for keyword in node.keywords:
            field = owned.get(keyword.arg) if keyword.arg is not None else None
            if field is not None:
                self._check_value(keyword.value, [field], certain=True)

    def _check_pattern(self, pattern: ast.pattern, fields: Sequence[Field], certain: bool) -> None:
        """Check the string values a pattern matches, through ``|`` and ``as``."""
        pending = [pattern]
        while pending:
            current = pending.pop()
            if isinstance(current, ast.MatchValue):
                self._check_value(current.value, fields, certain)
            elif isinstance(current, ast.MatchOr):
                pending.extend(current.patterns)
            elif isinstance(current, ast.MatchAs) and current.pattern is not None:
                pending.append(current.pattern)

    def _fields_of(self, node: ast.expr) -> list[Field]:
        if isinstance(node, ast.Attribute):
            return self.by_attribute.get(node.attr, [])
        if isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, str):
                return self.by_attribute.get(index.value, [])
        return []

    def _check_pair(self, field_side: ast.expr, value_side: ast.expr) -> None:
        fields = self._fields_of(field_side)
        if fields:
            self._check_value(value_side, fields, certain=False)

    def _check_value(self, node: ast.expr, fields: Sequence[Field], certain: bool) -> None:
        """Report ``node`` if it is a string none of ``fields`` allows; unless ``certain``
        that the value is the field's, only when it resembles an allowed value."""
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            return
        value = node.value
        if any(value in field.values for field in fields):
            return
        allowed = sorted({allowed for field in fields for allowed in field.values})
        suggestion, clear = closest(value, allowed)
        if suggestion is None and not certain:
            return
        if suggestion is not None:
            hint = f"; did you mean {suggestion!r}?"
        else:
            hint = "; allowed: " + ", ".join(repr(item) for item in allowed)
        field_names = ", ".join(dict.fromkeys(field.key for field in fields))
        message = self.MESSAGE.format(value=value, field=field_names, hint=hint)
        fix: Fix | None = None
        if suggestion is not None and clear:
            body = self.file.string_body(node)
            # Only a plainly spelt string: no f-string, escapes or implicit concatenation.
            if body is not None:
                fix = self.replace(body, suggestion, safe=False)
        self.report(node, message, fix)


@dataclass(frozen=True)
class Field:
    """A configured string field and the values its declaration allows."""

    key: str
    attribute: str
    owner: str | None
    values: frozenset[str]
    sources: frozenset[Path]
    """The module sources the values were read from."""


def parse_literals(table: object) -> list[Field]:
    """Validate ``[tool.lint_rules.literals]`` and read each declaration's values."""
    if not isinstance(table, dict):
        raise ConfigError('\'literals\' must be a table of "Class.attr" = "module:Name"')
    fields = []
    for key, target in table.items():
        parts = str(key).split(".")
        if len(parts) > 2 or not all(part.isidentifier() for part in parts):
            raise ConfigError(f'\'literals\' {key!r}: expected "attr" or "Class.attr"')
        if not isinstance(target, str) or ":" not in target:
            raise ConfigError(
                f'\'literals\' {key!r}: expected "module:Name" or "module:Class.attr"'
            )
        module, _, name = target.partition(":")
        if not module or not all(part.isidentifier() for part in name.split(".")):
            raise ConfigError(f"'literals' {key!r}: {target!r} is not \"module:Name\"")
        try:
            with recording() as sources:
                values = literal_values(module, name)
        except ConfigError as error:
            raise ConfigError(f"'literals' {key!r}: {error}") from error
        owner = parts[0] if len(parts) == 2 else None
        fields.append(Field(str(key), parts[-1], owner, frozenset(values), frozenset(sources)))
    return fields


def _use_site_pattern(attributes: Iterable[str], classes: Iterable[str]) -> re.Pattern[str] | None:
    """Text every checked file contains: `.attr` (comments may sit between the dot and
    the name inside brackets), a quoted `'attr'`, or a declaring class's name."""
    attribute = "|".join(map(re.escape, attributes))
    if not attribute:
        return None
    alternatives = [rf"\.\s*(?:#[^\n]*\n\s*)*(?:{attribute})\b", rf"['\"](?:{attribute})['\"]"]
    alternatives.extend(rf"\b{re.escape(name)}\b" for name in classes)
    return re.compile("|".join(alternatives))


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
