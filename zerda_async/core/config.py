"""Configuration records of the engine.

Every section is a mutable :class:`msgspec.Struct` whose field names, order and
defaults are those of the documented synchronous package.  Construction
validates nothing: the documented package accepts anything, and components read
most values live at call time (see each component for what it snapshots).
:meth:`ContextEngineConfig.validate` is the opt-in check (unknown template
names, negative or NaN weights, budgets that are not positive), which
:meth:`ContextEngineConfig.recommended` applies; the composer always rejects bad
``composer.packing`` and ``composer.relevance_floor`` values (added fields).

Configurations load from and dump to JSON or TOML with :func:`config_from_json`,
:func:`config_from_toml` and :func:`config_to_json`; a bad field raises
:class:`ConfigError` naming the field path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from ..errors import ConfigError
from .recommended import (
    RECOMMENDED_BUDGETS,
    RECOMMENDED_FUSION_DEPTH,
    RECOMMENDED_MIN_QUERY_COVERAGE,
    RECOMMENDED_MIN_VECTOR_MARGIN,
    RECOMMENDED_RELEVANCE_FLOOR,
)
from .validation import validate_config

__all__ = [
    "RECOMMENDED_BUDGETS",
    "RECOMMENDED_FUSION_DEPTH",
    "RECOMMENDED_MIN_QUERY_COVERAGE",
    "RECOMMENDED_MIN_VECTOR_MARGIN",
    "RECOMMENDED_RELEVANCE_FLOOR",
    "CacheConfig",
    "ComposerConfig",
    "ConfigError",
    "ContextConfig",
    "ContextEngineConfig",
    "FilterConfig",
    "GuardConfig",
    "LengthCounter",
    "QueryAnalyzerConfig",
    "RankingConfig",
    "RetrieverConfig",
    "config_from_json",
    "config_from_toml",
    "config_to_json",
]

LengthCounter = Callable[[str], int]
"""Measures a text in the unit of the budget (characters by default, or tokens)."""

DEFAULT_NOISE_PATTERNS: tuple[str, ...] = (
    r"^\s*$",
    r"^[\.\-\_\*]{5,}$",
    r"^\s*(page|صفحة)\s*\d+\s*$",
)


class QueryAnalyzerConfig(msgspec.Struct):
    """Budgets per complexity, extra entities and the Arabic-detection threshold."""

    budget_low: int = 800
    budget_medium: int = 2000
    budget_high: int = 4000
    custom_entities: list[str] = msgspec.field(default_factory=list)
    arabic_threshold: float = 0.3


class RetrieverConfig(msgspec.Struct):
    """Which retrieval methods run, their fusion weights and the default ``top_k``."""

    top_k: int = 20
    vector_weight: float = 0.60
    keyword_weight: float = 0.30
    metadata_weight: float = 0.10
    use_vector: bool = True
    use_keyword: bool = True
    use_metadata: bool = False
    metadata_filters: dict[str, Any] = msgspec.field(default_factory=dict)
    min_vector_score: float = 0.0
    # Opt-in, not in the documented package (its values are the defaults):
    text_analyzer: str = "documented"
    """Keyword text analyser: ``documented``, ``multilingual`` (Arabic-aware, Snowball English),
    ``multilingual-snowball`` or ``multilingual-lite`` (see ``core.index.analysis``)."""
    fusion: str = "documented"
    """``documented`` (weighted score sum plus an RRF bonus), ``rrf`` (weighted Reciprocal
    Rank Fusion of each method's own list) or ``convex`` (weighted sum of each method's
    evidence: keyword query coverage, min-max scaled cosine; see ``core.retrieval.fusion``)."""
    rrf_k: int = 60
    """RRF constant of ``fusion = "rrf"``: a chunk at 1-based rank r adds ``weight / (k + r)``."""
    fusion_depth: int = 50
    """How many candidates each method lists for ``fusion = "convex"`` (at least ``top_k``)."""
    neighbour_weight: float = 0.0
    """Convex fusion, in [0, 1]: how far a candidate's evidence rises toward its passage's
    (its neighbours: same ``source``, ``chunk`` +-1; ``core.retrieval.neighbours``)."""
    embed_heading: bool = False
    """True: the embedder reads a chunk as ``"<search_heading>: <text>"`` (its document title
    and section path, as ``zerda index`` sets them; ``core.index.chunks.embedding_text``).
    Read when chunks are embedded, so a saved index records it (``bench/bench_covid.py``)."""
    script_centring: bool = False
    """True: the question vector loses the embedder's script direction before the vector
    search, when the embedder carries one (``core.script_centring``; e5-small does), so an
    Arabic question reaches English chunks and the reverse (``bench/bench_script_centring.py``)."""
    question_map: bool = False
    """True, with ``script_centring``: the centred question vector goes through the embedder's
    question map for its script, when the embedder carries one (``core.question_map``;
    e5-small has one for Arabic questions), so an Arabic question reaches English chunks
    better (``bench/bench_question_map.py``).  No effect without ``script_centring``: the
    map was fitted on centred vectors."""
    cross_script_evidence: bool = False
    """Convex fusion: True gives a vector candidate in another script than the keyword hits'
    (which keyword search cannot reach) the best such hit's keyword evidence times its own
    scaled cosine (``core.retrieval.script_evidence``; ``bench/bench_script_fusion.py``)."""


class FilterConfig(msgspec.Struct):
    """Noise patterns, length window and the semantic-dedup threshold.

    ``dedup_method`` and ``prefix_length`` are kept for compatibility and are
    never read: filtering always does noise, length, then exact-hash dedup.
    """

    dedup_method: str = "hash"
    prefix_length: int = 100
    semantic_sim_threshold: float = 0.92
    min_chunk_length: int = 20
    max_chunk_length: int = 4000
    noise_patterns: list[str] = msgspec.field(default_factory=lambda: list(DEFAULT_NOISE_PATTERNS))


class RankingConfig(msgspec.Struct):
    """Weights of the five ranking factors and the default number of chunks kept."""

    weight_vector_score: float = 0.40
    weight_keyword_score: float = 0.25
    weight_source_quality: float = 0.20
    weight_recency: float = 0.10
    weight_position: float = 0.05
    max_chunks_to_rank: int = 15
    # Opt-in, not in the documented package (its values are the defaults):
    mode: str = "documented"
    """``documented`` (five factors, keyword substrings) or ``evidence`` (the fused retrieval
    score, keyword overlap on analysed tokens, source quality, recency, position)."""
    weight_evidence: float = 0.55
    """Weight of the fused retrieval score (normalised to the best candidate) in ``evidence``."""
    rerank_depth: int = 4
    """Ranked chunks the async engine's ``reranker=`` reorders (none: unread); 0: off."""


