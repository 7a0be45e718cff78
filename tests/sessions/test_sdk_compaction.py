"""The Agents SDK's ``OpenAIResponsesCompactionSession`` over our sessions (issue 23): its
compaction replaces the history through our atomic ``replace_items`` (the SDK's
``_atomic_replace_items`` hook, which it looks up on the session's type), not its
clear-then-add path for other stores. The SDK's real ``AsyncOpenAI`` client talks to a
compaction endpoint of the test's own on loopback."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from agents.memory import OpenAIResponsesCompactionSession
from openai import AsyncOpenAI

from agent_sessions import SQLiteSession
from agent_sessions.sdk import as_agents_session

SUMMARY = {
    "type": "message",
    "id": "msg_summary",
    "role": "assistant",
    "status": "completed",
    "content": [{"type": "output_text", "text": "summary", "annotations": []}],
}


class CompactEndpoint(BaseHTTPRequestHandler):
    """``POST .../responses/compact``: one summary message, whatever the input."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps(
            {
                "id": "cmp_1",
                "object": "response.compaction",
                "created_at": 0,
                "output": [SUMMARY],
                "usage": {
                    "input_tokens": 1,
                    "output_tokens": 1,
                    "total_tokens": 2,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens_details": {"reasoning_tokens": 0},
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def client() -> Iterator[AsyncOpenAI]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), CompactEndpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield AsyncOpenAI(
        api_key="test", base_url=f"http://127.0.0.1:{server.server_port}/v1", max_retries=0
    )
    server.shutdown()
    server.server_close()


class CountingSQLiteSession(SQLiteSession):
    """Ours, counting the calls the SDK's compaction makes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[str] = []

    async def clear_session(self) -> None:
        self.calls.append("clear_session")
        await super().clear_session()

    async def replace_items(self, items: list[Any]) -> None:
        self.calls.append("replace_items")
        await super().replace_items(items)


async def test_the_sdks_compaction_replaces_our_history_atomically(client: AsyncOpenAI) -> None:
    ours = CountingSQLiteSession("u")
    await ours.add_items([{"role": "user", "content": f"m{n}"} for n in range(12)])
    compaction = OpenAIResponsesCompactionSession("u", as_agents_session(ours), client=client)
    await compaction.run_compaction({"force": True})
    assert ours.calls == ["replace_items"]  # one atomic step, never clear then add
    stored = await ours.get_items()
    assert len(stored) == 1
    assert stored[0]["content"][0]["text"] == "summary"
    await ours.close()
