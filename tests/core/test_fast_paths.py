"""The fast paths of a request give exactly what the straightforward code gives.

Each fast path (keyword sums by ``np.bincount``, one-pass fusion, the ranker's
lower-case memo, the filter's noise memo, hashes fetched per list) is
compared with a reference written the plain way: the term loop, the fusions
as first written (a generator of first places, one helper call per
candidate), ``min``/``max`` clamps, no memo.  Whole requests are compared too,
on random corpora and questions, in both profiles, with restricting filters
and metadata boosts: every score, every rank and the order must be equal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async.core import filtering, ranking
from zerda_async.core.index import KeywordIndex, keyword_index
from zerda_async.core.index.dense_sums import dense_coverage, dense_sums
from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import fusion, neighbours
from zerda_async.core.retrieval.script_evidence import foreign_evidence
from zerda_async.embedders import HashingEmbedder

WORDS = ["nile", "Nile", "river", "coffee", "PALM", "palm", "delta", "قهوة", "نخيل", "نهر", "the"]
EMBEDDER = HashingEmbedder(dim=16)
VECTOR, KEYWORD = RetrievalMethod.VECTOR, RetrievalMethod.KEYWORD
METADATA = RetrievalMethod.METADATA


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


# -- references: the plain code the fast paths replace ------------------------------------


def _first_places(results: Sequence[ScoredChunk]) -> Iterator[tuple[int, str, ScoredChunk]]:
    seen: set[str] = set()
    for rank, sc in enumerate(results, start=1):
        if sc.content_hash not in seen:
            seen.add(sc.content_hash)
            yield rank, sc.content_hash, sc


def _record(target: ScoredChunk, source: ScoredChunk, method: RetrievalMethod, rank: int) -> None:
    if method is VECTOR:
        target.vector_score, target.vector_rank = source.vector_score, rank
    elif method is KEYWORD:
        target.keyword_score, target.keyword_rank = source.keyword_score, rank
        target.query_coverage = source.query_coverage
    else:
        target.metadata_score, target.metadata_rank = source.metadata_score, rank


def ref_documented(
    lists: Sequence[fusion.MethodList], top_k: int, weights: Mapping[RetrievalMethod, float]
) -> list[ScoredChunk]:
    merged: dict[str, list[Any]] = {}
    for method, results in lists:
        for rank, key, sc in _first_places(results):
            if key not in merged:
                merged[key] = [sc, 1, 1 / (60 + rank)]
                continue
            entry = merged[key][0]
            field_name = {VECTOR: "vector_score", KEYWORD: "keyword_score"}.get(
                method, "metadata_score"
            )
            setattr(entry, field_name, getattr(sc, field_name))
            merged[key][1] += 1
            merged[key][2] += 1 / (60 + rank)
    scored = []
    for entry, methods, rrf in merged.values():
        composite = (
            weights[VECTOR] * entry.vector_score
            + weights[KEYWORD] * entry.keyword_score
            + weights[METADATA] * entry.metadata_score
        )
        if methods > 1:
            composite = composite + rrf
            entry.retrieval_method = RetrievalMethod.HYBRID
        scored.append((composite, entry))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    for rank, (composite, entry) in enumerate(scored[:top_k]):
        entry.retrieval_rank, entry.composite_score = rank, composite
    return [entry for _, entry in scored[:top_k]]


def _ref_evidence(method: RetrievalMethod, results: Sequence[ScoredChunk]) -> list[float]:
    if method is KEYWORD:
        return [
            sc.query_coverage if sc.query_coverage >= 0 else min(1.0, max(0.0, sc.keyword_score))
            for sc in results
        ]
    if method is VECTOR:
        if not results:
            return []
        best, last = results[0].vector_score, results[-1].vector_score
        if best - last <= 0:
            return [1.0] * len(results)
        return [min(1.0, max(0.0, (sc.vector_score - last) / (best - last))) for sc in results]
    return [min(1.0, max(0.0, sc.metadata_score)) for sc in results]


def _ref_raised(
    evidence: Sequence[float], candidates: Sequence[ScoredChunk], weight: float
) -> list[float]:
    places = [neighbours.place_of(sc) for sc in candidates]
    first: dict[Any, int] = {}
    for at, place in enumerate(places):
        if place is not None:
            first.setdefault(place, at)
    raised = list(evidence)
    for at, place in enumerate(places):
        if place is None or weight <= 0:
            continue
        near = [first.get((place[0], place[1] + d)) for d in (-1, 1)]
        best = max((evidence[i] for i in near if i is not None), default=evidence[at])
        if best > evidence[at]:
            raised[at] = evidence[at] + weight * (best - evidence[at])
    return raised


def ref_scored(
    lists: Sequence[fusion.MethodList],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    gain: Any,
    convex: bool,
) -> list[ScoredChunk]:
    """RRF (``convex`` false) or convex fusion as first written; ``gain(method, list, rank)``."""
    fused: dict[str, ScoredChunk] = {}
    methods: dict[str, int] = {}
    for method, results in lists:
        floor = results[-1].vector_score if results else 0.0
        for rank, key, sc in _first_places(results):
            entry = fused.get(key)
            if entry is None:
                entry = fused[key] = sc
                entry.fused_score = 0.0
                if convex:
                    entry.vector_margin = 0.0
                entry.vector_rank = entry.keyword_rank = entry.metadata_rank = 0
                if method is not KEYWORD:
                    entry.query_coverage = -1.0
                entry.retrieval_method = method
                methods[key] = 0
            _record(entry, sc, method, rank)
            if convex and method is VECTOR:
                entry.vector_margin = sc.vector_score - floor
            entry.fused_score += gain(method, results, rank)
            methods[key] += 1
    ordered = sorted(fused.values(), key=lambda sc: sc.fused_score, reverse=True)[:top_k]
    for position, entry in enumerate(ordered):
        if methods[entry.content_hash] > 1:
            entry.retrieval_method = RetrievalMethod.HYBRID
        entry.retrieval_rank, entry.composite_score = position, entry.fused_score
    return ordered


def ref_rrf(
    lists: Sequence[fusion.MethodList],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    k: int = 60,
) -> list[ScoredChunk]:
    return ref_scored(lists, top_k, weights, lambda m, _, r: weights[m] / (k + r), False)


def ref_convex(
    lists: Sequence[fusion.MethodList],
    top_k: int,
    weights: Mapping[RetrievalMethod, float],
    keyword_evidence: Sequence[float] | None = None,
    neighbour_weight: float = 0.0,
    *,
    cross_script: bool = False,
) -> list[ScoredChunk]:
    evidence: dict[RetrievalMethod, list[float]] = {}
    plain: dict[RetrievalMethod, list[float]] = {}
    found: dict[RetrievalMethod, Sequence[ScoredChunk]] = {}
    for method, results in lists:
        evidence[method] = plain[method] = _ref_evidence(method, results)
        found[method] = results
        if method is KEYWORD and keyword_evidence is not None:
            evidence[method] = list(keyword_evidence)
        elif method is VECTOR and neighbour_weight > 0:
            evidence[method] = _ref_raised(evidence[method], results, neighbour_weight)
    extra: list[float] | None = None
    if cross_script and VECTOR in found and KEYWORD in found:
        extra = foreign_evidence(found[VECTOR], plain[VECTOR], found[KEYWORD], evidence[KEYWORD])

    def gain(m: RetrievalMethod, _: Any, r: int) -> float:
        value = weights[m] * evidence[m][r - 1]
        if m is VECTOR and extra is not None and extra[r - 1] > 0:
            value += weights[KEYWORD] * extra[r - 1]
        return value

    return ref_scored(lists, top_k, weights, gain, True)


def ref_filter_noise(self: filtering.ChunkFilter, chunks: list[ScoredChunk]) -> list[ScoredChunk]:
    patterns = self._noise_res
    return [sc for sc in chunks if not any(p.match(sc.text.strip()) for p in patterns)]


def ref_keyword_share(self: ranking.CompositeRanker, text: str, keywords: Sequence[str]) -> float:
    return ranking.CompositeRanker._keyword_boost(text, keywords)


# -- unit comparisons ---------------------------------------------------------------------


@settings(max_examples=80)
@given(
    n=st.integers(1, 300),
    terms=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.integers(0, 300)), max_size=6),
)
def test_dense_sums_equal_the_term_loop(n: int, terms: list[tuple[int, int]]) -> None:
    postings: list[tuple[NDArray[np.int32], NDArray[np.float64]]] = []
    for seed, df in terms:
        rng = np.random.default_rng(seed)
        docs = np.sort(rng.choice(n, min(df, n), replace=False)).astype(np.int32)
        scale = float(rng.integers(1, 50))
        weights: NDArray[np.float64] = rng.random(size=len(docs)) * scale
        postings.append((docs, weights))
    expected = np.zeros(n)
    for held, added in postings:
        expected[held] += added
    got = dense_sums(postings, n)
    assert got.dtype == np.float64
    assert got.tobytes() == expected.tobytes()


@settings(max_examples=80)
@given(
    n=st.integers(1, 300),
    seed=st.integers(0, 2**31 - 1),
    terms=st.lists(st.tuples(st.floats(0.0, 9.0), st.integers(-1, 300)), max_size=6),
    picked=st.integers(0, 40),
)
def test_dense_coverage_equals_the_binary_searches(
    n: int, seed: int, terms: list[tuple[float, int]], picked: int
) -> None:
    rng = np.random.default_rng(seed)
    held: list[tuple[float, NDArray[np.int32] | None]] = []
    for idf, df in terms:
        docs = None if df < 0 else np.sort(rng.choice(n, min(df, n), replace=False))
        held.append((idf, None if docs is None else docs.astype(np.int32)))
    positions = rng.integers(0, n, size=picked)
    expected = keyword_index.query_coverage(held, positions)
    assert dense_coverage(held, positions, n).tobytes() == expected.tobytes()


def _random_docs(seed: int, n: int) -> list[Doc]:
    rng = np.random.default_rng(seed)
    docs = []
    for i in range(n):
        words = rng.choice(WORDS, size=int(rng.integers(1, 9))).tolist()
        source = f"s{int(rng.integers(0, 4))}"
        docs.append(Doc(f"d{i}", " ".join(words), {"source": source, "chunk": i % 7}))
    return docs


@pytest.mark.parametrize("seed", range(6))
def test_keyword_scores_equal_above_and_below_the_dense_cut(seed: int) -> None:
    docs = _random_docs(seed, 120)
    index = KeywordIndex.build([d.text for d in docs]).with_live(
        np.random.default_rng(seed).random(len(docs)) > 0.2
    )
    for query in ("nile river palm", "قهوة نخيل", "the the delta", "bm25 zebra"):
        terms = list(dict.fromkeys(index.analyzer.tokenize(query)))
        dense = index.scores(terms)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(keyword_index, "DENSE_SUMS_MAX", -1)
            looped = index.scores(terms)
        assert dense[0].tolist() == looped[0].tolist()
        assert dense[1].tobytes() == looped[1].tobytes()


def _lists(seed: int, depth: int) -> list[fusion.MethodList]:
    """Three method lists over a shared pool, with repeats within a list and tied scores."""
    rng = np.random.default_rng(seed)
    docs = _random_docs(seed, 30)
    lists: list[fusion.MethodList] = []
    for method in (VECTOR, KEYWORD, METADATA):
        picked = rng.integers(0, len(docs), size=int(rng.integers(0, depth + 1))).tolist()
        scores = sorted(np.round(rng.random(len(picked)), 1).tolist(), reverse=True)
        found = []
        for rank, (i, score) in enumerate(zip(picked, scores, strict=True)):
            sc = ScoredChunk(docs[i], retrieval_method=method, retrieval_rank=rank)
            if method is VECTOR:
                sc.vector_score = score
            elif method is KEYWORD:
                sc.keyword_score = score / (scores[0] or 1.0)
                sc.query_coverage = float(rng.random()) if rng.random() > 0.2 else -1.0
            else:
                sc.metadata_score = score
            found.append(sc)
        lists.append((method, found))
    return lists


def _fields(chunks: list[ScoredChunk]) -> list[tuple[Any, ...]]:
    return [msgspec.structs.astuple(sc) for sc in chunks]


@pytest.mark.parametrize("seed", range(40))
def test_fusions_equal_their_references(seed: int) -> None:
    weights = {VECTOR: 0.6, KEYWORD: 0.3, METADATA: 0.1}
    top_k = 1 + seed % 12
    cases: list[tuple[Any, Any, tuple[Any, ...]]] = [
        (fusion.fuse_documented, ref_documented, ()),
        (fusion.fuse_rrf, ref_rrf, (60,)),
        (fusion.fuse_rrf, ref_rrf, (5,)),
        (fusion.fuse_convex, ref_convex, (None, 0.0)),
        (fusion.fuse_convex, ref_convex, (None, 0.5)),
    ]
    for fast, reference, extra in cases:
        got = fast(_lists(seed, 20), top_k, weights, *extra)
        expected = reference(_lists(seed, 20), top_k, weights, *extra)
        assert _fields(got) == _fields(expected)
    keyword = len(_lists(seed, 20)[1][1])
    evidence = np.random.default_rng(seed).random(keyword).tolist()
    got = fusion.fuse_convex(_lists(seed, 20), top_k, weights, evidence, 0.5)
    expected = ref_convex(_lists(seed, 20), top_k, weights, evidence, 0.5)
    assert _fields(got) == _fields(expected)


def test_the_memos_give_the_plain_values_past_their_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ranking, "_LOWER_MEMO", 3)
    monkeypatch.setattr(filtering, "_NOISE_MEMO", 3)
    config = ContextEngineConfig()
    ranker = ranking.CompositeRanker(config)
    chunk_filter = filtering.ChunkFilter(config)
    texts = ["Page 3", "---", "The NILE river", "page 12 of the Nile", "قهوة النخيل", ""] * 3
    keywords = ["nile", "page", "قهوة"]
    for text in texts:
        assert ranker._keyword_share(text, keywords) == ranker._keyword_boost(text, keywords)
        chunks = [ScoredChunk(Doc("d", text))]
        assert chunk_filter._filter_noise(chunks) == ref_filter_noise(chunk_filter, chunks)


# -- whole requests -----------------------------------------------------------------------


def _run_all(recommended: bool, docs: list[Doc], runs: list[dict[str, Any]]) -> list[Any]:
    config = ContextEngineConfig.recommended() if recommended else ContextEngineConfig()
    config.cache.enabled = False
    config.retriever.use_metadata = True
    engine = ContextEngine(config).index(docs, embed_fn=EMBEDDER)
    out = []
    for run in runs:
        result = engine.run(**run)
        out.append((result.context, result.citations, _fields(result.chunks_used)))
    return out


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_docs=st.integers(5, 80),
    recommended=st.booleans(),
    queries=st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join),
            st.sampled_from([None, {"source": "s1"}, {"source": ["s0", "s2"]}]),
            st.sampled_from([None, {"source": "s3"}]),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_requests_equal_the_reference_paths(
    seed: int,
    n_docs: int,
    recommended: bool,
    queries: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]],
) -> None:
    docs = _random_docs(seed, n_docs)
    runs = [
        {"query": q, "filters": where, "metadata_filters": boost, "use_history": False}
        for q, where, boost in queries
    ]
    fast = _run_all(recommended, docs, runs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(keyword_index, "DENSE_SUMS_MAX", -1)
        patch.setattr(fusion, "fuse_documented", ref_documented)
        patch.setattr(fusion, "fuse_rrf", ref_rrf)
        patch.setattr(fusion, "fuse_convex", ref_convex)
        patch.setattr(filtering.ChunkFilter, "_filter_noise", ref_filter_noise)
        patch.setattr(ranking.CompositeRanker, "_keyword_share", ref_keyword_share)
        reference = _run_all(recommended, docs, runs)
    assert fast == reference
