"""LR004 under ``fix``: one typos run checks every text a fix pass changed, with the same
findings as checking each text alone.

The misspellings are built from parts so that this repository's own typos run does not
flag this file.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lint_rules.analysis.typos import find_typos

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import NEAR_MISS, OCCURRED, TAKE_MISS, Lint, needs_typos
else:
    from rule_fixtures import NEAR_MISS, OCCURRED, TAKE_MISS, Lint, needs_typos

ACCEPTED = "rec" + "ieve"  # in one identifier that the project's typos.toml below accepts

pytestmark = needs_typos

SOURCES = {
    "app.py": f"# walk {NEAR_MISS} the path\nx = 1\n",
    "pkg/__init__.py": "",
    "pkg/deep/__init__.py": "",
    "pkg/deep/mail.py": (
        f"def fetch(box):\n    _{TAKE_MISS}d = box.pop()\n    return _{TAKE_MISS}d\n"
    ),
    "pkg/events.py": f"# sent {NEAR_MISS} the wire\nEVENT = 'handoff_{OCCURRED}'\n",
    "tests/test_mail.py": (
        f"def test_{TAKE_MISS}():\n    # {TAKE_MISS} a letter\n    assert 'x_{OCCURRED}'\n"
    ),
    "notes.py": f"# {NEAR_MISS} with {ACCEPTED}_value\n{ACCEPTED}_value = 1\n",
}
TYPOS_TOML = f'[default.extend-identifiers]\n{ACCEPTED}_value = "{ACCEPTED}_value"\n'


def _write(root: Path) -> None:
    (root / "typos.toml").write_text(TYPOS_TOML)
    for name, source in SOURCES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)


def _counting_typos(directory: Path, log: Path) -> Path:
    """A ``typos`` that logs each start and runs the real one; it is found first because
    it lies beside the (pretended) running Python, as ``find_typos`` looks for it."""
    real = find_typos()
    assert real is not None
    directory.mkdir()
    wrapper = directory / "typos"
    wrapper.write_text(f'#!/bin/sh\necho start >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    return directory / "python3"


def _starts(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.skipif(os.name == "nt", reason="the counting wrapper is a shell script")
def test_a_fix_pass_starts_typos_once_for_every_changed_text(
    project: Path, lint: Lint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(project)
    log = tmp_path / "typos-starts.log"
    monkeypatch.setattr(sys, "executable", str(_counting_typos(tmp_path / "bin", log)))

    outcome = lint("fix", "--select", "LR004")

    assert outcome.code in (0, 1), outcome.err
    assert (project / "app.py").read_text() == "# walk along the path\nx = 1\n"
    assert f"_{TAKE_MISS}d" not in (project / "pkg/deep/mail.py").read_text()
    # The batch from disk, then one run for the five texts the first pass changed (the
    # second pass changes nothing): one per text, this was 1 + 5.
    assert _starts(log) == 2


def test_fixing_files_together_finds_what_fixing_each_alone_finds(
    tmp_path: Path, lint: Lint, monkeypatch: pytest.MonkeyPatch
) -> None:
    together, alone = tmp_path / "together", tmp_path / "alone"
    for root in (together, alone):
        root.mkdir()
        (root / "pyproject.toml").write_text("[tool.lint_rules]\n")
        _write(root)
    monkeypatch.chdir(together)
    batched = lint("fix", "--select", "LR004")
    monkeypatch.chdir(alone)
    single = [lint("fix", "--select", "LR004", name) for name in SOURCES]

    assert batched.err == ""
    assert [outcome.err for outcome in single] == [""] * len(SOURCES)
    for name in SOURCES:
        assert (together / name).read_text() == (alone / name).read_text(), name
    findings = sorted(line for line in batched.out.splitlines() if ": LR004 " in line)
    alone_findings = sorted(
        line for outcome in single for line in outcome.out.splitlines() if ": LR004 " in line
    )
    assert findings == alone_findings
    assert len(findings) == 2  # the two string constants: every comment and name is fixed
    assert not any(f"{ACCEPTED}_value" in line for line in findings)
    assert (together / "notes.py").read_text().startswith(f"# along with {ACCEPTED}_value")


@pytest.mark.skipif(os.name == "nt", reason="the counting wrapper is a shell script")
def test_a_parallel_check_starts_typos_once_for_every_file(
    project: Path, lint: Lint, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch begins in the process that forks the workers, for every file, while the
    project-wide state is built: the workers read its findings instead of each starting
    typos on each of its batches (8 starts here before), and find what one process finds."""
    _write(project)
    for number in range(30):
        (project / f"module_{number:02}.py").write_text(f"# {NEAR_MISS} {number}\nx = 1\n")
    serial = lint("check", "--no-cache", "--select", "LR004", "--jobs", "1")
    log = tmp_path / "typos-starts.log"
    monkeypatch.setattr(sys, "executable", str(_counting_typos(tmp_path / "bin", log)))

    parallel = lint("check", "--no-cache", "--select", "LR004", "--jobs", "2")

    assert (parallel.code, parallel.err) == (1, "")
    assert parallel.out == serial.out
    assert parallel.out.count(": LR004 ") == 30 + 9
    assert _starts(log) == 1
