"""The command line: argument parsing, output and exit codes; no linting logic."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

from lint_rules import quick, timing
from lint_rules.config import ENGINE_CODES, Configurations, check_selectors
from lint_rules.engine.discovery import DiscoveryError
from lint_rules.engine.results import FileResult, RunOptions, RunResult
from lint_rules.engine.run import display_path, run, run_stdin
from lint_rules.output.docs import explain, render_rules
from lint_rules.output.report import Located, render, severity_map, summary
from lint_rules.rule import ConfigError, Rule, trees_kept_frozen
from lint_rules.rules import ALL_RULES

if TYPE_CHECKING:
    import argparse

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def main(argv: Sequence[str] | None = None, rules: Sequence[type[Rule]] = ALL_RULES) -> int:
    """Run the command line; returns the exit code (0 clean, 1 findings, 2 error)."""
    given = list(sys.argv[1:] if argv is None else argv)
    arguments = plain_check(given)
    if arguments is None:
        from lint_rules.arguments import parse

        arguments = parse(given)
    try:
        if arguments.command == "rules":
            sys.stdout.write(render_rules(rules, arguments.format))
            return EXIT_CLEAN
        if arguments.command == "explain":
            return _explain(arguments.code, rules)
        if arguments.command == "server":
            return _serve(rules, use_cache=not arguments.no_cache)
        if arguments.command == "protocols":
            from lint_rules.protocols import main as protocols_main

            return protocols_main(
                arguments.format,
                rules,
                use_daemon=arguments.daemon,
                daemon_timeout=arguments.daemon_timeout,
                stop_daemon=arguments.stop_daemon,
            )
        return _lint(arguments, rules, given if tuple(rules) == tuple(ALL_RULES) else None)
    except (ConfigError, DiscoveryError) as error:
        print(f"lint-rules: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as error:  # a bug or a dead worker: exit 2 with a message, not a traceback
        print(f"lint-rules: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_ERROR


def plain_check(given: Sequence[str]) -> argparse.Namespace | None:
    """The arguments of ``check FILE...`` with no option (what pre-commit runs), as argparse
    reads them (``arguments.parser``; a test holds them equal), without importing it: the
    parser of every command and argparse with it cost a one-file check a few milliseconds.
    ``None`` for anything else."""
    if len(given) < 2 or given[0] != "check" or any(item.startswith("-") for item in given[1:]):
        return None
    from types import SimpleNamespace

    read = SimpleNamespace(
        version=None,
        command="check",
        paths=[Path(item) for item in given[1:]],
        select=None,
        ignore=[],
        format="text",
        jobs=os.cpu_count() or 1,
        stdin_filename=None,
        exit_zero=False,
        include_generated=False,
        no_prefilter=False,
        phase_times=None,
        no_cache=False,
        statistics=False,
    )
    return cast("argparse.Namespace", read)


def _serve(rules: Sequence[type[Rule]], use_cache: bool = True) -> int:
    try:
        from lint_rules.server import main as server_main
    except ImportError as error:
        print(
            f"lint-rules: error: the language server needs pygls ({error}): "
            'pip install "agent-sessions[lsp]"',
            file=sys.stderr,
        )
        return EXIT_ERROR
    return server_main(rules, use_cache)


def _explain(code: str, rules: Sequence[type[Rule]]) -> int:
    for rule in rules:
        if code.upper() == rule.CODE:
            sys.stdout.write(explain(rule))
            return EXIT_CLEAN
    print(f"lint-rules: error: unknown rule code {code!r}", file=sys.stderr)
    return EXIT_ERROR


RECORDED_FORMATS = ("text", "json", "github")
"""The formats a run is recorded for (``quick.py``); sarif names the installed version."""


def _lint(
    arguments: argparse.Namespace, rules: Sequence[type[Rule]], given: list[str] | None = None
) -> int:
    """Check or fix; a ``check`` of files, run as given (``given``: the command line, with
    the default rules), is recorded for ``quick.py`` to replay while its inputs hold."""
    recorder = _Recorder.start(arguments, rules, given)
    if recorder is None:
        return _lint_run(arguments, rules)
    with recorder:
        code = _lint_run(arguments, rules, recorder)
    recorder.save(code)
    return code


class _Recorder:
    """What a ``check`` of files wrote and every input that decided it, for ``quick.py``.

    The inputs named by the command line are taken before the run reads them (one that
    changes during the run then fails the next run's comparison: never a stale replay);
    the checked files by the digests the run checked."""

    def __init__(self, given: list[str], rules: Sequence[type[Rule]], paths: list[Path]) -> None:
        cwd = os.getcwd()
        files = [os.path.abspath(path) for path in paths]
        directories = sorted({os.path.dirname(file) for file in files})
        wanted = [(quick.EXISTS, file) for file in files]
        wanted += quick.configuration_inputs([cwd, *directories])
        kinds = {"content": quick.CONTENT, "status": quick.STATUS}
        wanted += [
            (kinds[kind], os.path.abspath(path))
            for directory in directories
            for rule in rules
            for kind, path in rule.cache_inputs(Path(directory))
        ]
        self.given = given
        self.stamp = quick.package_stamp()
        self.inputs = quick.snapshot(wanted)
        self.chunks: list[tuple[int, str]] = []
        self.outcome: RunResult | None = None
        self.root: Path | None = None
        self._streams = (sys.stdout, sys.stderr)

    @classmethod
    def start(
        cls, arguments: argparse.Namespace, rules: Sequence[type[Rule]], given: list[str] | None
    ) -> _Recorder | None:
        paths: list[Path] = arguments.paths
        if (
            given is None
            or arguments.command != "check"
            or arguments.no_cache
            or arguments.phase_times is not None
            or arguments.stdin_filename is not None
            or arguments.format not in RECORDED_FORMATS
            or not paths
            or not all(path != Path("-") and path.is_file() for path in paths)
        ):
            return None
        return cls(given, rules, paths)

    def __enter__(self) -> None:
        sys.stdout = quick.Tee(sys.stdout, 0, self.chunks)
        sys.stderr = quick.Tee(sys.stderr, 1, self.chunks)

    def __exit__(self, *exception: object) -> None:
        sys.stdout, sys.stderr = self._streams

    def prepare(self, root: Path) -> None:
        """Create the cache folder before the run looks at ``root``: the directories the
        rules' module lookups search are inputs, and creating it later would change the
        root's modification time after its stamp (the record would never hold)."""
        with suppress(OSError):
            quick.make_cache_folder(str(root))

    def save(self, code: int) -> None:
        """Write the record, if every result holds by the inputs alone."""
        outcome = self.outcome
        if (
            outcome is None
            or self.root is None
            or code not in (EXIT_CLEAN, EXIT_FINDINGS)
            or any(not result.digest for result in outcome.files)
        ):
            return
        checked = [(quick.CONTENT, str(result.path), result.digest) for result in outcome.files]
        # The modules rules read and the directories searched for them, as they were
        # before the run used them (a change during the run fails the next comparison),
        # and the modules' content too (an edit that keeps the size and modification time).
        consulted = [(quick.MODIFIED, path, stamp) for path, stamp in outcome.consulted.items()]
        others = quick.snapshot((quick.CONTENT, str(path)) for path in sorted(outcome.dependencies))
        inputs = [*self.inputs, *checked, *consulted, *others]
        quick.save(str(self.root), self.given, self.stamp, inputs, self.chunks, code)


def _lint_run(
    arguments: argparse.Namespace,
    rules: Sequence[type[Rule]],
    recorder: _Recorder | None = None,
) -> int:
    # The declarations the configuration's rules read (one module per configured key or
    # so) live until the run's end: frozen as they are read, the collections set off by
    # reading the rest and by the run's discovery and files do not scan them again.
    with trees_kept_frozen():
        return _lint_run_frozen(arguments, rules, recorder)


def _lint_run_frozen(
    arguments: argparse.Namespace,
    rules: Sequence[type[Rule]],
    recorder: _Recorder | None,
) -> int:
    timing.reset()
    select = (
        None if arguments.select is None else check_selectors(arguments.select, "--select", rules)
    )
    ignore = check_selectors(arguments.ignore, "--ignore", rules)
    # A check that uses the cache also keeps what validating the configuration read.
    remember = arguments.command == "check" and not arguments.no_cache
    configs = Configurations(rules, select=select, ignore=ignore, remember=remember)
    config = configs.default  # the working directory's: no paths means its root
    if recorder is not None:
        recorder.prepare(config.root)
    fixing = arguments.command == "fix"
    options = RunOptions(
        fix=fixing,
        diff=fixing and arguments.diff,
        unsafe_fixes=fixing and arguments.unsafe_fixes,
        include_generated=arguments.include_generated,
        use_prefilter=not arguments.no_prefilter,
        use_cache=not fixing and not arguments.no_cache,
        jobs=arguments.jobs,
    )
    paths: list[Path] = arguments.paths
    reading_stdin = paths == [Path("-")] or (arguments.stdin_filename is not None and not paths)
    if reading_stdin:
        results = [_run_stdin(arguments.stdin_filename, configs, rules, options)]
    else:
        outcome = run(paths or [config.root], configs, rules, options)
        results = outcome.files
        if recorder is not None:
            recorder.outcome, recorder.root = outcome, config.root
        _warn_skipped(outcome.skipped, bool(results))
    # With fixed code on stdout, the report goes to stderr.
    out = sys.stderr if reading_stdin and options.fix and not options.diff else sys.stdout
    with timing.timed("report"):
        code = _report(arguments, results, rules, out, config.root)
        out.flush()
    if arguments.phase_times is not None:
        import json

        arguments.phase_times.write_text(json.dumps(timing.snapshot()) + "\n", encoding="utf-8")
    return code


def _warn_skipped(skipped: Sequence[Path], linted: bool) -> None:
    """As ruff: a file named explicitly that is not Python is skipped with a warning, and
    the exit code is the findings' (0 when there are none)."""
    for path in skipped:
        print(
            f"lint-rules: warning: {path}: not a Python file ({path.suffix}), skipped",
            file=sys.stderr,
        )
    if skipped and not linted:
        print("lint-rules: warning: no Python files found under the given paths", file=sys.stderr)


def _run_stdin(
    filename: Path | None,
    configs: Configurations,
    rules: Sequence[type[Rule]],
    options: RunOptions,
) -> FileResult:
    path = Path(os.path.abspath(filename)) if filename is not None else Path("-")
    config = configs.for_path(path) if filename is not None else configs.default
    result = run_stdin(sys.stdin.buffer.read(), path, config, config.selected(rules), options)
    if result.fixed_source is not None:
        sys.stdout.buffer.write(result.fixed_source)
        sys.stdout.flush()
    return result


def _report(
    arguments: argparse.Namespace,
    results: Sequence[FileResult],
    rules: Sequence[type[Rule]],
    out: TextIO,
    root: Path | None = None,
) -> int:
    fixing = arguments.command == "fix"
    unsafe = fixing and arguments.unsafe_fixes
    located = [
        Located(_shown(result), finding) for result in results for finding in result.findings
    ]
    names = {rule.CODE: rule.NAME for rule in rules} | ENGINE_CODES
    statistics = getattr(arguments, "statistics", False)
    if fixing and arguments.diff:
        out.write("".join(result.diff for result in results))
    out.write(
        render(
            located,
            arguments.format,
            names,
            statistics,
            unsafe_fixes=unsafe,
            root=root,
            rules=rules,
        )
    )
    not_written = [result for result in results if result.not_written is not None]
    if arguments.format == "text":
        fixed = sum(result.fixed for result in results)
        out.write(
            summary(
                [item.finding for item in located],
                fixed,
                fixing,
                fixing and arguments.diff,
                unsafe,
                severity_map(rules),
            )
        )
        if not_written:
            count = f"{len(not_written)} file" + ("" if len(not_written) == 1 else "s")
            out.write(f"{count} changed while fixing: not written, fix again.\n")
    for result in results:
        if result.refused is not None:
            print(f"{_shown(result)}: fix withheld: {result.refused}", file=sys.stderr)
        if result.not_written is not None:
            print(f"{_shown(result)}: not written: {result.not_written}", file=sys.stderr)
        if result.note is not None:
            print(f"{_shown(result)}: {result.note}", file=sys.stderr)
        if result.write_error is not None:
            print(f"{_shown(result)}: {result.write_error}", file=sys.stderr)
    if any(result.write_error is not None for result in results):
        return EXIT_ERROR
    would_change = fixing and arguments.diff and any(result.diff for result in results)
    if not_written:
        return EXIT_FINDINGS  # even with --exit-zero: the fix was not made
    if (located or would_change) and not arguments.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _shown(result: FileResult) -> str:
    return "-" if result.path == Path("-") else display_path(result.path)
