"""Checking and fixing: one parse and one traversal per file, in parallel, cached.

``run`` is the entry point for a set of paths; ``run_stdin`` for one text read
from standard input. ``Checker`` runs every selected rule on one text.
"""

from __future__ import annotations

import ast
import codecs
import io
import os
import re
import threading
import time
import tokenize
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from lint_rules.cache import ResultCache, content_digest
from lint_rules.config import Config
from lint_rules.discovery import discover
from lint_rules.fixes import apply_fixes, unified_diff, write_atomic
from lint_rules.rule import ConfigError, FileContext, Finding, Rule

MAX_FIX_PASSES = 10
HEADER_LINES = 10
"""``# lint_rules: skip-file`` and ``@generated`` count only in this many first lines."""
MIN_FILES_PER_PROCESS = 8
"""Below this many files per worker, starting processes costs more than it saves."""
PARENT_CHECK_SECONDS = 0.2
"""How often a worker checks that the process that started it is alive."""

_SKIP_FILE = re.compile(r"#\s*lint_rules:\s*skip-file\b")
_NOQA = re.compile(r"#\s*noqa:\s*([A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.IGNORECASE)
_NOQA_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)

Visitor = Callable[[ast.AST], None]


@dataclass(frozen=True)
class RunOptions:
    """What a run does besides checking."""

    fix: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    include_generated: bool = False
    use_prefilter: bool = True
    use_cache: bool = True
    jobs: int = 1


@dataclass
class FileResult:
    """The outcome for one file. ``findings`` are those left after any fix."""

    path: Path
    findings: list[Finding] = field(default_factory=list)
    digest: str = ""
    parsed: bool = False
    cached: bool = False
    fixed: int = 0
    diff: str = ""
    fixed_source: bytes | None = None
    """For stdin in fix mode: the fixed source, in the input's encoding."""
    refused: str | None = None
    """Why the fixes were not applied (the result would not parse or encode)."""
    write_error: str | None = None
    """Why the fixed file could not be written."""


@dataclass(frozen=True)
class RunResult:
    """Every file's result, sorted by path."""

    files: list[FileResult]

    @property
    def parsed_count(self) -> int:
        return sum(result.parsed for result in self.files)


def run(
    paths: Sequence[Path], config: Config, rules: Sequence[type[Rule]], options: RunOptions
) -> RunResult:
    """Check (or fix) every Python file under ``paths`` with ``rules``."""
    files = discover(paths, config.root, config.exclude)
    cache = (
        ResultCache.open(config, rules, options) if options.use_cache and not options.fix else None
    )
    done: list[FileResult] = []
    todo: list[Path] = []
    for path in files:
        hit = cache.lookup(path) if cache is not None else None
        if hit is None:
            todo.append(path)
        else:
            done.append(hit)
    done.extend(_run_files(todo, config, rules, options))
    if cache is not None:
        cache.save(done)
    return RunResult(sorted(done, key=lambda result: display_path(result.path)))


def run_stdin(
    data: bytes, filename: Path, config: Config, rules: Sequence[type[Rule]], options: RunOptions
) -> FileResult:
    """Check (or fix, returning ``fixed_source``) source read from standard input."""
    return Worker(rules, config, options).run_bytes(filename, data, write=False)


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when inside it, else absolute."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)


