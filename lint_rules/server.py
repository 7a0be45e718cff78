"""``lint-rules server``: the rules in the editor, over the Language Server Protocol (stdio).

Built on pygls. What an editor gets:

- **Diagnostics** on open, change and save: each finding with its code, severity (the
  rule's ``SEVERITY``), a link to its documentation (``docsUrl``) and whether it has a fix.
  On save, ``lint_rules protocols`` (mypy's daemon, shared with the pre-commit hook) adds
  its ``LR100`` findings to the implementation files, in the background.
- **Code actions**: each finding's safe fix as a quick fix, and "fix all" as the
  ``source.fixAll.lint-rules`` action (what ``lint-rules fix`` would write, verified the
  same way); unsafe fixes only with ``unsafeFixes`` set.
- **Hover** on a finding: the rule's ``explain`` text.

Each file is checked with the configuration the command line would use for it (the
nearest ``pyproject.toml``, relative to the workspace root as the working directory), read
again when a ``pyproject.toml`` changes. An open or saved file whose text is the file's
content shares the command line's cache (``.lint_rules_cache/``) both ways. A file is
checked alone: rules that read the rest of the project read it as saved, and a save
re-checks the open files whose findings depended on it.

Settings (``initializationOptions``, or the ``lint-rules`` section of
``workspace/didChangeConfiguration``): ``unsafeFixes`` (false), ``docsUrl`` (the rules page;
default: this checkout's ``docs/rules.md`` when there is one), ``protocols`` (true).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import threading
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path

from lint_rules.config import Config, Configurations
from lint_rules.engine.cache import ResultCache
from lint_rules.engine.results import RunOptions
from lint_rules.engine.run import Worker, decode_source
from lint_rules.output.docs import explain
from lint_rules.rule import ConfigError, Finding, Rule
from lint_rules.rules import ALL_RULES

NAME = "lint-rules"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{NAME}"
PYTHON_SUFFIXES = (".py", ".pyi")
ENGINE_RULES = {"LR000": "error", "LR999": "error", "LR100": "error"}
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "note": types.DiagnosticSeverity.Information,
}
_NEWLINE = re.compile(r"\r\n?|\n")
_RULES_PAGE = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def main(rules: Sequence[type[Rule]] = ALL_RULES, use_cache: bool = True) -> int:
    """Serve on stdin and stdout until the editor says ``exit``; without ``use_cache``
    (``server --no-cache``), the command line's cache is neither read nor written."""
    build_server(rules, use_cache).start_io()
    return 0


@dataclass
class Settings:
    unsafe_fixes: bool = False
    docs_url: str | None = None
    protocols: bool = True

    def update(self, values: object) -> None:
        if not isinstance(values, dict):
            return
        if isinstance(values.get(NAME), dict):
            values = values[NAME]
            assert isinstance(values, dict)
        if isinstance(values.get("unsafeFixes"), bool):
            self.unsafe_fixes = values["unsafeFixes"]
        if isinstance(values.get("docsUrl"), str):
            self.docs_url = values["docsUrl"]
        if isinstance(values.get("protocols"), bool):
            self.protocols = values["protocols"]

    def docs_link(self, code: str, rule_name: str | None) -> str | None:
        """Where the rule's documentation is: its section of the rules page."""
        anchor = f"#{code.lower()}-{rule_name}" if rule_name else ""
        if self.docs_url is not None:
            return self.docs_url + anchor
        if _RULES_PAGE.is_file():
            return f"{from_fs_path(str(_RULES_PAGE))}{anchor}"
        return None


@dataclass
class Checked:
    """The findings of one version of one document."""

    version: int | None
    text: str
    findings: list[Finding]
    reads_project: bool = False


