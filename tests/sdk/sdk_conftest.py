"""Root conftest of the Agents SDK's test tree, as ``test_sdk_session_tests.py`` unpacks it.

Copied as ``conftest.py`` beside the SDK's ``tests/`` directory. pytest imports it before
the SDK's own ``tests/conftest.py`` and before any test module, so every name through
which the SDK's session tests reach ``SQLiteSession`` or ``RedisSession`` already holds
ours when their ``from agents import ...`` lines run. Nothing in the SDK's files is edited.

It also writes, to the JSON file named by ``SDK_TESTS_REPORT``, the outcome of every test
(``passed``, ``failed`` or ``skipped``, with the first line of the failure or the skip
reason) and, per test module, which session classes its globals hold, so the outer test
can check that the swap reached the SDK's test files.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

import agent_sessions

# (module, attribute, our class): the public names and the defining modules.
SWAPS: tuple[tuple[str, str, type], ...] = (
    ("agents", "SQLiteSession", agent_sessions.SQLiteSession),
    ("agents.memory", "SQLiteSession", agent_sessions.SQLiteSession),
    ("agents.memory.sqlite_session", "SQLiteSession", agent_sessions.SQLiteSession),
    ("agents.extensions.memory", "RedisSession", agent_sessions.RedisSession),
    ("agents.extensions.memory.redis_session", "RedisSession", agent_sessions.RedisSession),
)

for module_name, attribute, ours in SWAPS:
    setattr(importlib.import_module(module_name), attribute, ours)

_outcomes: dict[str, dict[str, str]] = {}
_modules: dict[str, dict[str, str]] = {}


def _summary(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(report.longrepr, "reprcrash", None)
    message = getattr(crash, "message", None) or str(report.longrepr)
    return message.strip().splitlines()[0] if message.strip() else ""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep the worst outcome of a test's phases (a failed teardown fails the test)."""
    previous = _outcomes.get(report.nodeid)
    if previous is not None and previous["outcome"] != "passed":
        return
    if report.failed:
        _outcomes[report.nodeid] = {"outcome": "failed", "detail": _summary(report)}
    elif report.skipped:
        _outcomes[report.nodeid] = {"outcome": "skipped", "detail": _summary(report)}
    elif report.when == "call":
        _outcomes[report.nodeid] = {"outcome": "passed", "detail": ""}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Record, per test module, where its ``SQLiteSession``/``RedisSession`` come from."""
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module.__name__ in _modules:
            continue
        found: dict[str, str] = {}
        for name in ("SQLiteSession", "RedisSession"):
            value: Any = getattr(module, name, None)
            if isinstance(value, type):
                found[name] = f"{value.__module__}.{value.__qualname__}"
        _modules[module.__name__] = found


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module that fails to import is one failure, under its path."""
    if report.failed:
        crash = getattr(report.longrepr, "reprcrash", None)
        detail = getattr(crash, "message", None) or str(report.longrepr).strip()[-500:]
        _outcomes[report.nodeid] = {"outcome": "failed", "detail": f"collection: {detail}"}


def pytest_sessionfinish(session: pytest.Session) -> None:
    target = os.environ.get("SDK_TESTS_REPORT")
    if target:
        report = {"outcomes": _outcomes, "modules": _modules}
        Path(target).write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
