"""Every check of every kit test is guarded: weakening any single one fails the self-test.

A *check* is an ``assert`` statement or a ``with pytest.raises(...)`` block of a kit test of
``SessionConformance`` (nested functions included), or of a module-level ``_assert*``
helper of the kit, which then counts for every kit test that calls it. For each check this
module builds the kit test once more from the kit module's own source (``ast``), with that
check weakened and everything else as written, and compiles it in a copy of the kit
module's namespace:

- ``assert EXPR, MESSAGE`` becomes the bare expression ``EXPR`` (still evaluated, so the
  calls in it still happen, but never checked);
- ``with pytest.raises(...) as raised:`` becomes a block that lets any exception through
  quietly (``raised.value`` is what was raised, or ``None``).

The weakened test replaces its original on the correct backend and on every guard whose
declared failures include it (test_kit.py's ``GUARD_REGISTRIES``); the weakened correct
backend must still pass, and the self-test's own verdict (``test_kit.complaint``) must then
complain of at least one guard. A check that no guard notices is reported, naming the kit
test, the line of ``testing.py`` and the check. All of this runs in one in-process pytest
of a few hundred short tests; the two frozen-server kit tests run directly on ``LoopKit``.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import inspect
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import MethodType, TracebackType
from typing import Any, TypeVar

import pytest

import agent_sessions.testing as kit_module

from .kit_guards import UNGUARDED
from .kit_mutants_loops import FreezableListSession, LoopKit, _outcome
from .list_session import ListSession
from .test_kit import (
    NEEDS_FREEZE_HOOKS,
    Guard,
    _kit_class,
    complaint,
    guards,
    kit_test_names,
    run_inner_pytest,
)

_F = TypeVar("_F", ast.FunctionDef, ast.AsyncFunctionDef)

ISSUE_28_CHECK = (
    "test_add_items_rejects_a_non_mapping_and_stores_nothing",
    "assert await session.get_items() == [{'before': True}]",
)
"""The check whose deletion the suite once missed (issue 28)."""


@dataclass(frozen=True)
class Check:
    """One check of the kit: in ``function`` (a kit test, or an ``_assert*`` helper), at
    ``line`` of testing.py, of ``kind`` ``"assert"`` or ``"raises"``."""

    function: str
    line: int
    column: int
    kind: str
    source: str

    def __str__(self) -> str:
        return f"testing.py:{self.line} `{self.source}`"


class _AnyOutcome:
    """What a weakened ``pytest.raises`` block becomes: any exception is let through
    quietly and kept in ``value``; none is fine too."""

    value: BaseException | None = None

    def __enter__(self) -> _AnyOutcome:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self.value = value
        return kind is not None and issubclass(kind, Exception)


def _is_raises(item: ast.withitem) -> bool:
    call = item.context_expr
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "raises"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == "pytest"
    )


def _checks_in(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[Check]:
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            yield Check(function.name, node.lineno, node.col_offset, "assert", ast.unparse(node))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if _is_raises(item):
                    head = f"with {ast.unparse(item)}"
                    yield Check(function.name, node.lineno, node.col_offset, "raises", head)


@dataclass(frozen=True)
class KitSource:
    """The kit module's functions, parsed from its source."""

    tests: dict[str, ast.AsyncFunctionDef]
    helpers: dict[str, ast.FunctionDef]

    @classmethod
    def parse(cls) -> KitSource:
        tree = ast.parse(Path(inspect.getfile(kit_module)).read_text(encoding="utf-8"))
        (kit,) = (
            node
            for node in tree.body
            if isinstance(node, ast.ClassDef) and node.name == "SessionConformance"
        )
        tests = {
            node.name: node
            for node in kit.body
            if isinstance(node, ast.AsyncFunctionDef) and node.name.startswith("test_")
        }
        helpers = {
            node.name: node
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("_assert")
        }
        return cls(tests, helpers)

    def checks(self) -> dict[Check, list[str]]:
        """Every check of the kit -> the kit tests it counts for."""
        found: dict[Check, list[str]] = {}
        for name, test in sorted(self.tests.items()):
            for check in _checks_in(test):
                found[check] = [name]
        for name, helper in sorted(self.helpers.items()):
            callers = sorted(
                test_name
                for test_name, test in self.tests.items()
                if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test))
            )
            for check in _checks_in(helper):
                found[check] = callers
        return found

    def weakened(self, check: Check, test: str, *, delete: bool = False) -> Callable[..., Any]:
        """Kit test ``test`` compiled anew, with ``check`` (in it or in a helper it calls)
        weakened (or, with ``delete``, an assert deleted outright, expression and all), in
        a copy of the kit module's namespace."""
        namespace = dict(vars(kit_module))
        namespace["_AnyOutcome"] = _AnyOutcome
        if check.function in self.helpers:
            namespace[check.function] = _compile(
                _weaken(self.helpers[check.function], check, delete=delete), namespace
            )
            return _compile(self.tests[test], namespace)
        return _compile(_weaken(self.tests[test], check, delete=delete), namespace)


