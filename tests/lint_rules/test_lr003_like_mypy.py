"""LR003 judges conformance as mypy does: twin sync/async protocols, async generators,
awaitables, return types, parameter kinds, and what makes a class an implementation.

Every silent shape is also checked by the real ``mypy --strict`` (the judge): the
``checks.py`` module of the project assigns each silent class to its protocol and mypy
accepts it; ``rejects.py`` assigns each reported class and mypy rejects exactly those.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import lr003_messages as _findings
    from tests.lint_rules.project_fixtures import mypy_strict, protocol_project, write
    from tests.lint_rules.rule_fixtures import Lint
else:
    from project_fixtures import lr003_messages as _findings
    from project_fixtures import mypy_strict, protocol_project, write
    from rule_fixtures import Lint

# Twin protocols: the same method names, one sync and one async.
DRIVERS = """
    from collections.abc import AsyncIterator, Awaitable, Iterator
    from typing import Protocol

    class Screenshot:
        data: bytes

    class Driver(Protocol):
        def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
        def screenshot(self) -> Screenshot: ...
        def events(self) -> Iterator[str]: ...

    class AsyncDriver(Protocol):
        async def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
        async def screenshot(self) -> Screenshot: ...
        def events(self) -> AsyncIterator[str]: ...

    class AsyncPager(Protocol):
        async def state(self) -> str: ...

    class AsyncReader(AsyncPager, Protocol):
        async def read_page(self, action: str) -> str: ...

    class Job(Protocol):
        def result(self) -> Awaitable[int]: ...
        def cancel(self) -> None: ...
"""
CONFIG = """
[tool.lint_rules.protocols]
"drivers:Driver" = ["impl/"]
"drivers:AsyncDriver" = ["impl/"]
"drivers:Job" = ["impl/"]
"drivers:AsyncPager" = ["impl/"]
"drivers:AsyncReader" = ["impl/"]
"""

# Shapes mypy --strict accepts (checks.py assigns each class to its protocol): silent.
SILENT = {
    "sync_twin.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class Chrome:
            def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            def screenshot(self) -> Screenshot:
                return Screenshot()
            def events(self) -> Iterator[str]:
                yield "load"
    """,
    "async_twin.py": """
        from collections.abc import AsyncIterator
        from drivers import Screenshot

        class AsyncChrome:
            async def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            async def screenshot(self) -> Screenshot:
                return Screenshot()
            async def events(self) -> AsyncIterator[str]:  # an async generator
                yield "load"
    """,
    "awaitable.py": """
        class Task:
            async def result(self) -> int:  # `def result(self) -> Awaitable[int]`
                return 1
            def cancel(self) -> None: ...
    """,
    "covariant.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class PngShot(Screenshot):
            pass

        class Firefox:
            def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            def screenshot(self) -> PngShot:  # a subclass of the protocol's return type
                return PngShot()
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "keyword_or_positional.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class Safari:
            # `timeout` may still be passed by keyword: a keyword-only parameter made
            # positional-or-keyword is what mypy accepts.
            def click(self, selector: str, timeout: float = 30.0) -> None: ...
            def screenshot(self) -> Screenshot:
                return Screenshot()
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "star_args.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class Lynx:
            def click(self, *args: object, timeout: float = 30.0) -> None: ...  # mypy: fine
            def screenshot(self) -> Screenshot:
                return Screenshot()
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "names_only.py": """
        class Uploads:  # Job's two method names, neither as Job declares it: no Job
            def result(self, upload_id: str) -> str:
                return upload_id
            async def cancel(self, upload_id: str) -> None: ...
    """,
    "look_alike.py": """
        class Mouse:  # two of Driver's three method names, and nothing of a driver
            def click(self, button: int) -> int:
                return button
            async def screenshot(self, path: str) -> bytes:
                return b""
    """,
}
CHECKS = """
    from drivers import AsyncDriver, Driver, Job
    from impl.async_twin import AsyncChrome
    from impl.awaitable import Task
    from impl.covariant import Firefox
    from impl.keyword_or_positional import Safari
    from impl.star_args import Lynx
    from impl.sync_twin import Chrome

    driver: Driver = Chrome()
    async_driver: AsyncDriver = AsyncChrome()
    job: Job = Task()
    firefox: Driver = Firefox()
    safari: Driver = Safari()
    lynx: Driver = Lynx()
"""

