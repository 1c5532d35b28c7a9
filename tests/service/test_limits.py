"""Service hardening: every limit has a test (see RELIABILITY.md, "HTTP service").

Body size (413), query length (422), number of queries in a multi request
(422), number and size of metadata filters (422), in-flight requests (503),
sessions kept per engine (bounded), and text that is not valid Unicode
(422).  Clients send data only: no field is read as a regular expression, a
path or configuration (the request types forbid unknown fields; see also
``test_errors.py``).
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest

from zerda_async.apps.server import MAX_QUERIES, MAX_QUERY_CHARS, ServiceSettings, create_app

from .support import SlowEmbedder, live_server, memory_opener

pytestmark = pytest.mark.anyio


async def _post(path: str, body: Any, **settings: Any) -> httpx.Response:
    app = create_app(memory_opener(), ServiceSettings(**settings))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        if isinstance(body, bytes):
            return await client.post(path, content=body)
        return await client.post(path, json=body)


async def test_the_query_length_limit_counts_characters() -> None:
    app = create_app(memory_opener())
    arabic = "ما هو التعلم الآلي؟ " * 500  # 10,000 characters, ~18 KB
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        at_limit = await client.post("/v1/context", json={"query": "x" * MAX_QUERY_CHARS})
        emoji_at_limit = await client.post("/v1/context", json={"query": "📚" * MAX_QUERY_CHARS})
        over = await client.post("/v1/context", json={"query": "x" * (MAX_QUERY_CHARS + 1)})
        long_arabic = await client.post("/v1/context/stream", json={"query": arabic})
        multi = await client.post(
            "/v1/context/multi", json={"queries": ["ok", "y" * (MAX_QUERY_CHARS + 1)]}
        )
    assert at_limit.status_code == emoji_at_limit.status_code == 200
    for response, field in ((over, "query"), (long_arabic, "query"), (multi, "queries[1]")):
        assert response.status_code == 422
        assert response.json()["field"] == field
        assert str(MAX_QUERY_CHARS) in response.json()["error"]


async def test_the_number_of_queries_in_a_multi_request_is_limited() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        at_limit = await client.post(
            "/v1/context/multi", json={"queries": [f"What is BM25? ({i})" for i in range(16)]}
        )
        over = await client.post(
            "/v1/context/multi", json={"queries": ["What is BM25?"] * (MAX_QUERIES + 1)}
        )
    assert at_limit.status_code == 200
    assert at_limit.json()["queries"][15] == "What is BM25? (15)"
    assert over.status_code == 422
    assert over.json() == {
        "error": f"Expected `array` of length <= {MAX_QUERIES} - at `$.queries`",
        "status": 422,
        "field": "queries",
    }


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({f"k{i}": i for i in range(33)}, "metadata_filters"),
        ({"source": "x" * 1025}, "metadata_filters"),
        ({"k" * 129: 1}, "metadata_filters"),
        ({"": 1}, "metadata_filters"),
        ({"source": {"$regex": ".*"}}, "metadata_filters"),
        ({"path": ["/etc/passwd"]}, "metadata_filters"),
    ],
    ids=["too_many", "value_too_long", "key_too_long", "empty_key", "operator", "list"],
)
async def test_metadata_filters_are_bounded_scalars(filters: dict[str, Any], field: str) -> None:
    response = await _post("/v1/context", {"query": "What is BM25?", "metadata_filters": filters})
    assert response.status_code == 422
    assert response.json()["field"] == field


async def test_text_that_is_not_valid_unicode_is_rejected_before_the_engine() -> None:
    lone_surrogate = b'{"query": "\\ud800 what is BM25?"}'
    not_utf8 = b'{"query": "\xff\xfe what"}'
    for body in (lone_surrogate, not_utf8):
        response = await _post("/v1/context", body)
        assert response.status_code == 422, body
        assert response.json()["error"].startswith("malformed JSON")


async def test_hostile_but_valid_text_is_just_data() -> None:
    app = create_app(memory_opener())
    queries = [
        "a\u0000b NUL inside",
        "\u202eRTL override\u202c and \u200f marks",
        "👨\u200d👩\u200d👧 family 🏳\ufe0f\u200d🌈",
        "بِسْمِ اللَّهِ الرَّحْمَٰنِ",
        "(a+)+$ .* [Source: {idx}] %s ../../etc/passwd",
    ]
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        for query in queries:
            response = await client.post("/v1/context", json={"query": query})
            assert response.status_code == 200, (query, response.text)
            assert response.json()["query_analysis"]["original_query"] == query


async def test_the_body_limit_applies_to_every_endpoint() -> None:
    app = create_app(memory_opener(), ServiceSettings(max_body_bytes=256))
    body = {"query": "x" * 300}
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        statuses = [
            (await client.post(path, json=body)).status_code
            for path in ("/v1/context", "/v1/context/stream", "/v1/context/multi")
        ]
        small = await client.post("/v1/context", json={"query": "What is BM25?"})
    assert statuses == [413, 413, 413]
    assert small.status_code == 200


async def test_in_flight_requests_are_limited_across_endpoints() -> None:
    embed = SlowEmbedder()
    app = create_app(memory_opener(embed), ServiceSettings(max_pending=2, retry_after=3))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url, timeout=10) as client:
        embed.delay = 0.4
        inside: list[httpx.Response] = []

        async def slow(path: str, body: dict[str, Any]) -> None:
            inside.append(await client.post(path, json=body))

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow, "/v1/context", {"query": "What is RAG?"})
            tg.start_soon(slow, "/v1/context/multi", {"queries": ["What is ML?"]})
            with anyio.fail_after(5):
                while app.state.service.active < 2:
                    await anyio.sleep(0.005)
            rejected = [
                await client.post("/v1/context", json={"query": "What is BM25?"}),
                await client.post("/v1/context/stream", json={"query": "What is BM25?"}),
                await client.post("/v1/context/multi", json={"queries": ["What is BM25?"]}),
            ]
            health = await client.get("/healthz")  # never limited
        embed.delay = 0.0
        after = await client.post("/v1/context", json={"query": "What is BM25?"})
    assert [r.status_code for r in rejected] == [503, 503, 503]
    assert all(r.headers["retry-after"] == "3" for r in rejected)
    assert [r.status_code for r in inside] == [200, 200]
    assert health.status_code == 200 and health.json()["in_flight"] == 2
    assert after.status_code == 200
    assert app.state.service.active == 0


async def test_client_session_ids_cannot_grow_the_engine_without_bound() -> None:
    app = create_app(memory_opener(max_sessions=4))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        for i in range(12):
            response = await client.post(
                "/v1/context", json={"query": f"What is BM25? {i}", "session_id": f"user-{i}"}
            )
            assert response.status_code == 200
        engine = app.state.pool._engines["arabic"]
        kept = list(engine._state.sessions)
    assert kept == ["user-8", "user-9", "user-10", "user-11"]  # the most recently run
