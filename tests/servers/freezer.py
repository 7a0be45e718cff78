"""A proxy that can freeze a server as ``SIGSTOP`` would: bytes are accepted but nothing
is forwarded or answered until it thaws, when everything held goes through in order
(a client that left meanwhile is then seen leaving, after its last request)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from .proxy import FaultyProxy


class FreezableProxy(FaultyProxy):
    def __init__(self, target_host: str, target_port: int) -> None:
        super().__init__(target_host, target_port)
        self._flowing = asyncio.Event()
        self._flowing.set()

    @contextlib.asynccontextmanager
    async def frozen(self) -> AsyncIterator[None]:
        """Freeze inside the block, thaw when leaving it."""
        self._flowing.clear()
        try:
            yield
        finally:
            self._flowing.set()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, upstream: bool
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await reader.read(65536):
                await self._flowing.wait()
                writer.write(chunk)
                await writer.drain()
        await self._flowing.wait()
        # The other side left: pass that on as an orderly close once the bytes are through.
        with contextlib.suppress(OSError):
            writer.close()
        self._writers.discard(writer)
