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

import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

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
        self._next_id = 0
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
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
        result = self._ask(
            "textDocument/references",
            path,
            at,
            {"context": {"includeDeclaration": include_declaration}},
        )
        return sorted(self._locations(result))

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
        with self._lock:
            self._next_id += 1
            number = self._next_id
            answer: queue.Queue[dict[str, Any]] = queue.Queue(maxsize=1)
            self._waiting[number] = answer
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
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

    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _ask(self, method: str, path: Path, at: Position, extra: dict[str, Any]) -> Any:
        path = path.resolve()
        self.open(path)
        params = {
            "textDocument": {"uri": path.as_uri()},
            "position": {"line": at.line - 1, "character": self._utf16(path, at)},
            **extra,
        }
        return self.request(method, params)

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
            path = _path_of(uri)
            start, end = (self._position(path, span[edge]) for edge in ("start", "end"))
            found.append(Location(path, start, end))
        return found


def _path_of(uri: str) -> Path:
    from urllib.parse import unquote, urlparse

    return Path(unquote(urlparse(uri).path)).resolve()
