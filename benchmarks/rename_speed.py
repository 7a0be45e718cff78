"""What ten qualified renames cost on a 1,000-file project, side by side with ruff.

Generates a package (``--files`` modules, default 1,000) that uses ten rename targets of
issue 21's shapes (constructor and function keywords, class attributes, module functions,
one named like ``str.split``) and uses of the same spellings that mean something else,
then times, interleaved, median of ``--repeat`` runs (default 3), wall and CPU seconds:

- ``ruff check --select ALL --no-cache`` (the yardstick of issue 21's goal);
- ``lint_rules check --no-cache`` with the ten targets in ``[tool.lint_rules.renames]``;
- ``lint_rules fix`` with the same (on a fresh copy each time);
- the reference pass: ``lint_rules.codemod.references.plan`` for the ten targets, cold
  (a new process: imports, ``ty server`` started, every occurrence classified).

Usage: ``.venv/bin/python benchmarks/rename_speed.py [--files N] [--repeat N]``; prints
the markdown table of ``benchmarks/README.md``. ``--baseline DIR`` also runs, interleaved
with this checkout's, the ``lint_rules`` package found in ``DIR`` (another revision, e.g.
``git archive main lint_rules | tar -x -C DIR``), for ratios measured under the same load;
``--runs`` picks the runs (``ruff,check,fix,plan``). ``--bytecode``: ``lint_rules`` is imported
from bytecode, as an installed package is (pip compiles it on install), not compiled from
source on every run, as it is in a checkout when ``PYTHONDONTWRITEBYTECODE`` is set: each
side's bytecode is written once, before the timed runs, under a scratch
``PYTHONPYCACHEPREFIX`` (nothing is written into the checkouts).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent

API = """\
class Field:
    default_error = "invalid"

    def __init__(self, *, missing=None, required=False):
        self.missing_value = missing
        self.required = required

    def load(self, value):
        return self.missing_value if value is None else value


class Result:
    isError: bool = False


def send_file(path, *, attachment_filename=None, cache_timeout=None):
    return path, attachment_filename, cache_timeout


def parse(text):
    return text.strip()


def split(sql):
    return [part for part in sql.split(";") if part]


def format(sql, *, keyword_case=None):
    return sql.upper() if keyword_case == "upper" else sql


def helper(value, *, flag=False):
    return value if flag else None
"""

RENAMES = {
    "pkg.api:Field.__init__(missing)": "load_default",
    "pkg.api:Field.default_error": "error_message",
    "pkg.api:Field.load": "deserialize",
    "pkg.api:Result.isError": "is_error",
    "pkg.api:send_file(attachment_filename)": "download_name",
    "pkg.api:send_file(cache_timeout)": "max_age",
    "pkg.api:parse": "parse_version",
    "pkg.api:split": "split_statements",
    "pkg.api:format(keyword_case)": "case",
    "pkg.api:helper(flag)": "enabled",
}

PLAN = """
import sys
from pathlib import Path
from lint_rules.codemod.references import RenameTarget, plan
root = Path(sys.argv[1])
api = root / "pkg" / "api.py"
targets = [
    RenameTarget(api, "Field", "missing", keyword=True),
    RenameTarget(api, "Field", "default_error", member=True),
    RenameTarget(api, "Field", "load", member=True),
    RenameTarget(api, "Result", "isError", member=True),
    RenameTarget(api, "send_file", "attachment_filename", keyword=True),
    RenameTarget(api, "send_file", "cache_timeout", keyword=True),
    RenameTarget(api, "", "parse"),
    RenameTarget(api, "", "split"),
    RenameTarget(api, "format", "keyword_case", keyword=True),
    RenameTarget(api, "helper", "flag", keyword=True),
]
result = plan(root, sorted(root.rglob("*.py")), targets)
print(sum(len(o) for o in result.occurrences.values()), len(result.withheld))
"""


def generate(root: Path, files: int) -> None:
    package = root / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from pkg.api import Field, parse, send_file\n")
    (package / "api.py").write_text(API)
    renames = "\n".join(f'"{old}" = "{new}"' for old, new in RENAMES.items())
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "generated"\nversion = "0"\n\n[tool.lint_rules.renames]\n{renames}\n'
    )
    for index in range(files - 2):
        uses = index % 10 == 0  # a real rename touches a few percent of the files
        body = (
            "from pkg.api import Field, Result, format, helper, parse, send_file, split\n\n\n"
            f"class F{index}(Field):\n"
            "    def check(self, result: Result):\n"
            "        return result.isError or self.default_error\n\n\n"
            f"def use_{index}(text):\n"
            "    field = Field(missing=1)\n"
            "    send_file(text, attachment_filename='a', cache_timeout=1)\n"
            "    words = str(text).split(' ')\n"
            "    return field.load(parse(text)), split(text), format(text, keyword_case='upper'),"
            " helper(words, flag=True)\n"
            if uses
            else f"def use_{index}(text):\n    return str(text).split(' ')\n"
        )
        filler = "\n\n".join(
            f"def work_{index}_{n}(items):\n"
            f"    total = 0\n"
            f"    for item in items:\n"
            f"        if item % {n + 2} == 0:\n"
            f"            total += item * {n}\n"
            f"    return total"
            for n in range(8)
        )
        (package / f"m{index}.py").write_text(f"{body}\n\n{filler}\n")


def _writing(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without ``PYTHONDONTWRITEBYTECODE``."""
    return {name: value for name, value in env.items() if name != "PYTHONDONTWRITEBYTECODE"}


