"""The command line's arguments: argparse's parser of every command.

A plain ``check FILE...`` (what pre-commit runs) is read by ``cli.plain_check`` without
importing this module or argparse; everything else is parsed here.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

from lint_rules.output.docs import RULE_FORMATS
from lint_rules.output.report import FORMATS


def parse(given: Sequence[str]) -> argparse.Namespace:
    """The arguments of ``lint-rules`` (argparse exits on a usage error, as it does)."""
    return parser().parse_args(list(given))


def parser() -> argparse.ArgumentParser:
    """The command line's parser."""
    top = argparse.ArgumentParser(
        prog="lint-rules", description="Lint rules ruff cannot express.", formatter_class=Formatter
    )
    top.add_argument(
        "--version", action=_Version, nargs=0, help="show program's version number and exit"
    )
    commands = top.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="report findings", formatter_class=Formatter)
    fix = commands.add_parser(
        "fix", help="apply fixes, report what is left", formatter_class=Formatter
    )
    for command in (check, fix):
        command.add_argument(
            "paths",
            nargs="*",
            type=Path,
            help="files or directories; - for stdin (default: the project root)",
        )
        command.add_argument(
            "--select",
            type=_code_list,
            metavar="CODES",
            help="codes or prefixes, comma separated (default: the configuration's select, "
            "else every rule)",
        )
        command.add_argument(
            "--ignore",
            type=_code_list,
            default=[],
            metavar="CODES",
            help="codes or prefixes to skip, comma separated (default: none)",
        )
        command.add_argument(
            "--format", choices=FORMATS, default="text", help="output format (default: text)"
        )
        jobs = os.cpu_count() or 1
        command.add_argument(
            "--jobs",
            type=_jobs,
            default=jobs,
            metavar="N",
            help=f"worker processes (default: {jobs}, the number of CPUs)",
        )
        command.add_argument(
            "--stdin-filename",
            type=Path,
            metavar="PATH",
            help="the path stdin's code is reported as (default: -)",
        )
        command.add_argument("--exit-zero", action="store_true", help="exit 0 even with findings")
        command.add_argument(
            "--include-generated", action="store_true", help="check @generated files"
        )
        # Debugging and benchmarks only: parse every file and run every rule on it.
        command.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)
        # Benchmarks only: write the seconds spent in each phase (timing.py) as JSON.
        command.add_argument("--phase-times", type=Path, help=argparse.SUPPRESS)
    check.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    # As ruff's `check --fix --no-cache`: accepted, and fix never reads nor writes the cache.
    fix.add_argument(
        "--no-cache", action="store_true", help="accepted for symmetry: fix never uses the cache"
    )
    check.add_argument("--statistics", action="store_true", help="count findings per code")
    fix.add_argument("--diff", action="store_true", help="print the changes, write nothing")
    fix.add_argument("--unsafe-fixes", action="store_true", help="also apply unsafe fixes")
    rules = commands.add_parser("rules", help="list the rules", formatter_class=Formatter)
    rules.add_argument(
        "--format", choices=RULE_FORMATS, default="text", help="output format (default: text)"
    )
    explain_command = commands.add_parser(
        "explain", help="print a rule's documentation", formatter_class=Formatter
    )
    explain_command.add_argument("code")
    server = commands.add_parser(
        "server",
        help="serve editors: the Language Server Protocol on stdio",
        formatter_class=Formatter,
    )
    server.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    protocols = commands.add_parser(
        "protocols", help="check protocol implementations with mypy", formatter_class=Formatter
    )
    protocols.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    protocols.add_argument(
        "--daemon",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep mypy's state in its daemon between runs (default: yes, unless $CI is set)",
    )
    protocols.add_argument(
        "--daemon-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="stop the daemon after this long without a run (default: 1800)",
    )
    protocols.add_argument(
        "--stop-daemon", action="store_true", help="stop the project's mypy daemon and exit"
    )
    return top


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, with the terminal's width read as ``shutil`` reads it
    but without importing it (with zlib, bz2 and lzma): argparse makes a formatter for
    every option it is given, help or not."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``: ``$COLUMNS``, else stdout's terminal, else 80."""
    with suppress(ValueError):
        columns = int(os.environ.get("COLUMNS", "0"))
        if columns > 0:
            return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def _jobs(value: str) -> int:
    """``--jobs``: a whole number of worker processes, at least 1 (a usage error names it)."""
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return jobs


def _seconds(value: str) -> int:
    seconds = int(value)
    if seconds < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 second, not {value}")
    return seconds


class _Version(argparse.Action):
    """``--version``, as argparse's own, but reading the version only when asked: the
    distribution metadata (``importlib.metadata``) costs a check run time it never needs."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        sys.stdout.write(f"{parser.prog} {version()}\n")  # stdout, as argparse's
        parser.exit()


def version() -> str:
    """The installed distribution's version (pre-commit runs this package uninstalled)."""
    from importlib import metadata

    try:
        return metadata.version("agent-sessions")
    except metadata.PackageNotFoundError:
        return "(not installed)"


def _code_list(value: str) -> list[str]:
    """Comma-separated selectors, as written (``check_selectors`` validates each one,
    so that an empty one is an error, not nothing)."""
    return value.split(",")
