"""Opt-in checks of a configuration: each bad value raises a ``ConfigError`` naming its field.

The documented package validates nothing (an unknown template name falls back to
Arabic, any weight or budget is used as given), and ``sync_api`` keeps that.  These
checks are what :meth:`ContextEngineConfig.validate` runs; the recommended profile
applies them, and entry points that own their configuration (the async engine, the
command line, the service) can call it so a typo fails at start-up instead of
silently changing the context.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import ConfigError
from .templates import TEMPLATE_NAMES

__all__ = ["PACKING_MODES", "Validatable", "check_packing_fields", "validate_config"]


# What the checks read of a configuration, described here rather than imported:
# config.py imports this module (``ContextEngineConfig.validate``), so this one
# must not import config.py back.  The (section, field) tables below are read
# by name.
class _Composer(Protocol):
    @property
    def template(self) -> str: ...
    @property
    def packing(self) -> str: ...
    @property
    def relevance_floor(self) -> float: ...
    @property
    def min_query_coverage(self) -> float: ...


class _Retriever(Protocol):
    @property
    def min_vector_score(self) -> float: ...


class _Filter(Protocol):
    @property
    def min_chunk_length(self) -> int: ...
    @property
    def max_chunk_length(self) -> int: ...


class Validatable(Protocol):
    """The parts of a ``ContextEngineConfig`` that :func:`validate_config` reads by attribute."""

    @property
    def composer(self) -> _Composer: ...
    @property
    def retriever(self) -> _Retriever: ...
    @property
    def filter_cfg(self) -> _Filter: ...


# (section, field) pairs of weights and thresholds that must lie in [0, 1].
_UNIT_FIELDS: tuple[tuple[str, str], ...] = (
    ("query_analyzer", "arabic_threshold"),
    ("retriever", "vector_weight"),
    ("retriever", "keyword_weight"),
    ("retriever", "metadata_weight"),
    ("filter_cfg", "semantic_sim_threshold"),
    ("ranking", "weight_vector_score"),
    ("ranking", "weight_keyword_score"),
    ("ranking", "weight_source_quality"),
    ("ranking", "weight_recency"),
    ("ranking", "weight_position"),
    ("guard", "relevance_threshold"),
    ("composer", "relevance_floor"),
    ("composer", "min_query_coverage"),
)

# Budgets and sizes that must be positive integers.
_POSITIVE_FIELDS: tuple[tuple[str, str], ...] = (
    ("query_analyzer", "budget_low"),
    ("query_analyzer", "budget_medium"),
    ("query_analyzer", "budget_high"),
    ("retriever", "top_k"),
    ("ranking", "max_chunks_to_rank"),
    ("composer", "max_context_length"),
    ("filter_cfg", "max_chunk_length"),
    ("guard", "max_context_length"),
    ("cache", "max_size"),
    ("cache", "ttl_seconds"),
)

# Lengths that may be zero but not negative.
_NON_NEGATIVE_FIELDS: tuple[tuple[str, str], ...] = (
    ("filter_cfg", "min_chunk_length"),
    ("guard", "min_context_length"),
)


PACKING_MODES: frozenset[str] = frozenset({"documented", "fit"})
"""The values of ``composer.packing`` (``documented`` is the documented packer)."""


def check_packing_fields(packing: Any, relevance_floor: Any, min_query_coverage: Any = 0.0) -> None:
    """Raise :class:`ConfigError` naming ``composer.packing``, ``composer.relevance_floor``
    or ``composer.min_query_coverage``.

    These fields are additions, with no documented behaviour to keep, so they are
    checked whenever a composer is built.
    """
    if packing not in PACKING_MODES:
        raise ConfigError(
            f"composer.packing must be one of {sorted(PACKING_MODES)}, got {packing!r}"
        )
    for name, value in (
        ("relevance_floor", relevance_floor),
        ("min_query_coverage", min_query_coverage),
    ):
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"composer.{name} must be a number in [0, 1], got {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_ranges(config: Validatable) -> None:
    for section, name in _UNIT_FIELDS:
        value = getattr(getattr(config, section), name)
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"{section}.{name} must be a number in [0, 1], got {value!r}")
    min_vector = config.retriever.min_vector_score
    if not _is_number(min_vector) or not -1.0 <= min_vector <= 1.0:
        # A cosine similarity: anything outside [-1, 1] filters everything or nothing.
        raise ConfigError(
            f"retriever.min_vector_score must be a number in [-1, 1], got {min_vector!r}"
        )
    for section, name in _POSITIVE_FIELDS:
        value = getattr(getattr(config, section), name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{section}.{name} must be a positive integer, got {value!r}")
    for section, name in _NON_NEGATIVE_FIELDS:
        value = getattr(getattr(config, section), name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{section}.{name} must be an integer >= 0, got {value!r}")


def validate_config(config: Validatable) -> None:
    """Raise :class:`ConfigError` for the first bad value, naming ``section.field``.

    Checked: the template name (a built-in one or ``"auto"``), the packing mode,
    weights and thresholds in [0, 1], positive budgets, sizes and the cache TTL,
    non-negative minimum lengths, and a length window whose minimum is not above
    its maximum.
    """
    template = config.composer.template
    if template not in TEMPLATE_NAMES:
        raise ConfigError(
            f"composer.template must be one of {sorted(TEMPLATE_NAMES)}, got {template!r}"
        )
    composer = config.composer
    check_packing_fields(composer.packing, composer.relevance_floor, composer.min_query_coverage)
    _check_ranges(config)
    if config.filter_cfg.min_chunk_length > config.filter_cfg.max_chunk_length:
        raise ConfigError(
            "filter_cfg.min_chunk_length must not exceed filter_cfg.max_chunk_length "
            f"({config.filter_cfg.min_chunk_length} > {config.filter_cfg.max_chunk_length})"
        )
