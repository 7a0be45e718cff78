"""Project-wide references from a type-aware engine: a language server over stdio.

The rename codemod asks "which occurrences of this spelling are this binding's?".
That needs types and the whole project (class hierarchies, re-exports, aliases), so
the answer comes from a language server, chosen by measurement
(``benchmarks/reference_engines.py``): ``ty server`` (the ``ty`` package, a pinned
dependency of the ``lint`` extra). It is started on demand, only when a run has an
old spelling in its files, and kept warm for every target of that run.

What a caller may rely on:

- positions are ``Position(line, column)``: 1-based line, 0-based column in
  characters of the file's text (the server's UTF-16 columns are converted);
- ``references`` and ``definition`` return ``[]`` when the engine knows nothing
  there (the signal to withhold a rename), never raise for an unknown site;
- a server that dies, hangs past the timeout or is missing raises ``EngineError``
  (``EngineMissing`` with the install hint when the binary is not installed).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import os
import queue
import re
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from lint_rules.analysis.project import FileMap

TIMEOUT = 60.0
"""Seconds one request may take (a cold 1,000-file project answers in about a second)."""


class EngineError(RuntimeError):
    """The reference engine could not answer (died, timed out, refused a request)."""


class EngineMissing(EngineError):
    """The engine's binary is not installed."""


class Position(NamedTuple):
    """1-based line, 0-based character column."""

    line: int
    column: int


@dataclass(frozen=True, order=True)
class Location:
    """Where a reference or definition is: a file and its start and end positions."""

    path: Path
    start: Position
    end: Position


def ty_command() -> list[str]:
    """The command that starts ty's language server (``ty server``)."""
    try:
        from ty import find_ty_bin  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        binary = shutil.which("ty")
    else:
        try:
            binary = str(find_ty_bin())
        except FileNotFoundError:
            binary = shutil.which("ty")
    if binary is None:
        raise EngineMissing(
            'the reference engine `ty` is not installed: pip install "agent-sessions[lint]"'
        )
    return [binary, "server"]


ENGINE_VARIABLE = "LINT_RULES_REFERENCE_ENGINE"
"""An environment variable holding the command that starts the reference engine instead
of ``ty server`` (split like a shell would): another build of ty, or a test's stand-in."""


def reference_command() -> list[str] | None:
    """The engine's command from ``LINT_RULES_REFERENCE_ENGINE``; ``None``: ``ty server``
    (looked up only when the engine starts, see ``ty_command``)."""
    import shlex

    configured = os.environ.get(ENGINE_VARIABLE, "").strip()
    return shlex.split(configured) if configured else None


class LanguageServer:
    """A language server process and a JSON-RPC conversation with it over stdio.

    ``root`` is the workspace; every path given to or returned by the server is
    absolute. Server-to-client requests (configuration, progress, capability
    registration) get empty answers. Use as a context manager, or call ``close``.
    """

    def __init__(
        self,
        command: Sequence[str],
        root: Path,
        *,
        settings: dict[str, Any] | None = None,
        timeout: float = TIMEOUT,
    ) -> None:
        self.root = root.resolve()
        self.timeout = timeout
        self._settings = settings or {}
        self._texts: dict[Path, list[str]] = {}
        self._opened: set[Path] = set()
        self._paths: dict[str, Path] = {}
        """The file of each URI the server answered with (resolved once)."""
        self._next_id = 0
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        import subprocess  # here, not at the top: a run the cache answers never needs it

        try:
            self._process = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd=self.root,
                env={**os.environ, "NO_COLOR": "1"},
            )
        except FileNotFoundError as error:
            raise EngineMissing(f"cannot start {command[0]}: {error}") from None
        self._reader = threading.Thread(target=self._read, name="lsp-reader", daemon=True)
        self._reader.start()
        try:
            self.capabilities = self._initialize()
        except BaseException:
            self._process.kill()
            self.close()
            raise

    def _initialize(self) -> dict[str, Any]:
        capabilities: dict[str, Any] = self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": self.root.as_uri(),
                "workspaceFolders": [{"uri": self.root.as_uri(), "name": self.root.name}],
                "capabilities": {
                    "general": {"positionEncodings": ["utf-16"]},
                    "workspace": {"configuration": True, "workspaceFolders": True},
                    "textDocument": {
                        "references": {},
                        "definition": {"linkSupport": False},
                        "synchronization": {"didSave": False},
                    },
                },
                "initializationOptions": self._settings,
            },
        ).get("capabilities", {})
        self.notify("initialized", {})
        return capabilities

    # -- queries ------------------------------------------------------------------------------

    def references(
        self, path: Path, at: Position, *, include_declaration: bool = True
    ) -> list[Location]:
        """Every reference the engine knows of the symbol at ``at`` (sorted)."""
        return self.references_later(path, at, include_declaration=include_declaration)()

    def references_later(
        self, path: Path, at: Position, *, include_declaration: bool = True
    ) -> Callable[[], list[Location]]:
        """``references``, asked now and awaited by calling the function returned: requests
        sent one after the other are answered while the caller works (``plan`` reads the
        files meanwhile), not one at a time."""
        wait = self._ask_later(
            "textDocument/references",
            path,
            at,
            {"context": {"includeDeclaration": include_declaration}},
        )
        return lambda: sorted(self._locations(wait()))

    def definition(self, path: Path, at: Position) -> list[Location]:
        """Where the symbol at ``at`` is defined (``[]``: the engine does not know)."""
        return sorted(self._locations(self._ask("textDocument/definition", path, at, {})))

    def open(self, path: Path) -> None:
        """Tell the server about ``path`` (queries open their file themselves)."""
        path = path.resolve()
        if path in self._opened:
            return
        text = path.read_text(encoding="utf-8")
        self._texts[path] = text.splitlines(keepends=True)
        self._opened.add(path)
        document = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": document})

    def close(self) -> None:
        """Shut the server down (politely, then by force)."""
        import subprocess

        if self._process.poll() is None:
            try:
                self.request("shutdown", None, timeout=5.0)
                self.notify("exit", None)
                self._process.wait(timeout=5.0)
            except (EngineError, OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                stream.close()

    def __enter__(self) -> LanguageServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- JSON-RPC -----------------------------------------------------------------------------

    def request(self, method: str, params: Any, *, timeout: float | None = None) -> Any:
        return self.request_later(method, params, timeout=timeout)()

    def request_later(
        self, method: str, params: Any, *, timeout: float | None = None
    ) -> Callable[[], Any]:
        """Send a request now; the function returned waits for its answer (the engine works
        on it meanwhile, and on any other request sent before that one is awaited)."""
        with self._lock:
            self._next_id += 1
            number = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
            self._waiting[number] = answer
        try:
            self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        except BaseException:
            with self._lock:
                self._waiting.pop(number, None)
            raise

        def wait() -> Any:
            try:
                message = answer.get(timeout=self.timeout if timeout is None else timeout)
            except queue.Empty:
                raise EngineError(f"{method}: no answer within {self.timeout:.0f} s") from None
            finally:
                with self._lock:
                    self._waiting.pop(number, None)
            if "error" in message:
                error = message["error"]
                if error.get("code") == -32801:  # content modified: the engine's answer is stale
                    return None
                raise EngineError(f"{method}: {error.get('message', error)}")
            return message.get("result")

        return wait

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _ask(self, method: str, path: Path, at: Position, extra: dict[str, Any]) -> Any:
        return self._ask_later(method, path, at, extra)()

    def _ask_later(
        self, method: str, path: Path, at: Position, extra: dict[str, Any]
    ) -> Callable[[], Any]:
        path = path.resolve()
        self.open(path)
        params = {
            "textDocument": {"uri": path.as_uri()},
            "position": {"line": at.line - 1, "character": self._utf16(path, at)},
            **extra,
        }
        return self.request_later(method, params)

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        stdin = self._process.stdin
        if stdin is None or self._process.poll() is not None:
            raise EngineError(f"the language server exited ({self._process.returncode})")
        with self._write_lock:
            try:
                stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                stdin.flush()
            except (BrokenPipeError, ValueError) as error:
                raise EngineError(f"the language server is gone: {error}") from None

    def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = stdout.readline()
                if not line:
                    self._fail_all("the language server exited")
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            message = json.loads(stdout.read(length))
            if "method" in message and "id" in message:
                self._answer_server(message)
            elif "id" in message:
                with self._lock:
                    waiting = self._waiting.get(message["id"])
                if waiting is not None:
                    waiting.put(message)

    def _answer_server(self, message: dict[str, Any]) -> None:
        result: Any = None
        if message["method"] == "workspace/configuration":
            items = message.get("params", {}).get("items", [])
            result = [self._settings.get(item.get("section", ""), {}) for item in items]
        elif message["method"] == "workspace/workspaceFolders":
            result = [{"uri": self.root.as_uri(), "name": self.root.name}]
        with contextlib.suppress(EngineError):  # the server is gone: its reader ends too
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def _fail_all(self, reason: str) -> None:
        with self._lock:
            waiting = list(self._waiting.values())
        for answer in waiting:
            answer.put({"error": {"message": reason}})

    # -- positions ----------------------------------------------------------------------------

    def line(self, path: Path, number: int) -> str:
        """Line ``number`` (1-based) of ``path`` as the server was told or as on disk."""
        lines = self._lines(path.resolve())
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def _lines(self, path: Path) -> list[str]:
        lines = self._texts.get(path)
        if lines is None:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                text = ""
            lines = self._texts[path] = text.splitlines(keepends=True)
        return lines

    def _utf16(self, path: Path, at: Position) -> int:
        lines = self._lines(path)
        if not 0 < at.line <= len(lines) or lines[at.line - 1].isascii():
            return at.column
        return len(lines[at.line - 1][: at.column].encode("utf-16-le")) // 2

    def _column(self, path: Path, line: int, utf16: int) -> int:
        lines = self._lines(path)
        if not 0 < line <= len(lines) or lines[line - 1].isascii():
            return utf16
        text, units = lines[line - 1], 0
        for index, character in enumerate(text):
            if units >= utf16:
                return index
            units += 2 if ord(character) > 0xFFFF else 1
        return len(text)

    def _position(self, path: Path, at: dict[str, int]) -> Position:
        line = at["line"] + 1
        return Position(line, self._column(path, line, at["character"]))

    def _locations(self, result: Any) -> list[Location]:
        if result is None:
            return []
        found = []
        for item in result if isinstance(result, list) else [result]:
            uri = item.get("uri") or item.get("targetUri")
            span = item.get("range") or item.get("targetSelectionRange")
            if not uri or not uri.startswith("file://") or span is None:
                continue
            path = self._paths.get(uri)
            if path is None:
                path = self._paths[uri] = _path_of(uri)
            start, end = (self._position(path, span[edge]) for edge in ("start", "end"))
            found.append(Location(path, start, end))
        return found


def _path_of(uri: str) -> Path:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path)).resolve()


