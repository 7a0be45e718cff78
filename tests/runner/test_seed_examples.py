"""The usage examples of the pull request that introduced Sessions to the OpenAI Agents
SDK (the project's seed document), run on this library.

Each example's code is copied as written there, with two changes only: the import line
names ``agent_sessions`` instead of ``agents``, and the agent gets ``model=OfflineModel()``
(the examples leave the model to the SDK's default, which needs the network). What
follows each copied block checks that it did what the example says.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_sessions import Agent, OfflineModel, Runner, SQLiteSession
from agent_sessions.items import message_role, message_text


def make_agent() -> Agent:
    # the basic usage example's agent, with model= added
    agent = Agent(name="Assistant", instructions="Reply concisely.", model=OfflineModel())
    return agent


async def test_simple_api_before_and_after() -> None:
    agent = make_agent()
    # Before: Manual conversation management
    result1 = await Runner.run(agent, "What's the weather?")
    new_input = result1.to_input_list() + [{"role": "user", "content": "How about tomorrow?"}]  # noqa: RUF005
    result2 = await Runner.run(agent, new_input)
    before = result2.final_output
    # After: Automatic with Sessions
    session = SQLiteSession("user_123")
    result1 = await Runner.run(agent, "What's the weather?", session=session)
    result2 = await Runner.run(
        agent, "How about tomorrow?", session=session
    )  # Remembers context automatically

    assert result2.final_output == before
    assert 'Before that you said: "What\'s the weather?"' in result2.final_output
    await session.close()


async def test_basic_usage_with_sqlite_session() -> None:
    from agent_sessions import Agent, OfflineModel, Runner, SQLiteSession

    agent = Agent(name="Assistant", instructions="Reply concisely.", model=OfflineModel())
    session = SQLiteSession("conversation_123")
    # Conversation flows naturally
    await Runner.run(agent, "Hi, I'm planning a trip to Japan", session=session)
    await Runner.run(agent, "What's the best time to visit?", session=session)
    await Runner.run(agent, "How about cherry blossom season?", session=session)

    items = await session.get_items()
    assert [message_role(item) for item in items] == ["user", "assistant"] * 3
    assert "Hi, I'm planning a trip to Japan" in message_text(items[-1])
    await session.close()


async def test_multiple_sessions_with_isolation() -> None:
    agent = make_agent()
    # Different users get separate conversation histories
    session_alice = SQLiteSession("user_alice")
    session_bob = SQLiteSession("user_bob")
    # Completely isolated conversations
    await Runner.run(agent, "I like pizza", session=session_alice)
    await Runner.run(agent, "I like sushi", session=session_bob)

    alice = await Runner.run(agent, "What do I like?", session=session_alice)
    assert "pizza" in alice.final_output
    assert "sushi" not in alice.final_output
    assert message_text((await session_bob.get_items())[0]) == "I like sushi"
    await session_alice.close()
    await session_bob.close()


async def test_persistent_vs_in_memory_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the example's relative file lands in the test's folder
    agent = make_agent()
    # In-memory database (lost when process ends)
    session = SQLiteSession("user_123")
    await Runner.run(agent, "Remember me", session=session)
    await session.close()
    # Persistent file-based database
    session = SQLiteSession("user_123", "conversations.db")
    await Runner.run(agent, "Remember me", session=session)
    await session.close()

    assert (tmp_path / "conversations.db").is_file()
    reopened = SQLiteSession("user_123", "conversations.db")
    assert message_text((await reopened.get_items())[0]) == "Remember me"
    assert await SQLiteSession("user_123").get_items() == []  # memory is private
    await reopened.close()


async def test_session_management_operations() -> None:
    session = SQLiteSession("user_123")
    # Get all items in a session
    items = await session.get_items()
    # Add new items to a session
    new_items = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi there!"},
    ]
    await session.add_items(new_items)
    # Remove and return the most recent item (useful for corrections)
    last_item = await session.pop_item()
    # Clear all items from a session
    await session.clear_session()

    assert items == []
    assert last_item == {"role": "assistant", "content": "Hi there!"}
    assert await session.get_items() == []
    await session.close()


async def test_message_correction_pattern() -> None:
    agent = make_agent()
    session = SQLiteSession("user_123")
    await Runner.run(agent, "What's 2 + 2?", session=session)  # the question to correct

    # User wants to correct their last question
    user_message = await session.pop_item()  # Remove user's question
    assistant_message = await session.pop_item()  # Remove agent's response
    # Ask a corrected question
    result = await Runner.run(
        agent,
        "What's 2 + 3?",  # Corrected question
        session=session,
    )

    # (the example's comments swap the two: the latest item is the agent's response)
    assert message_role(user_message or {}) == "assistant"
    assert message_text(assistant_message or {}) == "What's 2 + 2?"
    assert result.final_output.startswith('You said: "What\'s 2 + 3?". That is the first')
    assert [message_text(item) for item in await session.get_items()] == [
        "What's 2 + 3?",
        result.final_output,
    ]
    await session.close()


async def test_custom_session_following_the_protocol() -> None:
    from typing import List  # noqa: UP035

    from agent_sessions import Session  # noqa: F401

    class MyCustomSession:
        """Custom session implementation following the Session protocol."""

        def __init__(self, session_id: str):
            self.session_id = session_id
            # Your initialization here

        async def get_items(self, limit: int | None = None) -> List[dict]:  # type: ignore[empty-body, type-arg]  # noqa: UP006
            """Retrieve conversation history for this session."""
            # Your implementation here
            pass

        async def add_items(self, items: List[dict]) -> None:  # type: ignore[type-arg]  # noqa: UP006
            """Store new items for this session."""
            # Your implementation here
            pass

        async def pop_item(self) -> dict | None:  # type: ignore[type-arg]
            """Remove and return the most recent item from this session."""
            # Your implementation here
            pass

        async def clear_session(self) -> None:
            """Clear all items for this session."""
            # Your implementation here
            pass

    agent = make_agent()
    # Works seamlessly with any custom implementation
    result = await Runner.run(agent, "Hello", session=MyCustomSession("session_123"))

    # the skeleton stores nothing and returns no history: the run sees only its input
    assert result.final_output == 'You said: "Hello". That is the first thing you told me.'
