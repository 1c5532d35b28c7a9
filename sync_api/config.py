"""Configuration dataclasses of the documented package (re-exported from the core)."""

from zerda_async.core.config import (
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

__all__ = [
    "CacheConfig",
    "ComposerConfig",
    "ContextConfig",
    "ContextEngineConfig",
    "FilterConfig",
    "GuardConfig",
    "LengthCounter",
    "QueryAnalyzerConfig",
    "RankingConfig",
    "RetrieverConfig",
]