# -- classifying every occurrence of a target's spelling ----------------------------------------

TARGET = "target"
"""The occurrence is the renamed thing's: rename it."""
OTHER = "other"
"""The occurrence provably means something else (another class's attribute, ``str.split``)."""
UNKNOWN = "unknown"
"""Nobody can tell: the safe rename of the whole target is withheld, the site reported."""


@dataclass(frozen=True, order=True)
class Occurrence:
    """One occurrence of the old spelling, and what it is.

    ``kind``: ``definition``, ``parameter``, ``name``, ``attribute``, ``keyword``,
    ``import``, ``__all__`` (an entry of ``__all__``), ``getattr`` (the string of a
    ``getattr``/``hasattr``/``setattr``/``delattr`` call), ``options`` (a key read
    from a ``**kwargs`` dictionary: ``options.get("old")``, ``options["old"]``) or
    ``format`` (a ``str.format`` field reading the attribute: ``"{self.old!r}"``) or
    ``forwarded`` (a key read, in another function, from a ``**kwargs`` dictionary handed
    to it: ``forwarded_reads``; found by the plan, not by ``occurrences``), ``unpacked``
    (a key of a dictionary display unpacked into a call, ``f(**options())``:
    ``unpacked_keys``; found by the plan too) or ``source``
    (the spelling in a string of Python source that imports, calls or reads it:
    ``create_module("from pkg import old ...")``, ``mock.patch("pkg.mod.old")``).
    """

    path: Path
    start: Position
    kind: str
    verdict: str = UNKNOWN
    reason: str = ""
    on_import: bool = True
    """For an ``attribute``: whether its receiver may be a module (a name this file
    imports); a call's result, a literal or a local object is never one."""
    on_string: bool = False
    """For an ``attribute``: whether its receiver is provably a ``str`` (a string literal,
    an f-string, or a call of the builtin ``str``, which the file does not rebind), so the
    attribute is ``str``'s own: never a module's nor the project's."""


PLAN_KINDS = frozenset({"forwarded", "unpacked"})
"""Occurrences only the plan finds (across functions and modules), not ``occurrences``."""
_STRING_KINDS = frozenset({"__all__", "getattr", "options", "format", "source"})
_GETATTR = frozenset({"getattr", "hasattr", "setattr", "delattr"})
_DICT_READS = frozenset({"get", "pop", "setdefault"})


def occurrences(path: Path, text: str, spelling: str) -> list[Occurrence]:
    """Every occurrence of ``spelling`` in one file's syntax (stdlib ``ast``), unclassified.

    Strings count only where they name a binding: ``__all__`` entries, the name given
    to ``getattr`` and its kin, and keys read from a ``**kwargs`` dictionary (the
    function's own ``**`` parameter, or a parameter of a function of the same module
    it is handed to), and strings of Python source that import, call or read it (code
    no engine reads). Other strings are values, not names: never an occurrence here.
    """
    return occurrences_of(path, text, (spelling,)).get(spelling, [])


def occurrences_of(
    path: Path, text: str, spellings: Iterable[str], tree: ast.Module | None = None
) -> dict[str, list[Occurrence]]:
    """``occurrences`` of each of ``spellings`` (those the text holds) in one parse and one
    walk of the file, whatever the number of spellings; ``tree``: the file's syntax tree
    when the caller has it (``ast.parse(text)``)."""
    present = {spelling for spelling in spellings if spelling in text}
    if not present:
        return {}
    if tree is None:
        tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    found: dict[str, list[Occurrence]] = {spelling: [] for spelling in present}

    def at(line: int, byte_column: int) -> Position:
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        column = byte_column if source.isascii() else len(source.encode()[:byte_column].decode())
        return Position(line, column)

    def add(spelling: str, position: Position, kind: str) -> None:
        found[spelling].append(Occurrence(path, position, kind))

    def named(spelling: str, start_line: int, start_column: int, kind: str) -> None:
        """The spelling inside the node's first line, after ``start_column``."""
        line = lines[start_line - 1]
        prefix = len(line.encode()[:start_column].decode()) if not line.isascii() else start_column
        index = _word(line, spelling, prefix)
        if index >= 0:
            add(spelling, Position(start_line, index), kind)

    nodes = _nodes_near(tree, text, (*present, "import", "str"))
    dictionaries_of: list[set[tuple[str, int]]] = []

    def dictionaries() -> set[tuple[str, int]]:
        """``_kwargs_dictionaries`` of the whole file, on first need."""
        if not dictionaries_of:
            dictionaries_of.append(_kwargs_dictionaries(tree))
        return dictionaries_of[0]

    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in nodes
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    builtin_str: bool | None = None  # whether `str` is the builtin here (known on first need)
    for node in nodes:
        if isinstance(node, ast.Name):
            if node.id in present:
                add(node.id, at(node.lineno, node.col_offset), "name")
        elif isinstance(node, ast.Attribute):
            if node.attr in present:
                spelling = node.attr
                end = at(node.end_lineno or node.lineno, node.end_col_offset or 0)
                receiver = node.value
                on_import = isinstance(receiver, ast.Name) and receiver.id in imported
                on_string = isinstance(receiver, ast.JoinedStr) or (
                    isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)
                )
                if _calls_str(receiver):
                    if builtin_str is None:
                        builtin_str = not _binds_str(nodes)
                    on_string = builtin_str
                found[spelling].append(
                    Occurrence(
                        path,
                        Position(end.line, end.column - len(spelling)),
                        "attribute",
                        on_import=on_import or isinstance(receiver, ast.Attribute),
                        on_string=on_string,
                    )
                )
        elif isinstance(node, ast.arg):
            if node.arg in present:
                add(node.arg, at(node.lineno, node.col_offset), "parameter")
        elif isinstance(node, ast.keyword):
            if node.arg in present:
                add(node.arg, at(node.lineno, node.col_offset), "keyword")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in present:
                named(node.name, node.lineno, node.col_offset, "definition")
        elif isinstance(node, ast.alias):
            parts = node.name.split(".")
            for spelling in present:
                if spelling in parts or node.asname == spelling:
                    named(spelling, node.lineno, node.col_offset, "import")
        elif isinstance(node, ast.Assign) and _is_all(node):
            for element in _strings(node.value):
                if element.value in present:
                    add(element.value, at(element.lineno, element.col_offset + 1), "__all__")
        elif isinstance(node, ast.Call):
            function = node.func
            if (
                isinstance(function, ast.Name)
                and function.id in _GETATTR
                and len(node.args) >= 2
                and _string(node.args[1]) in present
            ):
                name = node.args[1]
                add(_string(name) or "", at(name.lineno, name.col_offset + 1), "getattr")
            elif (
                isinstance(function, ast.Attribute)
                and function.attr in _DICT_READS
                and isinstance(function.value, ast.Name)
                and node.args
                and _string(node.args[0]) in present
                and (function.value.id, node.lineno) in dictionaries()
            ):
                key = node.args[0]
                add(_string(key) or "", at(key.lineno, key.col_offset + 1), "options")
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and any(s in node.value for s in present):
                named_in_source: frozenset[str] | None = None
                for spelling in present:
                    if spelling not in node.value:
                        continue
                    if f".{spelling}" in node.value and _format_field(spelling).search(node.value):
                        _format_occurrence(node, spelling, lines, found[spelling], path)
                        continue
                    if named_in_source is None:
                        named_in_source = _named_in_source(node.value)
                    if spelling in named_in_source:
                        _source_occurrences(node, spelling, lines, found[spelling], path)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and _string(node.slice) in present
            and (node.value.id, node.lineno) in dictionaries()
        ):
            key = node.slice
            add(_string(key) or "", at(key.lineno, key.col_offset + 1), "options")
    return {spelling: sorted(listed) for spelling, listed in found.items()}


