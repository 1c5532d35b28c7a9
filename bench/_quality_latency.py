"""``bench_quality.py --latency``: ``run()`` of the documented and the recommended profile over
synthetic chunks, keyword only and hybrid with the same vectors for both.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

from _common import HashedEmbedder, make_corpus, make_queries
from _quality_engines import make_engine

from zerda_async import ContextEngineConfig


class _SyntheticBatch:
    """``HashedEmbedder`` with the batch form: the same vectors for both profiles."""

    def __init__(self, dim: int) -> None:
        self._inner = HashedEmbedder(dim)

    def __call__(self, text: Any) -> Any:
        return self._inner.vector(text)

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return self._inner.matrix(texts)


def _median_run_ms(engine: Any, queries: Sequence[str]) -> float:
    for q in queries[:20]:  # warm-up: caches of term weights and analysed chunks
        engine.run(q, use_history=False, record_turn=False)
    times = []
    for q in queries:
        start = time.perf_counter()
        engine.run(q, use_history=False, record_turn=False)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def latency(n_chunks: int, n_queries: int, dim: int) -> list[list[Any]]:
    """Median ``run()`` of both profiles (cache off) over synthetic chunks.

    Keyword only, then hybrid with the same synthetic ``dim``-dimensional vectors
    for both profiles (the default embedder's size; its own query time is
    measured apart), so the rows compare the pipelines, not the embedders.
    """
    chunks = make_corpus(n_chunks)
    queries = make_queries(n_queries)
    rows: list[list[Any]] = []
    for mode, embedder in (("keyword only", None), (f"hybrid, {dim} dims", _SyntheticBatch(dim))):
        medians: dict[str, float] = {}
        for label, factory in (
            ("documented", ContextEngineConfig),
            ("recommended", ContextEngineConfig.recommended),
        ):
            engine = make_engine(factory(), chunks, embedder)
            medians[label] = _median_run_ms(engine, queries)
            del engine  # one index in memory at a time
            rows.append(
                [
                    label,
                    mode,
                    f"{n_chunks:,}",
                    len(queries),
                    f"{medians[label]:.2f} ms",
                    f"{medians[label] / medians['documented']:.2f}x",
                ]
            )
    return rows
