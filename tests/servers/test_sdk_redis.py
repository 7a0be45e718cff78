"""The Agents SDK's ``RedisSession`` code, run on ours with only the import line changed
(issue 23): ``from_url``, an injected ``redis_client`` that stays the caller's, ``ping()``,
the SDK's key prefixes (without the final ``:``), and the SDK's Redis example as written."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import agents
import pytest
import redis.asyncio as aioredis
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from agent_sessions import SessionClosedError, SessionConfigError
from agent_sessions.redis import RedisSession
from agent_sessions.sdk import as_agents_session

from .own_servers import spare_port

NO_TRACING = RunConfig(tracing_disabled=True)  # tracing would export to the network


class EchoModel(Model):
    """A local model: answers turn N with "reply N" and keeps the input of each turn."""

    def __init__(self) -> None:
        self.inputs: list[list[Any]] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        given = kwargs.get("input", args[1] if len(args) > 1 else None)
        seen = [{"role": "user", "content": given}] if isinstance(given, str) else given
        self.inputs.append(list(seen or []))
        turn = len(self.inputs)
        text = ResponseOutputText(type="output_text", text=f"reply {turn}", annotations=[])
        reply = ResponseOutputMessage(
            id=f"msg_{turn}",
            type="message",
            role="assistant",
            status="completed",
            content=[text],
        )
        return ModelResponse(output=[reply], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the example runs without streaming")


def texts(items: list[Any]) -> list[tuple[str, str]]:
    """(role, text) of each message, whichever content shape the SDK used."""
    result = []
    for item in items:
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content)
        result.append((item.get("role"), content))
    return result


def numbered(count: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": f"m{n}"} for n in range(count)]


@pytest.fixture
def sdk_prefix(redis_prefix: str) -> str:
    """A prefix of this test's own, spelled the SDK's way: without the final ':'."""
    return f"{redis_prefix}{uuid.uuid4().hex[:8]}"


async def test_from_url_with_the_sdks_keywords(
    redis_url: str, sdk_prefix: str, redis_client: aioredis.Redis
) -> None:
    sdk_settings: Any = agents.SessionSettings(limit=2)  # not our type: mypy would refuse it
    session = RedisSession.from_url(
        "user-123",
        url=redis_url,
        redis_kwargs={"health_check_interval": 30},
        session_settings=sdk_settings,
        key_prefix=sdk_prefix,
        ttl=3600,
    )
    await session.add_items(numbered(3))
    assert await session.get_items() == numbered(3)[1:]
    # The SDK's keys: its prefix and the id joined with ':', the items under ':messages'.
    key = f"{sdk_prefix}:user-123".encode()
    assert await redis_client.llen(key + b":messages") == 3
    assert await redis_client.hget(key, "session_id") == b"user-123"
    assert 3500 < await redis_client.ttl(key + b":messages") <= 3600
    assert 3500 < await redis_client.ttl(key) <= 3600
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.get_items()


async def test_from_url_with_decoded_responses(redis_url: str, sdk_prefix: str) -> None:
    session = RedisSession.from_url(
        "u", url=redis_url, redis_kwargs={"decode_responses": True}, key_prefix=sdk_prefix
    )
    await session.add_items(numbered(2))
    assert await session.get_items() == numbered(2)
    assert await session.pop_item() == numbered(2)[1]
    await session.clear_session()
    assert await session.get_items() == []
    await session.close()


def test_from_url_refuses_redis_kwargs_the_client_does_not_take(redis_url: str) -> None:
    with pytest.raises(SessionConfigError, match="redis_kwargs"):
        RedisSession.from_url("u", url=redis_url, redis_kwargs={"no_such_option": 1})


async def test_an_injected_client_stays_the_callers_and_usable_after_close(
    redis_url: str, sdk_prefix: str
) -> None:
    client = aioredis.Redis.from_url(redis_url)
    try:
        session = RedisSession("u", redis_client=client, key_prefix=sdk_prefix, ttl=60)
        await session.add_items(numbered(2))
        assert await session.get_items() == numbered(2)
        await session.close()
        with pytest.raises(SessionClosedError):
            await session.get_items()
        assert await client.ping() is True
        assert await client.llen(f"{sdk_prefix}:u:messages") == 2
        # A second session on the same client, after the first one closed.
        again = RedisSession("u", redis_client=client, key_prefix=sdk_prefix)
        assert await again.get_items() == numbered(2)
        again.close()  # plainly, as the SDK's examples do
        assert await client.ping() is True
    finally:
        await client.aclose()


async def connected_clients(redis_url: str, name: str) -> int:
    """How many connections the server has whose CLIENT SETNAME is ``name``."""
    observer = aioredis.Redis.from_url(redis_url)
    try:
        return sum(1 for client in await observer.client_list() if client["name"] == name)
    finally:
        await observer.aclose()


def test_plain_close_outside_a_loop_closes_the_from_url_client(
    redis_url: str, sdk_prefix: str
) -> None:
    name = f"plain-close-{uuid.uuid4().hex[:8]}"
    session = RedisSession.from_url(
        "u", url=redis_url, key_prefix=sdk_prefix, redis_kwargs={"client_name": name}
    )

    asyncio.run(session.add_items(numbered(2)))  # a sync program: asyncio.run per call
    assert asyncio.run(session.get_items()) == numbered(2)
    assert asyncio.run(connected_clients(redis_url, name)) >= 1
    session.close()  # as the SDK's examples do, without await, outside any loop
    assert asyncio.run(connected_clients(redis_url, name)) == 0
    with pytest.raises(SessionClosedError):
        asyncio.run(session.get_items())


async def test_plain_close_inside_a_loop_closes_the_from_url_client(
    redis_url: str, sdk_prefix: str
) -> None:
    name = f"plain-close-{uuid.uuid4().hex[:8]}"
    session = RedisSession.from_url(
        "u", url=redis_url, key_prefix=sdk_prefix, redis_kwargs={"client_name": name}
    )
    await session.add_items(numbered(2))
    assert await connected_clients(redis_url, name) == 1
    session.close()  # without await: the release runs as a task of this loop
    for _ in range(500):  # bounded: 5 s
        if await connected_clients(redis_url, name) == 0:
            break
        await asyncio.sleep(0.01)
    assert await connected_clients(redis_url, name) == 0
    with pytest.raises(SessionClosedError):
        await session.get_items()


def test_redis_client_and_url_together_are_refused(redis_url: str) -> None:
    client = aioredis.Redis.from_url(redis_url)
    with pytest.raises(SessionConfigError, match="redis_client"):
        RedisSession("u", redis_url, redis_client=client)


def test_redis_client_must_be_a_redis_client() -> None:
    with pytest.raises(TypeError, match="redis_client"):
        RedisSession("u", redis_client="redis://127.0.0.1:6379/0")  # type: ignore[arg-type]


async def test_ping_is_true_on_a_live_server(redis_url: str, sdk_prefix: str) -> None:
    session = RedisSession.from_url("u", url=redis_url, key_prefix=sdk_prefix)
    assert await session.ping() is True
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.ping()


async def test_ping_is_false_when_nothing_answers() -> None:
    url = f"redis://127.0.0.1:{spare_port()}/0"
    session = RedisSession.from_url("u", url=url, redis_kwargs={"socket_connect_timeout": 1})
    assert await session.ping() is False
    await session.close()


async def test_default_settings_have_a_limit_of_none(redis_url: str, sdk_prefix: str) -> None:
    session = RedisSession.from_url("u", url=redis_url, key_prefix=sdk_prefix)
    assert isinstance(session.session_settings, agents.SessionSettings)
    assert session.session_settings.limit is None
    await session.close()


async def test_the_sdks_redis_example_runs_as_written(redis_url: str, sdk_prefix: str) -> None:
    """examples/memory/redis_session_example.py from the SDK's sdist, with a local model
    and this test's own prefixes (the example's tenant prefix is 'tenant_abc:sessions')."""
    model = EchoModel()
    agent = Agent(name="Assistant", instructions="Reply very concisely.", model=model)

    session = RedisSession.from_url("redis_conversation_123", url=redis_url, key_prefix=sdk_prefix)
    if not await session.ping():
        pytest.fail("the example stops here when Redis is not available")
    await session.clear_session()
    sdk_session = as_agents_session(session)
    await Runner.run(
        agent, "What city is the Golden Gate Bridge in?", session=sdk_session, run_config=NO_TRACING
    )
    await Runner.run(agent, "What state is it in?", session=sdk_session, run_config=NO_TRACING)
    assert texts(model.inputs[1]) == [
        ("user", "What city is the Golden Gate Bridge in?"),
        ("assistant", "reply 1"),
        ("user", "What state is it in?"),
    ]

    new_session = RedisSession.from_url(
        "redis_conversation_123", url=redis_url, key_prefix=sdk_prefix
    )
    assert len(await new_session.get_items()) == 4  # the history is in Redis, not the object
    await new_session.close()

    ttl_session = RedisSession.from_url(
        "ttl_demo_session", url=redis_url, key_prefix=sdk_prefix, ttl=3600
    )
    await Runner.run(agent, "Hi", session=as_agents_session(ttl_session), run_config=NO_TRACING)
    await ttl_session.close()
    await session.close()

    tenant_session = RedisSession.from_url(
        "user_123", url=redis_url, key_prefix=f"{sdk_prefix}_tenant_abc:sessions"
    )
    assert await tenant_session.ping()
    await tenant_session.add_items(numbered(1))
    assert await tenant_session.get_items() == numbered(1)
    await tenant_session.close()


# -- the SDK's keys, shared with the SDK's own RedisSession --------------------------------------


async def test_history_the_sdk_wrote_is_read_and_extended_in_place(
    redis_url: str, sdk_prefix: str
) -> None:
    from agents.extensions.memory import RedisSession as SDKRedisSession

    theirs = SDKRedisSession.from_url("user:42", url=redis_url, key_prefix=sdk_prefix, ttl=600)
    ours = RedisSession.from_url("user:42", url=redis_url, key_prefix=sdk_prefix, ttl=600)
    try:
        await theirs.add_items(numbered(2))  # type: ignore[arg-type]
        assert await ours.get_items() == numbered(2)
        await ours.add_items(numbered(3)[2:])
        assert await theirs.get_items() == numbered(3)
        assert await ours.pop_item() == numbered(3)[2]
        assert await theirs.get_items() == numbered(2)
        assert (await ours.store.list_sessions(prefix="user:")).session_ids == ["user:42"]
        await theirs.clear_session()
        assert await ours.get_items() == []
        await ours.add_items(numbered(1))
        assert await theirs.get_items(limit=1) == numbered(1)
        await ours.clear_session()
        assert await theirs.get_items() == []
    finally:
        await theirs.close()
        await ours.close()


def test_ours_and_the_sdks_write_one_session_at_once(redis_url: str, sdk_prefix: str) -> None:
    """Threads, each with its own loop (asyncio.run per batch, as sync callers do), half
    writing through the SDK's RedisSession, half through ours: no batch is lost, doubled
    or split."""
    import threading

    from agents.extensions.memory import RedisSession as SDKRedisSession

    batches, size = 20, 3

    async def sdk_write(items: list[dict[str, Any]]) -> None:
        sdk_session = SDKRedisSession.from_url("shared", url=redis_url, key_prefix=sdk_prefix)
        await sdk_session.add_items(items)  # type: ignore[arg-type]
        await sdk_session.close()

    def writer(name: str, sdk: bool) -> None:
        for batch in range(batches):
            items = [{"writer": name, "batch": batch, "n": n} for n in range(size)]
            if sdk:
                asyncio.run(sdk_write(items))
            else:
                session = RedisSession.from_url("shared", url=redis_url, key_prefix=sdk_prefix)
                asyncio.run(session.add_items(items))
                session.close()

    threads = [threading.Thread(target=writer, args=(f"w{n}", n % 2 == 0)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    reader = RedisSession.from_url("shared", url=redis_url, key_prefix=sdk_prefix)
    stored = asyncio.run(reader.get_items())
    reader.close()
    assert len(stored) == 4 * batches * size
    for start in range(0, len(stored), size):  # every batch whole and in order
        batch = stored[start : start + size]
        assert [item["n"] for item in batch] == list(range(size))
        assert len({(item["writer"], item["batch"]) for item in batch}) == 1
    assert len({(item["writer"], item["batch"]) for item in stored}) == 4 * batches
