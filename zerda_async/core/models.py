"""Enumerations and records that flow through the pipeline.

The records are mutable :class:`msgspec.Struct` s with the documented field
names, order and defaults.  Chunks supplied by callers are duck-typed:
``ScoredChunk`` reads ``text``/``page_content``, ``doc_id``/``id``,
``metadata`` and ``source`` from any object (a LangChain ``Document`` or a
plain dataclass both work).
"""

from __future__ import annotations

import enum
import hashlib
import time
from typing import Any

import msgspec

__all__ = [
    "Citation",
    "Composition",
    "ContextResult",
    "ConversationHistory",
    "ConversationTurn",
    "QueryAnalysis",
    "QueryComplexity",
    "QueryIntent",
    "RetrievalMethod",
    "ScoredChunk",
    "SourceQuality",
    "content_hash",
]


class QueryIntent(enum.Enum):
    """What the query asks for; declaration order is the intent tie-break order."""

    FACTUAL = "factual"
    REASONING = "reasoning"
    COMPARATIVE = "comparative"
    PROCEDURAL = "procedural"
    CODE = "code"
    SUMMARIZE = "summarize"
    UNKNOWN = "unknown"


class QueryComplexity(enum.Enum):
    """Coarse query complexity; it selects the analyzer's budget."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class RetrievalMethod(enum.Enum):
    """Which retriever produced a chunk (``HYBRID`` when several did)."""

    VECTOR = "vector"
    KEYWORD = "keyword"
    METADATA = "metadata"
    HYBRID = "hybrid"


class SourceQuality(enum.Enum):
    """Trust level of a source; the ranker uses ``value / 3``."""

    HIGH = 3
    MEDIUM = 2
    LOW = 1
    UNKNOWN = 0


def content_hash(text: str) -> str:
    """SHA-256 hex digest of the lower-cased, whitespace-normalised text."""
    return hashlib.sha256(" ".join(text.lower().split()).encode("utf-8")).hexdigest()


class QueryAnalysis(msgspec.Struct):
    """Result of query analysis.  ``context_budget`` is overwritten by the engine."""

    original_query: str
    normalized: str
    intent: QueryIntent = QueryIntent.UNKNOWN
    complexity: QueryComplexity = QueryComplexity.MEDIUM
    keywords: list[str] = msgspec.field(default_factory=list)
    entities: list[str] = msgspec.field(default_factory=list)
    is_arabic: bool = False
    language: str = "en"
    question_type: str = ""
    context_budget: int = 2000
    timestamp: float = msgspec.field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The ten documented fields (no timestamp), enums as their values."""
        return {
            "original_query": self.original_query,
            "normalized": self.normalized,
            "intent": self.intent.value,
            "complexity": self.complexity.value,
            "keywords": self.keywords,
            "entities": self.entities,
            "is_arabic": self.is_arabic,
            "language": self.language,
            "question_type": self.question_type,
            "context_budget": self.context_budget,
        }


_MISSING = object()


