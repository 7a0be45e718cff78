"""A fault-injecting TCP proxy on a spare loopback port, for outage tests.

It forwards bytes between clients and a real server until told to break things:
``cut()`` aborts every open connection, ``down()`` makes new connections fail until
``up()``, and ``cut_next_request`` breaks the next request at a chosen point (before it
is complete, or after the server answered but before the answer reaches the client).
``request_bytes`` counts what clients sent through it, and ``after_request_bytes`` runs an
action (killing the server, say) at an exact byte of the requests to come.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

CutPoint = Literal["mid_request", "before_reply"]
_Error = TypeVar("_Error", bound=Exception)

PASSWORD = "s3cret-pw"
"""The password a proxied URL carries (the servers behind ignore it or have none), so that
a test can check error messages mask it."""


def proxied_url(
    url: str, port: int, *, user: str | None = None, password: bool = True
) -> tuple[str, str]:
    """``url`` pointed at a proxy on ``port``, as ``user`` (default: the URL's own) with
    ``PASSWORD`` where ``password``, and the same URL as errors show it (password
    masked)."""
    parts = urlsplit(url)
    name = (parts.username or "") if user is None else user
    secret, shown = (f":{PASSWORD}", ":***") if password else ("", "")
    host = f"127.0.0.1:{port}"
    return (
        parts._replace(netloc=f"{name}{secret}@{host}").geturl(),
        parts._replace(netloc=f"{name}{shown}@{host}").geturl(),
    )


async def cut_batch(
    session: Any,
    proxy: FaultyProxy,
    where: CutPoint,
    batch: list[dict[str, Any]],
    session_error: type[_Error],
) -> _Error:
    """Store ``[{"n": 0}]``, then send ``batch`` in a request cut at ``where``: the
    ``session_error`` it raised (it must raise one)."""
    await session.add_items([{"n": 0}])
    proxy.cut_next_request(where)
    try:
        await session.add_items(batch)
    except session_error as error:
        return error
    raise AssertionError(f"a batch cut at {where} raised no {session_error.__name__}")


async def check_acknowledged_items_survive_a_cut(
    session: Any, proxy: FaultyProxy, session_error: type[Exception]
) -> None:
    """Items whose write returned are still there after every connection was cut, and
    the session writes again: the dead connection is reported once (``session_error``,
    never retried blindly: a retried write could be stored twice) or replaced silently."""
    await session.add_items([{"n": 0}])
    await session.add_items([{"n": 1}, {"n": 2}])
    proxy.cut()
    with contextlib.suppress(session_error):
        await session.get_items()
    await session.add_items([{"n": 3}])
    assert await session.get_items() == [{"n": i} for i in range(4)]


class FaultyProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._down = False
        self._armed: CutPoint | None = None
        self.tripped = asyncio.Event()
        self.request_bytes = 0
        self._at_byte: tuple[int, Callable[[], None], bool] | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def cut(self) -> None:
        """Abort every connection open now (both sides see a reset)."""
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def down(self) -> None:
        """Cut everything, and close every new connection at once until ``up()``."""
        self._down = True
        self.cut()

    def up(self) -> None:
        self._down = False

    def cut_next_request(self, where: CutPoint) -> None:
        """Break the next request: ``mid_request`` forwards only part of its first chunk
        to the server; ``before_reply`` lets it through but drops the server's answer."""
        self._armed = where
        self.tripped.clear()

    def after_request_bytes(
        self, count: int, action: Callable[[], None], *, cut: bool = True
    ) -> None:
        """Forward ``count`` more request bytes (``count`` >= 0), then run ``action`` and,
        with ``cut``, forward nothing more (every connection cut)."""
        self._at_byte = (self.request_bytes + count, action, cut)
        self.tripped.clear()

    async def _serve(
        self, client_reader: asyncio.StreamReader, client: asyncio.StreamWriter
    ) -> None:
        if self._down:
            client.transport.abort()
            return
        try:
            server_reader, server = await asyncio.open_connection(
                self.target_host, self.target_port
            )
        except OSError:
            client.transport.abort()
            return
        self._writers.update((client, server))
        await asyncio.gather(
            self._pump(client_reader, server, upstream=True),
            self._pump(server_reader, client, upstream=False),
        )

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(65536):
                if upstream and self._at_byte is not None:
                    stop, action, cut = self._at_byte
                    if self.request_bytes + len(chunk) >= stop:
                        split = stop - self.request_bytes
                        head, chunk = chunk[:split], chunk[split:]
                        writer.write(head)
                        await writer.drain()
                        self.request_bytes = stop
                        self._at_byte = None
                        action()
                        if cut:
                            self._trip()
                            return
                if upstream:
                    self.request_bytes += len(chunk)
                if upstream and self._armed == "mid_request" and len(chunk) > 1:
                    writer.write(chunk[: len(chunk) // 2])
                    await writer.drain()
                    self._trip()
                    return
                if not upstream and self._armed == "before_reply":
                    self._trip()
                    return
                writer.write(chunk)
                await writer.drain()
        writer.transport.abort()
        self._writers.discard(writer)

    def _trip(self) -> None:
        self._armed = None
        self.tripped.set()
        self.cut()
