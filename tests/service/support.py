"""Helpers of the service tests: in-memory engine openers, a real server, an SSE reader."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import httpx
import msgspec
import numpy as np
import uvicorn
from numpy.typing import NDArray
from starlette.applications import Starlette

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.apps import load_demo_corpus
from zerda_async.embedders import HashingEmbedder

__all__ = [
    "SlowEmbedder",
    "SyncEmbedder",
    "live_server",
    "memory_opener",
    "read_sse",
]


class SlowEmbedder:
    """An async hashing embedder that can be made slow after indexing."""

    def __init__(self) -> None:
        self.base = HashingEmbedder()
        self.delay = 0.0

    async def __call__(self, text: Any) -> NDArray[np.float64]:
        if self.delay:
            await anyio.sleep(self.delay)
        return self.base(text)


class SyncEmbedder:
    """A sync hashing embedder (run in worker threads) that can be slowed down or fail.

    It sleeps ``delay`` seconds per text, and raises for texts containing ``fail_on``.
    """

    def __init__(self) -> None:
        self.base = HashingEmbedder()
        self.delay = 0.0
        self.fail_on: str | None = None

    def __call__(self, text: Any) -> NDArray[np.float64]:
        if self.delay:
            time.sleep(self.delay)
        if self.fail_on is not None and self.fail_on in str(text):
            raise RuntimeError("embedder exploded")
        return self.base(text)


def memory_opener(
    embed_fn: Callable[[Any], Any] | None = None, **engine_kwargs: Any
) -> Callable[[str], AbstractAsyncContextManager[AsyncContextEngine]]:
    """An opener indexing the demo corpus in memory (no saved index needed)."""
    corpus = load_demo_corpus()
    embed = embed_fn if embed_fn is not None else HashingEmbedder()

    @asynccontextmanager
    async def open_engine(template: str) -> AsyncIterator[AsyncContextEngine]:
        config = ContextEngineConfig()
        config.composer.template = template
        config.retriever.use_metadata = True
        async with AsyncContextEngine(config, **engine_kwargs) as engine:
            await engine.index(corpus, embed_fn=embed)
            yield engine

    return open_engine


@asynccontextmanager
async def live_server(app: Starlette) -> AsyncIterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        lifespan="on",
        log_level="warning",
        http="h11",
        timeout_graceful_shutdown=5,
    )
    server = uvicorn.Server(config)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(10):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


class SSERecord(msgspec.Struct):
    """One parsed Server-Sent Events record."""

    event: str
    data: dict[str, Any]


async def read_sse(response: httpx.Response) -> list[SSERecord]:
    """Every record of an SSE response (JSON data)."""
    records: list[SSERecord] = []
    event = ""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: "):
            data.append(line[len("data: ") :])
        elif line == "" and event:
            records.append(SSERecord(event, msgspec.json.decode("\n".join(data))))
            event, data = "", []
    return records