class ScoredChunk(msgspec.Struct):
    """A caller's chunk with its retrieval and ranking scores.

    The content hash is computed once, at construction, from the text at that
    moment.  Iterating yields ``(chunk, composite_score)`` for the legacy tuple
    API.
    """

    chunk: Any
    vector_score: float = 0.0
    keyword_score: float = 0.0
    metadata_score: float = 0.0
    source_quality: SourceQuality = SourceQuality.UNKNOWN
    recency_score: float = 0.0
    composite_score: float = 0.0
    retrieval_method: RetrievalMethod = RetrievalMethod.VECTOR
    retrieval_rank: int = 0
    _content_hash: str = ""
    # Opt-in evidence, set only by ``retriever.fusion = "rrf"`` (defaults otherwise,
    # so documented results are unchanged): the fused RRF score, and each
    # method's 1-based rank in its own candidate list (0 = not found by it).
    fused_score: float = 0.0
    vector_rank: int = 0
    keyword_rank: int = 0
    metadata_rank: int = 0
    # Opt-in too: the idf-weighted share of the query's analysed terms this chunk
    # holds (an absolute relevance signal in [0, 1]), set by this package's keyword
    # retriever and by rank fusion; -1.0 = not measured.
    query_coverage: float = -1.0
    # Opt-in too, set only by ``retriever.fusion = "convex"``: how far this chunk's
    # cosine stands above the last one of the vector list (0 when not in that list),
    # the vector evidence behind ``composer.min_vector_margin``.
    vector_margin: float = 0.0
    # Opt-in too: the reranker's score for this chunk, set on the chunks it reordered
    # (``ranking.rerank_depth``); None = not scored.
    rerank_score: float | None = None

    def __post_init__(self) -> None:
        # A falsy text whose page_content is None raises AttributeError here,
        # exactly like the documented package.  Retrievers pass the hash they
        # memoised for an indexed chunk (see retrieval._common.HashMemo).
        if not self._content_hash:
            self._content_hash = content_hash(self.text)

    @property
    def text(self) -> str:
        """``chunk.text`` when truthy, else ``chunk.page_content`` as is, else ``""``."""
        value: Any = getattr(self.chunk, "text", None)
        if value:
            return value  # type: ignore[no-any-return]
        return getattr(self.chunk, "page_content", "")

    @property
    def doc_id(self) -> str:
        """``chunk.doc_id`` when truthy, else ``chunk.id`` as is, else ``""``."""
        value = getattr(self.chunk, "doc_id", None)
        if value:
            return value  # type: ignore[no-any-return]
        return getattr(self.chunk, "id", "")

    @property
    def metadata(self) -> dict[str, Any]:
        """``chunk.metadata`` when truthy, else a new empty dict."""
        return getattr(self.chunk, "metadata", None) or {}

    @property
    def source(self) -> str:
        """``metadata["source"]``, else ``chunk.source``, else the ``doc_id``."""
        value = self.metadata.get("source")
        if value:
            return value  # type: ignore[no-any-return]
        value = getattr(self.chunk, "source", None)
        if value:
            return value  # type: ignore[no-any-return]
        return self.doc_id

    @property
    def content_hash(self) -> str:
        """SHA-256 of the normalised text, frozen at construction."""
        return self._content_hash

    @property
    def char_count(self) -> int:
        """Length of the raw text in code points."""
        return len(self.text)

    def __iter__(self) -> Any:
        yield self.chunk
        yield self.composite_score

    def to_dict(self) -> dict[str, Any]:
        """A compact, rounded summary for logs and JSON payloads."""
        return {
            "doc_id": self.doc_id,
            "text_preview": self.text[:120],
            "vector_score": round(self.vector_score, 4),
            "keyword_score": round(self.keyword_score, 4),
            "composite_score": round(self.composite_score, 4),
            "source_quality": self.source_quality.name,
            "retrieval_method": self.retrieval_method.value,
        }


