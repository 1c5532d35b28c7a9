"""The retriever objects and the index searches reach the same fused candidates.

The sync facade fuses the lists of its retriever objects; the async engine's
:class:`IndexRetriever` fuses the hits of :class:`IndexSearches`.  Both end
in :func:`fuse`, and over the same chunks they must agree on every candidate
and all its evidence, for both fusion modes, with filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.index import CorpusIndex, unit_rows
from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import (
    Hit,
    HybridRetriever,
    IndexRetriever,
    IndexSearches,
    KeywordRetriever,
    MetadataRetriever,
    VectorRetriever,
    fuse,
    method_list,
)
from zerda_async.embedders import HashingEmbedder
from zerda_async.errors import ConfigError

WORDS = ["nile", "river", "coffee", "palm", "قهوة", "نخيل", "bm25", "zebrafish"]
EMBEDDER = HashingEmbedder(dim=16)


@dataclass
class Doc:
    doc_id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)


def _evidence(found: list[ScoredChunk]) -> list[tuple[Any, ...]]:
    return [
        (
            sc.doc_id,
            sc.composite_score,
            sc.retrieval_rank,
            sc.retrieval_method,
            sc.vector_score,
            sc.keyword_score,
            sc.metadata_score,
            sc.fused_score,
            sc.vector_rank,
            sc.keyword_rank,
            sc.metadata_rank,
            sc.query_coverage,
        )
        for sc in found
    ]


def _objects(config: ContextEngineConfig, docs: list[Doc]) -> HybridRetriever:
    vector = VectorRetriever(config)
    vector.index_chunks(docs, EMBEDDER)
    keyword = KeywordRetriever(config, docs)
    metadata = MetadataRetriever(config, docs)
    return HybridRetriever(config, vector, keyword, metadata)


def _index(config: ContextEngineConfig, docs: list[Doc]) -> IndexRetriever:
    rows = unit_rows(EMBEDDER.embed_batch([d.text for d in docs]))
    searches = IndexSearches(CorpusIndex.build(docs, rows))
    return IndexRetriever(config, searches, vectors=True, embed_fn=EMBEDDER)


docs_st = st.lists(
    st.tuples(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), st.sampled_from("ab")),
    min_size=1,
    max_size=10,
).map(lambda rows: [Doc(f"d{i}", " ".join(w), {"k": kind}) for i, (w, kind) in enumerate(rows)])


@settings(max_examples=60)
@given(
    docs=docs_st,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    recommended=st.booleans(),
    use_metadata=st.booleans(),
    where=st.sampled_from([None, {"k": "a"}]),
    boost=st.sampled_from([None, {"k": "b"}]),
    top_k=st.sampled_from([None, 3]),
)
def test_retriever_objects_and_index_searches_fuse_alike(
    docs: list[Doc],
    query: str,
    recommended: bool,
    use_metadata: bool,
    where: dict[str, Any] | None,
    boost: dict[str, Any] | None,
    top_k: int | None,
) -> None:
    def config() -> ContextEngineConfig:
        made = ContextEngineConfig.recommended() if recommended else ContextEngineConfig()
        made.retriever.use_metadata = use_metadata
        return made

    expected = _objects(config(), docs).retrieve(query, top_k, boost, where=where)
    got = _index(config(), docs).retrieve(query, top_k, boost, where=where)
    assert _evidence(got) == _evidence(expected)


def test_fuse_names_an_unknown_mode() -> None:
    config = ContextEngineConfig()
    config.retriever.fusion = "borda"
    with pytest.raises(ConfigError, match="borda"):
        fuse([], 5, config.retriever)


def test_method_lists_shape_hits_as_the_retrievers_do() -> None:
    a, b = Doc("a", "alpha"), Doc("b", "beta")
    keyword = method_list(RetrievalMethod.KEYWORD, [Hit(0, a, 4.0, 0.5), Hit(1, b, 1.0, 0.25)])
    assert [(sc.keyword_score, sc.query_coverage, sc.retrieval_rank) for sc in keyword] == [
        (1.0, 0.5, 0),
        (0.25, 0.25, 1),
    ]
    vector = method_list(RetrievalMethod.VECTOR, [Hit(0, a, 0.8), Hit(1, b, 0.1)], 0.2)
    assert [(sc.doc_id, sc.vector_score) for sc in vector] == [("a", 0.8)]


def test_a_memoised_hash_is_the_chunks_own() -> None:
    docs = [Doc("a", "Coffee  with cardamom"), Doc("b", "the nile")]
    searches = IndexSearches(CorpusIndex.build(docs))
    (hit,) = searches.keyword("cardamom", 5)
    assert hit.content_hash == ScoredChunk(chunk=docs[0]).content_hash
    assert np.isclose(hit.coverage, 1.0)
