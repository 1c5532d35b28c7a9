"""Enums and data models of the documented package (re-exported from the core)."""

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

__all__ = [
    "ContextResult",
    "ConversationHistory",
    "ConversationTurn",
    "QueryAnalysis",
    "QueryComplexity",
    "QueryIntent",
    "RetrievalMethod",
    "ScoredChunk",
    "SourceQuality",
]
