"""The conformance kit itself: a correct third-party backend passes it, and every kit test
fails the backend broken in exactly the way it guards.

The mutation self-test runs the whole kit, in one in-process pytest, on ``ListSession`` and
on each broken backend (guard) of the registries of ``GUARD_REGISTRIES`` (the GUARDS
declaration: a kit test has one guard per property it checks), and checks for each guard
the exact set of failing tests and the passed, skipped and errored counts. A kit test
without a guard, or a guard for a test the kit no longer has, fails it.
tests/sessions/test_kit_checks.py shows that every single check of every kit test is
guarded.
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

GUARD_REGISTRIES: dict[str, str] = {
    # module under tests/sessions: its dict of kit test name -> broken backend, Mutant, or a
    # tuple of them (one per property the test checks)
    "kit_mutants": "MUTANTS",
    "kit_mutants_loops": "LOOP_MUTANTS",
    "kit_guards": "GUARDS",
}
"""Where the broken backends (guards) come from: one line per module. The guards of a kit
test add up across registries."""

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


@dataclass(frozen=True)
class Guard:
    """One broken backend of the declaration: the kit test it is declared for, its place
    among that test's guards, the backend, and every kit test (or ``name[param]``) it must
    fail."""

    test: str
    index: int
    backend: type
    fails: frozenset[str]

    @property
    def label(self) -> str:
        return f"{self.backend.__name__} (guard {self.index} of {self.test})"

    @property
    def run_key(self) -> str:
        """A backend runs the kit once, whichever tests it guards."""
        return f"{self.backend.__module__}.{self.backend.__qualname__}"


def guards() -> dict[str, list[Guard]]:
    """Kit test name -> its guards, in declaration order, from every registry of
    ``GUARD_REGISTRIES``: the GUARDS declaration."""
    from .kit_mutants import Mutant

    declared: dict[str, list[Guard]] = {}
    for module_name, attribute in GUARD_REGISTRIES.items():
        module = importlib.import_module(f"{__package__}.{module_name}")
        registry: dict[str, object] = getattr(module, attribute)
        for test, value in registry.items():
            entries = value if isinstance(value, tuple) else (value,)
            for entry in entries:
                own = declared.setdefault(test, [])
                if isinstance(entry, Mutant):
                    backend, fails = entry.backend, entry.fails or frozenset({test})
                elif isinstance(entry, type):
                    backend, fails = entry, frozenset({test})
                else:
                    raise TypeError(f"{module_name}.{attribute}[{test!r}]: {entry!r}")
                if any(guard.backend is backend for guard in own):
                    raise AssertionError(f"{module_name}.{attribute}: {test} lists {backend} twice")
                own.append(Guard(test, len(own), backend, fails))
    return declared


def all_guards() -> list[Guard]:
    return [guard for test in sorted(guards()) for guard in guards()[test]]


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


def run_inner_pytest(classes: dict[str, type], directory: Path) -> dict[str, Outcomes]:
    """Run the kit classes ``classes`` (name -> class) in one pytest in this process: what
    each reported, by class name."""
    module = types.ModuleType("kit_classes_under_test")
    module.__dict__.update(classes)
    (directory / "test_kit_classes.py").write_text(f"from {module.__name__} import *\n")
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
                str(directory / "test_kit_classes.py"),
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
            if name in (module.__name__, "test_kit_classes"):
                del sys.modules[name]
        gc.collect()
    assert code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), f"inner pytest: {code!r}"
    return {name: reports.by_class.get(name, Outcomes()) for name in classes}


def run_kit_on_mutants(directory: Path) -> dict[str, Outcomes]:
    """The whole kit on ListSession (``"correct"``) and on every guard's backend (by its
    ``run_key``), in one pytest in this process."""
    backends = {
        guard.run_key: guard.backend
        for guard in all_guards()
        # a guard of a frozen-server kit test only: ListKit skips that test
        # (tests/sessions/test_kit_checks.py runs it on LoopKit)
        if not {name.split("[")[0] for name in guard.fails} <= NEEDS_FREEZE_HOOKS
    }
    classes = {"TestCorrect": _kit_class("TestCorrect", ListSession)}
    names = {key: f"TestGuard{index}" for index, key in enumerate(sorted(backends))}
    for key, name in names.items():
        classes[name] = _kit_class(name, backends[key])
    outcomes = run_inner_pytest(classes, directory)
    runs = {"correct": outcomes["TestCorrect"]}
    runs.update({key: outcomes[name] for key, name in names.items()})
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


def test_every_kit_test_has_a_guard() -> None:
    kit, declared = kit_test_names(), set(guards())
    assert not kit - declared, (
        f"kit tests without a broken backend (add one to a registry of "
        f"GUARD_REGISTRIES in tests/sessions/test_kit.py): {sorted(kit - declared)}"
    )
    assert not declared - kit, f"guards for tests the kit does not have: {sorted(declared - kit)}"


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


def expected_failures(guard: Guard, correct: Outcomes) -> set[str]:
    """The node ids ``guard`` must fail: its spec, over what the correct backend runs."""
    return _expand(guard.fails, correct.passed | correct.skipped)


def complaint(guard: Guard, correct: Outcomes, run: Outcomes) -> str | None:
    """What the self-test says of ``guard``'s run of the kit (``None``: as declared)."""
    expected = expected_failures(guard, correct)
    # The event-loop tests compose the basic operations (and each other's): a backend
    # broken in one place may fail those too, on top of the tests its spec names.
    expected |= {t for t in run.failed if t.split("[")[0] in COMPOSITE_TESTS}
    if run.errored:
        return f"{guard.label}: errors in {sorted(run.errored)}"
    if run.failed != expected:
        return (
            f"{guard.label}: unexpected failures {sorted(run.failed - expected)}, "
            f"expected failures that passed {sorted(expected - run.failed)}"
        )
    counts = Counter(passed=len(run.passed), skipped=len(run.skipped))
    if counts != Counter(
        passed=len(correct.passed - expected), skipped=len(correct.skipped - expected)
    ):
        return f"{guard.label}: {counts} passed and skipped"
    return None


@pytest.mark.timeout(600)
@pytest.mark.parametrize("test", sorted(kit_test_names()))
def test_the_kit_test_fails_its_broken_backends(kit_runs: dict[str, Outcomes], test: str) -> None:
    if test in NEEDS_FREEZE_HOOKS:
        pytest.skip("needs the frozen-server hooks: checked in tests/sessions/test_loop_mutants.py")
    declared = guards().get(test)
    if not declared:
        pytest.fail(f"{test} has no broken backend", pytrace=False)
    correct = kit_runs["correct"]
    for guard in declared:
        assert test in {name.split("[")[0] for name in guard.fails}, (
            f"{guard.label} is not declared to fail {test}: {sorted(guard.fails)}"
        )
        said = complaint(guard, correct, kit_runs[guard.run_key])
        assert said is None, said
