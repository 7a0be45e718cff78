"""The Agents SDK's own session tests, run on our ``SQLiteSession`` and ``RedisSession``.

The ``openai-agents`` sdist of the installed version (it ships the SDK's ``tests/``) is
downloaded once into pytest's cache (``pip download --no-deps --no-binary :all:``); its
``tests/memory/test_session.py``, ``tests/memory/test_session_limit.py`` and
``tests/extensions/memory/test_redis_session.py`` run, unedited, in a pytest subprocess
under the SDK's own pytest configuration, with ``sdk_conftest.py`` as the root conftest:
it puts our classes under every name the SDK's tests import them by. Redis tests run on
fakeredis, as the SDK's tests choose when it is installed.

``sdk_tests_excluded.toml`` lists the SDK tests that read SDK internals (private
attributes, its table layout through ``sqlite3``, its key names), each with its reason.
Any other failure fails here; so does an excluded test that now passes (a stale
exclusion), so the list only shrinks. Without network the download is a skip, which
``tests/conftest.py`` turns into a failure under CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

SDK = "openai-agents"
SDK_TESTS = (
    "tests/memory/test_session.py",
    "tests/memory/test_session_limit.py",
    "tests/extensions/memory/test_redis_session.py",
)
HERE = Path(__file__).parent
EXCLUDED_FILE = HERE / "sdk_tests_excluded.toml"
KINDS = ("internal", "user-facing", "by design", "sdk skip")
# Per-test limit in the SDK's run: its session tests take well under a second here; the
# excluded ones that wait for the SDK's own redis-py calls would otherwise hang.
SDK_TEST_TIMEOUT = 4
# The SDK's run (in the first test's setup) takes 30-130 s on 2 CPUs, depending on the load.
pytestmark = pytest.mark.timeout(600)
OUR_CLASSES = {
    "SQLiteSession": "agent_sessions.sqlite.SQLiteSession",
    "RedisSession": "agent_sessions.redis.RedisSession",
}


@dataclass(frozen=True)
class SdkRun:
    """What the SDK's session tests did on our classes."""

    version: str
    outcomes: dict[str, dict[str, str]] = field(repr=False)
    modules: dict[str, dict[str, str]] = field(repr=False)
    returncode: int
    output: str = field(repr=False)

    def with_outcome(self, outcome: str) -> dict[str, str]:
        return {
            node: result["detail"]
            for node, result in sorted(self.outcomes.items())
            if result["outcome"] == outcome
        }


def load_exclusions() -> dict[str, str]:
    """The ``[excluded]`` table: SDK test node id (or id without parameters) -> reason."""
    table = tomllib.loads(EXCLUDED_FILE.read_text(encoding="utf-8")).get("excluded", {})
    if not isinstance(table, dict):
        raise TypeError(f"{EXCLUDED_FILE.name}: [excluded] must be a table")
    for node, reason in table.items():
        if not isinstance(reason, str) or reason.split(":", 1)[0] not in KINDS:
            raise TypeError(
                f"{EXCLUDED_FILE.name}: {node!r} needs a reason starting with one of {KINDS}"
            )
    return dict(table)


def exclusion_of(node: str, exclusions: dict[str, str]) -> str | None:
    """The exclusion naming ``node`` itself, or its test without the parameters."""
    if node in exclusions:
        return node
    bare = node.split("[", 1)[0]
    return bare if bare in exclusions else None


def _sdist(version: str, cache: Path) -> Path:
    tarball = cache / f"openai_agents-{version}.tar.gz"
    if tarball.is_file():
        return tarball
    download = [
        sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
        f"{SDK}=={version}", "--dest", str(cache),
    ]  # fmt: skip
    try:
        done = subprocess.run(download, capture_output=True, text=True, timeout=180, check=False)
    except subprocess.TimeoutExpired:
        pytest.skip(f"pip download of the {SDK} {version} sdist timed out after 180 s")
    if done.returncode != 0 or not tarball.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        pytest.skip(f"could not download the {SDK} {version} sdist: {' / '.join(tail)}")
    return tarball


def _unpack(tarball: Path, version: str, target: Path) -> Path:
    """The SDK's ``tests/`` helpers, its three session test files and its pyproject.toml."""
    prefix = f"openai_agents-{version}/"
    wanted_dirs = {str(Path(name).parent) for name in SDK_TESTS}
    with tarfile.open(tarball) as archive:
        members = []
        for member in archive.getmembers():
            relative = member.name.removeprefix(prefix)
            if not member.isfile() or relative == member.name:
                continue
            path = Path(relative)
            parent = str(path.parent)
            if (
                relative == "pyproject.toml"
                or relative in SDK_TESTS
                or (parent == "tests" and path.suffix == ".py")
                or (path.name == "__init__.py" and any(d.startswith(parent) for d in wanted_dirs))
            ):
                members.append(member)
        if hasattr(tarfile, "data_filter"):
            archive.extractall(target, members=members, filter="data")
        else:  # Python before 3.10.12 has no extraction filters
            archive.extractall(target, members=members)
    root = target / prefix.rstrip("/")
    missing = [name for name in SDK_TESTS if not (root / name).is_file()]
    if missing:
        pytest.fail(f"the {SDK} {version} sdist has no {', '.join(missing)}")
    shutil.copyfile(HERE / "sdk_conftest.py", root / "conftest.py")
    return root


