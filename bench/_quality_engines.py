"""The systems ``bench_quality.py`` and its sibling benches measure: engines over a corpus
(vectors embedded in batches), their ranked lists, bm25s, and the default embedder memoised.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from _common import BenchChunk

from sync_api import ContextEngine
from zerda_async import ContextEngineConfig
from zerda_async.core.script_centring import direction_of
from zerda_async.core.vector_floor import floor_of
from zerda_async.embedders import query_forms

Ranked = Callable[[str], list[str]]


def engine_ranker(engine: ContextEngine) -> Ranked:
    """The profile's ranked doc ids: retrieve 20, filter, rank (its own components)."""
    state = engine._state

    retriever = state.retriever
    assert retriever is not None, "index the engine first"

    def ranked(query: str) -> list[str]:
        analysis = state.analyzer.analyze(query)
        found = retriever.retrieve(query, 20)
        kept = state.chunk_filter.filter(found)
        return [sc.doc_id for sc in state.ranker.rank(kept, analysis, 20)]

    return ranked


def bm25s_ranker(chunks: Sequence[BenchChunk]) -> Ranked:
    """bm25s with its default tokenisation (English stop words, no stemmer)."""
    import bm25s

    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize([c.text for c in chunks], show_progress=False), show_progress=False
    )
    ids = [c.doc_id for c in chunks]

    def ranked(query: str) -> list[str]:
        tokens = bm25s.tokenize([query], show_progress=False)
        if not tokens.vocab:
            return []
        k = min(20, len(ids))
        docs, _ = retriever.retrieve(tokens, k=k, show_progress=False)
        return [ids[int(i)] for i in docs[0]]

    return ranked


class CachedEmbedder:
    """A batch embedder that embeds each distinct text once per bench run.

    The mixed corpus repeats the other two, and every question is embedded by
    ranking, by the default context and by the wide one: the memo keeps the
    run to a few minutes.  ``texts`` and ``seconds`` count the real embedding
    work (the indexing throughput reported with the table).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = type(inner).__name__
        # The engine reads these off the embedder it is given: without them an E5
        # behind this memo would be searched without its fitted floor and its
        # script centring, and its questions embedded as passages.
        self.vector_floor = floor_of(inner)
        self.script_direction = direction_of(inner)
        forms = query_forms(inner, getattr(inner, "embed_batch", None))
        self._queries = inner.embed_batch if forms is None else forms[1]
        self._memo: dict[tuple[bool, str], Any] = {}
        self.texts = 0
        self.seconds = 0.0

    def _rows(self, texts: Sequence[Any], query: bool) -> Any:
        import numpy as np

        items = [str(t or "") for t in texts]
        missing = list(dict.fromkeys(t for t in items if (query, t) not in self._memo))
        if missing:
            started = time.perf_counter()
            rows = self._queries(missing) if query else self.inner.embed_batch(missing)
            if not query:
                self.seconds += time.perf_counter() - started
                self.texts += len(missing)
            self._memo.update(((query, t), row) for t, row in zip(missing, rows, strict=True))
        return np.stack([self._memo[(query, t)] for t in items])

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        """Passage rows (counted in the indexing throughput)."""
        return self._rows(texts, query=False)

    def __call__(self, text: Any) -> Any:
        return self.embed_batch([text])[0]

    def embed_query(self, text: Any) -> Any:
        """A question's vector, in the inner embedder's query form."""
        return self._rows([text], query=True)[0]

    def embed_queries(self, texts: Sequence[Any]) -> Any:
        """Question rows, in the inner embedder's query form."""
        return self._rows(texts, query=True)


def make_engine(config: ContextEngineConfig, chunks: Sequence[BenchChunk], embedder: Any) -> Any:
    """A sync engine over ``chunks``, its vectors embedded in batches when ``embedder`` is set.

    The facade's ``index()`` takes only ``embed_fn`` (one call per chunk); the
    engine state takes the batch form too, as the async engine does.  The
    batch function embeds the chunks and ``embed_fn`` the queries, so an
    asymmetric embedder (e5: ``passage: `` / ``query: ``) gets each its form.
    """
    config.cache.enabled = False
    engine = ContextEngine(config)
    if embedder is None:
        engine.index(list(chunks))
    else:
        engine._state.index(list(chunks), embedder, batch_embed_fn=embedder.embed_batch)
    return engine


def default_embedder() -> CachedEmbedder | None:
    """``zerda_async.embedders.default_embedder()`` (memoised), or None when none is installed."""
    from zerda_async.embedders import default_embedder as factory

    found = factory()
    return None if found is None else CachedEmbedder(found)


# -- measuring ----------------------------------------------------------------------------


def embedder_line(embedder: CachedEmbedder | None, queries: Sequence[str]) -> str:
    """Indexing throughput and query time of the default embedder, as measured in this run."""
    if embedder is None or not embedder.texts:
        return "Default embedder: none installed."
    inner = embedder.inner
    embed_query = getattr(inner, "embed_query", inner)
    times = []
    for q in queries[:200]:
        start = time.perf_counter()
        embed_query(q)
        times.append((time.perf_counter() - start) * 1000)
    rate = embedder.texts / embedder.seconds
    return (
        f"Default embedder: {embedder.name} ({inner!r}); indexing embedded "
        f"{embedder.texts:,} distinct texts in {embedder.seconds:.1f} s "
        f"({rate:,.0f} texts/s, batches of up to 512); one query "
        f"{statistics.median(times):.2f} ms median."
    )
