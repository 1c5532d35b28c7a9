"""A configuration sync_api accepts gives the same result in the async engine."""

from __future__ import annotations

import pytest
from support.corpus import CORPUS, QUALITY
from support.embedding import hashed_embedding

from sync_api import ContextEngine
from zerda_async import AsyncContextEngine, ContextEngineConfig

pytestmark = pytest.mark.anyio

QUESTIONS = ["What is BM25 keyword ranking?", "ما هو التعلم الآلي؟", "vector search cosine"]


def _large_weights() -> ContextEngineConfig:
    """Relative weights above 1 and thresholds past their range: unusual, not errors."""
    config = ContextEngineConfig()
    config.retriever.use_metadata = True
    config.retriever.metadata_filters = {"lang": "en"}
    config.retriever.metadata_weight = 2.0
    config.retriever.keyword_weight = 1.5
    config.ranking.weight_vector_score = 3.0
    config.ranking.weight_source_quality = 1.2
    config.retriever.min_vector_score = -2.0
    config.filter_cfg.semantic_sim_threshold = 1.5
    config.cache.enabled = False
    return config


async def test_large_weights_run_the_same_as_in_sync_api() -> None:
    sync_engine = ContextEngine(_large_weights())
    sync_engine.index(CORPUS, embed_fn=hashed_embedding, source_quality_map=QUALITY)
    expected = [sync_engine.run(q) for q in QUESTIONS]
    async with AsyncContextEngine(_large_weights()) as engine:
        await engine.index(CORPUS, embed_fn=hashed_embedding, source_quality_map=QUALITY)
        found = [await engine.run(q) for q in QUESTIONS]
    for want, got in zip(expected, found, strict=True):
        assert got.context == want.context
        assert [c.doc_id for c in got.chunks_used] == [c.doc_id for c in want.chunks_used]
        assert [c.composite_score for c in got.chunks_used] == pytest.approx(
            [c.composite_score for c in want.chunks_used]
        )
    assert any(r.chunks_used for r in found)
