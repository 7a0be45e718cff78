"""Benchmark: LR003 on two SDKs with twin sync/async Protocols, as a new user would run it.

Downloads the sdist of ``openai`` or ``mcp`` (``pip download --no-deps --no-binary :all:``)
into a cache directory outside the repository (or uses the sdist given with ``--sdist``),
unpacks it into a temporary directory, configures LR003 on every Protocol its package
declares (``class X(Protocol)`` under ``src/``, read from the source; implementations
anywhere in the tree: ``"**/*.py"``), runs ``python -m lint_rules check --select LR003``
and prints the findings grouped by class, protocol and kind (the judgement of each is in
benchmarks/README.md).

``--base DIR`` runs the ``lint_rules`` package of DIR instead of the installed one (an
export of another commit, e.g. ``git archive main lint_rules | tar -x -C DIR``), for a
before/after comparison.

Usage: ``.venv/bin/python benchmarks/lr003_findings.py {openai,mcp} [--sdist PATH]
[--cache DIR] [--base DIR] [--keep]``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import _common

VERSIONS = {"openai": "3.51.0", "mcp": "2.3.0"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sdk", choices=sorted(VERSIONS))
    parser.add_argument("--sdist", type=Path, help="an sdist (.tar.gz) instead of downloading")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "lr003-sdists")
    parser.add_argument("--base", type=Path, help="run the lint_rules package of this directory")
    parser.add_argument("--keep", action="store_true", help="keep the unpacked tree")
    arguments = parser.parse_args()
    sdist = arguments.sdist or _common.download(
        arguments.sdk, VERSIONS[arguments.sdk], arguments.cache
    )
    work = Path(tempfile.mkdtemp(prefix="lr003-"))
    try:
        tree = _common.unpack(sdist, work)
        protocols = _configure(tree)
        print(f"{arguments.sdk} {VERSIONS[arguments.sdk]}: {len(protocols)} protocols configured")
        command = _common.lint_command(arguments.base)
        start = time.perf_counter()
        run = subprocess.run(
            [*command, "check", "--select", "LR003", "--no-cache", "--format", "json"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - start
        if run.returncode not in (0, 1):
            print(run.stderr, file=sys.stderr)
            return 2
        findings = json.loads(run.stdout)
        groups: Counter[tuple[str, str, str, str]] = Counter()
        for finding in findings:
            message = str(finding["message"])
            owner, problem = re.match(r"`([^`]*)` ([^;]*)", message).groups()  # type: ignore[union-attr]
            protocol = re.search(r"the protocol `([^`]*)`", message).group(1)  # type: ignore[union-attr]
            kind = re.sub(r"`[^`]*`", "X", problem)
            groups[str(finding["path"]), owner.split(".")[0], protocol, kind] += 1
        for (path, owner, protocol, kind), count in sorted(groups.items()):
            print(f"{count:3} {path} {owner} [{protocol.rpartition('.')[2]}] {kind}")
        print(f"{len(findings)} LR003 findings, {elapsed:.1f} s")
    finally:
        if arguments.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work)
    return 0


def _configure(tree: Path) -> list[str]:
    """Append ``[tool.lint_rules]`` naming every Protocol of the package under ``src/``."""
    keys = [
        f"{module}:{name}"
        for path, module in _common.src_modules(tree)
        for name in _common.PROTOCOL.findall(path.read_text(encoding="utf-8"))
    ]
    table = "\n".join(f'"{key}" = ["**/*.py"]' for key in keys)
    with (tree / "pyproject.toml").open("a", encoding="utf-8") as file:
        file.write(
            f'\n[tool.lint_rules]\nselect = ["LR003"]\n\n[tool.lint_rules.protocols]\n{table}\n'
        )
    return keys


if __name__ == "__main__":
    raise SystemExit(main())
