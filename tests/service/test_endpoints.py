"""Every endpoint of the HTTP service, driven over loopback with a real HTTP client."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

import httpx
import pytest

from zerda_async import AsyncContextEngine
from zerda_async.apps.server import create_app

from .support import live_server, memory_opener, read_sse

pytestmark = pytest.mark.anyio

STAGES = ["analysis", "retrieved", "filtered", "ranked", "composed", "guarded", "done"]


async def test_healthz_reports_the_default_engine() -> None:
    app = create_app(memory_opener(), index_info={"chunks": 53})
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    # One engine serves every template a request may name.
    assert body["templates_loaded"] == ["arabic", "auto", "english", "minimal", "structured"]
    assert body["index"] == {"chunks": 53}
    assert body["in_flight"] == 0


async def test_context_returns_the_whole_result_as_json() -> None:
    opened: list[str] = []
    base = memory_opener()

    def counting(template: str) -> AbstractAsyncContextManager[AsyncContextEngine]:
        opened.append(template)
        return base(template)

    app = create_app(counting)
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/v1/context",
            json={"query": "Where does the Nile flow?", "template": "english", "max_chunks": 3},
        )
        health = (await client.get("/healthz")).json()
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["context"].startswith("📚 Retrieved Information:")
    assert body["template"] == "english"
    assert 1 <= body["total_included"] <= 3
    assert body["context_length"] == len(body["context"])
    first = body["chunks_used"][0]
    assert first["doc_id"].startswith("nile-")
    assert first["source"] in {"geography-notes", "river-atlas"}
    assert first["metadata"]["topic"] == "nile"
    assert first["composite_score"] > 0
    assert first["text_preview"] and first["char_count"] >= len(first["text_preview"])
    assert body["query_analysis"]["language"] == "en"
    assert set(body["timings_ms"]) == set(STAGES[:-1])
    assert body["request_id"]
    # The English request ran on the service's one (Arabic-configured) engine.
    assert opened == ["arabic"]
    assert health["status"] == "ok"


async def test_arabic_query_uses_the_default_arabic_template() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post("/v1/context", json={"query": "كيف تحضر القهوة العربية؟"})
    assert response.status_code == 200
    body = response.json()
    assert body["template"] == "arabic"
    assert body["context"].startswith("📚 المعلومات المسترجعة:")
    assert body["query_analysis"]["is_arabic"] is True
    assert any(c["doc_id"].startswith("coffee-ar-") for c in body["chunks_used"])


async def test_budget_and_session_are_passed_to_the_engine() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        small = await client.post(
            "/v1/context", json={"query": "What is BM25?", "budget": 300, "session_id": "s1"}
        )
        # Another query: the documented cache key ignores the budget.
        large = await client.post(
            "/v1/context",
            json={"query": "How does BM25 score documents?", "budget": 3000, "session_id": "s2"},
        )
    assert small.status_code == large.status_code == 200
    assert small.json()["query_analysis"]["context_budget"] == 300
    assert small.json()["context_length"] <= 300 < large.json()["context_length"]


async def test_metadata_filters_compare_values_only() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        query = "When do the fruits ripen?"
        plain = (await client.post("/v1/context", json={"query": query})).json()
        boosted = (
            await client.post(
                "/v1/context", json={"query": query, "metadata_filters": {"topic": "palms"}}
            )
        ).json()
        pattern = (
            await client.post(
                "/v1/context", json={"query": query, "metadata_filters": {"topic": ".*"}}
            )
        ).json()
        path = (
            await client.post(
                "/v1/context",
                json={"query": query, "metadata_filters": {"source": "/etc/passwd"}},
            )
        ).json()
    # Filters feed metadata retrieval (fused with the others): matches get a score.
    matched = [c for c in boosted["chunks_used"] if c["metadata_score"] == 1.0]
    assert matched and all(c["metadata"]["topic"] == "palms" for c in matched)
    # A regular expression or a path is just a value that matches nothing.
    for body in (pattern, path):
        assert body["context"] == plain["context"]
        assert all(c["metadata_score"] == 0 for c in body["chunks_used"])


async def test_stream_sends_the_stage_events_in_order_then_done() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        body = {"query": "What is retrieval-augmented generation?", "template": "structured"}
        async with client.stream("POST", "/v1/context/stream", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            records = await read_sse(response)
        direct = (await client.post("/v1/context", json=body)).json()
        async with client.stream("POST", "/v1/context/stream", json=body) as response:
            cached = await read_sse(response)
    assert [r.event for r in records] == STAGES
    assert all(r.data["event"] == r.event for r in records)
    assert len({r.data["request_id"] for r in records}) == 1
    ranked = records[3].data
    assert ranked["count"] == len(ranked["sources"]) > 0
    result = records[-1].data["result"]
    assert result["context"].startswith("=== CONTEXT START ===")
    assert result["context"] == direct["context"]
    assert set(result["timings_ms"]) == set(STAGES[:-1])
    # The second identical request is a cache hit: analysis, then done.
    assert [r.event for r in cached] == ["analysis", "done"]
    assert cached[-1].data["result"]["context"] == result["context"]


async def test_multi_runs_run_multi() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/v1/context/multi",
            json={
                "queries": ["What is BM25?", "ما هي عاصمة مصر؟"],
                "global_budget": None,
                "use_weighted": True,
                "template": "english",
            },
        )
        weighted = await client.post(
            "/v1/context/multi",
            json={"queries": ["What is BM25?", "Where is Cairo?"], "global_budget": 1000},
        )
    assert response.status_code == 200
    body = response.json()
    assert body["queries"] == ["What is BM25?", "ما هي عاصمة مصر؟"]
    assert "BM25" in body["context"] and "القاهرة" in body["context"]
    assert body["context_length"] == len(body["context"])
    assert weighted.status_code == 200
    assert weighted.json()["template"] == "arabic"


async def test_metrics_are_in_prometheus_text_format() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        await client.post("/v1/context", json={"query": "What is BM25?"})
        await client.post("/v1/context", json={"query": 42})
        await client.get("/nope")
        response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert 'zerda_http_requests_total{method="POST",path="/v1/context",status="200"} 1' in text
    assert 'zerda_http_requests_total{method="POST",path="/v1/context",status="422"} 1' in text
    assert 'zerda_http_requests_total{method="GET",path="other",status="404"} 1' in text
    assert 'zerda_http_errors_total{path="/v1/context",status="422"} 1' in text
    assert "# TYPE zerda_http_request_duration_seconds histogram" in text
    assert 'zerda_http_request_duration_seconds_bucket{path="/v1/context",le="+Inf"} 2' in text
    assert 'zerda_http_request_duration_seconds_count{path="/v1/context"} 2' in text
    # The /metrics request itself is in flight while the page is rendered.
    assert "zerda_http_requests_in_flight 1" in text
