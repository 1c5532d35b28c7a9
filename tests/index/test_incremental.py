"""Incremental index updates equal a fresh index over the final corpus (property tests).

Corpus order after updates: existing order, removed chunks dropped, ``update``
= remove + append, ``add`` appends.  After any sequence of operations, every
retriever over the updated :class:`CorpusIndex` must return exactly (ids,
scores, ranks, methods) what a fresh index over the final corpus returns, and
what the documented retrievers (``KeywordRetriever(config, chunks=...)`` and
friends) return on that corpus.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.chunks import Chunk

from zerda_async.core.index import CorpusIndex, unit_rows
from zerda_async.core.index.tokens import encode_texts, tokenize
from zerda_async.core.retrieval import (
    HybridRetriever,
    KeywordRetriever,
    MetadataRetriever,
    VectorRetriever,
)

from .support import WORDS, embed, make_config, scored_fields

QUERIES = [
    "retrieval ranking",
    "vector numpy index",
    "البحث الفهرس",
    "cache",
    "token keyword budget async",
    "nothing matches this",
]
FILTERS: list[dict[str, Any]] = [{"lang": "en"}, {"lang": "ar", "topic": 1}, {"topic": 2}]

texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(" ".join)
doc_ids = st.sampled_from([f"d{i}" for i in range(8)])
docs = st.builds(
    lambda doc_id, text, lang, topic: Chunk(doc_id, text, {"lang": lang, "topic": topic}),
    doc_ids,
    texts,
    st.sampled_from(["en", "ar"]),
    st.integers(0, 3),
)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(docs, max_size=6)),
        st.tuples(st.just("update"), st.lists(docs, max_size=4)),
        st.tuples(st.just("remove"), st.lists(doc_ids, max_size=3)),
    ),
    max_size=8,
)


def rows(chunks: list[Any]) -> np.ndarray:
    matrix = np.stack([embed(c.text) for c in chunks]) if chunks else np.zeros((0, 64))
    return unit_rows(matrix)


def apply(corpus: CorpusIndex, final: list[Any], op: str, items: list[Any]) -> CorpusIndex:
    """One operation on the index and on the expected final corpus."""
    if op == "add":
        final.extend(items)
        return corpus.appended(items, rows(items))
    if op == "remove":
        gone = set(items)
        final[:] = [c for c in final if c.doc_id not in gone]
        return corpus.without(items)[0]
    gone = {c.doc_id for c in items}
    final[:] = [c for c in final if c.doc_id not in gone] + list(items)
    return corpus.replaced(items, rows(items))[0]


def hybrid_over(corpus: CorpusIndex, config: Any) -> HybridRetriever:
    assert corpus.vectors is not None
    return HybridRetriever(
        config=config,
        vector_retriever=VectorRetriever.over(config, corpus.chunks, corpus.vectors, embed),
        keyword_retriever=KeywordRetriever.over(config, corpus.chunks, corpus.keyword),
        metadata_retriever=MetadataRetriever.over(config, corpus.chunks, corpus.metadata),
    )


def documented(final: list[Any], config: Any) -> HybridRetriever:
    vec = VectorRetriever(config)
    if final:
        vec.index_chunks(final, embed)
    return HybridRetriever(
        config=config,
        vector_retriever=vec,
        keyword_retriever=KeywordRetriever(config, chunks=final),
        metadata_retriever=MetadataRetriever(config, chunks=final),
    )


def all_results(retriever: HybridRetriever) -> list[Any]:
    vector, keyword = retriever.vector_retriever, retriever.keyword_retriever
    metadata = retriever.metadata_retriever
    assert vector is not None and keyword is not None and metadata is not None
    out: list[Any] = []
    for query in QUERIES:
        for top_k in (3, 20):
            out.append(scored_fields(vector.retrieve(query, top_k)))
            out.append(scored_fields(keyword.retrieve(query, top_k)))
            out.append(scored_fields(retriever.retrieve(query=query, top_k=top_k)))
    for filters in FILTERS:
        out.append(scored_fields(metadata.retrieve(filters, 5)))
        out.append(scored_fields(retriever.retrieve(query="retrieval", top_k=8, filters=filters)))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=st.lists(docs, max_size=8), ops=operations)
def test_updates_equal_a_fresh_index(initial: list[Any], ops: list[tuple[str, list[Any]]]) -> None:
    config = make_config(use_metadata=True)
    final = list(initial)
    corpus = CorpusIndex.build(initial, rows(initial))
    for op, items in ops:
        corpus = apply(corpus, final, op, items)
    assert corpus.live_chunks() == final
    assert corpus.n_live == len(final)
    fresh = CorpusIndex.build(final, rows(final))
    expected = all_results(documented(final, config))
    assert all_results(hybrid_over(fresh, config)) == expected
    assert all_results(hybrid_over(corpus, config)) == expected


def test_many_small_adds_merge_segments_and_stay_exact() -> None:
    config = make_config()
    rng = np.random.default_rng(3)
    corpus = CorpusIndex.build([], rows([]))
    final: list[Any] = []
    for step in range(60):
        batch = [
            Chunk(f"s{step}-{i}", " ".join(rng.choice(WORDS, size=rng.integers(1, 8))))
            for i in range(int(rng.integers(1, 5)))
        ]
        corpus = apply(corpus, final, "add", batch)
        if step % 7 == 6:
            corpus = apply(corpus, final, "remove", [final[0].doc_id, final[-1].doc_id])
    assert len(corpus.keyword.segments) <= 12
    assert all_results(hybrid_over(corpus, config)) == all_results(documented(final, config))


def test_removing_most_chunks_compacts() -> None:
    chunks = [Chunk(f"d{i}", f"{WORDS[i % len(WORDS)]} common") for i in range(40)]
    corpus = CorpusIndex.build(chunks, rows(chunks))
    corpus, removed = corpus.without([f"d{i}" for i in range(0, 40, 2)])
    assert removed == 20
    assert corpus.live is None  # compacted: no tombstones left
    assert corpus.n_positions == 20
    corpus, removed = corpus.without(["d1", "missing"])
    assert (removed, corpus.n_positions, corpus.n_live) == (1, 20, 19)
    config = make_config()
    final = [c for i, c in enumerate(chunks) if i % 2 and i != 1]
    assert all_results(hybrid_over(corpus, config)) == all_results(documented(final, config))


def test_update_replaces_every_chunk_of_a_doc_id_and_moves_it_last() -> None:
    a1, a2, b = (
        Chunk("a", "retrieval one"),
        Chunk("a", "retrieval two"),
        Chunk("b", "retrieval three"),
    )
    corpus = CorpusIndex.build([a1, b, a2], rows([a1, b, a2]))
    new_a = Chunk("a", "retrieval four")
    corpus, replaced = corpus.replaced([new_a], rows([new_a]))
    assert replaced == 2
    assert corpus.live_chunks() == [b, new_a]
    assert corpus.version == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), max_size=12))
def test_batch_tokenising_equals_tokenize_per_text(texts_: list[str]) -> None:
    vocabulary: dict[str, int] = {}
    batches = encode_texts(texts_, vocabulary)
    terms = sorted(vocabulary, key=vocabulary.__getitem__)
    got: list[list[str]] = []
    for ids, lengths in batches:
        flat = [terms[i] for i in ids.tolist()]
        for n in lengths.tolist():
            got.append(flat[:n])
            flat = flat[n:]
    assert got == [tokenize(t) for t in texts_]


def test_batch_tokenising_edge_cases() -> None:
    tricky = ["ΣΑΣ Σ", "aΣ", "x\x00y zz", "İstanbul", "", "ab_c ١٢٣ ـــ", "ΟΔΟΣ\u0301 end"]
    vocabulary: dict[str, int] = {}
    ((ids, lengths),) = encode_texts(tricky, vocabulary)
    terms = sorted(vocabulary, key=vocabulary.__getitem__)
    flat = [terms[i] for i in ids.tolist()]
    assert flat == [tok for t in tricky for tok in tokenize(t)]
    assert lengths.tolist() == [len(tokenize(t)) for t in tricky]


def test_an_emptied_index_takes_vectors_of_another_dimension() -> None:
    """Every chunk removed: the next add may bring any dimension; until then, only the same."""
    chunks = [Chunk(f"d{i}", f"{WORDS[i % len(WORDS)]} common") for i in range(6)]
    corpus = CorpusIndex.build(chunks, rows(chunks))
    narrow = unit_rows(np.random.default_rng(2).normal(size=(1, 5)))
    try:
        corpus.appended([Chunk("n0", "narrow")], narrow)
    except ValueError as exc:
        assert "embedding dimension 5 does not match the index (64)" in str(exc)
    else:
        raise AssertionError("a 5-dim row was appended to a 16-dim index")
    corpus, removed = corpus.without([c.doc_id for c in chunks])
    assert (removed, corpus.n_live) == (6, 0)
    fresh = [Chunk("n0", "narrow"), Chunk("n1", "narrow too")]
    new_rows = unit_rows(np.random.default_rng(3).normal(size=(2, 5)))
    corpus = corpus.appended(fresh, new_rows)
    assert corpus.vectors is not None and corpus.vectors.dim == 5
    positions, sims = corpus.vectors.similarities(new_rows[1])
    assert positions is None or list(positions) == [0, 1]
    assert sims[1] == 1.0 and sims[0] < 1.0
