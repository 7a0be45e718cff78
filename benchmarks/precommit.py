"""Benchmark: what a pre-commit run of ``lint_rules`` costs (issue 13).

Three comparisons, each printed as a markdown table, side by side in one run:

``startup``
    A one-file ``check --no-cache`` of a typical file of this repository (all rules,
    this repository's configuration) and the same ``check`` warm (what pre-commit runs
    on a small commit: the recorded run answers it, ``lint_rules/quick.py``, before the
    command line loads) against a bare ``python -c pass``, ``ruff
    check`` and ``typos`` on the same file, in interleaved rounds (15 by default),
    bytecode written; medians and the median of the per-round ratios. Then ``python -X
    importtime`` of both checks: the modules that cost the most to import.
``protocols``
    ``lint_rules protocols`` on a copy of the Agents SDK's sdist with its Session
    implementations configured: cold (no cache, no daemon), warm (nothing changed) and
    warm after an edit, alternately breaking ``pop_item`` (every run must report exactly
    that class) and restoring it (every run must report nothing), of a leaf
    implementation (``RedisSession``) and of one the package's ``__init__`` re-exports
    (``SQLiteSession``). Each run uses mypy's daemon; the cold run and the first edit of
    each class also run ``protocols --no-daemon`` and plain ``mypy`` on the same files
    with the same settings (each with its own cache).
``server``
    The language server's time from ``textDocument/didChange`` to the
    ``textDocument/publishDiagnostics`` that answers it, on a 1,000-line file of this
    repository (``SERVER_FILE``), beside ``ruff server`` on the same file, in interleaved
    rounds: each round sends the whole text with one line changed.
``tree``
    A cold ``check --no-cache`` of the whole SDK sdist (about 970 files) with all four
    rules configured, against ``ruff check --select ALL --no-cache``, interleaved,
    with the time of each of our phases (discovery, typos, parse, rules, report) from
    the hidden ``--phase-times`` option.

Usage: ``.venv/bin/python benchmarks/precommit.py [--only startup|protocols|tree|server]
[--sdk PATH] [--rounds N]``. Without ``--sdk`` the sdist is fetched with ``pip download
--no-deps --no-binary :all: openai-agents==<installed version>`` into a temporary
directory.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parents[1]
TYPICAL_FILE = "src/agent_sessions/agent.py"
EDITED_FILE = "benchmarks/_precommit_edited.py"
"""A copy of ``TYPICAL_FILE`` whose text changes before each of its runs (the script
creates and removes it): pre-commit after an edit, every other cache warm. Not beside it:
LR002 reads every module of the package that declares its literal's class
(``union_modules``), so an edit there also changes the inputs of the warm row's record."""
NO_CACHE = "`lint_rules check --no-cache`, all rules"
WARM = "`lint_rules check`, warm cache"
EDITED = "`lint_rules check`, one edited file, caches warm"
EDITED_BEFORE = "one edited file, before (`--before`)"
EDITED_SCRIPT = "the same through the `lint-rules` script (what pre-commit runs: no `runpy`)"
PYTHON = sys.executable
RUFF = str(Path(PYTHON).with_name("ruff"))
SCRIPT = str(Path(PYTHON).with_name("lint-rules"))
TYPOS = str(Path(PYTHON).with_name("typos"))
PYCACHE = Path(tempfile.gettempdir()) / "lint_rules-benchmark-pycache"

SDK_LINT_CONFIG = """
[tool.lint_rules.renames]
ensure_dir = "ensure_directory"
get_distribution = "get_dist"

[tool.lint_rules.literals]
"RunItemStreamEvent.name" = "agents.stream_events:RunItemStreamEvent.name"

[tool.lint_rules.protocols]
"agents.memory.session:Session" = ["src/agents/memory/*.py", "src/agents/extensions/memory/*.py"]
"""
EDITS = {
    # A module nothing else in the package imports.
    "leaf": ("src/agents/extensions/memory/redis_session.py", "RedisSession"),
    # `agents/__init__.py` re-exports it: plain incremental mypy re-checks most of the package.
    "re-exported": ("src/agents/memory/sqlite_session.py", "SQLiteSession"),
}
ORIGINAL = "    async def pop_item(self) -> "
BROKEN = "    async def pop_item(self, extra: int) -> "

# Runs `lint_rules` from the directory in argv[1] (an earlier copy of the package).
RUN_FROM = (  # what the `lint-rules` script runs (before issue 27, the same as cli.main)
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from lint_rules.__main__ import main; "
    "raise SystemExit(main(sys.argv[1:]))"
)

