"""Running the rules over files: discovery, the cache, worker processes, writing fixes.

``run`` is the entry point for a set of paths; ``run_stdin`` for one text read
from standard input. ``Worker`` checks or fixes file after file with one
``Checker`` (``checker.py``: one parse and one traversal per file) and one
``Project`` (``open_project``: each run, and each worker process, has its own);
fixes are applied and verified by ``fixes.py``; the run types live in ``results.py``.
"""

from __future__ import annotations

import codecs
import gc
import io
import os
import re
import time
import tokenize
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, cast

from lint_rules import timing
from lint_rules.analysis.project import Project
from lint_rules.config import Config, Configurations
from lint_rules.engine.cache import ResultCache, content_digest
from lint_rules.engine.checker import Checker, file_error
from lint_rules.engine.discovery import discover, project_files
from lint_rules.engine.fixes import (
    ChangedWhileFixing,
    FixJob,
    fix_texts,
    still_holds,
    unified_diff,
    withhold,
    write_fixed,
)
from lint_rules.engine.results import Change, FileResult, FixOutcome, RunOptions, RunResult
from lint_rules.rule import Finding, Rule, keep_trees_frozen, trees_kept_frozen

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

    import pathspec

T = TypeVar("T")
R = TypeVar("R")

HEADER_LINES = 10
"""``# lint_rules: skip-file`` and ``@generated`` count only in this many first lines."""
MIN_FILES_PER_PROCESS = 8
"""Below this many files per worker, starting processes costs more than it saves."""
BATCHES_PER_FORKED_PROCESS = 16
"""Into how many batches per forked worker process a run's files are cut, in path order (a
worker's files then share the modules their receivers' types are read from), each handed to
whichever process is free. The files that cost most cluster by path (the few that hold use
sites, e.g. a package's tests): cut in 4 per process, one batch of them kept one process busy
for a second after the other had finished (openai's SDK, LR002: 2.1 s of CPU in one worker,
0.9 s in the other); in 16, the processes end within a batch of each other."""
BATCHES_PER_SPAWNED_PROCESS = 4
"""The same for spawned worker processes, where each batch begins the rules' batch hooks."""
PARENT_CHECK_SECONDS = 0.2
"""How often a worker checks that the process that started it is alive."""

_SKIP_FILE = re.compile(r"#\s*lint_rules:\s*skip-file\b")


def run(
    paths: Sequence[Path],
    configs: Config | Configurations,
    rules: Sequence[type[Rule]],
    options: RunOptions,
) -> RunResult:
    """Check (or fix) every Python file under ``paths``.

    With ``Configurations``, each file is checked with the configuration that governs
    it (the nearest pyproject.toml): files are grouped by configuration, and each
    group runs the rules its ``select`` and ``ignore`` turn on, built once, with its
    own cache; a single ``Config`` governs every file. The results are sorted by path.
    """
    governing = configs.for_directory if isinstance(configs, Configurations) else None

    def config_of(directory: Path) -> Config:
        return governing(directory) if governing is not None else cast("Config", configs)

    def scope(directory: Path) -> tuple[Path, Sequence[str]]:
        config = config_of(directory)
        return config.root, config.exclude

    skipped: list[Path] = []
    with timing.timed("discovery"):
        files = discover(paths, Path(), (), scope, skipped)
    groups: dict[Path, tuple[Config, list[Path]]] = {}
    for path in files:
        config = config_of(path.parent)
        groups.setdefault(config.root, (config, []))[1].append(path)
    done: list[FileResult] = []
    dependencies: set[Path] = set()
    consulted: dict[str, object] = {}
    for root in sorted(groups):
        config, group = groups[root]
        done.extend(
            _run_project(group, config, config.selected(rules), options, dependencies, consulted)
        )
    here = Path.cwd()
    ordered = sorted(done, key=lambda result: display_path(result.path, here))
    return RunResult(ordered, skipped, frozenset(dependencies), consulted)


