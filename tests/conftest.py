"""Shared test configuration.

Under CI (any truthy ``CI``: ``true``, ``1``, ``yes``, ``on``) nothing this repository needs
may be skipped: a skip there means a tool, package or service is missing, and the run fails
with the skip's reason. Only the skips listed in ``SKIPS_ALLOWED_UNDER_CI`` stay skips: they
state a fact about the code under test (a backend without threads, an older Python), not
something missing from the machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Generator

import pytest

# The conformance kit lives in the package; let pytest explain its failed asserts.
pytest.register_assert_rewrite("agent_sessions.testing")

# test_kit.py runs the kit on deliberately broken backends in an inner pytest.
pytest_plugins = ["pytester"]

SKIPS_ALLOWED_UNDER_CI: tuple[re.Pattern[str], ...] = tuple(
    re.compile(pattern)
    for pattern in (
        # Capabilities a backend under the conformance kit may lack.
        r"does not support (threads|processes)$",
        r"cannot write raw rows$",
        r"has no close\(\)$",
        r"has no store that lists sessions$",
        r"is not an async context manager$",
        r"cannot freeze its server$",
        r"may store a write cancelled on a frozen server$",
        r"^needs the frozen-server hooks: ",
        r"cannot make its store fail$",
        # PostgreSQL's json column cannot hold such a row, so there is nothing to test.
        r"^PostgreSQL's json column refuses ",
        # Nor can a text column (SQLAlchemy backend on MariaDB/PostgreSQL) hold such bytes.
        r"^a text column cannot hold ",
        # A test of a parser detail of one Python version.
        r"^3\.10's parser builds this tree$",
    )
)
"""Skip reasons that are facts about the code, not something missing (searched with re)."""


def ci_is_on() -> bool:
    """True when the ``CI`` variable is set to anything but an explicit "off" value."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no", "off")


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail_skip_under_ci(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not (report.skipped and ci_is_on()) or hasattr(report, "wasxfail"):
        return
    reason = _skip_reason(report)
    if any(pattern.search(reason) for pattern in SKIPS_ALLOWED_UNDER_CI):
        return
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI={os.environ.get('CI')!r}, where everything this repository needs "
        f"must be present: {reason}"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    _fail_skip_under_ci(report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    _fail_skip_under_ci(report)
    return report


@pytest.fixture
def decryptions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """A one-element list counting every decryption of an ``EncryptedSession`` envelope
    from the test's start (the cache tests: what a read found cached it did not decrypt)."""
    from agent_sessions.encrypted import _SessionKey

    count = [0]
    original = _SessionKey.open

    def counting(self: _SessionKey, raw: bytes, at: int) -> str:
        count[0] += 1
        return original(self, raw, at)

    monkeypatch.setattr(_SessionKey, "open", counting)
    return count