_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("startup", "protocols", "tree", "server"), default=None)
    parser.add_argument("--sdk", type=Path, help="the openai-agents sdist (.tar.gz or unpacked)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (startup)")
    parser.add_argument("--tree-rounds", type=int, default=3, help="interleaved rounds (tree)")
    parser.add_argument("--edits", type=int, default=3, help="break/restore pairs (protocols)")
    parser.add_argument("--changes", type=int, default=30, help="didChange rounds (server)")
    parser.add_argument(
        "--before",
        type=Path,
        help="a directory holding an earlier lint_rules package, timed beside this one (startup)",
    )
    arguments = parser.parse_args()
    print(_machine())
    if arguments.only in (None, "startup"):
        startup(arguments.rounds, arguments.before)
    if arguments.only in (None, "server"):
        server(arguments.changes)
    if arguments.only in (None, "protocols", "tree"):
        with tempfile.TemporaryDirectory(prefix="precommit-bench-") as temporary:
            sdk = _sdk_source(arguments.sdk, Path(temporary))
            if arguments.only in (None, "protocols"):
                protocols(_fresh_copy(sdk, Path(temporary) / "protocols"), arguments.edits)
            if arguments.only in (None, "tree"):
                tree(_fresh_copy(sdk, Path(temporary) / "tree"), arguments.tree_rounds)


# --- startup ---------------------------------------------------------------------------


def startup(rounds: int, before: Path | None) -> None:
    check = ["check", "--no-cache", TYPICAL_FILE]
    warm = ["check", TYPICAL_FILE]  # what pre-commit runs on a small commit: the cache answers
    edited = ["check", EDITED_FILE]  # pre-commit after an edit: the record cannot answer
    commands = {
        "`python -c pass`": [PYTHON, "-c", "pass"],
        NO_CACHE: [PYTHON, "-m", "lint_rules", *check],
        WARM: [PYTHON, "-m", "lint_rules", *warm],
        EDITED: [PYTHON, "-m", "lint_rules", *edited],
        EDITED_SCRIPT: [SCRIPT, *edited],
        "`ruff check --no-cache`": [RUFF, "check", "--no-cache", "--quiet", TYPICAL_FILE],
        "`typos`": [TYPOS, "--format", "brief", TYPICAL_FILE],
    }
    if before is not None:
        commands["the same, before (`--before`)"] = [PYTHON, "-c", RUN_FROM, str(before), *check]
        commands["warm cache, before (`--before`)"] = [PYTHON, "-c", RUN_FROM, str(before), *warm]
        commands[EDITED_BEFORE] = [PYTHON, "-c", RUN_FROM, str(before), *edited]
    edited_file = REPOSITORY / EDITED_FILE
    typical = (REPOSITORY / TYPICAL_FILE).read_text(encoding="utf-8")
    edits = iter(range(1_000_000))

    def edit() -> None:
        """A new text for the edited file: one comment line differs from any run's before."""
        edited_file.write_text(f"{typical}# edit {next(edits)}\n", encoding="utf-8")

    edited_labels = (EDITED, EDITED_SCRIPT, EDITED_BEFORE)
    times: dict[str, list[float]] = {label: [] for label in commands}
    edit()
    try:
        for command in commands.values():  # warm the OS's file cache and ours, check each runs
            _wall(command, REPOSITORY)
        load_before = _load()
        labels = list(commands)
        for index in range(rounds):
            order = labels[index % len(labels) :] + labels[: index % len(labels)]
            for label in order:
                if label in edited_labels:
                    edit()
                times[label].append(_wall(commands[label], REPOSITORY))
        load_after = _load()
        profiles: list[tuple[str, list[str], Callable[[], None] | None]] = [
            ("now, warm (the record answers)", commands[WARM], None)
        ]
        profiles.append(("now, one edited file", commands[EDITED], edit))
        profiles.append(("now, `--no-cache`", commands[NO_CACHE], None))
        if before is not None:
            profiles.append(
                ("before, warm cache", commands["warm cache, before (`--before`)"], None)
            )
            profiles.append(("before, one edited file", commands[EDITED_BEFORE], edit))
        printed = []
        for label, command, prepare in profiles:
            printed.append((label, import_profile(command, prepare=prepare)))
    finally:
        edited_file.unlink(missing_ok=True)
    bare = times["`python -c pass`"]
    print(
        f"\n### Start-up: one-file check of `{TYPICAL_FILE}` "
        f"({rounds} interleaved rounds; load average {load_before} before, {load_after} after)\n"
    )
    print(
        f"{EDITED}: `check` of a copy of the file (`{EDITED_FILE}`) whose text changed before each"
        " run (one comment line), the configuration's, the declarations' and the other"
        " files' caches warm.\n"
    )
    print("| command | median ms | min ms | max ms | median / `python -c pass` |")
    print("|---|---:|---:|---:|---:|")
    base = statistics.median(bare)
    for label, values in times.items():
        median = statistics.median(values)
        print(
            f"| {label} | {median * 1000:.0f} | {min(values) * 1000:.0f} "
            f"| {max(values) * 1000:.0f} | {median / base:.2f}x |"
        )
    ruff = statistics.median(times["`ruff check --no-cache`"])
    targets = {NO_CACHE: 6, WARM: 2, EDITED: 6, EDITED_SCRIPT: 6}
    for label, target in targets.items():
        ours = times[label]
        per_round = statistics.median(o / b for o, b in zip(ours, bare, strict=True))
        print(
            f"\n- {label} / python -c pass (target <= {target}): "
            f"**{statistics.median(ours) / base:.2f}x** of the medians, {per_round:.2f}x "
            f"median of the per-round ratios; {statistics.median(ours) / ruff:.2f}x ruff"
        )
    for label, text in printed:
        print(f"\n#### Import-time profile, {label}\n")
        print(text)


