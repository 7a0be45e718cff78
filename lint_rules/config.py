"""``[tool.lint_rules]``: which pyproject.toml governs a file, read and validated strictly.

A file is governed by the nearest ``pyproject.toml`` at or above its directory that
has a ``[tool.lint_rules]`` table; without one, by the nearest ``pyproject.toml`` at all
(the project's defaults, rooted there); a file under no ``pyproject.toml`` by the one
that governs the working directory, else by the defaults rooted at the working
directory. Configurations are never merged: the nearest wins (as in ruff).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lint_rules.rule import ConfigError, Rule

if TYPE_CHECKING:
    from lint_rules.analysis.project import Project

ENGINE_CODES = {"LR000": "invalid-file", "LR999": "internal-error"}
"""Codes the engine itself reports (unreadable, undecodable or unparsable file; a
rule that raised), by name. They are reported whatever ``select`` says."""

ENGINE_KEYS = ("select", "ignore", "exclude", "per-file-ignores")


class Validated:
    """What validating a configuration read: the ``Project`` its rules were built with
    (the module sources parsed, the fields read), handed once to the run that follows
    (``take``), so that the declarations are not read again.

    Not pickled: a worker process started another way than ``fork`` reads them again."""

    def __init__(self, project: Project | None = None) -> None:
        self._project = project

    def take(self) -> Project | None:
        """The validating ``Project``, the first time only, and only while every module
        source and directory its lookups consulted is as it was (else ``None``)."""
        project, self._project = self._project, None
        if project is None or not project.declarations.unchanged():
            return None
        return project

    def __reduce__(self) -> tuple[type[Validated], tuple[()]]:
        return (Validated, ())


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
    validated: Validated = field(default_factory=Validated, compare=False, repr=False)
    """What validating it read, for the first run's ``Project`` (``Validated.take``)."""

    def options_for(self, rule: type[Rule]) -> dict[str, object]:
        """The options a rule owns or reads (``Rule.READS``) that are set."""
        keys = (*rule.OPTIONS, *rule.READS)
        return {key: self.rule_options[key] for key in keys if key in self.rule_options}

    def selected(self, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
        """The rules ``select`` and ``ignore`` turn on, in the given order."""
        return [rule for rule in rules if is_selected(rule.CODE, self.select, self.ignore)]


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start``."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_config(start: Path, rules: Sequence[type[Rule]]) -> Config:
    """The configuration that governs the directory ``start`` (see the module docstring);
    raise ``ConfigError`` naming the problem."""
    return Configurations(rules, cwd=start).for_directory(start)


class Configurations:
    """The configuration that governs each directory, each pyproject.toml read once.

    ``select`` (when given) replaces every configuration's ``select`` and ``ignore`` is
    added to each one's, as ``--select`` and ``--ignore`` do.
    """

    def __init__(
        self,
        rules: Sequence[type[Rule]],
        cwd: Path | None = None,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] = (),
        remember: bool = False,
    ) -> None:
        self.rules = rules
        self.remember = remember
        """Whether validations are kept for the next run (``parse_config``'s ``remember``)."""
        self.cwd = Path(os.path.abspath(cwd if cwd is not None else Path.cwd()))
        self.select = tuple(select) if select is not None else None
        self.ignore = tuple(ignore)
        self._governing: dict[str, Config] = {}
        self._loaded: dict[Path, Config] = {}
        self._tables: dict[str, object] = {}
        """Each pyproject.toml's ``[tool.lint_rules]`` value, by path (``None``: none)."""
        self._nearest_table: dict[str, Path | None] = {}
        self._nearest_file: dict[str, Path | None] = {}

    @property
    def default(self) -> Config:
        """The configuration of the working directory: for files under no pyproject.toml."""
        return self.for_directory(self.cwd)

    def for_path(self, path: Path) -> Config:
        """The configuration that governs a file (by its directory) or a directory."""
        absolute = os.path.abspath(path)
        directory = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        return self.for_directory(Path(directory))

    def for_directory(self, directory: Path) -> Config:
        """The configuration that governs the files directly in ``directory``."""
        key = os.path.abspath(directory)
        config = self._governing.get(key)
        if config is None:
            pyproject = self._nearest(key, with_table=True) or self._nearest(key, with_table=False)
            if pyproject is not None:
                config = self._load(pyproject)
            elif key == str(self.cwd):
                config = self._adjusted(Config(root=self.cwd))
            else:
                config = self.default
            self._governing[key] = config
        return config

    def _nearest(self, directory: str, with_table: bool) -> Path | None:
        """The nearest pyproject.toml at or above ``directory`` (with a
        ``[tool.lint_rules]`` table when ``with_table``), remembered per directory."""
        memo = self._nearest_table if with_table else self._nearest_file
        walked = []
        found: Path | None = None
        current = directory
        while True:
            if current in memo:
                found = memo[current]
                break
            walked.append(current)
            candidate = os.path.join(current, "pyproject.toml")
            if os.path.isfile(candidate) and (not with_table or self._table(candidate)):
                found = Path(candidate)
                break
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
        for item in walked:
            memo[item] = found
        return found

    def _table(self, pyproject: str) -> bool:
        """Whether ``pyproject`` has a ``[tool.lint_rules]`` table (parsed once)."""
        if pyproject not in self._tables:
            self._tables[pyproject] = read_table(Path(pyproject), self.remember)
        return self._tables[pyproject] is not None

    def _load(self, pyproject: Path) -> Config:
        config = self._loaded.get(pyproject)
        if config is None:
            table = self._tables[str(pyproject)] if self._table(str(pyproject)) else {}
            config = self._adjusted(
                parse_config(
                    table,
                    pyproject.parent,
                    self.rules,
                    source=str(pyproject),
                    remember=self.remember,
                )
            )
            self._loaded[pyproject] = config
        return config

    def _adjusted(self, config: Config) -> Config:
        if self.select is None and not self.ignore:
            return config
        select = self.select if self.select is not None else config.select
        return replace(config, select=select, ignore=(*config.ignore, *self.ignore))