@pytest.fixture(scope="module")
def sdk_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SdkRun:
    try:
        version = metadata.version(SDK)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{SDK} is not installed")
    cache_provider = getattr(request.config, "cache", None)
    cache = (
        cache_provider.mkdir("openai-agents-sdist")
        if cache_provider is not None
        else tmp_path_factory.mktemp("openai-agents-sdist")
    )
    root = _unpack(_sdist(version, cache), version, tmp_path_factory.mktemp("sdk"))
    report = root / "report.json"
    env = {**os.environ, "SDK_TESTS_REPORT": str(report)}
    env.pop("PYTHONPATH", None)
    command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", "pyproject.toml",
        "--rootdir", str(root), "-o", f"timeout={SDK_TEST_TIMEOUT}", "--tb=native", *SDK_TESTS,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=root, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = done.stdout + done.stderr
    if not report.is_file():
        pytest.fail(f"the SDK's pytest wrote no report (exit {done.returncode}):\n{output[-3000:]}")
    data = json.loads(report.read_text(encoding="utf-8"))
    return SdkRun(version, data["outcomes"], data["modules"], done.returncode, output)


def test_every_exclusion_has_a_reason_and_names_an_sdk_test_file() -> None:
    for node in load_exclusions():
        assert node.split("::", 1)[0] in SDK_TESTS, f"{node}: not in one of {SDK_TESTS}"


def test_the_sdk_tests_use_our_classes(sdk_run: SdkRun) -> None:
    expected = {Path(name).stem for name in SDK_TESTS}
    assert {name.rsplit(".", 1)[-1] for name in sdk_run.modules} == expected, sdk_run.output[-3000:]
    for module, classes in sdk_run.modules.items():
        assert classes, f"{module} holds neither SQLiteSession nor RedisSession"
        for name, where in classes.items():
            assert where == OUR_CLASSES[name], f"{module}.{name} is {where}, not ours"
    assert len(sdk_run.outcomes) > 100, sdk_run.output[-3000:]


def summary(sdk_run: SdkRun, exclusions: dict[str, str]) -> str:
    """The counts ``benchmarks/README.md`` reports: outcomes, and exclusions by kind."""
    counts = {
        outcome: len(sdk_run.with_outcome(outcome)) for outcome in ("passed", "failed", "skipped")
    }
    kinds = dict.fromkeys(KINDS, 0)
    for node in sdk_run.outcomes:
        key = exclusion_of(node, exclusions)
        if key is not None:
            kinds[exclusions[key].split(":", 1)[0]] += 1
    excluded = sum(kinds.values())
    return (
        f"openai-agents {sdk_run.version}: {len(sdk_run.outcomes)} tests, "
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped; "
        f"{excluded} excluded ("
        + ", ".join(f"{count} {kind}" for kind, count in kinds.items())
        + ")"
    )


def test_the_sdk_session_tests_pass_on_our_classes(sdk_run: SdkRun) -> None:
    exclusions = load_exclusions()
    print(summary(sdk_run, exclusions))
    unexpected = {
        node: detail
        for node, detail in sdk_run.with_outcome("failed").items()
        if exclusion_of(node, exclusions) is None
    }
    skipped = {
        node: detail
        for node, detail in sdk_run.with_outcome("skipped").items()
        if exclusion_of(node, exclusions) is None
    }
    lines = [f"  {node}: {detail}" for node, detail in {**unexpected, **skipped}.items()]
    assert not lines, (
        f"{len(unexpected)} SDK {sdk_run.version} session tests failed and {len(skipped)} "
        f"were skipped on our classes, not excluded in {EXCLUDED_FILE.name}:\n" + "\n".join(lines)
    )


def test_no_exclusion_is_stale(sdk_run: SdkRun) -> None:
    exclusions = load_exclusions()
    excluded_nodes: dict[str, list[str]] = {node: [] for node in exclusions}
    for node, result in sdk_run.outcomes.items():
        key = exclusion_of(node, exclusions)
        if key is not None:
            excluded_nodes[key].append(result["outcome"])
    absent = sorted(node for node, outcomes in excluded_nodes.items() if not outcomes)
    passing = sorted(
        node
        for node, outcomes in excluded_nodes.items()
        if outcomes and "passed" in outcomes and all(outcome == "passed" for outcome in outcomes)
    )
    assert not absent, f"excluded tests the SDK {sdk_run.version} no longer has: {absent}"
    assert not passing, f"excluded tests that now pass on our classes (stale): {passing}"
