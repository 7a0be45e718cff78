"""The fast path of ``check FILES``: a run answered from its record, before the CLI loads.

A ``check`` of the same files with the same arguments, from the same directory, whose
inputs are unchanged prints what it printed before. The full run (``cli.py``) records
what it wrote (stdout and stderr, in order) and its exit code with every input that
decided them, in ``.lint_rules_cache/runs/`` under the working directory's project
root; the next identical run (``__main__.main``) finds the record by its identity
(arguments, working directory, Python, this package's location, ``ENVIRONMENT``),
checks each input and, when all hold, replays the output without importing argparse,
tomllib, the rules or the engine. Any difference, or anything unexpected, falls back
to the full run.

The inputs a record holds:
- this package's files (path, size, modification time of each, bytecode caches aside):
  an edit to the tool or to a rule's code, another version installed;
- the content of each checked file (the digest the run checked, as the result cache's);
- the content of every ``pyproject.toml`` at or above the working directory and each
  checked file's directory, present or missing (which configuration governs, and what
  it says);
- what the rules' ``cache_inputs`` name (typos' executable and configuration files);
- whether each path named on the command line exists and is a directory.

A run is recorded only when all of its results hold by those alone (``cli.py`` decides):
not when a result read other files of the project, or a rule reads other modules
(``dependencies``: ``literals``, ``protocols``), nor for ``--no-cache``, standard input,
directories, ``sarif`` (it names the installed version) or an error.

Only ``os``, ``sys``, ``marshal`` and ``_blake2`` are imported here (the test pins it).
"""

from __future__ import annotations

import marshal
import os
import sys

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - an interpreter without the module
    from hashlib import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, TextIO

FORMAT = 1
"""Changes when the record's layout does."""
CACHE_DIRECTORY = ".lint_rules_cache"
"""As ``engine.cache.CACHE_DIRECTORY`` (a test holds them equal)."""
RUNS_DIRECTORY = "runs"
KEEP_RUNS = 64
"""How many records a project keeps (the oldest are removed beyond)."""
ENVIRONMENT = ("PATH", "LINT_RULES_REFERENCE_ENGINE")
"""Environment variables a run's outcome may depend on (PATH: which typos runs)."""
PACKAGE = os.path.dirname(os.path.abspath(__file__))

CONTENT, STATUS, MODIFIED, EXISTS = "c", "s", "m", "e"
"""Kinds of input: a file's content; its status (mode, size, modification time, inode);
its size and modification time (a directory's changes with its entries); whether a path
exists (and is a directory)."""

Input = tuple[str, str, object]
"""(kind, absolute path, state)."""


def digest(data: bytes) -> str:
    """A file content's digest: the result cache's ``content_digest``."""
    return blake2b(data, digest_size=16).hexdigest()


def state(kind: str, path: str) -> object:
    """What an input is now: ``None`` when missing, else by kind (errors as their errno)."""
    try:
        if kind == CONTENT:
            with open(path, "rb") as file:
                return digest(file.read())
        status = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"error {error.errno}"
    if kind == EXISTS:
        return "d" if os.path.isdir(path) else "f"
    if kind == MODIFIED:
        return (status.st_size, status.st_mtime_ns)
    return (status.st_mode, status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev)


def snapshot(inputs: Iterable[tuple[str, str]]) -> list[Input]:
    """Each (kind, path) with its state now, once each, in order."""
    seen: set[tuple[str, str]] = set()
    taken: list[Input] = []
    for kind, path in inputs:
        if (kind, path) not in seen:
            seen.add((kind, path))
            taken.append((kind, path, state(kind, path)))
    return taken


def configuration_inputs(directories: Iterable[str]) -> list[tuple[str, str]]:
    """The ``pyproject.toml`` of each directory and of every directory above it."""
    found: list[tuple[str, str]] = []
    for directory in directories:
        current = directory
        while True:
            found.append((CONTENT, os.path.join(current, "pyproject.toml")))
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    return found


def package_stamp() -> tuple[tuple[str, int, int], ...]:
    """This package's files (its sources, or the ``.pyc`` files of a sourceless install),
    bytecode caches aside: relative path, size and modification time of each."""
    found = []
    for directory, subdirectories, files in os.walk(PACKAGE):
        subdirectories[:] = [name for name in subdirectories if name != "__pycache__"]
        for name in files:
            path = os.path.join(directory, name)
            status = os.stat(path)
            found.append((path[len(PACKAGE) :], status.st_size, status.st_mtime_ns))
    return tuple(sorted(found))


def identity(arguments: Sequence[str]) -> tuple[object, ...]:
    """What a record is found by: two runs with the same identity and inputs print the same."""
    return (
        FORMAT,
        tuple(arguments),
        os.getcwd(),
        sys.version,
        sys.executable,
        PACKAGE,
        tuple(os.environ.get(name) for name in ENVIRONMENT),
    )


def record_name(run: tuple[object, ...]) -> str:
    return blake2b(repr(run).encode(), digest_size=16).hexdigest() + ".marshal"


def answer(arguments: Sequence[str]) -> int | None:
    """Replay the recorded run of ``arguments`` if every input it depends on holds, and
    return its exit code; ``None`` (nothing written) when the full run must go."""
    return answer_or_edited(arguments)[0]


