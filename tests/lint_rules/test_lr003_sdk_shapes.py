"""LR003 on shapes planted in real SDKs (benchmarks/plants.py, openai 3.51.0), missed before.

- A subclass of a class that is an implementation because it is *used* as the protocol
  (``driver: ComputerDriver = Recorder()``), overriding one method wrongly: judged against
  the protocol its base is used as.
- A return-type drift against a protocol whose return annotation is a type alias
  (``Screenshot: TypeAlias = ScreenshotParam``): the alias is read through.

Each one also silent when it conforms (mypy accepts it).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.project_fixtures import lr003_messages, mypy_strict, protocol_project
    from tests.lint_rules.project_fixtures import write as _write
    from tests.lint_rules.rule_fixtures import Lint
else:
    from project_fixtures import lr003_messages, mypy_strict, protocol_project
    from project_fixtures import write as _write
    from rule_fixtures import Lint

DRIVERS = """
    from typing import Protocol, TypedDict
    from typing_extensions import TypeAlias

    class ScreenshotParam(TypedDict):
        image_url: str

    Screenshot: TypeAlias = ScreenshotParam

    class Driver(Protocol):
        def click(self, selector: str) -> None: ...
        def move(self, x: int) -> None: ...
        def screenshot(self) -> Screenshot: ...

    class AsyncDriver(Protocol):
        async def click(self, selector: str) -> None: ...
        async def move(self, x: int) -> None: ...
        async def screenshot(self) -> Screenshot: ...
"""
CONFIG = """
[tool.lint_rules.protocols]
"drivers:Driver" = ["impl/"]
"drivers:AsyncDriver" = ["impl/"]
"""
RECORDER = """
    from drivers import Driver, Screenshot, ScreenshotParam

    class Recorder:
        def click(self, selector: str) -> None: ...
        def move(self, x: int) -> None: ...
        def screenshot(self) -> {returns}:
            return ScreenshotParam(image_url="")

    driver: Driver = Recorder()
    {tail}
"""


@pytest.fixture
def drivers(project: Path) -> Path:
    return protocol_project(project, CONFIG, DRIVERS)


def _findings(output: str) -> list[str]:
    return [message.split(";")[0] for message in lr003_messages(output)]


def _recorder(returns: str = "Screenshot", tail: str = "") -> str:
    return textwrap.dedent(RECORDER).format(returns=returns, tail=tail)


SPY = "\nclass Spy(Recorder):\n    async def click(self, selector: str) -> None: ...\n"
GOOD_SPY = "\nclass Spy(Recorder):\n    def click(self, selector: str) -> None: ...\n"


def test_subclass_of_an_implementation_by_use_overriding_wrongly_is_reported(
    drivers: Path, lint: Lint
) -> None:
    _write(drivers / "impl" / "recorder.py", _recorder(tail=SPY))

    assert _findings(lint("check", "--no-cache").out) == [
        "`Spy.click` is async, the protocol's is not"
    ]


def test_subclass_of_an_implementation_by_use_that_conforms_is_silent(
    drivers: Path, lint: Lint
) -> None:
    _write(drivers / "impl" / "recorder.py", _recorder(tail=GOOD_SPY))

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_return_drift_from_an_aliased_return_type_is_reported(drivers: Path, lint: Lint) -> None:
    _write(drivers / "impl" / "recorder.py", _recorder(returns="bytes"))

    assert _findings(lint("check", "--no-cache").out) == [
        "`Recorder.screenshot` returns `bytes`, not `Screenshot`"
    ]


@pytest.mark.parametrize("returns", ["Screenshot", "ScreenshotParam", "'Screenshot'"])
def test_the_aliased_return_type_or_its_target_is_silent(
    drivers: Path, lint: Lint, returns: str
) -> None:
    _write(drivers / "impl" / "recorder.py", _recorder(returns=returns))

    assert lint("check", "--no-cache").out == "All checks passed!\n"


def test_mypy_agrees(drivers: Path) -> None:
    _write(drivers / "impl" / "bad_spy.py", _recorder(tail=SPY))
    _write(drivers / "impl" / "good_spy.py", _recorder(tail=GOOD_SPY))
    _write(drivers / "impl" / "bad_return.py", _recorder(returns="bytes"))
    _write(drivers / "impl" / "good_return.py", _recorder())
    probe = "from drivers import Driver\nfrom impl.{0} import Spy\nx: Driver = Spy()\n"
    _write(drivers / "probe_bad.py", probe.format("bad_spy"))
    _write(drivers / "probe_good.py", probe.format("good_spy"))

    errors, stderr = mypy_strict(drivers)

    files = sorted({line.split(":")[0] for line in errors})
    assert files == ["impl/bad_return.py", "impl/bad_spy.py", "probe_bad.py"], (errors, stderr)
