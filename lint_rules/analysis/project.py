"""The ``Project`` of a run: one root, its Python files, and what rules read from them.

A run (``check`` or ``fix`` over the files of one configuration, ``protocols``, one
request of a language server) builds one ``Project`` per configuration root; each
worker process builds its own. Rules reach it through their ``FileContext``
(``self.file.project``) and, when they read declarations while validating their
options, as the ``project`` argument of their constructor (``Rule.create``).
Whatever is read from the project lasts as long as its ``Project``: two runs in one
process, on two projects or on one project whose files changed in between, share
nothing.

The one exception: the ``Project`` that validated a configuration (``parse_config``)
starts the first run's (``start``), which reuses its declarations and shared state
instead of reading the same modules again, while they are unchanged
(``config.Validated``).

The engine tells a ``Project`` which files are the project's (``list_files``, its
discovery): nothing here walks directories itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from lint_rules.analysis.declarations import Declarations

if TYPE_CHECKING:
    from lint_rules.analysis.ownership import ProjectNames

FileLister = Callable[[Path], Sequence[Path]]
"""The Python files of the project under a root (the engine's discovery)."""

T = TypeVar("T")


R = TypeVar("R")


class FileMap(Protocol):
    """Applies a function to each of many items (files, texts), answering in their order:
    the builtin ``map``, or the engine's worker processes (``Project.map_files``)."""

    def __call__(self, function: Callable[[T], R], items: Sequence[T], /) -> Iterable[R]: ...


_DEFINED = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class ProjectIndex:
    """What the project around a file defines, from a text scan of its Python files."""

    definitions: frozenset[str]
    """Names of the functions and classes defined anywhere in the project."""
    packages: frozenset[str]
    """Top-level module and package names of the project's files."""
    files: tuple[Path, ...] = ()
    """The project's Python files (as the engine's discovery finds them)."""


class Project:
    """One project under check, for one run: its root and what is read from it, once.

    ``root`` is where its configuration lives (``None``: code checked outside a
    project, e.g. a rule's examples: no files, and modules are looked up from the
    working directory).
    """

    def __init__(
        self,
        root: Path | None,
        list_files: FileLister | None = None,
        shared: Mapping[object, object] | None = None,
        start: Project | None = None,
    ) -> None:
        self.root = root
        self._list_files = list_files
        self.declarations: Declarations = (
            start.declarations if start is not None else Declarations(root)
        )
        """The module sources rules read declarations from (``Literal``, ``Protocol``)."""
        self.reads = 0
        """How many times findings consulted other files of the project (``note_read``)."""
        self._index: ProjectIndex | None = None
        self._names: ProjectNames | None = None
        self._shared: dict[object, object] = {
            **(start._shared if start is not None else {}),
            **(shared or {}),
        }
        self.map_files: FileMap = map
        """How a pass over many of the project's files applies its per-file part: one file
        after the other here, or in worker processes while the engine prepares a parallel
        run (``Rule.prepare_project``): the function and its results must then pickle."""

    def note_read(self) -> None:
        """Record that the file being checked had its findings decided by other files of
        the project too: such a result is cached only with the project's ``stamp``."""
        self.reads += 1

    def files(self) -> Sequence[Path]:
        """The project's Python files as they are now (none outside a project)."""
        if self.root is None or self._list_files is None:
            return ()
        return self._list_files(self.root)

    @property
    def index(self) -> ProjectIndex:
        """What the project defines, read on first use (empty outside a project)."""
        if self.root is None:
            return ProjectIndex(frozenset(), frozenset())
        self.note_read()
        if self._index is None:
            self._index = _scan(self.files())
        return self._index

    @property
    def names(self) -> ProjectNames:
        """What the project binds, looked up by name (``ownership.ProjectNames``)."""
        if self._names is None:
            from lint_rules.analysis.ownership import ProjectNames

            self._names = ProjectNames(self)
        return self._names

    def shared(self, key: object, build: Callable[[], T]) -> T:
        """What ``build`` returns, built once per ``Project`` for ``key`` (a rule's view
        of the whole project, e.g. the reference engine's verdicts on rename targets)."""
        if key not in self._shared:
            self._shared[key] = build()
        return self._shared[key]  # type: ignore[return-value]

    def shared_state(self) -> dict[object, object]:
        """What ``shared`` has built so far, for another process's ``Project`` of the same
        run (``Project(root, list_files, shared=...)``)."""
        return dict(self._shared)

    def stamp(self) -> str:
        """A digest of the project's Python files as they stand (path, size, modification
        time): what a cached result that read the project (``note_read``) holds for."""
        import hashlib

        digest = hashlib.blake2b(digest_size=16)
        for path in self.files():
            try:
                status = path.stat()
            except OSError:
                continue
            digest.update(f"{path}\0{status.st_size}\0{status.st_mtime_ns}\n".encode())
        return digest.hexdigest()


def _scan(files: Sequence[Path]) -> ProjectIndex:
    definitions: set[str] = set()
    packages: set[str] = set()
    for path in files:
        directory, top = path.parent, path.stem
        while (directory / "__init__.py").is_file():
            top, directory = directory.name, directory.parent
        packages.add(top)
        try:
            definitions.update(_DEFINED.findall(path.read_text("utf-8", errors="replace")))
        except OSError:
            continue
    return ProjectIndex(frozenset(definitions), frozenset(packages), tuple(files))
