"""Whose name is it: this project's to rename, or another distribution's (LR004's advice).

A name is this project's when the project binds it somewhere: a ``def`` or
``class``, an assignment (``x = ...``, ``self.x = ...``), a parameter, or an
import from a module of the project. An attribute whose receiver was imported
from a module outside the project, a name imported from such a module (by name
or by ``import *``), and an attribute or keyword name that nothing in the
project binds belong to someone else: renaming them is not this project's
business. A bare name that nothing binds and no ``import *`` may bring is just
undefined: that is not for LR004 to judge.

What the project binds is looked up per name, lazily, once per run: the
project's files (``Project.index``, shared with the other rules) are read on the
first lookup, and only the files that contain the name are parsed.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lint_rules.analysis.project import Project
    from lint_rules.rule import FileContext


def bound_names(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds itself: definitions, parameters, assignment targets
    (names and attributes), ``as`` names, ``except`` and ``match`` captures.
    Names imported without ``as`` are not bound here: their module binds them."""
    names = set()
    for node in ast.walk(tree):
        name = _bound_name(node)
        if name:
            names.add(name)
    return names


def _bound_name(node: ast.AST) -> str | None:
    """The name ``node`` binds, if it binds one (see ``bound_names``)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.Name):
        return None if isinstance(node.ctx, ast.Load) else node.id
    if isinstance(node, ast.Attribute):
        return None if isinstance(node.ctx, ast.Load) else node.attr
    if isinstance(node, ast.alias):
        return node.asname
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return node.name
    if isinstance(node, ast.MatchMapping):
        return node.rest
    return None


class ProjectNames:
    """What one project binds, looked up lazily by name (``Project.names``)."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._data: list[bytes] | None = None
        self._binds: dict[str, bool] = {}

    def owns_module(self, module: str, level: int = 0) -> bool:
        """Whether ``from {'.' * level}{module} import ...`` imports from this project."""
        self.project.note_read()
        return level > 0 or module.split(".")[0] in self.project.index.packages

    def binds(self, name: str) -> bool:
        """Whether any file of the project binds ``name`` (see ``bound_names``)."""
        self.project.note_read()
        found = self._binds.get(name)
        if found is None:
            found = self._binds[name] = any(
                name in bound_names(tree) for tree in self._trees_mentioning(name)
            )
        return found

    def _trees_mentioning(self, name: str) -> Iterator[ast.Module]:
        """The syntax trees of the files that may bind ``name``: those that spell it other
        than only as a method call (``.name(``, which binds nothing)."""
        if self._data is None:
            data = []
            for path in self.project.index.files:
                try:
                    data.append(path.read_bytes())
                except OSError:
                    continue
            self._data = data
        needle = name.encode()
        word = re.compile(rb"(?<![\w])" + re.escape(needle) + rb"(?![\w])")
        called = re.compile(rb"\.[ \t]*" + re.escape(needle) + rb"[ \t]*\(")
        for source in self._data:
            if needle in source and len(called.findall(source)) < len(word.findall(source)):
                try:
                    yield ast.parse(source)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue


@dataclass(frozen=True)
class Site:
    """Where an identifier stands: what kind of name it is and what it hangs on.

    ``module``/``level``: for an imported name or module, where it comes from.
    ``receiver``: for an attribute or a keyword argument, the name at the root of its
    receiver (``core_schema`` in ``core_schema.f(...)``, ``Agent`` in ``Agent(name=...)``).
    """

    kind: str
    store: bool = False
    module: str = ""
    level: int = 0
    receiver: str | None = None


_FROM_MODULE = re.compile(r"from\s+(\.*)\s*([\w.\s\\]*?)\s+import\b")


