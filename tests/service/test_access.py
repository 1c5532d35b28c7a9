"""Access: the API key, CORS, the request content type, and what logs and metrics reveal."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from zerda_async.apps.server import ACCESS_LOGGER, ServiceSettings, create_app

from .support import live_server, memory_opener

KEY = "s3cret-key-for-tests-0123456789"
SECRET_QUERY = "Where does the Nile flow past Aswan?"
SECRET_SESSION = "session-of-user-alice-42"
ZERDA = Path(sys.executable).parent / "zerda"
DEMO = Path(__file__).resolve().parents[2] / "zerda_async" / "apps" / "data" / "demo_corpus.jsonl"


@pytest.mark.anyio
async def test_without_the_key_every_endpoint_but_healthz_is_refused() -> None:
    app = create_app(memory_opener(), ServiceSettings(api_key=KEY))
    body = {"query": SECRET_QUERY, "session_id": SECRET_SESSION}
    good = {"Authorization": f"Bearer {KEY}"}
    wrong = [
        {},
        {"Authorization": "Bearer " + KEY[:-1] + "x"},
        {"Authorization": f"Basic {KEY}"},
        {"Authorization": KEY},
        {"Authorization": f"Bearer {KEY}extra"},
    ]
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        refused = []
        for headers in wrong:
            for method, path in (
                ("POST", "/v1/context"),
                ("POST", "/v1/context/stream"),
                ("POST", "/v1/context/multi"),
                ("GET", "/metrics"),
                ("GET", "/openapi.json"),
                ("GET", "/v1/sessions/" + SECRET_SESSION),  # any path, known or not
            ):
                refused.append(await client.request(method, path, json=body, headers=headers))
        health = await client.get("/healthz")
        page = await client.get("/", params={"q": SECRET_QUERY})
        allowed = await client.post("/v1/context", json=body, headers=good)
        streamed = await client.post("/v1/context/stream", json=body, headers=good)
        keyed_page = await client.get("/", params={"q": SECRET_QUERY}, headers=good)
    for response in refused:
        assert response.status_code == 401, response.request.url
        assert response.json()["status"] == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert KEY not in response.text
    assert health.status_code == 200
    # The page is served, but without the key it runs nothing: no result is built in.
    assert page.status_code == 200
    assert '"result":null' in page.text and "The Nile flows" not in page.text
    assert allowed.status_code == 200 and "Nile" in allowed.json()["context"]
    assert streamed.status_code == 200 and "event: done" in streamed.text
    assert "The Nile flows" in keyed_page.text


@pytest.mark.anyio
async def test_cors_origins_and_the_content_type() -> None:
    settings = ServiceSettings(cors_origins=["https://app.example"], api_key=KEY)
    app = create_app(memory_opener(), settings)
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        preflight = await client.options(
            "/v1/context",
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        foreign = await client.options(
            "/v1/context",
            headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
        )
        auth = {"Authorization": f"Bearer {KEY}", "Origin": "https://app.example"}
        simple = await client.post("/v1/context", json={"query": "What is BM25?"}, headers=auth)
        form = await client.post(
            "/v1/context", content=b"query=x", headers={**auth, "Content-Type": "text/plain"}
        )
        urlencoded = await client.post("/v1/context/multi", data={"q": "x"}, headers=auth)
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    assert "authorization" in preflight.headers["access-control-allow-headers"].lower()
    assert foreign.status_code == 400
    assert "access-control-allow-origin" not in foreign.headers
    assert simple.headers["access-control-allow-origin"] == "https://app.example"
    assert form.status_code == urlencoded.status_code == 415
    assert form.json()["error"] == "request body must be application/json, not text/plain"


@pytest.mark.anyio
async def test_queries_and_session_ids_stay_out_of_the_access_log_and_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    app = create_app(memory_opener())
    body = {"query": SECRET_QUERY, "session_id": SECRET_SESSION}
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
            await client.post("/v1/context", json=body)
            await client.post("/v1/context/stream", json=body)
            await client.get("/", params={"q": SECRET_QUERY, "session": SECRET_SESSION})
            await client.get("/nowhere/" + SECRET_SESSION)
            metrics = (await client.get("/metrics")).text
    lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert any('"POST /v1/context HTTP/1.1" 200' in line for line in lines)
    assert any('"GET / HTTP/1.1" 200' in line for line in lines)
    for text in [*lines, metrics]:
        for secret in ("Aswan", "Nile", SECRET_SESSION):
            assert secret not in text
    assert 'path="other",status="404"' in metrics


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.mark.timeout(120)
def test_zerda_serve_with_an_api_key_file(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUTF8": "1"}
    index = tmp_path / "idx"
    built = subprocess.run(
        [str(ZERDA), "index", str(DEMO), "--out", str(index)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    short = tmp_path / "short.key"
    short.write_text("abc\n")
    refused = subprocess.run(
        [str(ZERDA), "serve", str(index), "--api-key-file", str(short)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "at least 16 characters" in refused.stderr
    key_file = tmp_path / "api.key"
    key_file.write_text(KEY + "\n")
    port = _free_port()
    args = [str(ZERDA), "serve", str(index), "--port", str(port), "--api-key-file", str(key_file)]
    server = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if client.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "zerda serve did not start"
                time.sleep(0.1)
            body = {"query": SECRET_QUERY, "session_id": SECRET_SESSION}
            anonymous = client.post("/v1/context", json=body)
            keyed = client.post(
                "/v1/context", json=body, headers={"Authorization": f"Bearer {KEY}"}
            )
            page = client.get("/", params={"q": SECRET_QUERY})
    finally:
        server.terminate()
        err, _ = server.communicate(timeout=30)
    assert anonymous.status_code == 401
    assert keyed.status_code == 200
    assert page.status_code == 200
    assert server.returncode == 0, err
    # uvicorn's own access log (which prints query strings) is replaced by the service's
    # (on uvicorn's access handler: standard output, merged with standard error here).
    assert '"POST /v1/context HTTP/1.1" 401' in err
    assert '"GET / HTTP/1.1" 200' in err
    for secret in ("Aswan", "Nile", SECRET_SESSION, KEY):
        assert secret not in err
