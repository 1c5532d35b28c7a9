"""Every error status of the HTTP service: 404/405, 413, 422, 500, 503, 504."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import httpx
import pytest

from zerda_async import AsyncContextEngine
from zerda_async.apps.server import ServiceSettings, create_app
from zerda_async.errors import EmbeddingServiceError
from zerda_async.events import StageEvent

from .support import SlowEmbedder, SyncEmbedder, live_server, memory_opener, read_sse

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/context", {}, "query"),
        ("/v1/context", {"query": 42}, "query"),
        ("/v1/context", {"query": "   "}, "query"),
        ("/v1/context", {"query": "x" * 5000}, "query"),
        ("/v1/context", {"query": "ok", "budget": "big"}, "budget"),
        ("/v1/context", {"query": "ok", "budget": 0}, "budget"),
        ("/v1/context", {"query": "ok", "max_chunks": -1}, "max_chunks"),
        ("/v1/context", {"query": "ok", "template": "fancy"}, "template"),
        ("/v1/context", {"query": "ok", "session_id": ""}, "session_id"),
        ("/v1/context", {"query": "ok", "metadata_filters": {"a": [1]}}, "metadata_filters"),
        ("/v1/context", {"query": "ok", "metadata_filters": {"a": {"$regex": ".*"}}}, None),
        ("/v1/context", {"query": "ok", "metadata_filters": "topic"}, "metadata_filters"),
        ("/v1/context", {"query": "ok", "index_path": "/etc"}, "index_path"),
        ("/v1/context", {"query": "ok", "noise_patterns": [".*"]}, "noise_patterns"),
        ("/v1/context/stream", {"query": None}, "query"),
        ("/v1/context/multi", {"queries": []}, "queries"),
        ("/v1/context/multi", {"queries": ["ok", ""]}, "queries[1]"),
        ("/v1/context/multi", {"queries": ["ok"], "global_budget": -5}, "global_budget"),
        ("/v1/context/multi", {"queries": ["ok"], "use_weighted": "yes"}, "use_weighted"),
        ("/v1/context/multi", {"query": "ok"}, "query"),
    ],
)
async def test_invalid_bodies_get_422_naming_the_field(
    path: str, body: object, field: str | None
) -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post(path, json=body)
    assert response.status_code == 422
    error = response.json()
    assert error["status"] == 422
    if field is None:
        assert error["field"] and error["field"].startswith("metadata_filters")
    else:
        assert error["field"] == field, error
    assert error["error"]


async def test_malformed_json_and_non_objects_get_422() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        broken = await client.post("/v1/context", content=b'{"query": ')
        listed = await client.post("/v1/context", content=b'["query"]')
        empty = await client.post("/v1/context")
    for response in (broken, listed, empty):
        assert response.status_code == 422
        assert response.json()["field"] is None
    assert "malformed JSON" in broken.json()["error"]


async def test_bodies_over_the_limit_get_413() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        big = b'{"query": "' + b"a" * (1 << 20) + b'"}'
        declared = await client.post("/v1/context", content=big)

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(20):
                yield b" " * 65536

        chunked = await client.post("/v1/context/stream", content=chunks())
        ok = await client.post("/v1/context", json={"query": "What is BM25?"})
    assert declared.status_code == 413
    assert declared.json() == {
        "error": "request body larger than 1048576 bytes",
        "status": 413,
        "field": None,
    }
    assert chunked.status_code == 413
    assert ok.status_code == 200


async def test_the_body_limit_is_configurable() -> None:
    app = create_app(memory_opener(), ServiceSettings(max_body_bytes=64))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        small = await client.post("/v1/context", json={"query": "What is BM25?"})
        large = await client.post("/v1/context/multi", json={"queries": ["What is BM25?"] * 8})
    assert small.status_code == 200
    assert large.status_code == 413


async def test_unknown_paths_and_methods_get_json_errors() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        missing = await client.get("/v2/everything")
        wrong_method = await client.get("/v1/context")
    assert missing.status_code == 404
    assert missing.json()["status"] == 404
    assert wrong_method.status_code == 405
    assert wrong_method.json()["status"] == 405


async def test_a_request_past_its_deadline_gets_504() -> None:
    embed = SlowEmbedder()
    app = create_app(memory_opener(embed), ServiceSettings(request_timeout=0.3))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        embed.delay = 1.0  # the async embedder embeds queries before the first event
        with anyio.fail_after(5):
            timed_out = await client.post("/v1/context", json={"query": "What is BM25?"})
            multi = await client.post("/v1/context/multi", json={"queries": ["What is RAG?"]})
            stream = await client.post("/v1/context/stream", json={"query": "Where is Cairo?"})
        embed.delay = 0.0
        health = (await client.get("/healthz")).json()
    for response in (timed_out, multi, stream):
        assert response.status_code == 504
        assert response.json() == {
            "error": "request took longer than 0.3 s",
            "status": 504,
            "field": None,
        }
    assert health["in_flight"] == 0


class _StallingEngine:
    """An engine whose streams stall after their first event (as a slow stage would)."""

    def __init__(self, engine: AsyncContextEngine) -> None:
        self.engine = engine
        self.stalled = 0

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[StageEvent]:
        events = self.engine.stream(*args, **kwargs)
        first = await events.__anext__()
        yield first
        self.stalled += 1
        async for event in events:
            await anyio.sleep(0.5)
            yield event


async def test_a_stream_past_its_deadline_ends_with_an_error_event() -> None:
    opener = memory_opener()
    stalling: list[_StallingEngine] = []

    @asynccontextmanager
    async def open_stalling(template: str) -> AsyncIterator[AsyncContextEngine]:
        async with opener(template) as engine:
            stalling.append(_StallingEngine(engine))
            yield cast(AsyncContextEngine, stalling[-1])

    app = create_app(open_stalling, ServiceSettings(request_timeout=0.3))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        with anyio.fail_after(5):
            async with client.stream(
                "POST", "/v1/context/stream", json={"query": "Where is Cairo?"}
            ) as response:
                status = response.status_code
                records = await read_sse(response)
        health = (await client.get("/healthz")).json()
    assert status == 200
    assert stalling[0].stalled == 1
    assert [r.event for r in records] == ["analysis", "error"]
    assert records[-1].data == {
        "event": "error",
        "stage": "",
        "error_type": "TimeoutError",
        "message": "request took longer than 0.3 s",
        "status": 504,
    }
    assert health["in_flight"] == 0


async def test_a_full_engine_gets_503_with_retry_after() -> None:
    embed = SlowEmbedder()
    app = create_app(memory_opener(embed), ServiceSettings(max_pending=1, retry_after=7))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        embed.delay = 0.5
        results: dict[str, httpx.Response] = {}

        async def slow() -> None:
            results["slow"] = await client.post("/v1/context", json={"query": "What is RAG?"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow)
            with anyio.fail_after(5):
                while app.state.service.active == 0:
                    await anyio.sleep(0.005)
            full = await client.post("/v1/context", json={"query": "What is BM25?"})
            streamed = await client.post("/v1/context/stream", json={"query": "What is BM25?"})
        embed.delay = 0.0
        after = await client.post("/v1/context", json={"query": "What is BM25?"})
    assert full.status_code == 503
    assert full.headers["retry-after"] == "7"
    assert full.json()["status"] == 503
    assert streamed.status_code == 503
    assert results["slow"].status_code == 200
    assert after.status_code == 200


async def test_a_failing_stage_gives_500_or_an_error_event() -> None:
    embed = SyncEmbedder()
    app = create_app(memory_opener(embed))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        embed.fail_on = "boom"
        failed = await client.post("/v1/context", json={"query": "boom goes the query"})
        async with client.stream(
            "POST", "/v1/context/stream", json={"query": "boom again"}
        ) as response:
            status = response.status_code
            records = await read_sse(response)
        ok = await client.post("/v1/context", json={"query": "What is BM25?"})
        metrics = (await client.get("/metrics")).text
    assert failed.status_code == 500
    assert failed.json()["error"] == "RuntimeError in stage retrieval"
    assert status == 200
    assert records[-1].event == "error"
    assert records[-1].data["error_type"] == "RuntimeError"
    assert "exploded" in records[-1].data["message"]
    assert ok.status_code == 200
    assert 'zerda_http_errors_total{path="/v1/context/stream",status="stream"} 1' in metrics
    assert 'zerda_http_errors_total{path="/v1/context",status="500"} 1' in metrics


class ServiceFailingEmbedder(SyncEmbedder):
    """Fails like a remote embedding service on texts containing ``fail_on``."""

    def __call__(self, text: Any) -> Any:
        if self.fail_on is not None and self.fail_on in str(text):
            raise EmbeddingServiceError("http://127.0.0.1:9/v1/embeddings answered 503", 503)
        return super().__call__(text)


async def test_a_stage_error_reaches_the_service_unchanged() -> None:
    """Reported by its own type: the project's errors by the table, a component's as type
    and stage, on /v1/context and /v1/context/multi alike (nothing rebuilt from event text)."""
    service_down, exploding = ServiceFailingEmbedder(), SyncEmbedder()
    down_app, exploding_app = (
        create_app(memory_opener(service_down)),
        create_app(memory_opener(exploding)),
    )
    multi = {"queries": ["What is BM25?", "boom twice"], "global_budget": None}
    async with live_server(down_app) as url, httpx.AsyncClient(base_url=url) as client:
        service_down.fail_on = "boom"
        down = await client.post("/v1/context", json={"query": "boom goes the query"})
    async with live_server(exploding_app) as url, httpx.AsyncClient(base_url=url) as client:
        exploding.fail_on = "boom"
        exploded_multi = await client.post("/v1/context/multi", json=multi)
    # The embedding service's own error: 502 by the table, its own message.
    assert down.status_code == 502, down.text
    assert down.json()["error"] == "http://127.0.0.1:9/v1/embeddings answered 503"
    # A component's exception in run_multi: its type and stage, not "internal error".
    assert exploded_multi.status_code == 500
    assert exploded_multi.json()["error"] == "RuntimeError in stage retrieval"