class ComposerConfig(msgspec.Struct):
    """Template, separator and formatting flags of the composed context.

    ``include_sources``, ``summarize_long_chunks`` and ``min_compression_chars``
    are kept for compatibility and are never read.  ``template`` may also be
    ``"auto"`` (Arabic template for an Arabic query, English otherwise).

    Two fields are additions (their defaults keep the documented composer):
    ``packing`` is ``"documented"`` (stop at the first chunk that does not fit,
    clamp the whole context) or ``"fit"`` (skip a chunk that does not fit and try
    the next, cut at a sentence boundary, never cut the header or footer);
    ``relevance_floor`` drops chunks whose ``composite_score`` is below it before
    packing, and a context left without chunks says so (``nothing_relevant``).
    """

    max_context_length: int = 2000
    separator: str = "\n---\n"
    template: str = "arabic"
    include_scores: bool = False
    include_metadata: bool = False
    include_sources: bool = True
    group_by_source: bool = False
    summarize_long_chunks: bool = False
    min_compression_chars: int = 50
    packing: str = "documented"
    relevance_floor: float = 0.0
    min_query_coverage: float = 0.0
    """When positive: if no chunk holds at least this idf-weighted share of the query's
    analysed terms (``ScoredChunk.query_coverage``, measured by the keyword index), the
    context says nothing relevant was found.  0 turns the check off."""
    min_vector_margin: float = 0.0
    """When positive, a chunk whose ``vector_margin`` (its cosine minus the last cosine of the
    vector list, set by ``retriever.fusion = "convex"``) reaches it also passes the
    ``min_query_coverage`` check: strong vector evidence answers a question that shares no
    words with the documents (another language).  0: keywords alone decide."""
    embedder_floor: bool = False
    """True: the ``min_query_coverage`` check also weighs vector evidence on the embedder's
    own scale (its ``vector_floor``; none: the keyword check alone)."""
    rerank_floor: float | None = None
    """When a reranker scored chunks: nothing relevant unless one scores at least this (on the
    reranker's scale), in place of the coverage checks.  ``None``: the reranker orders only."""


