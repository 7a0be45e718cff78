"""``python -m lint_rules protocols``: mypy's verdict on every protocol implementation.

For each class that implements a configured protocol (``lint_rules.analysis.conformance``
finds them, as for LR003), a generated *probe module* imports the class and the
protocol and returns one as the other::

    from agents.memory.session import Session as _lint_rules_protocol_0
    from agents.memory.sqlite_session import SQLiteSession as _lint_rules_impl_0

    def _lint_rules_probe_0(x: _lint_rules_impl_0) -> _lint_rules_protocol_0:
        return x

Classes that subclass an implementation of another file are implementations too (of the
same protocol). mypy's ``[override]`` and ``[misc]`` errors inside an implementation's class
that name the protocol, one of its ABCs or an implementation as the supertype (an explicit
subclass of the protocol, which the probe accepts by its base alone; a subclass of an
implementation) are ``LR100`` findings at their line, with mypy's message.

A class nested in a class is named through the outermost one (``x: _lint_rules_impl_0.Inner``).
A class defined in a function cannot be imported by any module, so it has no probe: the
command names each such class in a note on stderr (LR003 still checks it statically).

One ``mypy.api.run`` checks the implementation files and their probe modules (one
per file) with the project's own mypy settings. Each probe mypy rejects becomes an
``LR100`` finding at the class, with mypy's explanation (missing members,
Expected/Got) as its message.

The project's files are never written, and are checked as they are: the probe
modules and mypy's incremental cache live under ``.lint_rules_cache/protocols/``
and are kept between runs. A probe module is rewritten only when its content
changes, so after an edit to one implementation mypy re-checks that file, what
depends on it and its probe module, and reads everything else from its cache.

With a daemon (``lint_rules.mypy_daemon``: the command's default outside CI), a run after
an edit re-checks only what uses the edited definitions, even when the package's
``__init__`` re-exports the edited class: the first run starts the daemon, later ones
(the hook, a terminal, the language server) ask it. A run that takes a while says so on
stderr.
"""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lint_rules.analysis.conformance import (
    ProtocolTarget,
    configured_targets,
    judge,
    matching_targets,
)
from lint_rules.analysis.declarations import Declarations, canonical_name, file_source
from lint_rules.config import Config, load_config
from lint_rules.engine.cache import CACHE_DIRECTORY
from lint_rules.engine.discovery import discover
from lint_rules.engine.run import decode_source, display_path
from lint_rules.mypy_daemon import DEFAULT_IDLE_TIMEOUT, Daemon, MypyOutput, file_lock
from lint_rules.output.report import Located, render, summary
from lint_rules.rule import FileContext, Finding, Rule

CODE = "LR100"
NAME = "protocol-mismatch"
WORK_DIRECTORY = Path(CACHE_DIRECTORY) / "protocols"
"""Under the project root: ``probes/`` (the generated modules) and ``mypy/`` (its cache)."""
PROBE_PREFIX = "_lint_rules_probe_"

# `path:line: severity: message  [code]` with --show-absolute-path and --show-error-codes.
_MYPY_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*)$")
_ERROR_CODE = re.compile(r"\s+\[(?P<code>[a-z0-9-]+)\]$")

PROGRESS_AFTER = 2.0
"""Seconds after which a mypy run that has not finished says so on stderr (then every
``PROGRESS_EVERY`` seconds)."""
PROGRESS_EVERY = 10.0


@dataclass
class Counted:
    """What a run checked: the configured protocols and the implementations probed."""

    protocols: int = 0
    implementations: int = 0

    def line(self) -> str:
        """``Checked 3 implementations of 1 protocol.`` (the text summary's first line)."""
        implementations = _plural(self.implementations, "implementation")
        return f"Checked {implementations} of {_plural(self.protocols, 'protocol')}.\n"


