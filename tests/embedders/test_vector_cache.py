"""Passage vectors cached by content: only new or changed texts are embedded; resuming."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from zerda_async.embedders import CachedEmbedder, HashingEmbedder, VectorCache, cache_key


class Counting(HashingEmbedder):
    """The hashing embedder, recording the texts it embedded."""

    def __init__(self) -> None:
        super().__init__(dim=16)
        self.embedded: list[str] = []

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float64]:
        self.embedded.extend(str(t) for t in texts)
        return super().embed_batch(texts)


TEXTS = [f"chunk number {i} about rivers" for i in range(10)]


def _cached(path: Path | None, step: int = 4) -> tuple[Counting, CachedEmbedder]:
    inner = Counting()
    return inner, CachedEmbedder(inner, VectorCache(cache_key(inner.params()), path), step=step)


def test_the_key_ignores_thread_counts_only() -> None:
    assert cache_key({"kind": "e5", "threads": 1}) == cache_key({"kind": "e5", "threads": "auto"})
    assert cache_key({"kind": "e5", "version": "1"}) != cache_key({"kind": "e5", "version": "2"})


def test_only_new_or_changed_texts_are_embedded(tmp_path: Path) -> None:
    path = tmp_path / "vectors.cache"
    inner, emb = _cached(path)
    first = emb.embed_batch(TEXTS)
    assert inner.embedded == TEXTS and emb.embedded == 10
    assert np.allclose(first, inner.embed_batch(TEXTS))  # the vectors are the model's
    inner.embedded.clear()
    changed = [*TEXTS[:9], "a changed last chunk"]
    again = emb.embed_batch(changed)
    assert inner.embedded == ["a changed last chunk"]
    assert np.array_equal(again[:9], first[:9])
    # A new process (a later zerda index) finds them in the file.
    inner2, emb2 = _cached(path)
    assert np.array_equal(emb2.embed_batch(changed), again)
    assert inner2.embedded == [] and emb2.reused == 10


def test_a_torn_last_record_is_dropped_and_the_run_resumes(tmp_path: Path) -> None:
    path = tmp_path / "vectors.cache"
    inner, emb = _cached(path, step=4)
    emb.embed_batch(TEXTS[:8])
    # A run killed in the middle of a write: half a record at the end.
    with open(path, "ab") as handle:
        handle.write(b"\x01" * 20)
    progress: list[int] = []
    inner2, emb2 = _cached(path, step=4)
    emb2.progress = progress.append
    rows = emb2.embed_batch(TEXTS)
    assert inner2.embedded == TEXTS[8:] and progress == [2]
    assert np.allclose(rows, inner.embed_batch(TEXTS))
    assert len(VectorCache(cache_key(inner.params()), path)) == 10


def test_another_model_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "vectors.cache"
    _inner, emb = _cached(path)
    emb.embed_batch(TEXTS)
    other = VectorCache(cache_key({"kind": "another-model"}), path)
    assert len(other) == 0
    other.put(["x"], np.ones((1, 3), dtype=np.float32))
    assert len(VectorCache(cache_key({"kind": "another-model"}), path)) == 1
    assert len(VectorCache(cache_key(Counting().params()), path)) == 0


def test_keep_leaves_only_the_index_texts(tmp_path: Path) -> None:
    path = tmp_path / "vectors.cache"
    _inner, emb = _cached(path)
    emb.embed_batch(TEXTS)
    size = path.stat().st_size
    emb.cache.keep(TEXTS[:5])
    assert len(emb.cache) == 5 and path.stat().st_size < size
    emb.embed_batch(["one more"])  # appends after the rewrite
    reread = VectorCache(emb.cache.key, path)
    assert len(reread) == 6 and reread.get("one more") is not None


def test_a_read_only_cache_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "vectors.cache"
    _inner, emb = _cached(path)
    emb.embed_batch(TEXTS[:2])
    before = path.read_bytes()
    shipped = VectorCache(emb.cache.key, path, writable=False)
    shipped.put(["new text"], np.ones((1, 16), dtype=np.float32))
    assert shipped.get("new text") is not None and path.read_bytes() == before


def test_queries_keep_the_wrapped_form_and_are_not_cached(tmp_path: Path) -> None:
    inner, emb = _cached(None)
    assert np.allclose(emb.embed_query("river"), inner("river"))
    assert emb.embed_queries(["a", "b"]).shape == (2, 16)
    assert len(emb.cache) == 0 and emb.params() == inner.params() and emb.name == inner.name


def test_a_dimension_change_under_one_key_is_refused() -> None:
    cache = VectorCache("k")
    cache.put(["a"], np.ones((1, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="4 dimensions"):
        cache.put(["b"], np.ones((1, 5), dtype=np.float32))
