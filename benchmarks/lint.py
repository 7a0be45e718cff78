"""Benchmark: ``lint_rules check`` against Fixit 2.2.1, ruff and parsing alone.

Corpora, copied to a temporary directory: the source of pip (installed from
PyPI in this venv) and the running Python's standard library without its test
suites (``test``/``tests`` directories), ``idlelib`` and ``site-packages``.
LR001 is configured with two renames that occur in a few percent of the files
(as renames do in a real repository); Fixit gets an equivalent one-rule setup.
Fixit is installed in its own venv under ``benchmarks/.cache/`` (it pins
``click<8.2``, so it stays out of this project's extras).

Usage: ``.venv/bin/python benchmarks/lint.py [--corpus pip|stdlib|all] [--skip-fixit]``.
Prints one markdown table per corpus (seconds, files/s, peak RSS of the
largest process of the run) and the ratios the project targets.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pip

CACHE_DIRECTORY = Path(__file__).resolve().parent / ".cache"
FIXIT_VENV = CACHE_DIRECTORY / "fixit-venv"
FIXIT_VERSION = "2.2.1"
RENAMES = {"ensure_dir": "ensure_directory", "get_distribution": "get_dist"}
STDLIB_SKIPPED = {"test", "tests", "idlelib", "site-packages", "__pycache__"}

PYPROJECT = """\
[tool.lint_rules.renames]
{renames}

[tool.fixit]
root = true
disable = ["fixit.rules"]
enable = [".fixit_stale_name"]
"""

# The Fixit rule equivalent to LR001 with the same renames: every libcst Name
# (names, attributes, imports, keyword arguments, definitions, parameters)
# and every plain string whose whole value is an old name.
FIXIT_RULE = """\
import libcst as cst
from fixit import LintRule

RENAMES = {renames!r}


class StaleName(LintRule):
    MESSAGE = "renamed"

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in RENAMES:
            self.report(node, replacement=node.with_changes(value=RENAMES[node.value]))

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.evaluated_value in RENAMES:
            self.report(node)
"""

# Runs a command, then reports its wall time, the CPU time of it and its
# children (less sensitive than wall time to other load on the machine), and
# the peak RSS of the largest of those processes (ru_maxrss, in KiB).
MEASURE = """\
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as report:
    json.dump({"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
               "peak_kib": usage.ru_maxrss, "code": done.returncode,
               "stdout": done.stdout.decode(errors="replace"),
               "stderr": done.stderr.decode(errors="replace")}, report)
"""

PARSE_LIBCST = """\
import multiprocessing, pathlib, sys
import libcst

def parse(path):
    libcst.parse_module(pathlib.Path(path).read_bytes())

if __name__ == "__main__":
    files = sorted(str(p) for p in pathlib.Path(sys.argv[1]).rglob("*.py"))
    with multiprocessing.Pool(int(sys.argv[2])) as pool:
        pool.map(parse, files, chunksize=4)