def _plural(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


NONE_CONFIGURED = "No protocols configured ([tool.lint_rules.protocols]): nothing to check.\n"


class ProtocolsError(Exception):
    """mypy could not check the probes (a blocking error, an unimportable protocol)."""


@dataclass(frozen=True)
class Implementation:
    """A class of a project file that implements a configured protocol."""

    path: Path
    class_name: str
    """Its ``__qualname__``: ``Name``, ``Outer.Inner`` or ``factory.<locals>.Local``."""
    class_start: int
    class_end: int
    """Character range of ``class Name`` in the file."""
    protocol_module: str
    protocol_name: str
    lines: tuple[int, int] = (0, 0)
    """The first and last line of the class."""
    module: str = ""
    """The module the class is read as (``pkg.impls.memory``), for its subclasses."""

    @property
    def protocol(self) -> str:
        """The protocol's qualified name, ``module.Name``."""
        return f"{self.protocol_module}.{self.protocol_name}"

    @property
    def importable(self) -> bool:
        """Whether a probe module can name the class: one defined in a function cannot."""
        return "<locals>" not in self.class_name


@dataclass(frozen=True)
class Probe:
    """One implementation and the lines of its probe in the probe module."""

    implementation: Implementation
    module: str
    """The module mypy knows the implementation's file as."""
    probe_path: Path
    protocol_line: int
    class_line: int
    return_line: int


def main(
    output_format: str,
    rules: Sequence[type[Rule]],
    use_daemon: bool | None = None,
    daemon_timeout: int | None = None,
    stop_daemon: bool = False,
) -> int:
    """Run the command; exit 0 when every implementation passes, 1 when one fails.

    ``use_daemon`` None means: mypy's daemon unless the ``CI`` environment variable is set
    (a single run gains nothing from it). ``stop_daemon`` only stops the project's daemons.
    """
    config = load_config(Path.cwd(), rules)
    work = config.root / WORK_DIRECTORY
    if stop_daemon:
        from lint_rules.mypy_daemon import stop_all

        stopped = stop_all(work)
        what = ", ".join(map(str, stopped)) if stopped else "none was running"
        print(f"lint-rules: stopped mypy's daemon: {what}", file=sys.stderr)
        return 0
    if use_daemon is None:
        use_daemon = os.environ.get("CI", "").lower() in ("", "0", "false")
    daemon = None
    if use_daemon:
        daemon = Daemon(work, config.root, daemon_timeout or DEFAULT_IDLE_TIMEOUT)
    unprobed: list[Implementation] = []
    counted = Counted()
    try:
        with _progress("looking for the implementations of the configured protocols"):
            located = check_protocols(config, unprobed, daemon, counted)
    except ProtocolsError as error:
        print(f"lint-rules: error: {error}", file=sys.stderr)
        return 2
    for item in unprobed:
        print(f"lint-rules: note: {_unprobed_note(item)}", file=sys.stderr)
    if not counted.protocols:  # exit 0, as ruff with nothing to check; stdout stays parsable
        if output_format == "text":
            sys.stdout.write(NONE_CONFIGURED)
            return 0
        print(f"lint-rules: note: {NONE_CONFIGURED}", end="", file=sys.stderr)
    sys.stdout.write(render(located, output_format, {CODE: NAME}, root=config.root))
    if output_format == "text":
        sys.stdout.write(counted.line() + summary([item.finding for item in located]))
    return 1 if located else 0


def check_protocols(
    config: Config,
    unprobed: list[Implementation] | None = None,
    daemon: Daemon | None = None,
    counted: Counted | None = None,
) -> list[Located]:
    """LR100 findings for every implementation mypy does not accept as its protocol.

    ``counted`` (when given) is told how many protocols are configured and how many
    implementations mypy checked.

    A class defined in a function cannot be imported by a probe module: it is appended
    to ``unprobed`` (when given) instead of being checked; LR003 still checks it.
    With ``daemon``, mypy's daemon answers when it runs, and is started when it does not.
    """
    declarations = Declarations(config.root)  # the protocols' modules are the project's
    targets = configured_targets(config.rule_options, declarations)
    if counted is not None:
        counted.protocols = len({(t.protocol.module, t.protocol.name) for t in targets})
    if not targets:
        return []
    implementations = []
    found: list[Implementation] = []
    paths = list(discover([config.root], config.root, config.exclude))
    for path in paths:
        found += implementations_in(path, config.root, targets, declarations)
    # Subclasses of implementations in other files, and theirs (a few generations).
    known = {f"{item.module}.{item.class_name}": item for item in found}
    new = found
    for _ in range(3):
        if not new:
            break
        new = []
        for path in paths:
            new += subclasses_in(path, config.root, targets, known, declarations)
        new = [item for item in new if f"{item.module}.{item.class_name}" not in known]
        known.update({f"{item.module}.{item.class_name}": item for item in new})
        found += new
    for implementation in found:
        if implementation.importable:
            implementations.append(implementation)
        elif unprobed is not None:
            unprobed.append(implementation)
    if counted is not None:
        counted.implementations = len(implementations)
    if not implementations:
        return []
    work = config.root / WORK_DIRECTORY
    arguments = _mypy_arguments(config.root, work / "mypy")
    checked = list(dict.fromkeys(item.path for item in implementations))
    modules = _module_names(config.root, arguments, checked)
    probes = _write_probes(work / "probes", implementations, modules)
    probe_paths = list(dict.fromkeys(probe.probe_path for probe in probes))
    files = [*map(str, checked), *map(str, probe_paths)]
    output = _run_mypy(config.root, arguments, files, daemon)
    return _findings(probes, output) + _override_findings(implementations, targets, output)


def implementations_in(
    path: Path,
    root: Path,
    targets: Sequence[ProtocolTarget],
    declarations: Declarations | None = None,
) -> list[Implementation]:
    """The classes of one file that implement a target configured for it: module-level
    ones, those nested in classes (a probe imports the outermost and names the inner one
    through it) and those defined in functions (``importable`` is false: no probe can
    name them). Bases imported from other modules are read through ``declarations``
    (default: looked up from ``root``)."""
    matching = matching_targets(targets, path, root)
    if not matching:
        return []
    try:
        text, _ = decode_source(path.read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError):
        return []  # `check` reports unreadable files (LR000)
    if not any(target.admits(text) for target in matching):
        return []
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError):
        return []
    context = FileContext(path, text)
    source = file_source(path, tree, declarations or Declarations(root))
    found = []
    # Judged as LR003 does: a class that fits twin protocols (a sync and an async one of
    # the same method names) is probed against the one it is judged against.
    for judgement in judge(source, [target.protocol for target in matching]):
        item = judgement.implementation
        protocol = item.protocol
        node = item.node
        start = context.offset(node.lineno, node.col_offset)
        name_end = text.index(node.name, start) + len(node.name)
        lines = (node.lineno, node.end_lineno or node.lineno)
        found.append(
            Implementation(
                path,
                item.qualname,
                start,
                name_end,
                protocol.module,
                protocol.name,
                lines,
                source.name,
            )
        )
    return found