class GuardConfig(msgspec.Struct):
    """Checks run by the context guard (``enabled`` is read once, at guard construction)."""

    enabled: bool = True
    min_context_length: int = 10
    max_context_length: int = 8000
    check_empty: bool = True
    check_relevance: bool = False
    relevance_threshold: float = 0.10
    check_source_coverage: bool = True


class CacheConfig(msgspec.Struct):
    """Context cache settings (read once, at engine construction)."""

    enabled: bool = True
    max_size: int = 256
    ttl_seconds: int = 300


class ContextEngineConfig(msgspec.Struct):
    """Master configuration: one sub-configuration per component plus global switches.

    ``language`` is kept for compatibility and never read (language is always
    detected).  ``max_context_length`` is a read/write alias of
    ``composer.max_context_length``; ``separator`` and ``template`` are
    read-only aliases of the composer fields.
    """

    query_analyzer: QueryAnalyzerConfig = msgspec.field(default_factory=QueryAnalyzerConfig)
    retriever: RetrieverConfig = msgspec.field(default_factory=RetrieverConfig)
    filter_cfg: FilterConfig = msgspec.field(default_factory=FilterConfig)
    ranking: RankingConfig = msgspec.field(default_factory=RankingConfig)
    composer: ComposerConfig = msgspec.field(default_factory=ComposerConfig)
    guard: GuardConfig = msgspec.field(default_factory=GuardConfig)
    cache: CacheConfig = msgspec.field(default_factory=CacheConfig)
    language: str = "auto"
    enable_adaptive: bool = True
    multi_turn: bool = True
    # Opt-in, not in the documented package (its value is the default):
    history_enrichment: str = "always"
    """When a conversation's answered turns enrich its next query (``multi_turn`` on):
    ``always`` (documented: every query), ``refers_back`` (only a query that points back
    with a pronoun, a demonstrative or an ellipsis, Arabic or English:
    :func:`zerda_async.core.followups.refers_back`), or ``never`` (turns are still
    recorded).  A query left alone is retrieved, and cached, as a plain query."""

    @classmethod
    def recommended(cls) -> ContextEngineConfig:
        """A full configuration with the better-measured settings (``bench/bench_quality.py``).

        Differs from ``ContextEngineConfig()`` only in:

        * ``retriever.text_analyzer`` — ``"multilingual"`` (``"multilingual-lite"``
          without PyStemmer): punctuation-splitting, Arabic-normalising, lightly
          stemming keyword analysis;
        * ``retriever.fusion = "convex"`` with equal weights (0.5 each) and
          ``fusion_depth = 50``: each method lists 50 candidates and a chunk
          scores the sum of its keyword query coverage and its min-max scaled
          cosine (``core.retrieval.fusion``); with e5 it beat keyword-only,
          embedder-only and weighted RRF (``bench/README.md``, docs/hybrid.md);
        * ``retriever.neighbour_weight = 0.5``: a candidate's evidence rises
          halfway toward its passage's (with its neighbours among the candidates;
          COVID-QA's long articles, ``bench/README.md``);
        * ``retriever.script_centring``, ``retriever.question_map`` and
          ``retriever.cross_script_evidence``: in a corpus of two scripts, the answer
          in the question's other script is found and not outranked for lack of
          keyword evidence (``bench/README.md``);
        * ``ranking.mode = "evidence"``: the fused retrieval score first (evidence 0.55,
          keyword overlap 0.20, source quality 0.15, recency 0.05, position 0.05);
        * packing (``bench/bench_packing.py``, ``bench_budgets.py``): budgets of 3,000 /
          4,000 / 6,000 characters by complexity, ``composer.packing = "fit"`` (skip what
          does not fit, cut at sentence ends, never cut the frame), a relevance
          floor, ``composer.min_query_coverage = 0.15`` (say "nothing relevant" when
          no chunk holds 15% of the query's idf-weighted terms), weighed with the
          vector evidence on the embedder's own scale (``composer.embedder_floor``;
          ``zerda_async.core.vector_floor``), and the ``"auto"`` template (Arabic
          or English by the query);
        * ``history_enrichment = "refers_back"``: a session's question is enriched
          with its previous turns only when it refers back to them ("when was it
          founded?", "ماذا عن عاصمتها؟"), so a question on another subject is not
          steered to the previous one's documents (``bench/bench_followups.py``).

        Each call returns a new, independent configuration, validated.
        """
        # Imported here: analysis imports errors only, but config must stay importable
        # before the index package (it is the bottom of core).
        from .index.analysis import best_multilingual

        config = cls()
        retriever = config.retriever
        retriever.text_analyzer = best_multilingual()
        retriever.fusion = "convex"
        retriever.fusion_depth = RECOMMENDED_FUSION_DEPTH
        retriever.vector_weight = 0.5
        retriever.keyword_weight = 0.5
        retriever.metadata_weight = 0.5
        retriever.neighbour_weight = 0.5
        retriever.script_centring = True
        retriever.question_map = True
        retriever.cross_script_evidence = True
        ranking = config.ranking
        ranking.mode = "evidence"
        ranking.weight_evidence = 0.55
        ranking.weight_keyword_score = 0.20
        ranking.weight_source_quality = 0.15
        ranking.weight_recency = 0.05
        ranking.weight_position = 0.05
        analyzer = config.query_analyzer
        analyzer.budget_low, analyzer.budget_medium, analyzer.budget_high = RECOMMENDED_BUDGETS
        config.composer.max_context_length = RECOMMENDED_BUDGETS[1]
        config.composer.template = "auto"
        config.composer.packing = "fit"
        config.composer.relevance_floor = RECOMMENDED_RELEVANCE_FLOOR
        config.composer.min_query_coverage = RECOMMENDED_MIN_QUERY_COVERAGE
        config.composer.embedder_floor = True
        config.history_enrichment = "refers_back"
        return config.validate()

    def validate(self) -> ContextEngineConfig:
        """Check every value the documented package would use silently; return ``self``.

        Raises :class:`ConfigError` naming the field (``composer.template``,
        ``ranking.weight_recency``, ``query_analyzer.budget_low`` ...) for an
        unknown template name, a negative, NaN or infinite weight, a threshold that
        is not a finite number, or a budget or size that is not a positive integer
        (large weights are valid: they are relative; see
        :func:`zerda_async.core.validation.validate_config`).  Construction never
        validates, so ``sync_api`` keeps accepting what the documented package
        accepts.
        """
        validate_config(self)
        return self

    @property
    def max_context_length(self) -> int:
        """Default global budget of multi-query runs (``composer.max_context_length``)."""
        return self.composer.max_context_length

    @max_context_length.setter
    def max_context_length(self, value: int) -> None:
        self.composer.max_context_length = value

    @property
    def separator(self) -> str:
        """The composer separator (read-only alias)."""
        return self.composer.separator

    @property
    def template(self) -> str:
        """The composer template name (read-only alias)."""
        return self.composer.template


