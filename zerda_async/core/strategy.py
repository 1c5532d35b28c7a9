"""Abstract extension points of the pipeline.

Injected components need not subclass these: the engine relies on duck
typing.  They document the method names and parameters the engine passes
(``query``, ``top_k``, ``filters`` and ``max_n`` go by keyword).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from .models import QueryAnalysis, ScoredChunk

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


class QueryAnalyzerStrategy(ABC):
    """Turns a query into a :class:`QueryAnalysis`."""

    @abstractmethod
    def analyze(self, query: str) -> QueryAnalysis: ...


class HybridRetrieverStrategy(ABC):
    """Returns scored candidate chunks for a query."""

    @abstractmethod
    def retrieve(
        self,
        query: str,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[ScoredChunk]: ...


class ChunkFilterStrategy(ABC):
    """Removes noise, out-of-range and duplicate chunks."""

    @abstractmethod
    def filter(self, chunks: list[ScoredChunk]) -> list[ScoredChunk]: ...


class ChunkRankingStrategy(ABC):
    """Scores and orders chunks, keeping at most ``max_n``."""

    @abstractmethod
    def rank(
        self,
        chunks: list[ScoredChunk],
        analysis: QueryAnalysis,
        max_n: int | None = None,
    ) -> list[ScoredChunk]: ...


class ContextComposerStrategy(ABC):
    """Packs ranked chunks into a context string within a budget."""

    @abstractmethod
    def compose(self, chunks: list[ScoredChunk], analysis: QueryAnalysis, budget: int) -> str: ...


class ContextGuardStrategy(ABC):
    """Checks a composed context; returns ``(passed, warnings)``."""

    @abstractmethod
    def validate(
        self, context: str, query: str, analysis: QueryAnalysis
    ) -> tuple[bool, list[str]]: ...


class BudgetAllocationStrategy(ABC):
    """Splits a global budget between ``n_queries`` queries."""

    @abstractmethod
    def allocate(self, total_budget: int, n_queries: int) -> list[int]: ...


class DeduplicationStrategy(ABC):
    """Legacy: removes duplicate ``(chunk, score)`` tuples."""

    @abstractmethod
    def deduplicate(self, chunks: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]: ...


class RankingStrategy(ABC):
    """Legacy: orders ``(chunk, score)`` tuples, keeping at most ``max_chunks``."""

    @abstractmethod
    def rank(
        self, chunks: list[tuple[Any, Any]], max_chunks: int | None
    ) -> list[tuple[Any, Any]]: ...


class CompressionStrategy(ABC):
    """Legacy: shortens a composed context to ``target`` units."""

    @abstractmethod
    def compress(
        self, context: str, target: int, counter: Callable[[str], int], separator: str
    ) -> str: ...