def subclasses_in(
    path: Path,
    root: Path,
    targets: Sequence[ProtocolTarget],
    known: dict[str, Implementation],
    declarations: Declarations,
) -> list[Implementation]:
    """The classes of one file (one the targets list) that subclass an implementation of
    another file, by ``module.Class`` in ``known``: each implements what its base does."""
    if not matching_targets(targets, path, root):
        return []
    try:
        text, _ = decode_source(path.read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError):
        return []
    names = {key.rpartition(".")[2] for key in known}
    if not any(name in text for name in names):
        return []
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError):
        return []
    context = FileContext(path, text)
    source = file_source(path, tree, declarations)
    found = []
    for node, qualname, _classes in source.nested_classes:
        if f"{source.name}.{qualname}" in known:
            continue
        for base in node.bases:
            target = base.value if isinstance(base, ast.Subscript) else base
            qualified = source.qualified(target)
            if qualified is None:
                continue
            parent = known.get(qualified) or known.get(canonical_name(qualified, declarations))
            if parent is None or parent.path == path:
                continue  # a subclass in the same file is judged with its base (LR003)
            start = context.offset(node.lineno, node.col_offset)
            name_end = text.index(node.name, start) + len(node.name)
            lines = (node.lineno, node.end_lineno or node.lineno)
            found.append(
                Implementation(
                    path,
                    qualname,
                    start,
                    name_end,
                    parent.protocol_module,
                    parent.protocol_name,
                    lines,
                    source.name,
                )
            )
            break
    return found


def _unprobed_note(item: Implementation) -> str:
    context = FileContext(item.path, decode_source(item.path.read_bytes())[0])
    line, column = context.position(item.class_start)
    return (
        f"{display_path(item.path)}:{line}:{column}: `{item.class_name}` implements "
        f"`{item.protocol}` but is defined in a function, where no probe module can import "
        "it: mypy does not check it here (LR003 does)"
    )


