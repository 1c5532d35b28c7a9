"""zerda-async: an async streaming context-building engine for RAG.

A query and an indexed corpus of text chunks become a budget-bounded,
source-cited context string for an LLM prompt: query analysis (Arabic and
English), hybrid retrieval (vector + BM25 keyword + metadata, fused with
Reciprocal Rank Fusion), filtering, multi-factor ranking, budget-aware
composition with templates, a guard, caching, multi-turn history, adaptive
budgets and multi-query budget allocation.

The async engine is :class:`AsyncContextEngine`; the documented synchronous
API lives in the sibling package ``sync_api``.
"""

from zerda_async import _compat
from zerda_async.core.config import (
    CacheConfig,
    ComposerConfig,
    ConfigError,
    ContextEngineConfig,
    FilterConfig,
    GuardConfig,
    QueryAnalyzerConfig,
    RankingConfig,
    RetrieverConfig,
    config_from_json,
    config_from_toml,
    config_to_json,
)
from zerda_async.core.models import (
    ContextResult,
    ConversationHistory,
    ConversationTurn,
    QueryAnalysis,
    QueryComplexity,
    QueryIntent,
    RetrievalMethod,
    ScoredChunk,
    SourceQuality,
)
from zerda_async.engine import AsyncContextEngine
from zerda_async.errors import (
    EmbeddingError,
    EngineClosedError,
    IndexFormatError,
    IndexStateError,
    ZerdaError,
)
from zerda_async.pipeline import RunOptions, StageTiming

_compat.install()

__all__ = [
    "AsyncContextEngine",
    "CacheConfig",
    "ComposerConfig",
    "ConfigError",
    "ContextEngineConfig",
    "ContextResult",
    "ConversationHistory",
    "ConversationTurn",
    "EmbeddingError",
    "EngineClosedError",
    "FilterConfig",
    "GuardConfig",
    "IndexFormatError",
    "IndexStateError",
    "QueryAnalysis",
    "QueryAnalyzerConfig",
    "QueryComplexity",
    "QueryIntent",
    "RankingConfig",
    "RetrievalMethod",
    "RetrieverConfig",
    "RunOptions",
    "ScoredChunk",
    "SourceQuality",
    "StageTiming",
    "ZerdaError",
    "config_from_json",
    "config_from_toml",
    "config_to_json",
]
