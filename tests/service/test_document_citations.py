"""``/v1/context`` and the stream's ``done`` event cite a document's page, section and span."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from support.documents import write_docx, write_pdf

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.apps import read_paths
from zerda_async.apps.server import create_app
from zerda_async.readers import read_document

from .support import live_server, read_sse

pytestmark = pytest.mark.anyio


async def test_the_json_and_the_stream_cite_page_section_and_document_span(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    write_pdf(
        folder / "harbour.pdf",
        [["The report covers 2025."], ["The harbour handled 4,200 container ships in winter."]],
    )
    write_docx(
        folder / "handbook.docx",
        [("h1", "Leave"), ("p", "Parents receive sixteen weeks of paid parental leave.")],
    )
    chunks = read_paths([folder]).chunks

    @asynccontextmanager
    async def opener(template: str) -> AsyncIterator[AsyncContextEngine]:
        config = ContextEngineConfig.recommended()
        config.composer.template = template
        async with AsyncContextEngine(config) as engine:
            await engine.index(chunks)
            yield engine

    app = create_app(opener)
    body = {"query": "How many container ships did the harbour handle?"}
    async with live_server(app) as url, httpx.AsyncClient(base_url=url) as client:
        plain = (await client.post("/v1/context", json=body)).json()
        async with client.stream("POST", "/v1/context/stream", json=body) as response:
            records = await read_sse(response)
        leave = (await client.post("/v1/context", json={"query": "parental leave weeks"})).json()
    first = plain["citations"][0]
    assert first["source"] == "docs/harbour.pdf" and first["page"] == 2
    text = read_document(folder / "harbour.pdf").text
    cited = plain["context"][first["start"] : first["end"]]
    assert text[first["doc_start"] : first["doc_end"]] == cited
    assert records[-1].event == "done"
    assert records[-1].data["result"]["citations"] == plain["citations"]
    assert leave["citations"][0]["section"] == "Leave" and "page" not in leave["citations"][0]