def _mypy_arguments(root: Path, cache: Path) -> list[str]:
    """mypy's options: the project's configuration, our output format, our cache."""
    arguments = [
        "--show-absolute-path",
        "--show-error-codes",
        "--no-error-summary",
        "--no-pretty",
        "--hide-error-context",
        "--no-color-output",
        "--cache-dir",
        str(cache),
    ]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and "[tool.mypy]" in pyproject.read_text(encoding="utf-8"):
        arguments += ["--config-file", str(pyproject)]
    return arguments


def _module_names(root: Path, arguments: list[str], paths: Sequence[Path]) -> dict[Path, str]:
    """The module name mypy gives each file (its package bases, ``mypy_path``, the
    ``explicit_package_bases`` and ``namespace_packages`` settings), asked of mypy."""
    from mypy.main import process_options

    out, err = io.StringIO(), io.StringIO()
    with _working_directory(root):
        try:
            sources, _ = process_options([*arguments, *map(str, paths)], stdout=out, stderr=err)
        except SystemExit as error:
            message = (err.getvalue() or out.getvalue()).strip()
            raise ProtocolsError(
                f"mypy rejected its options (exit {error.code}): {message}"
            ) from None
    modules = {}
    for source in sources:
        if source.path is not None:
            modules[Path(os.path.abspath(root / source.path))] = source.module
    missing = [str(path) for path in paths if Path(os.path.abspath(path)) not in modules]
    if missing:
        raise ProtocolsError(f"mypy has no module name for {', '.join(missing)}")
    return {path: modules[Path(os.path.abspath(path))] for path in paths}


def _write_probes(
    directory: Path, implementations: Sequence[Implementation], modules: dict[Path, str]
) -> list[Probe]:
    """Write one probe module per implementation file (only when its content changed,
    so that mypy's cache of it stays valid); remove the probe modules of other runs."""
    by_path: dict[Path, list[Implementation]] = {}
    for implementation in implementations:
        by_path.setdefault(implementation.path, []).append(implementation)
    _make_work_directory(directory)
    probes: list[Probe] = []
    written: set[Path] = set()
    for path, items in by_path.items():
        module = modules[path]
        digest = hashlib.blake2b(module.encode(), digest_size=6).hexdigest()
        probe_path = directory / f"{PROBE_PREFIX}{digest}.py"
        lines = [
            f"# Generated by `lint_rules protocols` for the module {module}: do not edit.",
            "",
        ]
        protocols = list(
            dict.fromkeys((item.protocol_module, item.protocol_name) for item in items)
        )
        protocol_lines = {}
        for index, (protocol_module, name) in enumerate(protocols):
            lines.append(f"from {protocol_module} import {name} as _lint_rules_protocol_{index}")
            protocol_lines[protocol_module, name] = len(lines)
        for index, item in enumerate(items):
            # A nested class is named through the outermost one: `Outer.Inner`.
            outer, dot, inner = item.class_name.partition(".")
            lines.append(f"from {module} import {outer} as _lint_rules_impl_{index}")
            class_line = len(lines)
            protocol_index = protocols.index((item.protocol_module, item.protocol_name))
            lines += [
                "",
                "",
                f"def _lint_rules_probe_{index}(",
                f"    x: _lint_rules_impl_{index}{dot}{inner},",
                f") -> _lint_rules_protocol_{protocol_index}:",
                "    return x",
            ]
            probes.append(
                Probe(
                    item,
                    module,
                    probe_path,
                    protocol_lines[item.protocol_module, item.protocol_name],
                    class_line,
                    len(lines),
                )
            )
        content = ("\n".join(lines) + "\n").encode("utf-8")
        try:
            unchanged = probe_path.read_bytes() == content
        except OSError:
            unchanged = False
        if not unchanged:
            probe_path.write_bytes(content)
        written.add(probe_path)
    for stale in directory.glob(f"{PROBE_PREFIX}*.py"):
        if stale not in written:
            stale.unlink(missing_ok=True)
    return probes


def _make_work_directory(directory: Path) -> None:
    """Create ``directory`` under the cache folder, which git is told to ignore."""
    cache = directory.parent.parent
    cache.mkdir(exist_ok=True)
    ignore_file = cache / ".gitignore"
    if not ignore_file.exists():
        ignore_file.write_text("# Created by lint_rules.\n*\n", encoding="utf-8")
    directory.mkdir(parents=True, exist_ok=True)