def _package(env: dict[str, str]) -> Path:
    """The directory of the ``lint_rules`` package that ``env`` imports."""
    done = subprocess.run(
        [sys.executable, "-c", "import lint_rules; print(lint_rules.__path__[0])"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip())


def timed(
    command: list[str], cwd: Path, env: dict[str, str] | None = None
) -> tuple[float, float, str]:
    """Wall and CPU (user + system, children included) seconds, and the output."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command}: exit {done.returncode}\n{done.stderr}")
    return wall, cpu, done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="a directory holding another lint_rules")
    parser.add_argument("--runs", default="ruff,check,fix,plan")
    parser.add_argument("--bytecode", action="store_true", help="import lint_rules from bytecode")
    arguments = parser.parse_args()
    wanted = set(arguments.runs.split(","))
    baseline = None
    if arguments.baseline is not None:
        if not (arguments.baseline / "lint_rules" / "__init__.py").is_file():
            parser.error(f"--baseline: no lint_rules package in {arguments.baseline}")
        baseline = {**os.environ, "PYTHONPATH": str(arguments.baseline.resolve())}
    python = sys.executable
    ruff = shutil.which("ruff", path=str(Path(python).parent)) or "ruff"
    runs: dict[str, list[tuple[float, float, str]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "project"
        generate(project, arguments.files)
        bytecode: dict[str, str] | None = None
        if arguments.bytecode:
            cached = {"PYTHONPYCACHEPREFIX": str(Path(scratch) / "pycache")}
            bytecode = {**_writing(os.environ), **cached}
            baseline = None if baseline is None else {**_writing(baseline), **cached}
            for env in (bytecode, baseline):
                if env is not None:  # written once here (a whole check), read by every run
                    subprocess.run(
                        [python, "-m", "compileall", "-q", str(_package(env))],
                        env=env,
                        check=True,
                        stdout=subprocess.DEVNULL,
                    )
                    timed([python, "-m", "lint_rules", "check", "--no-cache"], project, env)
        commands: dict[str, tuple[str, list[str], dict[str, str] | None]] = {}
        for label, env in (("", bytecode), ("baseline: ", baseline)):
            if label and env is None:
                continue
            every = {
                "ruff": ("ruff check --select ALL --no-cache", [ruff, "check", "--select", "ALL",
                         "--no-cache", "--exit-zero", "-q", "."]),
                "check": ("lint_rules check --no-cache, 10 qualified renames",
                          [python, "-m", "lint_rules", "check", "--no-cache", "--exit-zero"]),
                "fix": ("lint_rules fix, 10 qualified renames (a fresh copy)",
                        [python, "-m", "lint_rules", "fix"]),
                "plan": ("reference pass: codemod.references.plan, 10 targets, cold (ty)",
                         [python, "-c", PLAN, str(project)]),
            }  # fmt: skip
            for run, (name, command) in every.items():
                if run in wanted and not (label and run == "ruff"):
                    commands[label + name] = (run, command, env)
        for _ in range(arguments.repeat):
            for name, (run, command, env) in commands.items():
                cwd = project
                if run == "fix":
                    cwd = Path(scratch) / "copy"
                    shutil.rmtree(cwd, ignore_errors=True)
                    shutil.copytree(project, cwd)
                print(f"== {name}", file=sys.stderr, flush=True)
                runs.setdefault(name, []).append(timed(command, cwd, env))
    load = os.getloadavg()
    ruff_runs = runs.get("ruff check --select ALL --no-cache")
    ruff_wall = statistics.median(r[0] for r in ruff_runs) if ruff_runs else None
    ruff_cpu = statistics.median(r[1] for r in ruff_runs) if ruff_runs else None
    print(
        f"{arguments.files} files, median of {arguments.repeat}, interleaved"
        f"{', lint_rules imported from bytecode' if arguments.bytecode else ''}; load average at"
        f" the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min):\n"
    )
    print("| run | wall s | CPU s | / ruff (wall) | / ruff (CPU) | last line of output |")
    print("|---|---:|---:|---:|---:|---|")
    for name, results in runs.items():
        wall = statistics.median(r[0] for r in results)
        cpu = statistics.median(r[1] for r in results)
        by_wall = f"{wall / ruff_wall:.1f}x" if ruff_wall else ""
        by_cpu = f"{cpu / ruff_cpu:.1f}x" if ruff_cpu else ""
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {by_wall} | {by_cpu} | {results[-1][2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