def _run_project(
    files: list[Path],
    config: Config,
    rules: Sequence[type[Rule]],
    options: RunOptions,
    dependencies: set[Path],
    consulted: dict[str, object],
) -> list[FileResult]:
    """Check (or fix) files that one configuration governs, with its cache; the rules
    are built once here (worker processes build their own). Adds the rules'
    ``dependencies`` to ``dependencies`` and, with the cache in use, the directories
    their lookups searched to ``consulted``."""
    worker = Worker(rules, config, options)
    cache = (
        ResultCache.open(config, worker.checker.rules, options, worker.project)
        if options.use_cache and not options.fix
        else None
    )
    done: list[FileResult] = []
    todo: list[Path] = []
    for path in files:
        hit = cache.lookup(path) if cache is not None else None
        if hit is None:
            todo.append(path)
        else:
            done.append(hit)
    done.extend(_run_files(todo, worker, options))
    if options.fix:
        from lint_rules.engine.settle import settle  # fix only: a check never settles

        settle(done, config.root, config.exclude, worker.refix)
        if not options.diff and _withhold_changed(done, worker):
            settle(done, config.root, config.exclude, worker.refix)
        _once_per_file(done)
        for result in done:
            finish(result, options, worker)
    if cache is not None:
        cache.save(done)
    for rule in worker.checker.rules:
        dependencies.update(rule.dependencies())
    if options.use_cache:  # only a run's record in the cache holds by what it consulted
        for location, stamp in worker.project.declarations.consulted.items():
            consulted.setdefault(location, stamp)
        if any(result.reads_project for result in done):
            _consult_project(worker.project, consulted)  # lists the project's files again
    return done


def _consult_project(project: Project, consulted: dict[str, object]) -> None:
    """Add what a result that read the project holds for to ``consulted``: each of the
    project's Python files and every directory holding them up to the root (a new file
    changes its directory's modification time), as ``Project.stamp`` sees them."""
    from lint_rules.analysis.declarations import consult

    root = None if project.root is None else str(project.root)
    for path in project.files():
        consult(consulted, str(path))
        directory = os.path.dirname(str(path))
        while directory not in consulted:
            consult(consulted, directory)
            parent = os.path.dirname(directory)
            if directory == root or parent == directory:
                break
            directory = parent


CHANGED_WHILE_FIXING = "the file changed while fixing"
"""Why a file's fixes were not written: it no longer held the bytes they were made from."""


def _withhold_changed(results: Sequence[FileResult], worker: Worker) -> bool:
    """Withhold the fix of every file that no longer holds what was read, and in the
    other files every fix that replaces the same text (a rename is made whole or not
    at all): whether there was any."""
    blocked: dict[str, str] = {}
    for result in results:
        change = result.change
        if change is None or still_holds(result.path, change.read):
            continue
        shown = display_path(result.path)
        for text in sorted(change.replaced):
            blocked.setdefault(
                text, f"`{text}` is also replaced in {shown}, which changed while fixing"
            )
        worker.withhold_all(result, CHANGED_WHILE_FIXING)
    if not blocked:
        return False
    for result in results:
        if result.change is not None and result.change.replaced & blocked.keys():
            names = {
                text: blocked[text] for text in sorted(result.change.replaced & blocked.keys())
            }
            worker.refix(result, names)
    return True


def _once_per_file(results: Sequence[FileResult]) -> None:
    """Drop the changes of names of a file already changed under another name (a
    symlink to it, or another hard link): a file is written once, under the name that
    is not a symlink when there is one, and the others' results say where."""
    first: dict[tuple[int, int], FileResult] = {}
    for result in sorted(results, key=lambda result: result.path.is_symlink()):
        if result.change is None:
            continue
        try:
            status = result.path.stat()
        except OSError:
            continue  # writing it reports the error
        written = first.setdefault((status.st_dev, status.st_ino), result)
        if written is not result:
            result.note = f"the same file as {display_path(written.path)}: fixed there"
            result.change = None


