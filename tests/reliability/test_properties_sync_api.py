"""Property-based and table tests of ``sync_api.ContextEngine`` on hostile input.

The facade must keep the documented behaviour, quirks included, so these
tests pin what it does with bad input rather than change it: every call
returns a result satisfying :func:`check_result`, or raises the documented
exception (the reference package's own, e.g. ``AttributeError`` for a
``None`` query) with a non-empty message.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.chunks import Chunk
from support.embedding import hashed_embedding

from sync_api import ContextEngine, ContextEngineConfig, SourceQuality
from sync_api.legacy_compat import validate_chunk

from .support import (
    check_budget,
    check_result,
    has_surrogate,
    hostile_chunks,
    hostile_text,
    mixed_text,
)

RUNS = settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
MANY_RUNS = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])

CORPUS = [
    Chunk("ml", "Machine learning is a field of artificial intelligence that learns from data.",
          {"source": "Textbook", "lang": "en"}),
    Chunk("rag", "Retrieval augmented generation adds retrieved documents to the prompt.",
          {"source": "Blog", "lang": "en"}),
    Chunk("ar", "التعلم الآلي هو فرع من فروع الذكاء الاصطناعي يركز على بناء أنظمة تتعلم.",
          {"source": "موسوعة", "lang": "ar"}),
    Chunk("bm25", "BM25 is a keyword ranking function based on term frequency and length.",
          {"source": "Paper", "lang": "en"}),
]  # fmt: skip


def _engine(
    *,
    cache: bool = True,
    template: str = "arabic",
    embed: bool = True,
    corpus: list[Any] | None = None,
    **config: Any,
) -> ContextEngine:
    cfg = ContextEngineConfig()
    cfg.cache.enabled = cache
    cfg.composer.template = template
    for key, value in config.items():
        section, field = key.split("__")
        setattr(getattr(cfg, section), field, value)
    engine = ContextEngine(cfg)
    engine.index(
        CORPUS if corpus is None else corpus,
        embed_fn=hashed_embedding if embed else None,
        source_quality_map={"Textbook": SourceQuality.HIGH},
    )
    return engine


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:
        return exc


# -- hostile corpora and queries ----------------------------------------------------------------


@MANY_RUNS
@given(
    corpus=hostile_chunks(),
    query=mixed_text(14),
    embed=st.booleans(),
    cache=st.booleans(),
    template=st.sampled_from(["arabic", "english", "minimal", "structured", "nonsense"]),
    max_chunks=st.sampled_from([None, 0, -3, 1, 5, 10**6]),
    budget=st.sampled_from([None, 0, -5, 1, 3, 50, 800, 10**9]),
    filters=st.sampled_from([None, {}, {"lang": "ar"}, {"source": "📚"}, {"n": 1.0}]),
)
def test_run_on_hostile_corpora_and_queries(
    corpus: list[Chunk],
    query: str,
    embed: bool,
    cache: bool,
    template: str,
    max_chunks: int | None,
    budget: int | None,
    filters: dict[str, Any] | None,
) -> None:
    config = ContextEngineConfig()
    config.cache.enabled = cache
    config.composer.template = template
    config.retriever.use_metadata = True
    engine = ContextEngine(config)
    surrogates = has_surrogate(query, *(c.text for c in corpus))
    indexed = _outcome(lambda: engine.index(corpus, embed_fn=hashed_embedding if embed else None))
    if isinstance(indexed, Exception):
        # The golden embedder encodes text as UTF-8: lone surrogates cannot be.
        assert surrogates and isinstance(indexed, UnicodeEncodeError), indexed
        return
    for _ in range(2):  # the second run may hit the cache
        outcome = _outcome(
            lambda: engine.run(query, filters, max_chunks=max_chunks, override_budget=budget)
        )
        if isinstance(outcome, Exception):
            # Documented: cache keys (MD5), content hashes (SHA-256) and the
            # golden embedder encode text as UTF-8.
            assert surrogates and isinstance(outcome, UnicodeEncodeError), repr(outcome)
            return
        check_result(outcome, corpus)
        event(f"chunks used: {min(len(outcome.chunks_used), 3)}")
        if budget and not outcome.metadata.get("from_cache"):
            # A cache hit reports the analyzer's budget (documented).
            assert outcome.query_analysis.context_budget == budget


@RUNS
@given(
    queries=st.lists(hostile_text(8), max_size=6),
    global_budget=st.sampled_from([None, 0, -10, 1, 2, 3, 40, 300, 5000]),
    weighted=st.booleans(),
)
def test_run_multi_respects_the_global_budget(
    queries: list[str], global_budget: int | None, weighted: bool
) -> None:
    engine = _engine(cache=False)
    outcome = _outcome(lambda: engine.run_multi(queries, global_budget, weighted))
    if isinstance(outcome, Exception):
        assert has_surrogate(*queries) and isinstance(outcome, UnicodeEncodeError), outcome
        return
    assert isinstance(outcome, str)
    if not queries:
        assert outcome == ""
    else:
        check_budget(outcome, global_budget or engine.config.composer.max_context_length)


@RUNS
@given(
    query=hostile_text(8),
    pairs=st.lists(st.tuples(hostile_text(8), st.floats(allow_nan=True)), max_size=10),
    max_length=st.sampled_from([None, 0, -1, 3, 100, 10**6]),
    target=st.integers(-5, 400),
)
def test_legacy_build_and_compress(
    query: str, pairs: list[tuple[str, float]], max_length: int | None, target: int
) -> None:
    engine = _engine(cache=False)
    tuples = [(Chunk(f"d{i}", t, {}), s) for i, (t, s) in enumerate(pairs)]
    outcome = _outcome(lambda: engine.build(query, tuples, max_length=max_length))
    if isinstance(outcome, Exception):
        assert isinstance(outcome, UnicodeEncodeError), outcome
        assert has_surrogate(*(t for t, _ in pairs))
        return
    assert isinstance(outcome, str)
    compressed = engine.compress_context(outcome, target)
    assert len(compressed) <= max(target, 3)


def test_an_empty_corpus_gives_the_placeholder() -> None:
    corpora: tuple[Any, ...] = (None, [], ())
    for corpus in corpora:
        engine = ContextEngine()
        engine.index(corpus)
        result = engine.run("What is machine learning?")
        check_result(result, [])
        assert result.chunks_used == [] and result.total_retrieved == 0


def test_a_huge_corpus() -> None:
    words = ["data", "model", "learning", "retrieval", "نموذج", "بيانات", "تعلم", "vector"]
    corpus = [
        Chunk(f"d{i}", f"Chunk {i}: " + " ".join(words[(i + j) % 8] for j in range(12)), {})
        for i in range(30_000)
    ]
    started = time.perf_counter()
    engine = ContextEngine().index(corpus)
    for query in ("What is a learning model?", "ما هو تعلم النموذج؟", "vector data", "zzz"):
        result = engine.run(query, max_chunks=10**6)
        check_result(result, corpus)
    assert time.perf_counter() - started < 60


@pytest.mark.parametrize(
    "section_field, value",
    [
        ("query_analyzer__budget_low", 0),
        ("query_analyzer__budget_low", -100),
        ("query_analyzer__budget_low", 10**12),
        ("retriever__top_k", 0),
        ("retriever__top_k", -5),
        ("retriever__top_k", 10**9),
        ("retriever__vector_weight", 1e308),
        ("retriever__keyword_weight", -1e6),
        ("ranking__max_chunks_to_rank", -2),
        ("ranking__max_chunks_to_rank", 10**9),
        ("ranking__weight_vector_score", 1e6),
        ("filter_cfg__min_chunk_length", 10**9),
        ("filter_cfg__max_chunk_length", -1),
        ("composer__max_context_length", 0),
        ("guard__min_context_length", 10**9),
        ("cache__max_size", 1),
    ],
)
def test_extreme_configuration_values(section_field: str, value: Any) -> None:
    engine = _engine(**{section_field: value})
    for query in ("What is machine learning?", "ما هو التعلم الآلي؟", "What is machine learning?"):
        result = engine.run(query)
        check_result(result, CORPUS)
    assert isinstance(engine.run_multi(["What is RAG?", "BM25?"]), str)


def test_the_facade_keeps_numpys_nan_propagation() -> None:
    """Documented behaviour kept: NaN embeddings give NaN vector scores, no error.

    (The async engine raises EmbeddingError instead; see RELIABILITY.md.)
    """
    engine = ContextEngine().index(CORPUS, embed_fn=lambda text: np.full(64, np.nan))
    result = engine.run("What is machine learning?")
    assert result.chunks_used
    assert all(math.isnan(sc.vector_score) for sc in result.chunks_used)


def test_the_facade_keeps_numpys_dimension_error() -> None:
    dims = iter([64] * len(CORPUS) + [7])

    def embed(text: str) -> Any:
        return np.ones(next(dims))

    engine = ContextEngine().index(CORPUS, embed_fn=embed)
    with pytest.raises(ValueError, match="mismatch"):
        engine.run("What is machine learning?")


# -- wrong types in every public argument ------------------------------------------------------

WRONG_RUN_ARGUMENTS: list[tuple[str, dict[str, Any], type[Exception] | None]] = [
    # (name, run() keywords, expected exception; None: a documented result)
    ("query None", {"query": None}, AttributeError),
    ("query int", {"query": 42}, AttributeError),
    ("query bytes", {"query": b"what is ml"}, AttributeError),  # the cache key first
    ("query list", {"query": ["what"]}, AttributeError),
    ("query empty", {"query": ""}, None),
    ("filters list", {"metadata_filters": ["lang"]}, AttributeError),
    ("filters str", {"metadata_filters": "lang=ar"}, AttributeError),
    ("filters mixed keys", {"metadata_filters": {1: "a", "b": 2}}, TypeError),
    ("filters unhashable value", {"metadata_filters": {"lang": ["ar"]}}, None),
    ("max_chunks str", {"max_chunks": "3"}, TypeError),
    ("max_chunks float", {"max_chunks": 2.5}, TypeError),
    ("max_chunks negative", {"max_chunks": -2}, None),
    ("max_chunks bool", {"max_chunks": True}, None),
    ("budget str", {"override_budget": "100"}, TypeError),
    ("budget float", {"override_budget": 120.5}, None),
    ("budget negative", {"override_budget": -7}, None),
    ("budget huge", {"override_budget": 10**30}, None),
    ("use_history str", {"use_history": "no"}, None),
    ("record_turn None", {"record_turn": None}, None),
]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [(kw, err) for _, kw, err in WRONG_RUN_ARGUMENTS],
    ids=[name for name, _, _ in WRONG_RUN_ARGUMENTS],
)
def test_wrong_types_in_run(kwargs: dict[str, Any], error: type[Exception] | None) -> None:
    engine = _engine()
    engine.config.retriever.use_metadata = True
    call = {"query": "What is machine learning?", **kwargs}
    if error is None:
        check_result(engine.run(**call), CORPUS)
    else:
        with pytest.raises(error) as caught:
            engine.run(**call)
        assert str(caught.value)
    # The failed call changed nothing that breaks the next one.
    check_result(engine.run("What is retrieval augmented generation?"), CORPUS)


def _quality_list(e: Any) -> Any:
    return WrongTypes().index(CORPUS, source_quality_map=["x"]).run("machine learning")


def _quality_names(e: Any) -> Any:
    quality = {"Textbook": "HIGH"}  # names, not SourceQuality members
    return WrongTypes().index(CORPUS, source_quality_map=quality).run("machine learning")


# Every call of this table passes a wrong type on purpose: the engine (and the
# ``e`` each call receives) are seen untyped here.
WrongTypes: Any = ContextEngine
WrongChunk: Any = Chunk
Call = Callable[[Any], Any]
WRONG_OTHER_ARGUMENTS: list[tuple[str, Call, type[Exception] | None]] = [
    ("constructor config str", lambda e: WrongTypes(config="x"), AttributeError),
    ("constructor analyzer int",
     lambda e: WrongTypes(query_analyzer=5).run("q"), AttributeError),
    ("index chunks str", lambda e: WrongTypes().index("abc").run("abc"), None),
    ("index chunk text None", lambda e: WrongTypes().index([WrongChunk("d", None)]).run("d"), None),
    ("index chunk no text at all", lambda e: WrongTypes().index([_NoText()]), AttributeError),
    ("index chunk text int", lambda e: WrongTypes().index([WrongChunk("d", 5)]), AttributeError),
    ("index embed_fn int", lambda e: WrongTypes().index(CORPUS, embed_fn=5), TypeError),
    ("index embed_fn raising",
     lambda e: WrongTypes().index(CORPUS, embed_fn=_boom), ConnectionError),
    ("index quality map list", _quality_list, AttributeError),
    ("index quality map str values", _quality_names, AttributeError),
    ("run_multi None", lambda e: e.run_multi(None), None),
    ("run_multi str", lambda e: e.run_multi("ab"), None),
    ("run_multi budget str", lambda e: e.run_multi(["q"], global_budget="9"), TypeError),
    ("build score str", lambda e: e.build("q", [(CORPUS[0], "high")]), ValueError),
    ("build score None", lambda e: e.build("q", [(CORPUS[0], None)]), TypeError),
    ("build pairs not tuples", lambda e: e.build("q", [CORPUS[0]]), TypeError),
    ("compress target str", lambda e: e.compress_context("some context", "5"), TypeError),
    ("compress context None", lambda e: e.compress_context(None, 5), None),
    ("stats context None", lambda e: e.get_context_stats(None), AttributeError),
    ("legacy validate_chunk", lambda e: validate_chunk(WrongChunk(5, "t")), TypeError),
]  # fmt: skip


class _NoText:
    """``text`` falsy and ``page_content`` None: the documented AttributeError."""

    doc_id = "d"
    text = None
    page_content = None


def _boom(text: str) -> Any:
    raise ConnectionError("embedding service down")


@pytest.mark.parametrize(
    ("call", "error"),
    [(call, err) for _, call, err in WRONG_OTHER_ARGUMENTS],
    ids=[name for name, _, _ in WRONG_OTHER_ARGUMENTS],
)
def test_wrong_types_elsewhere(
    call: Callable[[ContextEngine], Any], error: type[Exception] | None
) -> None:
    engine = _engine()
    if error is None:
        call(engine)
    else:
        with pytest.raises(error) as caught:
            call(engine)
        assert str(caught.value)