@dataclass
class Linter:
    """What the server keeps between requests: configurations, built rules, results."""

    rules: Sequence[type[Rule]]
    cwd: Path
    settings: Settings = field(default_factory=Settings)
    checked: dict[str, Checked] = field(default_factory=dict)
    protocol_findings: dict[Path, list[Finding]] = field(default_factory=dict)
    use_cache: bool = True
    """Whether a saved file's findings are read from and written to the cache."""

    def __post_init__(self) -> None:
        self.reload()

    def reload(self) -> None:
        """Forget every configuration, built rule and project: read them again."""
        self.configs = Configurations(self.rules, cwd=self.cwd)
        self._stamps: dict[Path, tuple[int, int] | None] = {}
        self.forget_projects()

    def forget_projects(self) -> None:
        """Drop the workers and their ``Project``: the next check reads the files as they
        are saved now."""
        self._workers: dict[tuple[Path, bool, bool], Worker] = {}

    def config_for(self, path: Path) -> Config:
        """The configuration that governs ``path``, read again if its file changed."""
        config = self.configs.for_path(path)
        pyproject = config.root / "pyproject.toml"
        stamp = _stamp(pyproject)
        if self._stamps.setdefault(pyproject, stamp) != stamp:
            self.reload()
            config = self.configs.for_path(path)
            self._stamps[pyproject] = stamp
        return config

    def worker(self, config: Config, fix: bool = False) -> Worker:
        unsafe = fix and self.settings.unsafe_fixes
        key = (config.root, fix, unsafe)
        worker = self._workers.get(key)
        if worker is None:
            options = RunOptions(fix=fix, unsafe_fixes=unsafe, use_cache=not fix)
            worker = self._workers[key] = Worker(config.selected(self.rules), config, options)
        return worker

    def check(self, path: Path, text: str, version: int | None, saved: bool) -> Checked:
        """The findings of ``text`` as the content of ``path``. When ``saved`` (the
        editor's text is the file's), the command line's cache answers or is told."""
        config = self.config_for(path)
        worker = self.worker(config)
        data = _encoded(text)
        cache = None
        if saved and self.use_cache:
            cache = ResultCache.open(config, worker.checker.rules, worker.options, worker.project)
            hit = cache.lookup(path, data)
            if hit is not None:
                return self._keep(path, Checked(version, text, hit.findings))
        result = worker.run_bytes(path, data, write=False)
        if cache is not None and data == _read(path):
            cache.save([result])
        return self._keep(path, Checked(version, text, result.findings, result.reads_project))

    def fixed(self, path: Path, text: str) -> str | None:
        """What ``lint-rules fix`` would make of ``text`` (verified), or None: no change."""
        config = self.config_for(path)
        result = self.worker(config, fix=True).run_bytes(path, _encoded(text), write=False)
        if result.fixed_source is None or not result.fixed:
            return None
        after, _ = decode_source(result.fixed_source)
        return after if after != text else None

    def _keep(self, path: Path, checked: Checked) -> Checked:
        self.checked[from_fs_path(str(path))] = checked
        return checked


