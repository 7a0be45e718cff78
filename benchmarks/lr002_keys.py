"""Benchmark: LR002's cost against the number of configured literal keys, beside ruff.

Downloads the ``openai`` sdist (``pip download --no-deps --no-binary :all:``) into a
cache directory outside the repository (or uses the one given with ``--sdist``),
unpacks it into a temporary directory and configures ``[tool.lint_rules.literals]``
from the tree's own fields: every class attribute under ``src/`` annotated with a
``Literal[...]`` of strings (``"Class.attr" = "module:Class.attr"``, the first of
each key in path order), the first N of them for each N of ``--keys``. For each N it
runs ``python -m lint_rules check --select LR002 --no-cache`` and
``ruff check --select ALL --no-cache`` on the same tree ``--runs`` times and prints
the median wall time and the findings count (which must not depend on N beyond the
fields added).

``--base DIR`` runs the ``lint_rules`` package of DIR instead of the installed one (an
export of another commit, e.g. ``git archive main lint_rules | tar -x -C DIR``), for a
before/after comparison.

Usage: ``.venv/bin/python benchmarks/lr002_keys.py [--keys 5,33,116] [--runs 3]
[--sdist PATH] [--cache DIR] [--base DIR]``.
"""

from __future__ import annotations

import argparse
import json
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
    parser.add_argument("--keys", default="5,33,116", help="comma-separated key counts")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sdist", type=Path, help="an sdist (.tar.gz) instead of downloading")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "lr002-sdists")
    parser.add_argument("--base", type=Path, help="run the lint_rules package of this directory")
    arguments = parser.parse_args()
    sdist = arguments.sdist or _common.download("openai", VERSION, arguments.cache)
    work = Path(tempfile.mkdtemp(prefix="lr002-keys-"))
    try:
        tree = _common.unpack(sdist, work)
        fields = literal_fields(tree)
        files = sum(1 for _ in tree.rglob("*.py"))
        print(f"openai {VERSION}: {files} files, {len(fields)} Literal fields found")
        pyproject = (tree / "pyproject.toml").read_text(encoding="utf-8")
        command = _common.lint_command(arguments.base)
        ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or "ruff"
        ruff_times = _times(
            [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q"],
            tree,
            arguments.runs,
        )
        print(f"ruff --select ALL: median {statistics.median(ruff_times):.2f} s")
        print("keys | check --select LR002 (median s) | findings | x ruff")
        for count in (int(item) for item in arguments.keys.split(",")):
            chosen = fields[:count]
            table = "\n".join(f'"{key}" = "{target}"' for key, target in chosen)
            (tree / "pyproject.toml").write_text(
                f'{pyproject}\n[tool.lint_rules]\nselect = ["LR002"]\n\n'
                f"[tool.lint_rules.literals]\n{table}\n",
                encoding="utf-8",
            )
            check = [*command, "check", "--select", "LR002", "--no-cache", "--format", "json"]
            times = _times(check, tree, arguments.runs)
            run = subprocess.run(check, cwd=tree, capture_output=True, text=True, check=False)
            if run.returncode not in (0, 1):
                print(run.stderr, file=sys.stderr)
                return 2
            median = statistics.median(times)
            ratio = median / statistics.median(ruff_times)
            print(f"{len(chosen)} | {median:.2f} | {len(json.loads(run.stdout))} | {ratio:.1f}")
    finally:
        shutil.rmtree(work)
    return 0


def literal_fields(tree: Path) -> list[tuple[str, str]]:
    """``("Class.attr", "module:Class.attr")`` for every class attribute under ``src/``
    annotated ``Literal[...]`` of strings, the first of each key in path order."""
    return list(_common.literal_fields(_common.src_modules(tree)).items())


def _times(command: list[str], cwd: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, cwd=cwd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return times


if __name__ == "__main__":
    raise SystemExit(main())
