"""Opt-in checks of a configuration: each bad value raises a ``ConfigError`` naming its field.

The documented package validates nothing (an unknown template name falls back to
Arabic, any weight or budget is used as given), and ``sync_api`` keeps that.  These
checks are what :meth:`ContextEngineConfig.validate` runs; the recommended profile
applies them, and entry points that own their configuration (the async engine, the
command line, the service) call it so a typo fails at start-up instead of
silently changing the context.

They reject *errors* only — values the documented package cannot use for what the
field means — never a value that is merely unusual, so a configuration that
works with ``sync_api`` gives the same result in the async engine:

* weights are relative (each signal is multiplied by its weight and the
  products added), so any finite weight >= 0 is valid, ``2.0`` included; a
  negative weight (it would turn a signal into a penalty), NaN, an infinite
  weight or a non-number is an error;
* thresholds are compared with a score: any finite number is valid (one past
  the score's range switches its check always on or off, as in the documented
  package); NaN, infinities and non-numbers are errors;
* budgets, sizes and the cache TTL must be positive integers, minimum lengths
  integers >= 0, and a length window's minimum must not exceed its maximum;
* names (template, packing mode) must be known ones.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

from ..errors import ConfigError
from .templates import TEMPLATE_NAMES

__all__ = [
    "FUSION_MODES",
    "HISTORY_ENRICHMENT_MODES",
    "PACKING_MODES",
    "Validatable",
    "check_history_enrichment",
    "check_packing_fields",
    "validate_config",
]


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
    @property
    def min_vector_margin(self) -> float: ...
    @property
    def embedder_floor(self) -> bool: ...
    @property
    def rerank_floor(self) -> float | None: ...


class _Retriever(Protocol):
    @property
    def min_vector_score(self) -> float: ...
    @property
    def fusion(self) -> str: ...
    @property
    def embed_heading(self) -> bool: ...
    @property
    def script_centring(self) -> bool: ...
    @property
    def question_map(self) -> bool: ...
    @property
    def cross_script_evidence(self) -> bool: ...


class _Filter(Protocol):
    @property
    def min_chunk_length(self) -> int: ...
    @property
    def max_chunk_length(self) -> int: ...


class Validatable(Protocol):
    """The parts of a ``ContextEngineConfig`` that :func:`validate_config` reads by attribute."""

    @property
    def history_enrichment(self) -> str: ...
    @property
    def composer(self) -> _Composer: ...
    @property
    def retriever(self) -> _Retriever: ...
    @property
    def filter_cfg(self) -> _Filter: ...


# (section, field) pairs of relative weights: finite numbers >= 0.
_WEIGHT_FIELDS: tuple[tuple[str, str], ...] = (
    ("retriever", "vector_weight"),
    ("retriever", "keyword_weight"),
    ("retriever", "metadata_weight"),
    ("ranking", "weight_vector_score"),
    ("ranking", "weight_keyword_score"),
    ("ranking", "weight_source_quality"),
    ("ranking", "weight_recency"),
    ("ranking", "weight_position"),
)

# (section, field) pairs of thresholds compared with a score: finite numbers.
_THRESHOLD_FIELDS: tuple[tuple[str, str], ...] = (
    ("query_analyzer", "arabic_threshold"),
    ("retriever", "min_vector_score"),
    ("filter_cfg", "semantic_sim_threshold"),
    ("guard", "relevance_threshold"),
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

# The fusion's sizes (additions), checked with the fusion mode, before the ranges.
_FUSION_SIZES: tuple[tuple[str, str], ...] = (("retriever", "rrf_k"), ("retriever", "fusion_depth"))

# Lengths that may be zero but not negative.
_NON_NEGATIVE_FIELDS: tuple[tuple[str, str], ...] = (
    ("filter_cfg", "min_chunk_length"),
    ("guard", "min_context_length"),
    ("ranking", "rerank_depth"),
)


PACKING_MODES: frozenset[str] = frozenset({"documented", "fit"})
"""The values of ``composer.packing`` (``documented`` is the documented packer)."""


def check_packing_fields(
    packing: Any,
    relevance_floor: Any,
    min_query_coverage: Any = 0.0,
    min_vector_margin: Any = 0.0,
) -> None:
    """Raise :class:`ConfigError` naming ``composer.packing``, ``composer.relevance_floor``,
    ``composer.min_query_coverage`` or ``composer.min_vector_margin``.

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
        ("min_vector_margin", min_vector_margin),
    ):
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"composer.{name} must be a number in [0, 1], got {value!r}")


FUSION_MODES: frozenset[str] = frozenset({"documented", "rrf", "convex"})
"""The values of ``retriever.fusion`` (``documented`` is the documented fusion)."""