def import_profile(
    command: list[str], top: int = 12, prepare: Callable[[], None] | None = None
) -> str:
    """The slowest imports of ``command`` (``-X importtime``; median of 5 runs), as
    markdown; ``prepare`` runs before each run."""
    runs: list[dict[str, tuple[int, int, int]]] = []
    for _ in range(5):
        if prepare is not None:
            prepare()
        done = subprocess.run(
            [command[0], "-X", "importtime", *command[1:]],
            cwd=REPOSITORY,
            capture_output=True,
            text=True,
            check=False,
            env=_environment(),
        )
        modules: dict[str, tuple[int, int, int]] = {}
        for line in done.stderr.splitlines():
            match = _IMPORT_LINE.match(line)
            if match is not None:
                depth = len(match[3]) // 2
                modules[match[4]] = (int(match[1]), int(match[2]), depth)
        runs.append(modules)
    total = statistics.median(sum(own for own, _, _ in run.values()) for run in runs)
    names = set(runs[0])
    lines = [
        f"`-X importtime`, median of 5: {total / 1000:.0f} ms of imports, {len(names)} modules."
        " Slowest top-level imports (cumulative):\n",
        "| module | cumulative ms |",
        "|---|---:|",
    ]
    top_level = {
        name
        for name in names
        if runs[0][name][2] == 0 or (runs[0][name][2] == 1 and name.startswith("lint_rules"))
    }
    cumulative = {
        name: statistics.median(run.get(name, (0, 0, 0))[1] for run in runs) for name in top_level
    }
    for name, micros in sorted(cumulative.items(), key=lambda item: -item[1])[:top]:
        lines.append(f"| `{name}` | {micros / 1000:.1f} |")
    watched = (
        "argparse",
        "tomllib",
        "libcst",
        "typos",
        "multiprocessing",
        "concurrent",
        "subprocess",
        "importlib.metadata",
    )
    heavy = [name for name in watched if name in names]
    lines.append(f"\nHeavy packages imported: {', '.join(heavy) if heavy else 'none'}")
    return "\n".join(lines)


# --- protocols -------------------------------------------------------------------------


