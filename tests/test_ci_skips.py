"""Under a truthy CI a skip is a failure naming what is missing, unless it states a fact."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

CONFTEST_PATH = Path(__file__).resolve().parent / "conftest.py"
CONFTEST = CONFTEST_PATH.read_text(encoding="utf-8")


def _load_ci_is_on() -> Callable[[], bool]:
    # By path: several directories of this suite have a module named "conftest".
    spec = importlib.util.spec_from_file_location("tests_root_conftest", CONFTEST_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function: Callable[[], bool] = module.ci_is_on
    return function


ci_is_on = _load_ci_is_on()

TESTS = """
import pytest

def test_tool_missing():
    pytest.skip("pre-commit is not installed")

@pytest.mark.skipif(True, reason="the typos executable is missing")
def test_marked_missing():
    pass

def test_capability():
    pytest.skip("TestListSession does not support processes")

def test_runs():
    pass
"""

IMPORT_SKIP = """
import pytest

pytest.importorskip("a_package_that_is_not_installed_anywhere")

def test_never_collected():
    pass
"""


QUICK = ("-p", "no:cacheprovider", "-p", "no:asyncio", "-p", "no:hypothesispytest")


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_needs=TESTS, test_import=IMPORT_SKIP)
    return pytester


@pytest.mark.parametrize("value", ["1", "yes"])
def test_under_ci_a_missing_thing_fails_with_its_reason(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("CI", value)
    result = suite.runpytest_inprocess(*QUICK, "-rfEs", "--continue-on-collection-errors")
    # A skip in setup (a skipif mark, a fixture) fails as an error of that test.
    result.assert_outcomes(passed=1, failed=1, skipped=1, errors=2)
    result.stdout.fnmatch_lines_random(
        [
            f"*skipped under CI='{value}'*: pre-commit is not installed*",
            f"*skipped under CI='{value}'*: the typos executable is missing*",
            f"*skipped under CI='{value}'*a_package_that_is_not_installed_anywhere*",
            "SKIPPED*does not support processes",
        ]
    )


@pytest.mark.parametrize("value", [None, "false"])
def test_outside_ci_a_missing_thing_is_a_skip(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    result = suite.runpytest_inprocess(*QUICK)
    result.assert_outcomes(passed=1, skipped=4)


@pytest.mark.parametrize(
    ("value", "on"),
    [
        *((value, True) for value in ("true", "True", "1", "yes", "on", "github-actions")),
        *((value, False) for value in (None, "", " ", "false", "FALSE", "0", "no", "off")),
    ],
)
def test_which_values_of_ci_count_as_ci(
    monkeypatch: pytest.MonkeyPatch, value: str | None, on: bool
) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)
    assert ci_is_on() is on