TABLES_FORMAT = 1
"""Changes when a remembered table's layout does (``read_table``)."""


def read_table(pyproject: Path, remember: bool = False) -> object:
    """The ``[tool.lint_rules]`` value of ``pyproject`` (``None``: none); ``ConfigError`` if
    the file cannot be read or parsed. With ``remember``, a table is kept under the
    directory's cache by the file's content digest, and read from there while the file
    holds the same bytes: tomllib is not even imported then."""
    from lint_rules import quick

    try:
        data = pyproject.read_bytes()
    except OSError as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from error
    remembered = None
    if remember:
        name = f"table-{quick.digest(data)}.marshal"
        remembered = pyproject.parent / quick.CACHE_DIRECTORY / "config" / name
        found = _remembered_table(remembered)
        if found is not None:
            return found[1]
    table = _parse_table(pyproject, data)
    if remembered is not None and table is not None:
        import marshal

        stored: Any = (TABLES_FORMAT, table)
        try:
            encoded = marshal.dumps(stored)
            quick.make_cache_folder(str(pyproject.parent))
            remembered.parent.mkdir(exist_ok=True)
            quick.write_file(str(remembered), encoded)
        except (OSError, ValueError):  # a TOML date, say: read from the file next time
            pass
    return table


def _remembered_table(location: Path) -> tuple[int, object] | None:
    import marshal

    try:
        found = marshal.loads(location.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if isinstance(found, tuple) and len(found) == 2 and found[0] == TABLES_FORMAT:
        return found
    return None


def _parse_table(pyproject: Path, data: bytes) -> object:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read: {error}") from error
    tool = document.get("tool", {})
    return tool.get("lint_rules") if isinstance(tool, dict) else None


def parse_config(
    table: object,
    root: Path,
    rules: Sequence[type[Rule]],
    source: str = "pyproject.toml",
    remember: bool = False,
) -> Config:
    """Validate a ``[tool.lint_rules]`` table; every error names its key.

    The rules are instantiated once to validate their options, with a ``Project`` of
    ``root`` (modules they read declarations from are looked up there first), which
    the configuration keeps for the first run (``Config.validated``). With ``remember``,
    what they read is kept under the root's cache for the next run, and read from it
    while it holds (``analysis.remembered``)."""
    from lint_rules.analysis.project import Project

    where = f"{source} [tool.lint_rules]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    owned = {key for rule in rules for key in rule.OPTIONS}
    for key in table:
        if key not in ENGINE_KEYS and key not in owned:
            raise ConfigError(f"{where}: unknown key {key!r}")
    per_file_table = table.get("per-file-ignores", {})
    if not isinstance(per_file_table, dict):
        raise ConfigError(f"{where}: 'per-file-ignores' must be a table of pattern = [codes]")
    per_file_ignores = {
        str(pattern): _codes(value, f"{where}: 'per-file-ignores' {pattern!r}", rules)
        for pattern, value in per_file_table.items()
    }
    config = Config(
        root=root,
        select=_codes(table.get("select", ["LR"]), f"{where}: 'select'", rules),
        ignore=_codes(table.get("ignore", []), f"{where}: 'ignore'", rules),
        exclude=_strings(table.get("exclude", []), f"{where}: 'exclude'"),
        per_file_ignores=per_file_ignores,
        rule_options={key: table[key] for key in owned if key in table},
    )
    remembered = None
    if remember:
        from lint_rules.analysis.remembered import Remembered

        remembered = Remembered(table, root, rules)
        project = remembered.project
    else:
        project = Project(root)
    for rule in rules:  # rules validate the keys they own; errors name the key
        try:
            rule.create(config.options_for(rule), project)
        except ConfigError as error:
            raise ConfigError(f"{where}: {error}") from error
    if remembered is not None:
        remembered.save()
    return replace(config, validated=Validated(project))


def known_codes(rules: Sequence[type[Rule]]) -> set[str]:
    """Every code a finding may have: the rules' and the engine's."""
    return {rule.CODE for rule in rules} | set(ENGINE_CODES)


def check_selectors(
    selectors: Sequence[str], what: str, rules: Sequence[type[Rule]]
) -> tuple[str, ...]:
    """Validate code prefixes (``LR``, ``LR00``, ``LR001``, any case): each must match a
    rule. An empty one, or one that matches only the engine's codes (which are reported
    whatever ``select`` and ``ignore`` say) is an error that names it."""
    codes = sorted(rule.CODE for rule in rules)
    normalized = []
    for selector in selectors:
        code = selector.strip().upper()
        if not code:
            raise ConfigError(f"{what}: empty rule code or prefix")
        if not any(known.startswith(code) for known in codes):
            engine = [known for known in sorted(ENGINE_CODES) if known.startswith(code)]
            if engine:
                raise ConfigError(
                    f"{what}: {selector!r} selects no rule, only the engine's"
                    f" {', '.join(engine)}, which are reported whatever select and ignore say"
                )
            raise ConfigError(
                f"{what}: unknown rule code or prefix {selector!r}"
                f" (the rules are {', '.join(codes) or 'none'})"
            )
        normalized.append(code)
    return tuple(normalized)


def is_selected(code: str, select: Sequence[str], ignore: Sequence[str]) -> bool:
    """Whether a code matches a selector and no ignore prefix."""
    return any(code.startswith(prefix) for prefix in select) and not any(
        code.startswith(prefix) for prefix in ignore
    )


def _strings(value: object, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a list of strings")
    return tuple(value)


def _codes(value: object, what: str, rules: Sequence[type[Rule]]) -> tuple[str, ...]:
    return check_selectors(_strings(value, what), what, rules)
