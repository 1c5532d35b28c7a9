"""The JSON form of a :class:`~zerda_async.core.models.ContextResult` (msgspec Structs).

Shared by ``zerda query --json`` and the HTTP service.  Results hold the
caller's chunk objects, which need not be JSON types, so :func:`result_out`
converts them explicitly: doc id, source, scores, a text preview and
JSON-safe metadata (other values become their ``str``).
"""

from __future__ import annotations

from typing import Any

import msgspec

from zerda_async.core.models import Citation, ContextResult, ScoredChunk

__all__ = [
    "PREVIEW_CHARS",
    "AnalysisOut",
    "ChunkOut",
    "Citation",
    "ContextResponse",
    "jsonable",
    "result_out",
]

PREVIEW_CHARS = 200
"""Characters of each chunk's text included as ``text_preview``."""


class AnalysisOut(msgspec.Struct, kw_only=True):
    """The query analysis of a result."""

    original_query: str
    normalized: str
    intent: str
    complexity: str
    keywords: list[str]
    entities: list[str]
    is_arabic: bool
    language: str
    question_type: str
    context_budget: int


class ChunkOut(msgspec.Struct, kw_only=True):
    """One chunk of the context: identity, scores, a text preview and its metadata."""

    doc_id: Any
    source: Any
    text_preview: str
    char_count: int
    vector_score: float
    keyword_score: float
    metadata_score: float
    recency_score: float
    composite_score: float
    source_quality: str
    retrieval_method: str
    retrieval_rank: int
    metadata: dict[str, Any]


class ContextResponse(msgspec.Struct, kw_only=True):
    """A whole :class:`ContextResult` as JSON, with the stage timings of the request.

    ``citations`` are the chunks in the context, in context order:
    ``context[start:end]`` is each one's text as printed there (see
    :class:`~zerda_async.core.models.Citation`); ``chunks_used`` keeps its
    documented meaning (every ranked chunk).  ``nothing_relevant`` is true when
    an opt-in packing setting left no chunk (the context is the placeholder).
    """

    context: str
    context_length: int
    query_analysis: AnalysisOut
    chunks_used: list[ChunkOut]
    citations: list[Citation] = msgspec.field(default_factory=list)
    nothing_relevant: bool = False
    total_retrieved: int
    total_after_filter: int
    total_after_rank: int
    total_included: int
    pipeline_ms: float
    guard_passed: bool
    guard_warnings: list[str]
    cache_hit: bool = False
    """Whether the context came from the context cache (this replica's or the shared one)."""
    template: str = ""
    request_id: str = ""
    timings_ms: dict[str, float] = msgspec.field(default_factory=dict)


_SCALARS = (str, int, float, bool, type(None))


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` with JSON scalars, lists and string-keyed dicts kept; anything else as ``str``."""
    if isinstance(value, _SCALARS):
        return value
    if depth < 8 and isinstance(value, dict):
        return {str(k): jsonable(v, depth + 1) for k, v in value.items()}
    if depth < 8 and isinstance(value, list | tuple):
        return [jsonable(v, depth + 1) for v in value]
    return str(value)


def _chunk_out(sc: ScoredChunk) -> ChunkOut:
    text = sc.text if isinstance(sc.text, str) else str(sc.text)
    return ChunkOut(
        doc_id=jsonable(sc.doc_id),
        source=jsonable(sc.source),
        text_preview=text[:PREVIEW_CHARS],
        char_count=len(text),
        vector_score=float(sc.vector_score),
        keyword_score=float(sc.keyword_score),
        metadata_score=float(sc.metadata_score),
        recency_score=float(sc.recency_score),
        composite_score=float(sc.composite_score),
        source_quality=sc.source_quality.name,
        retrieval_method=sc.retrieval_method.value,
        retrieval_rank=int(sc.retrieval_rank),
        metadata=jsonable(dict(sc.metadata)) if isinstance(sc.metadata, dict) else {},
    )


def result_out(
    result: ContextResult,
    *,
    template: str = "",
    request_id: str = "",
    timings_ms: dict[str, float] | None = None,
) -> ContextResponse:
    """The JSON form of ``result`` (explicit conversion of the caller's chunk objects)."""
    a = result.query_analysis
    return ContextResponse(
        context=result.context,
        context_length=result.context_length,
        query_analysis=AnalysisOut(
            original_query=str(a.original_query),
            normalized=str(a.normalized),
            intent=a.intent.value,
            complexity=a.complexity.value,
            keywords=[str(k) for k in a.keywords],
            entities=[str(e) for e in a.entities],
            is_arabic=bool(a.is_arabic),
            language=str(a.language),
            question_type=str(a.question_type),
            context_budget=int(a.context_budget),
        ),
        chunks_used=[_chunk_out(sc) for sc in result.chunks_used],
        citations=list(result.citations),
        nothing_relevant=bool(result.nothing_relevant),
        total_retrieved=result.total_retrieved,
        total_after_filter=result.total_after_filter,
        total_after_rank=result.total_after_rank,
        total_included=result.total_included,
        pipeline_ms=float(result.pipeline_ms),
        guard_passed=bool(result.guard_passed),
        cache_hit=bool(result.metadata.get("from_cache")),
        guard_warnings=[str(w) for w in result.guard_warnings],
        template=template,
        request_id=request_id,
        timings_ms=dict(timings_ms or {}),
    )
