"""The service inside another application: a real FastAPI app on a real uvicorn."""

from __future__ import annotations

from pathlib import Path

import anyio.to_thread
import httpx
import pytest
from fastapi import FastAPI

from zerda_async.apps.cli import main
from zerda_async.apps.server import create_app, index_app, store_app

from .support import live_server, memory_opener

pytestmark = pytest.mark.anyio


async def test_mounted_without_its_lifespan_the_first_request_starts_the_engine() -> None:
    zerda = create_app(memory_opener())
    app = FastAPI()
    app.mount("/zerda", zerda)

    @app.get("/own")
    async def own() -> dict[str, str]:
        return {"app": "parent"}

    try:
        async with live_server(app) as url, httpx.AsyncClient(base_url=url, timeout=20) as client:
            before = zerda.state.pool.state
            health = await client.get("/zerda/healthz")
            context = await client.post(
                "/zerda/v1/context", json={"query": "What is BM25?", "template": "english"}
            )
            page = await client.get("/zerda/", params={"q": "Where does the Nile flow?"})
            metrics = (await client.get("/zerda/metrics")).text
            parent = await client.get("/own")
    finally:
        await zerda.state.pool.aclose()
    assert before == "idle"
    assert health.status_code == 200
    assert health.json()["status"] == "ok"
    assert context.status_code == 200
    assert context.json()["template"] == "english"
    assert "BM25" in context.json()["context"]
    assert page.status_code == 200 and "The Nile flows" in page.text
    # Mounted paths keep their route labels.
    assert 'path="/v1/context",status="200"' in metrics
    assert parent.json() == {"app": "parent"}
    assert zerda.state.pool.state == "closed"
    assert zerda.state.pool.loaded == []


async def test_the_lifespan_passed_to_the_parent_opens_and_closes_the_engines() -> None:
    zerda = create_app(memory_opener())
    app = FastAPI(lifespan=zerda.router.lifespan_context)
    app.mount("/zerda", zerda)
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        started = zerda.state.pool.loaded
        response = await client.post("/zerda/v1/context", json={"query": "ما هو التعلم الآلي؟"})
    assert started == ["arabic"]  # opened at start-up, before any request
    assert response.status_code == 200
    assert zerda.state.pool.state == "closed"


async def test_healthz_is_not_ok_when_the_engine_cannot_start() -> None:
    def broken(template: str) -> object:
        raise OSError("index directory vanished")

    zerda = create_app(broken)  # type: ignore[arg-type]
    app = FastAPI()
    app.mount("/zerda", zerda)
    try:
        async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
            health = await client.get("/zerda/healthz")
            context = await client.post("/zerda/v1/context", json={"query": "x"})
    finally:
        await zerda.state.pool.aclose()
    assert health.status_code == 503
    assert health.json()["status"] == "unavailable"
    assert "index directory vanished" in health.json()["error"]
    assert context.status_code == 503
    assert "could not be started" in context.json()["error"]


@pytest.mark.parametrize(
    ("profile", "template"), [("recommended", "auto"), ("documented", "arabic")]
)
async def test_a_mounted_index_uses_its_profiles_template_as_zerda_serve_does(
    tmp_path: Path, profile: str, template: str
) -> None:
    notes = tmp_path / "nile.txt"
    notes.write_text(
        "The Nile flows north through Egypt into the Mediterranean Sea.\n", encoding="utf-8"
    )
    index = tmp_path / "idx"
    build = ["index", str(notes), "--out", str(index), "--profile", profile]
    assert await anyio.to_thread.run_sync(main, build) == 0
    question = {"query": "Where does the Nile flow?"}
    found = {}
    # index_app is what a FastAPI user mounts; store_app is what `zerda serve DIR` runs.
    for name, zerda in (("mounted", index_app(index)), ("served", store_app(str(index)))):
        app = FastAPI(lifespan=zerda.router.lifespan_context)
        app.mount("/zerda", zerda)
        async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
            found[name] = (await client.post("/zerda/v1/context", json=question)).json()
    assert found["mounted"]["template"] == found["served"]["template"] == template
    assert found["mounted"]["context"] == found["served"]["context"]
    english = found["mounted"]["context"].startswith("📚 Retrieved Information:")
    assert english == (template == "auto")
