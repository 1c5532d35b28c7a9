"""Tests of the retrieval layer against a plain-Python model of spec section B."""

from __future__ import annotations

import hashlib
import math
import random
import re
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from support.chunks import bare_chunk

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.models import RetrievalMethod, ScoredChunk, SourceQuality
from zerda_async.core.retrieval import (
    BM25_B,
    BM25_K1,
    RRF_K,
    TOKEN_PATTERN,
    HybridRetriever,
    KeywordRetriever,
    MetadataRetriever,
    VectorRetriever,
    tokenize,
)
from zerda_async.core.strategy import HybridRetrieverStrategy

# ─── shared helpers ──────────────────────────────────────────────────────────

EMBED_DIM = 64
_EMBED_TOKEN_RE = re.compile(r"\w+")


def deterministic_embed(text: Any) -> NDArray[np.float64]:
    """The golden cases' DETERMINISTIC_EMBED (feature hashing into 64 dims, L2-normalised)."""
    vec = np.zeros(EMBED_DIM, dtype=np.float64)
    for tok in _EMBED_TOKEN_RE.findall(str(text or "").lower()):
        h = hashlib.md5(tok.encode("utf-8")).digest()
        idx = int.from_bytes(h[0:4], "little") % EMBED_DIM
        weight = 0.5 + int.from_bytes(h[4:6], "little") / 65535.0
        vec[idx] += weight if (h[6] & 1) == 0 else -weight
    n = float(np.linalg.norm(vec))
    return vec / n if n > 0 else vec


def cfg_with(**retriever: Any) -> ContextEngineConfig:
    cfg = ContextEngineConfig()
    for key, value in retriever.items():
        setattr(cfg.retriever, key, value)
    return cfg


WORDS = [
    "machine",
    "learning",
    "deep",
    "neural",
    "network",
    "data",
    "model",
    "vector",
    "search",
    "python",
    "a",
    "x1",
    "42",
    "التعلم",
    "الآلي",
    "الالي",
    "البيانات",
    "الذكاء",
    "الاصطناعي",
    "نموذج",
    "شبكة",
    "الآلي؟",
    "١٩٠٨",
]


def random_text(rng: random.Random, max_words: int = 12) -> str:
    n = rng.randint(0, max_words)
    words = [rng.choice(WORDS) for _ in range(n)]
    if words and rng.random() < 0.3:
        words[0] = words[0].upper()
    return rng.choice([" ", "  ", "\n"]).join(words)


def random_corpus(rng: random.Random, n: int) -> list[Any]:
    chunks: list[Any] = []
    for i in range(n):
        if chunks and rng.random() < 0.15:
            # Duplicate text, sometimes with different case/whitespace: same content hash.
            base = rng.choice(chunks)
            text = ref_text(base)
            if rng.random() < 0.5:
                text = "  " + str(text).upper() + " "
            chunks.append(bare_chunk(doc_id=f"d{i}", text=text))
        elif rng.random() < 0.1:
            chunks.append(bare_chunk(doc_id=f"d{i}", text="", page_content=random_text(rng)))
        else:
            chunks.append(bare_chunk(doc_id=f"d{i}", text=random_text(rng)))
    return chunks


# ─── reference model of section B (plain Python) ─────────────────────────────

Row = tuple[int, float, int, RetrievalMethod]


def ref_tokenize(s: str) -> list[str]:
    return re.findall(r"[\w\u0600-\u06FF]{2,}", s.lower())


def ref_text(chunk: Any) -> Any:
    value = getattr(chunk, "text", None)
    if value:
        return value
    return getattr(chunk, "page_content", "")


def ref_meta(chunk: Any) -> Any:
    return getattr(chunk, "metadata", None) or {}


class RefKeyword:
    def __init__(self, chunks: Sequence[Any]) -> None:
        self.chunks = list(chunks)
        self.tfs = [Counter(ref_tokenize(ref_text(c))) for c in self.chunks]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.n = len(self.chunks)
        self.avgdl = sum(self.lens) / self.n if self.n else 0
        self.df: Counter[str] = Counter()
        for tf in self.tfs:
            self.df.update(tf.keys())

    def retrieve(self, query: str, top_k: Any) -> list[tuple[int, float, int]]:
        terms = list(dict.fromkeys(ref_tokenize(query)))
        if not terms or self.n == 0:
            return []
        k1, b = 1.5, 0.75
        scored: list[tuple[int, float]] = []
        for i, tf in enumerate(self.tfs):
            score = 0.0
            for t in terms:
                f = tf.get(t, 0)
                if f > 0:
                    df = self.df[t]
                    idf = math.log(1 + (self.n - df + 0.5) / (df + 0.5))
                    ratio = b * self.lens[i] / self.avgdl if self.avgdl else 0
                    score += idf * f * (k1 + 1) / (f + k1 * (1 - b + ratio))
            if score > 0:
                scored.append((i, score))
        scored = sorted(scored, key=lambda p: p[1], reverse=True)[:top_k]
        if not scored:
            return []
        top = scored[0][1]
        return [(i, s / top, r) for r, (i, s) in enumerate(scored)]


def ref_vector(
    embeddings: Sequence[NDArray[np.float64]],
    query_vec: NDArray[np.float64],
    top_k: Any,
    min_score: float,
) -> list[tuple[int, float, int]]:
    q = np.asarray(query_vec, dtype=float).flatten()
    sims = []
    for e in embeddings:
        denom = np.linalg.norm(q) * np.linalg.norm(e)
        sims.append(float(np.dot(q, e) / denom) if denom != 0 else 0.0)
    rounded = np.round(np.array(sims, dtype=np.float64), 12).tolist()
    order = sorted(range(len(rounded)), key=lambda i: rounded[i], reverse=True)[:top_k]
    kept = [(i, rounded[i]) for i in order if not rounded[i] < min_score]
    return [(i, s, r) for r, (i, s) in enumerate(kept)]