ContextConfig = ContextEngineConfig
"""Backward-compatible name of :class:`ContextEngineConfig` (the same class)."""


def _decode(data: bytes | str, decode: Callable[..., Any], fmt: str) -> ContextEngineConfig:
    try:
        return decode(data, type=ContextEngineConfig, strict=True)  # type: ignore[no-any-return]
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid {fmt} configuration: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ConfigError(f"malformed {fmt} configuration: {exc}") from exc


def _check_unknown(doc: Any, cls: type[msgspec.Struct], path: str) -> None:
    if not isinstance(doc, dict):
        return
    fields = {f.name: f for f in msgspec.structs.fields(cls)}
    for key, value in doc.items():
        if key not in fields:
            where = f"{path}.{key}" if path else key
            raise ConfigError(f"unknown configuration field {where!r}")
        sub = fields[key].type
        if isinstance(sub, type) and issubclass(sub, msgspec.Struct):
            _check_unknown(value, sub, f"{path}.{key}" if path else key)


def config_from_json(data: bytes | str) -> ContextEngineConfig:
    """Load a configuration from a JSON document (missing fields keep their defaults)."""
    try:
        _check_unknown(msgspec.json.decode(data), ContextEngineConfig, "")
    except msgspec.DecodeError as exc:
        raise ConfigError(f"malformed JSON configuration: {exc}") from exc
    return _decode(data, msgspec.json.decode, "JSON")


def config_from_toml(data: bytes | str) -> ContextEngineConfig:
    """Load a configuration from a TOML document (missing fields keep their defaults)."""
    try:
        _check_unknown(msgspec.toml.decode(data), ContextEngineConfig, "")
    except msgspec.DecodeError as exc:
        raise ConfigError(f"malformed TOML configuration: {exc}") from exc
    return _decode(data, msgspec.toml.decode, "TOML")


def config_to_json(config: ContextEngineConfig) -> bytes:
    """Dump a configuration as JSON (every field, including defaults)."""
    return msgspec.json.encode(config)
