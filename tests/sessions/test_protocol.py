"""The session contract's own code: settings (resolving, comparing, coercing) and the
argument checks every backend shares.

Error messages are checked for the facts a caller needs to fix the call (which argument,
the type or value given, the bound it broke), not for their exact wording
(benchmarks/mutation_survivors.md, "Error messages").
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest
from agents.memory.session_settings import SessionSettings as SDKSessionSettings

from agent_sessions import InvalidSessionIdError, SessionSettings
from agent_sessions.protocol import (
    SessionABC,
    coerce_session_settings,
    validate_limit,
    validate_page_limit,
    validate_session_id,
)


@dataclass
class LimitHolder:
    limit: int | None


class NoLimit:
    pass


# -- SessionSettings ---------------------------------------------------------------------


def test_settings_refuse_a_bad_limit_when_made() -> None:
    with pytest.raises(ValueError, match=r">= 0 .*-1"):
        SessionSettings(limit=-1)
    with pytest.raises(TypeError, match="str"):
        SessionSettings(limit="3")  # type: ignore[arg-type]
    assert SessionSettings(limit=0).limit == 0
    assert SessionSettings().limit is None


def test_resolve_keeps_these_settings_when_the_override_sets_nothing() -> None:
    ours = SessionSettings(limit=5)
    for override in (None, {}, {"limit": None}, LimitHolder(None), NoLimit(), SessionSettings()):
        assert ours.resolve(override) is ours, override


def test_resolve_lays_the_overrides_limit_on_top() -> None:
    ours = SessionSettings(limit=5)
    for override in ({"limit": 2}, LimitHolder(2), SessionSettings(limit=2)):
        resolved = ours.resolve(override)
        assert type(resolved) is SessionSettings
        assert resolved.limit == 2
    assert ours.resolve({"limit": 0}).limit == 0  # 0 is a limit, not "unset"
    assert SessionSettings().resolve(SDKSessionSettings(limit=3)).limit == 3
    assert ours.limit == 5


def test_resolve_validates_the_overrides_limit() -> None:
    with pytest.raises(ValueError, match="-2"):
        SessionSettings().resolve({"limit": -2})
    with pytest.raises(TypeError, match="bool"):
        SessionSettings().resolve(LimitHolder(True))


def test_resolve_names_every_unknown_key_of_a_mapping_in_order() -> None:
    with pytest.raises(TypeError, match=r"Unknown session settings: max, size$"):
        SessionSettings().resolve({"size": 1, "limit": 2, "max": 3})
    with pytest.raises(TypeError, match=r": 7$"):
        SessionSettings().resolve({7: 1})


def test_settings_equal_settings_of_the_same_limit_ours_or_the_sdks() -> None:
    assert SessionSettings(limit=3) == SessionSettings(limit=3)
    assert SessionSettings(limit=3) != SessionSettings(limit=4)
    assert SessionSettings() == SessionSettings()
    assert SessionSettings(limit=3) == SDKSessionSettings(limit=3)
    assert SessionSettings(limit=3) != SDKSessionSettings(limit=4)
    assert SessionSettings() != SDKSessionSettings(limit=4)
    assert SessionSettings(limit=3) != LimitHolder(3)  # not settings: no equality
    assert SessionSettings(limit=3).__eq__(LimitHolder(3)) is NotImplemented


def test_settings_equal_no_other_object_with_a_limit_or_that_name() -> None:
    from agents import RunConfig

    class SessionSettingsElsewhere:  # the same name, not the SDK's module
        limit = 3

    SessionSettingsElsewhere.__name__ = "SessionSettings"
    assert SessionSettings() != RunConfig()  # the SDK's module, another class
    assert SessionSettings(limit=3) != SessionSettingsElsewhere()


def test_settings_survive_pickle_and_hand_out_the_sdks_class() -> None:
    settings = SessionSettings(limit=3)
    copied = pickle.loads(pickle.dumps(settings))
    assert type(copied) is SessionSettings
    assert copied.limit == 3
    assert isinstance(settings, SDKSessionSettings)  # the SDK is loaded in this test


def test_coerce_session_settings() -> None:
    ours = SessionSettings(limit=2)
    assert coerce_session_settings(ours) is ours
    assert coerce_session_settings(None) is None
    for given in (SDKSessionSettings(limit=4), {"limit": 4}, LimitHolder(4)):
        coerced = coerce_session_settings(given)
        assert type(coerced) is SessionSettings
        assert coerced == SessionSettings(limit=4)
    assert coerce_session_settings({}) == SessionSettings()
    with pytest.raises(TypeError, match=r"session_settings .* got int$"):
        coerce_session_settings(4)


# -- the argument checks ------------------------------------------------------------------


def test_validate_limit() -> None:
    assert validate_limit(None) is None
    assert validate_limit(0) == 0
    assert validate_limit(7) == 7
    for bad in (True, False, "3", 2.0):
        with pytest.raises(
            TypeError, match=rf"^limit must be an int >= 0 or None, got {type(bad).__name__}$"
        ):
            validate_limit(bad)
    with pytest.raises(ValueError, match=r"^limit must be >= 0 or None, got -1$"):
        validate_limit(-1)


def test_validate_page_limit() -> None:
    assert validate_page_limit(1) == 1
    assert validate_page_limit(2**64) == 2**64
    for bad in (None, True, "3", 1.0):
        with pytest.raises(
            TypeError, match=rf"^limit must be an int >= 1, got {type(bad).__name__}$"
        ):
            validate_page_limit(bad)
    for bad_value in (0, -5):
        with pytest.raises(ValueError, match=rf"^limit must be an int >= 1, got {bad_value}$"):
            validate_page_limit(bad_value)


def test_validate_session_id() -> None:
    for good in ("a", "é ü 🧠", "x" * 1000):
        assert validate_session_id(good) == good
    with pytest.raises(TypeError, match=r"^session_id must be a str, got bytes$"):
        validate_session_id(b"a")
    with pytest.raises(InvalidSessionIdError, match=r"^session_id must be a non-empty str$"):
        validate_session_id("")
    with pytest.raises(InvalidSessionIdError, match=r"'\\ud800' at index 2, a lone surrogate"):
        validate_session_id("é\u00e9\ud800x")


# -- SessionABC ---------------------------------------------------------------------------


class Minimal(SessionABC):
    def __init__(self, settings: SessionSettings | None) -> None:
        self.session_id = "m"
        self.session_settings = settings
        self.closed = 0

    async def get_items(self, limit: int | None = None) -> list[dict[str, object]]:
        return []

    async def add_items(self, items: list[dict[str, object]]) -> None:
        return None

    async def pop_item(self) -> dict[str, object] | None:
        return None

    async def clear_session(self) -> None:
        return None

    async def close(self) -> None:
        self.closed += 1


async def test_session_abc_limit_falls_back_to_the_settings_and_closes_on_exit() -> None:
    assert Minimal(SessionSettings(limit=4))._effective_limit(None) == 4
    assert Minimal(SessionSettings(limit=4))._effective_limit(2) == 2
    assert Minimal(None)._effective_limit(None) is None
    with pytest.raises(ValueError, match="-1"):
        Minimal(None)._effective_limit(-1)
    async with Minimal(None) as session:
        assert session.closed == 0
    assert session.closed == 1
