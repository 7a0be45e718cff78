"""The translation script is a file under docs/scripts, not a package: make it importable;
and the loopback model server as fixtures."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SCRIPTS_DIR = Path(__file__).resolve().parents[2] / "docs" / "scripts"
if str(SCRIPTS_DIR) not in sys.path:
    sys.path.insert(0, str(SCRIPTS_DIR))

from model_server import FakeChatCompletions, model_environment  # noqa: E402


@pytest.fixture
def server() -> Iterator[FakeChatCompletions]:
    """A loopback Chat Completions server that upper-cases what it is sent."""
    fake = FakeChatCompletions()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def env(server: FakeChatCompletions, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The environment that points the translation script at ``server``."""
    values = model_environment(server)
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values
