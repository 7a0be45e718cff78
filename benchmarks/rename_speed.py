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
the markdown table of ``benchmarks/README.md``.
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


def timed(command: list[str], cwd: Path) -> tuple[float, float, str]:
    """Wall and CPU (user + system, children included) seconds, and the output."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
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
    arguments = parser.parse_args()
    python = sys.executable
    ruff = shutil.which("ruff", path=str(Path(python).parent)) or "ruff"
    runs: dict[str, list[tuple[float, float, str]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch) / "project"
        generate(project, arguments.files)
        commands = {
            "ruff check --select ALL --no-cache": [ruff, "check", "--select", "ALL", "--no-cache",
                                                   "--exit-zero", "-q", "."],
            "lint_rules check --no-cache, 10 qualified renames (today's LR001)": [
                python, "-m", "lint_rules", "check", "--no-cache", "--exit-zero"],
            "lint_rules fix, 10 qualified renames (today's LR001, a fresh copy)": [
                python, "-m", "lint_rules", "fix"],
            "reference pass: codemod.references.plan, 10 targets, cold (ty)": [
                python, "-c", PLAN, str(project)],
        }  # fmt: skip
        for _ in range(arguments.repeat):
            for name, command in commands.items():
                cwd = project
                if "fix" in command:
                    cwd = Path(scratch) / "copy"
                    shutil.rmtree(cwd, ignore_errors=True)
                    shutil.copytree(project, cwd)
                print(f"== {name}", file=sys.stderr, flush=True)
                runs.setdefault(name, []).append(timed(command, cwd))
    ruff_wall = statistics.median(wall for wall, _, _ in runs["ruff check --select ALL --no-cache"])
    print(f"{arguments.files} files, median of {arguments.repeat}, interleaved:\n")
    print("| run | wall s | CPU s | / ruff (wall) | last line of output |")
    print("|---|---:|---:|---:|---|")
    for name, results in runs.items():
        wall = statistics.median(r[0] for r in results)
        cpu = statistics.median(r[1] for r in results)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {wall / ruff_wall:.1f}x | {results[-1][2]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
