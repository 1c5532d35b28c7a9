"""Index structures behind the retrievers: BM25 postings, vector rows, metadata columns.

Every structure is an immutable snapshot built with vectorised numpy code;
updates return new snapshots sharing the unchanged arrays, so readers in
worker threads never see a half-applied change.  :class:`CorpusIndex` ties
the three together for an updatable corpus (add, update, remove, compaction).
"""

from __future__ import annotations

from .corpus import COMPACT_FRACTION, CorpusIndex
from .keyword_index import (
    BM25_B,
    BM25_K1,
    WEIGHT_CACHE_POSTINGS,
    KeywordIndex,
    bm25_idf,
    bm25_weights,
    query_coverage,
)
from .metadata_index import MetadataIndex
from .vector_index import (
    COSINE_DECIMALS,
    STEP_WORK,
    VECTOR_DTYPES,
    VectorDType,
    VectorIndex,
    unit_rows,
)

__all__ = [
    "BM25_B",
    "BM25_K1",
    "COMPACT_FRACTION",
    "COSINE_DECIMALS",
    "STEP_WORK",
    "VECTOR_DTYPES",
    "WEIGHT_CACHE_POSTINGS",
    "CorpusIndex",
    "KeywordIndex",
    "MetadataIndex",
    "VectorDType",
    "VectorIndex",
    "bm25_idf",
    "bm25_weights",
    "query_coverage",
    "unit_rows",
]
