"""``[tool.lint_rules.literals]``: the string fields LR002 checks, read from source.

``parse_literals`` validates the table and reads, for each field, the values its
``Literal[...]`` declaration allows and what the declaring module tells about the
class that has it (its discriminators, the unions holding it, its producers);
``knowledge_of`` turns the fields into what the receiver analysis
(``receivers.py``) needs to know which expressions are instances of those classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from lint_rules.analysis.declarations import (
    ClassFacts,
    Declarations,
    class_facts,
    literal_values,
)
from lint_rules.analysis.receivers import ELEMENT, Knowledge, Types, annotation_types
from lint_rules.analysis.renames import Renames
from lint_rules.rule import ConfigError


@dataclass(frozen=True)
class Field:
    """A configured string field and the values its declaration allows."""

    key: str
    attribute: str
    owner: str | None
    values: frozenset[str]
    sources: frozenset[Path]
    """The module sources the values were read from."""
    classes: frozenset[str] = frozenset()
    """Names of the class whose instances have the field (the key's class and the
    declaring one): a receiver of one of them has exactly these values."""
    unions: frozenset[str] = frozenset()
    """Names of unions that hold the class, and what producers give."""
    discriminators: tuple[tuple[str, str], ...] = ()
    """``(attribute, value)`` pairs that only the class's instances have."""
    siblings: tuple[tuple[tuple[str, str], str], ...] = ()
    """``(attribute, value)`` pairs of the other classes of its unions, with the class."""
    producers: tuple[tuple[str, Types], ...] = ()
    """Functions and methods whose result is (or iterates over) the class or a union."""
    member_values: frozenset[str] = frozenset()
    """The values the other members of its unions declare for the field."""
    open_unions: frozenset[str] = frozenset()
    """Its unions with a member whose field may be any string: not checked."""


def with_renamed_values(fields: list[Field], renames: Renames) -> list[Field]:
    """Allow the new spelling of a value that ``renames`` (LR001) renames: the
    declaration is renamed in the same ``fix``, and until then both spellings are
    valid, so the two rules never undo each other's fixes."""
    renamed = {**renames.bare, **renames.strings}
    if not renamed:
        return fields
    return [
        replace(
            field,
            values=field.values | {new for old, new in renamed.items() if old in field.values},
        )
        for field in fields
    ]


def knowledge_of(fields: Sequence[Field]) -> Knowledge:
    discriminators: dict[tuple[str, str], Types] = {}
    producers: dict[str, Types] = {}
    for field in fields:
        for pair, sibling in field.siblings:
            discriminators[pair] = discriminators.get(pair, frozenset()) | {sibling}
        for pair in field.discriminators:
            discriminators[pair] = discriminators.get(pair, frozenset()) | field.classes
        for name, types in field.producers:
            producers[name] = producers.get(name, frozenset()) | types
    classes = frozenset(name for field in fields for name in field.classes)
    return Knowledge(classes, discriminators, producers)


_ENTRY_KEYS = ("values", "discriminator", "producers")


def parse_literals(table: object, declarations: Declarations) -> list[Field]:
    """Validate ``[tool.lint_rules.literals]`` and read each declaration's values
    (through ``declarations``: the project's)."""
    if not isinstance(table, dict):
        raise ConfigError('\'literals\' must be a table of "Class.attr" = "module:Name"')
    fields = []
    for key, entry in table.items():
        parts = str(key).split(".")
        if len(parts) > 2 or not all(part.isidentifier() for part in parts):
            raise ConfigError(f'\'literals\' {key!r}: expected "attr" or "Class.attr"')
        owner = parts[0] if len(parts) == 2 else None
        target, discriminator, producers = _entry(str(key), entry, owner)
        module, _, name = target.partition(":")
        if not module or not all(part.isidentifier() for part in name.split(".")):
            raise ConfigError(f"'literals' {key!r}: {target!r} is not \"module:Name\"")
        try:
            with declarations.recording() as sources:
                values = literal_values(module, name, declarations)
                facts = None
                if owner is not None:
                    declaring = name.split(".")[-2] if "." in name else owner
                    facts = class_facts(module, declaring, parts[-1], declarations)
        except ConfigError as error:
            raise ConfigError(f"'literals' {key!r}: {error}") from error
        field = Field(str(key), parts[-1], owner, frozenset(values), frozenset(sources))
        if owner is not None:
            field = _with_facts(field, facts, discriminator, producers)
        fields.append(field)
    return fields


