"""``[tool.lint_rules]`` from the nearest pyproject.toml, validated strictly."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lint_rules.rule import ConfigError, Rule

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

ENGINE_CODES = {"LR000": "invalid-file", "LR999": "internal-error"}
"""Codes the engine itself reports (unreadable, undecodable or unparsable file; a
rule that raised), by name. They are reported whatever ``select`` says."""

ENGINE_KEYS = ("select", "ignore", "exclude", "per-file-ignores")


@dataclass(frozen=True)
class Config:
    """The validated configuration of one project."""

    root: Path
    """Where the configuration lives (the directory of pyproject.toml, else the cwd)."""
    select: tuple[str, ...] = ("LR",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    rule_options: Mapping[str, object] = field(default_factory=dict)
    """Values of the rule-owned keys, by key (e.g. ``renames``)."""

    def options_for(self, rule: type[Rule]) -> dict[str, object]:
        """The options a rule owns or reads (``Rule.READS``) that are set."""
        keys = (*rule.OPTIONS, *rule.READS)
        return {key: self.rule_options[key] for key in keys if key in self.rule_options}


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start``."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path, rules: Sequence[type[Rule]]) -> Config:
    """Read and validate ``[tool.lint_rules]``; raise ``ConfigError`` naming the problem."""
    pyproject = find_pyproject(start.resolve())
    if pyproject is None:
        return Config(root=start.resolve())
    try:
        document = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from error
    table = document.get("tool", {}).get("lint_rules", {})
    return parse_config(table, pyproject.parent, rules, source=str(pyproject))


def parse_config(
    table: object, root: Path, rules: Sequence[type[Rule]], source: str = "pyproject.toml"
) -> Config:
    """Validate a ``[tool.lint_rules]`` table; every error names its key."""
    where = f"{source} [tool.lint_rules]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    owned = {key for rule in rules for key in rule.OPTIONS}
    for key in table:
        if key not in ENGINE_KEYS and key not in owned:
            raise ConfigError(f"{where}: unknown key {key!r}")
    codes = known_codes(rules)
    per_file_table = table.get("per-file-ignores", {})
    if not isinstance(per_file_table, dict):
        raise ConfigError(f"{where}: 'per-file-ignores' must be a table of pattern = [codes]")
    per_file_ignores = {
        str(pattern): _codes(value, f"{where}: 'per-file-ignores' {pattern!r}", codes)
        for pattern, value in per_file_table.items()
    }
    config = Config(
        root=root,
        select=_codes(table.get("select", ["LR"]), f"{where}: 'select'", codes),
        ignore=_codes(table.get("ignore", []), f"{where}: 'ignore'", codes),
        exclude=_strings(table.get("exclude", []), f"{where}: 'exclude'"),
        per_file_ignores=per_file_ignores,
        rule_options={key: table[key] for key in owned if key in table},
    )
    for rule in rules:  # rules validate the keys they own; errors name the key
        try:
            rule(config.options_for(rule))
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from error
    return config


def known_codes(rules: Sequence[type[Rule]]) -> set[str]:
    """Every code a selector may name: the rules' and the engine's."""
    return {rule.CODE for rule in rules} | set(ENGINE_CODES)


def check_selectors(selectors: Sequence[str], what: str, codes: set[str]) -> tuple[str, ...]:
    """Validate code prefixes (``LR``, ``LR00``, ``LR001``); error names the bad one."""
    for selector in selectors:
        if not selector or not any(code.startswith(selector) for code in codes):
            raise ConfigError(f"{what}: unknown rule code or prefix {selector!r}")
    return tuple(selectors)


def is_selected(code: str, select: Sequence[str], ignore: Sequence[str]) -> bool:
    """Whether a code matches a selector and no ignore prefix."""
    return any(code.startswith(prefix) for prefix in select) and not any(
        code.startswith(prefix) for prefix in ignore
    )


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a list of strings")
    return tuple(value)


def _codes(value: object, what: str, codes: set[str]) -> tuple[str, ...]:
    return check_selectors(_strings(value, what), what, codes)
