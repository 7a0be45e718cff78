"""Helpers shared by the LR002 and LR003 tests: write a small project's modules, run LR002
on a snippet, read LR003's findings, ask mypy. Test modules import this as
``project_fixtures`` (pytest puts this directory on ``sys.path``); mypy knows it as
``tests.lint_rules.project_fixtures``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from lint_rules.engine.checker import Checker
from lint_rules.rule import Finding
from lint_rules.rules.unknown_literal import UnknownLiteralRule


def write(path: Path, source: str) -> None:
    """Write ``source``, dedented, at ``path`` (its directories made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source), encoding="utf-8")


def write_files(root: Path, files: Mapping[str, str]) -> Path:
    """Write each module of ``files`` (a path under ``root`` -> its source); ``root``."""
    for name, text in files.items():
        write(root / name, text)
    return root


def literal_findings(
    source: str, literals: Mapping[str, object], factories: Sequence[str] = ()
) -> list[Finding]:
    """LR002's findings on ``source`` (dedented) as a module ``use.py`` of the working
    directory's project, configured with ``literals`` (and ``literal-factories``), in
    the order of their positions."""
    options: dict[str, object] = {"literals": dict(literals)}
    if factories:
        options["literal-factories"] = list(factories)
    findings, _ = Checker([UnknownLiteralRule(options)]).check(
        Path("use.py"), textwrap.dedent(source)
    )
    return sorted(findings, key=lambda finding: (finding.line, finding.column))


def configure_literals(project: Path, *entries: str, settings: str = "") -> None:
    """``project``'s pyproject.toml: LR002 alone (the snippets hold misspellings on
    purpose, which LR004 would report too), with ``settings`` (lines of
    ``[tool.lint_rules]``) and ``entries`` (lines of ``[tool.lint_rules.literals]``)."""
    (project / "pyproject.toml").write_text(
        f'[tool.lint_rules]\nselect = ["LR002"]\n{settings}\n[tool.lint_rules.literals]\n'
        + "\n".join(entries)
        + "\n"
    )


def check_literals(
    source: str, literals: Mapping[str, object], factories: Sequence[str] = ()
) -> list[tuple[int, str]]:
    """``(line, message)`` of each of ``literal_findings``."""
    return [(f.line, f.message) for f in literal_findings(source, literals, factories)]


def typo(value: str, field: str, meant: str) -> str:
    """LR002's message for a misspelt ``value`` of ``field`` with a clear closest value."""
    return f"{value!r} is not a value of `{field}`; did you mean {meant!r}?"


def on_union(message: str, union: str) -> str:
    """``message`` (``typo``'s, one configured key) as LR002 words it on a receiver of the
    union alias ``union``: the union's field first, then the configured key."""
    head, key, tail = message.split("`", 2)
    return f"{head}`{union}.{key.rpartition('.')[2]}` (configured: `{key}`){tail}"


def protocol_project(project: Path, config: str, protocols: str) -> Path:
    """``project`` configured with ``config`` (a pyproject.toml), ``protocols`` as its
    ``drivers`` module and an empty ``impl`` package for the implementations."""
    (project / "pyproject.toml").write_text(config)
    write(project / "drivers.py", protocols)
    write(project / "impl" / "__init__.py", "")
    return project


def lr003_messages(output: str) -> list[str]:
    """The message of each LR003 finding in ``check``'s text output."""
    return [line.split(" LR003 ", 1)[1] for line in output.splitlines()[:-1]]


def mypy_strict(root: Path) -> tuple[list[str], str]:
    """``mypy --strict`` on ``root`` (its working directory): its error lines, and stderr."""
    from mypy import api

    stdout, stderr, _ = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(root / ".mypy"), "."]
    )
    return [line for line in stdout.splitlines() if ": error: " in line], stderr