class FileNames:
    """The identifier sites of one file, and who owns the name at each."""

    def __init__(self, file: FileContext) -> None:
        self.file = file
        self.project_names = file.project.names
        file.project.note_read()  # whose a name is may depend on the other files
        self.sites: dict[int, Site] = {}
        self.spans: list[tuple[int, int, Site]] = []
        """Imported module names (``import a.b``, ``from a.b import``): dotted, so by range."""
        self.imports: dict[str, tuple[str, int]] = {}
        """Local name -> (module, level) for names bound by an import without ``as`` of
        a name (``from m import x``, ``import m``) or with it (``import m as x``)."""
        self.star_imports: list[str] = []
        """Modules outside the project whose names ``from m import *`` brings in."""
        self._bound: set[str] | None = None
        self._index(file.ast_tree)

    def _index(self, tree: ast.Module) -> None:
        node_range, offset = self.file.node_range, self.file.offset
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                end = node_range(node)[1]
                store = not isinstance(node.ctx, ast.Load)
                receiver = _root_name(node.value)
                self.sites[end - len(node.attr)] = Site("attribute", store, receiver=receiver)
            elif isinstance(node, ast.Call):
                receiver = _root_name(node.func)
                for argument in node.keywords:
                    if argument.arg is not None:
                        start = offset(argument.lineno, argument.col_offset)
                        self.sites[start] = Site("keyword argument", receiver=receiver)
            elif isinstance(node, ast.Name):
                store = not isinstance(node.ctx, ast.Load)
                self.sites[node_range(node)[0]] = Site("name", store)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    start = offset(alias.lineno, alias.col_offset)
                    site = Site("imported module", module=alias.name)
                    self.spans.append((start, start + len(alias.name), site))
                    if alias.asname:
                        self.imports[alias.asname] = (alias.name, 0)
                    else:
                        top = alias.name.split(".")[0]
                        self.imports[top] = (top, 0)
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                self._index_from(node, module)

    def _index_from(self, node: ast.ImportFrom, module: str) -> None:
        start = self.file.node_range(node)[0]
        match = _FROM_MODULE.match(self.file.text, start)
        if match is not None and module:
            site = Site("imported module", module=module, level=node.level)
            self.spans.append((match.start(2), match.end(2), site))
        for alias in node.names:
            if alias.name == "*":
                if not self.project_names.owns_module(module, node.level):
                    self.star_imports.append(module)
                continue
            name_start = self.file.offset(alias.lineno, alias.col_offset)
            self.sites[name_start] = Site("imported name", module=module, level=node.level)
            self.imports[alias.asname or alias.name] = (module, node.level)

    def binds(self, name: str) -> bool:
        """Whether this file binds ``name`` (see ``bound_names``)."""
        if len(re.findall(rf"(?<!\w){re.escape(name)}(?!\w)", self.file.text)) < 2:
            return False  # its one occurrence is the use being asked about
        if self._bound is None:
            self._bound = bound_names(self.file.ast_tree)
        return name in self._bound

    def site(self, offset: int) -> Site | None:
        """The site of the identifier that starts at ``offset``, if it is one."""
        found = self.sites.get(offset)
        if found is not None:
            return found
        for start, end, site in self.spans:
            if start <= offset < end:
                return site
        return None

    def foreign(self, offset: int, name: str) -> tuple[str, str] | None:
        """``(kind, why)`` when the identifier ``name`` at ``offset`` is not this project's
        to rename; ``None`` when it is (or when it is not an identifier site we know)."""
        site = self.site(offset)
        if site is None or site.store:
            return None  # a definition, a parameter, an assignment: bound here
        if site.kind in ("imported module", "imported name"):
            if self.project_names.owns_module(site.module, site.level):
                return None
            if site.kind == "imported module":
                return site.kind, f"`{site.module}` is a module outside this project"
            return site.kind, f"imported from `{site.module}`, outside this project"
        if site.kind in ("attribute", "keyword argument"):
            source = self.imports.get(site.receiver) if site.receiver else None
            if source is not None and not self.project_names.owns_module(*source):
                owner = "an attribute" if site.kind == "attribute" else "a keyword"
                origin = f"imported from `{source[0]}`, outside this project"
                return site.kind, f"{owner} of `{site.receiver}`, {origin}"
            if self.binds(name) or self.project_names.binds(name):
                return None
            return site.kind, "nothing in this project defines it"
        # A name that is read: bound in this file, imported, a builtin, or from elsewhere.
        if self.binds(name):
            return None
        source = self.imports.get(name)
        if source is not None:
            if self.project_names.owns_module(*source):
                return None
            return "name", f"imported from `{source[0]}`, outside this project"
        if hasattr(builtins, name):
            return "builtin", "a Python builtin"
        if self.star_imports:
            modules = ", ".join(f"`{module}`" for module in self.star_imports)
            return "name", f"not bound in this file, so from `import *` of {modules}"
        return None  # an undefined name: the renames advice stands (LR004 is no F821)


def _root_name(node: ast.expr) -> str | None:
    """The name at the root of an attribute, call or subscript chain (``a`` in ``a.b().c``)."""
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None