def _calls_str(node: ast.expr) -> bool:
    """Whether ``node`` is a call ``str(...)`` (of whatever ``str`` is bound to)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "str"
        and not node.keywords
        and len(node.args) <= 1
        and not any(isinstance(argument, ast.Starred) for argument in node.args)
    )


def _nodes_near(tree: ast.Module, text: str, words: Sequence[str]) -> list[ast.AST]:
    """The nodes of ``tree`` whose lines (a definition's decorators included) hold one of
    ``words`` (as text), with their ancestors: every node whose identifier, name, keyword
    or string can be one of the words, without walking the rest of the file. A node
    without a position is always walked into; a non-ASCII text (where an identifier may
    be spelt otherwise, NFKC) or one with ``\\r`` line endings is walked whole."""
    if not text.isascii() or "\r" in text:
        return list(ast.walk(tree))
    import bisect

    lines: list[int] = []  # the numbers of the lines holding a word, in order
    line, counted = 1, 0
    for match in _words_pattern(tuple(words)).finditer(text):
        line += text.count("\n", counted, match.start())
        counted = match.start()
        if not lines or lines[-1] != line:
            lines.append(line)
    found: list[ast.AST] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        for child in ast.iter_child_nodes(node):
            first = getattr(child, "lineno", None)
            if first is not None:
                last = getattr(child, "end_lineno", None) or first
                for decorator in getattr(child, "decorator_list", ()):
                    first = min(first, decorator.lineno)  # above a `def` or `class` line
                index = bisect.bisect_left(lines, first)
                if index == len(lines) or lines[index] > last:
                    continue  # no line of this node holds a word
            stack.append(child)
    return found


def _words_pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    """A pattern matching any of ``words`` (the longest first where two start together;
    ``re`` keeps the compiled patterns it was asked for last)."""
    return re.compile("|".join(re.escape(word) for word in sorted(words, key=len, reverse=True)))


def _binds_str(nodes: Sequence[ast.AST]) -> bool:
    """Whether the file may bind the name ``str`` (then ``str(...)`` is not the builtin's
    call): an assignment, a parameter, a definition, an import (``*`` included), a
    ``match`` capture or an ``except ... as str``."""
    for node in nodes:
        if isinstance(node, ast.Name):
            if node.id == "str" and not isinstance(node.ctx, ast.Load):
                return True
        elif isinstance(node, ast.arg):
            if node.arg == "str":
                return True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == "str":
                return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name).split(".")[0] == "str":
                    return True
        elif isinstance(node, (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)):
            if node.name == "str":
                return True
        elif isinstance(node, ast.MatchMapping) and node.rest == "str":
            return True
    return False


_STR_ATTRIBUTES = frozenset(dir(str))
"""The attributes every ``str`` has: on a receiver that is a ``str`` (``Occurrence.on_string``)
the engine leads to ``str``'s own, outside the project."""


def _format_occurrence(
    node: ast.Constant, spelling: str, lines: list[str], found: list[Occurrence], path: Path
) -> None:
    """The ``format`` occurrence of ``spelling`` in a string constant's first line."""
    line = lines[node.lineno - 1] if 0 < node.lineno <= len(lines) else ""
    start = (
        len(line.encode()[: node.col_offset].decode()) if not line.isascii() else node.col_offset
    )
    match = re.compile(rf"\.{re.escape(spelling)}\b").search(line, start)
    if match is not None:
        found.append(Occurrence(path, Position(node.lineno, match.start() + 1), "format"))


def _named_in_source(value: str) -> frozenset[str]:
    """The names that a string holding Python source imports, calls, decorates with, reads
    as an attribute (``obj.old``, a dotted path ``"pkg.mod.old"``) or passes as a keyword:
    ``frozenset()`` when the string does not parse as Python (prose), or is a lone name or
    a list of names (``"old"``, pytest's ``"old, other"``), which are values, not code."""
    import textwrap

    if "\n" not in value and "import" not in value and not any(m in value for m in ".(@"):
        return frozenset()  # one line without an import, dot, call or decorator: no code
    try:
        tree = ast.parse(textwrap.dedent(value))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.alias):
            names.update(node.name.split("."))
            if node.asname:
                names.add(node.asname)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names.add(node.func.id)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.update(d.id for d in node.decorator_list if isinstance(d, ast.Name))
    return frozenset(names)


def _source_occurrences(
    node: ast.Constant, spelling: str, lines: list[str], found: list[Occurrence], path: Path
) -> None:
    """A ``source`` occurrence at each word ``spelling`` in the string's own text (its
    lines in the file, from its opening quote to its closing one)."""
    last = node.end_lineno or node.lineno
    pattern = re.compile(rf"(?<!\w){re.escape(spelling)}(?!\w)")
    for number in range(node.lineno, last + 1):
        line = lines[number - 1] if 0 < number <= len(lines) else ""
        encoded = line.encode()
        start = len(encoded[: node.col_offset].decode()) if number == node.lineno else 0
        end = len(line)
        if number == last and node.end_col_offset is not None:
            end = len(encoded[: node.end_col_offset].decode())
        for match in pattern.finditer(line, start, end):
            found.append(Occurrence(path, Position(number, match.start()), "source"))


def _format_field(spelling: str) -> re.Pattern[str]:
    """A ``str.format`` replacement field that reads the attribute: ``{self.old!r}``."""
    return re.compile(rf"(?<!{{){{[\w.\[\]]*\.{re.escape(spelling)}\b[^{{}}]*}}")


def _word(line: str, word: str, start: int) -> int:
    import re

    match = re.compile(rf"(?<![\w.]){re.escape(word)}(?!\w)").search(line, start)
    if match is None:
        match = re.compile(rf"\b{re.escape(word)}\b").search(line, start)
    return -1 if match is None else match.start()


def _is_all(node: Any) -> bool:
    import ast

    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)


