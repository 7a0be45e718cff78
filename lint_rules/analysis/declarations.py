"""Read declarations from a module's source without importing or running it.

``literal_values`` gives the strings a ``Literal[...]`` declaration allows;
``read_protocol`` gives the members of a ``Protocol`` class. Both read through a
``Declarations`` (a project's: ``Project.declarations``), which locates the module
in the project root (without one, the working directory), then its ``src/`` (a
src-layout project that is not installed), then the project's other first-party
source roots (each directory of ``src/`` that is not a package itself, e.g.
``src/<name>-types/``, and each nested project under the root: a directory with its
own ``pyproject.toml``, ``setup.py`` or ``setup.cfg``, with its ``src/``), then
``sys.path`` without the working directory (``python -m`` puts it first), so that
what is read does not depend on where the command runs or on ``PYTHONPATH``. It
searches with ``importlib.machinery.PathFinder`` one package level at a time, so no
package ``__init__`` is executed, and raises ``ConfigError`` naming the module and the
name when it cannot be found, read, or is not what was asked. What it located and
parsed it keeps, for its project's run only.
"""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TypeVar, cast

from lint_rules.quick import MODIFIED, state
from lint_rules.rule import ConfigError, parse_source

T = TypeVar("T")

TYPING_MODULES = ("typing", "typing_extensions")

_WORD = re.compile(r"\w+")

# Python before 3.12 cannot parse PEP 695 `type X = ...`: such lines are read as `X = ...`.
_TYPE_STATEMENT = re.compile(
    r"^([ \t]*)type[ \t]+(\w+)[ \t]*(?:\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\])?[ \t]*=",
    re.MULTILINE,
)


@dataclass(frozen=True)
class Parameter:
    """One parameter of a method, as written."""

    name: str
    kind: str
    """``positional-only``, ``positional or keyword``, ``keyword-only``, ``*args`` or
    ``**kwargs``."""
    default: str | None
    """The default's source text, or None when there is none."""


@dataclass(frozen=True)
class Member:
    """A protocol member: a method (``parameters`` set) or an attribute."""

    name: str
    signature: str
    """What the protocol declares, e.g. ``async def pop_item(self) -> Item | None``."""
    is_method: bool
    is_async: bool = False
    parameters: tuple[Parameter, ...] = ()
    has_body: bool = False
    """Whether an explicit subclass inherits an implementation (a non-trivial body, or
    an attribute's value)."""
    returns: str | None = None
    """A method's return annotation as written (None when it has none)."""
    module: str = ""
    """The module that declares the member, where the names of ``returns`` resolve."""
    is_generator: bool = False
    """Whether the method's body yields (an ``async def`` that yields is an async
    generator, not a coroutine)."""


