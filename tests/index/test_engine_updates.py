"""``AsyncContextEngine.add`` / ``update`` / ``remove``: exact results, cache, ordering, errors."""

from __future__ import annotations

import random
from typing import Any

import anyio
import numpy as np
import pytest
from engine.support import result_fields
from support.corpus import CORPUS, QUALITY, QUERIES, sourced
from support.embedding import batch_of

import sync_api
from zerda_async import AsyncContextEngine, ContextEngineConfig
from zerda_async.core.retrieval import HybridRetriever, KeywordRetriever
from zerda_async.errors import IndexStateError
from zerda_async.pipeline import EngineState, context_key, make_job

from .support import embed

pytestmark = pytest.mark.anyio

NEW = [
    sourced(
        "new_rag", "Retrieval augmented generation grounds a model in retrieved text.", "Paper"
    ),
    sourced("new_ar", "الاسترجاع الهجين يجمع البحث المتجهي والبحث بالكلمات المفتاحية.", "موسوعة"),
    sourced("ml", "Machine learning systems learn a function from labelled examples.", "Blog"),
]


def make_config(cache: bool = False) -> ContextEngineConfig:
    config = ContextEngineConfig()
    config.cache.enabled = cache
    return config


async def results_of(engine: AsyncContextEngine, queries: list[str]) -> list[dict[str, Any]]:
    return [
        result_fields(await engine.run(q, use_history=False, record_turn=False)) for q in queries
    ]


async def fresh_results(final: list[Any], queries: list[str], **index_kwargs: Any) -> list[Any]:
    async with AsyncContextEngine(make_config()) as fresh:
        await fresh.index(final, source_quality_map=QUALITY, **index_kwargs)
        return await results_of(fresh, queries)


def sync_results(final: list[Any], queries: list[str]) -> list[dict[str, Any]]:
    engine = sync_api.ContextEngine(make_config()).index(
        final, embed_fn=embed, source_quality_map=QUALITY
    )
    return [result_fields(engine.run(q, use_history=False, record_turn=False)) for q in queries]


def apply_ops(final: list[Any], ops: list[tuple[str, list[Any]]]) -> None:
    for op, items in ops:
        if op == "add":
            final.extend(items)
        elif op == "remove":
            final[:] = [c for c in final if c.doc_id not in set(items)]
        else:
            ids = {c.doc_id for c in items}
            final[:] = [c for c in final if c.doc_id not in ids] + items


def random_ops(seed: int) -> list[tuple[str, list[Any]]]:
    rng = random.Random(seed)
    ops: list[tuple[str, list[Any]]] = []
    for _ in range(rng.randint(3, 6)):
        kind = rng.choice(["add", "update", "remove"])
        if kind == "remove":
            ops.append((kind, rng.sample([c.doc_id for c in CORPUS + NEW], rng.randint(1, 4))))
        else:
            ops.append((kind, rng.sample(NEW + CORPUS[:6], rng.randint(1, 3))))
    return ops


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("embedder", ["sync", "batch", "async"])
async def test_results_after_updates_equal_a_fresh_index(seed: int, embedder: str) -> None:
    choices: dict[str, dict[str, Any]] = {
        "sync": {"embed_fn": embed},
        "batch": {"batch_embed_fn": batch_of(embed)},
        "async": {"embed_fn": _async_embed},
    }
    kwargs = choices[embedder]
    ops = random_ops(seed)
    final = list(CORPUS)
    apply_ops(final, ops)
    queries = QUERIES[:8]
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, source_quality_map=QUALITY, **kwargs)
        for op, items in ops:
            await getattr(engine, op)(items)
        assert engine.corpus_size == len(final)
        got = await results_of(engine, queries)
    assert got == await fresh_results(final, queries, **kwargs)
    if seed == 0 and embedder == "sync":
        assert got == sync_results(final, queries)


async def _async_embed(text: Any) -> np.ndarray:
    await anyio.sleep(0)
    return embed(text)


async def test_counts_and_versions() -> None:
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        assert (engine.corpus_size, engine.corpus_version) == (len(CORPUS), 0)
        assert await engine.add(NEW[:2]) == 2
        assert await engine.update([NEW[2]]) == 1  # replaces the "ml" chunk
        assert await engine.remove(["bm25", "vec", "nope"]) == 2
        assert await engine.remove([]) == 0
        assert await engine.add([]) == 0
        assert engine.corpus_size == len(CORPUS) + 2 - 2
        assert engine.corpus_version == 3


async def test_an_update_never_serves_a_context_of_the_old_corpus() -> None:
    query = "What is retrieval augmented generation?"
    async with AsyncContextEngine(make_config(cache=True)) as engine:
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        first = await engine.run(query, use_history=False, record_turn=False)
        again = await engine.run(query, use_history=False, record_turn=False)
        assert again.metadata.get("from_cache") and again.context == first.context
        await engine.add(NEW[:1])
        after_add = await engine.run(query, use_history=False, record_turn=False)
        assert not after_add.metadata.get("from_cache")
        assert "new_rag" in [sc.doc_id for sc in after_add.chunks_used]
        cached = await engine.run(query, use_history=False, record_turn=False)
        assert cached.metadata.get("from_cache") and cached.context == after_add.context
        await engine.remove(["new_rag"])
        after_remove = await engine.run(query, use_history=False, record_turn=False)
        assert not after_remove.metadata.get("from_cache")
        assert after_remove.context == first.context