class Citation(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where one chunk's text sits in a composed context.

    ``context[start:end]`` is the chunk's (stripped) text exactly as printed, or the
    part of it that was kept when ``truncated``; an ellipsis the composer appended is
    outside the span.  ``label`` is the citation marker the template printed before the
    text (``"[Source: handbook]"``, ``"--- [2] handbook ---"``), ``""`` for a template
    that prints none (``minimal``).

    Where the chunk came from, when its metadata says so (chunks read by
    ``zerda index`` and :mod:`zerda_async.readers` do): ``page`` (1-based, PDF),
    ``section`` (the heading titles above it, joined by `` › ``), and
    ``doc_start`` / ``doc_end``, the span of the cited text in the document's
    extracted text (``document_text[doc_start:doc_end]`` is ``context[start:end]``,
    the kept part when truncated).  ``None`` when unknown, and then left out of
    the JSON form, so a citation of any other chunk encodes as it always did:
    ``{doc_id, source, label, start, end, truncated}``.
    """

    doc_id: str
    source: str
    label: str
    start: int
    end: int
    truncated: bool  # required, so that omit_defaults never leaves it out
    page: int | None = None
    section: str | None = None
    doc_start: int | None = None
    doc_end: int | None = None


class Composition(msgspec.Struct, frozen=True):
    """A composed context with the citations of the chunks it holds, in context order.

    ``nothing_relevant`` is true when an opt-in packing mode (``composer.packing =
    "fit"`` or a ``composer.relevance_floor``) found no chunk to include, so the
    context is the template's "no information" placeholder.
    """

    context: str
    citations: tuple[Citation, ...] = ()
    nothing_relevant: bool = False


class ContextResult(msgspec.Struct):
    """What one engine run returns.

    ``context_length`` (code points) and ``total_included`` (``len(chunks_used)``)
    are recomputed at construction; values passed for them are ignored.
    ``chunks_used`` keeps its documented meaning (every ranked chunk); ``citations``
    lists the chunks actually in the context, in order, and ``nothing_relevant`` says
    that the relevance floor left nothing to cite (both are additions; their defaults
    leave documented results unchanged).
    """

    context: str
    query_analysis: QueryAnalysis
    chunks_used: list[ScoredChunk]
    total_retrieved: int = 0
    total_after_filter: int = 0
    total_after_rank: int = 0
    total_included: int = 0
    context_length: int = 0
    pipeline_ms: float = 0.0
    guard_passed: bool = True
    guard_warnings: list[str] = msgspec.field(default_factory=list)
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    citations: list[Citation] = msgspec.field(default_factory=list)
    nothing_relevant: bool = False

    def __post_init__(self) -> None:
        self.context_length = len(self.context)
        self.total_included = len(self.chunks_used)

    def get_stats(self) -> dict[str, Any]:
        """Counters, guard outcome and the analysis summary of this run."""
        return {
            "pipeline_ms": round(self.pipeline_ms, 2),
            "total_retrieved": self.total_retrieved,
            "total_after_filter": self.total_after_filter,
            "total_after_rank": self.total_after_rank,
            "total_included": self.total_included,
            "context_length": self.context_length,
            "guard_passed": self.guard_passed,
            "guard_warnings": self.guard_warnings,
            "query_intent": self.query_analysis.intent.value,
            "query_complexity": self.query_analysis.complexity.value,
            "context_budget": self.query_analysis.context_budget,
        }


class ConversationTurn(msgspec.Struct):
    """One question of a conversation; callers fill ``answer`` after generation."""

    turn_id: int
    query: str
    answer: str = ""
    context_used: str = ""
    analysis: QueryAnalysis | None = None
    timestamp: float = msgspec.field(default_factory=time.time)


class ConversationHistory(msgspec.Struct):
    """The last ``max_turns`` turns of one conversation (``0`` keeps all)."""

    session_id: str
    turns: list[ConversationTurn] = msgspec.field(default_factory=list)
    max_turns: int = 10

    def add_turn(
        self,
        query: str,
        answer: str = "",
        context: str = "",
        analysis: QueryAnalysis | None = None,
    ) -> ConversationTurn:
        """Append a turn (id = number of turns before it) and trim to ``max_turns``."""
        turn = ConversationTurn(
            turn_id=len(self.turns),
            query=query,
            answer=answer,
            context_used=context,
            analysis=analysis,
        )
        self.turns.append(turn)
        if len(self.turns) > self.max_turns:
            self.turns = self.turns[-self.max_turns :]
        return turn

    def get_recent_context(self, n: int = 3) -> str:
        """``"Q: ...\\nA: ..."`` blocks of the last ``n`` answered turns."""
        parts = [
            f"Q: {turn.query}\nA: {turn.answer}"
            for turn in self.turns[-n:]
            if turn.query and turn.answer
        ]
        return "\n\n".join(parts)

    def get_enriched_query(self, current_query: str, n: int = 2) -> str:
        """Prefix the query with the recent answered turns, or return it unchanged."""
        if not self.turns:
            return current_query
        recent = self.get_recent_context(n)
        if not recent:
            return current_query
        return "[Previous conversation:\n" + recent + "]\n\nCurrent question: " + current_query