@dataclass(frozen=True)
class ProtocolSpec:
    """A Protocol read from source: its members (inherited ones included)."""

    module: str
    name: str
    members: dict[str, Member]
    abcs: tuple[str, ...]
    """Abstract base classes in the same module that declare every method of the
    protocol (``SessionABC`` beside ``Session``), by name."""
    provided: dict[str, frozenset[str]]
    """For the protocol and each ABC (by name): the members a subclass inherits
    ready-made (a concrete method, an attribute with a value)."""

    @property
    def qualified_name(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def methods(self) -> list[Member]:
        return [member for member in self.members.values() if member.is_method]


def literal_values(
    module: str, name: str, declarations: Declarations | None = None
) -> tuple[str, ...]:
    """The strings allowed by ``name`` in ``module``: a Literal alias or ``Class.attr``.

    Aliases may be plain, ``TypeAlias``-annotated or PEP 695 ``type`` statements,
    unions of Literals and aliases of aliases (also imported from other modules);
    ``Class.attr`` is an annotated class attribute (dataclass, pydantic model,
    TypedDict), looked up in the class's bases too. ``declarations``: the project's
    (default: outside any project, from the working directory).
    """
    parts = name.split(".")
    source, parts[0] = defined_in(_reader(declarations).read_module(module), parts[0])
    if len(parts) == 1:
        expression = source.alias(parts[0])
        if expression is None:
            raise ConfigError(f"{module}: no module-level name {parts[0]!r}")
        owner = source
    else:
        found = _class_attribute(source, parts[:-1], parts[-1], seen=set())
        if found is None:
            raise ConfigError(f"{module}: no annotated class attribute {name!r}")
        owner, expression = found
    values = _literal_strings(owner, expression, seen=set())
    if values is None:
        raise ConfigError(f"{module}:{name} is not a Literal of strings")
    return tuple(dict.fromkeys(values))


def read_protocol(module: str, name: str, declarations: Declarations | None = None) -> ProtocolSpec:
    """The Protocol ``name`` in ``module`` with its members, inherited ones included.

    A protocol re-exported by ``module`` is read where it is defined, and named so."""
    source, name = defined_in(_reader(declarations).read_module(module), name)
    module = source.name
    node = source.classes.get(name)
    if node is None:
        raise ConfigError(f"{module}: no class {name!r}")
    if not is_protocol(source, node):
        raise ConfigError(f"{module}:{name} is not a Protocol")
    members = _protocol_members(source, node, seen=set())
    method_names = {member.name for member in members.values() if member.is_method}
    abcs = tuple(
        candidate.name
        for candidate in source.classes.values()
        if candidate is not node
        and _is_abc(source, candidate)
        and method_names <= {item.name for item in _defs(candidate)}
    )
    provided = {name: frozenset(member.name for member in members.values() if member.has_body)}
    for abc_name in abcs:
        provided[abc_name] = frozenset(_concrete_members(source.classes[abc_name]))
    return ProtocolSpec(module, name, members, abcs, provided)


@dataclass(frozen=True)
class ModuleSource:
    """A module's syntax tree and what its top level binds."""

    name: str
    path: Path
    package: str
    tree: ast.Module
    reader: Declarations = field(compare=False, repr=False)
    """Where the modules it imports from are read (its project's ``Declarations``)."""

    memo: dict[object, tuple[object, frozenset[Path]]] = field(
        default_factory=dict, compare=False, repr=False
    )
    """What was derived from the tree, by what was asked, with the module sources read
    for it (``_remembered``)."""

    @cached_property
    def statements(self) -> list[ast.stmt]:
        """The module-level statements (``top_level``), listed once."""
        return top_level(self.tree)

    @cached_property
    def classes(self) -> dict[str, ast.ClassDef]:
        return {node.name: node for node in self.statements if isinstance(node, ast.ClassDef)}

    @cached_property
    def nested_classes(self) -> list[tuple[ast.ClassDef, str, dict[str, ast.ClassDef]]]:
        """Every class of the module in source order, with its ``__qualname__`` and the
        classes its bases may name: the module's, overlaid by those of each enclosing
        function and of the body that defines it."""
        found: list[tuple[ast.ClassDef, str, dict[str, ast.ClassDef]]] = []

        def visit(body: list[ast.stmt], prefix: str, visible: dict[str, ast.ClassDef]) -> None:
            definitions = _definitions(body)
            classes = [node for node in definitions if isinstance(node, ast.ClassDef)]
            local = {**visible, **{node.name: node for node in classes}} if classes else visible
            for node in definitions:
                if isinstance(node, ast.ClassDef):
                    found.append((node, prefix + node.name, local))
                    # A class body's names are not visible in the classes nested in it.
                    visit(node.body, f"{prefix}{node.name}.", visible)
                else:
                    visit(node.body, f"{prefix}{node.name}.<locals>.", local)

        visit(self.tree.body, "", self.classes)
        return found

    def alias(self, name: str) -> ast.expr | None:
        """The value assigned to a module-level ``name`` (None if not assigned)."""
        return self.aliases.get(name)

    @cached_property
    def aliases(self) -> dict[str, ast.expr]:
        """Each name module-level assignments bind, with the value (the last one wins)."""
        table: dict[str, ast.expr] = {}
        for node in self.statements:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        table[target.id] = node.value
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.value is not None
            ):
                table[node.target.id] = node.value
        return table

    def imported(self, name: str) -> str | None:
        """The qualified name a top-level import binds to ``name`` (``mod.attr`` or ``mod``)."""
        return self.imports.get(name)

    @cached_property
    def imports(self) -> dict[str, str]:
        """Each name the top-level imports bind, and what to (the first import wins)."""
        table: dict[str, str] = {}
        for node in self.statements:
            if isinstance(node, ast.ImportFrom):
                base = self.resolve_relative(node.module, node.level)
                for alias in node.names:
                    qualified = f"{base}.{alias.name}" if base else alias.name
                    table.setdefault(alias.asname or alias.name, qualified)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname is not None:
                        table.setdefault(alias.asname, alias.name)
                    else:
                        first = alias.name.split(".")[0]
                        table.setdefault(first, first)
        return table

    def resolve_relative(self, module: str | None, level: int) -> str:
        if level == 0:
            return module or ""
        parts = self.package.split(".") if self.package else []
        base = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join([*base, module] if module else base)

    def qualified(self, expression: ast.expr) -> str | None:
        """The qualified name of a ``Name`` or dotted ``Attribute``, through imports;
        a name defined here is ``<this module>.<name>``."""
        if isinstance(expression, ast.Name):
            imported = self.imported(expression.id)
            return imported if imported is not None else f"{self.name}.{expression.id}"
        if isinstance(expression, ast.Attribute):
            owner = self.qualified(expression.value)
            return None if owner is None else f"{owner}.{expression.attr}"
        return None


def file_source(path: Path, tree: ast.Module, declarations: Declarations) -> ModuleSource:
    """A ``ModuleSource`` for a checked file, named after its package directories
    (those with ``__init__.py``) so that relative imports resolve; what it imports is
    read through ``declarations``."""
    parts = [path.stem] if path.stem != "__init__" else []
    directory = path.parent
    while (directory / "__init__.py").is_file() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    name = ".".join(parts) or path.stem
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    return ModuleSource(name, path, package, tree, declarations)