class _Weaken(ast.NodeTransformer):
    def __init__(self, check: Check, *, delete: bool = False) -> None:
        self.check = check
        self.delete = delete
        self.done = False

    def _here(self, node: ast.stmt) -> bool:
        return (node.lineno, node.col_offset) == (self.check.line, self.check.column)

    def visit_Assert(self, node: ast.Assert) -> ast.AST:
        if self.check.kind == "assert" and self._here(node):
            self.done = True
            if self.delete:
                return ast.copy_location(ast.Pass(), node)
            return ast.copy_location(ast.Expr(value=node.test), node)
        return self.generic_visit(node)

    def _visit_with(self, node: ast.With | ast.AsyncWith) -> ast.AST:
        if self.check.kind == "raises" and self._here(node):
            for item in node.items:
                if _is_raises(item):
                    self.done = True
                    item.context_expr = ast.copy_location(
                        ast.Call(func=ast.Name("_AnyOutcome", ast.Load()), args=[], keywords=[]),
                        item.context_expr,
                    )
        return self.generic_visit(node)

    visit_With = _visit_with
    visit_AsyncWith = _visit_with


def _weaken(function: _F, check: Check, *, delete: bool = False) -> _F:
    assert not delete or check.kind == "assert", f"only an assert is deleted: {check}"
    weakener = _Weaken(check, delete=delete)
    weakened: _F = weakener.visit(copy.deepcopy(function))
    assert weakener.done, f"{check} not found in {function.name}"
    return weakened


def _compile(
    function: ast.FunctionDef | ast.AsyncFunctionDef, namespace: dict[str, Any]
) -> Callable[..., Any]:
    module = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
    exec(compile(module, inspect.getfile(kit_module), "exec"), namespace)
    compiled: Callable[..., Any] = namespace.pop(function.name)
    return compiled


def guards_of(test: str) -> list[Guard]:
    """Every guard whose declared failures include kit test ``test`` (or a parameter of it):
    the self-test requires each of them to fail it."""
    found: dict[str, Guard] = {}
    for declared in guards().values():
        for guard in declared:
            if any(name.split("[")[0] == test for name in guard.fails):
                found.setdefault(guard.run_key, guard)
    return list(found.values())


@dataclass
class Verdict:
    """What the self-test says once ``check`` is weakened in kit test ``test``."""

    check: Check
    test: str
    correct_broken: str | None
    complaints: dict[str, str]

    @property
    def noticed(self) -> bool:
        return bool(self.complaints)


def _only(test: str, weakened: Callable[..., Any]) -> dict[str, Any]:
    """Class attributes that leave ``weakened`` as the only kit test of a class."""
    return {**dict.fromkeys(kit_test_names() - {test}), test: weakened}


