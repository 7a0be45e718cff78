"""What a change adds to ``.ci/run``'s tests: some test files timed at a base commit and
at the work tree, interleaved (base, now, base, now, ...) so that load hits both alike.

    .venv/bin/python benchmarks/ci_growth.py --base ae447b1 --rounds 3 \\
        tests/sessions/test_kit.py tests/sessions/test_kit_checks.py \\
        tests/sessions/test_loop_mutants.py tests/sessions/test_json.py

The base side is ``git archive BASE`` unpacked in a temporary directory, its own
``src`` first on ``PYTHONPATH`` (so its code is the one under test, not the work
tree's); both sides run ``python -m pytest -q -p no:cacheprovider FILES`` with this
interpreter. A file missing at the base runs only on the work tree's side (all of its
time is growth). Each run reports wall and CPU time (user + system of pytest and the
processes it waited for) and the load average when it started; the table gives the
medians, their difference and that difference against ``--suite`` seconds (the whole
suite's time in CI).
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _unpack(commit: str, destination: Path) -> None:
    archive = subprocess.run(
        ["git", "archive", "--format=tar", commit], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(directory: Path, files: list[str]) -> tuple[float, float, float]:
    present = [name for name in files if (directory / name.split("::")[0]).exists()]
    environment = dict(os.environ, PYTHONPATH=f"{directory / 'src'}{os.pathsep}{directory}")
    imported = subprocess.run(
        [sys.executable, "-c", "import agent_sessions, lint_rules; print(agent_sessions.__file__)"],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(imported).is_relative_to(directory):
        sys.exit(f"{directory} would test {imported}, not its own code")
    load = os.getloadavg()[0]
    cpu = _children_cpu()
    start = time.monotonic()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *present],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - start
    if ran.returncode != 0:
        sys.exit(f"pytest failed in {directory}:\n{ran.stdout[-3000:]}\n{ran.stderr[-2000:]}")
    return wall, _children_cpu() - cpu, load


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="test files (or ids) run on both sides")
    parser.add_argument("--base", required=True, help="the commit before the change")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--suite", type=float, default=876.0, help="the suite's seconds in CI")
    arguments = parser.parse_args()
    runs: dict[str, list[tuple[float, float, float]]] = {"base": [], "now": []}
    with tempfile.TemporaryDirectory(prefix="ci-growth-") as temporary:
        base = Path(temporary)
        _unpack(arguments.base, base)
        for round_number in range(arguments.rounds):
            for side, directory in (("base", base), ("now", ROOT)):
                wall, cpu, load = _time(directory, arguments.files)
                runs[side].append((wall, cpu, load))
                print(
                    f"round {round_number + 1} {side}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
                    f"load {load:.1f}",
                    flush=True,
                )
    medians = {
        side: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
        for side, rows in runs.items()
    }
    loads = [r[2] for rows in runs.values() for r in rows]
    print(f"\nload average {min(loads):.1f}-{max(loads):.1f}, {arguments.rounds} rounds")
    print("| | base | now | now / base | added | added / suite |")
    print("| --- | --- | --- | --- | --- | --- |")
    for column, label in ((0, "wall"), (1, "CPU")):
        before, after = medians["base"][column], medians["now"][column]
        print(
            f"| {label} (median) | {before:.1f} s | {after:.1f} s | {after / before:.2f} | "
            f"{after - before:+.1f} s | {100 * (after - before) / arguments.suite:+.1f}% |"
        )


if __name__ == "__main__":
    main()
