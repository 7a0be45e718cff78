"""The conformance kit itself: a correct third-party backend passes it, and every kit test
fails the backend broken in exactly the way it guards.

The mutation self-test runs the whole kit, in one in-process pytest, on ``ListSession`` and
on each broken backend registered in ``MUTANT_REGISTRIES``, and checks for each mutant the
exact set of failing tests and the passed, skipped and errored counts. A kit test without a
broken backend, or a mutant for a test the kit no longer has, fails it.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import os
import sys
import types
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agent_sessions.testing import SessionConformance

from .list_session import ListKit, ListSession, ListStore

__all__ = ["ListSession", "ListStore", "TestListSession"]

MUTANT_REGISTRIES: dict[str, str] = {
    # module under tests/sessions: its dict of kit test name -> broken backend (or Mutant)
    "kit_mutants": "MUTANTS",
    "kit_mutants_loops": "LOOP_MUTANTS",
}
"""Where the broken backends come from: one line per module."""

COMPOSITE_TESTS = frozenset(
    {
        "test_session_works_from_sequential_event_loops",
        "test_runner_run_sync_twice_on_one_session",
        "test_four_threads_with_a_loop_each_share_one_session",
        "test_close_from_another_event_loop",
    }
)
"""The event-loop kit tests: they run the basic operations on other loops and threads."""

NEEDS_FREEZE_HOOKS = frozenset(
    {
        "test_calls_on_a_frozen_server_fail_within_a_bound",
        "test_add_items_cancelled_on_a_frozen_server_is_not_stored_later",
    }
)
"""Kit tests that ListKit skips (it cannot freeze its store); their broken backends run on
LoopKit, which has the hooks, in tests/sessions/test_loop_mutants.py."""


class TestListSession(ListKit):
    """A backend outside this library runs the kit as its authors would."""


# -- the mutation self-test -----------------------------------------------------------------


@dataclass
class Outcomes:
    """What the inner run reported for one kit class: node ids (``test[param]``) by outcome."""

    passed: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)
    errored: set[str] = field(default_factory=set)


def kit_test_names() -> set[str]:
    return {
        name
        for name, member in inspect.getmembers(SessionConformance)
        if name.startswith("test_") and inspect.isfunction(member)
    }


def registered_mutants() -> dict[str, tuple[type, frozenset[str]]]:
    """Kit test name -> (broken backend, the kit tests it must fail), from every registry."""
    from .kit_mutants import Mutant

    mutants: dict[str, tuple[type, frozenset[str]]] = {}
    for module_name, attribute in MUTANT_REGISTRIES.items():
        module = importlib.import_module(f"{__package__}.{module_name}")
        registry: dict[str, type | Mutant] = getattr(module, attribute)
        for test, entry in registry.items():
            if test in mutants:
                raise AssertionError(f"{module_name}.{attribute}: {test} has a mutant already")
            if isinstance(entry, Mutant):
                mutants[test] = (entry.backend, entry.fails or frozenset({test}))
            else:
                mutants[test] = (entry, frozenset({test}))
    return mutants


def _kit_class(name: str, backend: type) -> type:
    if issubclass(backend, SessionConformance):
        return type(name, (backend,), {})
    if issubclass(backend, ListSession):
        return type(name, (ListKit,), {"session_class": backend})
    raise TypeError(f"{backend!r} is neither a ListSession nor a SessionConformance subclass")


class _Reports:
    def __init__(self) -> None:
        self.by_class: dict[str, Outcomes] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        _, class_name, test_id = report.nodeid.split("::")
        outcomes = self.by_class.setdefault(class_name, Outcomes())
        if report.when == "call":
            getattr(outcomes, report.outcome).add(test_id)
        elif report.failed:
            outcomes.errored.add(test_id)
        elif report.skipped:
            outcomes.skipped.add(test_id)


def run_kit_on_mutants(directory: Path) -> dict[str, Outcomes]:
    """The whole kit on ListSession ("correct") and on every mutant (by the kit test it is
    for), in one pytest in this process."""
    mutants = sorted(registered_mutants().items())
    classes = {"TestCorrect": _kit_class("TestCorrect", ListSession)}
    for index, (_, (backend, _)) in enumerate(mutants):
        classes[f"TestMutant{index}"] = _kit_class(f"TestMutant{index}", backend)
    module = types.ModuleType("kit_mutants_under_test")
    module.__dict__.update(classes)
    (directory / "test_mutants.py").write_text(f"from {module.__name__} import *\n")
    reports = _Reports()
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    sys.modules[module.__name__] = module
    # Thousands of short tests: the collector would rescan every object of both sessions
    # again and again (a third of the run). Collected once, at the end.
    gc.collect()
    gc.disable()
    try:
        code = pytest.main(
            [
                str(directory / "test_mutants.py"),
                f"--rootdir={directory}",
                "-c",
                os.devnull,
                "-qq",
                "--tb=no",
                "-p",
                "no:cacheprovider",
                # The outer test's timeout bounds the whole inner run; a second
                # pytest-timeout inside would reset the outer one's alarm.
                "-p",
                "no:timeout",
                "-p",
                "no:hypothesispytest",
                "-o",
                "asyncio_mode=strict",
                "-o",
                "asyncio_default_fixture_loop_scope=function",
            ],
            plugins=[reports],
        )
    finally:
        gc.enable()
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            if name in (module.__name__, "test_mutants"):
                del sys.modules[name]
        gc.collect()
    assert code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), f"inner pytest: {code!r}"
    runs = {"correct": reports.by_class["TestCorrect"]}
    for index, (test, _) in enumerate(mutants):
        runs[test] = reports.by_class.get(f"TestMutant{index}", Outcomes())
    return runs


@pytest.fixture(scope="module")
def kit_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcomes]:
    return run_kit_on_mutants(tmp_path_factory.mktemp("kit_mutants"))


def _expand(spec: frozenset[str], universe: set[str]) -> set[str]:
    """Test names (all their parametrizations) and ``name[param]`` ids -> node ids."""
    expanded: set[str] = set()
    for entry in spec:
        if "[" in entry:
            expanded.add(entry)
        else:
            expanded |= {test_id for test_id in universe if test_id.split("[")[0] == entry}
    return expanded


def test_every_kit_test_has_exactly_one_broken_backend() -> None:
    kit, mutants = kit_test_names(), set(registered_mutants())
    assert not kit - mutants, (
        f"kit tests without a broken backend (add one to a registry of "
        f"MUTANT_REGISTRIES in tests/sessions/test_kit.py): {sorted(kit - mutants)}"
    )
    assert not mutants - kit, f"mutants for tests the kit does not have: {sorted(mutants - kit)}"


@pytest.mark.timeout(600)
def test_the_correct_backend_passes_the_whole_kit(kit_runs: dict[str, Outcomes]) -> None:
    correct = kit_runs["correct"]
    assert correct.failed == set()
    assert correct.errored == set()
    assert {test_id.split("[")[0] for test_id in correct.passed | correct.skipped} == (
        kit_test_names()
    )
    # ListKit claims no processes and cannot freeze its store: those tests are skipped,
    # every other one runs.
    assert {test_id.split("[")[0] for test_id in correct.skipped} == {
        "test_concurrent_processes_lose_no_items_and_keep_batches_contiguous",
        *NEEDS_FREEZE_HOOKS,
    }


@pytest.mark.timeout(600)
@pytest.mark.parametrize("test", sorted(kit_test_names()))
def test_the_kit_test_fails_its_broken_backend(kit_runs: dict[str, Outcomes], test: str) -> None:
    if test in NEEDS_FREEZE_HOOKS:
        pytest.skip("needs the frozen-server hooks: checked in tests/sessions/test_loop_mutants.py")
    mutants = registered_mutants()
    if test not in mutants:
        pytest.fail(f"{test} has no broken backend", pytrace=False)
    backend, spec = mutants[test]
    correct, run = kit_runs["correct"], kit_runs[test]
    universe = correct.passed | correct.skipped
    expected = _expand(spec, universe)
    # The event-loop tests compose the basic operations (and each other's): a backend
    # broken in one place may fail those too, on top of the tests its spec names.
    expected |= {t for t in run.failed if t.split("[")[0] in COMPOSITE_TESTS}
    assert test in {test_id.split("[")[0] for test_id in expected}, (
        f"the mutant for {test} is not declared to fail it: {sorted(spec)}"
    )
    assert run.errored == set(), f"{backend.__name__}: errors in {sorted(run.errored)}"
    assert run.failed == expected, (
        f"{backend.__name__}: unexpected failures {sorted(run.failed - expected)}, "
        f"expected failures that passed {sorted(expected - run.failed)}"
    )
    assert Counter(passed=len(run.passed), skipped=len(run.skipped)) == Counter(
        passed=len(correct.passed - expected), skipped=len(correct.skipped - expected)
    )