def weakened_verdicts(
    directory: Path,
    selected: dict[Check, list[str]],
    guards_for: Callable[[str], list[Guard]],
    *,
    delete: bool = False,
) -> list[Verdict]:
    """Weaken (or, with ``delete``, delete) each check of ``selected`` in each kit test it
    counts for, and run those on the correct backend and the guards ``guards_for`` gives:
    the self-test's verdicts. The frozen-server kit tests are left to
    :func:`frozen_verdicts`."""
    source = KitSource.parse()
    classes: dict[str, type] = {}
    cases: list[tuple[Check, str, str, list[tuple[Guard, str]]]] = []
    for check, tests in selected.items():
        for test in tests:
            if test in NEEDS_FREEZE_HOOKS:
                continue
            weakened = source.weakened(check, test, delete=delete)
            base = f"TestCheck{len(cases)}"
            classes[f"{base}Correct"] = _single(f"{base}Correct", None, test, weakened)
            named = []
            for index, guard in enumerate(guards_for(test)):
                name = f"{base}Guard{index}"
                classes[name] = _single(name, guard.backend, test, weakened)
                named.append((guard, name))
            cases.append((check, test, f"{base}Correct", named))
    outcomes = run_inner_pytest(classes, directory)
    verdicts = []
    for check, test, correct_name, named in cases:
        correct = outcomes[correct_name]
        broken = None
        if correct.failed or correct.errored or not correct.passed | correct.skipped:
            broken = f"failed {sorted(correct.failed | correct.errored)}"
        said = {
            guard.label: said
            for guard, name in named
            if (said := complaint(_within(guard, test), correct, outcomes[name])) is not None
        }
        verdicts.append(Verdict(check, test, broken, said))
    return verdicts


def _within(guard: Guard, test: str) -> Guard:
    """``guard`` declared to fail only (the parameters of) kit test ``test``: the class of a
    weakened run holds no other kit test."""
    return replace(guard, fails=frozenset(f for f in guard.fails if f.split("[")[0] == test))


def _single(name: str, backend: type | None, test: str, weakened: Callable[..., Any]) -> type:
    base = _kit_class(name, backend or ListSession)
    return type(name, (base,), _only(test, weakened))


async def frozen_verdicts(selected: dict[Check, list[str]]) -> list[Verdict]:
    """The weakened frozen-server kit tests, run directly on ``LoopKit`` (pytest cannot
    collect a class with a constructor), all at once (they mostly wait): the correct
    backend must pass, a guard must not fail any more."""
    source = KitSource.parse()
    cases = [
        (check, test, source.weakened(check, test))
        for check, tests in selected.items()
        for test in tests
        if test in NEEDS_FREEZE_HOOKS
    ]

    async def verdict(check: Check, test: str, weakened: Callable[..., Any]) -> Verdict:
        declared = guards_of(test)
        correct, *results = await asyncio.gather(
            _weakened_outcome(FreezableListSession, test, weakened),
            *(_weakened_outcome(guard.backend, test, weakened) for guard in declared),
        )
        said = {
            guard.label: f"{guard.label}: {result} the weakened test"
            for guard, result in zip(declared, results, strict=True)
            if not result.startswith("failed: ")
        }
        return Verdict(check, test, None if correct == "passed" else correct, said)

    return list(await asyncio.gather(*(verdict(*case) for case in cases)))


async def _weakened_outcome(backend: type, test: str, weakened: Callable[..., Any]) -> str:
    kit = LoopKit(backend)
    setattr(kit, test, MethodType(weakened, kit))
    return await _outcome(kit, test)


def key(verdict: Verdict) -> tuple[str, str]:
    """How ``kit_guards.UNGUARDED`` names a check: its function and its source."""
    return (verdict.check.function, verdict.check.source)


def report(verdicts: list[Verdict], listed: Iterable[tuple[str, str]] = ()) -> str:
    """The unguarded checks not in ``listed``, one line each, naming the kit test; and the
    entries of ``listed`` among these verdicts' checks that a guard now notices."""
    known = set(listed)
    lines = [
        f"{verdict.test}: the check {verdict.check} is guarded by no broken backend "
        f"(with it weakened, every guard of the test still fails it: add one to "
        f"tests/sessions/kit_guards.py)"
        for verdict in verdicts
        if not verdict.noticed and key(verdict) not in known
    ]
    seen = {key(verdict) for verdict in verdicts}
    unnoticed = {key(verdict) for verdict in verdicts if not verdict.noticed}
    lines += [
        f"{function}: `{source}` is guarded now: remove it from kit_guards.UNGUARDED"
        for function, source in sorted(known & seen - unnoticed)
    ]
    return "\n".join(lines)


