"""Restricting filters (``where=``): pushed into every retriever, never scoring a chunk outside."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.chunks import Chunk

from zerda_async.core.config import ContextEngineConfig
from zerda_async.core.filter_language import matches, parse_filters
from zerda_async.core.index.metadata_index import MetadataIndex
from zerda_async.core.models import ScoredChunk
from zerda_async.core.retrieval import (
    HybridRetriever,
    KeywordRetriever,
    MetadataRetriever,
    VectorRetriever,
)
from zerda_async.errors import ConfigError

METADATAS: list[Any] = [
    {"lang": "en", "year": 2019, "kind": "guide", "flag": True},
    {"lang": "en", "year": 2021, "kind": "faq", "flag": 1},
    {"lang": "ar", "year": 2023.5, "kind": "guide", "flag": False},
    {"lang": "ar", "year": "2024", "kind": ["a", "b"]},
    {"lang": "en", "year": True},
    {"year": 2020},
    "not a mapping",
    {"lang": None, "year": 0, "flag": 0},
    {"lang": "fr", "year": float("nan")},
]

FILTERS: list[dict[str, Any]] = [
    {"lang": "en"},
    {"lang": None},
    {"flag": True},
    {"flag": 1},
    {"flag": 0},
    {"flag": False},
    {"year": 2021.0},
    {"year": {"$gte": 2020}},
    {"year": {"$gt": 2019, "$lt": 2024}},
    {"year": {"$lte": 1}},
    {"kind": ["a", "b"]},
    {"kind": {"$in": ["faq", ["a", "b"]]}},
    {"lang": {"$in": ["ar", "fr"]}, "year": {"$gte": 2023}},
    {"missing": "x"},
]


@pytest.mark.parametrize("filters", FILTERS, ids=[str(f) for f in FILTERS])
def test_the_metadata_mask_agrees_with_the_filter_language(filters: dict[str, Any]) -> None:
    index = MetadataIndex.build(METADATAS)
    conditions = parse_filters(filters)
    expected = [matches(meta, conditions) for meta in METADATAS]
    assert index.mask(conditions).tolist() == expected
    assert any(expected) or filters == {"missing": "x"}


def test_booleans_and_numbers_that_share_a_code_stay_apart() -> None:
    # True is inserted first, so the code table's key for the 1s is True.
    index = MetadataIndex.build([{"v": True}, {"v": 1}, {"v": 1.0}, {"v": 2}])
    assert index.mask(parse_filters({"v": 1})).tolist() == [False, True, True, False]
    assert index.mask(parse_filters({"v": True})).tolist() == [True, False, False, False]
    assert index.mask(parse_filters({"v": {"$gte": 1}})).tolist() == [False, True, True, True]


def test_the_mask_follows_removals_and_appends() -> None:
    index = MetadataIndex.build([{"k": 1}, {"k": 1}]).appended([{"k": 1}])
    index = index.with_live(np.array([True, False, True]))
    assert index.mask(parse_filters({"k": 1})).tolist() == [True, False, True]


@pytest.mark.parametrize(
    ("filters", "named"),
    [
        ({"year": {"$gte": "2020"}}, "year"),
        ({"kind": {"$in": []}}, "kind"),
        ({"kind": {"$in": ["a"], "$lt": 3}}, "kind"),
        ({"lang": {"$regex": "e.*"}}, "lang"),
        ({"x": {1, 2}}, "x"),
        ({"y": float("inf")}, "y"),
    ],
)
def test_a_bad_filter_raises_config_error_naming_its_key(
    filters: dict[str, Any], named: str
) -> None:
    with pytest.raises(ConfigError, match=repr(named)):
        parse_filters(filters)


# -- the retrievers -----------------------------------------------------------------------

# "coffee" is best matched by the Arabic-tagged chunk, which the filters exclude.
CHUNKS = [
    Chunk("c0", "coffee coffee coffee coffee beans", {"lang": "ar", "n": 1}),
    Chunk("c1", "coffee is brewed from roasted beans", {"lang": "en", "n": 2}),
    Chunk("c2", "tea leaves and coffee", {"lang": "en", "n": 3}),
    Chunk("c3", "the Nile flows north", {"lang": "en", "n": 4}),
    Chunk("c4", "coffee coffee grounds", {"lang": "ar", "n": 5}),
]
VECTORS = {
    "c0": [1.0, 0.0, 0.0],
    "c1": [0.8, 0.6, 0.0],
    "c2": [0.6, 0.8, 0.0],
    "c3": [0.0, 0.0, 1.0],
    "c4": [0.99, 0.1, 0.0],
}


def _embed(text: str) -> list[float]:
    for chunk in CHUNKS:
        if chunk.text == text:
            return VECTORS[chunk.doc_id]
    return [1.0, 0.0, 0.0]  # every query points at c0, the excluded best match


def _ids(found: list[ScoredChunk]) -> list[str]:
    return [str(sc.doc_id) for sc in found]


ENGLISH = parse_filters({"lang": "en"})


def test_keyword_retrieval_never_scores_a_chunk_outside_the_filter() -> None:
    retriever = KeywordRetriever(ContextEngineConfig(), CHUNKS)
    assert _ids(retriever.retrieve("coffee", 1)) == ["c0"]
    found = retriever.retrieve("coffee", 1, where=ENGLISH)
    assert len(found) == 1 and found[0].doc_id in {"c1", "c2"}
    assert found[0].keyword_score == 1.0  # normalised to the best chunk allowed
    assert set(_ids(retriever.retrieve("coffee", 10, where=ENGLISH))) == {"c1", "c2"}


def test_vector_retrieval_never_scores_a_chunk_outside_the_filter() -> None:
    retriever = VectorRetriever(ContextEngineConfig())
    retriever.index_chunks(CHUNKS, _embed)
    assert _ids(retriever.retrieve("coffee", 2)) == ["c0", "c4"]
    assert _ids(retriever.retrieve("coffee", 2, where=ENGLISH)) == ["c1", "c2"]
    ranged = parse_filters({"n": {"$gte": 3, "$lt": 5}})
    assert _ids(retriever.retrieve("coffee", 5, where=ranged)) == ["c2", "c3"]


def test_a_vector_store_adapter_is_filtered_after_its_search() -> None:
    class Store:
        def similarity_search_with_score(self, query: str, k: int) -> list[tuple[Chunk, float]]:
            return [(CHUNKS[0], 0.9), (CHUNKS[1], 0.8), (CHUNKS[4], 0.7)][:k]

    retriever = VectorRetriever(ContextEngineConfig(), vector_store_adapter=Store())
    assert _ids(retriever.retrieve("coffee", 3, where=ENGLISH)) == ["c1"]


def test_metadata_retrieval_is_restricted_too() -> None:
    retriever = MetadataRetriever(ContextEngineConfig(), CHUNKS)
    boost = {"n": 1}
    assert _ids(retriever.retrieve(boost, 5)) == ["c0"]
    assert retriever.retrieve(boost, 5, where=ENGLISH) == []
    either = parse_filters({"n": {"$in": [1, 2]}})
    assert _ids(retriever.retrieve({"lang": "ar"}, 5, where=either)) == ["c0"]


@pytest.mark.parametrize("fusion", ["documented", "rrf", "convex"])
def test_fused_retrieval_keeps_only_matching_chunks(fusion: str) -> None:
    config = ContextEngineConfig()
    config.retriever.fusion = fusion
    config.retriever.use_metadata = True
    vector = VectorRetriever(config)
    vector.index_chunks(CHUNKS, _embed)
    hybrid = HybridRetriever(
        config, vector, KeywordRetriever(config, CHUNKS), MetadataRetriever(config, CHUNKS)
    )
    unrestricted = _ids(hybrid.retrieve("coffee", 3, {"n": 5}))
    assert unrestricted[0] in {"c0", "c4"}
    found = hybrid.retrieve("coffee", 3, {"n": 5}, where={"lang": "en"})
    assert found and {sc.metadata["lang"] for sc in found} == {"en"}
    assert [sc.retrieval_rank for sc in found] == list(range(len(found)))
    # No filter and an empty one change nothing.
    assert _ids(hybrid.retrieve("coffee", 3, {"n": 5}, where={})) == unrestricted


def test_an_injected_retriever_without_where_has_its_list_filtered() -> None:
    class Plain:
        def retrieve(self, query: str, top_k: int) -> list[ScoredChunk]:
            return [ScoredChunk(chunk=c, keyword_score=1.0) for c in CHUNKS[:top_k]]

    hybrid = HybridRetriever(ContextEngineConfig(), keyword_retriever=Plain())
    assert _ids(hybrid.retrieve("coffee", 5, where={"lang": "ar"})) == ["c0", "c4"]
