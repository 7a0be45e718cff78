"""Mutation testing with mutmut, outside the ordinary test run (issue 28).

    .venv/bin/pip install -e ".[dev,mutation]"
    .venv/bin/python benchmarks/mutation.py                    # every module of TARGETS
    .venv/bin/python benchmarks/mutation.py _json protocol     # some of them
    .venv/bin/python benchmarks/mutation.py --budget 300       # seconds per module
    .venv/bin/python benchmarks/mutation.py sqlite --whole     # all of sqlite.py, not SUBSETS
    .venv/bin/python benchmarks/mutation.py sqlite --rest      # sqlite.py outside SUBSETS
    .venv/bin/python benchmarks/mutation.py fixes --only 'lint_rules.engine.fixes.x_verify*'

For each module of ``TARGETS`` it copies the tracked files of the repository into a
temporary directory (the work tree is never touched), adds a ``[tool.mutmut]`` section to
that copy's pyproject.toml that mutates only the module and runs only its tests (so a run
stays bounded), runs ``mutmut run`` within the time budget, and prints one row per module:
mutants, killed (a test failed or timed out), survived, not checked (the budget ran out or
no test covers the line), and the score killed / (killed + survived). A module listed in
``SUBSETS`` is mutated only in those functions (the whole module does not fit a run's time;
``--whole`` mutates all of it). A run that checked nothing (mutmut failed, e.g. its stats
run on the unmutated copy) prints a FAILED row with mutmut's reason, and the script exits
non-zero: it never prints a row that looks like a run. Surviving mutants are
printed with their diff (``--diffs``). Which survivors are equivalent, and why, is in
benchmarks/mutation_survivors.md; the scores are in benchmarks/README.md.

Why mutmut (over cosmic-ray): measured on this code it ran about 15 mutants a minute
against cosmic-ray's 1.7 (mutmut forks a warmed-up pytest per mutant and switches mutants
by a trampoline, with no rewrite of the file per mutant), and it reads the pytest config of
pyproject.toml and the src/ layout as they are.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_SQLITE_REPLACE_TESTS = tuple(
    f"tests/servers/test_replace_items.py::{test}[{backend}]"
    for test in (
        "test_replace_items_makes_the_list_the_whole_history",
        "test_replace_items_with_nothing_empties_and_on_an_empty_session_fills",
        "test_a_rejected_replacement_changes_nothing",
        "test_concurrent_adds_and_a_replacement_never_interleave",
        "test_concurrent_adds_and_a_clear_keep_whole_batches",
        "test_a_pop_racing_a_replacement_takes_the_old_latest_or_the_new",
        "test_compaction_writes_through_replace_items",
        "test_a_large_replacement_is_whole_and_in_order",
    )
    for backend in ("sqlite-memory", "sqlite-file", "sqlite-sdk-layout")
)
"""``tests/servers/test_replace_items.py`` on SQLite only (its other backends need servers)."""

TARGETS: dict[str, tuple[str, tuple[str, ...]]] = {
    # short name: (module to mutate, the tests that run against each mutant)
    "_json": (
        "src/agent_sessions/_json.py",
        ("tests/sessions/test_json.py", "tests/sessions/test_sqlite_conformance.py"),
    ),
    "protocol": (
        "src/agent_sessions/protocol.py",
        (
            "tests/sessions/test_protocol.py",
            "tests/sessions/test_sqlite_conformance.py",
            "tests/sessions/test_bounded.py",
        ),
    ),
    "sqlite": (
        "src/agent_sessions/sqlite.py",
        (
            "tests/sessions/test_sqlite.py",
            "tests/sessions/test_sqlite_conformance.py",
            "tests/sessions/test_sqlite_corrupt_rows.py",
            # the large reads and writes (off the loop), and the SDK's layout
            "tests/sessions/test_sqlite_loop.py",
            "tests/sessions/test_sqlite_sdk_layout.py",
            # Two processes writing for 15-25 s each (under load): a mutant whose
            # tests reach them would take > 40 s; the kit's own process test
            # (test_concurrent_processes_lose_no_items_and_keep_batches_contiguous on
            # the file store) and test_sqlite.py's four-process test cover that path.
            "--deselect",
            "tests/sessions/test_sqlite_sdk_layout.py::test_the_sdk_and_ours_writing_at_once_from_processes",
            "--deselect",
            "tests/sessions/test_sqlite_sdk_layout.py::TestSQLiteSDKLayoutSession"
            "::test_concurrent_processes_lose_no_items_and_keep_batches_contiguous",
            # the errors, the files (read-only, may not create), edge cases, what the
            # whole-file run found unguarded, and a plain close() (as the SDK's examples do)
            "tests/sessions/test_sqlite_errors.py",
            "tests/sessions/test_sqlite_files.py",
            "tests/sessions/test_sqlite_edges.py",
            "tests/sessions/test_sqlite_found_by_mutation.py",
            "tests/sessions/test_sqlite_opening.py",
            "tests/sessions/test_sdk_dropin.py::test_plain_close_closes_a_memory_session",
            "tests/sessions/test_sdk_dropin.py::test_plain_close_releases_the_shared_file_store",
            "tests/sessions/test_sdk_dropin.py"
            "::test_plain_close_inside_a_running_loop_releases_the_file",
            "tests/sessions/test_sdk_dropin.py::test_plain_close_of_a_store_closes_it",
            # replace_items (_replace, _replace_items): its tests on our three SQLite
            # stores, and the compaction writing through it
            *_SQLITE_REPLACE_TESTS,
            "tests/sessions/test_bounded.py::test_a_cancellation_during_the_write_completes_the_write",
            "tests/sessions/test_bounded.py"
            "::test_a_store_failing_in_replace_items_leaves_the_history_as_it_was",
        ),
    ),
    "kit": (
        "src/agent_sessions/testing.py",
        (
            "tests/sessions/test_kit.py::TestListSession",
            "tests/sessions/test_loop_mutants.py",
            "tests/sessions/test_kit_helpers.py",
            # _write_batches_in_child, which the processes test runs in children
            "tests/sessions/test_kit_child_writer.py",
        ),
    ),
    "fixes": (
        "lint_rules/engine/fixes.py",
        (
            "tests/lint_rules/test_fix_units.py",
            "tests/lint_rules/test_fix_writes.py",
            "tests/lint_rules/test_fix_safety.py",
            # fix_text to its fixed point, --diff (unified_diff), the encodings kept: the
            # CLI run in-process (test_lint_output.py runs it in subprocesses, where
            # mutmut records nothing)
            "tests/lint_rules/test_lint_fix.py",
            "tests/lint_rules/test_fix_outcomes.py",
            # a subprocess killed midway: 5 s, and nothing of fixes.py in this process
            "--deselect",
            "tests/lint_rules/test_lint_fix.py"
            "::test_fix_killed_midway_leaves_every_file_old_or_new_and_no_worker",
        ),
    ),
    "cache": (
        "lint_rules/engine/cache.py",
        (
            "tests/lint_rules/test_cache.py",
            "tests/lint_rules/test_lint_engine.py",
            "tests/lint_rules/test_cache_per_rule_options.py",
            # Fails on the unmutated copy under mutmut's stats run (its warm run
            # parses all 30 files again: its worker processes run mutmut's trampolined
            # copy), so it cannot judge a mutant there.
            "--deselect",
            "tests/lint_rules/test_lint_engine.py::test_concurrent_runs_share_the_cache_safely",
        ),
    ),
}
"""Each module with the tests that guard it: the bound of a run."""

SUBSETS: dict[str, tuple[str, ...]] = {
    # sqlite.py has 1,200 mutants: about 75 minutes at --children 1 on a quiet machine;
    # its --whole run at load 6-19 reached 409 in 40 minutes (2026-12-02). A run
    # mutates its data path, the functions that write, read, pop, replace and clear
    # items (190 mutants), against its own tests, the conformance kit run on it, its
    # large-call (loop) tests and its SDK-layout tests.
    # Opening, the schema, layouts, listing and the connection pools are left out
    # (``--rest`` mutates them: 1,010 mutants, 78 minutes at --children 2, load 2-9).
    "sqlite": (
        "SQLiteStore._add",
        "SQLiteStore._add_items",
        "SQLiteStore._select",
        "SQLiteStore._get_items",
        "SQLiteStore._read",
        "SQLiteStore._pop",
        "SQLiteStore._pop_item",
        "SQLiteStore._replace",
        "SQLiteStore._replace_items",
        "SQLiteStore._clear",
        "SQLiteStore._clear_session",
    ),
}
"""Modules mutated only in some functions (``Class.method`` or ``function``), and why."""

FORKSERVER = frozenset({"cache", "fixes"})
"""Modules whose tests leave child processes behind (the lint engine's workers): mutmut's
default runner, forking each mutant from the process that ran the stats, reaps one of
those with ``os.wait()`` and stops on a ``KeyError``; its fork server does not."""

_STATUS = re.compile(r"^\s+(\S+): (killed|survived|timeout|no tests|suspicious|not checked)")


def _mutant_globs(module: str, functions: tuple[str, ...]) -> list[str]:
    """mutmut's names of the mutants of ``functions`` in ``module`` (a file path)."""
    dotted = module.removeprefix("src/").removesuffix(".py").replace("/", ".")
    globs = []
    for function in functions:
        owner, _, name = function.rpartition(".")
        mangled = f"x\u01c1{owner}\u01c1{name}" if owner else f"x_{name}"
        globs.append(f"{dotted}.{mangled}__mutmut_*")
    return globs


def _functions_outside(module: str, subset: tuple[str, ...]) -> tuple[str, ...]:
    """Every function and method of ``module`` (as ``SUBSETS`` names them) not in ``subset``."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    names = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef):
            names.extend(
                f"{node.name}.{method.name}"
                for method in node.body
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return tuple(name for name in names if name not in subset)


@dataclass
class Score:
    module: str
    statuses: dict[str, str]
    seconds: float
    failure: str | None = None
    budget_ran_out: bool = False
    subset: int = 0

    def count(self, *statuses: str) -> int:
        return sum(status in statuses for status in self.statuses.values())

    @property
    def killed(self) -> int:
        return self.count("killed", "timeout")

    @property
    def survived(self) -> int:
        return self.count("survived")

    def row(self) -> str:
        where = f"`{self.module}`" + (f" ({self.subset} functions)" if self.subset else "")
        if self.failure is not None:
            return f"| {where} | FAILED: {self.failure} | | | | | {self.seconds / 60:.1f} min |"
        checked = self.killed + self.survived
        score = f"{100 * self.killed / checked:.0f}%" if checked else "-"
        unchecked = len(self.statuses) - checked
        ran_out = " (budget ran out)" if self.budget_ran_out else ""
        return (
            f"| {where} | {len(self.statuses)} | {self.killed} | {self.survived} | "
            f"{unchecked} | {score} | {self.seconds / 60:.1f} min{ran_out} |"
        )


def _copy_tracked(destination: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    for name in listed.decode().split("\0"):
        if name and (ROOT / name).is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)


def run(
    name: str,
    budget: float,
    children: int,
    diffs: bool,
    whole: bool,
    only: list[str],
    rest: bool = False,
) -> Score:
    module, tests = TARGETS[name]
    functions = () if whole or only else SUBSETS.get(name, ())
    if rest and not (whole or only):
        functions = _functions_outside(module, functions)
    globs = only or _mutant_globs(module, functions)
    with tempfile.TemporaryDirectory(prefix=f"mutation-{name}-") as directory:
        work = Path(directory)
        _copy_tracked(work)
        top = "src" if module.startswith("src/") else module.split("/")[0]
        config = [
            "",
            "[tool.mutmut]",
            f'source_paths = ["{top}"]',
            f'only_mutate = ["{module}"]',
            f"pytest_add_cli_args_test_selection = {list(tests)!r}".replace("'", '"'),
            'pytest_add_cli_args = ["-p", "no:randomly", "-x", "-q", "-p", "no:cacheprovider"]',
        ]
        if name in FORKSERVER:
            config.append('process_isolation = "forkserver"')
        with (work / "pyproject.toml").open("a", encoding="utf-8") as pyproject:
            pyproject.write("\n".join(config) + "\n")
        mutmut = Path(sys.executable).with_name("mutmut")
        start = time.monotonic()
        log = work / "mutmut.log"
        failure = None
        budget_ran_out = False
        with log.open("wb") as output:
            # Its own process group: when the budget runs out, mutmut's workers (forked
            # pytest processes) are stopped with it, not left running.
            process = subprocess.Popen(
                [str(mutmut), "run", "--max-children", str(children), *globs],
                cwd=work,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                returncode = process.wait(timeout=budget)
            except subprocess.TimeoutExpired:
                budget_ran_out = True
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                print(f"{name}: the budget of {budget:.0f} s ran out", file=sys.stderr)
        if not budget_ran_out and returncode != 0:
            # e.g. "failed to collect stats": a test failed on the unmutated copy
            lines = log.read_bytes().decode("utf-8", "replace").replace("\r", "\n")
            tail = [line for line in lines.splitlines() if line.strip()]
            print(f"{name}: mutmut exited {returncode}:", file=sys.stderr)
            print("\n".join(tail[-30:]), file=sys.stderr)
            failure = f"mutmut exited {returncode}" + (f": {tail[-1]}" if tail else "")
        seconds = time.monotonic() - start
        results = subprocess.run(
            [str(mutmut), "results", "--all", "true"],
            cwd=work,
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        statuses = {
            match[1]: match[2]
            for line in results.splitlines()
            if (match := _STATUS.match(line))
            and (not globs or any(fnmatch.fnmatchcase(match[1], glob) for glob in globs))
        }
        score = Score(module, statuses, seconds, failure, budget_ran_out, len(functions))
        if failure is None and score.killed + score.survived == 0:
            score.failure = f"no mutant was checked ({len(statuses)} listed)"
        for mutant, status in statuses.items():
            if status not in ("killed", "timeout", "survived"):
                print(f"not checked ({status}): {mutant}")
        survivors = [mutant for mutant, status in statuses.items() if status == "survived"]
        for mutant in survivors:
            print(f"survived: {mutant}")
            if diffs:
                shown = subprocess.run(
                    [str(mutmut), "show", mutant], cwd=work, capture_output=True, text=True
                )
                print(shown.stdout)
        return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of {sorted(TARGETS)} (default: all)")
    parser.add_argument("--budget", type=float, default=900.0, help="seconds per module")
    parser.add_argument("--children", type=int, default=2, help="mutants run at once")
    parser.add_argument("--diffs", action="store_true", help="print each survivor's diff")
    parser.add_argument(
        "--whole", action="store_true", help="mutate all of each module, not its SUBSETS"
    )
    parser.add_argument(
        "--rest",
        action="store_true",
        help="mutate each module outside its SUBSETS (every other function and method)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="MUTANT",
        help="run only these mutants (mutmut's names, fnmatch patterns; repeatable): e.g. "
        "the survivors of an earlier run, after the tests that should kill them",
    )
    arguments = parser.parse_args()
    unknown = sorted(set(arguments.modules) - set(TARGETS))
    if unknown:
        parser.error(f"unknown modules {unknown}: choose from {sorted(TARGETS)}")
    rows = [
        run(
            name,
            arguments.budget,
            arguments.children,
            arguments.diffs,
            arguments.whole,
            arguments.only,
            arguments.rest,
        )
        for name in arguments.modules or TARGETS
    ]
    print("| module | mutants | killed | survived | not checked | score | time |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for score in rows:
        print(score.row())
    failed = [score.module for score in rows if score.failure is not None]
    if failed:
        sys.exit(f"FAILED: no mutation score for {', '.join(failed)} (see the rows above)")


if __name__ == "__main__":
    main()
