"""BranchingSession under the real OpenAI Agents SDK Runner: a model that reports token
usage, the run's usage recorded per turn (``result.context_wrapper.usage``), a branch
re-asked from an earlier turn, and usage recorded from threads, ``asyncio.run`` per call."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from agents import Agent, ModelResponse, ModelSettings, Runner, Usage

from agent_sessions import SQLiteStore
from agent_sessions.branches import BranchingSession
from agent_sessions.branches import Usage as OurUsage
from agent_sessions.sdk import as_agents_session

from .test_agents_sdk import NO_TRACING, ScriptedModel, contents


class MeteredModel(ScriptedModel):
    """Reports ``10 * n`` input and ``n`` output tokens on its ``n``-th call."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[Any],
        model_settings: ModelSettings,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        response = await super().get_response(
            system_instructions,
            input,
            model_settings,
            tools,
            output_schema,
            handoffs,
            tracing,
            previous_response_id=previous_response_id,
            conversation_id=conversation_id,
            prompt=prompt,
        )
        n = len(self.inputs)
        usage = Usage(requests=1, input_tokens=10 * n, output_tokens=n, total_tokens=11 * n)
        return ModelResponse(output=response.output, usage=usage, response_id=None)


async def test_the_sdk_runs_usage_is_recorded_per_turn_and_branch() -> None:
    model = MeteredModel()
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    async with SQLiteStore() as store:
        session = BranchingSession(store, "sdk-chat")
        for question in ["My name is Ada.", "I live in Paris.", "Where do I live?"]:
            result = await Runner.run(
                agent, question, session=as_agents_session(session), run_config=NO_TRACING
            )
            await session.record_usage(result.context_wrapper.usage)
        retried = await session.branch_from(1, "moved")
        assert retried == {"role": "user", "content": "I live in Paris."}
        result = await Runner.run(
            agent, "I live in Rome.", session=as_agents_session(session), run_config=NO_TRACING
        )
        await session.record_usage(result.context_wrapper.usage)
        # The model saw only the branch's history: turn 0, then the new question.
        assert [text for _, text in contents(model.inputs[-1])] == [
            "My name is Ada.",
            "reply 1",
            "I live in Rome.",
        ]
        assert await session.usage_by_turn("main") == {
            0: OurUsage(1, 10, 1, 11),
            1: OurUsage(1, 20, 2, 22),
            2: OurUsage(1, 30, 3, 33),
        }
        assert await session.usage_by_turn() == {1: OurUsage(1, 40, 4, 44)}
        assert await session.usage() == OurUsage(4, 100, 10, 110)


def test_usage_recorded_from_threads_is_all_kept(tmp_path: Path) -> None:
    path = str(tmp_path / "chats.db")

    async def seed() -> None:
        async with SQLiteStore(path) as store:
            await BranchingSession(store, "shared").add_items([{"role": "user", "content": "q"}])

    asyncio.run(seed())

    async def record(times: int) -> None:
        async with SQLiteStore(path) as store:
            session = BranchingSession(store, "shared")
            for _ in range(times):
                await session.record_usage({"requests": 1, "input_tokens": 2, "output_tokens": 1})

    threads = [threading.Thread(target=asyncio.run, args=(record(25),)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    async def totals() -> OurUsage:
        async with SQLiteStore(path) as store:
            return await BranchingSession(store, "shared").usage(turn=0)

    assert asyncio.run(totals()) == OurUsage(100, 200, 100, 300)
