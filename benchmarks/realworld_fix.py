"""Real-world check of ``lint_rules fix``: popular projects from PyPI, each with a rename.

For each project: download its pinned sdist (``pip download --no-deps --no-binary
:all:``), unpack it twice (``before`` and ``after``), add a ``[tool.lint_rules.renames]``
entry taken from the project's history to ``after``'s pyproject.toml, run
``python -m lint_rules fix`` there (every rule, safe fixes only, as a new user would),
then check that

- every file ``fix`` changed still compiles;
- the package still imports (from the ``after`` tree);
- the project's own test suite gives the same outcome per test before and after
  (run offline, from the unpacked trees, with ``-o addopts=`` so that coverage and
  similar plugins are not needed; tests whose dependencies are missing fail the same
  way on both sides).

Usage: ``.venv/bin/python benchmarks/realworld_fix.py [--only NAME ...] [--work DIR]``.
The sdists and trees live under ``--work`` (default: the system temporary directory),
never in the repository. Prints the markdown table of ``benchmarks/README.md`` and
writes the details (findings, withheld fixes, differing tests) to ``WORK/report.json``.
Exit code 1 if a changed file stops compiling, the package stops importing, or a test
changes its outcome.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
PIP_DOWNLOAD = (sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:")
PYTEST = (
    *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts="),
    *("-o", "asyncio_default_fixture_loop_scope=function"),
    *("-W", "ignore::pytest.PytestRemovedIn10Warning"),  # older suites, today's pytest
    "--continue-on-collection-errors",  # a module needing an absent extra fails alone
    # Our own venv's plugin, which no project here uses, imports `packaging.version.parse`:
    # with packaging's renamed tree on the path it would break pytest, not the project.
    *("-p", "no:pytest-lsp"),
)
"""pluggy is not among the projects: pytest imports it, so its own tree cannot be tested."""
PIP_INSTALL = (sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target")
TEST_TIMEOUT = 1800
"""Seconds one test-suite run may take."""


_PYDANTIC_TESTS = ("tests", "--ignore=tests/mypy", "--ignore=tests/pyright")
"""pydantic's own suite without the mypy and pyright plugin tests (they need pinned type
checkers)."""
_URLLIB3_TESTS = (
    *("test", "--ignore=test/with_dummyserver", "--ignore=test/appengine"),
    *("--ignore=test/contrib", "-o", "timeout=60"),
)
"""urllib3's tests without a server (its dummyserver tests crash today's pytest's assertion
rewriting on Python 3.11), with its own per-test timeout."""
_URLLIB3_REQUIREMENTS = (
    "mock==3.0.5",
    "trustme==0.5.3",
    "tornado==6.1",
    "PySocks==1.7.1",
    "python-dateutil==2.8.1",
    "six==1.16.0",
)


@dataclass(frozen=True)
class Project:
    """A pinned sdist, the rename to apply, and how to import and test it."""

    name: str
    version: str
    package: str
    rename: str
    """The ``[tool.lint_rules.renames]`` entry (TOML)."""
    origin: str
    """Where the rename comes from."""
    sources: str = "src"
    """The directory (relative to the sdist root) that holds the package."""
    tests: tuple[str, ...] = ("tests",)
    """pytest arguments (paths) of the test suite."""
    label: str = ""
    """Tells two configurations of one project apart in the table."""
    requirements: tuple[str, ...] = ()
    """Pinned packages its tests need beyond this venv's, installed with ``pip install
    --target`` under ``--work`` and put on ``PYTHONPATH`` after the project's own tree
    (never into this venv)."""
    pytest_options: tuple[str, ...] = ()
    """Extra pytest arguments (a plugin the project's own configuration disables)."""

    @property
    def key(self) -> str:
        return f"{self.name}{'-' + self.label if self.label else ''}"


def _pydantic(rename: str, origin: str, *, label: str) -> Project:
    """pydantic 1.10.13 with one rename, tested by its own suite (``_PYDANTIC_TESTS``)."""
    return Project(
        *("pydantic", "1.10.13", "pydantic", rename, origin),
        sources=".",
        tests=_PYDANTIC_TESTS,
        label=label,
        requirements=("pytest-mock==3.10.0",),
        pytest_options=("-p", "no:hypothesispytest"),
    )


def _urllib3(rename: str, origin: str, *, label: str = "") -> Project:
    """urllib3 1.25.11 with one rename, tested without a server (``_URLLIB3_TESTS``)."""
    return Project(
        *("urllib3", "1.25.11", "urllib3", rename, origin),
        tests=_URLLIB3_TESTS,
        label=label,
        requirements=_URLLIB3_REQUIREMENTS,
    )


PROJECTS = (
    Project(
        "attrs",
        "22.2.0",
        "attr",
        '"attr:s(hash)" = "unsafe_hash"',
        "changelog 22.2.0: `attr.s` accepts *unsafe_hash* for *hash* (PEP 681)",
    ),
    Project(
        "attrs",
        "22.2.0",
        "attr",
        'hash = "unsafe_hash"',
        "the same, written as a bare name (issue 11's shape): every `hash` binding in attrs",
        label="bare",
    ),
    Project(
        "click",
        "8.1.7",
        "click",
        'OptionParser = "_OptionParser"',
        "8.2.0: the parser module is private, `OptionParser` became `_OptionParser`",
    ),
    Project(
        "Jinja2",
        "3.0.3",
        "jinja2",
        'contextfunction = "pass_context"',
        "changelog 3.0.0: `contextfunction` is renamed to `pass_context`",
    ),
    Project(
        "openai-agents",
        "0.24.0",
        "agents",
        'handoff_occured = "handoff_occurred"',  # noqa: LR001
        "the misspelt stream event name (issue 11's own case)",
    ),
    # Issue 21's shapes, on projects not used before.
    Project(
        "marshmallow",
        "3.12.2",
        "marshmallow",
        '"marshmallow.fields:Field.__init__(missing)" = "load_default"',
        "changelog 3.13.0: `missing` is renamed `load_default` (a constructor keyword that"
        " subclasses forward through `**kwargs`)",
        requirements=("pytz==2023.3", "simplejson==3.19.1"),
    ),
    Project(
        "Flask",
        "1.1.4",
        "flask",
        '"flask.helpers:send_file(cache_timeout)" = "max_age"',
        "changelog 2.0.0: `send_file`'s `cache_timeout` is renamed `max_age` (re-exported as"
        " `flask.send_file`, forwarded by `send_from_directory(**options)`)",
        requirements=(
            "Werkzeug==1.0.1",
            "Jinja2==2.11.3",
            "itsdangerous==1.1.0",
            "click==7.1.2",
            "MarkupSafe==2.0.1",
        ),
    ),
    Project(
        "sqlparse",
        "0.4.4",
        "sqlparse",
        '"sqlparse:format(keyword_case)" = "keyword_style"',
        "realistic: a keyword `format` only reads from `**options` (`options.get`)",
        sources=".",
        label="options",
    ),
    Project(
        "sqlparse",
        "0.4.4",
        "sqlparse",
        'split = "split_statements"',
        "realistic: a bare rename of a user function named like `str.split`",
        sources=".",
        label="bare",
    ),
    Project(
        "packaging",
        "21.3",
        "packaging",
        '"packaging.version:parse" = "parse_version"',
        "realistic: a module-level function listed in `__all__`",
        sources=".",
        requirements=("pretend==1.0.9",),
    ),
    # Issue 21's shapes again, each from a real changelog, on four projects not used above
    # (`--only pydantic-config pydantic-all pydantic-bare urllib3 urllib3-attribute mcp
    # openai-agents-events`).
    _pydantic(
        '"pydantic.config:BaseConfig.orm_mode" = "from_attributes"',
        "pydantic 2.0 migration guide: the config setting `orm_mode` is renamed"
        " `from_attributes` (a class attribute that every model's `class Config:` writes)",
        label="config",
    ),
    _pydantic(
        '"pydantic.decorator:validate_arguments" = "validate_call"',
        "pydantic 2.0 migration guide: `validate_arguments` is renamed `validate_call` (a"
        " module-level function in `__all__`, re-exported by `pydantic/__init__.py`)",
        label="all",
    ),
    _pydantic(
        'copy = "model_copy"',
        "pydantic 2.0 migration guide: `BaseModel.copy` is renamed `model_copy` (a bare name"
        " shared with `dict.copy`, `list.copy` and the `copy` module)",
        label="bare",
    ),
    _urllib3(
        '"urllib3.util.retry:Retry.__init__(method_whitelist)" = "allowed_methods"',
        "changelog 1.26.0: `Retry(method_whitelist=...)` is deprecated for"
        " `Retry(allowed_methods=...)` (a constructor keyword, re-exported as `urllib3.Retry`,"
        " copied by `Retry.new(**kw)` through a `dict(...)` of keywords)",
    ),
    _urllib3(
        '"urllib3.util.retry:Retry.DEFAULT_METHOD_WHITELIST" = "DEFAULT_ALLOWED_METHODS"',
        "changelog 1.26.0: `Retry.DEFAULT_METHOD_WHITELIST` is deprecated for"
        " `Retry.DEFAULT_ALLOWED_METHODS` (a class attribute)",
        label="attribute",
    ),
    Project(
        "mcp",
        "1.9.4",
        "mcp",
        'isError = "is_error"',
        "issue 21's own case: `CallToolResult.isError`, a pydantic field that is the"
        " protocol's JSON key, renamed in Python style by a bare entry",
        # its CLI needs typer (not installed); a test waiting on a server that is not
        # there stops after 30 s instead of hanging the run
        tests=("tests", "--ignore=tests/client/test_config.py", "-o", "timeout=30"),
        requirements=(
            "httpx==0.28.1",
            "httpcore==1.0.9",
            "httpx-sse==0.4.0",
            "sse-starlette==2.1.3",
            "pydantic-settings==2.9.1",
            "python-multipart==0.0.20",
            "trio==0.30.0",
            "outcome==1.3.0",
            "sortedcontainers==2.4.0",
            "python-dotenv==1.1.0",
            # mcp 1.9 imports a pydantic internal that later pydantic versions dropped
            "pydantic==2.11.7",
            "pydantic-core==2.33.2",
            "typing-inspection==0.4.1",
        ),
    ),
    Project(
        "openai-agents",
        "0.2.11",
        "agents",
        '[tool.lint_rules.renames.strings]\n"response.audio.delta" = "response.output_audio.delta"',
        "0.3.0 moved the realtime model to the GA Realtime API, whose server event"
        " `response.audio.delta` is `response.output_audio.delta` (a dotted event name the"
        " SDK dispatches on; its tests send the wire's JSON)",
        tests=("tests/realtime",),
        label="events",
        requirements=(
            *("openai==1.104.2", "httpx==0.28.1", "httpcore==1.0.9", "distro==1.9.0"),
            "jiter==0.10.0",
        ),
    ),
)


@dataclass
class Outcome:
    """What ``fix`` did to one project and what the checks found."""

    project: Project
    fixed: int = 0
    remaining: int = 0
    withheld: int = 0
    not_fixed: int = 0
    fix_seconds: float = 0.0
    changed: list[str] = field(default_factory=list)
    not_compiling: list[str] = field(default_factory=list)
    imports_before: bool = False
    imports_after: bool = False
    tests_before: dict[str, str] = field(default_factory=dict)
    tests_after: dict[str, str] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)
    renamed_tests: dict[tuple[str, str], str] = field(default_factory=dict)
    """Test functions ``fix`` renamed (LR004): (module, old name) -> new name."""

    @property
    def differing_tests(self) -> list[str]:
        """Tests whose outcome changed; a renamed test function is compared with its old
        self (pytest collects it under its new name)."""
        before = {self._renamed(name): outcome for name, outcome in self.tests_before.items()}
        names = sorted(set(before) | set(self.tests_after))
        return [
            f"{name}: {before.get(name, 'absent')} -> {self.tests_after.get(name, 'absent')}"
            for name in names
            if before.get(name) != self.tests_after.get(name)
        ]

    def _renamed(self, test_id: str) -> str:
        """``test_id`` (``module[.Class]::function[params]``) under its new name."""
        prefix, separator, last = test_id.rpartition("::")
        function, bracket, parameters = last.partition("[")
        for (module, old), new in self.renamed_tests.items():
            if function == old and (prefix == module or prefix.startswith(module + ".")):
                return f"{prefix}{separator}{new}{bracket}{parameters}"
        return test_id

    @property
    def ok(self) -> bool:
        return (
            not self.not_compiling
            and (self.imports_after or not self.imports_before)
            and not self.differing_tests
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="project keys to run (default: all)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "lint_realworld")
    arguments = parser.parse_args()
    work: Path = arguments.work.resolve()
    projects = [p for p in PROJECTS if not arguments.only or p.key in arguments.only]
    outcomes = []
    for project in projects:
        print(f"== {project.key} {project.version}", file=sys.stderr, flush=True)
        outcomes.append(check_project(project, work))
    print(table(outcomes))
    report = [
        {
            "project": f"{o.project.key} {o.project.version}",
            "rename": o.project.rename,
            "fixed": o.fixed,
            "remaining": o.remaining,
            "withheld": o.withheld,
            "not_fixed": o.not_fixed,
            "changed": o.changed,
            "not_compiling": o.not_compiling,
            "imports": [o.imports_before, o.imports_after],
            "differing_tests": o.differing_tests,
            "renamed_tests": {f"{m}::{old}": new for (m, old), new in o.renamed_tests.items()},
            "findings": o.findings,
        }
        for o in outcomes
    ]
    (work / "report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0 if all(outcome.ok for outcome in outcomes) else 1


def check_project(project: Project, work: Path) -> Outcome:
    sdist = download(project, work / "sdists")
    tree = work / f"{project.key}-{project.version}"
    shutil.rmtree(tree, ignore_errors=True)
    before, after = tree / "before", tree / "after"
    unpack(sdist, before)
    shutil.copytree(before, after, symlinks=True)
    configure(after, project.rename)
    install_requirements(project, work)
    outcome = Outcome(project)
    outcome.imports_before = imports(before, project)
    outcome.tests_before = run_tests(before, project, tree / "before.xml")
    started = time.perf_counter()
    fix = subprocess.run(
        [sys.executable, "-m", "lint_rules", "fix"],
        cwd=after,
        capture_output=True,
        text=True,
        check=False,
        env=_environment(after, project),
    )
    outcome.fix_seconds = time.perf_counter() - started
    if fix.returncode == 2:
        raise SystemExit(f"{project.name}: lint_rules fix failed: {fix.stderr.strip()}")
    # `Fixed 3 findings, 1 error and 2 warnings remaining.` (or `..., 0 remaining.`)
    summary = re.search(r"Fixed (\d+) findings?, (.+?) remaining\.", fix.stdout)
    if summary is None:
        raise SystemExit(f"{project.name}: no summary in the output of fix:\n{fix.stdout}")
    remaining = sum(int(number) for number in re.findall(r"\d+", summary[2]))
    outcome.fixed, outcome.remaining = int(summary[1]), remaining
    outcome.findings = [line for line in fix.stdout.splitlines() if ": LR" in line]
    # Withheld: the fix failed verification, or the target's rename is withheld (LR001: an
    # occurrence is not known to be the target's). Not fixed: a finding with no fix at all.
    outcome.withheld = sum(
        "fix withheld" in line or "rename withheld" in line for line in outcome.findings
    )
    outcome.not_fixed = sum(
        "not fixed" in line or "not renamed" in line for line in outcome.findings
    )
    outcome.changed = changed_files(before, after)
    outcome.renamed_tests = renamed_test_functions(before, after, outcome.changed)
    outcome.not_compiling = [
        name for name in outcome.changed if name.endswith(".py") and not compiles(after / name)
    ]
    outcome.imports_after = imports(after, project)
    outcome.tests_after = run_tests(after, project, tree / "after.xml")
    return outcome


def renamed_test_functions(
    before: Path, after: Path, changed: list[str]
) -> dict[tuple[str, str], str]:
    """The ``test_*`` functions a changed file defines under another name at the same
    line after ``fix``, by (dotted module, old name)."""
    import ast

    renamed = {}
    for name in changed:
        if not name.endswith(".py"):
            continue
        tests = []
        for root in (before, after):
            tree = ast.parse((root / name).read_bytes())
            tests.append(
                {
                    node.lineno: node.name
                    for node in ast.walk(tree)
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and node.name.startswith("test")
                }
            )
        module = name.removesuffix(".py").replace("/", ".")
        for line, old in tests[0].items():
            new = tests[1].get(line)
            if new is not None and new != old:
                renamed[module, old] = new
    return renamed


def download(project: Project, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    spec = f"{project.name}=={project.version}"
    name = "[-_]".join(re.escape(part) for part in project.name.split("-"))
    stem = re.compile(rf"{name}-{re.escape(project.version)}\.tar\.gz")
    found = [path for path in directory.iterdir() if stem.fullmatch(path.name)]
    if not found:
        subprocess.run(
            [*PIP_DOWNLOAD, spec, "-d", str(directory)],
            check=True,
        )
        found = [path for path in directory.iterdir() if stem.fullmatch(path.name)]
    if not found:
        raise SystemExit(f"{spec}: no sdist downloaded into {directory}")
    return found[0]


def install_requirements(project: Project, work: Path) -> None:
    target = _requirements_directory(project, work)
    marker = target / ".installed"
    wanted = "\n".join(project.requirements)
    if not project.requirements or (marker.exists() and marker.read_text() == wanted):
        return
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(
        [*PIP_INSTALL, str(target), *project.requirements],
        check=True,
    )
    marker.write_text(wanted)


def _requirements_directory(project: Project, work: Path) -> Path:
    return work / "requirements" / project.key


def unpack(sdist: Path, target: Path) -> None:
    with tempfile.TemporaryDirectory(dir=target.parent.parent) as scratch:
        with tarfile.open(sdist) as archive:
            archive.extractall(scratch, filter="data")
        (top,) = Path(scratch).iterdir()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(top), target)


def configure(root: Path, rename: str) -> None:
    pyproject = root / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8") if pyproject.exists() else ""
    if "[tool.lint_rules" in text:
        raise SystemExit(f"{root}: already configures lint_rules")
    pyproject.write_text(f"{text}\n[tool.lint_rules.renames]\n{rename}\n", encoding="utf-8")


def _environment(root: Path, project: Project) -> dict[str, str]:
    environment = dict(os.environ)
    paths = [str(root / project.sources), str(root)]
    if project.requirements:
        paths.append(str(_requirements_directory(project, root.parent.parent)))
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    for name in ("OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY"):
        environment.pop(name, None)
    return environment


def imports(root: Path, project: Project) -> bool:
    result = subprocess.run(
        [sys.executable, "-c", f"import {project.package}; print({project.package}.__file__)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        env=_environment(root, project),
    )
    return result.returncode == 0 and str(root) in result.stdout


def run_tests(root: Path, project: Project, report: Path) -> dict[str, str]:
    """Each test's outcome (passed, failed, error, skipped) by its id."""
    subprocess.run(
        [*PYTEST, *project.pytest_options, f"--junitxml={report}", *project.tests],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=TEST_TIMEOUT,
        env=_environment(root, project),
    )
    if not report.exists():
        return {"<the test run itself>": "did not report"}
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(report).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = next(
            (kind for kind in ("error", "failure", "skipped") if kind in kinds), "passed"
        )
        outcomes[name] = outcome
    return outcomes


def changed_files(before: Path, after: Path) -> list[str]:
    changed = []
    for path in sorted(after.rglob("*")):
        if not path.is_file() or ".lint_rules_cache" in path.parts:
            continue
        relative = path.relative_to(after)
        if relative.as_posix() == "pyproject.toml":
            continue
        original = before / relative
        if not original.exists() or not filecmp.cmp(original, path, shallow=False):
            changed.append(relative.as_posix())
    return changed


def compiles(path: Path) -> bool:
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| project | rename | files changed | fixed / remaining (withheld, not fixed) "
        "| changed files compile | imports | tests before | tests after | same per test |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        p = o.project
        lines.append(
            f"| {p.name} {p.version} | `{_one_line(p.rename)}` | {len(o.changed)} "
            f"| {o.fixed} / {o.remaining} ({o.withheld}, {o.not_fixed}) "
            f"| {len(o.changed) - len(o.not_compiling)}/{len(o.changed)} "
            f"| {_yes(o.imports_before)} -> {_yes(o.imports_after)} "
            f"| {_counts(o.tests_before)} | {_counts(o.tests_after)} "
            f"| {_same(o)} |"
        )
    return "\n".join(lines)


def _one_line(rename: str) -> str:
    """A rename for a table cell: a ``strings`` entry shows its table name first."""
    return rename.replace("[tool.lint_rules.renames.strings]\n", "strings: ")


def _same(outcome: Outcome) -> str:
    if outcome.differing_tests:
        return f"no: {len(outcome.differing_tests)} differ"
    renamed = len(outcome.renamed_tests)
    return f"yes ({renamed} renamed by LR004)" if renamed else "yes"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _counts(tests: dict[str, str]) -> str:
    counts: dict[str, int] = {}
    for outcome in tests.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    order = ("passed", "failure", "error", "skipped")
    return ", ".join(f"{counts[kind]} {kind}" for kind in order if counts.get(kind))


if __name__ == "__main__":
    sys.exit(main())