def run_stdin(
    data: bytes, filename: Path, config: Config, rules: Sequence[type[Rule]], options: RunOptions
) -> FileResult:
    """Check (or fix, returning ``fixed_source``) source read from standard input."""
    return Worker(rules, config, options).run_bytes(filename, data, write=False)


def finish(result: FileResult, options: RunOptions, worker: Worker) -> None:
    """Write a file's settled change (or, with ``--diff``, show it), if the file still
    holds what was read (otherwise its fixes are withheld: ``CHANGED_WHILE_FIXING``)."""
    change = result.change
    if change is None:
        return
    if options.diff:
        result.diff = unified_diff(display_path(result.path), change.before, change.after)
        result.fixed = change.applied
        return
    try:
        result.note = write_fixed(result.path, change.read, change.after.encode(change.encoding))
    except ChangedWhileFixing:
        worker.withhold_all(result, CHANGED_WHILE_FIXING)
    except OSError as error:
        result.write_error = f"cannot write the fixed file: {error}"
    else:
        result.fixed = change.applied


def display_path(path: Path, cwd: Path | None = None) -> str:
    """``path`` relative to the working directory (``cwd``: it, when the caller has it)
    when inside it, else absolute."""
    try:
        return path.relative_to(Path.cwd() if cwd is None else cwd).as_posix()
    except ValueError:
        return str(path)


def _run_files(paths: list[Path], worker: Worker, options: RunOptions) -> list[FileResult]:
    # What the run has built so far (the rules, the declarations they read) lives until
    # its end, and so do the modules read meanwhile: frozen, the collections the files'
    # trees set off do not scan them again and again (forked workers inherit them frozen,
    # untouched pages shared, and freeze what they parse). Unfrozen after.
    with trees_kept_frozen():
        return _run_files_frozen(paths, worker, options)