# -- the tests --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def all_checks() -> dict[Check, list[str]]:
    return KitSource.parse().checks()


@pytest.fixture(scope="module")
def verdicts(
    tmp_path_factory: pytest.TempPathFactory, all_checks: dict[Check, list[str]]
) -> list[Verdict]:
    return weakened_verdicts(tmp_path_factory.mktemp("kit_checks"), all_checks, guards_of)


def test_every_kit_test_has_checks(all_checks: dict[Check, list[str]]) -> None:
    counted = {test for tests in all_checks.values() for test in tests}
    assert counted == kit_test_names(), f"kit tests checking nothing: {kit_test_names() - counted}"


@pytest.mark.timeout(300)
def test_a_weakened_check_still_passes_the_correct_backend(verdicts: list[Verdict]) -> None:
    broken = [f"{v.test}: {v.check}: {v.correct_broken}" for v in verdicts if v.correct_broken]
    assert not broken, "weakening broke the correct backend (a bug of this module):\n" + (
        "\n".join(broken)
    )


@pytest.mark.timeout(300)
def test_every_check_of_every_kit_test_is_guarded(verdicts: list[Verdict]) -> None:
    said = report(verdicts, UNGUARDED)
    assert not said, "\n" + said


def test_every_unguarded_check_listed_is_a_check_of_the_kit(
    all_checks: dict[Check, list[str]],
) -> None:
    known = {(check.function, check.source) for check in all_checks}
    assert not set(UNGUARDED) - known, f"not checks of the kit: {sorted(set(UNGUARDED) - known)}"
    # Only a check that no backend can fail alone may stay unguarded: every other one has
    # a broken backend (issue 28).
    assert all(reason.startswith("equivalent: ") for reason in UNGUARDED.values())


@pytest.mark.timeout(120)
async def test_every_check_of_the_frozen_server_kit_tests_is_guarded(
    all_checks: dict[Check, list[str]],
) -> None:
    frozen = await frozen_verdicts(all_checks)
    assert {verdict.test for verdict in frozen} == NEEDS_FREEZE_HOOKS
    assert [v.correct_broken for v in frozen if v.correct_broken] == []
    said = report(frozen, UNGUARDED)
    assert not said, "\n" + said


@pytest.mark.timeout(120)
async def test_each_guard_of_a_frozen_server_kit_test_fails_it() -> None:
    """As test_kit.py checks the other guards (on ListKit, which cannot freeze its store):
    each guard of a frozen-server kit test fails that test, unweakened, on LoopKit."""
    declared = [guard for test in sorted(NEEDS_FREEZE_HOOKS) for guard in guards()[test]]
    outcomes = await asyncio.gather(
        *(_outcome(LoopKit(guard.backend), guard.test) for guard in declared)
    )
    passing = [
        f"{guard.label}: {outcome}"
        for guard, outcome in zip(declared, outcomes, strict=True)
        if not outcome.startswith("failed: ")
    ]
    assert not passing, passing


def _issue_28_check(all_checks: dict[Check, list[str]]) -> Check:
    test, source = ISSUE_28_CHECK
    (check,) = (c for c in all_checks if c.function == test and c.source == source)
    return check


@pytest.mark.timeout(300)
def test_deleting_the_check_issue_28_found_unguarded_fails_the_self_test(
    verdicts: list[Verdict], all_checks: dict[Check, list[str]]
) -> None:
    check = _issue_28_check(all_checks)
    (verdict,) = (v for v in verdicts if v.check == check)
    assert verdict.correct_broken is None
    assert {label.split()[0] for label in verdict.complaints} == {"StoresTheItemsBeforeABadOne"}
    said = verdict.complaints[next(iter(verdict.complaints))]
    assert "expected failures that passed" in said
    assert "test_add_items_rejects_a_non_mapping_and_stores_nothing[int]" in said