def _entry(
    key: str, entry: object, owner: str | None
) -> tuple[str, dict[str, list[str]], list[str]]:
    """The target, discriminator and producers of one ``literals`` entry, validated."""
    if isinstance(entry, str):
        if ":" not in entry:
            raise ConfigError(
                f'\'literals\' {key!r}: expected "module:Name" or "module:Class.attr"'
            )
        return entry, {}, []
    if not isinstance(entry, dict):
        raise ConfigError(
            f"'literals' {key!r}: expected \"module:Name\" or an inline table with 'values'"
        )
    unknown = sorted(set(entry) - set(_ENTRY_KEYS))
    if unknown:
        raise ConfigError(
            f"'literals' {key!r}: unknown key {unknown[0]!r} "
            "(expected 'values', 'discriminator', 'producers')"
        )
    target = entry.get("values")
    if not isinstance(target, str) or ":" not in target:
        raise ConfigError(
            f"'literals' {key!r}: 'values' must be \"module:Name\" or \"module:Class.attr\""
        )
    discriminator = entry.get("discriminator", {})
    if not isinstance(discriminator, dict):
        raise ConfigError(
            f"'literals' {key!r}: 'discriminator' must be a table of attribute = [\"value\", ...]"
        )
    selected: dict[str, list[str]] = {}
    for attribute, allowed in discriminator.items():
        listed = [allowed] if isinstance(allowed, str) else allowed
        if (
            not str(attribute).isidentifier()
            or not isinstance(listed, list)
            or not listed
            or not all(isinstance(value, str) for value in listed)
        ):
            raise ConfigError(
                f"'literals' {key!r}: 'discriminator' {attribute!r} must be an attribute "
                "name = a string or a non-empty list of strings"
            )
        selected[str(attribute)] = listed
    producers = entry.get("producers", [])
    if not isinstance(producers, list) or not all(
        isinstance(name, str) and name.isidentifier() for name in producers
    ):
        raise ConfigError(
            f"'literals' {key!r}: 'producers' must be a list of function or method names"
        )
    if (selected or producers) and owner is None:
        raise ConfigError(
            f"'literals' {key!r}: 'discriminator' and 'producers' need a \"Class.attr\" key"
        )
    return target, selected, list(producers)


def _with_facts(
    field: Field,
    facts: ClassFacts | None,
    discriminator: Mapping[str, list[str]],
    producers: Sequence[str],
) -> Field:
    """``field`` with what its declaring module and its configuration tell about the
    class: its names, discriminators, the unions holding it and its producers."""
    assert field.owner is not None
    classes = {field.owner}
    unions: set[str] = set()
    pairs = {(attribute, value) for attribute, values in discriminator.items() for value in values}
    produced: dict[str, Types] = {}
    siblings: dict[tuple[str, str], str] = {}
    member_values: frozenset[str] = frozenset()
    open_unions: frozenset[str] = frozenset()
    if facts is not None:
        siblings.update(facts.siblings)
        member_values, open_unions = facts.member_values, facts.open_unions
        classes.add(facts.name)
        unions.update(facts.unions)
        pairs.update(facts.discriminators.items())
        for name, returns in facts.producers.items():
            produced[name] = annotation_types(returns, {})
    if producers:
        # What a configured producer gives: the class or a union holding it, or an
        # iterator of them.
        given = sorted(unions) or [f"<{field.key}>"]
        unions.update(given)
        for name in producers:
            produced[name] = produced.get(name, frozenset()) | {
                *given,
                *(ELEMENT + item for item in given),
            }
    return replace(
        field,
        classes=frozenset(classes),
        unions=frozenset(unions),
        discriminators=tuple(sorted(pairs)),
        siblings=tuple(
            sorted((pair, name) for pair, name in siblings.items() if pair not in pairs)
        ),
        producers=tuple(sorted(produced.items())),
        member_values=member_values,
        open_unions=open_unions,
    )
