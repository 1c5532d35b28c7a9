"""``GET /openapi.json``: a valid OpenAPI 3.1 document covering every route and body."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route

from zerda_async.apps.server import ServiceSettings, create_app

from .support import live_server, memory_opener

pytestmark = pytest.mark.anyio


def _refs(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for value in node.values() for r in _refs(value)]
    if isinstance(node, list):
        return [r for value in node for r in _refs(value)]
    return []


async def test_the_document_is_valid_openapi_and_describes_every_route() -> None:
    app = create_app(memory_opener())
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        doc = (await client.get("/openapi.json")).json()
        # The schema of the request body is the one the endpoint enforces.
        rejected = await client.post("/v1/context", json={"query": "x", "colour": "red"})
    validate(doc)  # raises on anything that is not OpenAPI 3.1
    assert doc["openapi"].startswith("3.1")
    served = {
        (route.path, method.lower())
        for route in app.routes
        if isinstance(route, Route)
        for method in route.methods or ()
        if method != "HEAD"
    }
    described = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert described == served
    schemas = doc["components"]["schemas"]
    for ref in _refs(doc):
        assert ref.removeprefix("#/components/schemas/") in schemas, ref
    body = doc["paths"]["/v1/context"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/ContextRequest"}
    request = schemas["ContextRequest"]
    assert request["required"] == ["query"]
    assert request["additionalProperties"] is False
    assert rejected.status_code == 422 and rejected.json()["field"] == "colour"
    multi = doc["paths"]["/v1/context/multi"]["post"]["requestBody"]["content"]
    assert multi["application/json"]["schema"]["$ref"].endswith("/MultiRequest")
    stream = doc["paths"]["/v1/context/stream"]["post"]["responses"]["200"]["content"]
    events = [r["$ref"].rsplit("/", 1)[1] for r in stream["text/event-stream"]["schema"]["oneOf"]]
    assert events[0] == "AnalysisEvent" and events[-2:] == ["StreamDone", "StreamError"]
    assert "415" in doc["paths"]["/v1/context"]["post"]["responses"]
    assert "securitySchemes" not in doc["components"]


async def test_with_an_api_key_the_document_declares_bearer_auth() -> None:
    key = "k" * 32
    app = create_app(memory_opener(), ServiceSettings(api_key=key))
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        anonymous = await client.get("/openapi.json")
        doc = (await client.get("/openapi.json", headers={"Authorization": f"Bearer {key}"})).json()
    validate(doc)
    assert anonymous.status_code == 401
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert doc["paths"]["/healthz"]["get"]["security"] == []