def _strings(node: Any) -> list[Any]:
    import ast

    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [e for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _string(node: Any) -> str | None:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _kwargs_dictionaries(tree: Any, nodes: Sequence[Any] | None = None) -> set[tuple[str, int]]:
    """``(name, line)`` of every line of a function where ``name`` holds a ``**kwargs``
    dictionary: the function's ``**`` parameter, and the parameter of a function of the
    same module that such a dictionary is handed to positionally (``nodes``: every node
    of ``tree``, when the caller has walked it)."""
    import ast

    functions = {
        node.name: node
        for node in (ast.walk(tree) if nodes is None else nodes)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    holders: dict[str, set[str]] = {}
    for name, function in functions.items():
        if function.args.kwarg is not None:
            holders.setdefault(name, set()).add(function.args.kwarg.arg)
    changed = bool(holders)
    while changed:  # hand-offs: `validate(options)` makes `validate`'s parameter one too
        changed = False
        for name, function in functions.items():
            held = holders.get(name)
            if not held:
                continue  # nothing to hand on from here
            for call in ast.walk(function):
                if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                    continue
                callee = functions.get(call.func.id)
                if callee is None:
                    continue
                positional = [*callee.args.posonlyargs, *callee.args.args]
                for index, argument in enumerate(call.args[: len(positional)]):
                    if isinstance(argument, ast.Name) and argument.id in held:
                        parameter = positional[index].arg
                        if parameter not in holders.setdefault(callee.name, set()):
                            holders[callee.name].add(parameter)
                            changed = True
    lines: set[tuple[str, int]] = set()
    for name, held in holders.items():
        function = functions[name]
        assert function.end_lineno is not None
        for line in range(function.lineno, function.end_lineno + 1):
            lines.update((holder, line) for holder in held)
    return lines


def definition_site(module: Path, owner: str, old: str, keyword: bool) -> Position | None:
    """Where the target is defined in its module's file: ``owner`` is the dotted path of a
    class or function inside the module (``""``: a module attribute); ``keyword``: ``old``
    is a parameter of ``owner`` (of its ``__init__`` when ``owner`` is a class)."""
    import ast

    text = module.read_text(encoding="utf-8")
    scope: Any = ast.parse(text)
    for part in owner.split(".") if owner else ():
        scope = next(
            (
                node
                for node in scope.body
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == part
            ),
            None,
        )
        if scope is None:
            return None
    if keyword and isinstance(scope, ast.ClassDef):
        scope = next(
            (n for n in scope.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
            None,
        )
    found = [o for o in occurrences(module, text, old) if o.kind not in ("options", "source")]
    if scope is None:
        return None
    if keyword:
        arguments = scope.args
        for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
            if argument.arg == old:
                return next(o.start for o in found if o.start.line == argument.lineno)
        return None
    body = scope.body
    for node in body:
        names: list[tuple[str, int]] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [(node.name, node.lineno)]
        elif isinstance(node, ast.Assign):
            names = [(t.id, t.lineno) for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [(node.target.id, node.lineno)]
        for name, line in names:
            if name == old:
                return next(o.start for o in found if o.start.line == line)
    return None


class Classifier:
    """Decides, with the engine, what each occurrence of a target's spelling is.

    ``definition`` is where the target is defined (``definition_site``); ``member``: the
    target is a class attribute, so an attribute that a subclass assigns is the same one;
    ``module_attribute``: a module's function, class or variable, which an attribute can
    reach only through a module (``text.split`` on a local object is not it).
    References come from the engine once; an occurrence they leave out is decided by
    ``definition`` there: the target's (the engine's references missed it), something
    else's (a look-alike), or unknown when the answer is empty or is the callee rather
    than a parameter. ``definition=None`` (the target is no longer defined, e.g. after its
    rename): what still resolves is something else, what does not is unknown.
    """

    def __init__(
        self,
        server: LanguageServer,
        definition: Location | None,
        member: bool,
        spelling: str,
        *,
        module_attribute: bool = False,
        keyword: bool = False,
        references: Callable[[], list[Location]] | None = None,
        resolve: Callable[[Path], Path] | None = None,
    ) -> None:
        self.server = server
        self.member = member
        self.module_attribute = module_attribute
        self.keyword = keyword
        self.spelling = spelling
        self._target: tuple[Path, Position] | None = None
        self._references: set[tuple[Path, Position]] = set()
        self._target_class: tuple[Path, int] | None = None
        self._target_function: tuple[Path, int] | None = None
        self._constructor = False
        """Whether the target is a parameter of a class's ``__init__``."""
        self._inherits: dict[tuple[Path, int], bool] = {}
        self._resolve = resolve or _resolver()
        if definition is not None:
            path = definition.path.resolve()
            self._target = (path, definition.start)
            answer = references or (lambda: server.references(path, definition.start))
            self._references = {(location.path, location.start) for location in answer()}
            self._target_class = _enclosing_class(path, definition.start.line)
            self._target_function = _enclosing_function(path, definition.start.line)
            if self._target_function is not None:
                function = _function_at(*self._target_function)
                self._constructor = function is not None and function.name == "__init__"

    def classify(self, found: Sequence[Occurrence]) -> list[Occurrence]:
        decided = [self._decide(occurrence) for occurrence in found]
        # An `__all__` entry follows the module-level binding of its own module.
        exported = {
            o.path
            for o in decided
            if o.verdict == TARGET and o.kind in ("definition", "import", "name")
        }
        return [
            _with(o, TARGET if o.path in exported else OTHER) if o.kind == "__all__" else o
            for o in decided
        ]

    def _decide(self, occurrence: Occurrence) -> Occurrence:
        path = self._resolve(occurrence.path)
        if (path, occurrence.start) in self._references:
            return _with(occurrence, TARGET)
        if occurrence.kind == "__all__":
            return occurrence  # decided with its module's binding, in `classify`
        if self.keyword and self._target and occurrence.kind in _NOT_A_PARAMETER:
            return _with(occurrence, OTHER)  # `retry.method_whitelist`: an attribute
        if occurrence.kind in _STRING_KINDS:
            return _with(occurrence, UNKNOWN, _UNRESOLVED[occurrence.kind])
        if occurrence.on_string and self.module_attribute:
            return _with(occurrence, OTHER)  # `str(text).split`: a string's, not a module's
        answers = self.server.definition(path, occurrence.start)
        if any((a.path, a.start) == self._target for a in answers):
            return _with(occurrence, TARGET)
        if not answers and self.module_attribute and not occurrence.on_import:
            return _with(occurrence, OTHER)  # a module's attribute is reached through it
        if not answers and occurrence.kind == "keyword":
            if self._forwarded(path, occurrence):
                return _with(occurrence, TARGET)  # a subclass's `__init__` hands it on
            found = _keyword_call(path, occurrence.start, self.spelling)
            if found is not None and _on_a_string(found[0]):
                return _with(occurrence, OTHER)  # `"{x}".format(x=...)`: `str.format`'s
            if found is not None and _builds_a_dict(found[0]):
                return _with(occurrence, UNKNOWN, _DICT_KEYWORD)
            if found is not None and found[1].line:
                forwarder = self._forwarder(path, found[1])
                if forwarder is not None:
                    return _with(occurrence, UNKNOWN, forwarder)
        if not answers and occurrence.kind == "attribute" and self._elsewhere(path, occurrence):
            return _with(occurrence, OTHER)  # e.g. `urllib.parse` for a module's `parse`
        if not answers:
            reason = _UNRESOLVED[occurrence.kind] if self._target else _STALE
            return _with(occurrence, UNKNOWN, reason)
        inside = [a for a in answers if _inside(a.path, self.server.root)]
        if self.keyword and occurrence.kind == "keyword" and not inside:
            found = _keyword_call(path, occurrence.start, self.spelling)
            if found is not None and _builds_a_dict(found[0]):
                return _with(occurrence, UNKNOWN, _DICT_KEYWORD)
        if self._target_class and self.member and any(map(self._subclass_attribute, inside)):
            return _with(occurrence, TARGET)
        spelt = [
            a
            for a in inside
            if _identifier_at(self.server.line(a.path, a.start.line), a.start.column)
            == self.spelling
        ]
        if occurrence.kind == "keyword" and inside and not spelt:
            return _with(occurrence, UNKNOWN, "the engine leads to the callee, not to a parameter")
        unread = self.member and occurrence.kind in ("name", "attribute")
        if unread and self._unread(path, occurrence, answers):
            return _with(occurrence, UNKNOWN, _UNREAD)
        return _with(occurrence, OTHER)

    def _unread(self, path: Path, occurrence: Occurrence, answers: Sequence[Location]) -> bool:
        """Whether the occurrence defines an attribute of a class unrelated to the target's
        that nothing reads by name (the engine's only answer and reference is itself): such
        a value is read some other way, as pydantic 1 merges a model's ``class Config:``
        into ``BaseConfig`` and reads ``cls.__config__.orm_mode``."""
        here = (path, occurrence.start)
        if not answers or any((a.path, a.start) != here for a in answers):
            return False
        if _enclosing_class(path, occurrence.start.line) is None:
            return False
        return all(
            (r.path, r.start) == here for r in self.server.references(path, occurrence.start)
        )

    def _forwarded(self, path: Path, occurrence: Occurrence) -> bool:
        """Whether a keyword of a constructor call provably reaches the target parameter:
        the called class inherits the target's class through single bases only, and every
        ``__init__`` on the way takes no parameter of that name and hands its ``**kwargs``
        to ``super().__init__`` untouched (no ``kwargs.get``, ``kwargs["old"]``, ...)."""
        if not (self.keyword and self._target is not None):
            return False
        found = _keyword_call(path, occurrence.start, self.spelling)
        if found is None or found[1].line == 0:
            return False
        return self._reaches((path, found[1]), 0)

    def _forwarder(self, path: Path, callee: Position) -> str | None:
        """The reason for a keyword passed to a function or class of the project that takes
        ``**kwargs`` (where it goes was not proven), or ``None``."""
        for answer in self.server.definition(path, callee):
            if not _inside(answer.path, self.server.root):
                continue
            function = _function_at(answer.path, answer.start.line)
            if function is None:
                node = next(
                    (n for n in _class_nodes(answer.path) if n.lineno == answer.start.line), None
                )
                init = next(
                    (
                        n
                        for n in (node.body if node is not None else ())
                        if isinstance(n, ast.FunctionDef) and n.name == "__init__"
                    ),
                    None,
                )
                function = init
            if function is not None and function.args.kwarg is not None:
                name = (
                    function.name if function.name != "__init__" else f"{_class_init_name(answer)}"
                )
                return (
                    f"forwarded through `**{function.args.kwarg.arg}` of `{name}`, which may "
                    "read, change or drop it"
                )
        return None

    def _reaches(self, callee: tuple[Path, Position], depth: int) -> bool:
        """Whether a call of ``callee`` hands a keyword to the target: the callee is the
        target's function, a class whose construction does (``_forwards``), or a function
        of the project that passes its ``**kwargs`` on to one that does."""
        if depth > _MAX_BASES_DEPTH:
            return False
        answers = [a for a in self.server.definition(*callee) if _inside(a.path, self.server.root)]
        if not answers:
            return False
        for answer in answers:
            where = (answer.path, answer.start.line)
            if where == self._target_function:
                continue
            if any(n.lineno == where[1] for n in _class_nodes(where[0])):
                if not (self._target_class and self._constructor):
                    return False
                if not self._forwards(where, 0):
                    return False
                continue
            function = _function_at(*where)
            handed = _kwargs_handed_on(function, self.spelling) if function else None
            if not handed:
                return False
            for call in handed:
                name = _called_name(call)
                if name is None or not self._reaches((where[0], name), depth + 1):
                    return False
        return True

    def _elsewhere(self, path: Path, occurrence: Occurrence) -> bool:
        """For a module's attribute: whether the attribute is read on a module of another
        project (``urllib.parse``): its receiver's first name resolves outside the root."""
        if not (self.module_attribute and occurrence.on_import):
            return False
        receiver = _receiver_root(path, occurrence.start, self.spelling)
        if receiver is None:
            return False
        answers = self.server.definition(path, receiver)
        return bool(answers) and not any(_inside(a.path, self.server.root) for a in answers)

    def _forwards(self, owner: tuple[Path, int], depth: int) -> bool:
        if owner == self._target_class:
            return True
        node = next((n for n in _class_nodes(owner[0]) if n.lineno == owner[1]), None)
        if node is None or len(node.bases) != 1 or depth > _MAX_BASES_DEPTH:
            return False
        init = next(
            (n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"),
            None,
        )
        if init is not None:
            handed = _kwargs_handed_on(init, self.spelling)
            if handed is None or not all(map(_super_init, handed)):
                return False
        return any(
            self._forwards((answer.path, answer.start.line), depth + 1)
            for base in _bases(*owner)
            for answer in self.server.definition(owner[0], base)
            if _inside(answer.path, self.server.root)
        )

    def _subclass_attribute(self, answer: Location) -> bool:
        """Whether ``answer`` is an attribute of a class that inherits the target's class:
        ``self.old = value`` there sets the inherited attribute."""
        owner = _enclosing_class(answer.path, answer.start.line)
        return owner is not None and self._is_subclass(owner, 0)

    def _is_subclass(self, owner: tuple[Path, int], depth: int) -> bool:
        if owner == self._target_class:
            return True
        if depth > _MAX_BASES_DEPTH or owner in self._inherits:
            return self._inherits.get(owner, False)
        self._inherits[owner] = False  # a cycle (or a repeat) answers from here
        result = any(
            self._is_subclass((answer.path, answer.start.line), depth + 1)
            for base in _bases(*owner)
            for answer in self.server.definition(owner[0], base)
            if _inside(answer.path, self.server.root)
        )
        self._inherits[owner] = result
        return result


_MAX_BASES_DEPTH = 20
_NOT_A_PARAMETER = frozenset({"attribute", "getattr", "format"})
"""Occurrences that are never a keyword target's: attributes and the strings naming them
(a parameter is no attribute, even when ``__init__`` stores it under its own name)."""
_DICT_KEYWORD = (
    "a key of a dictionary built with `dict(...)`: it may be unpacked into a call of the"
    " target (`**params`)"
)
_UNREAD = (
    "an attribute of a class that does not inherit the target's, and nothing reads it by"
    " name: it may be read as the target (merged by a metaclass, `vars()`, `__dict__`)"
)
_STALE = "the target is not defined where the configuration says, and this does not resolve"
_UNRESOLVED = {
    "keyword": "the engine cannot tell which parameter this keyword is "
    "(the callee may take `**kwargs`)",
    "attribute": "the receiver's type is not known",
    "name": "the engine cannot resolve this name",
    "parameter": "the engine cannot resolve this parameter",
    "definition": "the engine cannot resolve this definition",
    "import": "the engine cannot resolve this import",
    "getattr": "a string naming an attribute: the receiver's type is not known",
    "options": "read from a `**kwargs` dictionary: no engine follows forwarded keywords",
    "format": "an attribute read in a format string's replacement field: its receiver's type"
    " is not known",
    "source": "Python source in a string names the target (code run from a string, a dotted"
    " path): no engine reads it",
}


def _with(occurrence: Occurrence, verdict: str, reason: str = "") -> Occurrence:
    """``dataclasses.replace(occurrence, verdict=verdict, reason=reason)``, spelt out (it is
    made for every occurrence of a plan: ``replace`` inspects the fields each time)."""
    o = occurrence
    return Occurrence(o.path, o.start, o.kind, verdict, reason, o.on_import, o.on_string)


def _keyword_call(path: Path, at: Position, spelling: str) -> tuple[ast.Call, Position] | None:
    """The call that passes the keyword ``spelling`` at ``at``, and where its called name
    is spelt (a name, or an attribute's last part; ``Position(0, 0)`` for another callee)."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    lines = text.splitlines(keepends=True)

    def column(line: int, byte_column: int) -> int:
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        return byte_column if source.isascii() else len(source.encode()[:byte_column].decode())

    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != spelling or keyword.lineno != at.line:
                continue
            if column(keyword.lineno, keyword.col_offset) != at.column:
                continue
            function = node.func
            if isinstance(function, ast.Name):
                return node, Position(function.lineno, column(function.lineno, function.col_offset))
            if isinstance(function, ast.Attribute) and function.end_col_offset is not None:
                line = function.end_lineno or function.lineno
                end = column(line, function.end_col_offset)
                return node, Position(line, end - len(function.attr))
            return node, Position(0, 0)
    return None


def _receiver_root(path: Path, at: Position, spelling: str) -> Position | None:
    """Where the first name of the receiver of the attribute ``spelling`` at ``at`` is
    (``urllib`` in ``urllib.parse.quote``), or ``None`` when it is not a dotted name."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    lines = text.splitlines(keepends=True)

    def column(line: int, byte_column: int) -> int:
        source = lines[line - 1] if 0 < line <= len(lines) else ""
        return byte_column if source.isascii() else len(source.encode()[:byte_column].decode())

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == spelling):
            continue
        line = node.end_lineno or node.lineno
        if line != at.line or node.end_col_offset is None:
            continue
        if column(line, node.end_col_offset) - len(spelling) != at.column:
            continue
        receiver = node.value
        while isinstance(receiver, ast.Attribute):
            receiver = receiver.value
        if isinstance(receiver, ast.Name):
            return Position(receiver.lineno, column(receiver.lineno, receiver.col_offset))
        return None
    return None


def _builds_a_dict(call: ast.Call) -> bool:
    """Whether the call is ``dict(...)`` or ``dict.fromkeys``/``.update(...)`` with keywords:
    its keywords are keys of a dictionary that a ``**`` may hand on."""
    function = call.func
    if isinstance(function, ast.Name):
        return function.id == "dict"
    return isinstance(function, ast.Attribute) and function.attr == "update"


def _on_a_string(call: ast.Call) -> bool:
    """Whether the call is a method of a string literal (``"{x}".format(x=1)``): ``str``'s
    own methods, which forward no keyword to the project's code."""
    function = call.func
    if not isinstance(function, ast.Attribute):
        return False
    receiver = function.value
    return isinstance(receiver, ast.JoinedStr) or (
        isinstance(receiver, ast.Constant) and isinstance(receiver.value, str)
    )


def _kwargs_handed_on(
    function: ast.FunctionDef | ast.AsyncFunctionDef, spelling: str
) -> list[ast.Call] | None:
    """The calls a function hands its ``**kwargs`` to untouched (``f(..., **kwargs)``), when
    that is provably all it does with the key ``spelling``: it has no parameter of that
    name, and its other uses of the dictionary read or set other keys only
    (``kwargs.setdefault("conditional", True)``); ``None`` otherwise."""
    arguments = function.args
    if arguments.kwarg is None:
        return None
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    if any(argument.arg == spelling for argument in every):
        return None
    name = arguments.kwarg.arg
    allowed: set[int] = set()
    handed: list[ast.Call] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg is None and isinstance(value, ast.Name) and value.id == name:
                    if any(k.arg == spelling for k in node.keywords):
                        return None
                    allowed.add(id(value))
                    handed.append(node)
            method = node.func
            if (
                isinstance(method, ast.Attribute)
                and isinstance(method.value, ast.Name)
                and method.value.id == name
                and method.attr in _KEYED_METHODS
                and node.args
                and _string(node.args[0]) not in (None, spelling)
            ):
                allowed.add(id(method.value))
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == name
            and _string(node.slice) not in (None, spelling)
        ):
            allowed.add(id(node.value))
    uses = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name]
    if not handed or any(id(use) not in allowed for use in uses):
        return None
    return handed


_KEYED_METHODS = frozenset({"get", "pop", "setdefault"})


def _super_init(call: ast.Call) -> bool:
    """Whether the call is ``super().__init__(...)``."""
    function = call.func
    return (
        isinstance(function, ast.Attribute)
        and function.attr == "__init__"
        and isinstance(function.value, ast.Call)
        and isinstance(function.value.func, ast.Name)
        and function.value.func.id == "super"
    )


def _called_name(call: ast.Call) -> Position | None:
    """Where a call's callee is named (ASCII lines: ``ast``'s columns are characters)."""
    function = call.func
    if isinstance(function, ast.Name):
        return Position(function.lineno, function.col_offset)
    if isinstance(function, ast.Attribute) and function.end_col_offset is not None:
        line = function.end_lineno or function.lineno
        return Position(line, function.end_col_offset - len(function.attr))
    return None


def _function_at(path: Path, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    return next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == line
        ),
        None,
    )


def _identifier_at(line: str, column: int) -> str:
    import re

    match = re.compile(r"\w+").match(line, column)
    return match.group() if match else ""


def _class_nodes(path: Path) -> list[Any]:
    import ast

    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]


