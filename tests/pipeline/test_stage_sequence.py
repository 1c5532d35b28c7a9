"""Both runners log the same stage sequence for the same requests (lists, cache hits included)."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import numpy as np
import pytest
import structlog
from structlog.testing import capture_logs

import sync_api
from pipeline.helpers import chunks, embed
from zerda_async import AsyncContextEngine

QUERIES = [
    "What is BM25?",
    "what is bm25?  ",  # a cache hit of the first
    "Where does the Nile flow?",
    "ما هو التعلم الآلي؟",
    "ما هو التعلم الآلي؟ ",  # a cache hit
    "How does reciprocal rank fusion merge lists?",
]


@pytest.fixture
def captured() -> Iterator[list[MutableMapping[str, Any]]]:
    with capture_logs() as logs:
        yield logs
    structlog.reset_defaults()


def _sequences(logs: list[MutableMapping[str, Any]]) -> list[list[str]]:
    """Stage names per request, requests in the order their first event was logged."""
    by_request: dict[str, list[str]] = {}
    for event in logs:
        if event["event"] == "stage":
            by_request.setdefault(event["request_id"], []).append(event["stage"])
    return list(by_request.values())


@pytest.mark.anyio
@pytest.mark.parametrize("embedder", ["plain", "batch"])
async def test_sync_and_async_runs_log_the_same_stage_lists(
    captured: list[MutableMapping[str, Any]], embedder: str
) -> None:
    # The sync facade's requests have no request id: give each its own.
    expected = _sync_sequences_with_ids(captured)
    kwargs: dict[str, Any] = {"embed_fn": embed}
    if embedder == "batch":

        async def batch(texts: list[Any]) -> np.ndarray:
            return np.stack([embed(t) for t in texts])

        kwargs = {"batch_embed_fn": batch}
    async with AsyncContextEngine() as engine:
        await engine.index(chunks(), **kwargs)
        for i, query in enumerate(QUERIES):
            await engine.run(query)
            if i == 2:
                history = engine.get_history()
                assert history is not None
                history.turns[-1].answer = "It flows north."
    got = _sequences(captured)
    assert got == expected
    assert got[1] == ["cache_lookup"] and got[4] == ["cache_lookup"]
    assert "query_embedding" in got[0]


def _sync_sequences_with_ids(captured: list[MutableMapping[str, Any]]) -> list[list[str]]:
    engine = sync_api.ContextEngine().index(chunks(), embed_fn=embed)
    sequences: list[list[str]] = []
    for i, query in enumerate(QUERIES):
        engine.run(query)
        sequences.append([e["stage"] for e in captured if e["event"] == "stage"])
        captured.clear()
        if i == 2:
            history = engine.get_history()
            assert history is not None
            history.turns[-1].answer = "It flows north."
    return sequences