def build_server(rules: Sequence[type[Rule]] = ALL_RULES, use_cache: bool = True) -> LanguageServer:
    """The server, its features registered; ``start_io()`` serves."""
    from lint_rules.arguments import version  # the command line's: it started this server

    server = LanguageServer(NAME, version())
    linter = Linter(rules, Path.cwd(), use_cache=use_cache)
    by_code = {rule.CODE: rule for rule in rules}
    protocols = _ProtocolsRunner(server, linter)

    def publish(uri: str) -> None:
        path = _python_path(uri)
        if path is None:
            return
        document = server.workspace.get_text_document(uri)
        checked = linter.checked.get(uri)
        if checked is None or checked.version != document.version:
            try:
                saved = _read(path) == _encoded(document.source)
                checked = linter.check(path, document.source, document.version, saved)
            except ConfigError as error:
                message = f"lint-rules: configuration error: {error}"
                server.window_show_message(
                    types.ShowMessageParams(type=types.MessageType.Error, message=message)
                )
                checked = Checked(document.version, document.source, [_config_error(error)])
                linter.checked[uri] = checked
        findings = sorted(
            checked.findings + linter.protocol_findings.get(path, []),
            key=lambda finding: (finding.line, finding.column, finding.code),
        )
        lines = _lines(checked.text)
        diagnostics = [
            _diagnostic(finding, lines, linter.settings, by_code) for finding in findings
        ]
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=diagnostics, version=document.version
            )
        )

    def publish_all() -> None:
        for uri in list(server.workspace.text_documents):
            publish(uri)

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        root = params.root_uri
        if root is None and params.workspace_folders:
            root = params.workspace_folders[0].uri
        if root is not None:
            path = to_fs_path(root)
            if path is not None and os.path.isdir(path):
                linter.cwd = Path(path)
                os.chdir(path)  # paths in messages, as the command line shows them
        linter.settings.update(params.initialization_options)
        linter.reload()

    @server.feature(types.INITIALIZED)
    def initialized(params: types.InitializedParams) -> None:
        watching = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern="**/pyproject.toml")]
        )
        capabilities = server.client_capabilities.workspace
        watched = capabilities.did_change_watched_files if capabilities else None
        if watched is not None and watched.dynamic_registration:
            server.client_register_capability(
                types.RegistrationParams(
                    [
                        types.Registration(
                            id="lint-rules-pyproject",
                            method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                            register_options=watching,
                        )
                    ]
                )
            )

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        linter.settings.update(params.settings)
        linter.reload()
        linter.checked.clear()
        publish_all()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("pyproject.toml") for change in params.changes):
            linter.reload()
            linter.checked.clear()
            publish_all()
            protocols.request()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            did_change_watched_files(
                types.DidChangeWatchedFilesParams(
                    [types.FileEvent(uri=uri, type=types.FileChangeType.Changed)]
                )
            )
            return
        if _python_path(uri) is None:
            return
        # The project as saved changed: what read it is checked again.
        linter.forget_projects()
        stale = [other for other, checked in linter.checked.items() if checked.reads_project]
        for other in {uri, *stale}:
            linter.checked.pop(other, None)
            if other in server.workspace.text_documents:
                publish(other)
        protocols.request()

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        linter.checked.pop(params.text_document.uri, None)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[])
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        path = _python_path(uri)
        checked = linter.checked.get(uri)
        if path is None or checked is None:
            return []
        document = server.workspace.get_text_document(uri)
        lines = _lines(checked.text)
        wanted = params.context.only
        actions = []
        if not wanted or types.CodeActionKind.QuickFix in wanted:
            for finding in checked.findings:
                fix = finding.fix
                if fix is None or not (fix.safe or linter.settings.unsafe_fixes):
                    continue
                diagnostic = _diagnostic(finding, lines, linter.settings, by_code)
                if not _overlaps(diagnostic.range, params.range):
                    continue
                edits = [
                    types.TextEdit(_range(lines, edit.start, edit.end), edit.replacement)
                    for edit in fix.edits
                ]
                unsafe = "" if fix.safe else " (unsafe)"
                actions.append(
                    types.CodeAction(
                        f"Fix {finding.code}{unsafe}: {finding.message}",
                        kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=_workspace_edit(uri, document.version, edits),
                        is_preferred=fix.safe,
                    )
                )
        if not wanted or any(FIX_ALL.startswith(kind) for kind in wanted):
            after = linter.fixed(path, checked.text)
            if after is not None:
                what = "safe and unsafe" if linter.settings.unsafe_fixes else "safe"
                actions.append(
                    types.CodeAction(
                        f"lint-rules: fix all ({what})",
                        kind=FIX_ALL,
                        edit=_workspace_edit(
                            uri, document.version, [_difference(lines, checked.text, after)]
                        ),
                    )
                )
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        checked = linter.checked.get(uri)
        path = _python_path(uri)
        if checked is None or path is None:
            return None
        lines = _lines(checked.text)
        point = types.Range(params.position, params.position)
        findings = checked.findings + linter.protocol_findings.get(path, [])
        for finding in findings:
            diagnostic = _diagnostic(finding, lines, linter.settings, by_code)
            rule = by_code.get(finding.code)
            if rule is not None and _overlaps(diagnostic.range, point):
                text = f"{finding.message}\n\n---\n\n{explain(rule)}"
                return types.Hover(
                    types.MarkupContent(kind=types.MarkupKind.Markdown, value=text),
                    diagnostic.range,
                )
        return None

    protocols.publish = publish_all
    return server


class _ProtocolsRunner:
    """Runs ``protocols`` (mypy's daemon) in a thread after a save, one run at a time;
    a save during a run asks for one more run after it."""

    def __init__(self, server: LanguageServer, linter: Linter) -> None:
        self.server = server
        self.linter = linter
        self.publish: Callable[[], None] = lambda: None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._running = False
        self._again = False

    def request(self) -> None:
        if not self.linter.settings.protocols:
            return
        self._loop = asyncio.get_running_loop()  # the server's: results are published there
        with self._lock:
            if self._running:
                self._again = True
                return
            self._running = True
        threading.Thread(target=self._run, name="lint-rules-protocols", daemon=True).start()

    def _run(self) -> None:
        while True:
            try:
                found = self._check()
            except Exception as error:  # mypy failed: say so, keep serving
                message = f"lint-rules protocols: {type(error).__name__}: {error}"
                self.server.window_log_message(
                    types.LogMessageParams(type=types.MessageType.Warning, message=message)
                )
                found = None
            if found is not None and self._loop is not None:
                self.linter.protocol_findings = found
                self._loop.call_soon_threadsafe(self.publish)
            with self._lock:
                if not self._again:
                    self._running = False
                    return
                self._again = False

    def _check(self) -> dict[Path, list[Finding]] | None:
        from lint_rules.config import load_config
        from lint_rules.mypy_daemon import Daemon
        from lint_rules.protocols import WORK_DIRECTORY, check_protocols

        config = load_config(self.linter.cwd, self.linter.rules)
        if not config.rule_options.get("protocols"):
            return None
        daemon = Daemon(config.root / WORK_DIRECTORY, config.root)
        found: dict[Path, list[Finding]] = {}
        for located in check_protocols(config, daemon=daemon):
            path = Path(os.path.abspath(located.path))
            found.setdefault(path, []).append(located.finding)
        return found