def _enclosing_class(path: Path, line: int) -> tuple[Path, int] | None:
    """``(path, line of its ``class``)`` of the innermost class around ``line``."""
    best = None
    for node in _class_nodes(path):
        end = node.end_lineno or node.lineno
        if node.lineno <= line <= end and (best is None or node.lineno > best):
            best = node.lineno
    return None if best is None else (path, best)


def _class_init_name(answer: Location) -> str:
    """The class named at ``answer``'s line, with ``.__init__`` (for messages)."""
    node = next((n for n in _class_nodes(answer.path) if n.lineno == answer.start.line), None)
    return f"{node.name}.__init__" if node is not None else "__init__"


def _enclosing_function(path: Path, line: int) -> tuple[Path, int] | None:
    """``(path, line of its ``def``)`` of the innermost function around ``line``."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    best = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno > best):
                best = node.lineno
    return None if best is None else (path, best)


def _bases(path: Path, line: int) -> list[Position]:
    """Where the base classes of the class at ``line`` are named (their last part)."""
    import ast

    for node in _class_nodes(path):
        if node.lineno == line:
            places = []
            for base in node.bases:
                if isinstance(base, ast.Attribute) and base.end_col_offset is not None:
                    line = base.end_lineno or base.lineno
                    places.append(Position(line, base.end_col_offset - len(base.attr)))
                elif isinstance(base, ast.Name):
                    places.append(Position(base.lineno, base.col_offset))
            return places
    return []


def _resolver(known: Iterable[Path] = ()) -> Callable[[Path], Path]:
    """``Path.resolve``, remembered for each path given (one pass asks again and again for
    the same few files; the file system does not change under one pass); ``known``: paths
    resolved already (each is its own answer)."""
    resolved: dict[Path, Path] = {path: path for path in known}

    def resolve(path: Path) -> Path:
        found = resolved.get(path)
        if found is None:
            found = resolved[path] = path.resolve()
        return found

    return resolve


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True


def classify(
    server: LanguageServer,
    files: Sequence[Path],
    spelling: str,
    definition: Location,
    member: bool,
    *,
    module_attribute: bool = False,
    keyword: bool = False,
) -> list[Occurrence]:
    """Every occurrence of ``spelling`` in ``files``, each the target's, another thing's or
    unknown (with its reason); files without the spelling are not parsed."""
    found = occurrences_in(files, {spelling})[spelling]
    classifier = Classifier(
        server, definition, member, spelling, module_attribute=module_attribute, keyword=keyword
    )
    return classifier.classify(found)


def occurrences_in(
    files: Sequence[Path],
    spellings: set[str],
    read: dict[Path, tuple[bytes, dict[str, list[Occurrence]]]] | None = None,
) -> dict[str, list[Occurrence]]:
    """The occurrences of each spelling: each file is read once and tested for every
    spelling at once, and parsed and walked once if it holds any (a file that does not
    parse or decode has none). ``read`` is given the digest and occurrences of each file
    holding a spelling (``Plan.read``)."""
    found: dict[str, list[Occurrence]] = {spelling: [] for spelling in spellings}
    for held in _each_file(files, spellings, read):
        for spelling, listed in held.items():
            found[spelling].extend(listed)
    return found


def _each_file(
    files: Sequence[Path],
    spellings: set[str],
    read: dict[Path, tuple[bytes, dict[str, list[Occurrence]]]] | None,
) -> Iterator[dict[str, list[Occurrence]]]:
    """``occurrences_in``, file after file: the occurrences of each spelling a file holds."""
    wanted = frozenset(spellings)
    for path in files:
        scanned = scan_file(path, wanted)
        if scanned is None or scanned.digest is None:
            continue
        if read is not None:
            read[scanned.path] = (scanned.digest, scanned.held)
        yield scanned.held


@dataclass(frozen=True)
class Scanned:
    """What ``scan_file`` read in a file whose text holds one of the spellings."""

    given: Path
    """The file, as it was given to ``scan_file``."""
    path: Path
    """The file, resolved."""
    digest: bytes | None
    """``text_digest`` of its text; ``None``: the text does not parse (no occurrences)."""
    held: dict[str, list[Occurrence]]
    """``occurrences_of`` each spelling the text holds (a list, empty or not, for each)."""
    quoted: frozenset[str]
    """The spellings the text quotes (``"old"`` or ``'old'``), parsed or not."""


def scan_file(path: Path, spellings: frozenset[str]) -> Scanned | None:
    """One file's part of a plan: read once, tested for every spelling at once, and parsed
    and walked once if it holds any (``occurrences_of``); ``None`` when it holds none of
    them or cannot be read as UTF-8. A module-level function of picklable arguments and
    result, so that worker processes can scan the files of a project between them."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not any(spelling in text for spelling in spellings):
        return None
    resolved = path.resolve()
    quoted = frozenset(s for s in spellings if f'"{s}"' in text or f"'{s}'" in text)
    try:
        held = occurrences_of(resolved, text, spellings)
    except (SyntaxError, ValueError):
        return Scanned(path, resolved, None, {}, quoted)
    return Scanned(path, resolved, text_digest(text), held, quoted)


