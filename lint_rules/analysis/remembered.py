"""What validating a configuration read, remembered from one run to the next.

Validating ``[tool.lint_rules]`` builds every rule once (``config.parse_config``), and
LR002 then reads the declarations of its ``literals``: the declaring modules, and every
module of their packages that names the class. That is tens of milliseconds on every
run, most of a one-file ``check`` after an edit. What the rules built in the project's
shared state (``Project.shared``) is kept under the root's ``.lint_rules_cache/config/``
with every input it was read from; a later validation of the same table starts its
``Project`` from it while they all hold:

- the identity: the table, the root, the rules, this package's files
  (``quick.package_stamp``), Python, ``sys.path`` and the working directory (where
  modules are looked up);
- every directory searched and module source read, by size and modification time
  (``Declarations.consulted``);
- for a file only searched for a class's name (``Declarations.files_naming``), whether
  it names it: such a file whose text changed is read again (not parsed), and an edit
  that adds or removes no such name keeps the entry.

The stored state is plain data (strings, numbers, tuples, sets, paths and the frozen
dataclasses of this package), written with ``marshal``: nothing in the file can run code
when it is read. State of any other kind is not remembered (the rules build it again).
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from lint_rules import quick
from lint_rules.analysis.declarations import Declarations, words_of
from lint_rules.analysis.project import Project

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from lint_rules.rule import Rule

FORMAT = 1
"""Changes when the stored layout does."""
DIRECTORY = "config"
KEEP = 16
"""How many remembered validations a root keeps (the oldest are removed beyond)."""
_PACKAGE = "lint_rules"


class Unstorable(Exception):
    """A value of the shared state that is not plain data."""


class Remembered:
    """One validation of ``table`` under ``root``: ``project`` is the ``Project`` to
    validate with (started from the stored state when it holds); ``save`` stores what
    the validation built, unless it was all read from the store unchanged."""

    def __init__(self, table: object, root: Path, rules: Sequence[type[Rule]]) -> None:
        self.root = root
        self.identity = _identity(table, root, rules)
        self.location = root / quick.CACHE_DIRECTORY / DIRECTORY / _name(self.identity)
        self.project = Project(root)
        self.loaded = False
        self.refreshed = False
        self.storable = _storable_rules(rules)
        stored = _read(self.location, self.identity) if self.storable else None
        if stored is not None:
            self._start(*stored)

    def save(self) -> None:
        """Store the project's shared state and the inputs it was read from (atomically;
        a store that cannot be written only costs the next run time)."""
        if not self.storable or (self.loaded and not self.refreshed):
            return
        declarations = self.project.declarations
        try:
            shared = _encode(self.project.shared_state())
        except Unstorable:
            return
        record: Any = (
            FORMAT,
            self.identity,
            shared,
            tuple(declarations.consulted.items()),
            tuple(
                (path, tuple(sorted(names.items()))) for path, names in declarations.scanned.items()
            ),
            tuple((path, quick.state(quick.CONTENT, path)) for path in sorted(declarations.read)),
        )
        directory = self.location.parent
        try:
            quick.make_cache_folder(str(self.root))
            os.makedirs(directory, exist_ok=True)
            quick.write_file(str(self.location), marshal.dumps(record))
            quick.prune(str(directory), KEEP)
        except (OSError, ValueError):
            pass  # only costs the next run time

    def _start(
        self,
        shared: object,
        consulted: dict[str, object],
        scanned: dict[str, dict[str, bool]],
        read: dict[str, object],
    ) -> None:
        """Start the project from the stored state if every input holds (a file only
        searched for names whose text changed is read again, and counts as it is now)."""
        for path, digest in read.items():  # an edit that keeps the size and time, too
            if quick.state(quick.CONTENT, path) != digest:
                return
        now: dict[str, object] = {}
        for path, stamp in consulted.items():
            current = quick.state(quick.MODIFIED, path)
            if current != stamp:
                names = scanned.get(path)
                if names is None or path in read:
                    return
                words = words_of(Path(path))
                if words is None or any((name in words) != found for name, found in names.items()):
                    return
                self.refreshed = True
            now[path] = current
        try:
            state = _decode(shared)
        except (Unstorable, LookupError, TypeError, ValueError):
            return
        if not isinstance(state, dict):
            return
        self.project = Project(self.root, shared=state)
        declarations: Declarations = self.project.declarations
        declarations.consulted.update(now)
        for path, names in scanned.items():
            declarations.restore_scanned(path, names)
        declarations.read.update(read)
        self.loaded = True


def _storable_rules(rules: Sequence[type[Rule]]) -> bool:
    """Only this package's rules: another rule's code may change unseen (its module is
    not in ``quick.package_stamp``)."""
    return all(rule.__module__.split(".")[0] == _PACKAGE for rule in rules)


def _identity(table: object, root: Path, rules: Sequence[type[Rule]]) -> tuple[object, ...]:
    return (
        FORMAT,
        repr(table),
        str(root),
        tuple(f"{rule.__module__}:{rule.__qualname__}" for rule in rules),
        quick.package_stamp(),
        sys.version,
        sys.executable,
        tuple(sys.path),
        os.getcwd(),
    )


def _name(identity: tuple[object, ...]) -> str:
    return quick.record_name(identity)


def _read(
    location: Path, identity: tuple[object, ...]
) -> tuple[object, dict[str, object], dict[str, dict[str, bool]], dict[str, object]] | None:
    try:
        with open(location, "rb") as file:
            record = marshal.loads(file.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    try:
        version, stored_identity, shared, consulted, scanned, read = record
        if version != FORMAT or stored_identity != identity:
            return None
        return (
            shared,
            {str(path): stamp for path, stamp in consulted},
            {
                str(path): {str(name): bool(found) for name, found in names}
                for path, names in scanned
            },
            {str(path): digest for path, digest in read},
        )
    except (TypeError, ValueError):
        return None


# Plain data, tagged: a tuple in the store is always (tag, value).


def _encode(value: object) -> object:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Path):
        return ("P", str(value))
    if isinstance(value, tuple):
        return ("T", tuple(_encode(item) for item in value))
    if isinstance(value, list):
        return ("L", tuple(_encode(item) for item in value))
    if isinstance(value, frozenset):
        return ("F", frozenset(_encode(item) for item in value))
    if isinstance(value, set):
        return ("S", frozenset(_encode(item) for item in value))
    if isinstance(value, dict):
        return ("M", tuple((_encode(key), _encode(item)) for key, item in value.items()))
    kind = type(value)
    if (
        dataclasses.is_dataclass(kind)
        and kind.__module__.split(".")[0] == _PACKAGE
        and "." not in kind.__qualname__
    ):
        fields = dataclasses.fields(kind)
        frozen = kind.__dataclass_params__.frozen  # type: ignore[attr-defined]
        if not frozen or not all(field.init for field in fields):
            raise Unstorable(kind.__qualname__)
        values = tuple(_encode(getattr(value, field.name)) for field in fields)
        return ("D", f"{kind.__module__}:{kind.__qualname__}", values)
    raise Unstorable(kind.__qualname__)


def _decode(value: object) -> object:
    if not isinstance(value, tuple):
        return value
    tag = value[0]
    if tag == "P":
        return Path(value[1])
    if tag == "T":
        return tuple(_decode(item) for item in value[1])
    if tag == "L":
        return [_decode(item) for item in value[1]]
    if tag == "F":
        return frozenset(_decode(item) for item in value[1])
    if tag == "S":
        return {_decode(item) for item in value[1]}
    if tag == "M":
        return {_decode(key): _decode(item) for key, item in value[1]}
    if tag == "D":
        module, _, name = str(value[1]).partition(":")
        if module.split(".")[0] != _PACKAGE or module not in sys.modules:
            raise Unstorable(module)  # never imports anything
        kind = getattr(sys.modules[module], name, None)
        if not isinstance(kind, type) or not dataclasses.is_dataclass(kind):
            raise Unstorable(name)
        names = [field.name for field in dataclasses.fields(kind)]
        return kind(**dict(zip(names, (_decode(item) for item in value[2]), strict=True)))
    raise Unstorable(str(tag))