class Declarations:
    """The module sources one project's rules read: each located and parsed once.

    Modules are looked up from ``root`` (the project whose configuration names them;
    ``None``: the working directory at the time of the lookup) and ``root/src`` first,
    then the other first-party source roots (``first_party_roots``, looked for only
    when a module is in neither), then ``sys.path`` without the working directory.
    Belongs to one ``Project``, so what it remembers lasts one run.
    """

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self._located: dict[tuple[str, str], tuple[Path, bool]] = {}
        self._parsed: dict[tuple[str, Path, int, int], ModuleSource] = {}
        self._recorders: list[set[Path]] = []
        self._first_party: dict[str, list[str]] = {}
        self.consulted: dict[str, object] = {}
        """Every directory a lookup searched or listed, and every module source read, with
        its size and modification time before it was (``consult``): a module that
        appears, disappears or changes changes what was found (a directory's modification
        time changes with its entries)."""
        self._words: dict[Path, list[tuple[Path, frozenset[str]]]] = {}
        self._asked: dict[Path, set[str]] = {}
        """For each directory ``files_naming`` searched: the names asked."""
        self._restored: dict[str, dict[str, bool]] = {}
        """What ``restore_scanned`` gave: a remembered run's ``scanned``."""
        self.read: set[str] = set()
        """Every module source ``read_module`` read (parsed, not only searched)."""

    def read_module(self, module: str) -> ModuleSource:
        """Locate and parse ``module``; ``ConfigError`` says what went wrong.

        Parsed once per content (by path, modification time and size)."""
        path, is_package = self._locate(module)
        consult(self.consulted, str(path))
        self.read.add(str(path))
        for paths in self._recorders:
            paths.add(path)
        try:
            status = path.stat()
        except OSError as error:
            raise ConfigError(
                f"cannot read the source of module {module!r} ({path}): {error}"
            ) from error
        key = (module, path, status.st_mtime_ns, status.st_size)
        source = self._parsed.get(key)
        if source is None:
            source = self._parsed[key] = self._parse_module(module, path, is_package)
        return source

    def unchanged(self) -> bool:
        """Whether every module source read and directory searched is as it was then
        (size and modification time): what was found and parsed still holds."""
        return all(state(MODIFIED, path) == stamp for path, stamp in self.consulted.items())

    def note_read(self, paths: Iterable[Path]) -> None:
        """Count ``paths`` as read now (what a remembered result was read from)."""
        for recorded in self._recorders:
            recorded.update(paths)

    @contextmanager
    def recording(self) -> Iterator[set[Path]]:
        """The paths of every module source read inside the block (the files whose change
        changes what was read)."""
        paths: set[Path] = set()
        self._recorders.append(paths)
        try:
            yield paths
        finally:
            self._recorders.pop()

    def files_naming(self, directory: Path, name: str) -> list[Path]:
        """The Python files directly in ``directory`` whose text has the word ``name``
        (each directory's files are read once per run)."""
        words = self._words.get(directory)
        if words is None:
            words = self._words[directory] = []
            consult(self.consulted, str(directory))
            try:
                paths = sorted(directory.glob("*.py"))
            except OSError:
                paths = []
            for path in paths:
                consult(self.consulted, str(path))
                found = words_of(path)
                if found is not None:
                    words.append((path, found))
        self._asked.setdefault(directory, set()).add(name)
        return [path for path, found in words if name in found]

    @property
    def scanned(self) -> dict[str, dict[str, bool]]:
        """For each file ``files_naming`` searched: each name asked, and whether it has it
        (built when asked for: noting it at each search, for each file of the directory,
        cost 0.1 s of 0.5 s reading 500 declarations of openai's SDK)."""
        table = {path: dict(names) for path, names in self._restored.items()}
        for directory, names in self._asked.items():
            for path, found in self._words[directory]:
                entry = table.setdefault(str(path), {})
                for name in sorted(names):
                    entry[name] = name in found
        return table

    def restore_scanned(self, path: str, names: Mapping[str, bool]) -> None:
        """Count ``path`` as searched for ``names`` (whether it has each), as a
        remembered run had it."""
        self._restored[path] = dict(names)

    def _locate(self, module: str) -> tuple[Path, bool]:
        cwd = os.getcwd()
        root = str(self.root) if self.root is not None else cwd
        found = self._located.get((module, cwd))
        if found is None:
            installed = [entry for entry in sys.path if entry not in ("", ".", cwd)]
            try:
                found = _locate(module, [root, os.path.join(root, "src")], self.consulted)
            except ConfigError as first:
                if not _not_found(first, module):
                    raise
                nested = self._first_party.get(root)
                if nested is None:
                    nested = self._first_party[root] = first_party_roots(Path(root), self.consulted)
                try:
                    found = _locate(module, [*nested, *installed], self.consulted)
                except ConfigError as error:
                    raise ConfigError(
                        f"{error} (looked in {root}, its src/, the nested projects and"
                        " src/ directories under it, then sys.path)"
                    ) from None
            self._located[(module, cwd)] = found
        return found

    def _parse_module(self, module: str, path: Path, is_package: bool) -> ModuleSource:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(
                f"cannot read the source of module {module!r} ({path}): {error}"
            ) from error
        try:
            tree = _parse(text, path)
        except (SyntaxError, ValueError, RecursionError) as error:
            raise ConfigError(
                f"cannot parse the source of module {module!r} ({path}): {error}"
            ) from error
        package = module if is_package else module.rpartition(".")[0]
        return ModuleSource(module, path, package, tree, self)


def words_of(path: Path) -> frozenset[str] | None:
    """The words of a file's text (``None``: unreadable), as ``files_naming`` sees them."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return frozenset(_WORD.findall(text))


def _reader(declarations: Declarations | None) -> Declarations:
    """``declarations``, or for a caller outside any project one reading from the
    working directory."""
    return declarations if declarations is not None else Declarations(None)


_DEFINITION_NODES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_COMPOUND = tuple(
    getattr(ast, name)
    for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar", "Match")
    if hasattr(ast, name)
)


def _definitions(
    body: list[ast.stmt],
) -> list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef]:
    """The classes and defs of a body in source order, those under compound statements
    (``if``, ``try``, ``with``, loops, ``match``) included, not those nested in them."""
    result: list[ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef] = []
    pending = list(reversed(body))
    while pending:
        node = pending.pop()
        if isinstance(node, _DEFINITION_NODES):
            result.append(node)
        elif isinstance(node, _COMPOUND):
            children: list[ast.stmt] = []
            for name in ("body", "orelse", "finalbody"):
                children.extend(getattr(node, name, ()))
            for handler in getattr(node, "handlers", ()):
                children.extend(handler.body)
            for case in getattr(node, "cases", ()):
                children.extend(case.body)
            pending.extend(reversed(children))
    return result


# Directories a project's own sources are never under.
_NOT_SOURCES = frozenset(
    {"node_modules", "site-packages", "__pycache__", "build", "dist", "venv", "env"}
)
_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")
NESTED_DEPTH = 4
"""How deep under the root nested projects are looked for."""


def consult(consulted: dict[str, object], path: str) -> None:
    """Note ``path``'s size and modification time, if not noted yet (``quick.state``)."""
    if path not in consulted:
        consulted[path] = state(MODIFIED, path)