@dataclass(frozen=True)
class RenameTarget:
    """A qualified rename target, as the codemod needs it: the file of its module, the
    dotted ``owner`` inside it (``""``: a module attribute), the old spelling, and whether
    it is a keyword (a parameter of ``owner``) or a class attribute (``member``)."""

    module: Path
    owner: str
    old: str
    keyword: bool = False
    member: bool = False


@dataclass
class Plan:
    """Every target's classified occurrences; ``withheld`` names the targets with an
    unknown occurrence: their safe rename is not applied."""

    occurrences: dict[RenameTarget, list[Occurrence]]
    missing: set[RenameTarget]
    """Targets not defined in their module (e.g. already renamed): an occurrence that
    still resolves is another thing's, one that does not is unknown."""
    read: dict[Path, tuple[bytes, dict[str, list[Occurrence]]]] = field(default_factory=dict)
    """Each file the plan read: the digest of its text (``text_digest``) and the
    occurrences of each spelling in it, unclassified (``occurrences_of``)."""
    resolved: dict[Path, Path] = field(default_factory=dict)
    """Each file of ``read`` as the plan was given it -> resolved (``resolve``)."""
    _by_file: dict[RenameTarget, dict[Path, list[Occurrence]]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def resolve(self, path: Path) -> Path:
        """``path.resolve()``, known without asking the file system for a file the plan
        read under that very name."""
        found = self.resolved.get(path)
        return found if found is not None else path.resolve()

    def unknown(self, target: RenameTarget) -> list[Occurrence]:
        return [o for o in self.occurrences.get(target, ()) if o.verdict == UNKNOWN]

    def in_file(self, target: RenameTarget, path: Path) -> list[Occurrence]:
        """The target's classified occurrences in ``path`` (resolved), in order."""
        by_file = self._by_file.get(target)
        if by_file is None:
            by_file = self._by_file[target] = {}
            for occurrence in self.occurrences.get(target, ()):
                by_file.setdefault(occurrence.path, []).append(occurrence)
        return by_file.get(path, [])

    def read_occurrences(self, path: Path, text: str) -> dict[str, list[Occurrence]] | None:
        """The unclassified occurrences the plan read in ``path`` (resolved), if its text
        is still ``text``; ``None``: not read, or changed since."""
        read = self.read.get(path)
        if read is None or read[0] != text_digest(text):
            return None
        return read[1]

    @property
    def withheld(self) -> set[RenameTarget]:
        return {t for t in self.occurrences if self.unknown(t)}


def text_digest(text: str) -> bytes:
    """A digest of a file's text, to tell whether it is still the text that was read."""
    import hashlib

    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def plan(
    root: Path,
    files: Sequence[Path],
    targets: Sequence[RenameTarget],
    command: Sequence[str] | None = None,
    map_files: FileMap | None = None,
) -> Plan:
    """Classify every occurrence of every target in ``files``, paying per file, not per
    file and target: each file is read once and tested for every spelling at once; each
    file holding a spelling is parsed and walked once for all of them (``scan_file``,
    applied by ``map_files``: in this process by default, or in worker processes); the
    engine starts only if some spelling occurs, and answers every target from the same
    (warm) process. The engine starts at the first occurrence, and each target's
    references are asked as soon as its spelling occurs: the engine answers them while
    the files are read."""
    result = Plan({}, set())
    found: dict[str, list[Occurrence]] = {target.old: [] for target in targets}
    asked: dict[RenameTarget, tuple[Location | None, Callable[[], list[Location]] | None]] = {}
    quoting: dict[str, list[Path]] = {spelling: [] for spelling in found}
    """The files quoting each spelling, in order (``forwarded_reads``, ``unpacked_keys``)."""
    server: LanguageServer | None = None
    scan = functools.partial(scan_file, spellings=frozenset(found))
    try:
        for scanned in (map_files or map)(scan, files):
            if scanned is None:
                continue
            for spelling in scanned.quoted:
                quoting[spelling].append(scanned.path)
            if scanned.digest is None:
                continue  # it does not parse: no occurrences
            held = scanned.held
            result.read[scanned.path] = (scanned.digest, held)
            result.resolved[scanned.given] = scanned.path
            for spelling, listed in held.items():
                found[spelling].extend(listed)
            for target in targets:
                if target in asked or not held.get(target.old):
                    continue
                if server is None:
                    server = LanguageServer(list(command) if command else ty_command(), root)
                module = target.module.resolve()
                start = definition_site(module, target.owner, target.old, target.keyword)
                if start is None:
                    asked[target] = (None, None)
                else:
                    asked[target] = (
                        Location(module, start, start),
                        server.references_later(module, start),
                    )
        if server is None:
            return result
        resolve = _resolver(result.read)  # every occurrence's file is one of those
        for target in targets:
            if target not in asked:
                continue
            definition, references = asked[target]
            if definition is None:
                result.missing.add(target)
            classifier = Classifier(
                server,
                definition,
                target.member,
                target.old,
                module_attribute=not target.owner,
                keyword=target.keyword,
                references=references,
                resolve=resolve,
            )
            decided = classifier.classify(found[target.old])
            if target.keyword:
                old, quoted = target.old, quoting[target.old]
                forwarded = forwarded_reads(
                    server, files, old, decided, quoted=quoted, resolve=resolve
                )
                unpacked = unpacked_keys(
                    server, files, old, decided, quoted=quoted, resolve=resolve
                )
                decided = sorted([*decided, *forwarded, *unpacked])
            if definition is None:
                why = _missing_reason(target)
                decided = [_with(o, o.verdict, why) if o.reason == _STALE else o for o in decided]
            result.occurrences[target] = decided
    finally:
        if server is not None:
            server.close()
    return result


def forwarded_reads(
    server: LanguageServer,
    files: Sequence[Path],
    spelling: str,
    known: Sequence[Occurrence] = (),
    *,
    quoted: Sequence[Path] | None = None,
    resolve: Callable[[Path], Path] | None = None,
) -> list[Occurrence]:
    """Keys ``spelling`` read from a ``**kwargs`` dictionary that a function of another
    module receives (sqlparse's ``format(sql, **options)`` hands ``options`` to
    ``formatter.validate_options(options)``, which reads ``options.get("keyword_case")``):
    each read is unknown, with the function whose ``**`` parameter it comes from. A
    function reading the key from a parameter is asked for its callers (the engine's
    ``references``); it counts when a caller passes it its own ``**`` dictionary, or a
    parameter that is one in turn. ``known``: occurrences already found (the same-module
    hand-offs of ``occurrences``), not reported twice. ``quoted``: the files of ``files``
    that quote ``spelling``, resolved and in order, when the caller knows them (``plan``
    does): the others are not read again; ``resolve``: ``Path.resolve`` as the caller
    remembers it."""
    resolve = resolve or _resolver()
    seen = {(resolve(o.path), o.start) for o in known}
    found: list[Occurrence] = []
    origins: dict[tuple[Path, int], str | None] = {}
    for path, tree in _quoting(files, spelling, {}, quoted):
        for function, reads in _parameter_reads(tree, spelling):
            reads = [r for r in reads if (path, r) not in seen]
            if not reads:
                continue
            origin = _kwargs_origin(server, path, function, 0, origins)
            if origin is not None:
                reason = (
                    f"read from {origin}, handed to `{function.name}`: no engine follows"
                    " forwarded keywords"
                )
                found.extend(Occurrence(path, r, "forwarded", UNKNOWN, reason) for r in reads)
    return found


def unpacked_keys(
    server: LanguageServer,
    files: Sequence[Path],
    spelling: str,
    known: Sequence[Occurrence] = (),
    *,
    quoted: Sequence[Path] | None = None,
    resolve: Callable[[Path], Path] | None = None,
) -> list[Occurrence]:
    """Keys ``spelling`` of dictionary displays that reach a call through ``**``: unpacked
    where written (``f(**{"old": 1})``), through a name of the same function
    (``params = {...}; f(**params)``), or returned by a function whose call is unpacked
    somewhere in the project (``f(**options())``, its callers asked of the engine). Each
    is unknown: the call may be the target's, and renaming the parameter without the key
    makes it fail. A dictionary never unpacked (data, ``json.dumps``) is left alone.
    ``quoted`` and ``resolve``: as for ``forwarded_reads``."""
    resolve = resolve or _resolver()
    seen = {(resolve(o.path), o.start) for o in known}
    found: list[Occurrence] = []
    trees: dict[Path, ast.Module | None] = {}
    for path, tree in _quoting(files, spelling, trees, quoted):
        for key, reason in _unpacked_dictionary_keys(server, path, tree, spelling, trees):
            start = Position(key.lineno, key.col_offset + 1)
            if (path, start) not in seen:
                found.append(Occurrence(path, start, "unpacked", UNKNOWN, reason))
    return found


_UNPACKED = "unpacked with `**` into a call, which may be the target's: a keyword no engine follows"


def _unpacked_dictionary_keys(
    server: LanguageServer,
    path: Path,
    tree: ast.Module,
    spelling: str,
    trees: dict[Path, ast.Module | None],
) -> list[tuple[ast.expr, str]]:
    """``(key, reason)`` for each key ``spelling`` of a dictionary display of ``tree``
    that is unpacked into a call (``unpacked_keys``)."""
    parents: dict[int, ast.AST] = {}
    scopes: dict[int, ast.AST] = {}

    def visit(node: ast.AST, scope: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
            scopes[id(child)] = scope
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
            visit(child, inner)

    visit(tree, tree)
    found: list[tuple[ast.expr, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        keys = [k for k in node.keys if k is not None and _string(k) == spelling]
        if not keys:
            continue
        reason = _dictionary_unpacked(server, path, node, parents, scopes, trees)
        if reason is not None:
            found.extend((key, reason) for key in keys)
    return found


def _dictionary_unpacked(
    server: LanguageServer,
    path: Path,
    node: ast.Dict,
    parents: dict[int, ast.AST],
    scopes: dict[int, ast.AST],
    trees: dict[Path, ast.Module | None],
) -> str | None:
    """Why the dictionary display ``node`` may be unpacked into a call, or ``None``."""
    parent = parents.get(id(node))
    scope = scopes.get(id(node))
    if isinstance(parent, ast.keyword) and parent.arg is None:
        return f"a key of a dictionary {_UNPACKED}"
    name = None
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1:
        name = parent.targets[0].id if isinstance(parent.targets[0], ast.Name) else None
    elif isinstance(parent, ast.AnnAssign) and isinstance(parent.target, ast.Name):
        name = parent.target.id
    returned = isinstance(parent, ast.Return)
    if name is not None and scope is not None:
        for inner in ast.walk(scope):
            if (
                isinstance(inner, ast.keyword)
                and inner.arg is None
                and isinstance(inner.value, ast.Name)
                and inner.value.id == name
            ):
                return f"a key of `{name}`, {_UNPACKED} (`**{name}`)"
            if (
                isinstance(inner, ast.Return)
                and isinstance(inner.value, ast.Name)
                and inner.value.id == name
            ):
                returned = True
    if not (returned and isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef))):
        return None
    function = scope
    line = server.line(path, function.lineno)
    column = _word(line, function.name, function.col_offset)
    if column < 0:
        return None
    for reference in server.references(path, Position(function.lineno, column)):
        tree = _tree(reference.path, trees)
        if tree is not None and _called_unpacked(tree, reference.start):
            return (
                f"a key of the dictionary `{function.name}()` returns, {_UNPACKED}"
                f" (`**{function.name}()`)"
            )
    return None


def _called_unpacked(tree: ast.Module, at: Position) -> bool:
    """Whether a call whose callee is named at ``at`` is unpacked into a call
    (``f(**options())``)."""
    return any(
        isinstance(node, ast.keyword)
        and node.arg is None
        and isinstance(node.value, ast.Call)
        and _called_name(node.value) == at
        for node in ast.walk(tree)
    )


def _quoting(
    files: Sequence[Path],
    spelling: str,
    trees: dict[Path, ast.Module | None],
    known: Sequence[Path] | None = None,
) -> Iterator[tuple[Path, ast.Module]]:
    """Each of ``files`` whose text quotes ``spelling`` (``"old"`` or ``'old'``), resolved,
    with its syntax tree (kept in ``trees``); a file that does not read or parse is not.
    ``known``: those files, resolved and in order, when the caller found them already."""
    if known is not None:
        for resolved in known:
            tree = _tree(resolved, trees)
            if tree is not None:
                yield resolved, tree
        return
    quoted = (f'"{spelling}"', f"'{spelling}'")
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if any(q in text for q in quoted):
            resolved = path.resolve()
            tree = _tree(resolved, trees, text)
            if tree is not None:
                yield resolved, tree


def _tree(
    path: Path, trees: dict[Path, ast.Module | None], text: str | None = None
) -> ast.Module | None:
    """``path``'s syntax tree (``None``: unreadable or not Python), parsed once."""
    if path not in trees:
        try:
            source = path.read_text(encoding="utf-8") if text is None else text
            trees[path] = ast.parse(source)
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            trees[path] = None
    return trees[path]


def _parameter_reads(
    tree: ast.Module, spelling: str
) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, list[Position]]]:
    """Each function that reads the key ``spelling`` from one of its parameters
    (``p.get("k")``, ``p.pop("k")``, ``p.setdefault("k")``, ``p["k"]``, ``"k" in p``),
    with where the key's text starts (ASCII columns: a key is an identifier)."""
    result = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        names = _parameter_names(function)
        reads: list[Position] = []
        for node in ast.walk(function):
            key: ast.expr | None = None
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _DICT_READS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in names
                and node.args
            ):
                key = node.args[0]
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in names
            ):
                key = node.slice
            elif (
                isinstance(node, ast.Compare)
                and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.In, ast.NotIn))
                and isinstance(node.comparators[0], ast.Name)
                and node.comparators[0].id in names
            ):
                key = node.left
            if key is not None and _string(key) == spelling:
                reads.append(Position(key.lineno, key.col_offset + 1))
        if reads:
            result.append((function, sorted(set(reads))))
    return result


