"""Benchmark: what a pre-commit run of ``lint_rules`` costs (issue 13).

Three comparisons, each printed as a markdown table, side by side in one run:

``startup``
    A one-file ``check --no-cache`` of a typical file of this repository (all rules,
    this repository's configuration) against a bare ``python -c pass`` and ``ruff
    check`` on the same file, in interleaved rounds (15 by default); medians and the
    median of the per-round ratios. Then ``python -X importtime`` of the same check:
    the modules that cost the most to import.
``protocols``
    ``lint_rules protocols`` on a copy of the Agents SDK's sdist with its Session
    implementations configured, against plain ``mypy`` on the same implementation
    files with the same settings and its own cache: cold (no cache), warm (nothing
    changed) and warm after an edit to one implementation, alternately breaking
    ``RedisSession.pop_item`` (every run must report exactly that class) and
    restoring it (every run must report nothing).
``tree``
    A cold ``check --no-cache`` of the whole SDK sdist (about 970 files) with all four
    rules configured, against ``ruff check --select ALL --no-cache``, interleaved,
    with the time of each of our phases (discovery, typos, parse, rules, report) from
    the hidden ``--phase-times`` option.

Usage: ``.venv/bin/python benchmarks/precommit.py [--only startup|protocols|tree]
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

REPOSITORY = Path(__file__).resolve().parents[1]
TYPICAL_FILE = "src/agent_sessions/agent.py"
PYTHON = sys.executable
RUFF = str(Path(PYTHON).with_name("ruff"))
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
EDITED_FILE = "src/agents/extensions/memory/redis_session.py"
EDITED_CLASS = "RedisSession"
ORIGINAL = "    async def pop_item(self) -> "
BROKEN = "    async def pop_item(self, extra: int) -> "

# Runs `lint_rules` from the directory in argv[1] (an earlier copy of the package).
RUN_FROM = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); from lint_rules.cli import main; "
    "raise SystemExit(main(sys.argv[1:]))"
)

_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("startup", "protocols", "tree"), default=None)
    parser.add_argument("--sdk", type=Path, help="the openai-agents sdist (.tar.gz or unpacked)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (startup)")
    parser.add_argument("--tree-rounds", type=int, default=3, help="interleaved rounds (tree)")
    parser.add_argument("--edits", type=int, default=3, help="break/restore pairs (protocols)")
    parser.add_argument(
        "--before",
        type=Path,
        help="a directory holding an earlier lint_rules package, timed beside this one (startup)",
    )
    arguments = parser.parse_args()
    print(_machine())
    if arguments.only in (None, "startup"):
        startup(arguments.rounds, arguments.before)
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
    commands = {
        "`python -c pass`": [PYTHON, "-c", "pass"],
        "`lint_rules check --no-cache`, all rules": [PYTHON, "-m", "lint_rules", *check],
        "`ruff check --no-cache`": [RUFF, "check", "--no-cache", "--quiet", TYPICAL_FILE],
    }
    if before is not None:
        commands["the same, before (`--before`)"] = [PYTHON, "-c", RUN_FROM, str(before), *check]
    for command in commands.values():  # warm the OS's file cache, check that each runs
        _wall(command, REPOSITORY)
    times: dict[str, list[float]] = {label: [] for label in commands}
    load_before = _load()
    labels = list(commands)
    for index in range(rounds):
        order = labels[index % len(labels) :] + labels[: index % len(labels)]
        for label in order:
            times[label].append(_wall(commands[label], REPOSITORY))
    bare, ours, ruff = (times[label] for label in labels[:3])
    print(
        f"\n### Start-up: one-file check of `{TYPICAL_FILE}` "
        f"({rounds} interleaved rounds; load average {load_before} before, {_load()} after)\n"
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
    per_round = statistics.median(o / b for o, b in zip(ours, bare, strict=True))
    print(
        f"\n- lint_rules / python -c pass (target <= 6): **{statistics.median(ours) / base:.2f}x**"
        f" of the medians, {per_round:.2f}x median of the per-round ratios"
    )
    print(f"- lint_rules / ruff: {statistics.median(ours) / statistics.median(ruff):.2f}x")
    print("\n#### Import-time profile, now\n")
    import_profile(commands["`lint_rules check --no-cache`, all rules"])
    if before is not None:
        print("\n#### Import-time profile, before\n")
        import_profile(commands["the same, before (`--before`)"])


def import_profile(command: list[str], top: int = 12) -> None:
    """The slowest imports of ``command`` (``-X importtime``; median of 5 runs)."""
    runs: list[dict[str, tuple[int, int, int]]] = []
    for _ in range(5):
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
    print(
        f"`-X importtime`, median of 5: {total / 1000:.0f} ms of imports, {len(names)} modules."
        " Slowest top-level imports (cumulative):\n"
    )
    print("| module | cumulative ms |")
    print("|---|---:|")
    top_level = {
        name
        for name in names
        if runs[0][name][2] == 0 or (runs[0][name][2] == 1 and name.startswith("lint_rules"))
    }
    cumulative = {
        name: statistics.median(run.get(name, (0, 0, 0))[1] for run in runs) for name in top_level
    }
    for name, micros in sorted(cumulative.items(), key=lambda item: -item[1])[:top]:
        print(f"| `{name}` | {micros / 1000:.1f} |")
    heavy = [name for name in ("libcst", "typos", "multiprocessing", "concurrent") if name in names]
    print(f"\nHeavy packages imported: {', '.join(heavy) if heavy else 'none'}")


# --- protocols -------------------------------------------------------------------------


def protocols(project: Path, edits: int) -> None:
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
    ours = [PYTHON, "-m", "lint_rules", "protocols", "--format", "json"]
    rows: list[tuple[str, float, float, str]] = []
    load_before = _load()

    def both(label: str, expect: str | None) -> tuple[float, float]:
        mypy_seconds = _wall(plain, project)
        start = time.perf_counter()
        done = subprocess.run(
            ours, cwd=project, capture_output=True, text=True, check=False, env=_environment()
        )
        seconds = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise SystemExit(f"lint_rules protocols failed: {done.stderr.strip()}")
        reported = [str(item["message"]).split("`")[1] for item in json.loads(done.stdout)]
        if reported != ([] if expect is None else [expect]):
            raise SystemExit(f"{label}: expected {expect!r} to be reported, got {reported}")
        rows.append((label, mypy_seconds, seconds, ", ".join(reported) or "none"))
        return mypy_seconds, seconds

    cold = both("cold (no cache)", None)
    both("warm, nothing changed", None)
    edited = project / EDITED_FILE
    original = edited.read_text(encoding="utf-8")
    assert ORIGINAL in original, f"{EDITED_FILE} no longer declares pop_item as expected"
    broken_runs = []
    for round_number in range(1, edits + 1):
        edited.write_text(original.replace(ORIGINAL, BROKEN, 1), encoding="utf-8")
        broken_runs.append(both(f"warm, after breaking it (edit {round_number})", EDITED_CLASS))
        edited.write_text(original, encoding="utf-8")
        both(f"warm, after restoring it (edit {round_number})", None)
    print(
        f"\n### `protocols` on openai-agents {_sdk_version(project)}: {len(implementations)} "
        f"implementation files (load average {load_before} before, {_load()} after)\n"
    )
    print("| run | plain mypy s | lint_rules protocols s | reported |")
    print("|---|---:|---:|---|")
    for label, mypy_seconds, seconds, reported in rows:
        print(f"| {label} | {mypy_seconds:.1f} | {seconds:.1f} | {reported} |")
    warm = statistics.median(seconds for _, seconds in broken_runs)
    warm_mypy = statistics.median(seconds for seconds, _ in broken_runs)
    print(
        f"\n- protocols warm after one edit / cold (target <= 0.25): **{warm / cold[1]:.3f}x**"
        f" ({warm:.1f} s median against {cold[1]:.1f} s)"
    )
    print(f"- plain mypy, the same: {warm_mypy / cold[0]:.3f}x")
    print(f"- protocols / plain mypy: cold {cold[1] / cold[0]:.2f}x, warm {warm / warm_mypy:.2f}x")


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