def ref_metadata(chunks: Sequence[Any], filters: Any, top_k: Any) -> list[tuple[int, float, int]]:
    if not filters:
        return []
    scored = []
    for i, c in enumerate(chunks):
        meta = ref_meta(c)
        matches = sum(1 for k, v in filters.items() if k in meta and meta[k] == v)
        score = matches / len(filters)
        if score > 0:
            scored.append((i, score))
    scored = sorted(scored, key=lambda p: p[1], reverse=True)[:top_k]
    return [(i, s, r) for r, (i, s) in enumerate(scored)]


def ref_hybrid(
    cfg: ContextEngineConfig,
    chunks: Sequence[Any],
    embeddings: Sequence[NDArray[np.float64]] | None,
    query: str,
    top_k: Any,
    filters: Any,
) -> list[tuple[int, float, int, RetrievalMethod, float, float, float]]:
    rc = cfg.retriever
    k = top_k or rc.top_k
    eff = {**rc.metadata_filters, **(filters or {})}
    lists: list[tuple[str, list[tuple[int, float, int]]]] = []
    if rc.use_vector and embeddings is not None:
        qv = deterministic_embed(query)
        lists.append(("vector", ref_vector(embeddings, qv, k, rc.min_vector_score)))
    if rc.use_keyword:
        lists.append(("keyword", RefKeyword(chunks).retrieve(query, k)))
    if rc.use_metadata and eff:
        lists.append(("metadata", ref_metadata(chunks, eff, k)))

    def norm_hash(i: int) -> str:
        return " ".join(str(ref_text(chunks[i])).lower().split())

    merged: dict[str, dict[str, Any]] = {}
    for method, results in lists:
        seen: set[str] = set()
        for rank1, (i, score, _r) in enumerate(results, start=1):
            h = norm_hash(i)
            if h in seen:
                continue
            seen.add(h)
            if h not in merged:
                merged[h] = {
                    "doc": i,
                    "scores": {"vector": 0.0, "keyword": 0.0, "metadata": 0.0},
                    "methods": [method],
                    "rrf": 1 / (60 + rank1),
                }
                merged[h]["scores"][method] = score
            else:
                merged[h]["scores"][method] = score
                merged[h]["methods"].append(method)
                merged[h]["rrf"] += 1 / (60 + rank1)
    rows = []
    for entry in merged.values():
        s = entry["scores"]
        weighted = (
            rc.vector_weight * s["vector"]
            + rc.keyword_weight * s["keyword"]
            + rc.metadata_weight * s["metadata"]
        )
        if len(entry["methods"]) > 1:
            composite = weighted + entry["rrf"]
            final_method = RetrievalMethod.HYBRID
        else:
            composite = weighted
            final_method = RetrievalMethod(entry["methods"][0])
        rows.append(
            (entry["doc"], composite, final_method, s["vector"], s["keyword"], s["metadata"])
        )
    rows = sorted(rows, key=lambda r: r[1], reverse=True)[:k]
    return [(d, c, rank, m, v, kw, md) for rank, (d, c, m, v, kw, md) in enumerate(rows)]


def index_of(chunks: Sequence[Any], results: Sequence[ScoredChunk]) -> list[int]:
    ids = {id(c): i for i, c in enumerate(chunks)}
    return [ids[id(sc.chunk)] for sc in results]


TOP_KS: list[Any] = [None, 0, 1, 2, 3, 5, 10, 1000, -1, -3]


# ─── tokenize ────────────────────────────────────────────────────────────────


def test_tokenize_pattern_is_the_documented_regex() -> None:
    assert TOKEN_PATTERN.pattern == r"[\w\u0600-\u06FF]{2,}"


def test_tokenize_lowercases_and_drops_single_characters() -> None:
    assert tokenize("Hello, World! a ab X1 _x 7 42") == ["hello", "world", "ab", "x1", "_x", "42"]


def test_tokenize_arabic_keeps_hamza_diacritics_and_question_mark() -> None:
    # U+061F (Arabic question mark) and the diacritics lie in U+0600–U+06FF.
    assert tokenize("ما هو التعلم الآلي؟") == ["ما", "هو", "التعلم", "الآلي؟"]
    assert tokenize("التَّعَلُّمُ") == ["التَّعَلُّمُ"]
    assert tokenize("تأسست عام ١٩٠٨") == ["تأسست", "عام", "١٩٠٨"]


def test_tokenize_keeps_duplicates_and_order() -> None:
    assert tokenize("data Data DATA model") == ["data", "data", "data", "model"]


def test_tokenize_empty_and_punctuation_only() -> None:
    assert tokenize("") == []
    assert tokenize("?! . , - a") == []


def test_tokenize_none_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'lower'"):
        tokenize(None)  # type: ignore[arg-type]


# ─── keyword (BM25) ──────────────────────────────────────────────────────────


def test_bm25_constants() -> None:
    assert (BM25_K1, BM25_B) == (1.5, 0.75)


def test_keyword_worked_example_reconstructed() -> None:
    chunks = [
        bare_chunk(doc_id="a", text="machine learning learns from data"),
        bare_chunk(doc_id="b", text="deep learning uses neural networks"),
        bare_chunk(doc_id="c", text="cooking recipes"),
    ]
    kw = KeywordRetriever(ContextEngineConfig(), chunks=chunks)
    out = kw.retrieve("machine learning", 10)
    assert [sc.chunk.doc_id for sc in out] == ["a", "b"]
    n, avgdl = 3, 12 / 3
    idf_machine = math.log(1 + (n - 1 + 0.5) / (1 + 0.5))
    idf_learning = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    norm_a = 1.5 * (1 - 0.75 + 0.75 * 5 / avgdl)
    norm_b = 1.5 * (1 - 0.75 + 0.75 * 5 / avgdl)
    s_a = idf_machine * 1 * 2.5 / (1 + norm_a) + idf_learning * 1 * 2.5 / (1 + norm_a)
    s_b = idf_learning * 1 * 2.5 / (1 + norm_b)
    assert out[0].keyword_score == 1.0
    assert out[1].keyword_score == s_b / s_a
    assert [sc.retrieval_rank for sc in out] == [0, 1]
    assert all(sc.retrieval_method is RetrievalMethod.KEYWORD for sc in out)
    assert all(sc.vector_score == 0.0 and sc.metadata_score == 0.0 for sc in out)
    assert all(sc.source_quality is SourceQuality.UNKNOWN for sc in out)


