"""Shared test configuration."""

import pytest

# The conformance kit lives in the package; let pytest explain its failed asserts.
pytest.register_assert_rewrite("agent_sessions.testing")

# test_kit.py runs the kit on deliberately broken backends in a separate pytest.
pytest_plugins = ["pytester"]
