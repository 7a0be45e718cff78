"""Benchmark: LR002's cost against the number of configured literal keys, beside ruff.

Downloads the ``openai`` sdist (``pip download --no-deps --no-binary :all:``) into a
cache directory outside the repository (or uses the one given with ``--sdist``),
unpacks it into a temporary directory and configures ``[tool.lint_rules.literals]``
from the tree's own fields: every class attribute under ``src/`` annotated with a
``Literal[...]`` of strings (``"Class.attr" = "module:Class.attr"``, the first of
each key in path order), the first N of them for each N of ``--keys``. For each N it
runs ``python -m lint_rules check --select LR002 --no-cache`` and
``ruff check --select ALL --no-cache`` on the same tree ``--runs`` times, interleaved,
and prints the median wall times, each as a ratio to ruff's median of the same N, the
median CPU times (user and system, worker processes included), the findings count
(which must not depend on N beyond the fields added) and the load average at the start
and the end.

``--base DIR`` (repeatable) also runs the ``lint_rules`` package of DIR (an export of
another commit, e.g. ``git archive main lint_rules | tar -x -C DIR``), interleaved with
the installed one (ruff, each DIR, after, ruff, ...), for a before/after comparison;
``--head DIR`` runs DIR's instead of the installed one (both sides fixed while the
working tree changes).

Usage: ``.venv/bin/python benchmarks/lr002_keys.py [--keys 5,33,116] [--runs 3]
[--sdist PATH] [--cache DIR] [--base DIR] [--head DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common

VERSION = "3.51.0"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_openai_tree_arguments(
        parser,
        keys="5,33,116",
        base_help="also run the lint_rules package of this directory (repeatable)",
    )
    parser.add_argument(
        "--head", type=Path, help="run this directory's instead of the installed one"
    )
    arguments = parser.parse_args()
    sdist = arguments.sdist or _common.download("openai", VERSION, arguments.cache)
    work = Path(tempfile.mkdtemp(prefix="lr002-keys-"))
    try:
        tree = _common.unpack(sdist, work)
        fields = literal_fields(tree)
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"openai {VERSION}: {files} files, {len(fields)} Literal fields found")
        pyproject = (tree / "pyproject.toml").read_text(encoding="utf-8")
        bases = {
            directory.name: _common.lint_command(directory) for directory in arguments.base or ()
        }
        commands = {**bases, "after": _common.lint_command(arguments.head)}
        ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
        ruff_command = [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q"]
        ruff_times: list[tuple[float, float]] = []
        print(f"load average at the start: {_load()}")
        print(
            f"keys | {' | '.join(commands)} (median wall s, x ruff; median CPU s) | findings"
            " | ruff (median wall s; CPU s)"
        )
        for count in (int(item) for item in arguments.keys.split(",")):
            chosen = fields[:count]
            table = "\n".join(f'"{key}" = "{target}"' for key, target in chosen)
            (tree / "pyproject.toml").write_text(
                f'{pyproject}\n[tool.lint_rules]\nselect = ["LR002"]\n\n'
                f"[tool.lint_rules.literals]\n{table}\n",
                encoding="utf-8",
            )
            check = ["check", "--select", "LR002", "--no-cache", "--format", "json"]
            # Interleaved (ruff, before, after, ruff, ...): load hits every side alike.
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
            row_ruff: list[tuple[float, float]] = []
            for _ in range(arguments.runs):
                row_ruff.append(_timed(ruff_command, tree))
                for name, command in commands.items():
                    times[name].append(_timed([*command, *check], tree))
            ruff_times += row_ruff
            found = []
            for command in commands.values():
                run = subprocess.run(
                    [*command, *check], cwd=tree, capture_output=True, text=True, check=False
                )
                if run.returncode not in (0, 1):
                    print(run.stderr, file=sys.stderr)
                    return 2
                found.append(str(len(json.loads(run.stdout))))
            ruff_wall, ruff_cpu = _medians(row_ruff)
            cells = []
            for measured in times.values():
                wall, cpu = _medians(measured)
                cells.append(f"{wall:.2f} ({wall / ruff_wall:.1f}x; {cpu:.2f})")
            print(
                f"{len(chosen)} | {' | '.join(cells)} | {' / '.join(found)}"
                f" | {ruff_wall:.2f}; {ruff_cpu:.2f}"
            )
        print(f"ruff --select ALL: median {_medians(ruff_times)[0]:.2f} s")
        print(f"load average at the end: {_load()}")
    finally:
        shutil.rmtree(work)
    return 0


def literal_fields(tree: Path) -> list[tuple[str, str]]:
    """``("Class.attr", "module:Class.attr")`` for every class attribute under ``src/``
    annotated ``Literal[...]`` of strings, the first of each key in path order."""
    return list(_common.literal_fields(_common.src_modules(tree)).items())


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _timed(command: list[str], cwd: Path) -> tuple[float, float]:
    """Wall time and CPU time (user and system, the process and what it waited for: the
    worker processes) of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _medians(measured: list[tuple[float, float]]) -> tuple[float, float]:
    return (
        statistics.median(wall for wall, _ in measured),
        statistics.median(cpu for _, cpu in measured),
    )


if __name__ == "__main__":
    raise SystemExit(main())