def test_the_sync_cache_key_stays_documented() -> None:
    state = EngineState()
    assert state.cache is not None
    job = make_job("Hello", metadata_filters={"a": 1})
    assert context_key(job, state) == state.cache.make_key("Hello", {"a": 1})
    engine = sync_api.ContextEngine().index(CORPUS)
    assert engine.run("What is BM25?").context == engine.run("What is BM25?").context


async def test_concurrent_runs_see_the_old_or_the_new_corpus() -> None:
    query = "What is retrieval augmented generation?"
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        old = result_fields(await engine.run(query, use_history=False, record_turn=False))
        outcomes: list[dict[str, Any]] = []

        async def runner() -> None:
            for _ in range(15):
                res = await engine.run(query, use_history=False, record_turn=False)
                outcomes.append(result_fields(res))

        async with anyio.create_task_group() as tg:
            tg.start_soon(runner)
            tg.start_soon(runner)
            await engine.add(NEW[:1])
        new = result_fields(await engine.run(query, use_history=False, record_turn=False))
        assert new != old
        assert all(o in (old, new) for o in outcomes)


async def test_a_cancelled_add_changes_nothing() -> None:
    gate = anyio.Event()

    async def slow_embed(text: Any) -> np.ndarray:
        await gate.wait()
        return embed(text)

    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        engine._indexes.live = engine._indexes.live and _with_embedder(engine, slow_embed)
        with anyio.move_on_after(0.05):
            await engine.add(NEW[:1])
        assert (engine.corpus_size, engine.corpus_version) == (len(CORPUS), 0)
        res = await engine.run("retrieval augmented generation", use_history=False)
        assert "new_rag" not in [sc.doc_id for sc in res.chunks_used]


def _with_embedder(engine: AsyncContextEngine, fn: Any) -> Any:
    from dataclasses import replace

    from zerda_async.embedders import Embedder

    live = engine._indexes.live
    assert live is not None
    return replace(live, embedder=Embedder(fn))


async def test_updates_need_an_index_of_the_engine() -> None:
    async with AsyncContextEngine(make_config()) as engine:
        with pytest.raises(IndexStateError, match="no index yet"):
            await engine.add(NEW)
        with pytest.raises(IndexStateError):
            await engine.save("unused")
    config = make_config()
    injected = HybridRetriever(config, keyword_retriever=KeywordRetriever(config, chunks=CORPUS))
    async with AsyncContextEngine(config, retriever=injected) as engine:
        await engine.index(CORPUS)
        with pytest.raises(IndexStateError, match="constructor"):
            await engine.remove(["ml"])


async def test_index_keeps_its_first_call_only_quirk() -> None:
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS[:5])
        await engine.index(CORPUS)  # only replaces the source-quality map
        assert engine.corpus_size == 5
        await engine.add(CORPUS[5:7])
        assert engine.corpus_size == 7


async def test_float32_scores_are_within_1e7_of_float64() -> None:
    queries = QUERIES[:10]
    found: dict[str, dict[tuple[str, str], float]] = {}
    for dtype in ("float64", "float32"):
        async with AsyncContextEngine(make_config(), vector_dtype=dtype) as engine:
            await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
            await engine.add(NEW)
            scores: dict[tuple[str, str], float] = {}
            for q in queries:
                res = await engine.run(q, use_history=False, record_turn=False)
                for sc in res.chunks_used:
                    scores[(q, sc.doc_id)] = sc.vector_score
            found[dtype] = scores
    shared = found["float64"].keys() & found["float32"].keys()
    assert len(shared) > 0.9 * len(found["float64"])
    assert max(abs(found["float64"][k] - found["float32"][k]) for k in shared) < 1e-7


def test_an_unknown_vector_dtype_is_refused() -> None:
    with pytest.raises(ValueError, match="vector_dtype"):
        AsyncContextEngine(vector_dtype="float16")  # type: ignore[arg-type]


async def test_progress_reports_embedding_then_tokenising() -> None:
    seen: list[tuple[int, int]] = []
    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(
            CORPUS, batch_embed_fn=batch_of(embed), progress=lambda d, t: seen.append((d, t))
        )
    n = len(CORPUS)
    assert seen[-1] == (n, n) and seen.count((n, n)) == 2


async def test_an_embedder_of_another_dimension_changes_nothing() -> None:
    from zerda_async.errors import EmbeddingError

    async with AsyncContextEngine(make_config()) as engine:
        await engine.index(CORPUS, embed_fn=embed, source_quality_map=QUALITY)
        engine._indexes.live = _with_embedder(engine, lambda text: embed(text)[:32])
        with pytest.raises(EmbeddingError, match="32-dimensional"):
            await engine.add(NEW)
        assert (engine.corpus_size, engine.corpus_version) == (len(CORPUS), 0)