def _check_fusion(config: Validatable) -> None:
    retriever = config.retriever
    if retriever.fusion not in FUSION_MODES:
        raise ConfigError(
            f"retriever.fusion must be one of {sorted(FUSION_MODES)}, got {retriever.fusion!r}"
        )
    _check_positive(config, _FUSION_SIZES)
    weight = getattr(retriever, "neighbour_weight", 0.0)
    if not _is_number(weight) or not 0.0 <= weight <= 1.0:
        raise ConfigError(f"retriever.neighbour_weight must be a number in [0, 1], got {weight!r}")


def _check_positive(config: Validatable, fields: tuple[tuple[str, str], ...]) -> None:
    """``ConfigError`` naming the first of ``fields`` that is not an integer > 0."""
    for section, name in fields:
        value = getattr(getattr(config, section), name)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ConfigError(f"{section}.{name} must be a positive integer, got {value!r}")


HISTORY_ENRICHMENT_MODES: frozenset[str] = frozenset({"always", "refers_back", "never"})
"""The values of ``ContextEngineConfig.history_enrichment`` (``always`` is the documented one)."""


def check_history_enrichment(value: Any) -> None:
    """Raise :class:`ConfigError` naming ``history_enrichment`` unless ``value`` is a known mode.

    An addition to the documented package, so the history stage checks it on
    every run too (an unvalidated ``sync_api`` configuration included).
    """
    if not isinstance(value, str) or value not in HISTORY_ENRICHMENT_MODES:
        raise ConfigError(
            f"history_enrichment must be one of {sorted(HISTORY_ENRICHMENT_MODES)}, got {value!r}"
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def _check_ranges(config: Validatable) -> None:
    for section, name in _WEIGHT_FIELDS:
        value = getattr(getattr(config, section), name)
        if not _is_finite(value) or value < 0:
            raise ConfigError(
                f"{section}.{name} must be a finite number >= 0 (weights are relative), "
                f"got {value!r}"
            )
    for section, name in _THRESHOLD_FIELDS:
        value = getattr(getattr(config, section), name)
        if not _is_finite(value):
            raise ConfigError(f"{section}.{name} must be a finite number, got {value!r}")
    _check_positive(config, _POSITIVE_FIELDS)
    for section, name in _NON_NEGATIVE_FIELDS:
        value = getattr(getattr(config, section), name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{section}.{name} must be an integer >= 0, got {value!r}")


def validate_config(config: Validatable) -> None:
    """Raise :class:`ConfigError` for the first bad value, naming ``section.field``.

    Checked (see the module notes for why these and no more): the template name
    (a built-in one or ``"auto"``), the packing mode, the fusion mode with its
    positive ``rrf_k`` and ``fusion_depth``, weights that are finite and
    >= 0, thresholds that are finite, positive budgets, sizes and the cache TTL,
    non-negative minimum lengths, a length window whose minimum is not above
    its maximum, and the ``history_enrichment`` mode.  ``composer.relevance_floor``,
    ``composer.min_query_coverage`` and ``composer.min_vector_margin`` (additions to
    the documented package) are fractions in [0, 1], ``composer.embedder_floor`` and
    ``retriever.embed_heading``, ``retriever.script_centring``,
    ``retriever.question_map`` and ``retriever.cross_script_evidence`` bools,
    ``ranking.rerank_depth`` an integer >= 0 and ``composer.rerank_floor`` a finite
    number or None.
    """
    template = config.composer.template
    if template not in TEMPLATE_NAMES:
        raise ConfigError(
            f"composer.template must be one of {sorted(TEMPLATE_NAMES)}, got {template!r}"
        )
    composer = config.composer
    check_packing_fields(
        composer.packing,
        composer.relevance_floor,
        composer.min_query_coverage,
        composer.min_vector_margin,
    )
    if not isinstance(composer.embedder_floor, bool):
        raise ConfigError(
            f"composer.embedder_floor must be true or false, got {composer.embedder_floor!r}"
        )
    rerank_floor = composer.rerank_floor
    if rerank_floor is not None and not _is_finite(rerank_floor):
        raise ConfigError(
            f"composer.rerank_floor must be a finite number or None, got {rerank_floor!r}"
        )
    # A truthy string such as "no" would otherwise turn the option on.
    for name in ("embed_heading", "script_centring", "question_map", "cross_script_evidence"):
        value = getattr(config.retriever, name)
        if not isinstance(value, bool):
            raise ConfigError(f"retriever.{name} must be true or false, got {value!r}")
    _check_fusion(config)
    check_history_enrichment(config.history_enrichment)
    _check_ranges(config)
    if config.filter_cfg.min_chunk_length > config.filter_cfg.max_chunk_length:
        raise ConfigError(
            "filter_cfg.min_chunk_length must not exceed filter_cfg.max_chunk_length "
            f"({config.filter_cfg.min_chunk_length} > {config.filter_cfg.max_chunk_length})"
        )
