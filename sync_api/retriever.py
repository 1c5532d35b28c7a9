"""Vector, keyword (BM25), metadata and hybrid retrieval (re-exported from the core)."""

from zerda_async.core.retrieval import (
    RRF_K,
    HybridRetriever,
    KeywordRetriever,
    MetadataRetriever,
    VectorRetriever,
)

__all__ = ["RRF_K", "HybridRetriever", "KeywordRetriever", "MetadataRetriever", "VectorRetriever"]
