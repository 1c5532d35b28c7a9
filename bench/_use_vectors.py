"""Vectors with a real embedder's structure for the scale-out bench: USE v3 reduced to 64 dims.

The hashing embedder's vectors of the synthetic corpus are close to random
in 64 dimensions — the hardest case for an HNSW graph.  A trained encoder's
vectors lie near a low-dimensional surface instead; these are the
multilingual Universal Sentence Encoder's (the ``embed`` extra) vectors of
the same chunks and queries, projected on their top 64 principal components
(fitted on the corpus), so the bench keeps its 64 dimensions.

Encoding 100,000 chunks takes about 8 minutes on one core, so the 512-dim
vectors are cached in ``bench/out/cache`` under a digest of the texts.
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from zerda_async.embedders import UniversalSentenceEncoder

__all__ = ["LookupEmbedder", "use_vectors"]

_CACHE = Path(__file__).resolve().parent / "out" / "cache"
_BATCH = 500
_PCA_SAMPLE = 20_000


def _encoded(texts: Sequence[str], what: str) -> NDArray[np.float32]:
    """USE vectors of ``texts`` (512-dim), from the cache when this exact list was encoded."""
    digest = hashlib.sha1("\x00".join(texts).encode()).hexdigest()[:16]
    path = _CACHE / f"use-{what}-{len(texts)}-{digest}.npy"
    if path.exists():
        cached: NDArray[np.float32] = np.load(path)
        return cached
    encoder = UniversalSentenceEncoder(threads=1)
    parts, t0 = [], time.perf_counter()
    for at in range(0, len(texts), _BATCH):
        parts.append(np.asarray(encoder.embed_batch(list(texts[at : at + _BATCH])), np.float32))
        done = min(at + _BATCH, len(texts))
        if done % 10_000 < _BATCH or done == len(texts):
            rate = done / (time.perf_counter() - t0)
            print(f"  USE {what}: {done:,}/{len(texts):,} ({rate:,.0f} texts/s)", file=sys.stderr)
    vectors = np.concatenate(parts)
    _CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def use_vectors(
    corpus: Sequence[str], queries: Sequence[str], dim: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Corpus and query vectors: USE v3, centred and projected on the corpus's top ``dim`` axes."""
    full = _encoded(corpus, "corpus").astype(np.float64)
    asked = _encoded(queries, "queries").astype(np.float64)
    mean = full.mean(axis=0)
    sample = full[np.random.default_rng(3).permutation(full.shape[0])[:_PCA_SAMPLE]] - mean
    axes = np.linalg.svd(sample, full_matrices=False)[2][:dim]
    return (full - mean) @ axes.T, (asked - mean) @ axes.T


class LookupEmbedder:
    """An embedder over precomputed vectors: ``f(text)`` and ``f.embed_batch(texts)``."""

    def __init__(self, texts: Sequence[str], vectors: NDArray[np.float64]) -> None:
        self._rows = {text: i for i, text in enumerate(texts)}
        self._vectors = vectors

    def __call__(self, text: str) -> NDArray[np.float64]:
        """The vector of ``text`` (a KeyError names a text that was not precomputed)."""
        row: NDArray[np.float64] = self._vectors[self._rows[text]]
        return row

    def embed_batch(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """The vectors of ``texts``, in order."""
        return self._vectors[[self._rows[t] for t in texts]]

    def params(self) -> dict[str, Any]:
        """Not rebuildable from a record: replicas cannot embed with it."""
        return {"kind": "lookup"}
