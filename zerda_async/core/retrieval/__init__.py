"""Retrieval layer: the searches, the method lists and the one fusion, plus the retrievers.

Everything here is synchronous and free of I/O; an index is replaced as a
whole, so a ``retrieve`` running in a worker thread never sees a half-built one.
Every path to the fused candidates ends in :func:`fuse` (:mod:`.fusion`): the
documented :class:`HybridRetriever` over retriever objects, and the hits of an
index — the in-process one searched by :class:`IndexSearches` through
:class:`IndexRetriever`, or an index store's — shaped by :mod:`.hits`.
"""

from __future__ import annotations

from ._common import stable_top
from .coverage import QueryWeights, annotate_coverage
from .fusion import (
    RRF_K,
    MethodList,
    fuse,
    fuse_convex,
    fuse_documented,
    fuse_rrf,
    measures_coverage,
    method_weights,
    search_depth,
)
from .hits import Found, Hit, SearchPlan, fuse_found, method_list, plan_search
from .hybrid import HybridRetriever
from .index_retriever import IndexRetriever
from .keyword import BM25_B, BM25_K1, KeywordRetriever
from .metadata import MetadataRetriever
from .neighbours import neighbour_evidence
from .searches import IndexSearches
from .tokenize import TOKEN_PATTERN, tokenize
from .vector import VectorRetriever

__all__ = [
    "BM25_B",
    "BM25_K1",
    "RRF_K",
    "TOKEN_PATTERN",
    "Found",
    "Hit",
    "HybridRetriever",
    "IndexRetriever",
    "IndexSearches",
    "KeywordRetriever",
    "MetadataRetriever",
    "MethodList",
    "QueryWeights",
    "SearchPlan",
    "VectorRetriever",
    "annotate_coverage",
    "fuse",
    "fuse_convex",
    "fuse_documented",
    "fuse_found",
    "fuse_rrf",
    "measures_coverage",
    "method_list",
    "method_weights",
    "neighbour_evidence",
    "plan_search",
    "search_depth",
    "stable_top",
    "tokenize",
]
