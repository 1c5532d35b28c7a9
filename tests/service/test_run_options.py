"""Restricting ``filters``, per-request ``template`` and ``citations`` over HTTP (one engine)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from zerda_async.apps import load_demo_corpus
from zerda_async.apps.server import ServiceSettings, create_app
from zerda_async.errors import ConfigError

from .support import live_server, memory_opener, read_sse

pytestmark = pytest.mark.anyio

CORPUS = load_demo_corpus()
TEXT = {c.doc_id: c.text.strip() for c in CORPUS}
LANG = {c.doc_id: c.metadata["lang"] for c in CORPUS}
AR_COFFEE = "كيف تحضر القهوة العربية؟"


def check_citations(body: dict[str, Any]) -> None:
    """The response's citations are its context's slices holding each cited chunk's text."""
    assert body["citations"]
    assert body["nothing_relevant"] is False
    for cit in body["citations"]:
        assert set(cit) == {"doc_id", "source", "label", "start", "end", "truncated"}
        span = body["context"][cit["start"] : cit["end"]]
        if cit["truncated"]:
            assert TEXT[cit["doc_id"]].startswith(span)
        else:
            assert span == TEXT[cit["doc_id"]]
        assert cit["label"] in body["context"][: cit["start"]]


async def test_filters_restrict_every_endpoint() -> None:
    app = create_app(memory_opener())
    body = {"query": AR_COFFEE, "filters": {"lang": "en"}, "template": "auto"}
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        plain = (await client.post("/v1/context", json={"query": AR_COFFEE})).json()
        restricted = (await client.post("/v1/context", json=body)).json()
        async with client.stream("POST", "/v1/context/stream", json=body) as response:
            records = await read_sse(response)
        multi = await client.post(
            "/v1/context/multi",
            json={"queries": [AR_COFFEE, "Where does the Nile flow?"], "filters": {"lang": "ar"}},
        )
    assert LANG[plain["chunks_used"][0]["doc_id"]] == "ar"
    assert restricted["chunks_used"]
    assert {c["metadata"]["lang"] for c in restricted["chunks_used"]} == {"en"}
    check_citations(restricted)
    # auto: an Arabic query gets the Arabic frame, whatever the chunks' language.
    assert restricted["context"].startswith("📚 المعلومات المسترجعة:")
    assert restricted["template"] == "auto"
    done = records[-1]
    assert done.event == "done"
    assert done.data["result"]["citations"] == restricted["citations"]
    assert multi.status_code == 200
    english_texts = [TEXT[d] for d, lang in LANG.items() if lang == "en"]
    assert not any(text[:40] in multi.json()["context"] for text in english_texts)


async def test_templates_per_request_share_one_engine() -> None:
    opened: list[str] = []
    base = memory_opener()

    def counting(template: str) -> Any:
        opened.append(template)
        return base(template)

    app = create_app(counting)
    headers = {
        "english": "📚 Retrieved Information:",
        "arabic": "📚 المعلومات المسترجعة:",
        "structured": "=== CONTEXT START ===",
    }
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        for template, header in headers.items():
            response = await client.post(
                "/v1/context", json={"query": "What is BM25?", "template": template}
            )
            body = response.json()
            assert body["template"] == template
            assert body["context"].startswith(header), template
            check_citations(body)
        auto = await client.post("/v1/context", json={"query": "What is BM25?", "template": "auto"})
    assert auto.json()["context"].startswith(headers["english"])
    assert opened == ["arabic"]


@pytest.mark.parametrize(
    "filters",
    [
        {"year": {"$gte": "2020"}},
        {"lang": {"$in": []}},
        {"lang": {"$regex": "a.*"}},
        {"lang": {"$in": ["en"], "$gt": 1}},
        {"lang": ["en"]},
    ],
)
async def test_bad_filters_are_422_naming_the_field(filters: dict[str, Any]) -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        response = await client.post("/v1/context", json={"query": "x", "filters": filters})
        multi = await client.post("/v1/context/multi", json={"queries": ["x"], "filters": filters})
    for answer in (response, multi):
        assert answer.status_code == 422
        assert answer.json()["field"].startswith("filters")


def test_a_bad_default_template_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError, match="default_template"):
        create_app(memory_opener(), ServiceSettings(default_template="klingon"))