@pytest.mark.parametrize("seed", range(8))
def test_keyword_matches_reference_random_corpora_reconstructed(seed: int) -> None:
    rng = random.Random(seed)
    chunks = random_corpus(rng, rng.randint(1, 60))
    kw = KeywordRetriever(ContextEngineConfig(), chunks=chunks)
    ref = RefKeyword(chunks)
    for _ in range(25):
        query = random_text(rng, 5)
        for top_k in TOP_KS:
            got = kw.retrieve(query, top_k)
            expected = ref.retrieve(query, top_k)
            assert [
                (i, sc.keyword_score, sc.retrieval_rank)
                for i, sc in zip(index_of(chunks, got), got, strict=True)
            ] == expected


def test_keyword_large_corpus_ties_at_cut_resolve_to_lower_indices_reconstructed() -> None:
    rng = random.Random(7)
    # Few distinct texts over many documents: huge tie groups straddle every cut.
    pool = [random_text(rng, 6) or "data" for _ in range(12)]
    chunks = [bare_chunk(doc_id=str(i), text=rng.choice(pool)) for i in range(6000)]
    kw = KeywordRetriever(ContextEngineConfig(), chunks=chunks)
    ref = RefKeyword(chunks)
    for query in ["data model", "التعلم الآلي", "machine learning vector", "x1 42 search"]:
        top_ks: list[Any] = [1, 7, 20, 100, 1499, 3000, None, -5]
        for top_k in top_ks:
            got = kw.retrieve(query, top_k)
            expected = ref.retrieve(query, top_k)
            assert [
                (i, sc.keyword_score, sc.retrieval_rank)
                for i, sc in zip(index_of(chunks, got), got, strict=True)
            ] == expected


def test_keyword_scores_are_bit_identical_to_per_document_formula_reconstructed() -> None:
    rng = random.Random(99)
    chunks = random_corpus(rng, 300)
    kw = KeywordRetriever(ContextEngineConfig(), chunks=chunks)
    ref = RefKeyword(chunks)
    query = "machine learning data التعلم الآلي model"
    got = kw.retrieve(query, None)  # type: ignore[arg-type]
    expected = ref.retrieve(query, None)
    assert [sc.keyword_score for sc in got] == [s for _, s, _ in expected]
    assert all(0.0 < sc.keyword_score <= 1.0 for sc in got)


def test_keyword_query_without_tokens_returns_empty() -> None:
    kw = KeywordRetriever(ContextEngineConfig(), chunks=[bare_chunk(text="data model")])
    assert kw.retrieve("", 5) == []
    assert kw.retrieve("? ! a b", 5) == []
    assert kw.retrieve("unknownterm", 5) == []


def test_keyword_empty_corpus_returns_empty() -> None:
    assert KeywordRetriever(ContextEngineConfig()).retrieve("data", 5) == []
    assert KeywordRetriever(ContextEngineConfig(), chunks=[]).retrieve("data", 5) == []
    assert KeywordRetriever(ContextEngineConfig(), chunks=None).chunks == []
    no_tokens = KeywordRetriever(
        ContextEngineConfig(), chunks=[bare_chunk(text="? !"), bare_chunk()]
    )
    assert no_tokens.retrieve("data", 5) == []


def test_keyword_index_chunks_replaces_the_index() -> None:
    kw = KeywordRetriever(ContextEngineConfig(), chunks=[bare_chunk(text="alpha beta")])
    replacement = [bare_chunk(text="gamma delta")]
    kw.index_chunks(replacement)
    assert kw.retrieve("alpha", 5) == []
    out = kw.retrieve("gamma", 5)
    assert [sc.chunk for sc in out] == replacement
    assert kw.chunks == replacement


def test_keyword_reads_page_content_and_returns_original_objects() -> None:
    doc = bare_chunk(text="", page_content="Vector search with embeddings")
    kw = KeywordRetriever(ContextEngineConfig(), chunks=[doc])
    first = kw.retrieve("vector", 1)
    second = kw.retrieve("vector", 1)
    assert first[0].chunk is doc and second[0].chunk is doc
    assert first[0] is not second[0]
    first[0].source_quality = SourceQuality.HIGH
    assert second[0].source_quality is SourceQuality.UNKNOWN


def test_keyword_top_k_python_slice_semantics() -> None:
    chunks = [bare_chunk(text=f"data {'data ' * i}") for i in range(5)]
    kw = KeywordRetriever(ContextEngineConfig(), chunks=chunks)
    assert len(kw.retrieve("data", 0)) == 0
    assert len(kw.retrieve("data", -2)) == 3
    assert len(kw.retrieve("data", -10)) == 0
    assert len(kw.retrieve("data", None)) == 5  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="slice indices must be integers"):
        kw.retrieve("data", 2.5)  # type: ignore[arg-type]