def _run_mypy(
    root: Path, arguments: list[str], files: list[str], daemon: Daemon | None
) -> list[tuple[Path, int, str, str]]:
    """One mypy check of ``files``: by the daemon when it runs, else in this process (and
    then the daemon is started for the next run); (path, line, severity, message) of each
    line mypy prints."""
    output = None
    # mypy's cache is one SQLite file that a second writer finds locked: the runs of one
    # project (in this process, or loading the daemon) take turns.
    with file_lock(root / WORK_DIRECTORY / "mypy.lock"):
        if daemon is not None:
            with _progress(f"mypy's daemon is checking {len(files)} files"):
                output = daemon.check(arguments, files)
        if output is None:
            output = _run_in_process(root, [*arguments, *files])
            if daemon is not None:
                problem = daemon.start(arguments, files)
                if problem is not None:
                    print(
                        f"lint-rules: note: mypy's daemon could not start ({problem}); "
                        "checked without it (--no-daemon skips it)",
                        file=sys.stderr,
                    )
    if output.status == 2 or (output.status != 0 and not output.stdout.strip()):
        raise ProtocolsError(
            f"mypy failed (exit {output.status}): {(output.stderr or output.stdout).strip()}"
        )
    messages = []
    for line in output.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match is not None:
            messages.append(
                (
                    Path(os.path.abspath(match["path"])),
                    int(match["line"]),
                    match["severity"],
                    match["message"],
                )
            )
    return messages


def _run_in_process(root: Path, arguments: list[str]) -> MypyOutput:
    from mypy import api

    with _working_directory(root), _progress("mypy is checking the implementations"):
        # mypy reads mypy_path relative to the working directory.
        stdout, stderr, status = api.run(arguments)
    return MypyOutput(stdout, stderr, status)


_reporting = threading.local()
"""Per thread: the ``_Reporter`` of the outermost ``_progress`` running, if any."""


class _Reporter:
    """Says on stderr what is going on (the innermost ``_progress``) once it has taken
    ``PROGRESS_AFTER`` seconds, then every ``PROGRESS_EVERY`` seconds and at each change."""

    def __init__(self, what: str) -> None:
        self.doing = [what]
        self.start = time.monotonic()
        self.wake = threading.Event()
        self.finished = False
        self.thread = threading.Thread(target=self.run, name="lint-rules-progress", daemon=True)

    def run(self) -> None:
        shown, due = None, self.start + PROGRESS_AFTER
        while True:
            self.wake.wait(max(0.0, due - time.monotonic()))
            self.wake.clear()
            if self.finished:
                return
            now = time.monotonic()
            if now < self.start + PROGRESS_AFTER:
                continue  # a change before anything was said: nothing to say yet
            what = self.doing[-1]
            if what != shown or now >= due:
                elapsed = now - self.start
                print(
                    f"lint-rules: protocols: {what} ({elapsed:.0f} s)", file=sys.stderr, flush=True
                )
                shown, due = what, now + PROGRESS_EVERY


@contextmanager
def _progress(what: str) -> Iterator[None]:
    """Say on stderr that ``what`` is still going on, when the run takes a while; inside
    another ``_progress`` of the same thread, that one's report says ``what`` meanwhile."""
    outer: _Reporter | None = getattr(_reporting, "reporter", None)
    if outer is not None:
        outer.doing.append(what)
        outer.wake.set()
        try:
            yield
        finally:
            outer.doing.pop()
        return
    reporter = _Reporter(what)
    _reporting.reporter = reporter
    reporter.thread.start()
    try:
        yield
    finally:
        _reporting.reporter = None
        reporter.finished = True
        reporter.wake.set()
        reporter.thread.join()


