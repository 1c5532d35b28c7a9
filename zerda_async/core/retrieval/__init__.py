"""Retrieval layer: in-memory vector, BM25 keyword and metadata retrievers, and their fusion.

Everything here is synchronous and free of I/O; an index is replaced as a
whole, so a ``retrieve`` running in a worker thread never sees a half-built one.
"""

from __future__ import annotations

from .hybrid import RRF_K, HybridRetriever
from .keyword import BM25_B, BM25_K1, KeywordRetriever
from .metadata import MetadataRetriever
from .tokenize import TOKEN_PATTERN, tokenize
from .vector import VectorRetriever

__all__ = [
    "BM25_B",
    "BM25_K1",
    "RRF_K",
    "TOKEN_PATTERN",
    "HybridRetriever",
    "KeywordRetriever",
    "MetadataRetriever",
    "VectorRetriever",
    "tokenize",
]
