"""A loopback server that speaks the Chat Completions API, for the translation tests."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# Given the page sent (the first user message), a reply is the translated text, or an HTTP
# status to fail with.
Responder = Callable[[str], "str | int"]


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client killed mid-request (the crash test) is expected here


class FakeChatCompletions:
    """POST /v1/chat/completions on 127.0.0.1: records every request, replies via ``respond``.

    Errors carry ``Retry-After: 0`` so that retries in tests do not wait.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.respond: Responder = str.upper
        self.in_flight = 0
        self.max_in_flight = 0
        self.delay = 0.0
        self._lock = threading.Lock()
        self._server = QuietServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def pages_sent(self) -> list[str]:
        """The first user message (the protected page text) of every request, in arrival
        order."""
        return [request["messages"][1]["content"] for request in self.requests]

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake._lock:
                    fake.requests.append(body)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    time.sleep(fake.delay)
                    if self.path != "/v1/chat/completions":
                        self._send(404, {"error": {"message": f"no route {self.path}"}})
                        return
                    reply = fake.respond(body["messages"][1]["content"])
                    if isinstance(reply, int):
                        error = {"message": f"scripted {reply}", "type": "test", "code": None}
                        self._send(reply, {"error": error})
                        return
                    self._send(200, completion(body["model"], reply))
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status >= 400:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def reverse_every_word(text: str) -> str:
    """A "translation" that changes every word (and so every heading's own anchor) but
    leaves placeholders alone."""
    return re.sub(r"(?<!@@)\b[A-Za-z]{2,}\b", lambda word: word[0][::-1], text)


def completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def model_environment(server: FakeChatCompletions) -> dict[str, str]:
    """The environment that points the translation script at ``server``."""
    return {
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_MODEL": "test-model",
        "NO_PROXY": "127.0.0.1",
    }