def _findings(
    probes: Sequence[Probe], messages: Sequence[tuple[Path, int, str, str]]
) -> list[Located]:
    by_line = {(probe.probe_path, probe.return_line): probe for probe in probes}
    protocol_imports = {(probe.probe_path, probe.protocol_line): probe for probe in probes}
    class_imports = {(probe.probe_path, probe.class_line): probe for probe in probes}
    explanations: dict[Probe, list[str]] = {}
    for path, line, severity, message in messages:
        if severity == "error":
            failed = protocol_imports.get((path, line))
            if failed is not None:
                protocol = failed.implementation.protocol
                raise ProtocolsError(f"cannot import {protocol} for mypy: {message}")
            failed = class_imports.get((path, line))
            if failed is not None:
                where = display_path(failed.implementation.path)
                raise ProtocolsError(
                    f"cannot import {failed.module}.{failed.implementation.class_name} "
                    f"({where}) for mypy: {message}"
                )
        probe = by_line.get((path, line))
        if probe is None:
            continue  # the project's own mypy findings are mypy's to report
        code = _ERROR_CODE.search(message)
        if severity == "error" and (code is None or code["code"] != "return-value"):
            continue
        explanations.setdefault(probe, []).append(_ERROR_CODE.sub("", message).strip())
    located = []
    texts: dict[Path, FileContext] = {}
    for probe, parts in explanations.items():
        item = probe.implementation
        context = texts.get(item.path)
        if context is None:
            context = texts[item.path] = FileContext(
                item.path, decode_source(item.path.read_bytes())[0]
            )
        line, column = context.position(item.class_start)
        end_line, end_column = context.position(item.class_end)
        explanation = "; ".join([parts[0], " ".join(parts[1:])]) if len(parts) > 1 else parts[0]
        message = f"`{item.class_name}` is not a `{item.protocol}` for mypy: {explanation}"
        finding = Finding(CODE, message, line, column, end_line, end_column)
        located.append(Located(display_path(item.path), finding))
    return located


_OVERRIDE_CODES = ("override", "misc")
_SUPERTYPE = re.compile(r'(?:supertype|base class) "([^"]+)"')
_MEMBER = re.compile(r'(?:of|attribute) "(\w+)"')
_BOILERPLATE = ("This violates the Liskov substitution principle", "See https://")


def _override_findings(
    implementations: Sequence[Implementation],
    targets: Sequence[ProtocolTarget],
    messages: Sequence[tuple[Path, int, str, str]],
) -> list[Located]:
    """mypy's ``[override]`` and ``[misc]`` errors inside an implementation's class that
    name, as the supertype or base class, the protocol, one of its ABCs or another
    implementation (an explicit subclass of the protocol, a subclass of an implementation),
    with the notes mypy adds to them."""
    supertypes = {target.protocol.name for target in targets}
    supertypes |= {name for target in targets for name in target.protocol.abcs}
    supertypes |= {item.class_name for item in implementations}
    by_path: dict[Path, list[Implementation]] = {}
    for item in implementations:
        by_path.setdefault(Path(os.path.abspath(item.path)), []).append(item)
    located: list[Located] = []
    texts: dict[Path, FileContext] = {}
    current: tuple[Implementation, Path, int, list[str]] | None = None
    found: list[tuple[Implementation, Path, int, list[str]]] = []
    for path, line, severity, message in messages:
        if severity == "note":
            if (
                current is not None
                and (path, line) == current[1:3]
                and not message.strip().startswith(_BOILERPLATE)
            ):
                current[3].append(message.strip())
            continue
        current = None
        code = _ERROR_CODE.search(message)
        if code is None or code["code"] not in _OVERRIDE_CODES:
            continue
        named = _SUPERTYPE.findall(message)
        if not any(name.rpartition(".")[2] in supertypes or name in supertypes for name in named):
            continue
        inside = [item for item in by_path.get(path, []) if item.lines[0] <= line <= item.lines[1]]
        if not inside:
            continue
        item = min(inside, key=lambda candidate: candidate.lines[1] - candidate.lines[0])
        current = (item, path, line, [_ERROR_CODE.sub("", message).strip()])
        found.append(current)
    for item, path, line, parts in found:
        context = texts.get(path)
        if context is None:
            context = texts[path] = FileContext(item.path, decode_source(item.path.read_bytes())[0])
        text = context.text.splitlines()[line - 1] if line <= len(context.text.splitlines()) else ""
        column = len(text) - len(text.lstrip()) + 1
        member = _MEMBER.search(parts[0])
        owner = f"{item.class_name}.{member[1]}" if member else item.class_name
        message = f"`{owner}` is not a `{item.protocol}` for mypy: {' '.join(parts)}"
        finding = Finding(CODE, message, line, column, line, len(text) + 1)
        located.append(Located(display_path(item.path), finding))
    return located


@contextmanager
def _working_directory(directory: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)