def first_party_roots(root: Path, consulted: dict[str, object] | None = None) -> list[str]:
    """The source roots of a project besides ``root`` and ``root/src``, in a stable
    order: each directory of ``src/`` that is not itself a package (``src/<name>-types/``
    holding ``<name>_types/``) with its own ``src/``, and each nested project (a
    directory with a ``pyproject.toml``, ``setup.py`` or ``setup.cfg``, at most
    ``NESTED_DEPTH`` levels down, hidden and virtual-environment directories skipped)
    with its ``src/``. Adds each directory whose entries it looked at to ``consulted``."""
    roots: list[str] = []
    listed: dict[str, object] = {} if consulted is None else consulted

    def add(directory: Path) -> None:
        for candidate in (directory, directory / "src"):
            text = str(candidate)
            if candidate.is_dir() and text not in roots:
                roots.append(text)

    src = root / "src"
    consult(listed, str(root))
    consult(listed, str(src))
    for entry in _subdirectories(src):
        consult(listed, str(entry))
        if not (entry / "__init__.py").is_file() and not (entry / "__init__.pyi").is_file():
            add(entry)
    pending = [(root, 0)]
    while pending:
        directory, depth = pending.pop(0)
        for entry in _subdirectories(directory):
            if entry.name.startswith(".") or entry.name in _NOT_SOURCES:
                continue
            consult(listed, str(entry))
            if (entry / "pyvenv.cfg").is_file():
                continue
            if any((entry / name).is_file() for name in _PROJECT_FILES):
                add(entry)
            if depth + 1 < NESTED_DEPTH:
                pending.append((entry, depth + 1))
    return [entry for entry in roots if entry not in (str(root), str(src))]


def _subdirectories(directory: Path) -> list[Path]:
    try:
        return sorted(entry for entry in directory.iterdir() if entry.is_dir())
    except OSError:
        return []


def _not_found(error: ConfigError, module: str) -> bool:
    return str(error) == f"module {module!r} not found"


def _locate(
    module: str, search_path: list[str], consulted: dict[str, object] | None = None
) -> tuple[Path, bool]:
    """Where ``module``'s source is, and whether it is a package; each directory searched
    is added to ``consulted``."""
    locations: list[str] | None = search_path
    spec = None
    parts = module.split(".")
    for depth in range(1, len(parts) + 1):
        if locations is None:
            raise ConfigError(f"module {'.'.join(parts[: depth - 1])!r} is not a package")
        if consulted is not None:
            for location in locations:
                consult(consulted, location)
        try:
            spec = PathFinder.find_spec(".".join(parts[:depth]), locations)
        except KeyError:
            # A namespace package in a namespace package: its path would be recomputed
            # from its parent in sys.modules, which nothing here imports.
            spec = None
            locations = [
                os.path.join(entry, parts[depth - 1])
                for entry in locations
                if os.path.isdir(os.path.join(entry, parts[depth - 1]))
            ] or None
            if depth == len(parts):
                raise ConfigError(f"module {module!r} has no Python source to read") from None
            continue
        if spec is None:
            raise ConfigError(f"module {module!r} not found")
        locations = list(spec.submodule_search_locations or []) or None
    assert spec is not None
    origin = spec.origin
    if origin is None or not origin.endswith((".py", ".pyi")):
        raise ConfigError(f"module {module!r} has no Python source to read ({origin})")
    return Path(origin), spec.submodule_search_locations is not None


def _parse(text: str, path: Path) -> ast.Module:
    try:
        return parse_source(text, str(path))
    except SyntaxError:
        if sys.version_info >= (3, 12) or not _TYPE_STATEMENT.search(text):
            raise
        return parse_source(_TYPE_STATEMENT.sub(r"\1\2 =", text), str(path))


def top_level(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, including those under ``if``/``try`` (e.g. TYPE_CHECKING)."""
    statements: list[ast.stmt] = []
    pending = list(reversed(tree.body))
    while pending:
        node = pending.pop()
        if isinstance(node, ast.If):
            pending.extend(reversed([*node.body, *node.orelse]))
        elif isinstance(node, ast.Try):
            pending.extend(reversed([*node.body, *node.orelse, *node.finalbody]))
        elif type(node).__name__ == "TypeAlias":  # Python 3.12+ `type X = ...`
            target, value = node.name, node.value  # type: ignore[attr-defined]
            statements.append(ast.Assign(targets=[target], value=value, lineno=node.lineno))
        else:
            statements.append(node)
    return statements


# Literal values ---------------------------------------------------------------------


def _literal_strings(
    source: ModuleSource, expression: ast.expr, seen: set[str]
) -> list[str] | None:
    """The strings an annotation expression allows, or None if it is not (only) Literals."""
    if isinstance(expression, ast.Constant):
        if expression.value is None:
            return []
        if isinstance(expression.value, str):  # a string annotation
            try:
                parsed = ast.parse(expression.value, mode="eval").body
            except SyntaxError:
                return None
            return _literal_strings(source, parsed, seen)
        return None
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.BitOr):
        return _union(source, [expression.left, expression.right], seen)
    if (value := type_alias_value(source, expression)) is not None:
        return _literal_strings(source, value, seen)
    if isinstance(expression, ast.Subscript):
        origin = typing_name(source, expression.value)
        arguments = _subscript_arguments(expression)
        if origin == "Literal":
            return [
                argument.value
                for argument in arguments
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str)
            ]
        if origin in ("Union", "Optional"):
            return _union(source, arguments, seen)
        if origin in ("Annotated", "Final", "ClassVar", "Required", "NotRequired", "ReadOnly"):
            return _literal_strings(source, arguments[0], seen) if arguments else None
        return None
    if isinstance(expression, (ast.Name, ast.Attribute)):
        target = _definition(source, expression)
        if target is None:
            return None
        owner, name = target
        key = f"{owner.name}.{name}"
        if key in seen:
            return None
        aliased = owner.alias(name)
        if aliased is None:
            return None
        return _literal_strings(owner, aliased, seen | {key})
    return None


def _union(source: ModuleSource, members: list[ast.expr], seen: set[str]) -> list[str] | None:
    values: list[str] = []
    for member in members:
        allowed = _literal_strings(source, member, seen)
        if allowed is None:
            return None
        values.extend(allowed)
    return values


def _subscript_arguments(expression: ast.Subscript) -> list[ast.expr]:
    index = expression.slice
    return list(index.elts) if isinstance(index, ast.Tuple) else [index]


def typing_name(source: ModuleSource, expression: ast.expr) -> str | None:
    """``Literal``, ``Union``... when ``expression`` names that object of typing or
    typing_extensions (directly, through an import alias, or as ``typing.X``)."""
    qualified = source.qualified(expression)
    if qualified is None:
        return None
    module, _, name = qualified.rpartition(".")
    return name if module in TYPING_MODULES else None


def defined_in(source: ModuleSource, name: str) -> tuple[ModuleSource, str]:
    """The module (and name there) that defines ``name`` of ``source``, following
    re-exports such as ``from .session import Session`` in a package ``__init__``."""
    seen: set[tuple[str, str]] = set()
    while (source.name, name) not in seen:
        seen.add((source.name, name))
        imported = source.imported(name)
        if imported is None or name in source.classes or source.alias(name) is not None:
            break
        module, _, attribute = imported.rpartition(".")
        if not module or module in TYPING_MODULES:
            break
        try:
            source, name = source.reader.read_module(module), attribute
        except ConfigError:
            break
    return source, name


def canonical_name(qualified: str, declarations: Declarations) -> str:
    """``module.Name`` of where ``qualified`` is defined (itself if it cannot be read)."""
    module, _, name = qualified.rpartition(".")
    if not module or module in TYPING_MODULES:
        return qualified
    try:
        source, name = defined_in(declarations.read_module(module), name)
    except ConfigError:
        return qualified
    return f"{source.name}.{name}"


def _definition(source: ModuleSource, expression: ast.expr) -> tuple[ModuleSource, str] | None:
    """The module and name a ``Name``/``Attribute`` refers to, followed through imports."""
    qualified = source.qualified(expression)
    if qualified is None:
        return None
    if isinstance(expression, ast.Name) and source.imported(expression.id) is None:
        return source, expression.id
    module, _, name = qualified.rpartition(".")
    if not module or module in TYPING_MODULES:
        return None
    try:
        return defined_in(source.reader.read_module(module), name)
    except ConfigError:
        return None


def _base_definition(source: ModuleSource, base: ast.expr) -> tuple[ModuleSource, str] | None:
    """The class a base of a class statement names, a generic one's too (``Delta``
    of ``class ParsedDelta(Delta[T])``); None for typing's own (``Generic[T]``)."""
    if isinstance(base, ast.Subscript):
        base = base.value
    return _definition(source, base)


