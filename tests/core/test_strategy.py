"""Strategy ABCs (spec/strategy.md is RECONSTRUCTED) and the documented subclass table."""

from __future__ import annotations

import abc

import pytest

import sync_api
from sync_api import legacy_compat, strategy

ABCS = [
    strategy.QueryAnalyzerStrategy,
    strategy.HybridRetrieverStrategy,
    strategy.ChunkFilterStrategy,
    strategy.ChunkRankingStrategy,
    strategy.ContextComposerStrategy,
    strategy.ContextGuardStrategy,
    strategy.BudgetAllocationStrategy,
    strategy.DeduplicationStrategy,
    strategy.RankingStrategy,
    strategy.CompressionStrategy,
]


@pytest.mark.parametrize("cls", ABCS, ids=lambda c: c.__name__)
def test_reconstructed_abcs_cannot_be_instantiated(cls: type) -> None:
    assert isinstance(cls, abc.ABCMeta)
    with pytest.raises(TypeError, match="Can't instantiate abstract class"):
        cls()


def test_reconstructed_subclass_without_override_is_still_abstract() -> None:
    class Incomplete(strategy.ChunkRankingStrategy):
        pass

    with pytest.raises(TypeError):
        Incomplete()  # type: ignore[abstract]


def test_reconstructed_subclass_table() -> None:
    cfg = sync_api.ContextEngineConfig()
    assert isinstance(sync_api.RuleBasedQueryAnalyzer(cfg), strategy.QueryAnalyzerStrategy)
    assert isinstance(sync_api.HybridRetriever(cfg), strategy.HybridRetrieverStrategy)
    assert not isinstance(sync_api.ChunkFilter(cfg), strategy.ChunkFilterStrategy)
    assert isinstance(sync_api.CompositeRanker(cfg), strategy.ChunkRankingStrategy)
    assert isinstance(sync_api.SmartContextComposer(cfg), strategy.ContextComposerStrategy)
    assert isinstance(sync_api.ContextGuard(cfg), strategy.ContextGuardStrategy)
    for allocator in (
        sync_api.EqualBudgetAllocation(),
        sync_api.WeightedBudgetAllocation([1.0]),
        sync_api.ComplexityBasedAllocation(),
    ):
        assert isinstance(allocator, strategy.BudgetAllocationStrategy)
    legacy = (
        legacy_compat.PrefixDeduplication(),
        legacy_compat.HashDeduplication(),
        legacy_compat.ScoreRanking(),
        legacy_compat.GreedyCompression(),
    )
    for helper in legacy:
        assert not isinstance(helper, strategy.DeduplicationStrategy | strategy.RankingStrategy)
        assert not isinstance(helper, strategy.CompressionStrategy)
    for plain in (sync_api.VectorRetriever(cfg), sync_api.ContextCache()):
        assert not isinstance(plain, tuple(ABCS))


def test_reconstructed_duck_typed_components_need_no_abc() -> None:
    class Upper:
        def analyze(self, query: str) -> sync_api.QueryAnalysis:
            return sync_api.QueryAnalysis(original_query=query, normalized=query.upper())

    engine = sync_api.ContextEngine(query_analyzer=Upper())
    result = engine.run("abc")
    assert result.query_analysis.normalized == "ABC"
