"""Drop-in synchronous API: the documented ``context`` package on the zerda-async core.

Switch ``from context import ContextEngine`` to ``from sync_api import
ContextEngine`` and keep working: names, module paths, defaults, scores,
context strings, warnings and documented quirks are the same.  One deliberate
difference: the five legacy helpers (``validate_chunk``,
``PrefixDeduplication``, ``HashDeduplication``, ``GreedyCompression``,
``ScoreRanking``) are the real objects at the package root, not ``None``; as
documented they are still not part of ``__all__``.
"""

from .config import (
    CacheConfig,
    ComposerConfig,
    ContextConfig,
    ContextEngineConfig,
    FilterConfig,
    GuardConfig,
    LengthCounter,
    QueryAnalyzerConfig,
    RankingConfig,
    RetrieverConfig,
)
from .engine import ContextEngine, ContextManager
from .guard_and_learning import (
    AdaptiveLearningSystem,
    ComplexityBasedAllocation,
    ContextCache,
    ContextGuard,
    EqualBudgetAllocation,
    WeightedBudgetAllocation,
)
from .legacy_compat import (
    GreedyCompression,
    HashDeduplication,
    PrefixDeduplication,
    ScoreRanking,
    validate_chunk,
)
from .models import (
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
from .pipeline import (
    ChunkFilter,
    CompositeRanker,
    SmartContextComposer,
    char_counter,
    make_token_counter,
)
from .query_analyzer import RuleBasedQueryAnalyzer, build_query_analyzer
from .retriever import HybridRetriever, KeywordRetriever, MetadataRetriever, VectorRetriever
from .strategy import (
    BudgetAllocationStrategy,
    ChunkFilterStrategy,
    ChunkRankingStrategy,
    CompressionStrategy,
    ContextComposerStrategy,
    ContextGuardStrategy,
    DeduplicationStrategy,
    HybridRetrieverStrategy,
    QueryAnalyzerStrategy,
    RankingStrategy,
)

# Bound at the root on purpose but, as documented, left out of __all__.
_LEGACY_ROOT_NAMES = (
    GreedyCompression,
    HashDeduplication,
    PrefixDeduplication,
    ScoreRanking,
    validate_chunk,
)

__all__ = [
    "AdaptiveLearningSystem",
    "BudgetAllocationStrategy",
    "CacheConfig",
    "ChunkFilter",
    "ChunkFilterStrategy",
    "ChunkRankingStrategy",
    "ComplexityBasedAllocation",
    "ComposerConfig",
    "CompositeRanker",
    "CompressionStrategy",
    "ContextCache",
    "ContextComposerStrategy",
    "ContextConfig",
    "ContextEngine",
    "ContextEngineConfig",
    "ContextGuard",
    "ContextGuardStrategy",
    "ContextManager",
    "ContextResult",
    "ConversationHistory",
    "ConversationTurn",
    "DeduplicationStrategy",
    "EqualBudgetAllocation",
    "FilterConfig",
    "GuardConfig",
    "HybridRetriever",
    "HybridRetrieverStrategy",
    "KeywordRetriever",
    "LengthCounter",
    "MetadataRetriever",
    "QueryAnalysis",
    "QueryAnalyzerConfig",
    "QueryAnalyzerStrategy",
    "QueryComplexity",
    "QueryIntent",
    "RankingConfig",
    "RankingStrategy",
    "RetrievalMethod",
    "RetrieverConfig",
    "RuleBasedQueryAnalyzer",
    "ScoredChunk",
    "SmartContextComposer",
    "SourceQuality",
    "VectorRetriever",
    "WeightedBudgetAllocation",
    "build_query_analyzer",
    "char_counter",
    "make_token_counter",
]