def _python_path(uri: str) -> Path | None:
    path = to_fs_path(uri)
    if path is None or not path.endswith(PYTHON_SUFFIXES):
        return None
    return Path(path)


def _encoded(text: str) -> bytes:
    """The bytes of ``text`` as the file would hold them (its PEP 263 coding cookie)."""
    data = text.encode("utf-8", errors="surrogatepass")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return data  # a bad cookie: the engine reports it
    if encoding not in ("utf-8", "utf-8-sig"):
        try:
            return text.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            return data
    return data


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def _config_error(error: ConfigError) -> Finding:
    return Finding("LR000", f"configuration error: {error}", 1, 1, 1, 1)


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as LSP counts them (``\\n``, ``\\r\\n`` or ``\\r``), ends kept."""
    starts = [0, *(match.end() for match in _NEWLINE.finditer(text))]
    return [text[start:end] for start, end in zip(starts, [*starts[1:], len(text)], strict=True)]


def _utf16(line: str, column: int) -> int:
    """UTF-16 code units before the code point ``column`` of ``line`` (LSP's default unit)."""
    prefix = line[:column]
    if prefix.isascii():
        return len(prefix)
    return len(prefix.encode("utf-16-le", errors="surrogatepass")) // 2


def _position(lines: Sequence[str], line: int, column: int) -> types.Position:
    """LSP's position of a 1-based line and character column."""
    index = min(max(line - 1, 0), len(lines))
    text = lines[index] if index < len(lines) else ""
    return types.Position(index, _utf16(text, max(column - 1, 0)))


def _range(lines: Sequence[str], start: int, end: int) -> types.Range:
    """LSP's range of character offsets ``start:end``."""
    return types.Range(_offset_position(lines, start), _offset_position(lines, end))


def _offset_position(lines: Sequence[str], offset: int) -> types.Position:
    for index, line in enumerate(lines):
        if offset < len(line) or index == len(lines) - 1:
            return types.Position(index, _utf16(line, min(offset, len(line))))
        offset -= len(line)
    return types.Position(0, 0)


def _diagnostic(
    finding: Finding, lines: Sequence[str], settings: Settings, rules: dict[str, type[Rule]]
) -> types.Diagnostic:
    rule = rules.get(finding.code)
    severity = rule.SEVERITY if rule is not None else ENGINE_RULES.get(finding.code, "error")
    link = settings.docs_link(finding.code, rule.NAME if rule is not None else None)
    fix = finding.fix
    return types.Diagnostic(
        types.Range(
            _position(lines, finding.line, finding.column),
            _position(lines, finding.end_line, finding.end_column),
        ),
        finding.message,
        severity=_SEVERITY[severity],
        code=finding.code,
        code_description=types.CodeDescription(link) if link is not None else None,
        source=NAME,
        data={"fix": None if fix is None else ("safe" if fix.safe else "unsafe")},
    )


def _overlaps(first: types.Range, second: types.Range) -> bool:
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character

    return key(first.start) <= key(second.end) and key(second.start) <= key(first.end)


def _workspace_edit(
    uri: str, version: int | None, edits: list[types.TextEdit]
) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
                list(edits),
            )
        ]
    )


def _difference(lines: Sequence[str], before: str, after: str) -> types.TextEdit:
    """One edit that turns ``before`` into ``after``: the span between their common
    beginning and end, so that the editor keeps the cursor and folds elsewhere."""
    start = 0
    limit = min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end = 0
    while end < limit - start and before[-1 - end] == after[-1 - end]:
        end += 1
    return types.TextEdit(_range(lines, start, len(before) - end), after[start : len(after) - end])