# Shapes LR003 reports; rejects.py assigns each class to its protocol and mypy says no.
REPORTED = {
    "matches_none.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class Hybrid:
            async def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            async def screenshot(self) -> Screenshot:
                return Screenshot()
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "returns_bytes.py": """
        from collections.abc import Iterator

        class Headless:
            def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            def screenshot(self) -> bytes:
                return b""
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "keyword_only.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class Edge:
            def click(self, *, selector: str, timeout: float = 30.0) -> None: ...
            def screenshot(self) -> Screenshot:
                return Screenshot()
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "positional_only.py": """
        from collections.abc import Iterator
        from drivers import Screenshot

        class Opera:
            def click(self, selector: str, timeout: float = 30.0, /) -> None: ...
            def screenshot(self) -> Screenshot:
                return Screenshot()
            def events(self) -> Iterator[str]:
                return iter(())
    """,
    "coroutine_not_generator.py": """
        from collections.abc import AsyncIterator
        from drivers import Screenshot

        class Brave:
            async def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            async def screenshot(self) -> Screenshot:
                return Screenshot()
            async def events(self) -> AsyncIterator[str]:  # no `yield`: a coroutine
                raise NotImplementedError
    """,
    "subclass.py": """
        from drivers import Driver, Screenshot

        class Partial(Driver):  # meant as a Driver: judged against it alone
            def click(self, selector: str, *, timeout: float = 30.0) -> None: ...
            def screenshot(self) -> Screenshot:
                return Screenshot()
    """,
    "annotated.py": """
        from drivers import Driver

        class Tiny:
            def click(self, selector: str, *, timeout: float = 30.0) -> None: ...

        def make() -> Driver:
            return Tiny()
    """,
    "sync_result.py": """
        class Blocking:
            def result(self) -> int:
                return 1
            def cancel(self) -> None: ...
    """,
}
REJECTS = """
    from drivers import AsyncDriver, Driver, Job
    from impl.coroutine_not_generator import Brave
    from impl.keyword_only import Edge
    from impl.matches_none import Hybrid
    from impl.positional_only import Opera
    from impl.returns_bytes import Headless
    from impl.sync_result import Blocking

    hybrid_sync: Driver = Hybrid()
    hybrid_async: AsyncDriver = Hybrid()
    headless: Driver = Headless()
    edge: Driver = Edge()
    opera: Driver = Opera()
    brave: AsyncDriver = Brave()
    blocking: Job = Blocking()
"""
REJECTED = [
    *(f"rejects.py:{line}" for line in range(10, 17)),  # every assignment
    "impl/annotated.py:8",  # `return Tiny()` where a Driver is returned
]
"""Where mypy rejects the reported shapes."""
TWINS = (
    " (the closest of the protocols it could implement: it matches none of "
    "`drivers.Driver`, `drivers.AsyncDriver`)"
)


@pytest.fixture
def drivers(project: Path) -> Path:
    return protocol_project(project, CONFIG, DRIVERS)


@pytest.mark.parametrize("name", sorted(SILENT))
def test_what_mypy_accepts_is_silent(drivers: Path, lint: Lint, name: str) -> None:
    write(drivers / "impl" / name, SILENT[name])

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_mypy_strict_accepts_the_silent_shapes_and_rejects_the_reported_ones(
    drivers: Path,
) -> None:
    for name, source in {**SILENT, **REPORTED}.items():
        write(drivers / "impl" / name, source)
    write(drivers / "checks.py", CHECKS)
    write(drivers / "rejects.py", REJECTS)

    errors, stderr = mypy_strict(drivers)

    assert sorted({":".join(line.split(":")[:2]) for line in errors}) == sorted(REJECTED), stderr


def test_class_matching_no_twin_is_reported_once_against_the_closest(
    drivers: Path, lint: Lint
) -> None:
    write(drivers / "impl" / "matches_none.py", REPORTED["matches_none.py"])

    outcome = lint("check", "--no-cache")

    assert _findings(outcome.out) == [
        "`Hybrid.events` is not async; the protocol `drivers.AsyncDriver` declares "
        "`def events(self) -> AsyncIterator[str]`" + TWINS
    ]


def test_return_type_drift_is_reported(drivers: Path, lint: Lint) -> None:
    write(drivers / "impl" / "returns_bytes.py", REPORTED["returns_bytes.py"])

    assert _findings(lint("check", "--no-cache").out) == [
        "`Headless.screenshot` returns `bytes`, not `Screenshot`; the protocol "
        "`drivers.Driver` declares `def screenshot(self) -> Screenshot`"
    ]


@pytest.mark.parametrize(
    ("name", "owner", "changes"),
    [
        ("keyword_only.py", "Edge", ["makes parameter `selector` keyword-only"]),
        (
            "positional_only.py",
            "Opera",
            [
                "makes parameter `selector` positional-only",
                "makes keyword-only parameter `timeout` positional-only",
            ],
        ),
    ],
)
def test_a_parameter_kind_change_is_one_finding_naming_it(
    drivers: Path, lint: Lint, name: str, owner: str, changes: list[str]
) -> None:
    write(drivers / "impl" / name, REPORTED[name])

    assert _findings(lint("check", "--no-cache").out) == [
        f"`{owner}.click` {change}; the protocol `drivers.Driver` declares "
        "`def click(self, selector: str, *, timeout: float = 30.0) -> None`"
        for change in changes
    ]


def test_coroutine_for_an_async_iterator_is_reported(drivers: Path, lint: Lint) -> None:
    write(drivers / "impl" / "coroutine_not_generator.py", REPORTED["coroutine_not_generator.py"])

    assert _findings(lint("check", "--no-cache").out) == [
        "`Brave.events` is a coroutine (`async def` without `yield`), the protocol's returns "
        "an async iterator; the protocol `drivers.AsyncDriver` declares "
        "`def events(self) -> AsyncIterator[str]`" + TWINS
    ]


def test_conforming_to_a_base_protocol_does_not_excuse_drift_from_the_derived_one(
    drivers: Path, lint: Lint
) -> None:
    write(
        drivers / "impl" / "booking.py",
        """
        class Booking:  # an AsyncPager, and an AsyncReader whose parameter was renamed
            async def state(self) -> str:
                return ""
            async def read_page(self, args: str) -> str:
                return args
        """,
    )

    assert _findings(lint("check", "--no-cache").out) == [
        "`Booking.read_page` renames parameter `action` to `args`; the protocol "
        "`drivers.AsyncReader` declares `async def read_page(self, action: str) -> str`"
    ]


def test_sync_method_for_an_awaitable_is_reported(drivers: Path, lint: Lint) -> None:
    write(drivers / "impl" / "sync_result.py", REPORTED["sync_result.py"])

    assert _findings(lint("check", "--no-cache").out) == [
        "`Blocking.result` is not async; the protocol `drivers.Job` declares "
        "`def result(self) -> Awaitable[int]`"
    ]


def test_explicit_subclass_is_judged_against_its_protocol_alone(drivers: Path, lint: Lint) -> None:
    write(drivers / "impl" / "subclass.py", REPORTED["subclass.py"])

    assert _findings(lint("check", "--no-cache").out) == [
        "`Partial` misses `events`; the protocol `drivers.Driver` declares "
        "`def events(self) -> Iterator[str]`"
    ]


def test_class_returned_where_the_protocol_is_annotated_is_an_implementation(
    drivers: Path, lint: Lint
) -> None:
    write(drivers / "impl" / "annotated.py", REPORTED["annotated.py"])

    assert [finding.split(";")[0] for finding in _findings(lint("check", "--no-cache").out)] == [
        "`Tiny` misses `screenshot`",
        "`Tiny` misses `events`",
    ]


@pytest.mark.parametrize(
    "use",
    [
        "driver: Driver = Tiny()",
        "def run(driver: Driver) -> None: ...\n\nrun(Tiny())",
        "def run(driver: Driver) -> None: ...\n\nrun(driver=Tiny())",
        "drivers: list[Driver] = []\ndriver: Driver\ndriver = Tiny()",
    ],
)
def test_class_assigned_or_passed_where_the_protocol_is_annotated_is_an_implementation(
    drivers: Path, lint: Lint, use: str
) -> None:
    source = "from drivers import Driver\n\nclass Tiny:\n    def click(self) -> None: ...\n\n"
    (drivers / "impl" / "used.py").write_text(source + use + "\n", encoding="utf-8")

    findings = _findings(lint("check", "--no-cache").out)

    assert [finding.split(";")[0] for finding in findings] == [
        "`Tiny` misses `screenshot`",
        "`Tiny` misses `events`",
        "`Tiny.click` misses parameter `selector`",
        "`Tiny.click` misses keyword-only parameter `timeout`",
    ]


def test_class_with_a_method_of_each_twin_protocol_shape_is_not_reported_twice(
    drivers: Path, lint: Lint
) -> None:
    write(drivers / "impl" / "sync_twin.py", SILENT["sync_twin.py"])
    write(drivers / "impl" / "async_twin.py", SILENT["async_twin.py"])
    write(drivers / "impl" / "matches_none.py", REPORTED["matches_none.py"])

    findings = _findings(lint("check", "--no-cache").out)

    assert len(findings) == 1
    assert findings[0].startswith("`Hybrid.events` is not async")


def test_protocols_probes_each_class_against_the_protocol_it_is_judged_against(
    drivers: Path, lint: Lint
) -> None:
    # A sync class is not probed as the async twin, nor an async one as the sync twin.
    (drivers / "pyproject.toml").write_text("[tool.mypy]\nstrict = true\n" + CONFIG)
    for name, source in {**SILENT, **REPORTED}.items():
        write(drivers / "impl" / name, source)

    outcome = lint("protocols", "--no-daemon")

    found = {
        (line.split(":")[0], line.split("`")[1], line.split("`")[3])
        for line in outcome.out.splitlines()
        if " LR100 " in line
    }
    assert found == {
        ("impl/annotated.py", "Tiny", "drivers.Driver"),
        ("impl/coroutine_not_generator.py", "Brave", "drivers.AsyncDriver"),
        ("impl/keyword_only.py", "Edge", "drivers.Driver"),
        ("impl/matches_none.py", "Hybrid", "drivers.AsyncDriver"),
        ("impl/positional_only.py", "Opera", "drivers.Driver"),
        ("impl/returns_bytes.py", "Headless", "drivers.Driver"),
        ("impl/sync_result.py", "Blocking", "drivers.Job"),
    }, outcome.err