@pytest.mark.timeout(300)
def test_without_its_new_guard_the_issue_28_check_is_reported_unguarded(
    tmp_path: Path, all_checks: dict[Check, list[str]]
) -> None:
    """The check can fail: with only the guards the kit had before issue 28, the deletion
    goes unnoticed, and the report names the kit test and the check."""
    check = _issue_28_check(all_checks)

    def old_guards(test: str) -> list[Guard]:
        return [g for g in guards_of(test) if g.backend.__name__ != "StoresTheItemsBeforeABadOne"]

    (verdict,) = weakened_verdicts(tmp_path, {check: [check.function]}, old_guards)
    assert verdict.correct_broken is None
    assert verdict.complaints == {}
    assert report([verdict]) == (
        "test_add_items_rejects_a_non_mapping_and_stores_nothing: the check "
        f"testing.py:{check.line} `assert await session.get_items() == [{{'before': True}}]` "
        "is guarded by no broken backend (with it weakened, every guard of the test still "
        "fails it: add one to tests/sessions/kit_guards.py)"
    )


DELETED_AT_RANDOM = 8
"""How many kit assertions the test of the self-test deletes, picked by a seeded draw."""


def _drawn(all_checks: dict[Check, list[str]], seed: int) -> dict[Check, list[str]]:
    """``DELETED_AT_RANDOM`` asserts of the kit drawn with ``seed`` (the frozen-server
    kit tests, run apart, left out), and the check issue 28 found unguarded."""
    candidates = sorted(
        (check for check, tests in all_checks.items() if check.kind == "assert"),
        key=lambda check: (check.line, check.column),
    )
    drawn = random.Random(seed).sample(candidates, DELETED_AT_RANDOM)
    drawn.append(_issue_28_check(all_checks))
    return {
        check: [test for test in all_checks[check] if test not in NEEDS_FREEZE_HOOKS]
        for check in drawn
    }


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", [28])
def test_deleting_kit_assertions_at_random_fails_the_self_test(
    tmp_path: Path, all_checks: dict[Check, list[str]], seed: int
) -> None:
    """Each drawn assert deleted outright (its expression too: what an editor deleting
    the line does), one at a time: the self-test fails, either the correct backend (the
    test lost a call it needed) or a guard (it no longer fails the test)."""
    drawn = _drawn(all_checks, seed)
    verdicts = weakened_verdicts(tmp_path, drawn, guards_of, delete=True)
    assert {v.check for v in verdicts} == {c for c, tests in drawn.items() if tests}
    unnoticed = [f"{v.test}: {v.check}" for v in verdicts if not v.noticed and not v.correct_broken]
    assert not unnoticed, "deleted, and the self-test still passes:\n" + "\n".join(unnoticed)


def test_a_deleted_assert_is_gone_and_its_expression_with_it(
    all_checks: dict[Check, list[str]],
) -> None:
    check = _issue_28_check(all_checks)
    source = KitSource.parse()
    deleted = ast.unparse(_weaken(source.tests[check.function], check, delete=True))
    weakened = ast.unparse(_weaken(source.tests[check.function], check))
    assert check.source not in deleted
    assert check.source not in weakened
    assert "await session.get_items() == [{'before': True}]" in weakened
    assert "await session.get_items() == [{'before': True}]" not in deleted


def test_a_raises_check_is_weakened_to_let_anything_through() -> None:
    with _AnyOutcome() as outcome:
        raise KeyError("x")
    assert isinstance(outcome.value, KeyError)
    with _AnyOutcome() as outcome:
        pass
    assert outcome.value is None
    with pytest.raises(KeyboardInterrupt), _AnyOutcome():
        raise KeyboardInterrupt


__all__ = ["Check", "KitSource", "Verdict", "weakened_verdicts"]