def _run_files(
    paths: list[Path], config: Config, rules: Sequence[type[Rule]], options: RunOptions
) -> list[FileResult]:
    jobs = min(options.jobs, len(paths) // MIN_FILES_PER_PROCESS)
    if jobs <= 1:
        return Worker(rules, config, options).run_batch(paths)
    import multiprocessing  # only here: a warm or small run should not pay for it
    from concurrent.futures import ProcessPoolExecutor

    batch_size = -(-len(paths) // (jobs * 4))
    batches = [paths[start : start + batch_size] for start in range(0, len(paths), batch_size)]
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with ProcessPoolExecutor(
        jobs,
        mp_context=context,
        initializer=_start_worker,
        initargs=(rules, config, options, os.getpid()),
    ) as pool:
        return [result for batch in pool.map(_run_batch, batches) for result in batch]


_worker: Worker | None = None


def _start_worker(
    rules: Sequence[type[Rule]], config: Config, options: RunOptions, parent: int
) -> None:
    global _worker
    _worker = Worker(rules, config, options)
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    # A killed parent cannot stop its workers, and a forked worker holds the
    # task queue's write end itself, so it would otherwise wait forever.
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def _run_batch(paths: list[Path]) -> list[FileResult]:
    assert _worker is not None, "worker not started"
    return _worker.run_batch(paths)


class Worker:
    """Rules and configuration loaded once; checks or fixes file after file."""

    def __init__(self, rules: Sequence[type[Rule]], config: Config, options: RunOptions) -> None:
        self.checker = Checker([rule(config.options_for(rule)) for rule in rules], options)
        self.config = config
        self.options = options
        self.per_file_ignores = [
            (pathspec.GitIgnoreSpec.from_lines([pattern]), codes)
            for pattern, codes in config.per_file_ignores.items()
        ]

    def run_batch(self, paths: Sequence[Path]) -> list[FileResult]:
        self.checker.begin_batch(paths)
        return [self.run_file(path) for path in paths]

    def run_file(self, path: Path) -> FileResult:
        try:
            data = path.read_bytes()
        except OSError as error:
            return FileResult(path, [_file_error(f"cannot read file: {error.strerror}")])
        return self.run_bytes(path, data, write=True)

    def run_bytes(self, path: Path, data: bytes, write: bool) -> FileResult:
        """Check or fix one file's bytes; writes the fixed file only when ``write``."""
        result = FileResult(path, digest=content_digest(data))
        try:
            text, encoding = decode_source(data)
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            message = f"cannot decode file as {error.encoding}: {error.reason}"
            result.findings = [Finding("LR000", message, line, column, line, column)]
            return result
        except SyntaxError as error:  # a bad coding cookie
            result.findings = [_file_error(f"cannot decode file: {error.msg}")]
            return result
        if self._skipped(text):
            return result
        ignored = self._ignored_codes(path)
        if self.options.fix:
            self._fix(result, text, encoding, write, ignored)
        else:
            result.findings, result.parsed = self.checker.check(path, text, ignored)
        return result

    def _fix(
        self, result: FileResult, text: str, encoding: str, write: bool, ignored: tuple[str, ...]
    ) -> None:
        outcome = fix_text(
            self.checker, result.path, text, self.options.unsafe_fixes, ignored, encoding
        )
        result.findings, result.parsed = outcome.findings, True
        result.refused = outcome.refused
        changed = outcome.text != text
        result.fixed = outcome.applied if changed else 0
        if self.options.diff:
            result.diff = (
                unified_diff(display_path(result.path), text, outcome.text) if changed else ""
            )
        elif not write:
            result.fixed_source = outcome.text.encode(encoding)
        elif changed:
            try:
                write_atomic(result.path, outcome.text.encode(encoding))
            except OSError as error:
                result.write_error = f"cannot write the fixed file: {error}"
                result.fixed = 0

    def _skipped(self, text: str) -> bool:
        end = -1
        for _ in range(HEADER_LINES):
            end = text.find("\n", end + 1)
            if end < 0:
                break
        header = text if end < 0 else text[:end]
        if _SKIP_FILE.search(header):
            return True
        return not self.options.include_generated and "@generated" in header

    def _ignored_codes(self, path: Path) -> tuple[str, ...]:
        """The code prefixes ``per-file-ignores`` turns off for ``path``."""
        if not self.per_file_ignores:
            return ()
        try:
            relative = path.resolve().relative_to(self.config.root).as_posix()
        except ValueError:
            relative = path.as_posix()
        return tuple(
            code
            for spec, codes in self.per_file_ignores
            if spec.match_file(relative)
            for code in codes
        )


@dataclass(frozen=True)
class FixOutcome:
    text: str
    applied: int
    findings: list[Finding]
    refused: str | None = None


def fix_text(
    checker: Checker,
    path: Path,
    text: str,
    unsafe_fixes: bool,
    ignored: tuple[str, ...] = (),
    encoding: str = "utf-8",
) -> FixOutcome:
    """Apply fixes to a fixed point (at most ``MAX_FIX_PASSES``), never breaking syntax.

    Findings whose code starts with an ``ignored`` prefix are neither reported
    nor fixed. If the fixed text does not parse, or cannot be written in the
    file's ``encoding``, nothing is applied and ``refused`` says why.
    """
    findings, _ = checker.check(path, text, ignored)
    current, applied = text, 0
    for _ in range(MAX_FIX_PASSES):
        fixes = [f.fix for f in findings if f.fix is not None and (f.fix.safe or unsafe_fixes)]
        if not fixes:
            break
        current, count = apply_fixes(current, fixes)
        applied += count
        findings, _ = checker.check(path, current, ignored)
    if current != text:
        problem = syntax_problem(current)
        reason = None if problem is None else f"the result would not parse: {problem}"
        if reason is None and not _encodable(current, encoding):
            reason = f"the result cannot be encoded as {encoding}"
        if reason is not None:
            original, _ = checker.check(path, text, ignored)
            return FixOutcome(text, 0, original, f"fix refused, {reason}")
    return FixOutcome(current, applied, findings)


def _encodable(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


def syntax_problem(text: str) -> str | None:
    """Why ``text`` does not parse as Python, or None if it does."""
    try:
        ast.parse(text)
    except SyntaxError as error:
        return f"line {error.lineno}: {error.msg}"
    except (RecursionError, MemoryError, ValueError) as error:
        return str(error) or type(error).__name__
    return None


def decode_source(data: bytes) -> tuple[str, str]:
    """Text and encoding of Python source (PEP 263 cookie or BOM, default UTF-8).

    Line endings are kept; a BOM is dropped from the text and kept by the
    encoding (``utf-8-sig``), so encoding the text back restores the bytes.
    """
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    return data.decode(encoding), encoding


def _file_error(message: str) -> Finding:
    return Finding("LR000", message, 1, 1, 1, 1)


class Checker:
    """Every selected rule, instantiated once; checks one text at a time.

    Each rule's visitor methods are found once here, and the dispatch table
    for each combination of rules admitted by the prefilters is built once.
    """

    def __init__(self, rules: Sequence[Rule], options: RunOptions = RunOptions()) -> None:
        self.rules = list(rules)
        self.use_prefilter = options.use_prefilter
        self._visitors = [_visitors_of(rule) for rule in self.rules]
        self._tables: dict[tuple[int, ...], dict[type[ast.AST], list[tuple[int, Visitor]]]] = {}
        self._batch_failures: dict[int, str] = {}

    def begin_batch(self, paths: Sequence[Path]) -> None:
        """Run each rule's batch hook; a failing hook becomes LR999 on each file.

        ``ConfigError`` (from here or ``check_file``) is not a finding: it ends the run.
        """
        self._batch_failures = {}
        for index, rule in enumerate(self.rules):
            try:
                rule.begin_batch(paths)
            except ConfigError:
                raise  # the rule cannot run at all (e.g. a missing tool): exit 2
            except Exception as error:
                self._batch_failures[index] = _describe(error)

    def check(
        self, path: Path, text: str, ignored: tuple[str, ...] = ()
    ) -> tuple[list[Finding], bool]:
        """Findings for one text, and whether it was parsed.

        ``# noqa: CODE`` comments apply; codes starting with an ``ignored`` prefix
        are dropped.
        """
        context = FileContext(path, text)
        failures = dict(self._batch_failures)
        admitted = []
        for index, rule in enumerate(self.rules):
            if index in failures:
                continue
            try:
                if not self.use_prefilter or rule.prefilter(text):
                    admitted.append(index)
            except Exception as error:
                failures[index] = _describe(error)
        findings: list[Finding] = []
        if admitted:
            try:
                tree = context.ast_tree
            except SyntaxError as error:
                return [_syntax_finding(error)], True
            except (RecursionError, MemoryError):
                return [_file_error("cannot parse: the code is nested too deeply")], True
            except ValueError as error:  # e.g. null bytes
                return [_file_error(f"cannot parse: {error}")], True
            for index in admitted:
                self.rules[index].file = context
                self.rules[index].findings = []
            self._traverse(tree, tuple(admitted), failures)
            for index in admitted:
                rule = self.rules[index]
                if index in failures:
                    continue
                try:
                    rule.check_file()
                except ConfigError:
                    raise
                except Exception as error:
                    failures[index] = _describe(error)
                    continue
                findings.extend(rule.findings)
        for index, reason in sorted(failures.items()):
            rule = self.rules[index]
            message = f"internal error in rule {rule.CODE} ({rule.NAME}) on {path}: {reason}"
            findings.append(Finding("LR999", message, 1, 1, 1, 1))
        if ignored:
            findings = [finding for finding in findings if not finding.code.startswith(ignored)]
        return _unsuppressed(findings, context), context.parsed

    def _traverse(self, tree: ast.AST, admitted: tuple[int, ...], failures: dict[int, str]) -> None:
        # Iterative, so that deeply nested code cannot overflow the stack.
        table = self._table(admitted)
        stack: list[ast.AST] = [tree]
        pop, push = stack.pop, stack.append
        child_fields = _CHILD_FIELDS
        while stack:
            node = pop()
            node_class = node.__class__
            handlers = table.get(node_class)
            if handlers is not None:
                for index, visit in handlers:
                    if index in failures:
                        continue
                    try:
                        visit(node)
                    except Exception as error:
                        failures[index] = _describe(error)
            fields = child_fields.get(node_class)
            if fields is None:
                fields = child_fields[node_class] = _fields_with_children(node_class)
            for name in fields:
                value = getattr(node, name, None)
                if value.__class__ is list:
                    for item in value:
                        if item is not None:
                            push(item)
                elif value is not None:
                    push(value)

    def _table(self, admitted: tuple[int, ...]) -> dict[type[ast.AST], list[tuple[int, Visitor]]]:
        table = self._tables.get(admitted)
        if table is None:
            table = {}
            for index in admitted:
                for node_class, visit in self._visitors[index]:
                    table.setdefault(node_class, []).append((index, visit))
            self._tables[admitted] = table
        return table


_LEAF_FIELDS = frozenset(
    {"arg", "asname", "attr", "conversion", "id", "is_async", "kind", "kwd_attrs", "level",
     "lineno", "module", "n", "name", "rest", "s", "simple", "tag", "type_comment",
     "ctx", "op", "ops"}
)  # fmt: skip
"""Fields that never hold a node, or hold only the context and operator
singletons (``ast.Load``, ``ast.Add``, ``ast.Eq``...), which are not visited."""
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _fields_with_children(node_class: type) -> tuple[str, ...]:
    """The fields of a node class that hold nodes, ``None`` or lists of them."""
    if node_class in (ast.Constant, ast.MatchSingleton):
        return ()  # ``value`` is a Python constant
    skipped = _LEAF_FIELDS | ({"names"} if node_class in (ast.Global, ast.Nonlocal) else set())
    fields: tuple[str, ...] = getattr(node_class, "_fields", ())
    return tuple(name for name in fields if name not in skipped)


def _visitors_of(rule: Rule) -> list[tuple[type[ast.AST], Visitor]]:
    visitors = []
    for name in dir(type(rule)):
        if not name.startswith("visit_"):
            continue
        node_class = getattr(ast, name.removeprefix("visit_"), None)
        if not (isinstance(node_class, type) and issubclass(node_class, ast.AST)):
            raise TypeError(f"{type(rule).__name__}.{name}: no ast node class of that name")
        visitors.append((node_class, getattr(rule, name)))
    return visitors


def _describe(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def _syntax_finding(error: SyntaxError) -> Finding:
    line = error.lineno or 1
    column = max(error.offset or 1, 1)
    return Finding("LR000", f"syntax error: {error.msg}", line, column, line, column)


def _unsuppressed(findings: list[Finding], context: FileContext) -> list[Finding]:
    kept = []
    for finding in findings:
        if finding.line <= len(context.lines):
            match = _NOQA.search(context.lines[finding.line - 1])
            if match and finding.code.upper() in {
                code.upper() for code in _NOQA_CODE.findall(match.group(1))
            }:
                continue
        kept.append(finding)
    return kept
