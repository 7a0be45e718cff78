"""mypy's fine-grained daemon (``dmypy``), kept warm for ``lint_rules protocols``.

An ordinary incremental mypy run re-checks every module that imports an edited one; when
the edited class is re-exported by its package's ``__init__``, that is most of the package.
The daemon holds the whole program in memory with fine-grained dependencies: after an
edit it re-checks only the functions and classes that use what changed.

There is one daemon per project and Python environment (mypy checks the code against the
environment's installed packages), found through a status file under
``.lint_rules_cache/protocols/`` and shared by every process that runs ``protocols`` in
that project: the pre-commit hook, a terminal, the language server.

- **Started on demand**, in the background: a run that finds no daemon ready is answered
  by an ordinary incremental mypy run in its own process, then starts the daemon and
  leaves it loading the program (a full check, in a process of its own); runs ask the
  daemon once it has loaded. A lock keeps two runs from starting two daemons.
  (mypy's ``--use-fine-grained-cache`` would start it faster, but a daemon started from
  that cache does not report the errors the cache holds for unchanged files.)
- **Restarted** when mypy's configuration, version or plugins change (the daemon says so
  and is stopped; the run is answered as if none ran).
- **Stopped** by ``lint_rules protocols --stop-daemon``, or by itself after ``idle_timeout``
  seconds without a request.
- **Never in the way.** A daemon that crashed or failed is stopped and the run answered
  without it; one that cannot start is named in a note, and the run has its answer
  already. Not on Windows (no ``fork``): runs there check without it.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_IDLE_TIMEOUT = 1800
"""Seconds without a request after which a daemon stops itself."""

_STOP_WAIT = 5
"""Seconds a daemon has to answer ``stop`` (and then to exit) before it is killed."""

# The daemon's first check loads the whole program: it runs in a process of its own (forked
# into a session of its own, so that the run that started the daemon ends now), which
# marks the daemon ready when the check is done, and stops it when the check failed.
_LOAD = """
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
from mypy.dmypy.client import request
status_file, ready_file, pid, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
response = request(status_file, "check", files=files, export_types=False)
if response.get("status") in (0, 1):
    with open(ready_file, "w") as ready:
        ready.write(pid)
else:
    request(status_file, "stop", timeout=5)
"""


@dataclass(frozen=True)
class MypyOutput:
    """What one mypy run printed, and its exit status (0 clean, 1 errors, 2 blocking)."""

    stdout: str
    stderr: str
    status: int


class Daemon:
    """The daemon of one project (``root``) for this Python environment."""

    def __init__(self, work: Path, root: Path, idle_timeout: int = DEFAULT_IDLE_TIMEOUT) -> None:
        from mypy.version import __version__

        # mypy resolves imports in this environment: another one needs a daemon of its own.
        key = hashlib.blake2b(f"{sys.prefix}\0{__version__}".encode(), digest_size=5).hexdigest()
        self.work = work
        self.root = root
        self.idle_timeout = idle_timeout
        self.status_file = work / f"dmypy-{key}.json"
        self.log_file = work / f"dmypy-{key}.log"
        self.ready_file = work / f"dmypy-{key}.ready"

    def pid(self) -> int | None:
        """The running daemon's process id, or None when none runs."""
        return _running_pid(self.status_file)

    def ready(self) -> bool:
        """Whether a daemon runs and has loaded the program."""
        pid = self.pid()
        try:
            return pid is not None and self.ready_file.read_text(encoding="ascii") == str(pid)
        except OSError:
            return False

    def check(self, flags: Sequence[str], files: Sequence[str]) -> MypyOutput | None:
        """The daemon's check of ``files`` with ``flags``; None when no daemon is ready, or
        when it must restart (changed configuration, mypy or plugins) or failed: it is
        stopped then, and the caller checks without it."""
        if sys.platform == "win32" or not self.ready():
            return None
        from mypy.version import __version__

        response = _request(
            self.status_file,
            "run",
            version=__version__,
            args=[*flags, *files],
            export_types=False,
        )
        if "restart" in response or "error" in response or "status" not in response:
            if "error" in response:
                _log(self.log_file, f"request failed: {response['error']}")
            stop(self.status_file)
            return None
        return MypyOutput(str(response["out"]), str(response["err"]), int(response["status"]))

    def start(self, flags: Sequence[str], files: Sequence[str]) -> str | None:
        """Start the daemon with ``flags`` (unless one runs) and have it load ``files`` in the
        background. Returns why it could not start, or None."""
        if sys.platform == "win32":
            return None
        self.work.mkdir(parents=True, exist_ok=True)
        start = [
            sys.executable,
            "-m",
            "mypy.dmypy",
            "--status-file",
            str(self.status_file),
            "start",
            "--timeout",
            str(self.idle_timeout),
            "--log-file",
            str(self.log_file),
            "--",
            *flags,
        ]
        with file_lock(self.work / "dmypy.lock"):
            if self.pid() is not None:
                return None
            try:
                # dmypy's client forks the daemon and returns once its status file is written.
                done = subprocess.run(
                    start,
                    cwd=self.root,  # the daemon reads mypy_path relative to its directory
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    timeout=120,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as error:
                return str(error)
            pid = self.pid()
            if done.returncode != 0 or pid is None:
                lines = [line for line in (done.stdout + done.stderr).splitlines() if line]
                return lines[-1].strip() if lines else f"dmypy exited {done.returncode}"
            load = [str(self.status_file), str(self.ready_file), str(pid), *files]
            subprocess.run(
                [sys.executable, "-c", _LOAD, *load],
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        return None


def stop_all(work: Path) -> list[int]:
    """Stop every daemon of the project whose work folder is ``work`` (all environments);
    returns the process ids of those that ran."""
    stopped = []
    for status_file in sorted(work.glob("dmypy-*.json")):
        pid = stop(status_file)
        if pid is not None:
            stopped.append(pid)
    return stopped


def stop(status_file: Path) -> int | None:
    """Stop the daemon of ``status_file``: politely, and killed if it does not go within a
    few seconds (it may be busy with another client's check). Returns its process id, or
    None when none ran."""
    status_file.with_suffix(".ready").unlink(missing_ok=True)
    from mypy.dmypy_os import alive, kill

    pid = _running_pid(status_file)
    if pid is None:
        status_file.unlink(missing_ok=True)
        return None
    response = _request(status_file, "stop", timeout=_STOP_WAIT)
    deadline = time.monotonic() + _STOP_WAIT
    while "error" not in response and alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid):
        with suppress(OSError):  # it exited meanwhile
            kill(pid)
    status_file.unlink(missing_ok=True)
    return pid


def _running_pid(status_file: Path) -> int | None:
    from mypy.dmypy.client import get_status
    from mypy.ipc import BadStatus

    try:
        pid, _ = get_status(str(status_file))
    except (BadStatus, OSError):
        return None
    return pid


def _request(status_file: Path, command: str, **arguments: Any) -> dict[str, Any]:
    """One request to the daemon; its answer, or ``{"error": ...}``."""
    from mypy.dmypy.client import request
    from mypy.ipc import BadStatus

    # dmypy's client copies the daemon's own prints to stdout, where our report goes, and
    # asks for colours when stdout is a terminal.
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        try:
            response = request(str(status_file), command, **arguments)
        except (BadStatus, OSError) as error:
            response = {"error": str(error)}
    return response


def _log(log_file: Path, message: str) -> None:
    with suppress(OSError), log_file.open("a", encoding="utf-8") as log:
        log.write(f"lint_rules {time.strftime('%Y-%m-%d %H:%M:%S')}: {message}\n")


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (none where ``fcntl`` is missing: Windows)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
