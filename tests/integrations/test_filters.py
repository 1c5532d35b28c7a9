"""Each framework's own filter objects restrict retrieval, or fail naming what cannot be done.

Never an empty result for a filter zerda did not understand: the real
Haystack, LlamaIndex and LangChain objects go through the adapters.
"""

from __future__ import annotations

from typing import Any

import pytest

from sync_api import ContextEngine, ContextEngineConfig
from zerda_async import ConfigError

from .conftest import CORPUS, QUERY, Doc

haystack = pytest.importorskip("haystack")
llama_types = pytest.importorskip("llama_index.core.vector_stores.types")
structured_query = pytest.importorskip("langchain_core.structured_query")

from zerda_async.integrations import (  # noqa: E402  (after the frameworks are known installed)
    ZerdaHaystackRetriever,
    ZerdaLlamaIndexRetriever,
    ZerdaRetriever,
    to_zerda_filters,
    zerda_context_runnable,
)

MetadataFilters = llama_types.MetadataFilters
MetadataFilter = llama_types.MetadataFilter
FilterOperator = llama_types.FilterOperator
Comparison = structured_query.Comparison
Comparator = structured_query.Comparator
Operation = structured_query.Operation
Operator = structured_query.Operator

_SEARCH = {"rag", "bm2", "rrf"}


def _tagged_engine() -> ContextEngine:
    """The corpus with ``kind`` (``search`` for the retrieval chunks, else ``x``) and ``year``."""
    config = ContextEngineConfig()
    config.cache.enabled = False
    tagged = [
        Doc(d.doc_id, d.text, {"kind": "search" if d.doc_id[:3] in _SEARCH else "x", "year": y})
        for y, d in enumerate(CORPUS, 2018)
    ]
    return ContextEngine(config).index(tagged)


@pytest.fixture(scope="module")
def engine() -> ContextEngine:
    return _tagged_engine()


def _ids(engine: ContextEngine, filters: dict[str, Any]) -> list[str]:
    return [str(sc.doc_id) for sc in engine.run(QUERY, max_chunks=4, filters=filters).chunks_used]


def _haystack_ids(engine: ContextEngine, filters: Any) -> list[str]:
    out = ZerdaHaystackRetriever(engine, top_k=4).run(QUERY, filters=filters)
    return [str(d.id) for d in out["documents"]]


def test_haystack_filter_dicts_restrict_as_zerdas_own(engine: ContextEngine) -> None:
    only_x = _ids(engine, {"kind": "x"})
    assert only_x and not any(d[:3] in _SEARCH for d in only_x)
    simple = {"field": "meta.kind", "operator": "==", "value": "x"}
    assert _haystack_ids(engine, simple) == only_x
    nested = {
        "operator": "AND",
        "conditions": [
            {"field": "meta.kind", "operator": "==", "value": "search"},
            {"field": "meta.year", "operator": ">=", "value": 2019},
        ],
    }
    want = _ids(engine, {"kind": "search", "year": {"$gte": 2019}})
    assert want and _haystack_ids(engine, nested) == want
    either = {
        "operator": "OR",
        "conditions": [
            {"field": "meta.year", "operator": "==", "value": 2018},
            {"field": "meta.year", "operator": "in", "value": [2020, 2021]},
        ],
    }
    assert to_zerda_filters(either) == {"year": {"$in": [2018, 2020, 2021]}}
    assert _haystack_ids(engine, either) == _ids(engine, {"year": {"$in": [2018, 2020, 2021]}})


def test_llamaindex_metadata_filters_restrict_retrieval(engine: ContextEngine) -> None:
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="kind", value="search"),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="year", value=2018, operator=FilterOperator.GT),
                    MetadataFilter(key="year", value=2021, operator=FilterOperator.LTE),
                ]
            ),
        ]
    )
    assert to_zerda_filters(filters) == {"kind": "search", "year": {"$gt": 2018, "$lte": 2021}}
    want = _ids(engine, {"kind": "search", "year": {"$gt": 2018, "$lte": 2021}})
    nodes = ZerdaLlamaIndexRetriever(engine, k=4, filters=filters).retrieve(QUERY)
    assert want and [n.node.node_id for n in nodes] == want


