"""The per-chunk retrieval designs the engine is compared with (``bench_sync_latency.py``,
``bench_scale.py``): the same scores as the engine's retrievers, computed chunk by chunk.

``PerChunkBM25`` loops in Python over every chunk per query with precomputed
term counts; ``PerRowCosine`` takes one ``numpy.dot`` per stored row.  They
plug into ``HybridRetriever`` in place of the engine's own retrievers, so only
retrieval differs between the two engines measured.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from zerda_async.core.models import RetrievalMethod, ScoredChunk
from zerda_async.core.retrieval import BM25_B, BM25_K1, tokenize


def _text(chunk: Any) -> Any:
    return getattr(chunk, "text", None) or getattr(chunk, "page_content", "")


class PerChunkBM25:
    """BM25 (k1 1.5, b 0.75) by looping over every chunk for every query.

    Term counts, idf and each chunk's length normaliser are precomputed once; a
    query then scores every chunk in a Python loop (the straightforward
    per-chunk design, kept lean so the comparison is not a straw man).
    """

    def __init__(self, chunks: list[Any]) -> None:
        self.chunks = chunks
        token_lists = [tokenize(_text(chunk)) for chunk in chunks]
        n = len(chunks)
        avgdl = sum(map(len, token_lists)) / n if n else 0.0
        df: Counter[str] = Counter()
        # (term counts, k1 * ((1 - b) + b * dl / avgdl)) per chunk.
        self.docs: list[tuple[dict[str, int], float]] = []
        for tokens in token_lists:
            counts = Counter(tokens)
            df.update(counts.keys())
            norm = BM25_K1 * ((1 - BM25_B) + BM25_B * len(tokens) / avgdl)
            self.docs.append((dict(counts), norm))
        self.idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def retrieve(self, query: str, top_k: int) -> list[ScoredChunk]:
        terms = [(t, self.idf[t]) for t in dict.fromkeys(tokenize(query)) if t in self.idf]
        if not terms:
            return []
        k1p1 = BM25_K1 + 1
        scored: list[tuple[float, int]] = []
        for i, (counts, norm) in enumerate(self.docs):
            score = 0.0
            for term, idf in terms:
                tf = counts.get(term)
                if tf:
                    score += idf * tf * k1p1 / (tf + norm)
            if score > 0:
                scored.append((score, i))
        scored.sort(key=lambda pair: pair[0], reverse=True)  # stable: ties keep index order
        top = scored[:top_k]
        if not top:
            return []
        best = top[0][0]
        return [
            ScoredChunk(
                chunk=self.chunks[i],
                keyword_score=score / best,
                retrieval_method=RetrievalMethod.KEYWORD,
                retrieval_rank=rank,
            )
            for rank, (score, i) in enumerate(top)
        ]


class PerRowCosine:
    """Cosine similarity by looping over the stored rows, one ``numpy.dot`` per row."""

    def __init__(self, chunks: list[Any], embed_fn: Any, min_score: float = 0.0) -> None:
        self.chunks = chunks
        self.embed_fn = embed_fn
        self.min_score = min_score
        self.rows = []
        for chunk in chunks:
            vec = np.asarray(embed_fn(_text(chunk)), dtype=np.float64).flatten()
            norm = float(np.linalg.norm(vec))
            self.rows.append(vec / norm if norm > 0 else vec)

    def retrieve(self, query: str, top_k: int) -> list[ScoredChunk]:
        q = np.asarray(self.embed_fn(query), dtype=np.float64).flatten()
        q_norm = float(np.linalg.norm(q))
        if q_norm == 0:
            sims = [0.0] * len(self.rows)
        else:
            q = q / q_norm
            sims = [round(float(np.dot(row, q)), 12) for row in self.rows]
        order = sorted(range(len(sims)), key=sims.__getitem__, reverse=True)[:top_k]
        kept = [i for i in order if not sims[i] < self.min_score]
        return [
            ScoredChunk(
                chunk=self.chunks[i],
                vector_score=sims[i],
                retrieval_method=RetrievalMethod.VECTOR,
                retrieval_rank=rank,
            )
            for rank, i in enumerate(kept)
        ]


# -- measuring -----------------------------------------------------------------------------
