"""``protocols`` reports mypy's own ``[override]``/``[misc]`` errors on explicit subclasses
of a protocol and on subclasses of its implementations (LR100), and nothing mypy accepts."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.lint_rules.rule_fixtures import Lint
else:
    from rule_fixtures import Lint

BUS = """
    from typing import Protocol

    class Bus(Protocol):
        async def publish(self, topic: str, payload: bytes) -> None: ...
        async def close(self) -> None: ...
"""
MEMORY = """
    class InMemoryBus:
        async def publish(self, topic: str, payload: bytes) -> None: ...
        async def close(self) -> None: ...
"""
FILES = {
    "explicit.py": """
        from bus import Bus

        class Explicit(Bus):
            def publish(self, topic: str, payload: bytes) -> None: ...
            async def close(self) -> None: ...
    """,
    "good_explicit.py": """
        from bus import Bus

        class GoodExplicit(Bus):
            async def publish(self, topic: str, payload: bytes) -> None: ...
            async def close(self) -> None: ...
    """,
    "spy.py": """
        from impls.memory import InMemoryBus

        class Spy(InMemoryBus):
            def publish(self, topic: str, payload: bytes) -> None: ...
    """,
    "two_bases.py": """
        from bus import Bus

        class Closer:
            def close(self) -> None: ...

        class TwoBases(Closer, Bus):
            async def publish(self, topic: str, payload: bytes) -> None: ...
    """,
    "good_spy.py": """
        from impls.memory import InMemoryBus

        class GoodSpy(InMemoryBus):
            async def publish(self, topic: str, payload: bytes) -> None: ...
    """,
}


@pytest.fixture
def bus_project(project: Path) -> Path:
    (project / "pyproject.toml").write_text(
        '[tool.mypy]\nstrict = true\n\n[tool.lint_rules.protocols]\n"bus:Bus" = ["impls/"]\n'
    )
    (project / "bus.py").write_text(textwrap.dedent(BUS))
    (project / "impls").mkdir()
    (project / "impls" / "__init__.py").write_text("")
    (project / "impls" / "memory.py").write_text(textwrap.dedent(MEMORY))
    for name, source in FILES.items():
        (project / "impls" / name).write_text(textwrap.dedent(source))
    return project


def test_override_errors_of_subclasses_are_reported_and_what_mypy_accepts_is_not(
    bus_project: Path, lint: Lint
) -> None:
    outcome = lint("protocols", "--no-daemon")

    lines = outcome.out.splitlines()
    assert lines[-1] == "Found 4 errors.", outcome.out + outcome.err
    assert lines[0].startswith(
        "impls/explicit.py:5:5: LR100 `Explicit.publish` is not a `bus.Bus` for mypy: "
        'Return type "None" of "publish" incompatible with return type "Coroutine[Any, Any, '
        'None]" in supertype "bus.Bus"'
    )
    assert lines[1].startswith("impls/spy.py:4:1: LR100 `Spy` is not a `bus.Bus` for mypy: ")
    assert lines[2].startswith(
        "impls/spy.py:5:5: LR100 `Spy.publish` is not a `bus.Bus` for mypy: "
        'Return type "None" of "publish" incompatible with return type "Coroutine[Any, Any, '
        'None]" in supertype "impls.memory.InMemoryBus"'
    )
    assert lines[3] == (
        "impls/two_bases.py:7:1: LR100 `TwoBases.close` is not a `bus.Bus` for mypy: "
        'Definition of "close" in base class "Closer" is incompatible with definition in base '
        'class "Bus"'
    )