def test_langchain_comparisons_and_mongo_dicts_restrict_retrieval(engine: ContextEngine) -> None:
    want = _ids(engine, {"kind": "x", "year": {"$lt": 2030}})
    operation = Operation(
        operator=Operator.AND,
        arguments=[
            Comparison(comparator=Comparator.EQ, attribute="kind", value="x"),
            Comparison(comparator=Comparator.LT, attribute="year", value=2030),
        ],
    )
    mongo = {"$and": [{"kind": {"$eq": "x"}}, {"year": {"$lt": 2030}}]}
    retriever = ZerdaRetriever(engine=engine, k=4)
    for filters in (operation, mongo):
        assert [d.id for d in retriever.invoke(QUERY, filters=filters)] == want
    assert want


@pytest.mark.parametrize(
    ("filters", "words"),
    [
        ({"field": "meta.kind", "operator": "!=", "value": "x"}, "'!='"),
        ({"field": "meta.kind", "operator": "not in", "value": ["x"]}, "'not in'"),
        ({"field": "content", "operator": "==", "value": "x"}, "metadata only"),
        (
            {
                "operator": "NOT",
                "conditions": [{"field": "meta.kind", "operator": "==", "value": 1}],
            },
            "NOT cannot",
        ),
        (
            {
                "operator": "OR",
                "conditions": [
                    {"field": "meta.kind", "operator": "==", "value": "x"},
                    {"field": "meta.year", "operator": "==", "value": 2020},
                ],
            },
            "OR across fields",
        ),
        ({"field": "meta.year", "operator": ">", "value": "2020-01-01"}, "finite number"),
        (
            {
                "operator": "AND",
                "conditions": [
                    {"field": "meta.kind", "operator": "==", "value": "x"},
                    {"field": "meta.kind", "operator": "==", "value": "search"},
                ],
            },
            "contradict",
        ),
        ({"$or": [{"kind": "x"}, {"year": 2020}]}, "OR across fields"),
        ({"kind": {"$ne": "x"}}, "unknown operator '$ne'"),
        ({"$not": {"kind": "x"}}, "'$not'"),
    ],
)
def test_what_cannot_be_translated_is_an_error_never_an_empty_result(
    engine: ContextEngine, filters: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError, match=words.replace("$", r"\$")):
        _haystack_ids(engine, filters)


@pytest.mark.parametrize(
    "operator", [FilterOperator.NE, FilterOperator.NIN, FilterOperator.TEXT_MATCH]
)
def test_llamaindex_operators_zerda_lacks_are_named(engine: ContextEngine, operator: Any) -> None:
    value: Any = ["x"] if operator == FilterOperator.NIN else "x"
    filters = MetadataFilters(filters=[MetadataFilter(key="kind", value=value, operator=operator)])
    with pytest.raises(ConfigError, match=f"operator {operator.value!r} cannot be translated"):
        ZerdaLlamaIndexRetriever(engine, k=4, filters=filters).retrieve(QUERY)


def test_langchain_comparators_zerda_lacks_are_named(engine: ContextEngine) -> None:
    like = Comparison(comparator=Comparator.LIKE, attribute="kind", value="x%")
    with pytest.raises(ConfigError, match="'like' cannot be translated"):
        ZerdaRetriever(engine=engine).invoke(QUERY, filters=like)


def test_the_engines_own_language_refuses_operator_keys(engine: ContextEngine) -> None:
    # Before, {"$and": [...]} asked for a metadata key named "$and" and matched nothing.
    with pytest.raises(ConfigError, match=r"'\$and' is an operator"):
        engine.run(QUERY, filters={"$and": [{"kind": "x"}]})


def test_every_adapter_refuses_a_cached_engine_when_built() -> None:
    cached = ContextEngine().index(CORPUS)  # the documented default: cache on
    with pytest.raises(ConfigError, match=r"cache\.enabled"):
        ZerdaRetriever(engine=cached)  # before: only at its first call
    with pytest.raises(ConfigError, match=r"cache\.enabled"):
        zerda_context_runnable(cached)
    with pytest.raises(ConfigError, match=r"cache\.enabled"):
        ZerdaLlamaIndexRetriever(cached)
    with pytest.raises(ConfigError, match=r"cache\.enabled"):
        ZerdaHaystackRetriever(cached)