def definition(source: ModuleSource, expression: ast.expr) -> tuple[ModuleSource, str] | None:
    """The module and name a ``Name``/``Attribute`` of ``source`` refers to, followed
    through imports and re-exports; None when it cannot be read."""
    return _definition(source, expression)


def _class_attribute(
    source: ModuleSource, class_path: list[str], attribute: str, seen: set[str]
) -> tuple[ModuleSource, ast.expr] | None:
    """The annotation of ``Class.attribute`` (or a base class's), and its module."""
    node: ast.ClassDef | None = source.classes.get(class_path[0])
    for inner in class_path[1:]:
        if node is None:
            return None
        node = next((s for s in node.body if isinstance(s, ast.ClassDef) and s.name == inner), None)
    if node is None or f"{source.name}.{node.name}" in seen:
        return None
    for statement in node.body:
        if (
            isinstance(statement, ast.AnnAssign)
            and isinstance(statement.target, ast.Name)
            and statement.target.id == attribute
        ):
            return source, statement.annotation
    for base in node.bases:
        target = _base_definition(source, base)
        if target is not None:
            owner, name = target
            found = _class_attribute(
                owner, [name], attribute, seen | {f"{source.name}.{node.name}"}
            )
            if found is not None:
                return found
    return None


# What a declaring module tells about its class ----------------------------------------


@dataclass(frozen=True)
class ClassFacts:
    """What the module declaring a class tells about its instances, read from source."""

    module: str
    name: str
    discriminators: dict[str, str]
    """Annotated attributes (the class's and its bases') whose type is a Literal of one
    string (``type: Literal["run_item_stream_event"]``), with that string."""
    unions: tuple[str, ...]
    """Module-level aliases of a union that holds the class (``StreamEvent``)."""
    producers: dict[str, ast.expr]
    """Functions and methods of the module whose return annotation names the class or
    one of ``unions``, with that annotation."""
    siblings: dict[tuple[str, str], str]
    """``(attribute, value)`` -> the other class of the module in one of ``unions``
    whose discriminator it is (``("type", "raw_response_event")``)."""
    member_values: frozenset[str] = frozenset()
    """The values the other members of ``unions`` declare for the checked field (a
    ``Literal`` of several strings too), their own or their bases'."""
    open_unions: frozenset[str] = frozenset()
    """The ``unions`` with a member whose checked field is annotated but not a
    ``Literal`` of strings (``type: str``): any value may be right there."""


def class_facts(
    module: str, name: str, field: str, declarations: Declarations | None = None
) -> ClassFacts | None:
    """The facts about class ``name`` of ``module`` (None when it defines no such
    class); ``field`` is the attribute being checked, never a discriminator.

    The unions holding the class are read from the module that defines it, from
    ``module`` (which may import it) and from the other modules of their directories and
    of the package above (``union_modules``): generated SDKs declare each event in a
    module of its own and the union in another that imports them."""
    configured = _reader(declarations).read_module(module)
    source, name = defined_in(configured, name)
    node = source.classes.get(name)
    if node is None:
        return None
    discriminators = dict(_discriminators(source, node))
    discriminators.pop(field, None)
    target = (source.name, name)
    unions: set[str] = set()
    siblings: dict[tuple[str, str], str] = {}
    member_values: set[str] = set()
    open_unions: set[str] = set()
    for holder in union_modules(source, configured, name):
        # the member's field: None when it may be any string (read once per member)
        read: dict[int, tuple[str, ...] | None] = {}
        for alias, members in _unions_holding(holder, target).items():
            unions.add(alias)
            for member in members:
                if id(member) not in read:
                    read[id(member)] = _member_field(holder, member, target, field, siblings)
                values = read[id(member)]
                if values is None:
                    open_unions.add(alias)
                else:
                    member_values.update(values)
    named = {name, *unions}
    producers: dict[str, ast.expr] = {}
    for function_name, returns, names in _returning(source):
        if not named.isdisjoint(names):
            producers[function_name] = returns
    return ClassFacts(
        source.name,
        name,
        discriminators,
        tuple(sorted(unions)),
        producers,
        siblings,
        frozenset(member_values),
        frozenset(open_unions),
    )


