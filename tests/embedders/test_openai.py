"""The OpenAI-compatible adapter against a real HTTP server on loopback."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator

import anyio
import numpy as np
import pytest

from zerda_async import AsyncContextEngine
from zerda_async.apps import report_for
from zerda_async.embedders import (
    AsyncTextEmbedder,
    HashingEmbedder,
    OpenAIEmbedder,
    embed_kwargs,
)
from zerda_async.errors import EmbeddingError, EmbeddingServiceError

from .fake_openai import DIM, FakeEmbeddings
from .support import CORPUS

pytestmark = pytest.mark.anyio

REFERENCE = HashingEmbedder(dim=DIM)

Serve = Callable[..., FakeEmbeddings]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Starts fake servers (outside the event loop) and stops them after the test."""
    started: list[FakeEmbeddings] = []

    def start(script: list[str] | None = None, slow_seconds: float = 5.0) -> FakeEmbeddings:
        server = FakeEmbeddings(script, slow_seconds).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def closed_port() -> int:
    """A loopback port on which nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _embedder(server: FakeEmbeddings, **options: object) -> OpenAIEmbedder:
    settings: dict[str, object] = {"backoff": 0.0, "timeout": 5.0, **options}
    return OpenAIEmbedder(server.base_url, "fake-model", **settings)  # type: ignore[arg-type]


async def test_batches_keep_the_order_of_the_texts(serve: Serve) -> None:
    texts = [f"text number {i}" for i in range(5)]
    server = serve()
    async with _embedder(server, batch_size=2, api_key="secret") as emb:
        assert isinstance(emb, AsyncTextEmbedder)
        rows = await emb.embed_batch(texts)
        one = await emb("text number 3")
    np.testing.assert_allclose(rows, REFERENCE.embed_batch(texts))
    np.testing.assert_allclose(one, REFERENCE("text number 3"))
    assert [len(body["input"]) for body in server.bodies] == [2, 2, 1, 1]
    assert {body["model"] for body in server.bodies} == {"fake-model"}
    assert server.headers[0]["authorization"] == "Bearer secret"


async def test_no_texts_make_no_request(serve: Serve) -> None:
    server = serve()
    async with _embedder(server) as emb:
        assert (await emb.embed_batch([])).shape[0] == 0
    assert server.bodies == []


@pytest.mark.parametrize("failures", [["500", "503"], ["429"], ["502", "429", "504"]])
async def test_server_errors_and_rate_limits_are_retried(failures: list[str], serve: Serve) -> None:
    server = serve(failures)
    async with _embedder(server, max_retries=3) as emb:
        rows = await emb.embed_batch(["a", "b"])
    np.testing.assert_allclose(rows, REFERENCE.embed_batch(["a", "b"]))
    assert len(server.bodies) == len(failures) + 1


async def test_a_client_error_is_not_retried_and_names_the_status(serve: Serve) -> None:
    server = serve(["400"])
    async with _embedder(server, max_retries=3) as emb:
        with pytest.raises(EmbeddingServiceError, match="HTTP 400") as caught:
            await emb.embed_batch(["a"])
    assert caught.value.status == 400
    assert server.base_url in str(caught.value)
    assert len(server.bodies) == 1


async def test_a_failing_server_gives_up_after_the_retries(serve: Serve) -> None:
    server = serve(["503"] * 10)
    async with _embedder(server, max_retries=2) as emb:
        with pytest.raises(EmbeddingServiceError, match="after 3 attempts") as caught:
            await emb.embed_batch(["a"])
    assert caught.value.status == 503
    assert len(server.bodies) == 3
    assert report_for(caught.value).http_status == 502


async def test_a_slow_server_times_out_and_is_retried(serve: Serve) -> None:
    server = serve(["slow"], slow_seconds=5.0)
    async with _embedder(server, timeout=0.2, max_retries=1) as emb:
        rows = await emb.embed_batch(["a"])
    np.testing.assert_allclose(rows, REFERENCE.embed_batch(["a"]))
    assert len(server.bodies) == 2


async def test_a_server_that_stays_slow_fails_with_a_timeout(serve: Serve) -> None:
    server = serve(["slow", "slow"], slow_seconds=5.0)
    async with _embedder(server, timeout=0.2, max_retries=1) as emb:
        with anyio.fail_after(4):
            with pytest.raises(EmbeddingServiceError, match="timed out") as caught:
                await emb.embed_batch(["a"])
    assert caught.value.status is None


async def test_a_refused_connection_is_reported(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}/v1"
    async with OpenAIEmbedder(url, "m", backoff=0.0, max_retries=1) as emb:
        with pytest.raises(EmbeddingServiceError, match="failed: ConnectError"):
            await emb.embed_batch(["a"])


@pytest.mark.parametrize(
    ("action", "message"),
    [("not-json", "not JSON"), ("short", "1 embeddings for 2 texts"), ("nan", "NaN")],
)
async def test_broken_answers_are_errors(action: str, message: str, serve: Serve) -> None:
    server = serve([action])
    async with _embedder(server) as emb:
        with pytest.raises(EmbeddingError, match=message):
            await emb.embed_batch(["a", "b"])
    assert len(server.bodies) == 1


@pytest.mark.parametrize(
    "options", [{"batch_size": 0}, {"max_retries": -1}, {"timeout": 0.0}, {"backoff": -1.0}]
)
async def test_bad_options_are_refused(options: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=next(iter(options))):
        OpenAIEmbedder("http://127.0.0.1:9/v1", "m", **options)  # type: ignore[arg-type]


async def test_the_async_engine_embeds_corpus_and_queries_through_it(serve: Serve) -> None:
    server = serve()
    async with _embedder(server, batch_size=4) as emb, AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(emb))
        indexed = len(server.bodies)
        result = await engine.run("The mechanic repaired the engine")
    assert indexed == 2  # six chunks in batches of four
    assert len(server.bodies) > indexed  # the query was embedded by the server too
    assert result.chunks_used[0].chunk.doc_id == "car"