def _kwargs_origin(
    server: LanguageServer,
    path: Path,
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    depth: int,
    origins: dict[tuple[Path, int], str | None],
) -> str | None:
    """```**options` of `format``` when some caller of ``function`` passes it a ``**``
    dictionary (its own, or one handed to it in turn); ``None`` when none is known to."""
    key = (path, function.lineno)
    if key in origins:
        return origins[key]
    origins[key] = None  # a cycle answers "none" from here
    if depth > _MAX_BASES_DEPTH:
        return None
    lines = server.line(path, function.lineno)
    column = _word(lines, function.name, function.col_offset)
    if column < 0:
        return None
    result = None
    for reference in server.references(path, Position(function.lineno, column)):
        if (reference.path, reference.start.line) == key:
            continue
        try:
            tree = ast.parse(reference.path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for call, caller in _calls_at(tree, reference.start):
            handed = [a.id for a in call.args if isinstance(a, ast.Name)]
            handed += [k.value.id for k in call.keywords if isinstance(k.value, ast.Name)]
            if caller is None or not handed:
                continue
            if caller.args.kwarg is not None and caller.args.kwarg.arg in handed:
                result = f"`**{caller.args.kwarg.arg}` of `{caller.name}`"
            elif any(name in _parameter_names(caller) for name in handed):
                result = _kwargs_origin(server, reference.path, caller, depth + 1, origins)
            if result is not None:
                origins[key] = result
                return result
    return None


def _parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names of a function's parameters other than ``*args`` and ``**kwargs``."""
    arguments = function.args
    return {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}


def _calls_at(
    tree: ast.Module, at: Position
) -> list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | None]]:
    """The calls whose callee is named at ``at`` (a name, or an attribute's last part), with
    the function around each (``None`` at module level)."""
    found: list[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef | None]] = []

    def visit(node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call):
                named = _called_name(child)
                if named == at:
                    found.append((child, function))
            visit(
                child,
                child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function,
            )

    visit(tree, None)
    return found