def _member_field(
    holder: ModuleSource,
    member: ast.expr,
    target: tuple[str, str],
    field: str,
    siblings: dict[tuple[str, str], str],
) -> tuple[str, ...] | None:
    """The values a union member (other than ``target``) declares for ``field``, its own
    or the nearest base's (none if it cannot be read or does not declare it; None when
    it is annotated but not a ``Literal`` of strings); its discriminators go into
    ``siblings``."""
    found_class = _remembered(
        holder, ("definition", id(member)), lambda: _definition(holder, member)
    )
    if found_class is None:
        return ()
    owner, member_name = found_class
    member_node = owner.classes.get(member_name)
    if member_node is None or (owner.name, member_name) == target:
        return ()
    for pair in _discriminators(owner, member_node).items():
        siblings.setdefault(pair, member_name)
    return _remembered(
        owner, ("field", member_name, field), lambda: _declared_values(owner, member_name, field)
    )


def _declared_values(owner: ModuleSource, name: str, field: str) -> tuple[str, ...] | None:
    """The values class ``name`` of ``owner`` (or its nearest base) declares for
    ``field``: none if it does not, None if not a ``Literal`` of strings."""
    declared = _class_attribute(owner, [name], field, seen=set())
    if declared is None:
        return ()
    values = _literal_strings(declared[0], declared[1], seen=set())
    return None if values is None else tuple(values)


def _discriminators(source: ModuleSource, node: ast.ClassDef) -> dict[str, str]:
    """The attributes of class ``node`` (its own and its bases') annotated with a
    ``Literal`` of one string, with that string; read once per class (do not change it)."""

    def read() -> dict[str, str]:
        found: dict[str, str] = {}
        _single_literals(source, node, found, seen=set())
        return found

    return _remembered(source, ("discriminators", id(node)), read)


def _returning(source: ModuleSource) -> list[tuple[str, ast.expr, frozenset[str]]]:
    """Each module-level function and method of a module-level class with a return
    annotation: its name, the annotation and the names in it (read once per module)."""

    def read() -> list[tuple[str, ast.expr, frozenset[str]]]:
        returning = []
        for statement in source.statements:
            if isinstance(statement, ast.ClassDef):
                functions = _defs(statement)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions = [statement]
            else:
                continue
            for function in functions:
                returns = _annotation_expression(function.returns)
                if returns is not None:
                    returning.append((function.name, returns, frozenset(_names_in(returns))))
        return returning

    return _remembered(source, "returning", read)


def union_modules(source: ModuleSource, configured: ModuleSource, name: str) -> list[ModuleSource]:
    """The modules that may declare a union holding class ``name`` of ``source``: it,
    ``configured``, and each other module of their directories and of the package
    directory above them whose text names the class (the texts are read once per run,
    a module is parsed only when it names the class)."""
    found = {source.path: source, configured.path: configured}
    directories: list[tuple[Path, str]] = []
    for module in (source, configured):
        package = module.package if module.path.stem != "__init__" else module.name
        directory = module.path.parent
        directories.append((directory, package))
        if package and (directory.parent / "__init__.py").is_file():
            directories.append((directory.parent, package.rpartition(".")[0]))
    for directory, package in dict.fromkeys(directories):
        for path in source.reader.files_naming(directory, name):
            if path in found:
                continue
            qualified = ".".join(part for part in (package, path.stem) if part)
            if path.stem == "__init__":
                qualified = package
            if not qualified:
                continue
            try:
                module = source.reader.read_module(qualified)
            except ConfigError:
                continue
            if module.path == path:
                found[path] = module
    return list(found.values())


def _single_literals(
    source: ModuleSource, node: ast.ClassDef, into: dict[str, str], seen: set[str]
) -> None:
    seen.add(f"{source.name}.{node.name}")
    for base in node.bases:
        target = _base_definition(source, base)
        if target is not None:
            owner, base_name = target
            base_node = owner.classes.get(base_name)
            if base_node is not None and f"{owner.name}.{base_name}" not in seen:
                _single_literals(owner, base_node, into, seen)
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            values = _literal_strings(source, statement.annotation, seen=set())
            if values is not None and len(set(values)) == 1:
                into[statement.target.id] = values[0]
            else:
                into.pop(statement.target.id, None)


def _unannotated(source: ModuleSource, expression: ast.expr) -> ast.expr:
    """``expression`` without the ``Annotated[...]`` layers around it (generated SDKs
    write ``Annotated[Union[A, B], PropertyInfo(discriminator="type")]``), and the value
    of a ``TypeAliasType("Name", A | B, type_params=(T,))``."""
    while True:
        if (
            isinstance(expression, ast.Subscript)
            and typing_name(source, expression.value) == "Annotated"
            and _subscript_arguments(expression)
        ):
            expression = _subscript_arguments(expression)[0]
        elif (value := type_alias_value(source, expression)) is not None:
            expression = value
        else:
            return expression


def type_alias_value(source: ModuleSource, expression: ast.expr) -> ast.expr | None:
    """The value of ``TypeAliasType("Name", value, type_params=...)`` (typing or
    typing_extensions), None for anything else."""
    if not isinstance(expression, ast.Call):
        return None
    if typing_name(source, expression.func) != "TypeAliasType":
        return None
    if len(expression.args) >= 2:
        return expression.args[1]
    return next((k.value for k in expression.keywords if k.arg == "value"), None)


