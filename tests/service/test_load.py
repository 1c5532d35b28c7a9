"""Load and clean-up: 64 concurrent clients x 20 requests, then nothing left running."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import httpx
import pytest

from zerda_async import AsyncContextEngine
from zerda_async.apps.server import create_app
from zerda_async.events import StageEvent

from .support import live_server, memory_opener, read_sse

pytestmark = pytest.mark.anyio

CLIENTS = 64
REQUESTS = 20
QUERIES = [
    ("What is BM25?", "english"),
    ("ما هو التعلم الآلي؟", "arabic"),
    ("Where does the Nile flow?", "english"),
    ("كيف تحضر القهوة العربية؟", "arabic"),
    ("How do date palms get pollinated?", "minimal"),
    ("What is overfitting?", "structured"),
]


def _other_tasks() -> set[asyncio.Task[Any]]:
    current = asyncio.current_task()
    return {t for t in asyncio.all_tasks() if t is not current and not t.done()}


async def _client(url: str, n: int, outcomes: Counter[str]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        for i in range(REQUESTS):
            query, template = QUERIES[(n + i) % len(QUERIES)]
            body: dict[str, Any] = {"query": query, "template": template}
            if i % 10 == 9:
                response = await client.post(
                    "/v1/context/multi", json={"queries": [query, "What is RAG?"]}
                )
                ok = response.status_code == 200 and bool(response.json()["context"])
            elif i % 5 == 4:
                async with client.stream("POST", "/v1/context/stream", json=body) as response:
                    records = await read_sse(response)
                ok = response.status_code == 200 and records[-1].event == "done"
            else:
                if i % 3 == 0:
                    body["session_id"] = f"client-{n}"
                response = await client.post("/v1/context", json=body)
                ok = response.status_code == 200 and bool(response.json()["context"])
            outcomes["ok" if ok else f"failed {response.status_code}"] += 1


async def test_64_concurrent_clients_get_no_errors_and_leave_nothing_running() -> None:
    before = _other_tasks()
    app = create_app(memory_opener())
    service = app.state.service
    outcomes: Counter[str] = Counter()
    started = time.perf_counter()
    async with live_server(app) as url:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as tg:
                for n in range(CLIENTS):
                    tg.start_soon(_client, url, n, outcomes)
        async with httpx.AsyncClient(base_url=url) as client:
            metrics = (await client.get("/metrics")).text
        assert service.active == 0
        # One engine served every template.
        assert app.state.pool.loaded == ["arabic"]
    elapsed = time.perf_counter() - started
    assert outcomes == Counter({"ok": CLIENTS * REQUESTS}), outcomes
    assert "zerda_http_errors_total{" not in metrics
    served = sum(
        int(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("zerda_http_requests_total{") and 'status="200"' in line
    )
    assert served == CLIENTS * REQUESTS
    # After shutdown: engines closed, no request in flight, no task left behind.
    assert app.state.pool.loaded == []
    assert app.state.metrics.in_flight == 0
    with anyio.fail_after(5):
        while _other_tasks() - before:
            await anyio.sleep(0.01)
    print(f"{CLIENTS * REQUESTS} requests in {elapsed:.1f} s")


class _StallingEngine:
    """Streams that stall between events, so a client can leave in the middle."""

    def __init__(self, engine: AsyncContextEngine) -> None:
        self.engine = engine
        self.closed = 0

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StageEvent]:
        try:
            async for event in self.engine.stream(*args, **kwargs):
                yield event
                await anyio.sleep(0.2)
        finally:
            self.closed += 1


async def test_a_client_leaving_mid_stream_releases_everything() -> None:
    opener = memory_opener()
    stalling: list[_StallingEngine] = []

    @asynccontextmanager
    async def open_stalling(template: str) -> AsyncIterator[AsyncContextEngine]:
        async with opener(template) as engine:
            stalling.append(_StallingEngine(engine))
            yield cast(AsyncContextEngine, stalling[-1])

    before = _other_tasks()
    app = create_app(open_stalling)
    service = app.state.service
    async with live_server(app) as url:
        async with (
            httpx.AsyncClient(base_url=url) as client,
            client.stream(
                "POST", "/v1/context/stream", json={"query": "What is BM25?"}
            ) as response,
        ):
            async for line in response.aiter_lines():
                if line.startswith("event: "):
                    break
            assert service.active == 1
        with anyio.fail_after(5):
            while service.active or not stalling[0].closed:
                await anyio.sleep(0.01)
    assert stalling[0].closed == 1
    with anyio.fail_after(5):
        while _other_tasks() - before:
            await anyio.sleep(0.01)
