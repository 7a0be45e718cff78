"""``[tool.lint_rules.renames]``, parsed once and typed: what each entry renames.

``parse_renames`` is the only reader of the table: LR001 renames what it lists,
LR002 allows the new spelling of a renamed value, LR004 leaves the old names to
LR001. An entry is a bare name (``old``: every binding and use of that spelling)
or a qualified target (``module:name``, ``module:Class.name``,
``module:function(keyword)``); see LR001's documentation.
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
    for key, new in table.items():
        if not isinstance(new, str) or not _is_identifier(new):
            raise ConfigError(f"'renames' {key!r}: {new!r} is not a Python identifier")
        target = parse_target(str(key), new)
        if target.kind == "name":
            bare[target.old] = new
        else:
            targets.setdefault(target.old, []).append(target)
    return Renames(bare, {old: tuple(found) for old, found in targets.items()})


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