def _union_members(source: ModuleSource, expression: ast.expr) -> list[ast.expr] | None:
    """A union's members as written (None if ``expression`` is not a union), through
    ``Annotated[...]`` around the union and its members, unions in it, and a generic
    member's class (``Done`` of ``Done[T]``); typing's own forms (``Literal[...]``,
    ``None``) are left out."""
    expression = _unannotated(source, expression)
    if isinstance(expression, ast.BinOp) and isinstance(expression.op, ast.BitOr):
        members = [expression.left, expression.right]
    elif isinstance(expression, ast.Subscript) and typing_name(source, expression.value) in (
        "Union",
        "Optional",
    ):
        members = _subscript_arguments(expression)
    else:
        return None
    found: list[ast.expr] = []
    for member in members:
        member = _unannotated(source, member)
        inner = _union_members(source, member)
        if inner is not None:
            found.extend(inner)
            continue
        if isinstance(member, ast.Subscript):
            member = member.value  # a generic class: Done[T]
        if isinstance(member, (ast.Name, ast.Attribute)) and typing_name(source, member) is None:
            found.append(member)
    return found


def _unions_holding(source: ModuleSource, target: tuple[str, str]) -> dict[str, list[ast.expr]]:
    """The aliases of ``source`` of unions that hold class ``target`` (its module and
    name, wherever it is imported from), each with its members (those of the unions it
    holds too)."""
    unions = _union_aliases(source)
    if not unions:
        return {}
    name = target[1]
    imported_as = _imported_as(source).get(name, frozenset())

    def is_target(member: ast.expr) -> bool:
        if isinstance(member, ast.Name):
            if member.id != name and member.id not in imported_as:
                return False
            if source.imported(member.id) is None:
                return (source.name, member.id) == target  # defined here
        elif not (isinstance(member, ast.Attribute) and member.attr == name):
            return False
        found = _definition(source, member)
        return found is not None and (found[0].name, found[1]) == target

    holding = {alias for alias, members in unions.items() if any(is_target(m) for m in members)}
    changed = bool(holding)
    while changed:  # aliases of unions of aliases
        changed = False
        for alias, members in unions.items():
            if alias not in holding and any(
                isinstance(m, ast.Name) and m.id in holding for m in members
            ):
                holding.add(alias)
                changed = True

    def members_of(alias: str, seen: set[str]) -> Iterator[ast.expr]:
        for member in unions[alias]:
            if not (isinstance(member, ast.Name) and member.id in unions):
                yield member
            elif member.id not in seen:
                seen.add(member.id)
                yield from members_of(member.id, seen)

    return {alias: list(members_of(alias, {alias})) for alias in sorted(holding)}


def _union_aliases(source: ModuleSource) -> dict[str, list[ast.expr]]:
    """The module-level aliases of unions of ``source``, each with its members as
    written (``_union_members``); read once per module."""

    def read() -> dict[str, list[ast.expr]]:
        unions: dict[str, list[ast.expr]] = {}
        for statement in source.statements:
            targets: list[ast.expr] = []
            if isinstance(statement, ast.Assign):
                targets, value = statement.targets, statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets, value = [statement.target], statement.value
            expression = _annotation_expression(value) if targets else None
            members = _union_members(source, expression) if expression is not None else None
            if members is not None:
                for assigned in targets:
                    if isinstance(assigned, ast.Name):
                        unions[assigned.id] = members
        return unions

    return _remembered(source, "unions", read)


def _imported_as(source: ModuleSource) -> dict[str, frozenset[str]]:
    """For each last part of a dotted name the module imports, the local names bound to
    it (``Event`` -> ``{"Event", "E"}`` for ``from .events import Event, Event as E``)."""

    def read() -> dict[str, frozenset[str]]:
        table: dict[str, set[str]] = {}
        for local, qualified in source.imports.items():
            _, dot, last = qualified.rpartition(".")
            if dot:
                table.setdefault(last, set()).add(local)
        return {last: frozenset(names) for last, names in table.items()}

    return _remembered(source, "imported_as", read)


def _remembered(source: ModuleSource, key: object, read: Callable[[], T]) -> T:
    """What ``read`` derives from ``source``'s tree, read once per ``key`` (``memo``);
    the module sources it read count as read again each time (``recording``)."""
    remembered = source.memo.get(key)
    if remembered is None:
        with source.reader.recording() as paths:
            value = read()
        remembered = source.memo[key] = (value, frozenset(paths))
    else:
        source.reader.note_read(remembered[1])
    return cast("T", remembered[0])