def protocols(project: Path, edits: int) -> None:
    """Cold, then warm after edits to a leaf implementation and to one the package's
    ``__init__`` re-exports: with mypy's daemon (the default), without it
    (``--no-daemon``), and plain mypy on the same files."""
    implementations = _implementation_files(project)
    plain_cache = project / ".plain_mypy_cache"
    plain = [
        PYTHON,
        "-m",
        "mypy",
        "--config-file",
        "pyproject.toml",
        "--cache-dir",
        str(plain_cache),
        "--no-error-summary",
        *implementations,
    ]
    ours = [PYTHON, "-m", "lint_rules", "protocols", "--format", "json", "--daemon"]
    rows: list[tuple[str, float | None, float | None, float, str]] = []
    load_before = _load()

    def run(
        label: str, expect: str | None, *, plain_too: bool = False, alone_too: bool = False
    ) -> float:
        """One row: plain mypy (its own cache) and `--no-daemon` when asked, then the run
        with the daemon; the daemon run's seconds. (`--no-daemon` shares the cache of the
        run that starts the daemon, so the cold row does not run it: that run is the cold
        `--no-daemon` run.)"""
        mypy_seconds = _wall(plain, project) if plain_too else None
        alone = None
        if alone_too:
            alone = _protocols(
                [*ours[:-1], "--no-daemon"], project, label + " (--no-daemon)", expect
            )[0]
        seconds, reported = _protocols(ours, project, label, expect)
        rows.append((label, mypy_seconds, alone, seconds, ", ".join(reported) or "none"))
        return seconds

    stop_daemon = [PYTHON, "-m", "lint_rules", "protocols", "--stop-daemon"]
    try:
        cold = run("cold (no cache, no daemon)", None, plain_too=True)
        start = time.perf_counter()
        pid = _wait_for_daemon(project)
        ready = time.perf_counter() - start
        run("warm, nothing changed", None)
        ratios: dict[str, list[float]] = {}
        for kind, (path, class_name) in EDITS.items():
            edited = project / path
            original = edited.read_text(encoding="utf-8")
            assert ORIGINAL in original, f"{path} no longer declares pop_item as expected"
            for round_number in range(1, edits + 1):
                edited.write_text(original.replace(ORIGINAL, BROKEN, 1), encoding="utf-8")
                label = f"{kind}: after breaking `{class_name}` (edit {round_number})"
                first = round_number == 1
                ratios.setdefault(kind, []).append(
                    run(label, class_name, plain_too=first, alone_too=first)
                )
                edited.write_text(original, encoding="utf-8")
                run(f"{kind}: after restoring it (edit {round_number})", None)
        memory = _resident_mib(pid)
    finally:
        subprocess.run(stop_daemon, cwd=project, capture_output=True, check=False)
    print(
        f"\n### `protocols` on openai-agents {_sdk_version(project)}: {len(implementations)} "
        f"implementation files (load average {load_before} before, {_load()} after)\n"
    )
    print("| run | plain mypy s | `protocols --no-daemon` s | `protocols` (daemon) s | reported |")
    print("|---|---:|---:|---:|---|")
    for label, mypy_seconds, alone, seconds, reported in rows:
        shown = [f"{value:.1f}" if value is not None else "" for value in (mypy_seconds, alone)]
        print(f"| {label} | {shown[0]} | {shown[1]} | {seconds:.1f} | {reported} |")
    print(
        f"\n- the daemon was ready {ready:.1f} s after the cold run ended (it loads the program"
        f" in the background); resident memory after the edits: {memory} MiB"
    )
    for kind, values in ratios.items():
        warm = statistics.median(values)
        print(
            f"- {kind}: warm after an edit / cold (target <= 0.25): **{warm / cold:.3f}x**"
            f" ({warm:.1f} s median of {len(values)} against {cold:.1f} s)"
        )


def _protocols(
    command: list[str], project: Path, label: str, expect: str | None
) -> tuple[float, list[str]]:
    start = time.perf_counter()
    done = subprocess.run(
        command, cwd=project, capture_output=True, text=True, check=False, env=_environment()
    )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"lint_rules protocols failed: {done.stderr.strip()}")
    reported = [str(item["message"]).split("`")[1] for item in json.loads(done.stdout)]
    # A class that subclasses one of the protocol's ABCs is reported by its probe and by
    # mypy's [override] at the member (`RedisSession.pop_item`), and a subclass of the
    # edited class by its own [override] (`AdvancedSQLiteSession.pop_item`, which now
    # differs from the broken base): the edited class must be among them.
    named = {name.partition(".")[0] for name in reported}
    if (expect is None and named) or (expect is not None and expect not in named):
        raise SystemExit(f"{label}: expected {expect!r} to be reported, got {reported}")
    return seconds, reported


def _wait_for_daemon(project: Path, seconds: float = 3600) -> int:
    """Wait until the daemon the cold run started has loaded the program; its pid."""
    code = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from lint_rules.mypy_daemon import Daemon\n"
        "from lint_rules.protocols import WORK_DIRECTORY\n"
        "daemon = Daemon(Path.cwd() / WORK_DIRECTORY, Path.cwd())\n"
        f"deadline = time.monotonic() + {seconds}\n"
        "while not daemon.ready() and time.monotonic() < deadline:\n"
        "    time.sleep(0.2)\n"
        "print(daemon.pid() if daemon.ready() else '')\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    if not done.stdout.strip():
        raise SystemExit("the daemon did not become ready")
    return int(done.stdout)