def test_keyword_bad_inputs() -> None:
    kw = KeywordRetriever(ContextEngineConfig(), chunks=[bare_chunk(text="data")])
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'lower'"):
        kw.retrieve(None, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
        kw.index_chunks(None)  # type: ignore[arg-type]
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'lower'"):
        kw.index_chunks([bare_chunk(text=None, page_content=None)])
    # A failed rebuild leaves the previous index in place.
    assert [sc.chunk.text for sc in kw.retrieve("data", 5)] == ["data"]


def test_keyword_huge_document_and_repeated_query_terms() -> None:
    big = bare_chunk(text="data " * 50_000 + "model")
    small = bare_chunk(text="model data")
    kw = KeywordRetriever(ContextEngineConfig(), chunks=[big, small])
    ref = RefKeyword([big, small])
    got = kw.retrieve("model model data DATA", 5)
    expected = ref.retrieve("model model data DATA", 5)
    assert [
        (i, sc.keyword_score) for i, sc in zip(index_of([big, small], got), got, strict=True)
    ] == [(i, s) for i, s, _ in expected]


# ─── vector ──────────────────────────────────────────────────────────────────


def vec_rows(chunks: Sequence[Any], results: Sequence[ScoredChunk]) -> list[tuple[int, int]]:
    return [
        (i, sc.retrieval_rank) for i, sc in zip(index_of(chunks, results), results, strict=True)
    ]


def assert_vector_matches(
    chunks: Sequence[Any],
    got: Sequence[ScoredChunk],
    expected: Sequence[tuple[int, float, int]],
) -> None:
    assert vec_rows(chunks, got) == [(i, r) for i, _, r in expected]
    for sc, (_, score, _) in zip(got, expected, strict=True):
        # Pre-normalised rows differ from per-row division by ~1e-16 before rounding.
        assert abs(sc.vector_score - score) <= 1.5e-12
        assert sc.retrieval_method is RetrievalMethod.VECTOR


@pytest.mark.parametrize("seed", range(6))
def test_vector_matches_reference_random_embeddings_reconstructed(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, dim = int(rng.integers(1, 80)), int(rng.integers(1, 9))
    base = rng.normal(size=(n, dim))
    # Identical rows (ties), scaled copies (equal cosine) and zero rows.
    for i in range(n):
        r = rng.random()
        if r < 0.2 and i > 0:
            base[i] = base[int(rng.integers(0, i))]
        elif r < 0.3 and i > 0:
            base[i] = base[int(rng.integers(0, i))] * 3.0
        elif r < 0.4:
            base[i] = 0.0
    chunks = [bare_chunk(doc_id=f"v{i}", text=f"chunk {i}") for i in range(n)]
    table = {f"chunk {i}": base[i] for i in range(n)}
    queries = [rng.normal(size=dim) for _ in range(6)] + [base[0], np.zeros(dim)]

    def embed(text: Any) -> NDArray[np.float64]:
        vec: NDArray[np.float64] = table[text] if text in table else queries[int(text)]
        return vec

    for min_score in (0.0, 0.3, -1.0):
        cfg = cfg_with(min_vector_score=min_score)
        vr = VectorRetriever(cfg)
        vr.index_chunks(chunks, embed)
        for qi in range(len(queries)):
            for top_k in TOP_KS:
                got = vr.retrieve(str(qi), top_k)
                expected = ref_vector(list(base), queries[qi], top_k, min_score)
                assert_vector_matches(chunks, got, expected)


def test_vector_deterministic_embed_texts_reconstructed() -> None:
    rng = random.Random(3)
    chunks = random_corpus(rng, 120)
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks(chunks, deterministic_embed)
    embeddings = [deterministic_embed(ref_text(c)) for c in chunks]
    for _ in range(20):
        query = random_text(rng, 6)
        for top_k in (1, 5, 20, None):
            got = vr.retrieve(query, top_k)  # type: ignore[arg-type]
            expected = ref_vector(embeddings, deterministic_embed(query), top_k, 0.0)
            assert_vector_matches(chunks, got, expected)


def test_vector_identical_embeddings_tie_exactly_in_index_order() -> None:
    vec = np.array([0.1, 0.7, 0.3])
    chunks = [bare_chunk(text=f"t{i}") for i in range(5)]
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks(chunks, lambda t: vec if t != "q" else np.array([0.3, 0.2, 0.9]))
    out = vr.retrieve("q", 3)
    assert [sc.chunk for sc in out] == chunks[:3]
    assert len({sc.vector_score for sc in out}) == 1
    assert [sc.retrieval_rank for sc in out] == [0, 1, 2]


def test_vector_large_index_ties_at_cut_reconstructed() -> None:
    rng = np.random.default_rng(11)
    base = rng.normal(size=(8, 16))
    picks = rng.integers(0, 8, size=5000)
    chunks = [bare_chunk(text=f"c{i}") for i in range(5000)]
    table = {f"c{i}": base[p] for i, p in enumerate(picks)}
    query = rng.normal(size=16)
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks(chunks, lambda t: table.get(t, query))
    embeddings = [base[p] for p in picks]
    for top_k in (1, 17, 640, 1200, 4999, -7):
        got = vr.retrieve("query", top_k)
        expected = ref_vector(embeddings, query, top_k, 0.0)
        assert_vector_matches(chunks, got, expected)


def test_vector_zero_query_and_zero_rows_score_zero() -> None:
    chunks = [bare_chunk(text="a"), bare_chunk(text="b")]
    table = {"a": np.array([1.0, 0.0]), "b": np.zeros(2), "q": np.zeros(2)}
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks(chunks, table.__getitem__)
    out = vr.retrieve("q", 5)
    assert [sc.chunk for sc in out] == chunks
    assert [sc.vector_score for sc in out] == [0.0, 0.0]
    vr.cfg.min_vector_score = 0.01
    assert vr.retrieve("q", 5) == []


def test_vector_min_score_is_inclusive_and_read_live() -> None:
    chunks = [bare_chunk(text="a"), bare_chunk(text="b")]
    table = {"a": np.array([1.0, 0.0]), "b": np.array([0.0, 1.0]), "q": np.array([1.0, 0.0])}
    cfg = ContextEngineConfig()
    vr = VectorRetriever(cfg)
    vr.index_chunks(chunks, table.__getitem__)
    assert [sc.vector_score for sc in vr.retrieve("q", 5)] == [1.0, 0.0]
    cfg.retriever.min_vector_score = 1.0
    assert [sc.chunk for sc in vr.retrieve("q", 5)] == [chunks[0]]


def test_vector_batch_embed_fn_gives_the_same_result() -> None:
    rng = random.Random(5)
    chunks = random_corpus(rng, 50)
    calls: list[int] = []

    def batch(texts: list[Any]) -> NDArray[np.float64]:
        calls.append(len(texts))
        return np.stack([deterministic_embed(t) for t in texts])

    per_text = VectorRetriever(ContextEngineConfig())
    per_text.index_chunks(chunks, deterministic_embed)
    batched = VectorRetriever(ContextEngineConfig())
    batched.index_chunks(chunks, deterministic_embed, batch_embed_fn=batch)
    batch_only = VectorRetriever(ContextEngineConfig())
    batch_only.index_chunks(chunks, None, batch_embed_fn=batch)
    assert calls == [50, 50]
    for query in ("machine learning", "التعلم الآلي", "data"):
        a = [(sc.chunk, sc.vector_score) for sc in per_text.retrieve(query, 10)]
        assert a == [(sc.chunk, sc.vector_score) for sc in batched.retrieve(query, 10)]
        assert a == [(sc.chunk, sc.vector_score) for sc in batch_only.retrieve(query, 10)]


def test_vector_batch_embed_fn_row_count_mismatch_raises() -> None:
    vr = VectorRetriever(ContextEngineConfig())
    with pytest.raises(ValueError, match="batch_embed_fn: expected 2 vectors, got 1"):
        vr.index_chunks(
            [bare_chunk(text="a"), bare_chunk(text="b")],
            None,
            batch_embed_fn=lambda t: np.ones((1, 3)),
        )


def test_vector_index_vectors_and_query_vector_match_index_chunks() -> None:
    rng = random.Random(8)
    chunks = random_corpus(rng, 60)
    matrix = [deterministic_embed(ref_text(c)) for c in chunks]
    reference = VectorRetriever(ContextEngineConfig())
    reference.index_chunks(chunks, deterministic_embed)
    with_fn = VectorRetriever(ContextEngineConfig())
    with_fn.index_vectors(chunks, matrix, deterministic_embed)
    vectors_only = VectorRetriever(ContextEngineConfig())
    vectors_only.index_vectors(chunks, np.stack(matrix))
    for query in ("machine learning", "التعلم الآلي", "data model"):
        expected = [(sc.chunk, sc.vector_score) for sc in reference.retrieve(query, 7)]
        assert [(sc.chunk, sc.vector_score) for sc in with_fn.retrieve(query, 7)] == expected
        qv = deterministic_embed(query)
        got = vectors_only.retrieve(query, 7, query_vector=qv)
        assert [(sc.chunk, sc.vector_score) for sc in got] == expected
    with pytest.raises(ValueError, match="no query embedding: pass query_vector"):
        vectors_only.retrieve("data", 3)


def test_vector_index_vectors_bad_shapes() -> None:
    vr = VectorRetriever(ContextEngineConfig())
    with pytest.raises(ValueError, match="vectors: expected 2 vectors, got 3"):
        vr.index_vectors([bare_chunk(text="a"), bare_chunk(text="b")], np.ones((3, 4)))
    with pytest.raises(ValueError, match="vectors: expected 1 vectors, got 0"):
        vr.index_vectors([bare_chunk(text="a")], 1.0)
    vr.index_vectors([], None)  # type: ignore[arg-type]
    assert vr.retrieve("q", 3, query_vector=np.ones(4)) == []


def test_vector_embedding_errors_propagate_and_keep_old_index() -> None:
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks([bare_chunk(text="data")], deterministic_embed)

    def failing(text: Any) -> NDArray[np.float64]:
        raise RuntimeError("embedding service down")

    with pytest.raises(RuntimeError, match="embedding service down"):
        vr.index_chunks([bare_chunk(text="x")], failing)
    dims = {"a": np.ones(3), "b": np.ones(4)}
    with pytest.raises(ValueError):
        vr.index_chunks([bare_chunk(text="a"), bare_chunk(text="b")], dims.__getitem__)
    with pytest.raises(TypeError, match="'NoneType' object is not callable"):
        vr.index_chunks([bare_chunk(text="a")], None)
    assert [sc.chunk.text for sc in vr.retrieve("data", 5)] == ["data"]


def test_vector_query_dimension_mismatch_raises() -> None:
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks([bare_chunk(text="a")], lambda t: np.ones(3) if t == "a" else np.ones(2))
    with pytest.raises(ValueError):
        vr.retrieve("q", 5)


def test_vector_without_backend_or_with_empty_index_returns_empty() -> None:
    vr = VectorRetriever(ContextEngineConfig())
    assert vr.retrieve("anything", 5) == []
    vr.index_chunks([], deterministic_embed)
    assert vr.retrieve("anything", 5) == []
    assert vr.chunks == []


def test_vector_accepts_column_and_2d_embeddings_flattened() -> None:
    vr = VectorRetriever(ContextEngineConfig())
    vr.index_chunks(
        [bare_chunk(text="a")], lambda t: [[1.0], [2.0]] if t == "a" else np.array([[1.0, 2.0]])
    )
    assert [sc.vector_score for sc in vr.retrieve("q", 1)] == [1.0]


class FakeAdapter:
    """LangChain-style store: records calls, returns canned (document, score) pairs."""

    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        self.pairs = pairs
        self.calls: list[tuple[str, Any]] = []

    def similarity_search_with_score(self, query: str, k: Any) -> list[tuple[Any, Any]]:
        self.calls.append((query, k))
        return self.pairs


class FakeVectorDb:
    def __init__(self, pairs: list[tuple[Any, Any]]) -> None:
        self.pairs = pairs
        self.calls: list[tuple[str, Any]] = []

    def search(self, query: str, top_k: Any) -> list[tuple[Any, Any]]:
        self.calls.append((query, top_k))
        return self.pairs


def test_vector_adapter_scores_used_as_returned_reconstructed() -> None:
    docs = [bare_chunk(page_content=f"doc {i}") for i in range(4)]
    # Distances, unsorted, some negative: passed through untouched except the min cut.
    adapter = FakeAdapter(
        [(docs[0], 0.9), (docs[1], np.float32(1.5)), (docs[2], -0.2), (docs[3], 0.0)]
    )
    vr = VectorRetriever(ContextEngineConfig(), vector_store_adapter=adapter)
    vr.index_chunks([bare_chunk(text="ignored")], deterministic_embed)
    out = vr.retrieve("query", 7)
    assert adapter.calls == [("query", 7)]
    assert [sc.chunk for sc in out] == [docs[0], docs[1], docs[3]]
    assert [sc.vector_score for sc in out] == [0.9, 1.5, 0.0]
    assert all(type(sc.vector_score) is float for sc in out)
    assert [sc.retrieval_rank for sc in out] == [0, 1, 2]


def test_vector_db_has_priority_over_adapter_reconstructed() -> None:
    doc = bare_chunk(text="from db")
    db = FakeVectorDb([(doc, 0.5)])
    adapter = FakeAdapter([(bare_chunk(text="from adapter"), 0.9)])
    vr = VectorRetriever(ContextEngineConfig(), vector_store_adapter=adapter, vector_db=db)
    out = vr.retrieve("q", 3)
    assert db.calls == [("q", 3)] and adapter.calls == []
    assert [(sc.chunk, sc.vector_score) for sc in out] == [(doc, 0.5)]


def test_vector_adapter_returning_empty_and_bad_pairs() -> None:
    assert VectorRetriever(ContextEngineConfig(), FakeAdapter([])).retrieve("q", 3) == []
    bad = VectorRetriever(ContextEngineConfig(), FakeAdapter([(bare_chunk(text="x"),)]))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="not enough values to unpack"):
        bad.retrieve("q", 3)


# ─── metadata ────────────────────────────────────────────────────────────────


def metadata_corpus(rng: random.Random, n: int) -> list[Any]:
    values: list[Any] = [
        "en",
        "ar",
        1,
        1.0,
        True,
        0,
        False,
        None,
        2020,
        2020.0,
        "2020",
        [1, 2],
        {"$gte": 3},
        (1, 2),
        float("nan"),
        b"en",
    ]
    chunks: list[Any] = []
    for i in range(n):
        r = rng.random()
        if r < 0.1:
            chunks.append(bare_chunk(text=f"t{i}"))
        elif r < 0.15:
            chunks.append(bare_chunk(text=f"t{i}", metadata=None))
        else:
            meta = {k: rng.choice(values) for k in ("lang", "year", "tag") if rng.random() < 0.7}
            chunks.append(bare_chunk(text=f"t{i}", metadata=meta))
    return chunks


@pytest.mark.parametrize("seed", range(6))
def test_metadata_matches_reference_reconstructed(seed: int) -> None:
    rng = random.Random(seed)
    chunks = metadata_corpus(rng, rng.randint(0, 200))
    mr = MetadataRetriever(ContextEngineConfig(), chunks=chunks)
    nan = float("nan")
    filter_sets: list[Any] = [
        {"lang": "en"},
        {"lang": "en", "year": 2020},
        {"year": 2020.0, "tag": True},
        {"tag": 1, "lang": None},
        {"year": [1, 2]},
        {"year": {"$gte": 3}},
        {"tag": (1, 2), "missing": "x"},
        {"lang": nan},
        {"lang": b"en", "year": "2020", "tag": False},
        {"missing": 1},
        {},
        None,
    ]
    for filters in filter_sets:
        for top_k in TOP_KS:
            got = mr.retrieve(filters, top_k)
            expected = ref_metadata(chunks, filters, top_k)
            assert [
                (i, sc.metadata_score, sc.retrieval_rank)
                for i, sc in zip(index_of(chunks, got), got, strict=True)
            ] == expected
            assert all(sc.retrieval_method is RetrievalMethod.METADATA for sc in got)


def test_metadata_large_corpus_reconstructed() -> None:
    rng = random.Random(42)
    chunks = metadata_corpus(rng, 5000)
    mr = MetadataRetriever(ContextEngineConfig(), chunks=chunks)
    for filters in ({"lang": "en", "year": 2020, "tag": 1}, {"lang": "ar"}):
        for top_k in (3, 20, 1300, None):
            got = mr.retrieve(filters, top_k)  # type: ignore[arg-type]
            expected = ref_metadata(chunks, filters, top_k)
            assert [
                (i, sc.metadata_score) for i, sc in zip(index_of(chunks, got), got, strict=True)
            ] == [(i, s) for i, s, _ in expected]


def test_metadata_operator_dicts_never_match_scalars_reconstructed() -> None:
    chunks = [
        bare_chunk(text="a", metadata={"year": 2021}),
        bare_chunk(text="b", metadata={"year": 2019}),
    ]
    mr = MetadataRetriever(ContextEngineConfig(), chunks=chunks)
    assert mr.retrieve({"year": {"$gte": 2020}}, 5) == []
    out = mr.retrieve({"year": 2019, "lang": "en"}, 5)
    assert [(sc.chunk, sc.metadata_score) for sc in out] == [(chunks[1], 0.5)]


def test_metadata_equal_numbers_of_different_types_match() -> None:
    chunks = [
        bare_chunk(text="a", metadata={"v": 1}),
        bare_chunk(text="b", metadata={"v": 1.0}),
        bare_chunk(text="c", metadata={"v": True}),
        bare_chunk(text="d", metadata={"v": "1"}),
    ]
    mr = MetadataRetriever(ContextEngineConfig(), chunks=chunks)
    assert [sc.chunk for sc in mr.retrieve({"v": 1}, 10)] == chunks[:3]


def test_metadata_falsy_filters_return_empty() -> None:
    mr = MetadataRetriever(ContextEngineConfig(), chunks=[bare_chunk(text="a", metadata={"k": 1})])
    assert mr.retrieve(None, 5) == []
    assert mr.retrieve({}, 5) == []
    assert MetadataRetriever(ContextEngineConfig()).retrieve({"k": 1}, 5) == []


def test_metadata_non_mapping_metadata_behaves_like_reference() -> None:
    chunks = [
        bare_chunk(text="a", metadata=["lang"]),
        bare_chunk(text="b", metadata={"lang": "en"}),
    ]
    mr = MetadataRetriever(ContextEngineConfig(), chunks=chunks)
    assert [sc.chunk for sc in mr.retrieve({"year": 1}, 5)] == []
    with pytest.raises(TypeError, match="list indices must be integers or slices, not str"):
        mr.retrieve({"lang": "en"}, 5)


def test_metadata_index_chunks_replaces_and_rejects_none() -> None:
    mr = MetadataRetriever(ContextEngineConfig(), chunks=[bare_chunk(text="a", metadata={"k": 1})])
    new = [bare_chunk(text="b", metadata={"k": 2})]
    mr.index_chunks(new)
    assert mr.retrieve({"k": 1}, 5) == []
    assert [sc.chunk for sc in mr.retrieve({"k": 2}, 5)] == new
    assert mr.chunks == new
    with pytest.raises(TypeError, match="'NoneType' object is not iterable"):
        mr.index_chunks(None)  # type: ignore[arg-type]


# ─── hybrid ──────────────────────────────────────────────────────────────────


_STUB_METHODS = {
    "vector_score": RetrievalMethod.VECTOR,
    "keyword_score": RetrievalMethod.KEYWORD,
    "metadata_score": RetrievalMethod.METADATA,
}


class StubRetriever:
    """Returns fresh ScoredChunks with fixed scores for any query."""

    def __init__(self, field: str, items: list[tuple[Any, float]]) -> None:
        self.field = field
        self.items = items
        self.calls: list[tuple[Any, Any]] = []

    def retrieve(self, query: Any, top_k: int) -> list[ScoredChunk]:
        self.calls.append((query, top_k))
        return [
            ScoredChunk(
                chunk=c,
                retrieval_rank=i,
                retrieval_method=_STUB_METHODS[self.field],
                **{self.field: s},  # type: ignore[arg-type]
            )
            for i, (c, s) in enumerate(self.items)
        ]


def test_rrf_constant() -> None:
    assert RRF_K == 60


def test_hybrid_is_a_strategy() -> None:
    assert isinstance(HybridRetriever(ContextEngineConfig()), HybridRetrieverStrategy)


def test_hybrid_documented_example_reconstructed() -> None:
    a, b, c = bare_chunk(text="alpha"), bare_chunk(text="beta"), bare_chunk(text="gamma")
    vec = StubRetriever("vector_score", [(a, 0.8)])
    kw = StubRetriever("keyword_score", [(b, 1.0), (c, 0.7), (a, 0.5)])
    hr = HybridRetriever(ContextEngineConfig(), vector_retriever=vec, keyword_retriever=kw)
    out = hr.retrieve("q")
    assert out[0].chunk is a
    assert out[0].composite_score == 0.6 * 0.8 + 0.3 * 0.5 + 0.0 * 0.1 + (1 / 61 + 1 / 63)
    assert round(out[0].composite_score, 6) == 0.662266
    assert out[0].retrieval_method is RetrievalMethod.HYBRID
    assert (out[0].vector_score, out[0].keyword_score) == (0.8, 0.5)
    assert [sc.chunk for sc in out] == [a, b, c]
    assert [sc.retrieval_rank for sc in out] == [0, 1, 2]
    assert out[1].retrieval_method is RetrievalMethod.KEYWORD
    assert out[1].composite_score == 0.3 * 1.0
    assert vec.calls == [("q", 20)] and kw.calls == [("q", 20)]


def test_hybrid_merges_by_content_hash_and_ignores_same_list_duplicates_reconstructed() -> None:
    first = bare_chunk(text="Deep  Learning")
    same_hash = bare_chunk(text="deep learning ")
    other = bare_chunk(text="other")
    vec = StubRetriever("vector_score", [(other, 0.9), (first, 0.4), (same_hash, 0.99)])
    kw = StubRetriever("keyword_score", [(same_hash, 1.0), (first, 0.2)])
    hr = HybridRetriever(ContextEngineConfig(), vector_retriever=vec, keyword_retriever=kw)
    out = hr.retrieve("q", 10)
    assert len(out) == 2
    merged = next(sc for sc in out if sc.chunk is first)
    # The vector duplicate at rank 3 and the keyword duplicate at rank 2 add nothing.
    assert merged.vector_score == 0.4 and merged.keyword_score == 1.0
    assert merged.composite_score == 0.6 * 0.4 + 0.3 * 1.0 + 0.1 * 0.0 + (1 / 62 + 1 / 61)
    assert [sc.chunk for sc in out] == [first, other]


def test_hybrid_top_k_defaults_and_cut() -> None:
    chunks = [bare_chunk(text=f"c{i}") for i in range(30)]
    vec = StubRetriever("vector_score", [(c, 1 - i / 100) for i, c in enumerate(chunks)])
    cfg = ContextEngineConfig()
    hr = HybridRetriever(cfg, vector_retriever=vec)
    assert len(hr.retrieve("q", None)) == 20
    assert len(hr.retrieve("q", 0)) == 20
    assert len(hr.retrieve("q", 3)) == 3
    assert len(hr.retrieve("q", -28)) == 2
    cfg.retriever.top_k = 5
    assert len(hr.retrieve("q")) == 5
    assert [call[1] for call in vec.calls] == [20, 20, 3, -28, 5]


def test_hybrid_passes_query_vector_only_when_given() -> None:
    chunks = [bare_chunk(text="alpha beta"), bare_chunk(text="gamma")]
    cfg = ContextEngineConfig()
    stub = StubRetriever("vector_score", [(chunks[0], 0.5)])
    assert [sc.chunk for sc in HybridRetriever(cfg, vector_retriever=stub).retrieve("q")] == [
        chunks[0]
    ]
    vr = VectorRetriever(cfg)
    vr.index_vectors(chunks, [[1.0, 0.0], [0.0, 1.0]])
    hr = HybridRetriever(cfg, vector_retriever=vr)
    out = hr.retrieve(query="q", top_k=5, filters=None, query_vector=np.array([0.0, 2.0]))
    assert [(sc.chunk, sc.vector_score) for sc in out] == [(chunks[1], 1.0), (chunks[0], 0.0)]


def test_hybrid_without_retrievers_returns_empty() -> None:
    assert HybridRetriever(ContextEngineConfig()).retrieve("q") == []


def test_hybrid_flags_and_filter_merging_reconstructed() -> None:
    chunks = [
        bare_chunk(text="english data", metadata={"lang": "en", "year": 2020}),
        bare_chunk(text="arabic data", metadata={"lang": "ar", "year": 2020}),
    ]
    cfg = cfg_with(metadata_filters={"lang": "en"})
    meta = MetadataRetriever(cfg, chunks=chunks)
    kw = KeywordRetriever(cfg, chunks=chunks)
    hr = HybridRetriever(cfg, keyword_retriever=kw, metadata_retriever=meta)
    # Metadata retrieval is off by default: filters change nothing.
    assert all(sc.metadata_score == 0.0 for sc in hr.retrieve("data", 5, {"year": 2020}))
    cfg.retriever.use_metadata = True
    out = hr.retrieve("nothing", 5, {"year": 2020})
    assert [(sc.chunk, sc.metadata_score) for sc in out] == [(chunks[0], 1.0), (chunks[1], 0.5)]
    out = hr.retrieve("nothing", 5, {"lang": "ar"})
    assert [(sc.chunk, sc.metadata_score) for sc in out] == [(chunks[1], 1.0)]
    cfg.retriever.use_keyword = False
    out = hr.retrieve("data", 5)
    assert [(sc.chunk, sc.metadata_score, sc.composite_score) for sc in out] == [
        (chunks[0], 1.0, 0.1)
    ]
    assert out[0].retrieval_method is RetrievalMethod.METADATA
    cfg.retriever.metadata_filters = {}
    assert hr.retrieve("data", 5) == []


@pytest.mark.parametrize("seed", range(6))
def test_hybrid_matches_reference_end_to_end_reconstructed(seed: int) -> None:
    rng = random.Random(seed)
    chunks = random_corpus(rng, rng.randint(1, 70))
    for chunk in chunks:
        chunk.metadata = {"lang": rng.choice(["en", "ar"]), "year": rng.choice([2020, 2021])}
    configs = [
        cfg_with(),
        cfg_with(use_metadata=True, metadata_filters={"lang": "en"}),
        cfg_with(use_keyword=False),
        cfg_with(use_vector=False, use_metadata=True),
        cfg_with(vector_weight=0.1, keyword_weight=0.8, metadata_weight=0.3, top_k=4),
        cfg_with(min_vector_score=0.2),
    ]
    for cfg in configs:
        vr = VectorRetriever(cfg)
        vr.index_chunks(chunks, deterministic_embed)
        hr = HybridRetriever(
            config=cfg,
            vector_retriever=vr,
            keyword_retriever=KeywordRetriever(cfg, chunks=chunks),
            metadata_retriever=MetadataRetriever(cfg, chunks=chunks),
        )
        embeddings = [deterministic_embed(ref_text(c)) for c in chunks]
        for _ in range(8):
            query = random_text(rng, 6)
            filters = rng.choice([None, {}, {"year": 2021}, {"lang": "ar", "year": 2020}])
            for top_k in (None, 0, 1, 3, 10, 200):
                got = hr.retrieve(query=query, top_k=top_k, filters=filters)
                expected = ref_hybrid(cfg, chunks, embeddings, query, top_k, filters)
                assert index_of(chunks, got) == [row[0] for row in expected]
                for sc, (_, comp, rank, method, v, kw, md) in zip(got, expected, strict=True):
                    assert sc.retrieval_rank == rank
                    assert sc.retrieval_method is method
                    assert abs(sc.composite_score - comp) <= 1e-12
                    assert abs(sc.vector_score - v) <= 1.5e-12
                    assert (sc.keyword_score, sc.metadata_score) == (kw, md)
                    assert sc.recency_score == 0.0
                    assert sc.source_quality is SourceQuality.UNKNOWN


def test_hybrid_returns_fresh_objects_every_call() -> None:
    chunks = [bare_chunk(text="machine learning"), bare_chunk(text="deep learning")]
    cfg = ContextEngineConfig()
    vr = VectorRetriever(cfg)
    vr.index_chunks(chunks, deterministic_embed)
    hr = HybridRetriever(
        config=cfg, vector_retriever=vr, keyword_retriever=KeywordRetriever(cfg, chunks=chunks)
    )
    first = hr.retrieve(query="learning", top_k=5, filters=None)
    for sc in first:
        sc.source_quality = SourceQuality.HIGH
    second = hr.retrieve(query="learning", top_k=5, filters=None)
    assert {id(sc) for sc in first}.isdisjoint(id(sc) for sc in second)
    assert all(sc.source_quality is SourceQuality.UNKNOWN for sc in second)
    assert [sc.chunk for sc in second] == [sc.chunk for sc in first]
    assert all(any(sc.chunk is c for c in chunks) for sc in second)


def test_hybrid_bad_query_propagates_errors() -> None:
    cfg = ContextEngineConfig()
    kw = KeywordRetriever(cfg, chunks=[bare_chunk(text="data")])
    hr = HybridRetriever(cfg, keyword_retriever=kw)
    with pytest.raises(AttributeError, match="'NoneType' object has no attribute 'lower'"):
        hr.retrieve(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        hr.retrieve("data", filters=["lang"])  # type: ignore[arg-type]


def test_hybrid_is_thread_safe_for_concurrent_queries() -> None:
    rng = random.Random(1)
    chunks = random_corpus(rng, 400)
    cfg = ContextEngineConfig()
    vr = VectorRetriever(cfg)
    vr.index_chunks(chunks, deterministic_embed)
    hr = HybridRetriever(cfg, vector_retriever=vr, keyword_retriever=KeywordRetriever(cfg, chunks))
    queries = [random_text(rng, 5) for _ in range(16)]

    def snapshot(q: str) -> list[tuple[int, float]]:
        return [(id(sc.chunk), sc.composite_score) for sc in hr.retrieve(q, 10)]

    expected = {q: snapshot(q) for q in queries}
    failures: list[str] = []

    def worker(qs: list[str]) -> None:
        for q in qs * 5:
            if snapshot(q) != expected[q]:
                failures.append(q)

    threads = [threading.Thread(target=worker, args=(queries[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_engine_style_construction_and_calls() -> None:
    chunks = [bare_chunk(doc_id="ml", text="Machine learning learns from data", metadata={})]
    cfg = ContextEngineConfig()
    vec_ret = VectorRetriever(cfg, vector_store_adapter=None)
    kw_ret = KeywordRetriever(cfg, chunks=chunks)
    meta_ret = MetadataRetriever(cfg, chunks=chunks)
    vec_ret.index_chunks(chunks, deterministic_embed)
    hybrid = HybridRetriever(
        config=cfg, vector_retriever=vec_ret, keyword_retriever=kw_ret, metadata_retriever=meta_ret
    )
    out = hybrid.retrieve(query="What is machine learning?", top_k=20, filters={"lang": "en"})
    assert [sc.doc_id for sc in out] == ["ml"]
    assert out[0].retrieval_method is RetrievalMethod.HYBRID
    assert out[0].keyword_score == 1.0
