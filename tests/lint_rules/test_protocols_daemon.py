"""``lint_rules protocols`` with mypy's daemon: started on demand, asked after an edit
(also of a class the package re-exports), restarted when mypy's configuration changes,
replaced when killed, stopped on request or when idle; every test stops what it started."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import pytest

from lint_rules import protocols
from lint_rules.cli import main
from lint_rules.mypy_daemon import Daemon, stop_all
from lint_rules.rules import ALL_RULES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="the daemon needs fork"),
]

PROTOCOL = """
    from typing import Protocol

    class Store(Protocol):
        async def get_items(self, limit: int | None = None) -> list[str]: ...
        async def pop_item(self) -> str | None: ...
"""
IMPLEMENTATION = """
    class {name}:
        async def get_items(self, limit: int | None = None) -> list[str]:
            return []

        async def pop_item(self) -> str | None:
            return None
"""
POP = "async def pop_item(self) -> str | None:"
BROKEN_POP = "async def pop_item(self, extra: int) -> str | None:"
MYPY = '[tool.mypy]\nstrict = true\nmypy_path = "src"\n'
LINT = '\n[tool.lint_rules.protocols]\n"shop.contract:Store" = ["src/shop/"]\n'
READY_WITHIN = 180.0
PASSED = "Checked 2 implementations of 1 protocol.\nAll checks passed!\n"


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A package whose ``__init__`` re-exports its two implementations, as the Agents SDK
    re-exports ``SQLiteSession``; its daemons are stopped afterwards."""
    root = tmp_path / "shop-project"
    package = root / "src" / "shop"
    package.mkdir(parents=True)
    (root / "pyproject.toml").write_text(MYPY + LINT)
    (package / "contract.py").write_text(textwrap.dedent(PROTOCOL))
    (package / "memory.py").write_text(textwrap.dedent(IMPLEMENTATION.format(name="Memory")))
    (package / "disk.py").write_text(textwrap.dedent(IMPLEMENTATION.format(name="Disk")))
    (package / "__init__.py").write_text(
        "from shop.disk import Disk as Disk\nfrom shop.memory import Memory as Memory\n"
    )
    (package / "users.py").write_text(
        "from shop import Memory\n\n\nasync def newest() -> str | None:\n"
        "    return await Memory().pop_item()\n"
    )
    yield root
    work = _work(root)
    pids = _daemon_processes(root)
    stop_all(work)
    for pid in pids:
        _wait_until(_exited(pid), 30, f"daemon {pid} to exit")


def _run(root: Path, *arguments: str) -> Run:
    out, err = StringIO(), StringIO()
    previous = os.getcwd()
    os.chdir(root)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["protocols", *arguments], ALL_RULES)
    finally:
        os.chdir(previous)
    return Run(code, out.getvalue(), err.getvalue())


def _work(root: Path) -> Path:
    return root / protocols.WORK_DIRECTORY


def _daemon(root: Path) -> Daemon:
    return Daemon(_work(root), root)


def _wait_ready(root: Path) -> int:
    daemon = _daemon(root)
    _wait_until(daemon.ready, READY_WITHIN, "the daemon to load the program")
    pid = daemon.pid()
    assert pid is not None
    return pid


def _wait_until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds:.0f} s for {what}"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _exited(pid: int) -> Callable[[], bool]:
    return lambda: not _alive(pid)


def _daemon_processes(root: Path) -> list[int]:
    """Every running ``dmypy start`` (the daemon keeps its command line) of this project."""
    found = []
    marker = str(_work(root)).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mypy.dmypy" in arguments and b"start" in arguments and marker in b" ".join(arguments):
            found.append(int(entry.name))
    return found


def _edit(root: Path, name: str, old: str, new: str) -> None:
    path = root / "src" / "shop" / name
    path.write_text(path.read_text().replace(old, new, 1))


def test_first_run_answers_at_once_and_leaves_the_daemon_loading(project: Path) -> None:
    run = _run(project, "--daemon")

    assert run == Run(0, PASSED, "")
    pid = _wait_ready(project)
    assert _daemon_processes(project) == [pid]


def test_edit_to_a_re_exported_class_is_answered_by_the_daemon(project: Path) -> None:
    assert _run(project, "--daemon").code == 0
    _wait_ready(project)
    # Only an in-process run writes mypy's cache: the daemon answers without it.
    shutil.rmtree(_work(project) / "mypy")

    _edit(project, "memory.py", POP, BROKEN_POP)
    broken = _run(project, "--daemon")
    _edit(project, "memory.py", BROKEN_POP, POP)
    restored = _run(project, "--daemon")

    assert broken.code == 1, broken.err
    assert broken.out.startswith("src/shop/memory.py:2:1: LR100 `Memory` is not a `shop.contract")
    assert "def pop_item(self, extra: int)" in broken.out
    assert restored == Run(0, PASSED, "")
    assert not (_work(project) / "mypy").exists(), "mypy did not run in this process"


