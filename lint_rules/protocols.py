"""``python -m lint_rules protocols``: mypy's verdict on every protocol implementation.

For each class that implements a configured protocol (``lint_rules.conformance``
finds them, as for LR003), a probe ``def _probe(x: Impl) -> Protocol: return x``
is appended to a shadow copy of the class's file (mypy's ``--shadow-file``; the
file itself is never written), and one ``mypy.api.run`` checks all of them with
the project's own mypy settings. Each probe mypy rejects becomes an ``LR100``
finding at the class, with mypy's explanation (missing members, Expected/Got) as
its message.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from lint_rules.config import Config, load_config
from lint_rules.conformance import (
    ProtocolTarget,
    configured_targets,
    find_implementations,
    matching_targets,
)
from lint_rules.discovery import discover
from lint_rules.engine import decode_source, display_path
from lint_rules.report import Located, render, summary
from lint_rules.rule import FileContext, Finding, Rule
from lint_rules.static import file_source

CODE = "LR100"
NAME = "protocol-mismatch"
PROBE_HEADER = "# --- lint_rules protocols: probes (shadow copy only) ---"

# `path:line: severity: message  [code]` with --show-absolute-path and --show-error-codes.
_MYPY_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*)$")
_LINE_BREAK = re.compile(r"\r\n?|\n")
_ERROR_CODE = re.compile(r"\s+\[(?P<code>[a-z0-9-]+)\]$")


class ProtocolsError(Exception):
    """mypy could not check the probes (a blocking error, an unimportable protocol)."""


@dataclass(frozen=True)
class Probe:
    """One (protocol, implementation) pair and where its probe sits in the shadow file."""

    path: Path
    class_name: str
    class_start: int
    class_end: int
    """Character range of ``class Name`` in the original file."""
    protocol: str
    import_line: int
    return_line: int


def main(output_format: str, rules: Sequence[type[Rule]]) -> int:
    """Run the command; exit 0 when every implementation passes, 1 when one fails."""
    config = load_config(Path.cwd(), rules)
    try:
        located = check_protocols(config)
    except ProtocolsError as error:
        print(f"lint-rules: error: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(render(located, output_format, {CODE: NAME}))
    if output_format == "text":
        sys.stdout.write(summary([item.finding for item in located]))
    return 1 if located else 0


def check_protocols(config: Config) -> list[Located]:
    """LR100 findings for every implementation mypy does not accept as its protocol."""
    targets = configured_targets(config.rule_options)
    if not targets:
        return []
    files = discover([config.root], config.root, config.exclude)
    probes: list[Probe] = []
    shadows: dict[Path, bytes] = {}
    for path in files:
        planned = _plan_file(path, config.root, targets)
        if planned is not None:
            text, file_probes = planned
            shadows[path] = text
            probes.extend(file_probes)
    if not probes:
        return []
    output = _run_mypy(config.root, shadows)
    return _findings(probes, output)


def _plan_file(
    path: Path, root: Path, targets: Sequence[ProtocolTarget]
) -> tuple[bytes, list[Probe]] | None:
    """The shadow copy of one file with its probes appended (in the file's encoding, which
    its coding cookie tells mypy), or None if it has none."""
    matching = matching_targets(targets, path, root)
    if not matching:
        return None
    try:
        text, encoding = decode_source(path.read_bytes())
    except (OSError, UnicodeDecodeError, SyntaxError):
        return None  # `check` reports unreadable files (LR000)
    if not any(target.admits(text) for target in matching):
        return None
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError):
        return None
    context = FileContext(path, text)
    source = file_source(path, tree)
    # Python's line breaks only: str.splitlines also breaks at form feeds and U+2028,
    # which would cut string literals in two in the shadow copy.
    lines = [*_LINE_BREAK.split(text), "", PROBE_HEADER]
    probes: list[Probe] = []
    for index, target in enumerate(matching):
        protocol = target.protocol
        implementations = [
            item
            for item in find_implementations(source, protocol)
            if item.node in tree.body  # a probe can only name a module-level class
        ]
        if not implementations:
            continue
        alias = f"_lint_rules_protocol_{index}"
        lines.append(f"from {protocol.module} import {protocol.name} as {alias}")
        import_line = len(lines)
        for implementation in implementations:
            node = implementation.node
            lines.append(f"def _lint_rules_probe_{len(probes)}(x: {node.name}) -> {alias}:")
            lines.append("    return x")
            start = context.offset(node.lineno, node.col_offset)
            name_end = text.index(node.name, start) + len(node.name)
            probes.append(
                Probe(
                    path,
                    node.name,
                    start,
                    name_end,
                    protocol.qualified_name,
                    import_line,
                    len(lines),
                )
            )
    if not probes:
        return None
    return ("\n".join(lines) + "\n").encode(encoding), probes


def _run_mypy(root: Path, shadows: dict[Path, bytes]) -> list[tuple[Path, int, str, str]]:
    """One mypy run over the files with their shadows; (path, line, severity, message)."""
    from mypy import api

    with tempfile.TemporaryDirectory(prefix="lint_rules_protocols_") as directory:
        arguments = [
            "--show-absolute-path",
            "--show-error-codes",
            "--no-error-summary",
            "--no-pretty",
            "--hide-error-context",
            "--no-color-output",
        ]
        pyproject = root / "pyproject.toml"
        if pyproject.is_file() and "[tool.mypy]" in pyproject.read_text(encoding="utf-8"):
            arguments += ["--config-file", str(pyproject)]
        for number, (path, content) in enumerate(shadows.items()):
            shadow = Path(directory) / f"shadow_{number}.py"
            shadow.write_bytes(content)
            arguments += ["--shadow-file", str(path), str(shadow)]
        arguments += [str(path) for path in shadows]
        with _working_directory(root):  # mypy reads mypy_path relative to the cwd
            stdout, stderr, status = api.run(arguments)
    if status == 2 or (status != 0 and not stdout.strip()):
        raise ProtocolsError(f"mypy failed (exit {status}): {(stderr or stdout).strip()}")
    messages = []
    for line in stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match is not None:
            messages.append(
                (
                    Path(match["path"]),
                    int(match["line"]),
                    match["severity"],
                    match["message"],
                )
            )
    return messages


def _findings(
    probes: Sequence[Probe], messages: Sequence[tuple[Path, int, str, str]]
) -> list[Located]:
    by_line = {(probe.path, probe.return_line): probe for probe in probes}
    imports = {(probe.path, probe.import_line): probe for probe in probes}
    explanations: dict[Probe, list[str]] = {}
    for path, line, severity, message in messages:
        failed_import = imports.get((path, line))
        if failed_import is not None and severity == "error":
            raise ProtocolsError(f"cannot import {failed_import.protocol} for mypy: {message}")
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
        context = texts.get(probe.path)
        if context is None:
            context = texts[probe.path] = FileContext(
                probe.path, decode_source(probe.path.read_bytes())[0]
            )
        line, column = context.position(probe.class_start)
        end_line, end_column = context.position(probe.class_end)
        explanation = "; ".join([parts[0], " ".join(parts[1:])]) if len(parts) > 1 else parts[0]
        message = f"`{probe.class_name}` is not a `{probe.protocol}` for mypy: {explanation}"
        finding = Finding(CODE, message, line, column, end_line, end_column)
        located.append(Located(display_path(probe.path), finding))
    return located


@contextmanager
def _working_directory(directory: Path) -> Iterator[None]:
    previous = os.getcwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(previous)