def _run_files_frozen(paths: list[Path], worker: Worker, options: RunOptions) -> list[FileResult]:
    jobs = min(options.jobs, len(paths) // MIN_FILES_PER_PROCESS)
    if jobs <= 1:
        return worker.run_batch(paths)
    import multiprocessing  # only here: a warm or small run should not pay for it
    from concurrent.futures import ProcessPoolExecutor

    fork = "fork" in multiprocessing.get_all_start_methods()
    if fork:
        # The rules' batch hooks run here, once for every file (LR004's typos run goes on
        # while the project-wide state is built): the workers, forked from this process
        # once it is built, inherit the rules as they are and begin no batch of their own.
        worker.checker.begin_batch(paths)
        worker.batch_begun = True
    worker.prepare(paths, jobs)  # project-wide state built once here, handed to every worker
    gc.freeze()  # and what it built
    batches = cut_in_batches(paths, jobs, fork)
    context = multiprocessing.get_context("fork" if fork else None)
    initializer: Callable[..., None] = _adopt_worker if fork else _start_worker
    initargs = (
        (worker, os.getpid())
        if fork
        else (
            worker.rule_classes,
            worker.config,
            options,
            os.getpid(),
            worker.project.shared_state(),
        )
    )
    with ProcessPoolExecutor(
        jobs, mp_context=context, initializer=initializer, initargs=initargs
    ) as pool:
        done = []
        for results, times in pool.map(_run_batch, batches):
            done.extend(results)
            timing.merge(times)  # the workers' phases, summed
        return done


def cut_in_batches(paths: Sequence[Path], jobs: int, fork: bool) -> list[list[Path]]:
    """``paths`` cut in batches for ``jobs`` worker processes, in order: about
    ``BATCHES_PER_FORKED_PROCESS`` per process when they are forked (they begin no batch of
    their own, so a batch costs little), ``BATCHES_PER_SPAWNED_PROCESS`` otherwise (each
    begins the rules' batch hooks); at least ``MIN_FILES_PER_PROCESS`` files each."""
    per_process = BATCHES_PER_FORKED_PROCESS if fork else BATCHES_PER_SPAWNED_PROCESS
    size = max(-(-len(paths) // (max(jobs, 1) * per_process)), MIN_FILES_PER_PROCESS)
    return [list(paths[start : start + size]) for start in range(0, len(paths), size)]


_worker: Worker | None = None


def _adopt_worker(worker: Worker, parent: int) -> None:
    """A forked worker process's start: it checks with the ``Worker`` of the process that
    forked it (its rules, their batch state, its project's shared state), as it was then."""
    global _worker
    _worker = worker
    _watch_parent(parent)


def _start_worker(
    rules: Sequence[type[Rule]],
    config: Config,
    options: RunOptions,
    parent: int,
    shared: Mapping[object, object],
) -> None:
    import threading  # only in worker processes

    global _worker
    _worker = Worker(rules, config, options, shared)
    keep_trees_frozen()  # the worker's rules live as long as the process: see ``_run_files``
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    # A killed parent cannot stop its workers, and a forked worker holds the
    # task queue's write end itself, so it would otherwise wait forever.
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(1)


def _run_batch(paths: list[Path]) -> tuple[list[FileResult], dict[str, float]]:
    assert _worker is not None, "worker not started"
    before = timing.snapshot()
    results = _worker.run_batch(paths, begin=not _worker.batch_begun)
    return results, timing.since(before)


class _ProcessMap:
    """``map`` in ``jobs`` forked worker processes, for a project-wide pass of a rule over
    many files (``Project.map_files``): the files are handed out in chunks, the answers
    come back in their order, as each chunk is done (the pass works on the first ones while
    the others are read). A pass over few files runs here: starting processes would cost
    more than it saves. The processes start on first use and stop at ``close``."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self._pool: ProcessPoolExecutor | None = None

    def __call__(self, function: Callable[[T], R], items: Sequence[T], /) -> Iterable[R]:
        if self.jobs <= 1 or len(items) < self.jobs * MIN_FILES_PER_PROCESS:
            return map(function, items)
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else None)
            self._pool = ProcessPoolExecutor(
                self.jobs, mp_context=context, initializer=_watch_parent, initargs=(os.getpid(),)
            )
        chunk = -(-len(items) // (self.jobs * SCAN_CHUNKS_PER_PROCESS))
        return self._pool.map(function, items, chunksize=chunk)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


SCAN_CHUNKS_PER_PROCESS = 8
"""Into how many chunks per process ``_ProcessMap`` cuts the files: the first answers come
back early, and a slow chunk does not leave the other processes idle for long."""


def _watch_parent(parent: int) -> None:
    import threading  # only in worker processes

    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def open_project(
    root: Path, shared: Mapping[object, object] | None = None, start: Project | None = None
) -> Project:
    """A new ``Project`` for the files under ``root``, as ``discover`` finds them (with
    the project-wide state another process built for this run, ``shared``, or what the
    ``Project`` that validated the configuration read, ``start``). The files are listed
    once, on first need: a run's rules (and its end, which records what its results read)
    see one list; a file added meanwhile changes its directory's stamp all the same."""
    listed: dict[Path, tuple[Path, ...]] = {}

    def list_files(directory: Path) -> tuple[Path, ...]:
        if directory not in listed:
            listed[directory] = tuple(project_files(directory))
        return listed[directory]

    return Project(root, list_files, shared, start)


class Worker:
    """Rules, configuration and the project loaded once; checks or fixes file after file."""

    def __init__(
        self,
        rules: Sequence[type[Rule]],
        config: Config,
        options: RunOptions,
        shared: Mapping[object, object] | None = None,
    ) -> None:
        # The parent takes what validating the configuration read (once, if unchanged);
        # a worker process has it from the parent's ``shared`` state.
        start = config.validated.take() if shared is None else None
        self.project = open_project(config.root, shared, start)
        instances = [rule.create(config.options_for(rule), self.project) for rule in rules]
        self.rule_classes = tuple(rules)
        self.checker = Checker(instances, options, self.project)
        self.config = config
        self.options = options
        self._per_file_ignores: list[tuple[pathspec.GitIgnoreSpec, tuple[str, ...]]] | None = None
        self.batch_begun = False
        """Whether the rules' batch hooks ran for every file this worker (or a process forked
        from it) is to check: its batches then begin none of their own."""

    @property
    def per_file_ignores(self) -> list[tuple[pathspec.GitIgnoreSpec, tuple[str, ...]]]:
        """``per-file-ignores`` compiled on first use (after the rules' batch hooks have
        started, e.g. typos); pathspec is imported only when there are patterns."""
        if self._per_file_ignores is None:
            self._per_file_ignores = []
            if self.config.per_file_ignores:
                import pathspec

                self._per_file_ignores = [
                    (pathspec.GitIgnoreSpec.from_lines([pattern]), codes)
                    for pattern, codes in self.config.per_file_ignores.items()
                ]
        return self._per_file_ignores

    def prepare(self, paths: Sequence[Path], jobs: int) -> None:
        """Let each rule build its project-wide state for ``paths`` before worker processes
        start (``Rule.prepare_project``); a rule that fails here builds it in each worker.
        Meanwhile the project's ``map_files`` works in ``jobs`` processes (started on first
        use, stopped here)."""
        scanner = _ProcessMap(jobs)
        self.project.map_files = scanner
        try:
            for rule in self.checker.rules:
                try:
                    rule.prepare_project(paths)
                except Exception:
                    continue
        finally:
            self.project.map_files = map
            scanner.close()

    def run_batch(self, paths: Sequence[Path], *, begin: bool = True) -> list[FileResult]:
        """Check or fix ``paths``; ``begin``: run the rules' batch hooks for them first
        (``False``: a batch begun for them, and others, already)."""
        start, before = time.perf_counter(), timing.snapshot()
        if begin:
            self.checker.begin_batch(paths)
        if self.options.fix:
            results = self._fix_batch(paths)
        else:
            results = [self.run_file(path) for path in paths]
        # What the batch spent besides parsing and typos is the rules' (and reading files).
        inside = timing.since(before)
        timing.add("rules", time.perf_counter() - start - inside["parse"] - inside["typos"])
        return results

    def _fix_batch(self, paths: Sequence[Path]) -> list[FileResult]:
        """Fix the files of a batch, their fix passes in step (``fix_texts``)."""
        results: list[FileResult] = []
        waiting: list[tuple[FileResult, bytes, FixJob]] = []
        for path in paths:
            try:
                data = path.read_bytes()
            except OSError as error:
                results.append(
                    FileResult(path, [file_error(f"cannot read file: {error.strerror}")])
                )
                continue
            result, decoded = self._decoded(path, data)
            results.append(result)
            if decoded is not None:
                text, encoding = decoded
                job = FixJob(path, text, self._ignored_codes(path), encoding)
                waiting.append((result, data, job))
        outcomes = fix_texts(
            self.checker, [job for _, _, job in waiting], self.options.unsafe_fixes
        )
        for (result, data, job), outcome in zip(waiting, outcomes, strict=True):
            self._fixed(result, data, job, outcome, write=True)
        return results

    def run_file(self, path: Path) -> FileResult:
        try:
            data = path.read_bytes()
        except OSError as error:
            return FileResult(path, [file_error(f"cannot read file: {error.strerror}")])
        return self.run_bytes(path, data, write=True)

    def run_bytes(self, path: Path, data: bytes, write: bool) -> FileResult:
        """Check or fix one file's bytes; writes the fixed file only when ``write``."""
        result, decoded = self._decoded(path, data)
        if decoded is None:
            return result
        text, encoding = decoded
        if self.options.fix:
            self._fix(result, data, text, encoding, write, self._ignored_codes(path))
            return result
        if not write:  # not the file on disk: a rule's tool (typos) starts on the text now
            for rule in self.checker.rules:
                rule.begin_text(path, text)
        # per-file-ignores only filter findings: a clean file need not match its patterns.
        reads = self.project.reads
        result.findings, result.parsed = self.checker.check(
            path, text, lambda: self._ignored_codes(path)
        )
        result.reads_project = self.project.reads != reads
        return result

    def _decoded(self, path: Path, data: bytes) -> tuple[FileResult, tuple[str, str] | None]:
        """The file's result so far, and its text and encoding, or None when it is done
        (it cannot be decoded: the result says why; or it is skipped)."""
        result = FileResult(path, digest=content_digest(data))
        try:
            text, encoding = decode_source(data)
        except UnicodeDecodeError as error:
            line = data.count(b"\n", 0, error.start) + 1
            column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
            message = f"cannot decode file as {error.encoding}: {error.reason}"
            result.findings = [Finding("LR000", message, line, column, line, column)]
            return result, None
        except SyntaxError as error:  # a bad coding cookie
            result.findings = [file_error(f"cannot decode file: {error.msg}")]
            return result, None
        if self._skipped(text):
            return result, None
        return result, (text, encoding)

    def _fix(
        self,
        result: FileResult,
        data: bytes,
        text: str,
        encoding: str,
        write: bool,
        ignored: tuple[str, ...],
        blocked: Mapping[str, str] | None = None,
    ) -> None:
        job = FixJob(result.path, text, ignored, encoding, dict(blocked or {}))
        outcome = fix_texts(self.checker, [job], self.options.unsafe_fixes)[0]
        self._fixed(result, data, job, outcome, write)

    def _fixed(
        self, result: FileResult, data: bytes, job: FixJob, outcome: FixOutcome, write: bool
    ) -> None:
        """Record a fixed file's outcome (its change, to settle and write later)."""
        text, encoding, ignored, blocked = job.text, job.encoding, job.ignored, job.blocked
        result.findings, result.parsed = outcome.findings, True
        result.refused = outcome.refused
        changed = outcome.text != text
        result.change = (
            Change(
                text,
                outcome.text,
                encoding,
                outcome.applied,
                ignored,
                data,
                outcome.replaced,
                blocked,
            )
            if changed
            else None
        )
        if not write:  # standard input: nothing to settle with other files, nothing to write
            if self.options.diff:
                finish(result, self.options, self)
            else:
                result.fixed_source = outcome.text.encode(encoding)
                result.fixed = outcome.applied if changed else 0

    def refix(self, result: FileResult, blocked: Mapping[str, str]) -> None:
        """Fix a file again from its original text, withholding renames of ``blocked`` names
        (and of those withheld before)."""
        change = result.change
        if change is None:
            return
        blocked = {**blocked, **change.blocked}
        self._fix(
            result, change.read, change.before, change.encoding, True, change.ignored, blocked
        )

    def withhold_all(self, result: FileResult, reason: str) -> None:
        """Leave a file as it was read: its findings are the original text's, each fix
        that ``fix`` would have applied withheld with ``reason``; nothing is written."""
        change = result.change
        if change is None:
            return
        findings, _ = self.checker.check(result.path, change.before, change.ignored)
        unsafe = self.options.unsafe_fixes
        result.findings = [
            withhold(finding, reason)
            if finding.fix is not None and (finding.fix.safe or unsafe)
            else finding
            for finding in findings
        ]
        result.change, result.fixed, result.not_written = None, 0, reason

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
            relative = Path(os.path.abspath(path)).relative_to(self.config.root).as_posix()
        except ValueError:
            relative = path.as_posix()
        return tuple(
            code
            for spec, codes in self.per_file_ignores
            if spec.match_file(relative)
            for code in codes
        )


def decode_source(data: bytes) -> tuple[str, str]:
    """Text and encoding of Python source (PEP 263 cookie or BOM, default UTF-8).

    Line endings are kept; a BOM is dropped from the text and kept by the
    encoding (``utf-8-sig``), so encoding the text back restores the bytes.
    """
    second = data.find(b"\n", data.find(b"\n") + 1)
    head = data if second < 0 else data[: second + 1]
    if head.isascii() and b"coding" not in head:
        return data.decode("utf-8"), "utf-8"  # what detect_encoding says: no cookie, no BOM
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    if encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    return data.decode(encoding), encoding
