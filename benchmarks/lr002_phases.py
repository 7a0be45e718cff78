"""Benchmark: where one process's CPU goes in LR002's check, by phase and key count.

The profile beside ``lr002_keys.py``'s timings: the same ``openai`` sdist (downloaded,
or ``--sdist``), unpacked and configured the same way (the first N of the tree's
``Literal`` fields for each N of ``--keys``), then ``check --select LR002 --no-cache
--jobs 1`` in a child process that times (CPU, ``time.process_time``) each phase around
the functions that do it: reading the configured declarations (``parse_literals``),
discovery, the prefilter over every file, the parse of the files it admits, the
traversal, ``check_file`` (typing the receivers, with the modules it reads), the parses
of other modules (declarations and receivers' modules, counted in those phases too),
every file's ``check`` (the per-file cost, whatever the configuration), and the whole
run after the imports. Medians of ``--runs``; ``--base DIR`` (repeatable) also times the
``lint_rules`` package of DIR (an export of another commit), interleaved with the
installed one. The collector's own time is inside whichever phase set it off.

Usage: ``.venv/bin/python benchmarks/lr002_phases.py [--keys 5,116,500] [--runs 3]
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
from pathlib import Path

import _common

VERSION = "3.51.0"
PHASES = (
    ("declarations", "reading the declarations (parse_literals)"),
    ("discovery", "discovery"),
    ("prefilter", "prefilter, every file"),
    ("parse", "parse of the admitted files"),
    ("traverse", "traversal of the admitted files"),
    ("check_file", "check_file (receivers, modules read)"),
    ("modules", "  parses of other modules (in the above)"),
    ("per_file", "every file's check (the per-file cost)"),
    ("run", "the run after the imports"),
)

# The child: times the phases around the functions that do them (their names are the same
# in the commits compared), runs the check, writes the totals (and counts) as JSON.
_CHILD = r"""
import functools, json, sys, time
output, package = sys.argv[1], sys.argv[2]
if package:
    sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
    sys.path.insert(0, package)
clock = time.process_time
totals, counts = {}, {}
def timed(owner, name, phase):
    original = getattr(owner, name)
    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return original(*args, **kwargs)
        finally:
            totals[phase] = totals.get(phase, 0.0) + clock() - start
            counts[phase] = counts.get(phase, 0) + 1
    setattr(owner, name, wrapper)
from lint_rules import rule
from lint_rules.analysis import declarations
from lint_rules.cli import main
from lint_rules.engine import checker, run
from lint_rules.rules import unknown_literal
timed(unknown_literal, "parse_literals", "declarations")
timed(run, "discover", "discovery")
timed(unknown_literal.UnknownLiteralRule, "prefilter", "prefilter")
timed(checker.Checker, "_traverse", "traverse")
timed(unknown_literal.UnknownLiteralRule, "check_file", "check_file")
timed(declarations.Declarations, "_parse_module", "modules")
timed(checker.Checker, "check", "per_file")
tree = rule.FileContext.ast_tree
parse = tree.func
def ast_tree(self):
    start = clock()
    try:
        return parse(self)
    finally:
        totals["parse"] = totals.get("parse", 0.0) + clock() - start
        counts["parse"] = counts.get("parse", 0) + 1
property_ = functools.cached_property(ast_tree)
property_.__set_name__(rule.FileContext, "ast_tree")
rule.FileContext.ast_tree = property_
start = clock()
code = main(["check", "--select", "LR002", "--no-cache", "--jobs", "1", "--format", "json"])
totals["run"] = clock() - start
with open(output, "w", encoding="utf-8") as file:
    json.dump({"totals": totals, "counts": counts, "code": code}, file)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _common.add_openai_tree_arguments(
        parser,
        keys="5,116,500",
        base_help="also time the lint_rules package of this directory (repeatable)",
    )
    arguments = parser.parse_args()
    sdist = arguments.sdist or _common.download("openai", VERSION, arguments.cache)
    work = Path(tempfile.mkdtemp(prefix="lr002-phases-"))
    try:
        tree = _common.unpack(sdist, work)
        fields = list(_common.literal_fields(_common.src_modules(tree)).items())
        pyproject = (tree / "pyproject.toml").read_text(encoding="utf-8")
        sides = {directory.name: str(directory.resolve()) for directory in arguments.base or ()}
        sides["after"] = ""
        print(f"openai {VERSION}: {len(fields)} Literal fields; CPU s, median of {arguments.runs}")
        for count in (int(item) for item in arguments.keys.split(",")):
            table = "\n".join(f'"{key}" = "{target}"' for key, target in fields[:count])
            (tree / "pyproject.toml").write_text(
                f'{pyproject}\n[tool.lint_rules]\nselect = ["LR002"]\n\n'
                f"[tool.lint_rules.literals]\n{table}\n",
                encoding="utf-8",
            )
            measured: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in sides}
            for _ in range(arguments.runs):
                for name, package in sides.items():  # interleaved: load hits every side alike
                    measured[name].append(_child(tree, work / "phases.json", package))
            print(f"\n{count} keys | {' | '.join(sides)}")
            for phase, label in PHASES:
                cells = []
                for runs in measured.values():
                    seconds = statistics.median(run["totals"].get(phase, 0.0) for run in runs)
                    calls = int(statistics.median(run["counts"].get(phase, 0) for run in runs))
                    cells.append(f"{seconds:.3f}" + (f" ({calls})" if phase != "run" else ""))
                print(f"{label} | {' | '.join(cells)}")
    finally:
        shutil.rmtree(work)
    return 0


def _child(tree: Path, output: Path, package: str) -> dict[str, dict[str, float]]:
    run = subprocess.run(
        [sys.executable, "-c", _CHILD, str(output), package],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode not in (0, 1):
        raise SystemExit(f"the check failed ({run.returncode}):\n{run.stderr}")
    result: dict[str, dict[str, float]] = json.loads(output.read_text(encoding="utf-8"))
    return result


if __name__ == "__main__":
    raise SystemExit(main())