def answer_or_edited(arguments: Sequence[str]) -> tuple[int | None, list[str]]:
    """``answer``, and when it cannot answer a plain ``check FILE...`` (no option) whose
    record no longer holds only because checked files changed (their content; the
    directories and modules the rules consulted may have changed too): those files, which
    the run will check again (else none)."""
    if not arguments or arguments[0] != "check":
        return None, []
    try:
        run = identity(arguments)
        record = _find(run)
        if record is None or record[1] != run or record[2] != package_stamp():
            return None, []
        changed = [
            (kind, path) for kind, path, expected in record[3] if state(kind, path) != expected
        ]
        if changed:
            return None, _edited(arguments, changed)
        chunks, code = record[4], int(record[5])
    except Exception:  # an unreadable or unexpected record: the full run decides
        return None, []
    try:
        replay(chunks)
    except Exception as error:  # as the full run: a message, exit 2, no traceback
        print(f"lint-rules: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return 2, []
    return code, []


def _edited(arguments: Sequence[str], changed: Sequence[tuple[str, str]]) -> list[str]:
    if any(argument.startswith("-") for argument in arguments[1:]):
        return []
    files = {os.path.abspath(argument) for argument in arguments[1:]}
    if all(kind == MODIFIED or (kind == CONTENT and path in files) for kind, path in changed):
        return [path for kind, path in changed if kind == CONTENT]
    return []


def replay(chunks: Sequence[tuple[int, str]]) -> None:
    """Write the recorded output, each chunk to its stream, in order."""
    streams = (sys.stdout, sys.stderr)
    current = None
    for which, text in chunks:
        stream = streams[which]
        if current is not None and stream is not current:
            current.flush()
        stream.write(text)
        current = stream
    if current is not None:
        current.flush()


def _find(run: tuple[object, ...]) -> Any | None:
    """The record of ``run`` under the working directory or a project above it."""
    name = record_name(run)
    directory = os.getcwd()
    candidates = [directory]
    while True:
        if os.path.isfile(os.path.join(directory, "pyproject.toml")):
            candidates.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for candidate in candidates:
        try:
            with open(os.path.join(candidate, CACHE_DIRECTORY, RUNS_DIRECTORY, name), "rb") as file:
                data = file.read()
        except OSError:
            continue
        record = marshal.loads(data)
        if (
            isinstance(record, tuple)
            and len(record) == 6
            and record[0] == FORMAT
            and isinstance(record[3], tuple)
            and isinstance(record[4], tuple)
            and all(
                isinstance(chunk, tuple)
                and len(chunk) == 2
                and chunk[0] in (0, 1)
                and isinstance(chunk[1], str)
                for chunk in record[4]
            )
            and isinstance(record[5], int)
        ):
            return record
        return None
    return None


class Tee:
    """A text stream that writes through to ``stream`` and keeps each chunk for a record."""

    def __init__(self, stream: TextIO, which: int, chunks: list[tuple[int, str]]) -> None:
        self._stream = stream
        self._which = which
        self._chunks = chunks

    def write(self, text: str) -> int:
        self._chunks.append((self._which, text))
        return self._stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def save(
    root: str,
    arguments: Sequence[str],
    stamp: tuple[tuple[str, int, int], ...],
    inputs: Sequence[Input],
    chunks: Sequence[tuple[int, str]],
    code: int,
) -> None:
    """Write the record of a run (atomically) under ``root``'s cache; keep the newest
    ``KEEP_RUNS``. A record that cannot be written only costs the next run time."""
    run = identity(arguments)
    record: Any = (FORMAT, run, stamp, tuple(inputs), tuple(chunks), code)
    directory = os.path.join(root, CACHE_DIRECTORY, RUNS_DIRECTORY)
    try:
        make_cache_folder(root)
        os.makedirs(directory, exist_ok=True)
        write_file(os.path.join(directory, record_name(run)), marshal.dumps(record))
        prune(directory, KEEP_RUNS)
    except (OSError, ValueError):
        pass


def write_file(target: str, data: bytes) -> None:
    """Write ``data`` to ``target`` through a temporary file beside it, renamed over it:
    readers see the old content or the new, whole. Not flushed to disk: a cache's file
    (a lost one only costs time). ``OSError`` if it cannot; the temporary file is removed."""
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, target)
    except BaseException:
        _unlink(temporary)
        raise


def make_cache_folder(root: str) -> None:
    """``root``'s ``.lint_rules_cache/``, ignoring itself in git (``OSError`` if it cannot)."""
    cache = os.path.join(root, CACHE_DIRECTORY)
    os.makedirs(cache, exist_ok=True)
    ignore_file = os.path.join(cache, ".gitignore")
    if not os.path.exists(ignore_file):
        with open(ignore_file, "w", encoding="utf-8") as file:
            file.write("# Created by lint_rules.\n*\n")


def prune(directory: str, keep: int) -> None:
    """Remove all but the ``keep`` newest records (``.marshal`` files) of ``directory``."""
    entries = []
    for entry in os.scandir(directory):
        if entry.name.endswith(".marshal"):
            try:
                entries.append((entry.stat().st_mtime_ns, entry.path))
            except OSError:
                continue
    for _, path in sorted(entries)[: max(0, len(entries) - keep)]:
        _unlink(path)


def _unlink(path: str) -> None:
    from contextlib import suppress  # the full run only: not on the fast path

    with suppress(OSError):
        os.unlink(path)