"""

PARSE_AST = """\
import ast, pathlib, sys
for path in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    ast.parse(path.read_bytes())
"""


@dataclass(frozen=True)
class Measurement:
    label: str
    seconds: float
    cpu_seconds: float
    peak_mib: float
    findings: int | None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("pip", "stdlib", "all"), default="all")
    parser.add_argument("--skip-fixit", action="store_true", help="leave Fixit out (slow)")
    arguments = parser.parse_args()
    if not arguments.skip_fixit:
        _ensure_fixit()
    print(_machine())
    with tempfile.TemporaryDirectory(prefix="lint-bench-") as temporary:
        workspace = Path(temporary)
        _write_config(workspace)
        sources = {
            "pip": Path(pip.__file__).parent,
            "stdlib": Path(sysconfig.get_paths()["stdlib"]),
        }
        for name, source in sources.items():
            if arguments.corpus not in (name, "all"):
                continue
            corpus = workspace / name
            _copy_python_files(
                source, corpus, skipped=STDLIB_SKIPPED if name == "stdlib" else set()
            )
            _benchmark(name, corpus, workspace, with_fixit=not arguments.skip_fixit)


def _benchmark(name: str, corpus: Path, workspace: Path, with_fixit: bool) -> None:
    files = sum(1 for _ in corpus.rglob("*.py"))
    lines = sum(path.read_bytes().count(b"\n") for path in corpus.rglob("*.py"))
    ours = [
        sys.executable,
        "-m",
        "lint_rules",
        "check",
        "--exit-zero",
        "--format",
        "json",
        str(corpus),
    ]
    results: dict[str, Measurement] = {}

    def record(key: str, label: str, command: list[str], count: str | None = None) -> None:
        results[key] = _measure(label, command, workspace, count)

    record("ast", "stdlib `ast.parse`, 1 process", [sys.executable, "-c", PARSE_AST, str(corpus)])
    record(
        "libcst",
        "libcst parse only, 2 processes",
        [sys.executable, "-c", PARSE_LIBCST, str(corpus), "2"],
    )
    record("cold", "lint_rules check, cold (`--no-cache`)", [*ours, "--no-cache"], "json")
    record(
        "all",
        "lint_rules check, cold, prefilters off",
        [*ours, "--no-cache", "--no-prefilter"],
        "json",
    )
    shutil.rmtree(workspace / ".lint_rules_cache", ignore_errors=True)
    _measure("prime the cache", ours, workspace, None)
    record("warm", "lint_rules check, warm (cache)", ours, "json")
    ruff = [
        str(Path(sys.executable).with_name("ruff")),
        "check",
        "--select",
        "ALL",
        "--no-cache",
        "--isolated",
        "--exit-zero",
        "--quiet",
        str(corpus),
    ]
    record("ruff", "ruff `--select ALL --no-cache`", ruff)
    if with_fixit:
        fixit = [str(FIXIT_VENV / "bin" / "fixit"), "lint", str(corpus)]
        record("fixit", f"Fixit {FIXIT_VERSION}, 1 equivalent rule", fixit, "fixit")

    print(f"\n### {name}: {files} files, {lines:,} lines (load average {_load()})\n")
    print("| run | wall s | CPU s | files/s (wall) | peak RSS (MiB) | findings |")
    print("|---|---:|---:|---:|---:|---:|")
    for measurement in results.values():
        rate = files / measurement.seconds
        found = "" if measurement.findings is None else str(measurement.findings)
        print(
            f"| {measurement.label} | {measurement.seconds:.2f} | {measurement.cpu_seconds:.2f} "
            f"| {rate:,.0f} | {measurement.peak_mib:.0f} | {found} |"
        )
    print()
    _ratio("Fixit / lint_rules cold (target >= 50)", results, "fixit", "cold")
    _ratio("lint_rules warm / ruff (target <= 3)", results, "warm", "ruff")
    _ratio(
        "lint_rules prefilters off / libcst parse 2 proc (target <= 2)", results, "all", "libcst"
    )


def _ratio(label: str, results: dict[str, Measurement], over: str, under: str) -> None:
    if over in results and under in results:
        wall = results[over].seconds / results[under].seconds
        cpu = results[over].cpu_seconds / results[under].cpu_seconds
        print(f"- {label}: {wall:.2f} by wall time, {cpu:.2f} by CPU time")


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _measure(label: str, command: list[str], workspace: Path, count: str | None) -> Measurement:
    with tempfile.NamedTemporaryFile(suffix=".json") as report_file:
        subprocess.run(
            [sys.executable, "-c", MEASURE, report_file.name, *command], cwd=workspace, check=True
        )
        report = json.loads(Path(report_file.name).read_text())
    if report["code"] not in (0, 1):  # e.g. Fixit: 2 = some file raised an error
        errors = [line for line in report["stdout"].splitlines() if "error" in line.lower()]
        print(f"note: {label} exited {report['code']}: {report['stderr'].strip()[-300:]}")
        print("\n".join(f"    {line[:200]}" for line in errors[:5]))
    findings = None
    if count == "json":
        findings = sum(item["code"] == "LR001" for item in json.loads(report["stdout"]))
    elif count == "fixit":
        findings = sum("StaleName" in line for line in report["stdout"].splitlines())
    return Measurement(
        label, report["seconds"], report["cpu_seconds"], report["peak_kib"] / 1024, findings
    )


def _ensure_fixit() -> None:
    if (FIXIT_VENV / "bin" / "fixit").exists():
        return
    subprocess.run([sys.executable, "-m", "venv", str(FIXIT_VENV)], check=True)
    pip_command = [str(FIXIT_VENV / "bin" / "pip"), "install", "-q", f"fixit=={FIXIT_VERSION}"]
    subprocess.run(pip_command, check=True)


def _write_config(workspace: Path) -> None:
    renames = "\n".join(f'{old} = "{new}"' for old, new in RENAMES.items())
    (workspace / "pyproject.toml").write_text(PYPROJECT.format(renames=renames))
    (workspace / "fixit_stale_name.py").write_text(FIXIT_RULE.format(renames=RENAMES))


def _copy_python_files(source: Path, target: Path, skipped: set[str]) -> None:
    for directory, subdirectories, files in os.walk(source):
        subdirectories[:] = sorted(name for name in subdirectories if name not in skipped)
        for file in files:
            if file.endswith(".py"):
                relative = Path(directory, file).relative_to(source)
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(Path(directory, file), target / relative)


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
        f"{time.strftime('%Y-%m-%d', time.gmtime())}; {cpu}; {os.cpu_count()} CPUs; "
        f"Python {platform.python_version()}; {platform.system()} {platform.release()}"
    )


if __name__ == "__main__":
    main()