def _annotation_expression(annotation: ast.expr | None) -> ast.expr | None:
    """An annotation, a string annotation parsed (None if it does not parse)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value.strip(), mode="eval").body
        except SyntaxError:
            return None
    return annotation


def _names_in(expression: ast.expr) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(expression):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            parsed = _annotation_expression(node)
            if parsed is not None:
                names |= _names_in(parsed)
    return names


# Protocols ------------------------------------------------------------------------


def is_protocol(source: ModuleSource, node: ast.ClassDef) -> bool:
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if typing_name(source, target) == "Protocol":
            return True
    return False


def _is_abc(source: ModuleSource, node: ast.ClassDef) -> bool:
    if any(
        keyword.arg == "metaclass" and source.qualified(keyword.value) == "abc.ABCMeta"
        for keyword in node.keywords
    ):
        return True
    return any(source.qualified(base) == "abc.ABC" for base in node.bases)


NOT_PROTOCOL_MEMBERS = frozenset(
    {
        # What mypy and typing leave out of a protocol's members: a class body or the
        # Protocol machinery defines them, implementers are not asked for them.
        "__abstractmethods__",
        "__annotations__",
        "__annotate__",
        "__class_getitem__",
        "__dict__",
        "__doc__",
        "__final__",
        "__firstlineno__",
        "__init__",
        "__init_subclass__",
        "__match_args__",
        "__module__",
        "__new__",
        "__non_callable_proto_members__",
        "__orig_bases__",
        "__orig_class__",
        "__parameters__",
        "__protocol_attrs__",
        "__qualname__",
        "__slots__",
        "__static_attributes__",
        "__subclasshook__",
        "__type_params__",
        "__weakref__",
        "_is_protocol",
        "_is_runtime_protocol",
    }
)
"""Names in a Protocol's body that are not members an implementation must have; every
other name is one, dunders included (``__call__``, ``__iter__``, ``__aenter__``...)."""


def _protocol_members(
    source: ModuleSource, node: ast.ClassDef, seen: set[str]
) -> dict[str, Member]:
    members: dict[str, Member] = {}
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        if typing_name(source, target) is not None:
            continue  # Protocol, Generic
        definition = _definition(source, target)
        if definition is None:
            continue
        owner, name = definition
        base_node = owner.classes.get(name)
        key = f"{owner.name}.{name}"
        if base_node is not None and key not in seen and is_protocol(owner, base_node):
            members.update(_protocol_members(owner, base_node, seen | {key}))
    for statement in node.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            name = statement.target.id
            if name in NOT_PROTOCOL_MEMBERS:
                continue
            if typing_name(source, _annotation_origin(statement.annotation)) == "ClassVar":
                continue
            annotation = ast.unparse(statement.annotation)
            members[name] = Member(
                name, f"{name}: {annotation}", is_method=False, has_body=statement.value is not None
            )
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if statement.name in NOT_PROTOCOL_MEMBERS:
                continue
            if _is_property(statement):
                members[statement.name] = Member(
                    statement.name,
                    f"{statement.name}: {ast.unparse(statement.returns or ast.Name('Any'))}",
                    is_method=False,
                    has_body=not is_trivial_body(statement.body),
                )
            elif not has_decorator(statement, "overload"):
                members[statement.name] = Member(
                    statement.name,
                    signature(statement),
                    is_method=True,
                    is_async=isinstance(statement, ast.AsyncFunctionDef),
                    parameters=parameters(statement),
                    has_body=not is_trivial_body(statement.body),
                    returns=None if statement.returns is None else ast.unparse(statement.returns),
                    module=source.name,
                    is_generator=is_generator(statement),
                )
    return members


def _concrete_members(node: ast.ClassDef) -> list[str]:
    names = []
    for statement in node.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not has_decorator(statement, "abstractmethod"):
                names.append(statement.name)
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            if isinstance(statement.target, ast.Name):
                names.append(statement.target.id)
        elif isinstance(statement, ast.Assign):
            names.extend(t.id for t in statement.targets if isinstance(t, ast.Name))
    return names


def _annotation_origin(annotation: ast.expr) -> ast.expr:
    return annotation.value if isinstance(annotation, ast.Subscript) else annotation


def _defs(node: ast.ClassDef) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]


def has_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if (isinstance(target, ast.Name) and target.id == name) or (
            isinstance(target, ast.Attribute) and target.attr == name
        ):
            return True
    return False


def _is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return has_decorator(node, "property") or has_decorator(node, "cached_property")


def is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``node``'s own body yields (not a function or class nested in it)."""
    pending: list[ast.AST] = list(node.body)
    while pending:
        child = pending.pop()
        if isinstance(child, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        pending.extend(ast.iter_child_nodes(child))
    return False


def is_trivial_body(body: list[ast.stmt]) -> bool:
    """Whether a body only declares: docstring, ``...``, ``pass``, ``raise NotImplementedError``."""
    for statement in body:
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring or `...`
        if isinstance(statement, ast.Raise) and statement.exc is not None:
            raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
            if isinstance(raised, ast.Name) and raised.id == "NotImplementedError":
                continue
        return False
    return True


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Parameter, ...]:
    """The parameters of a def, the bound first one (``self``/``cls``) left out
    unless it is a staticmethod."""
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults.extend(arguments.defaults)
    result = [
        Parameter(
            argument.arg,
            "positional-only" if index < len(arguments.posonlyargs) else "positional or keyword",
            None if default is None else ast.unparse(default),
        )
        for index, (argument, default) in enumerate(zip(positional, defaults, strict=True))
    ]
    if arguments.vararg is not None:
        result.append(Parameter(arguments.vararg.arg, "*args", None))
    for argument, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        result.append(
            Parameter(
                argument.arg,
                "keyword-only",
                None if kw_default is None else ast.unparse(kw_default),
            )
        )
    if arguments.kwarg is not None:
        result.append(Parameter(arguments.kwarg.arg, "**kwargs", None))
    if not has_decorator(node, "staticmethod") and positional:
        result.pop(0)
    return tuple(result)


def signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """``async def name(self, limit: int | None = None) -> list[Item]``, as declared."""
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults.extend(arguments.defaults)
    parts = [_argument(a, d) for a, d in zip(positional, defaults, strict=True)]
    if arguments.posonlyargs:
        parts.insert(len(arguments.posonlyargs), "/")
    if arguments.vararg is not None:
        parts.append("*" + _argument(arguments.vararg, None))
    elif arguments.kwonlyargs:
        parts.append("*")
    parts.extend(
        _argument(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    )
    if arguments.kwarg is not None:
        parts.append("**" + _argument(arguments.kwarg, None))
    prefix = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    return f"{prefix} {node.name}({', '.join(parts)}){returns}"


def _argument(argument: ast.arg, default: ast.expr | None) -> str:
    text = argument.arg
    if argument.annotation is not None:
        text += f": {ast.unparse(argument.annotation)}"
        return text + (f" = {ast.unparse(default)}" if default is not None else "")
    return text + (f"={ast.unparse(default)}" if default is not None else "")