def test_daemon_reports_what_mypy_reports_of_each_file(project: Path) -> None:
    _edit(project, "disk.py", POP, BROKEN_POP)
    without = _run(project, "--no-daemon", "--format", "json")
    _run(project, "--daemon")
    _wait_ready(project)
    _edit(project, "memory.py", "list[str]:", "list[bytes]:")

    with_daemon = _run(project, "--daemon", "--format", "json")
    expected = _run(project, "--no-daemon", "--format", "json")

    assert "Disk" in without.out
    assert with_daemon.code == expected.code == 1
    assert with_daemon.out == expected.out
    assert "Disk" in expected.out
    assert "Memory" in expected.out


def test_stop_daemon_stops_it_and_says_so(project: Path) -> None:
    _run(project, "--daemon")
    pid = _wait_ready(project)

    stopped = _run(project, "--stop-daemon")
    again = _run(project, "--stop-daemon")

    assert stopped == Run(0, "", f"lint-rules: stopped mypy's daemon: {pid}\n")
    assert not _alive(pid)
    assert not _daemon(project).status_file.exists()
    assert again == Run(0, "", "lint-rules: stopped mypy's daemon: none was running\n")


def test_idle_daemon_stops_itself(project: Path) -> None:
    _run(project, "--daemon", "--daemon-timeout", "2")
    pid = _wait_ready(project)

    _wait_until(_exited(pid), 60, "the idle daemon to exit")
    assert _daemon(project).pid() is None


def test_changed_mypy_configuration_restarts_the_daemon(project: Path) -> None:
    # Without strict optional types, `int` accepts None: the narrowed parameter conforms.
    _edit(project, "memory.py", "limit: int | None = None", "limit: int = 0")
    assert _run(project, "--daemon").code == 1
    first = _wait_ready(project)

    (project / "pyproject.toml").write_text(MYPY + "strict_optional = false\n" + LINT)
    run = _run(project, "--daemon")

    assert run == Run(0, PASSED, "")
    assert not _alive(first)
    assert _wait_ready(project) != first


def test_killed_daemon_is_replaced(project: Path) -> None:
    _run(project, "--daemon")
    first = _wait_ready(project)
    os.kill(first, signal.SIGKILL)
    _wait_until(_exited(first), 30, "the killed daemon to exit")

    _edit(project, "disk.py", POP, BROKEN_POP)
    run = _run(project, "--daemon")

    assert run.code == 1
    assert "`Disk` is not a `shop.contract.Store`" in run.out
    assert _wait_ready(project) != first


def test_daemon_that_cannot_start_is_named_and_the_run_still_answers(project: Path) -> None:
    (project / "pyproject.toml").write_text(MYPY + 'follow_imports = "silent"\n' + LINT)
    _edit(project, "disk.py", POP, BROKEN_POP)

    run = _run(project, "--daemon")

    assert run.code == 1
    assert "`Disk` is not a `shop.contract.Store`" in run.out
    assert "lint-rules: note: mypy's daemon could not start (" in run.err
    assert "follow-imports=silent not supported" in run.err
    assert _daemon_processes(project) == []


def test_no_daemon_starts_none(project: Path) -> None:
    assert _run(project, "--no-daemon").code == 0
    assert _daemon_processes(project) == []
    assert not _daemon(project).status_file.exists()


@pytest.mark.parametrize(("ci", "started"), [("true", False), ("", True)])
def test_daemon_is_the_default_outside_ci(
    project: Path, monkeypatch: pytest.MonkeyPatch, ci: str, started: bool
) -> None:
    monkeypatch.setenv("CI", ci)

    assert _run(project).code == 0

    assert (_daemon(project).pid() is not None) is started


def test_two_runs_at_once_start_one_daemon(project: Path) -> None:
    command = [sys.executable, "-m", "lint_rules", "protocols", "--daemon"]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    runs = [
        subprocess.Popen(command, cwd=project, env=environment, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]

    assert outputs == [PASSED.encode()] * 2
    assert [run.returncode for run in runs] == [0, 0]
    pid = _wait_ready(project)
    assert _daemon_processes(project) == [pid]


def test_long_run_says_so_on_stderr(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocols, "PROGRESS_AFTER", 0.01)

    run = _run(project, "--no-daemon")

    assert run.code == 0
    assert "lint-rules: protocols: mypy is checking the implementations (" in run.err


def test_daemon_timeout_must_be_positive(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["protocols", "--daemon-timeout", "0"], ALL_RULES)

    assert exit_info.value.code == 2
    assert "must be at least 1 second, not 0" in capsys.readouterr().err