def _missing_reason(target: RenameTarget) -> str:
    """Why an occurrence of a target that its module does not define is unknown."""
    owner = target.owner.split(".")[0] if target.owner else ""
    if target.keyword and owner:
        try:
            tree = ast.parse(target.module.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            return _STALE
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == owner:
                if node.args.kwarg is not None:
                    return (
                        f"`{owner}` has no parameter `{target.old}`: it takes "
                        f"`**{node.args.kwarg.arg}`, which no engine follows"
                    )
                return f"`{owner}` has no parameter `{target.old}`, and this does not resolve"
    return _STALE


class RenameError(ValueError):
    """A rename's edits cannot be made whole (an occurrence is not where it was read)."""


def rename_edits(
    plan: Plan, target: RenameTarget, new: str, *, unsafe: bool = False
) -> dict[Path, str]:
    """The new text of every file the target's rename changes, built from its classified
    occurrences: ``{}`` when the rename is withheld (an unknown occurrence) unless
    ``unsafe``, which renames the occurrences known to be the target's and leaves the
    unknown ones as they are (they stay findings). Every new text compiles, or
    ``RenameError`` says which file does not: nothing is half-applied."""
    found = plan.occurrences.get(target, [])
    if target in plan.withheld and not unsafe:
        return {}
    by_file: dict[Path, list[Occurrence]] = {}
    for occurrence in found:
        if occurrence.verdict == TARGET:
            by_file.setdefault(occurrence.path, []).append(occurrence)
    changed: dict[Path, str] = {}
    for path, sites in by_file.items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        for site in sorted(sites, key=lambda o: o.start, reverse=True):
            line = lines[site.start.line - 1]
            column = site.start.column
            if line[column : column + len(target.old)] != target.old:
                raise RenameError(
                    f"{path}:{site.start.line}: `{target.old}` is not at column {column + 1}"
                )
            lines[site.start.line - 1] = line[:column] + new + line[column + len(target.old) :]
        result = "".join(lines)
        try:
            compile(result, str(path), "exec", dont_inherit=True)
        except SyntaxError as error:
            raise RenameError(f"{path}: the renamed file does not compile: {error.msg}") from None
        changed[path] = result
    return changed


def rename_problems(
    plan: Plan, renames: Mapping[RenameTarget, str], map_items: FileMap | None = None
) -> dict[RenameTarget, str]:
    """Why each target's rename (``renames``: target -> new spelling) cannot be made whole,
    as ``rename_edits`` would say it (its ``RenameError``); a target absent from the answer
    can, and a withheld one is not looked at. The answer of calling ``rename_edits`` per
    target, paying per file rather than per file and target: each file is read once, and a
    file that several targets rename is compiled twice (as read, and with every target's
    edits) rather than once per target. That shortcut holds when the targets' old and new
    spellings are all different and the file as read compiles: a rename only changes which
    names are equal, so an error of one target's edits alone (a repeated keyword, a
    duplicate parameter, a ``nonlocal`` with no binding) is an error of all of them
    together, or of the file as read. Otherwise each target's edits are compiled alone.
    The texts are compiled by ``map_items`` (in this process by default, or in worker
    processes), all of them before the answers are read."""
    compile_all = map_items or map
    targets = [t for t in renames if t not in plan.withheld]
    sites: dict[Path, dict[RenameTarget, list[Occurrence]]] = {}
    files_of: dict[RenameTarget, dict[Path, None]] = {}  # in the order of its occurrences
    for target in targets:
        for occurrence in plan.occurrences.get(target, []):
            if occurrence.verdict == TARGET:
                sites.setdefault(occurrence.path, {}).setdefault(target, []).append(occurrence)
                files_of.setdefault(target, {})[occurrence.path] = None
    texts: dict[Path, list[str]] = {}
    # Per file: the targets whose edits alone compile there, known without compiling them.
    together: dict[Path, frozenset[RenameTarget]] = {}

    def lines_of(path: Path) -> list[str]:
        if path not in texts:
            texts[path] = path.read_text(encoding="utf-8").splitlines(keepends=True)
        return texts[path]

    def renamed(path: Path, edits: Mapping[RenameTarget, list[Occurrence]]) -> str:
        lines = list(lines_of(path))
        ordered = sorted(((o.start, t) for t, found in edits.items() for o in found), reverse=True)
        for start, target in ordered:
            line = lines[start.line - 1]
            end = start.column + len(target.old)
            lines[start.line - 1] = line[: start.column] + renames[target] + line[end:]
        return "".join(lines)

    def misplaced(path: Path, target: RenameTarget) -> str | None:
        lines = lines_of(path)
        for site in sorted(sites[path][target], key=lambda o: o.start, reverse=True):
            column = site.start.column
            if lines[site.start.line - 1][column : column + len(target.old)] != target.old:
                return f"{path}:{site.start.line}: `{target.old}` is not at column {column + 1}"
        return None

    # Each file renamed by several targets: it compiles as read and with all their edits?
    candidates: dict[Path, dict[RenameTarget, list[Occurrence]]] = {}
    for path in sites:
        here = {t: found for t, found in sites[path].items() if misplaced(path, t) is None}
        spellings = [t.old for t in here] + [renames[t] for t in here]
        if len(here) > 1 and len(set(spellings)) == len(spellings):
            candidates[path] = here
    jobs = [
        (text, str(path))
        for path, here in candidates.items()
        for text in ("".join(lines_of(path)), renamed(path, here))
    ]
    errors = iter(compile_all(_compile_error_of, jobs))
    for path, here in candidates.items():
        as_read, with_edits = next(errors), next(errors)
        together[path] = frozenset(here) if as_read is None and with_edits is None else frozenset()
    # Then each target's edits alone, where they were not compiled together.
    alone = [
        (target, path)
        for target in targets
        for path in files_of.get(target, {})
        if misplaced(path, target) is None and target not in together.get(path, frozenset())
    ]
    jobs = [(renamed(path, {target: sites[path][target]}), str(path)) for target, path in alone]
    compiled = dict(zip(alone, compile_all(_compile_error_of, jobs), strict=True))
    problems: dict[RenameTarget, str] = {}
    for target in targets:
        for path in files_of.get(target, {}):
            problem = misplaced(path, target)
            error = compiled.get((target, path))
            if problem is None and error is not None:
                problem = f"{path}: the renamed file does not compile: {error}"
            if problem is not None:
                problems[target] = problem
                break
    return problems


def _compile_error_of(job: tuple[str, str]) -> str | None:
    """``_compile_error`` of ``(text, path)``: a module-level function of picklable
    arguments, for worker processes."""
    text, path = job
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        return error.msg
    return None


def classify_attributes(
    root: Path,
    files: Sequence[Path],
    spellings: set[str],
    command: Sequence[str] | None = None,
) -> dict[str, list[Occurrence]]:
    """Every attribute occurrence (``x.old``) of each spelling in ``files``, for a bare
    rename of a name the project defines: the target's when the engine leads into the
    project, another thing's when it leads only outside (``str.split``,
    ``re.Pattern.split``), unknown when it leads nowhere. The engine starts only if some
    attribute of a spelling occurs."""
    found = {
        spelling: [o for o in occurrences if o.kind == "attribute"]
        for spelling, occurrences in occurrences_in(files, spellings).items()
    }
    if not any(found.values()):
        return found
    root = root.resolve()
    with LanguageServer(list(command) if command else ty_command(), root) as server:
        for spelling, attributes in found.items():
            decided = []
            for occurrence in attributes:
                if occurrence.on_string and spelling in _STR_ATTRIBUTES:
                    decided.append(_with(occurrence, OTHER))  # `str(text).split`: `str`'s
                    continue
                answers = server.definition(occurrence.path, occurrence.start)
                if any(_inside(answer.path, root) for answer in answers):
                    decided.append(_with(occurrence, TARGET))
                elif answers:
                    decided.append(_with(occurrence, OTHER))
                else:
                    decided.append(_with(occurrence, UNKNOWN, _UNRESOLVED["attribute"]))
            found[spelling] = decided
    return found
