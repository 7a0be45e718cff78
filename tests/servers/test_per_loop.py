"""PerLoop's clients of loops that end: closed on their own loop as it ends, once."""

from __future__ import annotations

import asyncio
import gc
import warnings
from collections.abc import Callable

from agent_sessions._servers import PerLoop


class Client:
    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.closed_on: list[asyncio.AbstractEventLoop] = []
        self.dropped = False


def clients() -> tuple[PerLoop[Client], list[Client], Callable[[], Client]]:
    made: list[Client] = []

    def create() -> Client:
        made.append(Client())
        return made[-1]

    async def close(client: Client) -> None:
        await asyncio.sleep(0)  # it may await: its loop still runs
        client.closed_on.append(asyncio.get_running_loop())

    def drop(client: Client) -> None:
        client.dropped = True

    return PerLoop(drop, at_loop_end=close), made, create


def test_a_client_is_closed_on_its_own_loop_as_asyncio_run_ends() -> None:
    per_loop, made, create = clients()

    async def use() -> Client:
        first = per_loop.get(create)
        assert per_loop.get(create) is first
        return first

    for _ in range(3):
        client = asyncio.run(use())
        assert client.closed_on == [client.loop]
        assert not client.dropped
    assert len(made) == 3
    assert per_loop.take_all() == []


def test_a_client_closed_by_close_all_is_not_closed_again_at_the_loop_end() -> None:
    per_loop, made, create = clients()

    async def use_then_close() -> None:
        per_loop.get(create)

        async def close(client: Client) -> None:
            client.closed_on.append(asyncio.get_running_loop())

        await per_loop.close_all(close, 1)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(use_then_close())
        gc.collect()
    assert [client.closed_on for client in made] == [[made[0].loop]]


def test_a_loop_closed_without_shutting_down_gets_drop_when_the_next_loop_arrives() -> None:
    per_loop, made, create = clients()
    loop = asyncio.new_event_loop()

    async def use() -> None:
        per_loop.get(create)

    loop.run_until_complete(use())
    loop.close()  # no shutdown_asyncgens(): the hook cannot run there
    asyncio.run(use())
    assert made[0].dropped
    assert made[0].closed_on == []
    assert made[1].closed_on == [made[1].loop]
