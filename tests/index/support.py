"""Shared helpers of the index tests: a tiny bilingual corpus and result comparisons."""

from __future__ import annotations

from typing import Any

import numpy as np
from support.embedding import hashed_embedding

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import ScoredChunk

__all__ = [
    "WORDS",
    "embed",
    "embed_batch",
    "make_config",
    "scored_fields",
]

WORDS = [
    "retrieval",
    "ranking",
    "vector",
    "keyword",
    "budget",
    "cache",
    "python",
    "numpy",
    "async",
    "index",
    "token",
    "البحث",
    "الترتيب",
    "الذاكرة",
    "الفهرس",
    "النموذج",
    "اللغة",
]


def embed(text: Any) -> np.ndarray:
    """The golden cases' deterministic 64-dim embedder."""
    return hashed_embedding(text)


def embed_batch(texts: list[Any]) -> np.ndarray:
    """Batch form of :func:`embed`."""
    return np.stack([hashed_embedding(t) for t in texts]) if texts else np.zeros((0, 64))


def make_config(**retriever: Any) -> ContextEngineConfig:
    """A configuration with the cache off and the given retriever fields."""
    config = ContextEngineConfig()
    config.cache.enabled = False
    for key, value in retriever.items():
        setattr(config.retriever, key, value)
    return config


def scored_fields(results: list[ScoredChunk]) -> list[tuple[Any, ...]]:
    """What identifies a retrieval result exactly: chunk, scores, method and rank."""
    return [
        (
            sc.doc_id,
            sc.text,
            sc.vector_score,
            sc.keyword_score,
            sc.metadata_score,
            sc.composite_score,
            sc.retrieval_method,
            sc.retrieval_rank,
        )
        for sc in results
    ]
