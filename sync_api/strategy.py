"""Strategy interfaces of the documented package (re-exported from the core)."""

from zerda_async.core.strategy import (
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

__all__ = [
    "BudgetAllocationStrategy",
    "ChunkFilterStrategy",
    "ChunkRankingStrategy",
    "CompressionStrategy",
    "ContextComposerStrategy",
    "ContextGuardStrategy",
    "DeduplicationStrategy",
    "HybridRetrieverStrategy",
    "QueryAnalyzerStrategy",
    "RankingStrategy",
]
