"""Passage vectors cached by content, so indexing again embeds only what is new.

A slow model (E5 embeds a few chunks per second per core) makes re-indexing a
folder where one file changed cost as much as the first time, and an
interrupted run lose everything.  :class:`VectorCache` keeps each text's
vector under the SHA-256 of the text, for one model (the cache's ``key``:
the embedder's ``params()`` without its thread count, which does not change
the vectors); :class:`CachedEmbedder` wraps an embedder so that only texts
missing from the cache reach the model.

On disk (``path``) the cache is one append-only file: a header line naming
the key and the dimension, then fixed-size records (32-byte digest, ``dim``
float32).  Records are appended and flushed every few texts while a corpus
is embedded, so a run that is killed keeps what it embedded and the next
run resumes there; a torn last record is dropped on open.  A file of
another model (or an unreadable one) is started afresh.  :meth:`VectorCache.keep`
rewrites the file with the given texts' records only, so a finished index
leaves a cache of its own chunks, not of every text it ever saw.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from zerda_async.core.script_centring import ScriptDirection, direction_of
from zerda_async.core.vector_floor import Floor, floor_of
from zerda_async.embedders._protocol import as_texts, query_forms

__all__ = ["CachedEmbedder", "VectorCache", "cache_key"]

_MAGIC = "zerda-vector-cache 1"
_DIGEST = 32


def cache_key(params: dict[str, Any]) -> str:
    """The model identity of an embedder's ``params()``: everything but the thread count."""
    return json.dumps({k: v for k, v in params.items() if k != "threads"}, sort_keys=True)


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """Text → vector for one model, in memory and (with ``path``) in an append-only file.

    ``writable=False`` reads the file and never writes it (new vectors stay in memory).
    """

    def __init__(self, key: str, path: str | Path | None = None, *, writable: bool = True) -> None:
        self.key = key
        self.path = None if path is None else Path(path)
        self.dim: int | None = None
        self._rows: dict[bytes, NDArray[np.float32]] = {}
        self._lock = threading.Lock()
        self._valid_bytes: int | None = None  # length of the usable part of the file
        if self.path is not None:
            self._read()
            if not writable:  # read once, then in memory only (a file shipped in a package)
                self.path = None

    def __len__(self) -> int:
        return len(self._rows)

    def _read(self) -> None:
        assert self.path is not None
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return
        header, sep, body = data.partition(b"\n")
        try:
            meta = json.loads(header) if sep else None
        except ValueError:
            meta = None
        if not isinstance(meta, dict) or (meta.get("format"), meta.get("key")) != (
            _MAGIC,
            self.key,
        ):
            return  # another model's (or not ours): start afresh on the first write
        dim = int(meta["dim"])
        size = _DIGEST + 4 * dim
        whole = len(body) // size  # a torn last record (a killed run) is dropped
        for i in range(whole):
            record = body[i * size : (i + 1) * size]
            self._rows[record[:_DIGEST]] = np.frombuffer(record[_DIGEST:], dtype="<f4")
        self.dim = dim
        self._valid_bytes = len(header) + 1 + whole * size

    def get(self, text: str) -> NDArray[np.float32] | None:
        """The cached vector of ``text``, or ``None``."""
        return self._rows.get(_digest(text))

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts of ``texts`` that have no vector yet, in first-seen order."""
        seen: dict[bytes, str] = {}
        for text in texts:
            digest = _digest(text)
            if digest not in self._rows:
                seen.setdefault(digest, text)
        return list(seen.values())

    def put(self, texts: Sequence[str], rows: NDArray[Any]) -> None:
        """Remember one vector per text, appending them to the file (flushed) when there is one."""
        matrix = np.asarray(rows, dtype="<f4").reshape(len(texts), -1)
        with self._lock:
            if self.dim is None:
                self.dim = int(matrix.shape[1])
            elif matrix.shape[1] != self.dim:
                raise ValueError(
                    f"vector cache of {self.dim} dimensions got {matrix.shape[1]}-dimensional rows"
                )
            records = []
            for text, row in zip(texts, matrix, strict=True):
                digest = _digest(text)
                if digest not in self._rows:
                    self._rows[digest] = row.copy()
                    records.append(digest + row.tobytes())
            if records and self.path is not None:
                self._append(b"".join(records))

    def _append(self, data: bytes) -> None:
        # Opened per step (every few texts), so no handle outlives a call.
        assert self.path is not None
        if self._valid_bytes is None:  # no usable file: a new one with our header
            self.path.parent.mkdir(parents=True, exist_ok=True)
            header = self._header()
            with open(self.path, "wb") as handle:
                handle.write(header + data)
            self._valid_bytes = len(header) + len(data)
            return
        with open(self.path, "r+b") as handle:
            handle.truncate(self._valid_bytes)  # drop a torn record before appending
            handle.seek(self._valid_bytes)
            handle.write(data)
        self._valid_bytes += len(data)

    def _header(self) -> bytes:
        meta = {"format": _MAGIC, "key": self.key, "dim": self.dim}
        return json.dumps(meta, sort_keys=True).encode() + b"\n"

    def keep(self, texts: Iterable[str]) -> None:
        """Keep only the vectors of ``texts``; rewrite the file (atomically) with them."""
        wanted = {_digest(text) for text in texts}
        with self._lock:
            self._rows = {d: row for d, row in self._rows.items() if d in wanted}
            if self.path is None or self.dim is None:
                return
            tmp = self.path.with_name(self.path.name + ".tmp")
            with open(tmp, "wb") as out:
                out.write(self._header())
                records = (d + row.astype("<f4").tobytes() for d, row in self._rows.items())
                out.write(b"".join(records))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            self._valid_bytes = self.path.stat().st_size


class CachedEmbedder:
    """An embedder whose passages go through a :class:`VectorCache`.

    ``emb(text)`` / ``emb.embed_batch(texts)`` return the cached vector of a
    text seen before and embed the others in steps of ``step`` texts, each
    step stored (and, on disk, flushed) at once; ``progress(n)`` is called
    after each step with the number of texts it embedded.  Queries are not
    cached here (the engine keeps its own cache of query vectors); an
    asymmetric embedder keeps its query forms.
    """

    def __init__(
        self,
        embedder: Any,
        cache: VectorCache,
        *,
        step: int = 16,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        if step < 1:
            raise ValueError(f"step must be >= 1, got {step}")
        self.inner = embedder
        self.cache = cache
        self.step = step
        self.progress = progress
        self.name: str = embedder.name
        self.dim: int | None = getattr(embedder, "dim", None)
        # The cache changes no vector, so the inner embedder's floor calibration holds.
        self.vector_floor: Floor | None = floor_of(embedder)
        # Nor its script direction (retriever.script_centring).
        self.script_direction: ScriptDirection | None = direction_of(embedder)
        self.embedded = 0
        self.reused = 0
        forms = query_forms(embedder, getattr(embedder, "embed_batch", None))
        self._query_one = embedder if forms is None else forms[0]
        self._query_many = getattr(embedder, "embed_batch", None) if forms is None else forms[1]

    def params(self) -> dict[str, Any]:
        """The wrapped embedder's ``params()`` (the cache changes no vector)."""
        params: dict[str, Any] = self.inner.params()
        return params

    def __call__(self, text: Any) -> NDArray[np.float32]:
        """The vector of one passage."""
        row: NDArray[np.float32] = self.embed_batch([text])[0]
        return row

    def embed_batch(self, texts: Sequence[Any]) -> NDArray[np.float32]:
        """One row per passage: cached ones looked up, the others embedded step by step."""
        items = as_texts(texts)
        missing = self.cache.missing(items)
        self.reused += len(items) - len(missing)
        for start in range(0, len(missing), self.step):
            part = missing[start : start + self.step]
            self.cache.put(part, np.asarray(self.inner.embed_batch(part)))
            self.embedded += len(part)
            if self.progress is not None:
                self.progress(len(part))
        rows = [self.cache.get(text) for text in items]
        if not rows:
            return np.zeros((0, self.cache.dim or self.dim or 0), dtype=np.float32)
        return np.stack([row for row in rows if row is not None])

    def embed_query(self, text: Any) -> Any:
        """The vector of one query (the wrapped embedder's query form, uncached)."""
        return self._query_one(text)

    def embed_queries(self, texts: Sequence[Any]) -> Any:
        """One row per query (the wrapped embedder's query form, uncached)."""
        if self._query_many is None:
            return np.stack([np.asarray(self._query_one(text)) for text in texts])
        return self._query_many(list(texts))

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {len(self.cache)} cached)"