def _resident_mib(pid: int) -> str:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return str(int(line.split()[1]) // 1024)
    except OSError:
        pass
    return "?"


def _implementation_files(project: Path) -> list[str]:
    """The files with an implementation, as ``protocols`` finds them."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from lint_rules.config import load_config\n"
        "from lint_rules.analysis.conformance import configured_targets\n"
        "from lint_rules.engine.discovery import discover\n"
        "from lint_rules.protocols import implementations_in\n"
        "from lint_rules.rules import ALL_RULES\n"
        "config = load_config(Path.cwd(), ALL_RULES)\n"
        "targets = configured_targets(config.rule_options)\n"
        "files = discover([config.root], config.root, config.exclude)\n"
        "print(json.dumps(sorted({str(i.path.relative_to(config.root))\n"
        "    for p in files for i in implementations_in(p, config.root, targets)})))\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", code], cwd=project, capture_output=True, text=True, check=True
    )
    files: list[str] = json.loads(done.stdout)
    return files


# --- server ----------------------------------------------------------------------------

SERVER_FILE = "src/agent_sessions/testing.py"


def server(rounds: int) -> None:
    path = REPOSITORY / SERVER_FILE
    text = path.read_text(encoding="utf-8")
    servers = {
        "`lint-rules server`": [PYTHON, "-m", "lint_rules", "server"],
        "`ruff server`": [RUFF, "server"],
    }
    clients = {label: _LspClient(command, REPOSITORY) for label, command in servers.items()}
    times: dict[str, list[float]] = {label: [] for label in servers}
    load_before = _load()
    cpu: dict[str, float] = {}
    try:
        for client in clients.values():
            client.open(path, text)
        before = {label: client.cpu_seconds() for label, client in clients.items()}
        for index in range(rounds):
            # A changed last line: the file is checked again, nothing else differs.
            changed = f"{text}# edit {index}\n"
            labels = list(clients) if index % 2 == 0 else list(reversed(clients))
            for label in labels:
                times[label].append(clients[label].change(path, changed, index + 2))
        cpu = {label: client.cpu_seconds() - before[label] for label, client in clients.items()}
    finally:
        for client in clients.values():
            client.close()
    lines = text.count("\n") + 1
    print(
        f"\n### Language server: didChange to publishDiagnostics, `{SERVER_FILE}` ({lines} "
        f"lines; {rounds} interleaved rounds; load average {load_before} before, "
        f"{_load()} after)\n"
    )
    print("| server | median ms | min ms | max ms | server CPU ms per change | diagnostics |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, values in times.items():
        print(
            f"| {label} | {statistics.median(values) * 1000:.1f} | {min(values) * 1000:.1f} "
            f"| {max(values) * 1000:.1f} | {cpu[label] / rounds * 1000:.1f} "
            f"| {clients[label].last_count} |"
        )
    ours, ruff = (statistics.median(values) for values in times.values())
    print(
        f"\n- lint-rules server (target < 100 ms): **{ours * 1000:.1f} ms** median;"
        f" {ours / ruff:.1f}x ruff server"
    )


class _LspClient:
    """Just enough of an LSP client to time diagnostics: JSON-RPC over the server's pipes."""

    def __init__(self, command: list[str], root: Path) -> None:
        self.process = subprocess.Popen(
            command,
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_environment(),
        )
        self.next_id = 0
        self.last_count = 0
        root_uri = root.as_uri()
        capabilities = {"textDocument": {"publishDiagnostics": {"versionSupport": True}}}
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root_uri,
                "capabilities": capabilities,
                "initializationOptions": {"protocols": False},
            },
        )
        self.notify("initialized", {})

    def cpu_seconds(self) -> float:
        """The CPU time the server process has used (user and system; Linux)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def open(self, path: Path, text: str) -> None:
        item = {"uri": path.as_uri(), "languageId": "python", "version": 1, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})
        self.wait_for_diagnostics(path.as_uri())

    def change(self, path: Path, text: str, version: int) -> float:
        """Seconds from sending the change to the diagnostics of ``path``."""
        start = time.perf_counter()
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": path.as_uri(), "version": version},
                "contentChanges": [{"text": text}],
            },
        )
        self.wait_for_diagnostics(path.as_uri())
        return time.perf_counter() - start

    def wait_for_diagnostics(self, uri: str) -> None:
        while True:
            message = self.read()
            if message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                if params["uri"] == uri:
                    self.last_count = len(params["diagnostics"])
                    return
            elif "method" in message and "id" in message:  # a request of the server's
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def request(self, method: str, params: object) -> object:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.read()
            if message.get("id") == self.next_id and "method" not in message:
                return message.get("result")

    def notify(self, method: str, params: object) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, message: object) -> None:
        assert self.process.stdin is not None
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit("the language server exited")
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        message: dict[str, Any] = json.loads(self.process.stdout.read(length))
        return message

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired, SystemExit):
            self.process.kill()
            self.process.wait()


# --- tree ------------------------------------------------------------------------------


def tree(project: Path, rounds: int) -> None:
    files = sum(1 for _ in project.rglob("*.py"))
    phases_file = project.parent / "phases.json"
    ours = [
        PYTHON,
        "-m",
        "lint_rules",
        "check",
        "--no-cache",
        "--exit-zero",
        "--statistics",
        "--phase-times",
        str(phases_file),
        ".",
    ]
    ruff = [RUFF, "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet", "."]
    _wall(ours, project)  # the OS's file cache, and a check that the options work
    times: dict[str, list[float]] = {"ours": [], "ruff": []}
    phases: list[dict[str, float]] = []
    load_before = _load()
    for index in range(rounds):
        for name in ("ours", "ruff") if index % 2 == 0 else ("ruff", "ours"):
            times[name].append(_wall(ours if name == "ours" else ruff, project))
            if name == "ours":
                phases.append(json.loads(phases_file.read_text()))
    print(
        f"\n### Whole tree: openai-agents {_sdk_version(project)} sdist, {files} Python files "
        f"({rounds} interleaved rounds; load average {load_before} before, {_load()} after)\n"
    )
    print("| command | median s | min s | max s |")
    print("|---|---:|---:|---:|")
    labels = {
        "ours": "`lint_rules check --no-cache`, LR001-LR004 configured",
        "ruff": "`ruff check --select ALL --no-cache`",
    }
    for name, values in times.items():
        print(
            f"| {labels[name]} | {statistics.median(values):.2f} | {min(values):.2f} "
            f"| {max(values):.2f} |"
        )
    ratio = statistics.median(times["ours"]) / statistics.median(times["ruff"])
    print(f"\n- lint_rules / ruff (target <= 2): **{ratio:.2f}x**\n")
    print(
        "Where our time goes (median of the rounds; seconds spent in each phase, summed over"
        " the worker processes, so they add up to more than the wall time):\n"
    )
    print("| phase | s |")
    print("|---|---:|")
    for phase in phases[0]:
        print(f"| {phase} | {statistics.median(run[phase] for run in phases):.3f} |")


# --- helpers ---------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    """Python as a user runs it: bytecode cached (in a folder of ours, not the repository),
    even where this shell sets ``PYTHONDONTWRITEBYTECODE``."""
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    environment["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return environment


def _wall(command: Sequence[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, check=False, env=_environment())
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()}")
    return seconds


def _sdk_source(given: Path | None, temporary: Path) -> Path:
    """An unpacked openai-agents sdist."""
    if given is None:
        version = importlib.metadata.version("openai-agents")
        download = [PYTHON, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*download, f"openai-agents=={version}", "-d", str(temporary)], check=True)
        (given,) = temporary.glob("openai_agents-*.tar.gz")
    if given.is_dir():
        return given
    with tarfile.open(given) as archive:
        archive.extractall(temporary / "unpacked", filter="data")
    (unpacked,) = (temporary / "unpacked").iterdir()
    return unpacked


def _fresh_copy(sdk: Path, target: Path) -> Path:
    """A copy of the sdist without caches, with all four rules configured."""
    ignored: Callable[[str, list[str]], set[str]] = shutil.ignore_patterns(
        ".mypy_cache", ".lint_rules_cache", ".ruff_cache", "__pycache__"
    )
    shutil.copytree(sdk, target, ignore=ignored)
    pyproject = target / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    if "[tool.lint_rules" not in text:
        pyproject.write_text(text + SDK_LINT_CONFIG, encoding="utf-8")
    return target


def _sdk_version(project: Path) -> str:
    match = re.search(r'^version = "([^"]+)"', (project / "pyproject.toml").read_text(), re.M)
    return match[1] if match else "?"


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {cpu}; {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}; {platform.system()} {platform.release()}"
    )


if __name__ == "__main__":
    main()
