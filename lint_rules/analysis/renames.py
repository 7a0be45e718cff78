"""``[tool.lint_rules.renames]``, parsed once and typed: what each entry renames.

``parse_renames`` is the only reader of the table: LR001 renames what it lists,
LR002 allows the new spelling of a renamed value, LR004 leaves the old names to
LR001. Its ``strings`` table (``[tool.lint_rules.renames.strings]``) renames string
values instead of names (``"old text" = "new text"``). Any other entry is a bare name
(``old``: every binding and use of that spelling) or a qualified target
(``module:name``, ``module:Class.name``, ``module:function(keyword)``); see LR001's
documentation.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from lint_rules.rule import ConfigError


@dataclass(frozen=True)
class Renames:
    """The ``renames`` table, validated."""

    bare: Mapping[str, str] = field(default_factory=dict)
    """Bare names: old spelling -> new name."""
    targets: Mapping[str, tuple[Target, ...]] = field(default_factory=dict)
    """Qualified targets, by the name that is renamed (several may share one)."""
    strings: Mapping[str, str] = field(default_factory=dict)
    """String values (``[tool.lint_rules.renames.strings]``): old text -> new text."""

    @property
    def old_names(self) -> frozenset[str]:
        """Every name an entry renames (the last part of a qualified one)."""
        return frozenset((*self.bare, *self.targets))

    def __contains__(self, name: object) -> bool:
        return name in self.bare or name in self.targets


WITHHELD = re.compile(r"^`(?P<key>[^`]+)` was renamed to `[^`]+`; .*\brename withheld: ")
"""How an LR001 finding says its qualified target's rename is withheld (the summary
names those targets)."""


def withheld_note(why: str) -> str:
    """The words that end a finding whose target's rename is withheld (see ``WITHHELD``)."""
    return f"rename withheld: {why}"


def parse_renames(table: object) -> Renames:
    """Validate a ``renames`` table; ``ConfigError`` names the entry that is wrong."""
    if not isinstance(table, dict):
        raise ConfigError("'renames' must be a table of old_name = \"new_name\"")
    bare: dict[str, str] = {}
    targets: dict[str, list[Target]] = {}
    strings: dict[str, str] = {}
    for key, new in table.items():
        if key == STRINGS and not isinstance(new, str):
            strings = parse_strings(new)
            continue
        if not isinstance(new, str) or not _is_identifier(new):
            hint = _STRINGS_HINT if isinstance(new, str) and not _is_identifier(str(key)) else ""
            raise ConfigError(f"'renames' {key!r}: {new!r} is not a Python identifier{hint}")
        target = parse_target(str(key), new)
        if target.kind == "name":
            bare[target.old] = new
        else:
            targets.setdefault(target.old, []).append(target)
    return Renames(bare, {old: tuple(found) for old, found in targets.items()}, strings)


STRINGS = "strings"
"""The key of ``renames`` whose table renames string values."""
_STRINGS_HINT = (
    " (a string value, such as an event name, goes in [tool.lint_rules.renames.strings])"
)


def parse_strings(table: object) -> dict[str, str]:
    """Validate ``[tool.lint_rules.renames.strings]``: ``"old" = "new"``, both non-empty
    strings (any text: dots, dashes, spaces), different, and no new string renamed again
    (``fix`` would chain them)."""
    if not isinstance(table, dict):
        raise ConfigError(f'\'renames\' {STRINGS!r}: expected a table of "old" = "new" strings')
    strings: dict[str, str] = {}
    for old, new in table.items():
        where = f"'renames.strings' {str(old)!r}"
        if not old:
            raise ConfigError(f"{where}: the old string is empty")
        if not isinstance(new, str):
            raise ConfigError(f"{where}: the new value must be a string, not {type(new).__name__}")
        if not new:
            raise ConfigError(f"{where}: the new string is empty")
        if new == old:
            raise ConfigError(f"{where}: the new string is the old one")
        strings[str(old)] = new
    for old, new in strings.items():
        if new in strings:
            raise ConfigError(
                f"'renames.strings' {old!r}: its new string {new!r} is itself renamed "
                f"(to {strings[new]!r})"
            )
    return strings


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
            raise ConfigError(
                f"'renames' {key!r}: {key!r} is not a Python identifier{_STRINGS_HINT}"
            )
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
